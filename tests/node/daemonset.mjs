// Print how a DaemonSet (or a Pod) of deploy/kubernetes runs its containers,
// as JSON, for the node simulation to start each one exactly so: per
// container (init containers first) its image, command and args with $(VAR)
// filled from its ConfigMap (KEY=VALUE arguments override ConfigMap values,
// as an edited ConfigMap would), its own environment (env: KEY=VALUE),
// privileges, read-only root, mounts (host path, mount path, read-only,
// propagation), memory limit, probes' paths or commands.
// Usage: node daemonset.mjs DIR NODE_MODULES NAME [KEY=VALUE ...]
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const [dir, modules, name, ...overrides] = process.argv.slice(2);
const require = createRequire(path.resolve(modules ?? ".") + "/");
const yaml = require("js-yaml");
const docs = fs.readdirSync(dir).filter((f) => /\.ya?ml$/.test(f))
  .flatMap((f) => yaml.loadAll(fs.readFileSync(path.join(dir, f), "utf8"))).filter(Boolean);
const ds = docs.find((d) => (d.kind === "DaemonSet" || d.kind === "Pod") && d.metadata.name === name);
if (!ds) {
  console.error(`no DaemonSet or Pod ${name} in ${dir}`);
  process.exit(1);
}
const pod = ds.kind === "Pod" ? ds.spec : ds.spec.template.spec;
const bytes = (q) => {
  const m = /^([0-9]+)(Ki|Mi|Gi)?$/.exec(q ?? "");
  return m ? Number(m[1]) * { undefined: 1, Ki: 1024, Mi: 1 << 20, Gi: 1 << 30 }[m[2]] : 0;
};
const container = (c, init) => {
  const env = {};
  for (const ref of c.envFrom ?? []) {
    const cm = docs.find((d) => d.kind === "ConfigMap" && d.metadata.name === ref.configMapRef?.name);
    Object.assign(env, cm?.data ?? {});
  }
  for (const e of c.env ?? []) env[e.name] = e.value;
  for (const o of overrides) {
    const i = o.indexOf("=");
    env[o.slice(0, i)] = o.slice(i + 1);
  }
  // as the kubelet does: an undefined $(VAR) stays as written
  const fill = (s) => s.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (m, v) => env[v] ?? m);
  const sc = c.securityContext ?? {};
  return {
    name: c.name,
    init,
    image: c.image,
    command: (c.command ?? []).map(fill),
    args: (c.args ?? []).map(fill),
    env: (c.env ?? []).filter((e) => e.value !== undefined).map((e) => `${e.name}=${fill(String(e.value))}`),
    privileged: !!sc.privileged,
    capsAdd: sc.capabilities?.add ?? [],
    capsDrop: sc.capabilities?.drop ?? [],
    readOnlyRootFilesystem: !!sc.readOnlyRootFilesystem,
    noNewPrivileges: sc.allowPrivilegeEscalation === false,
    mounts: (c.volumeMounts ?? []).map((m) => ({
      host: (pod.volumes ?? []).find((v) => v.name === m.name)?.hostPath?.path,
      path: m.mountPath,
      readOnly: !!m.readOnly,
      propagation: m.mountPropagation ?? "None",
    })),
    memoryLimit: bytes(c.resources?.limits?.memory),
    readiness: c.readinessProbe?.httpGet?.path ?? "",
    liveness: c.livenessProbe?.httpGet?.path ?? "",
    startup: c.startupProbe?.httpGet?.path ?? "",
    readinessExec: c.readinessProbe?.exec?.command ?? [],
  };
};
console.log(JSON.stringify({
  hostPID: !!pod.hostPID,
  hostNetwork: !!pod.hostNetwork,
  containers: [...(pod.initContainers ?? []).map((c) => container(c, true)),
    ...pod.containers.map((c) => container(c, false))],
}));
