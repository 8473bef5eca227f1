// Offline checks of the Kubernetes manifests (make check-manifests).
//
// What is built: DIR (deploy/kubernetes) as kustomize would build it (the
// base), every standalone Kustomization under it (cleanup), and every
// Component under it applied on top of the base (components/*): resources,
// components, JSON6902 patches, namespace and images are emulated below.
// YAML files in a directory without a kustomization.yaml are examples (nfd,
// examples): they must parse and agree with the DaemonSet.
//
// What is checked, on every object of every build:
//  1. schema: the Kubernetes OpenAPI schema (kubernetes-models, ajv);
//  2. types: the TypeScript compiler (its API, in this process) against
//     kubernetes-types, whose excess-property check catches misspelled or
//     misplaced fields;
//  3. API rules: the API server's own validation of a DaemonSet and its pod
//     template, and of a Pod's spec (Go code in kubernetes/kubernetes the
//     schema cannot express),
//     ported below with the API server's messages, each rule next to the
//     file and function it comes from;
//  4. references: ServiceAccount, ConfigMap, $(VAR)s, kustomization files,
//     the PodMonitor, the Node Feature Discovery rule and a pod that opts in
//     to lism exec (its host path, library and device socket) against the
//     DaemonSet;
//  5. lism policy (not the API server's): privileges, probes and ports,
//     nodeSelector, SELinux/AppArmor, images = VERSION.
// CRDs (PodMonitor, NodeFeatureRule) have no kubernetes-models schema nor
// kubernetes-types type: they are checked by 4 only.
//
// Usage: node check.mjs DIR   (the repository's VERSION is DIR/../../VERSION)
// Exit 0: all good; 1: problems, each listed as "check-manifests: ...".
// node check.mjs --each DIR...: the same for each DIR, in one process (run.sh's
// mutations); the output goes to DIR.out.
import fs from "node:fs";
import path from "node:path";
import yaml from "js-yaml";
import ts from "typescript";

const here = path.dirname(new URL(import.meta.url).pathname);
// The directory being checked, its problems (insertion-ordered; one seen in
// two builds is listed once), the release: reset by checkDir()
let root, problems, reported, version;
const P = (msg) => problems.add(msg);
const rel = (f) => path.relative(root, f) || ".";
const kfile = (kdir) => rel(path.join(kdir, "kustomization.yaml"));

// Kinds without a kubernetes-models schema / kubernetes-types type.
const CRDS = {
  "monitoring.coreos.com/v1/PodMonitor": "Prometheus Operator CRD",
  "nfd.k8s-sigs.io/v1alpha1/NodeFeatureRule": "Node Feature Discovery CRD",
};
const isCRD = (o) => `${o.apiVersion}/${o.kind}` in CRDS;
const CLUSTER_SCOPED = new Set(["Namespace", "NodeFeatureRule", "ClusterRole", "ClusterRoleBinding",
  "PriorityClass", "CustomResourceDefinition", "RuntimeClass", "StorageClass", "PersistentVolume"]);

function loadDocs(file) {
  try {
    return yaml.loadAll(fs.readFileSync(file, "utf8")).filter((d) => d != null);
  } catch (e) {
    P(`${rel(file)}: does not parse: ${e.message.split("\n")[0]}`);
    return null;
  }
}

// ---------------------------------------------------------------------------
// kustomize, the parts the manifests use
// ---------------------------------------------------------------------------

const KUSTOMIZE_API = { Kustomization: "kustomize.config.k8s.io/v1beta1", Component: "kustomize.config.k8s.io/v1alpha1" };
const KUSTOMIZE_FIELDS = new Set(["apiVersion", "kind", "metadata", "namespace", "resources", "components", "images", "patches"]);

function readKustomization(kdir) {
  const f = path.join(kdir, "kustomization.yaml");
  const docs = loadDocs(f);
  if (!docs) return null;
  const k = docs[0] ?? {};
  if (!(k.kind in KUSTOMIZE_API)) {
    P(`${kfile(kdir)}: kind ${k.kind} is neither Kustomization nor Component`);
    return null;
  }
  if (k.apiVersion !== KUSTOMIZE_API[k.kind])
    P(`${kfile(kdir)}: a ${k.kind} is apiVersion ${KUSTOMIZE_API[k.kind]}, not ${k.apiVersion}`);
  for (const key of Object.keys(k))
    if (!KUSTOMIZE_FIELDS.has(key)) P(`${kfile(kdir)}: ${key}: not understood by check-manifests (extend tests/manifests/check.mjs)`);
  return k;
}

// Files a kustomization names (its resources and patch files).
function listedFiles(kdir, k) {
  const names = new Set();
  for (const r of k.resources ?? []) names.add(path.resolve(kdir, r));
  for (const p of k.patches ?? []) if (p?.path) names.add(path.resolve(kdir, p.path));
  return names;
}

function podSpecOf(o) {
  if (o?.kind === "Pod") return o.spec;
  return o?.spec?.template?.spec;
}
const containersOf = (pod) => [...(pod?.initContainers ?? []), ...(pod?.containers ?? [])];

function splitImage(image) {
  let rest = String(image), digest = "", tag = "";
  const at = rest.indexOf("@");
  if (at >= 0) [rest, digest] = [rest.slice(0, at), rest.slice(at + 1)];
  const colon = rest.lastIndexOf(":");
  if (colon > rest.lastIndexOf("/")) [rest, tag] = [rest.slice(0, colon), rest.slice(colon + 1)];
  return { name: rest, tag, digest };
}

// JSON pointer (RFC 6901) and JSON patch (RFC 6902): add, remove, replace, test, move, copy.
function pointer(p) {
  if (typeof p !== "string" || (p !== "" && !p.startsWith("/"))) throw new Error(`path ${JSON.stringify(p)} is not a JSON pointer`);
  return p === "" ? [] : p.slice(1).split("/").map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
}
function arrayIndex(arr, tok, forAdd) {
  if (forAdd && tok === "-") return arr.length;
  if (!/^(0|[1-9][0-9]*)$/.test(tok)) throw new Error(`${tok} is not an array index`);
  const i = Number(tok);
  if (i > arr.length || (!forAdd && i === arr.length)) throw new Error(`index ${i} is out of range (${arr.length} elements)`);
  return i;
}
function walk(doc, toks, p) {
  let cur = doc;
  for (const t of toks) {
    if (Array.isArray(cur)) cur = cur[arrayIndex(cur, t, false)];
    else if (cur !== null && typeof cur === "object" && Object.hasOwn(cur, t)) cur = cur[t];
    else throw new Error(`${p} does not exist`);
  }
  return cur;
}
function jsonPatch(doc, ops) {
  let out = structuredClone(doc);
  const get = (p) => walk(out, pointer(p), p);
  const remove = (p) => {
    const toks = pointer(p);
    if (!toks.length) throw new Error("cannot remove the whole document");
    const parent = walk(out, toks.slice(0, -1), p), last = toks.at(-1);
    if (Array.isArray(parent)) return parent.splice(arrayIndex(parent, last, false), 1)[0];
    if (parent === null || typeof parent !== "object" || !Object.hasOwn(parent, last)) throw new Error(`${p} does not exist`);
    const v = parent[last];
    delete parent[last];
    return v;
  };
  const add = (p, value, replace) => {
    const toks = pointer(p);
    if (!toks.length) return void (out = structuredClone(value));
    const parent = walk(out, toks.slice(0, -1), p), last = toks.at(-1);
    if (Array.isArray(parent)) {
      const i = arrayIndex(parent, last, !replace);
      parent.splice(i, replace ? 1 : 0, structuredClone(value));
    } else if (parent !== null && typeof parent === "object") {
      if (replace && !Object.hasOwn(parent, last)) throw new Error(`${p} does not exist`);
      parent[last] = structuredClone(value);
    } else throw new Error(`the parent of ${p} is not an object or an array`);
  };
  for (const [i, op] of ops.entries()) {
    try {
      switch (op?.op) {
        case "add": add(op.path, op.value, false); break;
        case "replace": add(op.path, op.value, true); break;
        case "remove": remove(op.path); break;
        case "test":
          if (JSON.stringify(get(op.path)) !== JSON.stringify(op.value)) throw new Error(`test failed: ${op.path} is not ${JSON.stringify(op.value)}`);
          break;
        case "move": { const v = remove(op.from); add(op.path, v, false); break; }
        case "copy": add(op.path, get(op.from), false); break;
        default: throw new Error(`unknown op ${JSON.stringify(op?.op)}`);
      }
    } catch (e) {
      throw new Error(`operation ${i} (${op?.op} ${op?.path}): ${e.message}`);
    }
  }
  return out;
}

const TARGET_FIELDS = new Set(["group", "version", "kind", "name", "namespace"]);
function matchesTarget(o, t) {
  const [group, version] = String(o.apiVersion).includes("/") ? o.apiVersion.split("/") : ["", o.apiVersion];
  const re = (s) => new RegExp(`^(?:${s})$`); // kustomize matches target names and namespaces as anchored regexps
  return (t.kind === undefined || t.kind === o.kind) && (t.group === undefined || t.group === group) &&
    (t.version === undefined || t.version === version) && (t.name === undefined || re(t.name).test(o.metadata?.name ?? "")) &&
    (t.namespace === undefined || re(t.namespace).test(o.metadata?.namespace ?? ""));
}

// build(kdir, acc): kustomize's accumulateTarget: the resources, then the
// components (each adds its resources and runs its transformers on all
// accumulated so far), then this kustomization's patches, namespace, images.
// A Kustomization starts from an empty acc; a Component is given its parent's.
function build(kdir, acc, ancestry = []) {
  const k = readKustomization(kdir);
  if (!k) return acc;
  const own = rel(kdir);
  if (ancestry.includes(kdir)) {
    P(`${kfile(kdir)}: includes itself`);
    return acc;
  }
  for (const r of k.resources ?? []) {
    const f = path.resolve(kdir, r);
    if (!fs.existsSync(f)) {
      P(`${kfile(kdir)}: resource ${r} does not exist`);
      continue;
    }
    if (fs.statSync(f).isDirectory()) {
      acc.push(...build(f, [], [...ancestry, kdir]));
      continue;
    }
    for (const obj of loadDocs(f) ?? []) {
      if (typeof obj !== "object" || Array.isArray(obj)) {
        P(`${rel(f)}: a document is not a Kubernetes object`);
        continue;
      }
      acc.push({ file: rel(f), obj, via: [] });
      // lism policy: the images the base and cleanup name are localhost/lism:<tag> (images[].newTag sets the tag)
      if (k.kind === "Kustomization")
        for (const c of containersOf(podSpecOf(obj)))
          if (!/^localhost\/lism:[^:@/]+$/.test(String(c.image ?? "")))
            P(`${rel(f)}: ${obj.kind}/${obj.metadata?.name}: lism policy: container ${c.name} image ${c.image} is not localhost/lism:<tag>`);
    }
  }
  for (const c of k.components ?? []) {
    const cdir = path.resolve(kdir, c);
    if (!fs.existsSync(path.join(cdir, "kustomization.yaml"))) P(`${kfile(kdir)}: component ${c} has no kustomization.yaml`);
    else build(cdir, acc, [...ancestry, kdir]);
  }
  for (const [i, p] of (k.patches ?? []).entries()) {
    const where = `${kfile(kdir)}: patches[${i}]`;
    let text = p?.patch;
    if (p?.path) {
      if (text !== undefined) P(`${where}: both path and patch`);
      try { text = fs.readFileSync(path.resolve(kdir, p.path), "utf8"); } catch { P(`${where}: ${p.path} does not exist`); continue; }
    }
    let ops;
    try { ops = yaml.load(text ?? ""); } catch (e) { P(`${where}: does not parse: ${e.message.split("\n")[0]}`); continue; }
    if (!Array.isArray(ops)) {
      P(`${where}: only JSON6902 patches (a YAML list of operations) are understood by check-manifests`);
      continue;
    }
    if (!p.target) {
      P(`${where}: a JSON6902 patch needs a target`);
      continue;
    }
    const extra = Object.keys(p.target).filter((f) => !TARGET_FIELDS.has(f));
    if (extra.length) P(`${where}: target ${extra.join(", ")}: not understood by check-manifests`);
    const desc = Object.entries(p.target).map(([a, b]) => `${a}=${b}`).join(",");
    const hits = acc.filter((rec) => matchesTarget(rec.obj, p.target));
    if (!hits.length) P(`${where}: target ${desc} matches no object`);
    for (const rec of hits) {
      try {
        rec.obj = jsonPatch(rec.obj, ops);
        rec.via.push(own);
      } catch (e) {
        P(`${where}: on ${rec.obj.kind}/${rec.obj.metadata?.name}: ${e.message}`);
      }
    }
  }
  if (k.namespace)
    for (const rec of acc)
      if (!CLUSTER_SCOPED.has(rec.obj.kind)) (rec.obj.metadata ??= {}).namespace = k.namespace;
  for (const [i, img] of (k.images ?? []).entries()) {
    for (const f of Object.keys(img ?? {}))
      if (!["name", "newName", "newTag", "digest"].includes(f)) P(`${kfile(kdir)}: images[${i}].${f}: not understood by check-manifests`);
    for (const rec of acc)
      for (const c of containersOf(podSpecOf(rec.obj))) {
        const cur = splitImage(c.image ?? "");
        if (cur.name !== img.name) continue;
        const ref = img.digest ? `@${img.digest}` : img.newTag !== undefined ? `:${img.newTag}` :
          (cur.tag ? `:${cur.tag}` : "") + (cur.digest ? `@${cur.digest}` : "");
        c.image = (img.newName ?? cur.name) + ref;
      }
  }
  return acc;
}

// ---------------------------------------------------------------------------
// field.Error, as the API server words it (k8s.io/apimachinery/pkg/util/validation/field/errors.go:
// "<path>: <type>[: <value>][: <detail>]"; a struct value is shown here as JSON, where Go prints it with %#v)
// ---------------------------------------------------------------------------

const fv = (v) => (typeof v === "string" ? JSON.stringify(v) : v === undefined || v === null ? "null" :
  typeof v === "object" ? JSON.stringify(v) : String(v));
const Invalid = (p, v, d) => `${p}: Invalid value: ${fv(v)}${d ? `: ${d}` : ""}`;
const Required = (p, d) => `${p}: Required value${d ? `: ${d}` : ""}`;
const Forbidden = (p, d) => `${p}: Forbidden${d ? `: ${d}` : ""}`;
const NotFound = (p, v) => `${p}: Not found: ${fv(v)}`;
const Duplicate = (p, v) => `${p}: Duplicate value: ${fv(v)}`;
const NotSupported = (p, v, valid) => `${p}: Unsupported value: ${fv(v)}: supported values: ${valid.map((s) => JSON.stringify(s)).join(", ")}`;

// k8s.io/apimachinery/pkg/util/validation/validation.go and
// k8s.io/apimachinery/pkg/api/validate/content/kube.go: the formats
const MaxLenError = (n) => `must be no more than ${n} characters`;
const RegexError = (msg, fmt, ...ex) => ex.length ? `${msg} (e.g. ${ex.map((e) => `'${e}'`).join(" or ")}, regex used for validation is '${fmt}')` : `${msg} (regex used for validation is '${fmt}')`;
const InclusiveRangeError = (lo, hi) => `must be between ${lo} and ${hi}, inclusive`;
const IsNegativeErrorMsg = "must be greater than or equal to 0"; // apimachinery/pkg/api/validation
const dns1123LabelFmt = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const dns1123SubdomainFmt = `${dns1123LabelFmt}(\\.${dns1123LabelFmt})*`;
// IsDNS1123Label: container, volume, hostname, port-name-like DNS labels
function IsDNS1123Label(v) {
  const errs = [];
  if (v.length > 63) errs.push(MaxLenError(63));
  if (!new RegExp(`^${dns1123LabelFmt}$`).test(v)) {
    if (new RegExp(`^${dns1123SubdomainFmt}$`).test(v)) errs.push("must not contain dots");
    else errs.push(RegexError("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character", dns1123LabelFmt, "my-name", "123-abc"));
  }
  return errs;
}
// IsDNS1123Subdomain: object names, service account and priority class names
function IsDNS1123Subdomain(v) {
  const errs = [];
  if (v.length > 253) errs.push(MaxLenError(253));
  if (!new RegExp(`^${dns1123SubdomainFmt}$`).test(v))
    errs.push(RegexError("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character", dns1123SubdomainFmt, "example.com"));
  return errs;
}
// IsValidPortNum
const IsValidPortNum = (p) => (Number.isInteger(p) && p >= 1 && p <= 65535 ? [] : [InclusiveRangeError(1, 65535)]);
// IsValidPortName (IANA_SVC_NAME): at most 15 characters of [-a-z0-9], a letter, no "--", no hyphen at an end
function IsValidPortName(port) {
  const errs = [];
  if (port.length > 15) errs.push(MaxLenError(15));
  if (!/^[-a-z0-9]+$/.test(port)) errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
  if (!/[a-z]/.test(port)) errs.push("must contain at least one letter (a-z)");
  if (port.includes("--")) errs.push("must not contain consecutive hyphens");
  if (port.length > 0 && (port[0] === "-" || port.at(-1) === "-")) errs.push("must not begin or end with a hyphen");
  return errs;
}
function hasChDirPrefix(v) {
  if (v === ".") return ["must not be '.'"];
  if (v === "..") return ["must not be '..'"];
  if (v.startsWith("..")) return ["must not start with '..'"];
  return [];
}
// IsEnvVarName.  Clusters with the RelaxedEnvironmentVariableValidation gate
// (beta, on, from 1.32) accept any printable ASCII but '='; 1.30 and 1.31,
// which appArmorProfile (GA in 1.30) allows, apply this rule.
const envVarNameFmt = "[-._a-zA-Z][-._a-zA-Z0-9]*";
function IsEnvVarName(v) {
  const errs = [];
  if (!new RegExp(`^${envVarNameFmt}$`).test(v))
    errs.push(RegexError("a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit", envVarNameFmt, "my.env-name", "MY_ENV.NAME", "MyEnvName1"));
  return [...errs, ...hasChDirPrefix(v)];
}
// IsConfigMapKey
function IsConfigMapKey(v) {
  const errs = [];
  if (v.length > 253) errs.push(MaxLenError(253));
  if (!/^[-._a-zA-Z0-9]+$/.test(v)) errs.push(RegexError("a valid config key must consist of alphanumeric characters, '-', '_' or '.'", "[-._a-zA-Z0-9]+", "key.name", "KEY_NAME", "key-name"));
  return [...errs, ...hasChDirPrefix(v)];
}
// content.IsLabelKey (= IsQualifiedName)
const labelKeyFmt = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const labelKeyErrMsg = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
function IsQualifiedName(value) {
  const errs = [];
  const parts = value.split("/");
  let name;
  if (parts.length === 1) name = parts[0];
  else if (parts.length === 2) {
    name = parts[1];
    if (!parts[0].length) errs.push("prefix part must be non-empty");
    else errs.push(...IsDNS1123Subdomain(parts[0]).map((m) => `prefix part ${m}`));
  } else
    return [`a valid label key ${RegexError(labelKeyErrMsg, labelKeyFmt, "MyName", "my.name", "123-abc")} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`];
  if (!name.length) errs.push("name part must be non-empty");
  else if (name.length > 63) errs.push(`name part ${MaxLenError(63)}`);
  if (!new RegExp(`^${labelKeyFmt}$`).test(name)) errs.push(`name part ${RegexError(labelKeyErrMsg, labelKeyFmt, "MyName", "my.name", "123-abc")}`);
  return errs;
}
// content.IsLabelValue
function IsValidLabelValue(v) {
  const errs = [];
  if (v.length > 63) errs.push(MaxLenError(63));
  if (!new RegExp(`^(${labelKeyFmt})?$`).test(v))
    errs.push(RegexError("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character", `(${labelKeyFmt})?`, "MyValue", "my_value", "12345"));
  return errs;
}
// IsValidPercent
const IsValidPercent = (s) => (/^[0-9]+%$/.test(s) ? [] : [RegexError("a valid percent string must be a numeric string followed by an ending '%'", "[0-9]+%", "1%", "93%")]);
const IsValidUserID = (id) => (Number.isInteger(id) && id >= 0 && id <= 0xffffffff ? [] : [InclusiveRangeError(0, 4294967295)]);
const str = (v) => (v === undefined || v === null ? "" : String(v));

// apimachinery/pkg/apis/meta/v1/validation: ValidateLabelName, ValidateLabels
const ValidateLabelName = (k, p) => IsQualifiedName(str(k)).map((m) => Invalid(p, k, m));
function ValidateLabels(labels, p) {
  const errs = [];
  for (const [k, v] of Object.entries(labels ?? {})) {
    errs.push(...ValidateLabelName(k, p));
    errs.push(...IsValidLabelValue(str(v)).map((m) => Invalid(p, v, m)));
  }
  return errs;
}
// apimachinery/pkg/api/validation/objectmeta.go: ValidateAnnotations, the keys
// (lower-cased; not ported: the 256 KiB limit)
function ValidateAnnotations(ann, p) {
  const errs = [];
  for (const k of Object.keys(ann ?? {})) errs.push(...IsQualifiedName(k.toLowerCase()).map((m) => Invalid(p, k, m)));
  return errs;
}
// ValidateLabelSelector / ValidateLabelSelectorRequirement
function ValidateLabelSelector(sel, p) {
  if (!sel) return [];
  const errs = ValidateLabels(sel.matchLabels, `${p}.matchLabels`);
  for (const [i, e] of (sel.matchExpressions ?? []).entries()) {
    const ep = `${p}.matchExpressions[${i}]`;
    switch (e.operator) {
      case "In": case "NotIn":
        if (!(e.values ?? []).length) errs.push(Required(`${ep}.values`, "must be specified when `operator` is 'In' or 'NotIn'"));
        break;
      case "Exists": case "DoesNotExist":
        if ((e.values ?? []).length) errs.push(Forbidden(`${ep}.values`, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"));
        break;
      default:
        errs.push(Invalid(`${ep}.operator`, e.operator, "not a valid selector operator"));
    }
    errs.push(...ValidateLabelName(e.key, `${ep}.key`));
  }
  return errs;
}
// metav1.LabelSelectorAsSelector + Matches (nil selects nothing, {} everything);
// null when the selector does not convert (an unknown operator)
function selectorMatches(sel, labels) {
  if (!sel) return false;
  labels ??= {};
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (labels[k] !== String(v)) return false;
  for (const e of sel.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key), vals = (e.values ?? []).map(String);
    switch (e.operator) {
      case "In": if (!has || !vals.includes(labels[e.key])) return false; break;
      case "NotIn": if (has && vals.includes(labels[e.key])) return false; break;
      case "Exists": if (!has) return false; break;
      case "DoesNotExist": if (has) return false; break;
      default: return null;
    }
  }
  return true;
}

// resource.Quantity, exactly (BigInt rationals): "10m", "32Mi", "1.5", "1e3"
function parseQuantity(q) {
  const m = /^([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|n|u|m|k|M|G|T|P|E)?$/.exec(str(q).trim());
  if (!m) return null;
  const [int, frac = ""] = m[2].split(".");
  let num = BigInt((int || "0") + frac) * (m[1] === "-" ? -1n : 1n), den = 10n ** BigInt(frac.length);
  const s = m[3] ?? "";
  const bin = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 }[s];
  const dec = { n: -9, u: -6, m: -3, "": 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 }[s] ?? (/^[eE]/.test(s) ? Number(s.slice(1)) : undefined);
  if (bin !== undefined) num *= 2n ** BigInt(bin);
  else if (dec >= 0) num *= 10n ** BigInt(dec);
  else den *= 10n ** BigInt(-dec);
  return { num, den };
}
const cmpQuantity = (a, b) => { const l = a.num * b.den, r = b.num * a.den; return l < r ? -1 : l > r ? 1 : 0; };

// ---------------------------------------------------------------------------
// API rules: kubernetes/kubernetes pkg/apis/core/validation/validation.go
// (cited as core) and pkg/apis/apps/validation/validation.go (apps), run, as
// the API server runs them, on the object defaulted by pkg/apis/apps/v1 and
// pkg/apis/core/v1 defaults.go.
// ---------------------------------------------------------------------------

// apps/v1 SetDefaults_DaemonSet; core/v1 SetDefaults_PodSpec, _Container,
// _Probe, _HTTPGetAction, _Volume, _ContainerPort (zero values count as unset)
function withDefaults(ds) {
  const d = structuredClone(ds);
  const s = (d.spec ??= {});
  const us = (s.updateStrategy ??= {});
  if (!us.type) us.type = "RollingUpdate";
  if (us.type === "RollingUpdate") {
    us.rollingUpdate ??= {};
    us.rollingUpdate.maxUnavailable ??= 1;
    us.rollingUpdate.maxSurge ??= 0;
  }
  s.revisionHistoryLimit ??= 10;
  podDefaults(((s.template ??= {}).spec ??= {}));
  return d;
}
function podDefaults(pod) {
  pod.dnsPolicy ||= "ClusterFirst";
  pod.restartPolicy ||= "Always";
  pod.securityContext ??= {};
  pod.terminationGracePeriodSeconds ??= 30;
  for (const v of pod.volumes ?? []) if (Object.keys(v).every((k) => k === "name")) v.emptyDir = {};
  for (const c of containersOf(pod)) {
    if (!c.imagePullPolicy) {
      const { tag, digest } = splitImage(c.image ?? "");
      c.imagePullPolicy = !digest && (tag === "" || tag === "latest") ? "Always" : "IfNotPresent";
    }
    for (const port of c.ports ?? []) port.protocol ||= "TCP";
    for (const probe of [c.livenessProbe, c.readinessProbe, c.startupProbe]) {
      if (!probe) continue;
      probe.timeoutSeconds ||= 1;
      probe.periodSeconds ||= 10;
      probe.successThreshold ||= 1;
      probe.failureThreshold ||= 3;
      if (probe.httpGet) {
        probe.httpGet.path ||= "/";
        probe.httpGet.scheme ||= "HTTP";
      }
    }
  }
  return pod;
}

// core validateLocalDescendingPath / validatePathNoBacksteps
function validatePathNoBacksteps(p, fp) {
  return str(p).split("/").includes("..") ? [Invalid(fp, p, "must not contain '..'")] : [];
}
function validateLocalDescendingPath(p, fp) {
  const errs = [];
  if (str(p).startsWith("/")) errs.push(Invalid(fp, p, "must be a relative path"));
  return [...errs, ...validatePathNoBacksteps(p, fp)];
}

// core ValidateVolumes + validateVolumeSource (the count of sources) + validateHostPathVolumeSource
const VOLUME_SOURCES = ["emptyDir", "hostPath", "gitRepo", "gcePersistentDisk", "awsElasticBlockStore", "secret", "nfs", "iscsi",
  "glusterfs", "flocker", "persistentVolumeClaim", "rbd", "cinder", "cephfs", "quobyte", "downwardAPI", "fc", "flexVolume",
  "configMap", "azureFile", "vsphereVolume", "photonPersistentDisk", "portworxVolume", "azureDisk", "storageos", "projected",
  "scaleIO", "csi", "ephemeral", "image"];
const HOST_PATH_TYPES = ["", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"];
function ValidateVolumes(volumes, fp) {
  const errs = [], names = new Set(), vols = new Map();
  for (const [i, vol] of (volumes ?? []).entries()) {
    const ip = `${fp}[${i}]`, el = [];
    let n = 0;
    for (const src of VOLUME_SOURCES) {
      if (vol[src] === undefined || vol[src] === null) continue;
      if (n++ > 0) { el.push(Forbidden(`${ip}.${src}`, "may not specify more than 1 volume type")); continue; }
      if (src === "hostPath") {
        const hp = vol.hostPath;
        if (!str(hp.path).length) el.push(Required(`${ip}.hostPath.path`, ""));
        else {
          el.push(...validatePathNoBacksteps(hp.path, `${ip}.hostPath.path`));
          if (hp.type !== undefined && hp.type !== null && !HOST_PATH_TYPES.includes(hp.type))
            el.push(NotSupported(`${ip}.hostPath.type`, hp.type, HOST_PATH_TYPES));
        }
      }
    }
    // (no source: SetDefaults_Volume makes it an emptyDir)
    if (!str(vol.name).length) el.push(Required(`${ip}.name`, ""));
    else el.push(...IsDNS1123Label(str(vol.name)).map((m) => Invalid(`${ip}.name`, vol.name, m)));
    if (names.has(vol.name)) el.push(Duplicate(`${ip}.name`, vol.name));
    if (!el.length) {
      names.add(vol.name);
      vols.set(vol.name, vol);
    } else errs.push(...el);
  }
  return [vols, errs];
}

// core validateContainerPorts
function validateContainerPorts(ports, fp) {
  const errs = [], names = new Set();
  for (const [i, port] of (ports ?? []).entries()) {
    const ip = `${fp}[${i}]`;
    if (str(port.name).length) {
      const msgs = IsValidPortName(str(port.name));
      if (msgs.length) errs.push(...msgs.map((m) => Invalid(`${ip}.name`, port.name, m)));
      else if (names.has(port.name)) errs.push(Duplicate(`${ip}.name`, port.name));
      else names.add(port.name);
    }
    if (!port.containerPort) errs.push(Required(`${ip}.containerPort`, ""));
    else errs.push(...IsValidPortNum(port.containerPort).map((m) => Invalid(`${ip}.containerPort`, port.containerPort, m)));
    if (port.hostPort) errs.push(...IsValidPortNum(port.hostPort).map((m) => Invalid(`${ip}.hostPort`, port.hostPort, m)));
    // (the protocol is defaulted to TCP: never empty)
    if (!["SCTP", "TCP", "UDP"].includes(port.protocol)) errs.push(NotSupported(`${ip}.protocol`, port.protocol, ["SCTP", "TCP", "UDP"]));
  }
  return errs;
}

// core ValidateEnv + validateEnvVarValueFrom (the count of sources), ValidateEnvFrom
function ValidateEnv(vars, fp) {
  const errs = [];
  for (const [i, ev] of (vars ?? []).entries()) {
    const ip = `${fp}[${i}]`;
    if (!str(ev.name).length) errs.push(Required(`${ip}.name`, ""));
    else errs.push(...IsEnvVarName(str(ev.name)).map((m) => Invalid(`${ip}.name`, ev.name, m)));
    if (!ev.valueFrom) continue;
    const vp = `${ip}.valueFrom`;
    const n = ["fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef"].filter((k) => ev.valueFrom[k]).length;
    if (n === 0) errs.push(Invalid(vp, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"));
    else if (str(ev.value).length) errs.push(Invalid(vp, "", "may not be specified when `value` is not empty"));
    else if (n > 1) errs.push(Invalid(vp, "", "may not have more than one field specified at a time"));
  }
  return errs;
}
function ValidateEnvFrom(vars, fp) {
  const errs = [];
  for (const [i, ev] of (vars ?? []).entries()) {
    if (str(ev.prefix).length) errs.push(...IsEnvVarName(str(ev.prefix)).map((m) => Invalid(`${fp}[${i}].prefix`, ev.prefix, m)));
    const n = ["configMapRef", "secretRef"].filter((k) => ev[k]).length;
    // (the real code reports both on fldPath, not the index: kept)
    if (n === 0) errs.push(Invalid(fp, "", "must specify one of: `configMapRef` or `secretRef`"));
    else if (n > 1) errs.push(Invalid(fp, "", "may not have more than one field specified at a time"));
  }
  return errs;
}

// core ValidateVolumeMounts + validateMountPropagation + validateMountRecursiveReadOnly
// (not ported: subPathExpr, volumeDevices; the schema requires name and mountPath)
function ValidateVolumeMounts(mounts, vols, c, fp) {
  const errs = [], mountpoints = new Set();
  for (const [i, m] of (mounts ?? []).entries()) {
    const ip = `${fp}[${i}]`;
    if (!vols.has(m.name)) errs.push(NotFound(`${ip}.name`, m.name));
    if (mountpoints.has(m.mountPath)) errs.push(Invalid(`${ip}.mountPath`, m.mountPath, "must be unique"));
    mountpoints.add(m.mountPath);
    // (subPath and mountPropagation are reported on fldPath, not the index, as in the real code)
    if (str(m.subPath).length) errs.push(...validateLocalDescendingPath(m.subPath, `${fp}.subPath`));
    if (m.mountPropagation !== undefined && m.mountPropagation !== null) {
      const pp = `${fp}.mountPropagation`, supported = ["Bidirectional", "HostToContainer", "None"];
      if (!supported.includes(m.mountPropagation)) errs.push(NotSupported(pp, m.mountPropagation, supported));
      const privileged = c.securityContext?.privileged === true;
      if (m.mountPropagation === "Bidirectional" && !privileged)
        errs.push(Forbidden(pp, "Bidirectional mount propagation is available only to privileged containers"));
    }
    if (m.recursiveReadOnly !== undefined && m.recursiveReadOnly !== null) {
      const rp = `${fp}.recursiveReadOnly`;
      if (m.recursiveReadOnly === "Enabled" || m.recursiveReadOnly === "IfPossible") {
        if (!m.readOnly) errs.push(Forbidden(rp, "may only be specified when readOnly is true"));
        if (m.mountPropagation && m.mountPropagation !== "None") errs.push(Forbidden(rp, "may only be specified when mountPropagation is None or not specified"));
      } else if (m.recursiveReadOnly !== "Disabled") errs.push(NotSupported(rp, m.recursiveReadOnly, ["Disabled", "Enabled", "IfPossible"]));
    }
  }
  return errs;
}

// core validateResourceRequirements (via ValidateContainerResourceRequirements):
// names (validateContainerResourceName), quantities, requests <= limits
const STANDARD_CONTAINER_RESOURCES = new Set(["cpu", "memory", "ephemeral-storage"]);
const STANDARD_RESOURCES = new Set(["cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
  "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "services", "replicationcontrollers", "resourcequotas", "secrets",
  "configmaps", "persistentvolumeclaims", "requests.storage", "services.nodeports", "services.loadbalancers"]);
const isHugePages = (n) => n.startsWith("hugepages-");
const isNative = (n) => !n.includes("/") || n.startsWith("kubernetes.io/");
const overcommitAllowed = (n) => isNative(n) && !isHugePages(n);
function validateContainerResourceName(n, fp) {
  let errs = IsQualifiedName(n).map((m) => Invalid(fp, n, m));
  if (!errs.length && !n.includes("/") && !STANDARD_RESOURCES.has(n) && !isHugePages(n) && !n.startsWith("requests.hugepages-"))
    errs = [Invalid(fp, n, "must be a standard resource type or fully qualified")];
  if (!n.includes("/")) {
    if (!STANDARD_CONTAINER_RESOURCES.has(n) && !isHugePages(n)) errs.push(Invalid(fp, n, "must be a standard resource for containers"));
  } else if (!isNative(n) && IsQualifiedName(`requests.${n}`).length) errs.push(Invalid(fp, n, "doesn't follow extended resource name standard"));
  return errs;
}
function ValidateResourceRequirements(res, fp) {
  const errs = [], limPath = `${fp}.limits`, reqPath = `${fp}.requests`;
  const quantity = (n, v, p) => {
    const q = parseQuantity(v);
    // (the API server rejects it when it decodes the object: apimachinery/pkg/api/resource ErrFormatWrong)
    if (!q) { errs.push(Invalid(p, v, "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")); return null; }
    if (q.num < 0n) errs.push(Invalid(p, str(v), IsNegativeErrorMsg));
    if (!isNative(n) && q.num % q.den !== 0n) errs.push(Invalid(p, str(v), "must be an integer")); // (IsIntegerResourceName: extended resources)
    return q;
  };
  const limits = res?.limits ?? {}, lq = {};
  for (const [n, v] of Object.entries(limits)) {
    errs.push(...validateContainerResourceName(n, `${limPath}[${n}]`));
    lq[n] = quantity(n, v, `${limPath}[${n}]`);
  }
  for (const [n, v] of Object.entries(res?.requests ?? {})) {
    errs.push(...validateContainerResourceName(n, `${reqPath}[${n}]`));
    const q = quantity(n, v, `${reqPath}[${n}]`);
    if (Object.hasOwn(limits, n)) {
      if (!q || !lq[n]) continue;
      const c = cmpQuantity(q, lq[n]);
      if (c !== 0 && !overcommitAllowed(n)) errs.push(Invalid(reqPath, str(v), `must be equal to ${n} limit of ${str(limits[n])}`));
      else if (c > 0) errs.push(Invalid(reqPath, str(v), `must be less than or equal to ${n} limit of ${str(limits[n])}`));
    } else if (!overcommitAllowed(n)) errs.push(Required(limPath, "Limit must be set for non overcommitable resources"));
  }
  return errs;
}

// core validateSeccompProfileField (+ validateSeccompProfileType)
function validateSeccompProfileField(sp, fp) {
  if (!sp) return [];
  const errs = [], types = ["Localhost", "RuntimeDefault", "Unconfined"];
  if (!sp.type) errs.push(Required(`${fp}.type`, "type is required when seccompProfile is set"));
  else if (!types.includes(sp.type)) errs.push(NotSupported(`${fp}.type`, sp.type, types));
  if (sp.type === "Localhost") {
    if (sp.localhostProfile === undefined || sp.localhostProfile === null)
      errs.push(Required(`${fp}.localhostProfile`, "must be set when seccomp type is Localhost"));
    else errs.push(...validateLocalDescendingPath(sp.localhostProfile, `${fp}.localhostProfile`));
  } else if (sp.localhostProfile !== undefined && sp.localhostProfile !== null)
    errs.push(Invalid(`${fp}.localhostProfile`, sp, "can only be set when seccomp type is Localhost"));
  return errs;
}

// core ValidateAppArmorProfileField
function ValidateAppArmorProfileField(profile, fp) {
  if (!profile) return [];
  const errs = [], lp = profile.localhostProfile, has = lp !== undefined && lp !== null;
  switch (profile.type) {
    case "Localhost":
      // (not ported: the whitespace and length rules)
      if (!has || str(lp) === "") errs.push(Required(`${fp}.localhostProfile`, "must be set when AppArmor type is Localhost"));
      break;
    case "RuntimeDefault": case "Unconfined":
      if (has) errs.push(Invalid(`${fp}.localhostProfile`, lp, "can only be set when AppArmor type is Localhost"));
      break;
    case "": case undefined: case null:
      errs.push(Required(`${fp}.type`, "type is required when appArmorProfile is set"));
      break;
    default:
      errs.push(NotSupported(`${fp}.type`, profile.type, ["Localhost", "RuntimeDefault", "Unconfined"]));
  }
  return errs;
}

// core ValidateSecurityContext.  Not ported: "disallowed by cluster policy"
// (privileged containers are refused only with kube-apiserver --allow-privileged=false).
function ValidateSecurityContext(sc, fp, hostUsers) {
  if (!sc) return [];
  const errs = [];
  for (const f of ["runAsUser", "runAsGroup"])
    if (sc[f] !== undefined && sc[f] !== null) errs.push(...IsValidUserID(sc[f]).map((m) => Invalid(`${fp}.${f}`, sc[f], m)));
  if (sc.procMount !== undefined && sc.procMount !== null) {
    if (!["Default", "Unmasked"].includes(sc.procMount)) errs.push(NotSupported(`${fp}.procMount`, sc.procMount, ["Default", "Unmasked"]));
    if (hostUsers && sc.procMount === "Unmasked") errs.push(Invalid(`${fp}.procMount`, sc.procMount, "`hostUsers` must be false to use `Unmasked`"));
  }
  errs.push(...validateSeccompProfileField(sc.seccompProfile, `${fp}.seccompProfile`));
  if (sc.allowPrivilegeEscalation === false) {
    if (sc.privileged === true)
      errs.push(Invalid(fp, sc, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"));
    // Ported as is: the API server compares the literal string "CAP_SYS_ADMIN", so
    // "SYS_ADMIN" (the usual spelling in a pod spec, which grants the same
    // capability) passes this rule.
    for (const cap of sc.capabilities?.add ?? [])
      if (String(cap) === "CAP_SYS_ADMIN")
        errs.push(Invalid(fp, sc, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"));
  }
  errs.push(...ValidateAppArmorProfileField(sc.appArmorProfile, `${fp}.appArmorProfile`));
  return errs;
}

// core ValidatePortNumOrName (an IntOrString: a YAML string is a port name, even "19435")
function ValidatePortNumOrName(port, fp) {
  port ??= 0; // an unset IntOrString is the number 0
  if (typeof port === "number") return IsValidPortNum(port).map((m) => Invalid(fp, port, m));
  if (typeof port === "string") return IsValidPortName(port).map((m) => Invalid(fp, port, m));
  return []; // (another type: the schema and tsc say so)
}
// core validateHandler (+ validateHTTPGetAction, validateTCPSocketAction) for probes:
// exactly one handler; an HTTP port number or name, and scheme (path: defaulted to "/")
function validateHandler(h, fp) {
  const errs = [];
  let n = 0;
  for (const kind of ["exec", "httpGet", "tcpSocket", "grpc"]) {
    const a = h?.[kind];
    if (a === undefined || a === null) continue;
    if (n > 0) { errs.push(Forbidden(`${fp}.${kind}`, "may not specify more than 1 handler type")); continue; }
    n++;
    const ap = `${fp}.${kind}`;
    if (kind === "httpGet") {
      errs.push(...ValidatePortNumOrName(a.port, `${ap}.port`));
      if (!["HTTP", "HTTPS"].includes(a.scheme)) errs.push(NotSupported(`${ap}.scheme`, a.scheme, ["HTTP", "HTTPS"]));
    }
    if (kind === "tcpSocket") errs.push(...ValidatePortNumOrName(a.port, `${ap}.port`));
  }
  if (n === 0) errs.push(Required(fp, "must specify a handler type"));
  return errs;
}
// core validateProbe, validateLivenessProbe, validateReadinessProbe, validateStartupProbe
function validateProbe(kind, probe, fp) {
  if (!probe) return [];
  const errs = validateHandler(probe, fp);
  for (const f of ["initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"])
    if ((probe[f] ?? 0) < 0) errs.push(Invalid(`${fp}.${f}`, probe[f], IsNegativeErrorMsg));
  if (probe.terminationGracePeriodSeconds !== undefined && probe.terminationGracePeriodSeconds !== null && probe.terminationGracePeriodSeconds <= 0)
    errs.push(Invalid(`${fp}.terminationGracePeriodSeconds`, probe.terminationGracePeriodSeconds, "must be greater than 0"));
  if ((kind === "livenessProbe" || kind === "startupProbe") && probe.successThreshold !== 1)
    errs.push(Invalid(`${fp}.successThreshold`, probe.successThreshold, "must be 1"));
  if (kind === "readinessProbe" && probe.terminationGracePeriodSeconds !== undefined && probe.terminationGracePeriodSeconds !== null)
    errs.push(Invalid(`${fp}.terminationGracePeriodSeconds`, probe.terminationGracePeriodSeconds, "must not be set for readinessProbes"));
  return errs;
}
const PROBES = ["livenessProbe", "readinessProbe", "startupProbe"];

// core validateContainerCommon (not ported: terminationMessagePolicy, volumeDevices,
// resizePolicy, resource claims)
function validateContainerCommon(c, vols, fp, hostUsers) {
  const errs = [];
  if (!str(c.name).length) errs.push(Required(`${fp}.name`, ""));
  else errs.push(...IsDNS1123Label(str(c.name)).map((m) => Invalid(`${fp}.name`, c.name, m)));
  if (!str(c.image).length) errs.push(Required(`${fp}.image`, ""));
  errs.push(...validateContainerPorts(c.ports, `${fp}.ports`));
  errs.push(...ValidateEnv(c.env, `${fp}.env`));
  errs.push(...ValidateEnvFrom(c.envFrom, `${fp}.envFrom`));
  errs.push(...ValidateVolumeMounts(c.volumeMounts, vols, c, `${fp}.volumeMounts`));
  if (!["Always", "IfNotPresent", "Never"].includes(c.imagePullPolicy))
    errs.push(NotSupported(`${fp}.imagePullPolicy`, c.imagePullPolicy, ["Always", "IfNotPresent", "Never"]));
  errs.push(...ValidateResourceRequirements(c.resources, `${fp}.resources`));
  errs.push(...ValidateSecurityContext(c.securityContext, `${fp}.securityContext`, hostUsers));
  return errs;
}
// core AccumulateUniqueHostPorts / checkHostPortConflicts
function checkHostPortConflicts(containers, fp, seen = new Set()) {
  const errs = [];
  for (const [ci, c] of containers.entries())
    for (const [pi, port] of (c.ports ?? []).entries()) {
      if (!port.hostPort) continue;
      const key = `${port.protocol}/${str(port.hostIP)}/${port.hostPort}`;
      if (seen.has(key)) errs.push(Duplicate(`${fp}[${ci}].ports[${pi}].hostPort`, key));
      else seen.add(key);
    }
  return errs;
}
// core validateContainers
// (not ported: lifecycle handlers)
function validateContainers(containers, vols, fp, hostUsers) {
  containers ??= [];
  const errs = [], names = new Set();
  for (const [i, c] of containers.entries()) {
    const cp = `${fp}[${i}]`;
    errs.push(...validateContainerCommon(c, vols, cp, hostUsers));
    if (names.has(c.name)) errs.push(Duplicate(`${cp}.name`, c.name));
    else names.add(c.name);
    for (const k of PROBES) errs.push(...validateProbe(k, c[k], `${cp}.${k}`));
    if (c.restartPolicy !== undefined && c.restartPolicy !== null) errs.push(Forbidden(`${cp}.restartPolicy`, "may not be set for non-init containers"));
  }
  return [...errs, ...checkHostPortConflicts(containers, fp)];
}
// core validateInitContainers (names unique across init and regular containers)
function validateInitContainers(inits, regular, vols, fp, hostUsers) {
  const errs = [], names = new Set((regular ?? []).map((c) => c.name));
  for (const [i, c] of (inits ?? []).entries()) {
    const cp = `${fp}[${i}]`;
    errs.push(...validateContainerCommon(c, vols, cp, hostUsers));
    let restartAlways = false;
    if (c.restartPolicy !== undefined && c.restartPolicy !== null) {
      if (c.restartPolicy !== "Always") errs.push(NotSupported(`${cp}.restartPolicy`, c.restartPolicy, ["Always"]));
      restartAlways = c.restartPolicy === "Always";
    }
    if (names.has(c.name)) errs.push(Duplicate(`${cp}.name`, c.name));
    else if (str(c.name).length) names.add(c.name);
    errs.push(...checkHostPortConflicts([c], fp));
    if (restartAlways) {
      for (const k of PROBES) errs.push(...validateProbe(k, c[k], `${cp}.${k}`));
    } else
      for (const k of ["lifecycle", ...PROBES])
        if (c[k]) errs.push(Forbidden(`${cp}.${k}`, "may not be set for init containers without restartPolicy=Always"));
  }
  return errs;
}
// core ValidateNodeSelectorRequirement / ValidateNodeSelector (the required terms; not ported: preferred ones)
function ValidateNodeSelectorRequirement(rq, fp) {
  const errs = [], vals = rq.values ?? [];
  switch (rq.operator) {
    case "In": case "NotIn":
      if (!vals.length) errs.push(Required(`${fp}.values`, "must be specified when `operator` is 'In' or 'NotIn'"));
      break;
    case "Exists": case "DoesNotExist":
      if (vals.length) errs.push(Forbidden(`${fp}.values`, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"));
      break;
    case "Gt": case "Lt":
      if (vals.length !== 1) errs.push(Required(`${fp}.values`, "must be specified single value when `operator` is 'Lt' or 'Gt'"));
      break;
    default:
      errs.push(Invalid(`${fp}.operator`, rq.operator, "not a valid selector operator"));
  }
  errs.push(...ValidateLabelName(rq.key, `${fp}.key`));
  for (const [i, v] of vals.entries()) errs.push(...IsValidLabelValue(str(v)).map((m) => Invalid(`${fp}.values[${i}]`, v, m)));
  return errs;
}
function validateNodeAffinity(na, fp) {
  const errs = [];
  const req = na.requiredDuringSchedulingIgnoredDuringExecution;
  if (req) {
    const tp = `${fp}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms`;
    if (!(req.nodeSelectorTerms ?? []).length) errs.push(Required(tp, "must have at least one node selector term"));
    for (const [i, t] of (req.nodeSelectorTerms ?? []).entries())
      for (const [j, e] of (t.matchExpressions ?? []).entries()) errs.push(...ValidateNodeSelectorRequirement(e, `${tp}[${i}].matchExpressions[${j}]`));
  }
  return errs;
}
// core ValidateTolerations (+ validateTaintEffect)
function ValidateTolerations(tols, fp) {
  const errs = [], effects = ["NoSchedule", "PreferNoSchedule", "NoExecute"];
  for (const [i, t] of (tols ?? []).entries()) {
    const ip = `${fp}[${i}]`;
    if (str(t.key).length) errs.push(...ValidateLabelName(t.key, `${ip}.key`));
    if (!str(t.key).length && t.operator !== "Exists")
      errs.push(Invalid(`${ip}.operator`, str(t.operator), "operator must be Exists when `key` is empty, which means \"match all values and all keys\""));
    if (t.tolerationSeconds !== undefined && t.tolerationSeconds !== null && t.effect !== "NoExecute")
      errs.push(Invalid(`${ip}.effect`, str(t.effect), "effect must be 'NoExecute' when `tolerationSeconds` is set"));
    switch (t.operator ?? "") {
      case "Equal": case "": {
        const m = IsValidLabelValue(str(t.value));
        if (m.length) errs.push(Invalid(`${ip}.operator`, str(t.value), m.join(";")));
        break;
      }
      case "Exists":
        if (str(t.value).length) errs.push(Invalid(`${ip}.operator`, t.value, "value must be empty when `operator` is 'Exists'"));
        break;
      default:
        errs.push(NotSupported(`${ip}.operator`, t.operator, ["Equal", "Exists"]));
    }
    if (str(t.effect).length && !effects.includes(t.effect)) errs.push(NotSupported(`${ip}.effect`, t.effect, effects));
  }
  return errs;
}

// core ValidatePodSpec (not ported: resourceClaims, dnsConfig contents, pod affinity,
// readiness/scheduling gates, topologySpreadConstraints, overhead, os and Windows,
// priorityClassName/hostname/subdomain formats, pod-level user and group ids)
function ValidatePodSpec(spec, fp) {
  const errs = [];
  const sc = spec.securityContext ?? {};
  const hostUsers = spec.hostUsers !== false; // (in v1 a field of the pod spec, in the internal type of its securityContext)
  const [vols, verrs] = ValidateVolumes(spec.volumes, `${fp}.volumes`);
  errs.push(...verrs);
  errs.push(...validateContainers(spec.containers, vols, `${fp}.containers`, hostUsers));
  errs.push(...validateInitContainers(spec.initContainers, spec.containers, vols, `${fp}.initContainers`, hostUsers));
  // validatePodHostNetworkDeps: in a template, hostPort may be 0 (defaulted in
  // the pod) but not any other port than containerPort
  if (spec.hostNetwork)
    for (const [i, c] of (spec.containers ?? []).entries())
      for (const [j, port] of (c.ports ?? []).entries())
        if (port.hostPort && port.hostPort !== port.containerPort)
          errs.push(Invalid(`${fp}.containers[${i}].ports[${j}].hostPort`, port.hostPort, "must match `containerPort` when `hostNetwork` is true"));
  // validateRestartPolicy, validateDNSPolicy
  // (both defaulted: never empty)
  if (!["Always", "OnFailure", "Never"].includes(spec.restartPolicy))
    errs.push(NotSupported(`${fp}.restartPolicy`, spec.restartPolicy, ["Always", "OnFailure", "Never"]));
  const dns = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"];
  if (!dns.includes(spec.dnsPolicy)) errs.push(NotSupported(`${fp}.dnsPolicy`, spec.dnsPolicy, dns));
  if (spec.dnsPolicy === "None" && !spec.dnsConfig) errs.push(Required(`${fp}.dnsConfig`, "must provide `dnsConfig` when `dnsPolicy` is None"));
  errs.push(...ValidateLabels(spec.nodeSelector, `${fp}.nodeSelector`));
  // validatePodSpecSecurityContext
  const sp = `${fp}.securityContext`;
  if (spec.shareProcessNamespace === true && spec.hostPID)
    errs.push(Invalid(`${sp}.shareProcessNamespace`, true, "ShareProcessNamespace and HostPID cannot both be enabled"));
  errs.push(...validateSeccompProfileField(sc.seccompProfile, `${sp}.seccompProfile`));
  errs.push(...ValidateAppArmorProfileField(sc.appArmorProfile, `${sp}.appArmorProfile`));
  // validateAffinity (node affinity), ValidateTolerations
  if (spec.affinity?.nodeAffinity) errs.push(...validateNodeAffinity(spec.affinity.nodeAffinity, `${fp}.affinity.nodeAffinity`));
  errs.push(...ValidateTolerations(spec.tolerations, `${fp}.tolerations`));
  // validateHostUsers
  if (!hostUsers)
    for (const [f, name] of [["hostNetwork", "hostNetwork"], ["hostPID", "HostPID"], ["hostIPC", "HostIPC"]])
      if (spec[f]) errs.push(Forbidden(`${fp}.${name}`, "when `pod.Spec.HostUsers` is false"));
  // ValidateServiceAccountName (NameIsDNSSubdomain)
  if (str(spec.serviceAccountName).length)
    errs.push(...IsDNS1123Subdomain(str(spec.serviceAccountName)).map((m) => Invalid(`${fp}.serviceAccountName`, spec.serviceAccountName, m)));
  return errs;
}

const APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/";
const SECCOMP_POD_ANNOTATION = "seccomp.security.alpha.kubernetes.io/pod";
const SECCOMP_CONTAINER_ANNOTATION = "container.seccomp.security.alpha.kubernetes.io/";
// core ValidateSeccompProfile (the deprecated annotations' values)
function ValidateSeccompProfile(p, fp) {
  if (["runtime/default", "docker/default", "unconfined"].includes(p)) return [];
  if (str(p).startsWith("localhost/")) return validateLocalDescendingPath(p.slice("localhost/".length), fp);
  return [Invalid(fp, p, "must be a valid seccomp profile")];
}
// core ValidatePodTemplateSpec: labels, annotations, ValidatePodSpecificAnnotations
// (ValidateSeccompPodAnnotations, ValidateAppArmorPodAnnotations), ValidatePodSpec,
// validateSeccompAnnotationsAndFields, validateAppArmorAnnotationsAndFieldsMatchOnCreate
function ValidatePodTemplateSpec(tpl, fp) {
  const meta = tpl.metadata ?? {}, spec = tpl.spec ?? {}, ann = meta.annotations ?? {};
  const errs = [...ValidateLabels(meta.labels, `${fp}.labels`), ...ValidateAnnotations(ann, `${fp}.annotations`)];
  const ap = `${fp}.annotations`, sp = `${fp}.spec`;
  const all = containersOf(spec);
  for (const [k, v] of Object.entries(ann)) {
    if (k === SECCOMP_POD_ANNOTATION || k.startsWith(SECCOMP_CONTAINER_ANNOTATION)) errs.push(...ValidateSeccompProfile(str(v), `${ap}.${k}`));
    if (!k.startsWith(APPARMOR_ANNOTATION)) continue;
    const name = k.slice(APPARMOR_ANNOTATION.length);
    if (!all.some((c) => c.name === name)) errs.push(Invalid(`${ap}[${k}]`, name, "container not found"));
    if (!["", "runtime/default", "unconfined"].includes(str(v)) && !str(v).startsWith("localhost/"))
      errs.push(Invalid(`${ap}[${k}]`, v, `invalid AppArmor profile name: ${JSON.stringify(str(v))}`));
  }
  errs.push(...ValidatePodSpec(spec, sp));
  // validateSeccompAnnotationsAndFieldsMatch
  const seccompMatch = (value, field, p) => {
    if (!field) return [];
    if (field.type === "Unconfined" && value !== "unconfined") return [Forbidden(`${p}.type`, "seccomp type in annotation and field must match")];
    if (field.type === "RuntimeDefault" && value !== "runtime/default" && value !== "docker/default") return [Forbidden(`${p}.type`, "seccomp type in annotation and field must match")];
    if (field.type === "Localhost") {
      if (!str(value).startsWith("localhost/")) return [Forbidden(`${p}.type`, "seccomp type in annotation and field must match")];
      if (field.localhostProfile === undefined || str(value).slice("localhost/".length) !== field.localhostProfile)
        return [Forbidden(`${p}.localhostProfile`, "seccomp profile in annotation and field must match")];
    }
    return [];
  };
  if (spec.securityContext?.seccompProfile && Object.hasOwn(ann, SECCOMP_POD_ANNOTATION))
    errs.push(...seccompMatch(ann[SECCOMP_POD_ANNOTATION], spec.securityContext.seccompProfile, `${sp}.securityContext.seccompProfile`));
  const visit = [...(spec.initContainers ?? []).map((c, i) => [c, `${sp}.initContainers[${i}]`]), ...(spec.containers ?? []).map((c, i) => [c, `${sp}.containers[${i}]`])];
  for (const [c, cp] of visit) {
    const k = SECCOMP_CONTAINER_ANNOTATION + c.name;
    if (c.securityContext?.seccompProfile && Object.hasOwn(ann, k))
      errs.push(...seccompMatch(ann[k], c.securityContext.seccompProfile, `${cp}.securityContext.seccompProfile`));
  }
  // validateAppArmorAnnotationsAndFieldsMatchOnCreate (which skips Windows pods: not ported)
  for (const [c, cp] of visit) {
    const profile = c.securityContext?.appArmorProfile ?? spec.securityContext?.appArmorProfile;
    const k = APPARMOR_ANNOTATION + c.name;
    if (!profile || !Object.hasOwn(ann, k)) continue;
    const a = str(ann[k]), pp = `${cp}.securityContext.appArmorProfile`;
    if (profile.type === "Unconfined" && a !== "unconfined") errs.push(Forbidden(`${pp}.type`, "apparmor type in annotation and field must match"));
    if (profile.type === "RuntimeDefault" && a !== "runtime/default") errs.push(Forbidden(`${pp}.type`, "apparmor type in annotation and field must match"));
    if (profile.type === "Localhost") {
      if (!a.startsWith("localhost/")) errs.push(Forbidden(`${pp}.type`, "apparmor type in annotation and field must match"));
      else if (a.slice("localhost/".length) !== profile.localhostProfile) errs.push(Forbidden(`${pp}.localhostProfile`, "apparmor profile in annotation and field must match"));
    }
  }
  if ((spec.ephemeralContainers ?? []).length) errs.push(Forbidden(`${sp}.ephemeralContainers`, "ephemeral containers not allowed in pod template"));
  return errs;
}

// apps ValidatePositiveIntOrPercent, getIntOrPercentValue, IsNotMoreThan100Percent,
// ValidateRollingUpdateDaemonSet, ValidateDaemonSetUpdateStrategy
function ValidatePositiveIntOrPercent(v, fp) {
  if (typeof v === "string") return IsValidPercent(v).map((m) => Invalid(fp, v, m));
  return v < 0 ? [Invalid(fp, v, IsNegativeErrorMsg)] : [];
}
function intOrPercentValue(v) {
  if (typeof v === "string") return IsValidPercent(v).length ? (/^[+-]?[0-9]+$/.test(v) ? Number(v) : 0) : Number(v.slice(0, -1));
  return typeof v === "number" ? v : 0;
}
const notMoreThan100 = (v, fp) => (typeof v === "string" && !IsValidPercent(v).length && Number(v.slice(0, -1)) > 100 ? [Invalid(fp, v, "must not be greater than 100%")] : []);
function ValidateDaemonSetUpdateStrategy(us, fp) {
  switch (us.type) {
    case "OnDelete": return [];
    case "RollingUpdate": {
      const ru = us.rollingUpdate, rp = `${fp}.rollingUpdate`;
      if (!ru) return [Required(rp, "")];
      const errs = [...ValidatePositiveIntOrPercent(ru.maxUnavailable, `${rp}.maxUnavailable`), ...ValidatePositiveIntOrPercent(ru.maxSurge, `${rp}.maxSurge`),
        ...notMoreThan100(ru.maxUnavailable, `${rp}.maxUnavailable`), ...notMoreThan100(ru.maxSurge, `${rp}.maxSurge`)];
      const hasUnavailable = intOrPercentValue(ru.maxUnavailable) !== 0, hasSurge = intOrPercentValue(ru.maxSurge) !== 0;
      if (hasUnavailable && hasSurge) errs.push(Invalid(`${rp}.maxSurge`, ru.maxSurge, "may not be set when maxUnavailable is non-zero"));
      if (!hasUnavailable && !hasSurge) errs.push(Required(`${rp}.maxUnavailable`, "cannot be 0 when maxSurge is 0"));
      return errs;
    }
    default:
      return [NotSupported(fp, us, ["RollingUpdate", "OnDelete"])];
  }
}
// apps ValidateDaemonSetSpec
function ValidateDaemonSetSpec(spec, fp) {
  const errs = ValidateLabelSelector(spec.selector, `${fp}.selector`);
  const tpl = spec.template ?? {};
  if (selectorMatches(spec.selector, tpl.metadata?.labels) === false)
    errs.push(Invalid(`${fp}.template.metadata.labels`, tpl.metadata?.labels ?? {}, "`selector` does not match template `labels`"));
  if (spec.selector && Object.keys(spec.selector.matchLabels ?? {}).length + (spec.selector.matchExpressions ?? []).length === 0)
    errs.push(Invalid(`${fp}.selector`, spec.selector, "empty selector is invalid for daemonset"));
  errs.push(...ValidatePodTemplateSpec(tpl, `${fp}.template`));
  if (tpl.spec?.restartPolicy !== "Always") errs.push(NotSupported(`${fp}.template.spec.restartPolicy`, tpl.spec?.restartPolicy, ["Always"]));
  if (tpl.spec?.activeDeadlineSeconds !== undefined && tpl.spec?.activeDeadlineSeconds !== null)
    errs.push(Forbidden(`${fp}.template.spec.activeDeadlineSeconds`, "activeDeadlineSeconds in DaemonSet is not Supported"));
  for (const f of ["minReadySeconds", "templateGeneration", "revisionHistoryLimit"])
    if ((spec[f] ?? 0) < 0) errs.push(Invalid(`${fp}.${f}`, spec[f], IsNegativeErrorMsg));
  errs.push(...ValidateDaemonSetUpdateStrategy(spec.updateStrategy ?? {}, `${fp}.updateStrategy`));
  return errs;
}
// core ValidateConfigMap: the keys (not ported: a key in both data and binaryData, the 1 MiB limit)
function ValidateConfigMap(cm) {
  const errs = [];
  for (const f of ["data", "binaryData"])
    for (const k of Object.keys(cm[f] ?? {})) errs.push(...IsConfigMapKey(k).map((m) => Invalid(`${f}[${k}]`, k, m)));
  return errs;
}
// apimachinery ValidateObjectMeta: the name (a DNS subdomain; a Namespace's, a DNS label), labels, annotations
function ValidateObjectMeta(o) {
  const meta = o.metadata ?? {}, errs = [];
  errs.push(...(o.kind === "Namespace" ? IsDNS1123Label : IsDNS1123Subdomain)(str(meta.name)).map((m) => Invalid("metadata.name", meta.name, m)));
  errs.push(...ValidateLabels(meta.labels, "metadata.labels"), ...ValidateAnnotations(meta.annotations, "metadata.annotations"));
  return errs;
}

// ---------------------------------------------------------------------------
// 1-3 on every distinct object, once
// ---------------------------------------------------------------------------

function modules(apiVersion) {
  const [group, version] = String(apiVersion).includes("/") ? apiVersion.split("/") : ["", apiVersion];
  return {
    models: group ? `kubernetes-models/${group}/${version}` : `kubernetes-models/${version}`,
    types: group ? `kubernetes-types/${group.split(".")[0]}/${version}` : `kubernetes-types/core/${version}`,
  };
}
// tsc, in this process: the declaration files are parsed once for all the
// directories a run checks.  skipLibCheck: lib.d.ts and kubernetes-types are
// not themselves checked; the manifests are, excess properties included.
const TS_OPTIONS = { strict: true, noEmit: true, target: ts.ScriptTarget.ES2020, moduleResolution: ts.ModuleResolutionKind.Node10, types: [], skipLibCheck: true };
const tsFile = path.join(here, ".tscheck", "manifests.ts"); // virtual: resolves kubernetes-types from here/node_modules
const tsCache = new Map();
let tsProgram;
function typeCheck(typed) {
  let src = "";
  typed.forEach(({ where, obj }, i) => {
    src += `// ${where}\nimport type { ${obj.kind} as T${i} } from "${modules(obj.apiVersion).types}";\n`;
    src += `export const o${i}: T${i} = ${JSON.stringify(obj, null, 1)};\n`;
  });
  const host = ts.createCompilerHost(TS_OPTIONS);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, lang, ...rest) => {
    if (name === tsFile) return ts.createSourceFile(name, src, lang);
    if (!tsCache.has(name)) tsCache.set(name, getSourceFile(name, lang, ...rest));
    return tsCache.get(name);
  };
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name === tsFile || fileExists(name);
  tsProgram = ts.createProgram([tsFile], TS_OPTIONS, host, tsProgram);
  const diags = ts.getPreEmitDiagnostics(tsProgram);
  if (!diags.length) return "";
  const lines = src.split("\n");
  // each error names the object it is in (the comment above its const), and
  // is listed once: not again for the copy of the object a component patched
  const seen = new Set();
  return diags.flatMap((d) => {
    const msg = ts.flattenDiagnosticMessageText(d.messageText, "\n");
    if (!d.file) return [`error TS${d.code}: ${msg}`];
    const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
    let obj = "";
    if (d.file.fileName === tsFile)
      for (let l = line; l >= 0; l--) if (lines[l].startsWith("// ")) { obj = lines[l].slice(3); break; }
    const key = `${obj.replace(/ \(patched by .*\)$/, "")}: ${d.code}: ${msg}`;
    if (seen.has(key)) return [];
    seen.add(key);
    return [`${path.basename(d.file.fileName)}(${line + 1},${character + 1})${obj && ` [${obj}]`}: error TS${d.code}: ${msg}`];
  }).join("\n");
}

const whereOf = (rec) => `${rec.file}: ${rec.obj?.kind}/${rec.obj?.metadata?.name}` + (rec.via.length ? ` (patched by ${[...new Set(rec.via)].join(", ")})` : "");
// A problem of an object, listed once: not again for its copy a component patched
function R(rec, msg) {
  const key = `${rec.file}: ${rec.obj?.kind}/${rec.obj?.metadata?.name}: ${msg}`;
  if (!reported.has(key)) {
    reported.add(key);
    P(`${whereOf(rec)}: ${msg}`);
  }
}

// ---------------------------------------------------------------------------
// 4, 5: per build
// ---------------------------------------------------------------------------

const METRICS_PORT_NAME = "metrics";
const probePort = (probe) => probe?.httpGet?.port ?? probe?.tcpSocket?.port ?? probe?.grpc?.port;
// the kubelet's resolution of a probe's port (pkg/probe/util.go ResolveContainerPort):
// a name must be one of the container's ports, or the probe fails ("couldn't find port")
function resolvePort(port, c) {
  if (typeof port === "number") return port;
  if (/^[0-9]+$/.test(str(port))) return Number(port);
  return (c.ports ?? []).find((p) => p.name === port)?.containerPort;
}
function metricsAddrPort(c) {
  const args = [...(c.command ?? []), ...(c.args ?? [])].map(str);
  for (const [i, a] of args.entries()) {
    const v = a.startsWith("--metrics-addr=") ? a.slice("--metrics-addr=".length) : a === "--metrics-addr" ? args[i + 1] : undefined;
    if (v !== undefined) return /:([0-9]+)$/.test(v) ? Number(/:([0-9]+)$/.exec(v)[1]) : NaN;
  }
  return undefined;
}
const labelOf = (t) => (t.label === "." ? "the base" : t.label);

// lism's own rules (beyond the API server), on every DaemonSet of every build
function policy(rec, t) {
  const ds = rec.obj;
  const W = (m) => R(rec, `lism policy: ${m}`);
  const pod = ds.spec?.template?.spec ?? {};
  if (pod.nodeSelector?.["kubernetes.io/os"] !== "linux") W("nodeSelector must have kubernetes.io/os: linux (the image is a Linux one)");
  const podSc = pod.securityContext ?? {};
  const all = [...(pod.initContainers ?? []).map((c) => [c, true]), ...(pod.containers ?? []).map((c) => [c, false])];
  for (const [c, init] of all) {
    const sc = c.securityContext ?? {};
    if (sc.privileged === true) {
      if (!(init && c.name === "mount-bpffs")) W(`container ${c.name} is privileged: only the init container mount-bpffs may be`);
    } else {
      if (!(sc.capabilities?.drop ?? []).includes("ALL")) W(`container ${c.name} does not drop ALL capabilities`);
      if (sc.allowPrivilegeEscalation !== false) W(`container ${c.name} does not set allowPrivilegeEscalation: false`);
    }
    // the manifest comments say why: pins under the node's /sys/fs/bpf, and mount(2) there
    if ((sc.seLinuxOptions ?? podSc.seLinuxOptions)?.type !== "spc_t") W(`container ${c.name} does not set seLinuxOptions.type spc_t`);
    if ((sc.appArmorProfile ?? podSc.appArmorProfile)?.type !== "Unconfined") W(`container ${c.name} does not set appArmorProfile Unconfined`);
    if (t.standalone) {
      const want = version ? `localhost/lism:${version}` : "localhost/lism:<VERSION>";
      if (!/^localhost\/lism:[^:@/]+$/.test(str(c.image)) || (version && c.image !== want))
        W(`container ${c.name} image ${c.image} is not ${want} (built by ${labelOf(t)})`);
    }
  }
  if (ds.metadata?.name !== "lism") return;
  const lism = (pod.containers ?? []).find((c) => c.name === "lism");
  if (!lism) return W("no container lism");
  let port = metricsAddrPort(lism);
  if (!Number.isInteger(port)) {
    W("container lism has no --metrics-addr=HOST:PORT in its args");
    port = undefined;
  }
  for (const k of PROBES) {
    if (!lism[k]) {
      W(`container lism has no ${k}`);
      continue;
    }
    const p = resolvePort(probePort(lism[k]), lism);
    if (port !== undefined && p !== port) W(`container lism: ${k} port ${probePort(lism[k])} is not the --metrics-addr port ${port}`);
  }
  const mp = (lism.ports ?? []).find((p) => p.name === METRICS_PORT_NAME);
  if (!mp) W(`container lism has no port named ${METRICS_PORT_NAME}`);
  else if (port !== undefined && mp.containerPort !== port) W(`container lism: port ${METRICS_PORT_NAME} containerPort ${mp.containerPort} is not the --metrics-addr port ${port}`);
  const ann = ds.spec?.template?.metadata?.annotations?.["prometheus.io/port"];
  if (port !== undefined && str(ann) !== String(port)) W(`pod annotation prometheus.io/port ${ann} is not the --metrics-addr port ${port}`);
}

// PodMonitor (CRD, no schema): it must select the lism pods and scrape a port of the lism container
function podMonitor(where, pm, objs) {
  const spec = pm.spec ?? {};
  const nsSel = spec.namespaceSelector;
  const inScope = (ds) => nsSel?.any === true || (nsSel?.matchNames ? nsSel.matchNames.includes(ds.metadata?.namespace) : ds.metadata?.namespace === pm.metadata?.namespace);
  const selected = objs.filter((o) => o.kind === "DaemonSet" && inScope(o) && selectorMatches(spec.selector, o.spec?.template?.metadata?.labels));
  if (!selected.some((ds) => ds.metadata?.name === "lism")) P(`${where}: selector ${JSON.stringify(spec.selector)} does not select the pods of DaemonSet lism in ${pm.metadata?.namespace}`);
  if (!(spec.podMetricsEndpoints ?? []).length) P(`${where}: no podMetricsEndpoints`);
  for (const [i, ep] of (spec.podMetricsEndpoints ?? []).entries()) {
    if (typeof ep.port !== "string") {
      P(`${where}: podMetricsEndpoints[${i}]: no port name`);
      continue;
    }
    for (const ds of selected) {
      const c = (ds.spec?.template?.spec?.containers ?? []).find((x) => x.name === "lism") ?? null;
      const ports = c ? (c.ports ?? []) : containersOf(ds.spec?.template?.spec).flatMap((x) => x.ports ?? []);
      if (!ports.some((p) => p.name === ep.port)) P(`${where}: podMetricsEndpoints[${i}]: port ${ep.port} is not a port of the ${c ? "lism container" : "pods"} of DaemonSet ${ds.metadata?.name}`);
    }
    if (ep.interval !== undefined && !/^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$/.test(str(ep.interval)))
      P(`${where}: podMetricsEndpoints[${i}].interval ${ep.interval} is not a Prometheus duration`);
  }
}

// examples: the Node Feature Discovery rule must label nodes with the key the
// lism DaemonSet's nodeAffinity reads, with the values its builds select on
const lismDS = (recs) => recs.map((r) => r.obj).find((o) => o?.kind === "DaemonSet" && o.metadata?.name === "lism");
const affinityExprs = (ds) => (ds?.spec?.template?.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [])
  .flatMap((t) => t.matchExpressions ?? []);

// examples: a pod that opts in to lism exec's rings (LD_PRELOAD names
// liblism.so) mounts, read-only, the node directory where DaemonSet lism
// serves its device socket and publishes liblism.so (user/daemon.c), and
// names both as it sees them there
const DEVICE_SOCKET = "/run/lism/device.sock"; // include/lism/exec.h LISM_DEVICE_SOCKET: lism run's and liblism's default
const LIBRARY = "liblism.so";
function deviceOnNode(ds) {
  const pod = ds?.spec?.template?.spec ?? {};
  const c = (pod.containers ?? []).find((x) => x.name === "lism");
  if (!c) return null;
  const args = [...(c.command ?? []), ...(c.args ?? [])].map(str);
  let sock = str((c.env ?? []).find((e) => e.name === "LISM_DEVICE")?.value) || DEVICE_SOCKET;
  for (const [i, a] of args.entries()) {
    if (a.startsWith("--device-socket=")) sock = a.slice("--device-socket=".length);
    else if (a === "--device-socket") sock = str(args[i + 1]);
  }
  const dir = path.posix.dirname(sock);
  const m = (c.volumeMounts ?? []).find((x) => path.posix.normalize(str(x.mountPath)) === dir);
  const host = (pod.volumes ?? []).find((v) => v.name === m?.name)?.hostPath?.path;
  return { dir, host: host && path.posix.normalize(str(host)), name: path.posix.basename(sock) };
}
function execOptIn(rec, ds) {
  const pod = podSpecOf(rec.obj);
  const W = (m) => P(`${whereOf(rec)}: ${m}`);
  const dev = deviceOnNode(ds);
  for (const c of containersOf(pod)) {
    const env = Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value]));
    const lib = str(env.LD_PRELOAD).split(/[: ]+/).find((p) => path.posix.basename(p) === LIBRARY);
    if (!lib) continue;
    if (!dev?.host) {
      W(`container ${c.name} preloads ${LIBRARY}, but DaemonSet lism mounts no host directory at its device socket's ${dev?.dir ?? "(no container lism)"}`);
      continue;
    }
    const m = (c.volumeMounts ?? []).find((x) => path.posix.normalize(str(x.mountPath)) === path.posix.dirname(lib));
    if (!m) {
      W(`container ${c.name}: LD_PRELOAD ${lib} is not in a directory it mounts (the node's ${dev.host}, where DaemonSet lism publishes ${LIBRARY})`);
      continue;
    }
    const hp = (pod.volumes ?? []).find((v) => v.name === m.name)?.hostPath;
    if (!hp || path.posix.normalize(str(hp.path)) !== dev.host)
      W(`container ${c.name} mounts ${hp ? `host path ${hp.path}` : `volume ${m.name}`} at ${m.mountPath}, not the node's ${dev.host}, where DaemonSet lism serves its device and publishes ${LIBRARY}`);
    if (m.readOnly !== true) W(`lism policy: container ${c.name} mounts the node's ${dev.host} writable (readOnly: true: the library and the socket are lism's)`);
    const want = path.posix.join(str(m.mountPath), dev.name), got = env.LISM_DEVICE ?? DEVICE_SOCKET;
    if (got !== want)
      W(`container ${c.name}: LISM_DEVICE ${got}${env.LISM_DEVICE === undefined ? " (unset: liblism's default)" : ""} is not ${want}, DaemonSet lism's device socket as the pod mounts it`);
  }
}

// ---------------------------------------------------------------------------
// checkDir(DIR): build and check DIR; the lines to print (the last one says
// "valid" or counts the problems) and whether it is valid
// ---------------------------------------------------------------------------

function checkListed(kdir, k) {
  const listed = listedFiles(kdir, k);
  for (const f of fs.readdirSync(kdir).sort())
    if (/\.ya?ml$/.test(f) && f !== "kustomization.yaml" && !listed.has(path.resolve(kdir, f)))
      P(`${rel(path.join(kdir, f))}: not listed in ${kfile(kdir)}`);
}

async function checkDir(dir) {
  root = path.resolve(dir);
  problems = new Set();
  reported = new Set();
  version = null;
  const versionFile = path.resolve(root, "../../VERSION");
  try {
    version = fs.readFileSync(versionFile, "utf8").trim();
    if (!version) P(`${versionFile}: empty`);
  } catch {
    P(`${versionFile}: missing (the release, which every images[].newTag must equal)`);
  }

  const targets = [];
  const examples = [];
  const kustomizations = []; // [kdir, k]

  let base = [];
  if (!fs.existsSync(path.join(root, "kustomization.yaml"))) P(`${rel(root)}: no kustomization.yaml`);
  else {
    const k = readKustomization(root);
    if (k) {
      kustomizations.push([root, k]);
      checkListed(root, k);
      if (k.kind !== "Kustomization") P(`${kfile(root)}: the base must be a Kustomization`);
      base = build(root, []);
      targets.push({ label: ".", records: base, standalone: true, hasBase: true });
    }
  }
  (function discover(dir) {
    for (const ent of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      if (!ent.isDirectory() || ent.name.startsWith(".") || ent.name === "node_modules") continue;
      const d = path.join(dir, ent.name);
      if (fs.existsSync(path.join(d, "kustomization.yaml"))) {
        const k = readKustomization(d);
        if (k) {
          kustomizations.push([d, k]);
          checkListed(d, k);
          if (k.kind === "Component") targets.push({ label: rel(d), records: build(d, structuredClone(base)), hasBase: true });
          else targets.push({ label: rel(d), records: build(d, []), standalone: true });
        }
      } else {
        for (const f of fs.readdirSync(d).sort())
          if (/\.ya?ml$/.test(f)) examples.push(path.join(d, f));
      }
      discover(d);
    }
  })(root);

  const distinct = new Map(); // JSON -> rec
  for (const t of targets)
    for (const rec of t.records) {
      const key = JSON.stringify(rec.obj);
      if (!distinct.has(key)) distinct.set(key, rec);
    }
  const exampleObjects = [];
  for (const f of examples)
    for (const obj of loadDocs(f) ?? []) {
      const rec = { file: rel(f), obj, via: [] };
      exampleObjects.push(rec);
      if (obj?.kind !== "NodeFeatureRule" && !distinct.has(JSON.stringify(obj))) distinct.set(JSON.stringify(obj), rec);
    }

  const typed = [];
  for (const rec of distinct.values()) {
    const obj = rec.obj;
    if (obj === null || typeof obj !== "object" || !obj.apiVersion || !obj.kind) {
      R(rec, "not a Kubernetes object (no apiVersion or kind)");
      continue;
    }
    if (isCRD(obj)) continue;
    try {
      const mod = await import(modules(obj.apiVersion).models);
      const Model = mod[obj.kind];
      if (!Model) {
        R(rec, `unknown kind for ${obj.apiVersion}`);
        continue;
      }
      new Model(obj).validate();
    } catch (e) {
      R(rec, e.message.split("\n").slice(0, 6).join(" | "));
    }
    typed.push({ where: whereOf(rec), obj });
    for (const e of ValidateObjectMeta(obj)) R(rec, e);
    if (obj.kind === "ConfigMap") for (const e of ValidateConfigMap(obj)) R(rec, e);
    if (obj.kind === "DaemonSet") for (const e of ValidateDaemonSetSpec(withDefaults(obj).spec, "spec")) R(rec, e);
    if (obj.kind === "Pod") for (const e of ValidatePodSpec(podDefaults(structuredClone(obj.spec ?? {})), "spec")) R(rec, e);
  }

  const tsErrors = typeCheck(typed);
  if (tsErrors) P(`type check (tsc):\n${tsErrors}`);

  for (const t of targets) {
    const objs = t.records.map((r) => r.obj).filter((o) => o && typeof o === "object");
    // a standalone kustomization other than the base (cleanup) is applied next to the base:
    // its ServiceAccount and ConfigMaps may come from there
    const scope = t.standalone && t.label !== "." ? [...objs, ...base.map((r) => r.obj)] : objs;
    const byKind = (list, k) => list.filter((o) => o.kind === k);
    const nsOf = (o) => o.metadata?.namespace;
    for (const rec of t.records) {
      const ds = rec.obj;
      if (ds?.kind !== "DaemonSet") continue;
      const pod = ds.spec?.template?.spec ?? {};
      const sa = pod.serviceAccountName;
      if (sa && !byKind(scope, "ServiceAccount").some((s) => s.metadata?.name === sa && nsOf(s) === nsOf(ds)))
        R(rec, `ServiceAccount ${sa} is not defined in ${nsOf(ds)}`);
      for (const c of containersOf(pod)) {
        const defined = new Set((c.env ?? []).map((e) => e.name));
        for (const ref of c.envFrom ?? []) {
          const name = ref.configMapRef?.name;
          if (!name) continue;
          const cm = byKind(scope, "ConfigMap").find((m) => m.metadata?.name === name && nsOf(m) === nsOf(ds));
          if (!cm) {
            if (!ref.configMapRef.optional) R(rec, `container ${c.name}: ConfigMap ${name} is not defined in ${nsOf(ds)}`);
          } else Object.keys(cm.data ?? {}).forEach((k) => defined.add((ref.prefix ?? "") + k));
        }
        for (const a of [...(c.command ?? []), ...(c.args ?? [])])
          for (const m of str(a).matchAll(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g))
            if (!defined.has(m[1])) R(rec, `container ${c.name}: $(${m[1]}) is not defined`);
        // the kubelet, not the API server: a probe's named port must be one of the container's ports
        for (const k of PROBES) {
          const port = probePort(c[k]);
          if (port !== undefined && resolvePort(port, c) === undefined)
            R(rec, `container ${c.name}: ${k}: couldn't find port: ${port} in the container's ports (the kubelet's probe fails)`);
        }
      }
      policy(rec, t);
    }
    if (t.hasBase && !objs.some((o) => o.kind === "DaemonSet" && o.metadata?.name === "lism"))
      P(`${labelOf(t)}: no DaemonSet lism`);
    for (const rec of t.records) if (rec.obj?.kind === "PodMonitor") podMonitor(whereOf(rec), rec.obj, objs);
  }

  // images: every kustomization's images[].newTag is the release
  for (const [kdir, k] of kustomizations)
    for (const [i, img] of (k.images ?? []).entries())
      if (version && str(img?.newTag) !== version) P(`${kfile(kdir)}: images[${i}] newTag ${img?.newTag} is not VERSION ${version}`);

  for (const rec of exampleObjects) {
    const o = rec.obj, where = whereOf(rec);
    if (o?.kind !== "NodeFeatureRule") continue;
    if (o.apiVersion !== "nfd.k8s-sigs.io/v1alpha1") P(`${where}: apiVersion ${o.apiVersion} is not nfd.k8s-sigs.io/v1alpha1`);
    const set = new Map(); // key -> values
    for (const r of o.spec?.rules ?? [])
      for (const [k, v] of Object.entries(r.labels ?? {})) {
        if (!set.has(k)) set.set(k, new Set());
        set.get(k).add(str(v));
      }
    if (!set.size) P(`${where}: sets no label`);
    const ds = lismDS(base);
    const keys = new Set(affinityExprs(ds).map((e) => e.key));
    for (const k of set.keys())
      if (!keys.has(k)) P(`${where}: sets label ${k}, which the nodeAffinity of DaemonSet lism does not read (it reads ${[...keys].join(", ") || "none"})`);
    const seen = new Set(); // each distinct lism DaemonSet once
    for (const t of targets) {
      const key = JSON.stringify(lismDS(t.records) ?? null);
      if (seen.has(key)) continue;
      seen.add(key);
      for (const e of affinityExprs(lismDS(t.records))) {
        if (!set.has(e.key) || !["In", "NotIn"].includes(e.operator)) continue;
        for (const v of e.values ?? [])
          if (!set.get(e.key).has(str(v))) P(`${where}: DaemonSet lism (${labelOf(t)}) selects ${e.key} ${e.operator} ${v}, a value the rule never sets`);
      }
    }
  }
  for (const rec of exampleObjects)
    if (rec.obj && !isCRD(rec.obj) && !rec.obj.apiVersion) P(`${whereOf(rec)}: not a Kubernetes object`);
    else if (podSpecOf(rec.obj)) execOptIn(rec, lismDS(base));

  const nObjects = distinct.size + exampleObjects.filter((r) => r.obj?.kind === "NodeFeatureRule").length;
  const builds = targets.map(labelOf).join(", ");
  if (problems.size)
    return [...[...problems].map((p) => `check-manifests: ${p}`),
      `check-manifests: ${root}: ${nObjects} distinct objects in ${targets.length} builds (${builds}), ${problems.size} problems`];
  return [`check-manifests: ${root}: ${nObjects} distinct objects in ${targets.length} builds (${builds}) valid ` +
    `(schema, types, API rules, references, policy; PodMonitor and NodeFeatureRule are CRDs: no schema, checked by references)`];
}

// node check.mjs DIR: prints the problems, exits 1 if there are any.
// node check.mjs --each DIR...: checks each DIR in this one process (the
// mutations of run.sh), writes DIR.out: the lines, then "exit 0" or "exit 1".
const args = process.argv.slice(2);
if (args[0] === "--each") {
  for (const dir of args.slice(1)) {
    let lines;
    try { lines = await checkDir(dir); } catch (e) { lines = [`check-manifests: ${dir}: check.mjs failed: ${e.stack}`, "x problems"]; }
    const ok = !lines.at(-1).endsWith(" problems");
    fs.writeFileSync(`${path.resolve(dir)}.out`, [...lines, `exit ${ok ? 0 : 1}`].join("\n") + "\n");
  }
} else {
  const lines = await checkDir(args[0] ?? ".");
  for (const l of lines) console.log(l);
  process.exit(lines.at(-1).endsWith(" problems") ? 1 : 0);
}
