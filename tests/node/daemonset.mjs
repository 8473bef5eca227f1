// Print how the DaemonSet runs lism, as JSON: the container's command and
// args with $(VAR) filled from its ConfigMap, its added capabilities, its
// read-only root, its pid namespace, and its host-path mounts (as podman -v arguments).  The node simulation starts the
// image with exactly these.  Usage: node daemonset.mjs DIR (needs js-yaml).
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const dir = process.argv[2];
const require = createRequire(path.resolve(process.argv[3] ?? ".") + "/");
const yaml = require("js-yaml");
const docs = fs.readdirSync(dir).filter((f) => /\.ya?ml$/.test(f))
  .flatMap((f) => yaml.loadAll(fs.readFileSync(path.join(dir, f), "utf8"))).filter(Boolean);
const ds = docs.find((d) => d.kind === "DaemonSet");
const pod = ds.spec.template.spec;
const c = pod.containers.find((x) => x.name === "lism");
const env = {};
for (const ref of c.envFrom ?? []) {
  const cm = docs.find((d) => d.kind === "ConfigMap" && d.metadata.name === ref.configMapRef?.name);
  Object.assign(env, cm?.data ?? {});
}
for (const e of c.env ?? []) env[e.name] = e.value;
const fill = (s) => s.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (_, v) => env[v] ?? "");
// podman -v arguments: HOSTPATH:MOUNTPATH[:ro]
const mounts = (c.volumeMounts ?? []).map((m) => {
  const v = pod.volumes.find((x) => x.name === m.name);
  return `${v?.hostPath?.path}:${m.mountPath}${m.readOnly ? ":ro" : ""}`;
});
console.log(JSON.stringify({
  command: (c.command ?? []).map(fill),
  args: (c.args ?? []).map(fill),
  capsAdd: c.securityContext?.capabilities?.add ?? [],
  capsDrop: c.securityContext?.capabilities?.drop ?? [],
  readOnlyRootFilesystem: !!c.securityContext?.readOnlyRootFilesystem,
  noNewPrivileges: c.securityContext?.allowPrivilegeEscalation === false,
  preStop: (c.lifecycle?.preStop?.exec?.command ?? []).map(fill),
  hostPID: !!pod.hostPID,
  mounts,
}));
