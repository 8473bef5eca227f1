// Offline checks of the Kubernetes manifests (make check-manifests):
//  1. every object validates against the Kubernetes OpenAPI schema
//     (kubernetes-models, ajv);
//  2. every object type-checks as its kubernetes-types type with tsc, whose
//     excess-property check catches misspelled or misplaced fields;
//  3. the cross-references hold: the DaemonSet selector matches its pod
//     labels, its ServiceAccount and ConfigMap exist, every $(VAR) in its
//     args is defined, every kustomization resource exists.
// Usage: node check.mjs DIR  (exit 0: all good; 1: problems, listed)
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import yaml from "js-yaml";

const dir = process.argv[2];
const here = path.dirname(new URL(import.meta.url).pathname);
const problems = [];
const objects = [];

const kustomization = yaml.load(fs.readFileSync(path.join(dir, "kustomization.yaml"), "utf8"));
for (const r of kustomization.resources ?? []) {
  const f = path.join(dir, r);
  if (!fs.existsSync(f)) {
    problems.push(`kustomization.yaml: resource ${r} does not exist`);
    continue;
  }
  for (const doc of yaml.loadAll(fs.readFileSync(f, "utf8"))) {
    if (doc) objects.push({ file: r, obj: doc });
  }
}
for (const f of fs.readdirSync(dir)) {
  if (/\.ya?ml$/.test(f) && f !== "kustomization.yaml" && !(kustomization.resources ?? []).includes(f))
    problems.push(`${f}: not listed in kustomization.yaml`);
}

// apiVersion -> module path in kubernetes-models / kubernetes-types
function modules(apiVersion) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  return {
    models: group ? `kubernetes-models/${group}/${version}` : `kubernetes-models/${version}`,
    types: group ? `kubernetes-types/${group.split(".")[0]}/${version}` : `kubernetes-types/core/${version}`,
  };
}

// 1. schema
for (const { file, obj } of objects) {
  const where = `${file}: ${obj.kind}/${obj.metadata?.name}`;
  try {
    const mod = await import(modules(obj.apiVersion).models);
    const Model = mod[obj.kind];
    if (!Model) {
      problems.push(`${where}: unknown kind for ${obj.apiVersion}`);
      continue;
    }
    new Model(obj).validate();
  } catch (e) {
    problems.push(`${where}: ${e.message.split("\n").slice(0, 6).join(" | ")}`);
  }
}

// 2. types
const tsdir = fs.mkdtempSync(path.join(here, ".tscheck-"));
try {
  let src = "";
  objects.forEach(({ file, obj }, i) => {
    const { types } = modules(obj.apiVersion);
    src += `// ${file}\nimport type { ${obj.kind} as T${i} } from "${types}";\n`;
    src += `export const o${i}: T${i} = ${JSON.stringify(obj, null, 1)};\n`;
  });
  fs.writeFileSync(path.join(tsdir, "manifests.ts"), src);
  fs.writeFileSync(path.join(tsdir, "tsconfig.json"), JSON.stringify({
    compilerOptions: { strict: true, noEmit: true, target: "es2020", moduleResolution: "node", types: [] },
    files: ["manifests.ts"],
  }));
  try {
    execFileSync(path.join(here, "node_modules/.bin/tsc"), ["-p", tsdir], { cwd: here, stdio: "pipe" });
  } catch (e) {
    const out = (e.stdout?.toString() ?? "") + (e.stderr?.toString() ?? "");
    problems.push(`type check (tsc):\n${out.trim()}`);
  }
} finally {
  fs.rmSync(tsdir, { recursive: true, force: true });
}

// 3. references
const byKind = (k) => objects.map((o) => o.obj).filter((o) => o.kind === k);
for (const ds of byKind("DaemonSet")) {
  const where = `DaemonSet/${ds.metadata.name}`;
  const sel = ds.spec?.selector?.matchLabels ?? {};
  const labels = ds.spec?.template?.metadata?.labels ?? {};
  for (const [k, v] of Object.entries(sel))
    if (labels[k] !== v) problems.push(`${where}: selector ${k}=${v} does not match the pod labels`);
  if (!Object.keys(sel).length) problems.push(`${where}: empty selector`);
  const pod = ds.spec?.template?.spec ?? {};
  const ns = ds.metadata.namespace ?? kustomization.namespace;
  const sa = pod.serviceAccountName;
  if (sa && !byKind("ServiceAccount").some((s) => s.metadata.name === sa && (s.metadata.namespace ?? kustomization.namespace) === ns))
    problems.push(`${where}: ServiceAccount ${sa} is not defined in ${ns}`);
  for (const c of [...(pod.initContainers ?? []), ...(pod.containers ?? [])]) {
    const defined = new Set((c.env ?? []).map((e) => e.name));
    for (const ref of c.envFrom ?? []) {
      const name = ref.configMapRef?.name;
      if (!name) continue;
      const cm = byKind("ConfigMap").find((m) => m.metadata.name === name);
      if (!cm) problems.push(`${where}: container ${c.name}: ConfigMap ${name} is not defined`);
      else Object.keys(cm.data ?? {}).forEach((k) => defined.add(k));
    }
    for (const a of [...(c.command ?? []), ...(c.args ?? [])])
      for (const m of a.matchAll(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g))
        if (!defined.has(m[1])) problems.push(`${where}: container ${c.name}: $(${m[1]}) is not defined`);
    for (const vm of c.volumeMounts ?? [])
      if (!(pod.volumes ?? []).some((v) => v.name === vm.name))
        problems.push(`${where}: container ${c.name}: volume ${vm.name} is not defined`);
    const caps = c.securityContext?.capabilities ?? {};
    if (c.securityContext?.privileged) problems.push(`${where}: container ${c.name} is privileged`);
    if (!(caps.drop ?? []).includes("ALL")) problems.push(`${where}: container ${c.name} does not drop ALL capabilities`);
  }
}

if (problems.length) {
  for (const p of problems) console.log(`check-manifests: ${p}`);
  console.log(`check-manifests: ${dir}: ${objects.length} objects, ${problems.length} problems`);
  process.exit(1);
}
console.log(`check-manifests: ${dir}: ${objects.length} objects valid (schema, types, references)`);
