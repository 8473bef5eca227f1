#!/usr/bin/env bash
# make check-manifests: the real manifests must pass every check, and each
# mutation below (one mistake a person could make) must be caught, by the
# rule it is there for.
# Usage: tests/manifests/run.sh BUILD_DIR; prints "N passed, N failed".
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mkdir -p "$1/manifests" && cd "$1/manifests" && pwd)
passed=0 failed=0

cp "$here/package.json" "$here/package-lock.json" "$here/check.mjs" "$work/"
if ! command -v npm >/dev/null; then
	echo "check-manifests: npm missing (make deps installs nodejs and npm)"
	echo "0 passed, 1 failed"
	exit 1
fi
if [ ! -x "$work/node_modules/.bin/tsc" ] || ! cmp -s "$here/package-lock.json" "$work/.installed-lock"; then
	(cd "$work" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) || {
		echo "check-manifests: npm ci failed"
		echo "0 passed, 1 failed"
		exit 1
	}
	cp "$here/package-lock.json" "$work/.installed-lock"
fi

if node "$work/check.mjs" "$root/deploy/kubernetes"; then
	passed=$((passed + 1))
else
	failed=$((failed + 1))
fi

# name | file | sed expression | text the check must print
# The file is relative to deploy/kubernetes (../../VERSION is the release);
# each mutation runs on a copy of deploy/kubernetes and VERSION.  The text is
# the rule's own message (the API server's, for a ported rule), so that a
# mutation caught by some other rule only does not count.  No field may hold
# a '|'.  Single quotes where the text has backticks.
mutations=(
	# schema, types, references
	"misspelled field (types)|daemonset.yaml|s/hostNetwork: true/hostNetwrok: true/|hostNetwrok"
	"wrong value type (schema)|daemonset.yaml|s/terminationGracePeriodSeconds: [0-9]*/terminationGracePeriodSeconds: ninety/|terminationGracePeriodSeconds must be integer"
	'selector does not match the pod labels|daemonset.yaml|/^    matchLabels:/,/^  [a-z]/ s/app.kubernetes.io\/name: lism/app.kubernetes.io\/name: lism-typo/|`selector` does not match template `labels`'
	"undefined \$(VAR) in args|daemonset.yaml|s/\$(LISM_MAX_DMBS)/\$(LISM_MAX_DMB)/|\$(LISM_MAX_DMB) is not defined"
	"missing ServiceAccount|serviceaccount.yaml|s/^  name: lism$/  name: lism-other/|ServiceAccount lism is not defined"
	"resource file missing|kustomization.yaml|s/  - configmap.yaml/  - configmaps.yaml/|resource configmaps.yaml does not exist"
	"file not listed in its kustomization|kustomization.yaml|/  - namespace.yaml/d|namespace.yaml: not listed in kustomization.yaml"
	"file not listed in cleanup's kustomization|cleanup/kustomization.yaml|/  - daemonset.yaml/d|cleanup/daemonset.yaml: not listed in cleanup/kustomization.yaml"
	"component resource missing|components/gke/kustomization.yaml|s/- resourcequota.yaml/- resourcequotas.yaml/|resource resourcequotas.yaml does not exist"
	"kustomization field check-manifests does not emulate|components/gke/kustomization.yaml|s/^resources:/commonLabels: {a: b}\nresources:/|commonLabels: not understood by check-manifests"
	"misspelled field in a component (types)|components/gke/resourcequota.yaml|s/scopeSelector:/scopeSelectr:/|scopeSelectr"
	"opt-in patch over an affinity of another shape|components/opt-in/kustomization.yaml|s#value: lism.feature.node.kubernetes.io/supported#value: lism.feature.node.kubernetes.io/other#|patches[0]: on DaemonSet/lism: operation 0"
	"opt-in patch path that does not exist|components/opt-in/kustomization.yaml|s#matchExpressions/0/operator#matchExpressions/1/operator#|patches[0]: on DaemonSet/lism: operation 1"
	"opt-in patch breaking an API rule (API, on the patched copy)|components/opt-in/kustomization.yaml|s/value: \[\"true\"\]/value: []/|DaemonSet/lism (patched by components/opt-in): spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: Required value"
	"opt-in patch target that matches nothing|components/opt-in/kustomization.yaml|s/name: lism$/name: lism-agent/|matches no object"
	"PodMonitor selecting other pods|components/podmonitor/podmonitor.yaml|/^  selector:/,/podMetricsEndpoints/ s/name: lism$/name: lism-agent/|does not select the pods of DaemonSet lism"
	"PodMonitor scraping a port the container lacks|components/podmonitor/podmonitor.yaml|s/- port: metrics/- port: metric/|port metric is not a port of the lism container"
	"missing ConfigMap|daemonset.yaml|s/name: lism-config/name: lism-conf/|ConfigMap lism-conf is not defined"
	"PodMonitor interval not a duration|components/podmonitor/podmonitor.yaml|s/interval: 30s/interval: 30 seconds/|is not a Prometheus duration"
	"NFD rule setting another label key|nfd/nodefeaturerule.yaml|s/lism.feature.node.kubernetes.io\/supported: \"false\"/lism.feature.node.kubernetes.io\/unsupported: \"true\"/|which the nodeAffinity of DaemonSet lism does not read"
	"NFD rule setting a value the DaemonSet does not select on|nfd/nodefeaturerule.yaml|s/supported: \"false\"/supported: \"no\"/|a value the rule never sets"
	"NFD rule that does not parse|nfd/nodefeaturerule.yaml|s/^spec:\$/spec: [/|nfd/nodefeaturerule.yaml: does not parse"
	"opt-in pod preloading from a directory it does not mount|examples/exec-pod.yaml|s#value: /run/lism/liblism.so#value: /opt/lism/liblism.so#|LD_PRELOAD /opt/lism/liblism.so is not in a directory it mounts"
	"opt-in pod naming another device socket|examples/exec-pod.yaml|s#value: /run/lism/device.sock#value: /run/lism/lism.sock#|LISM_DEVICE /run/lism/lism.sock is not /run/lism/device.sock"
	"opt-in pod mounting another host directory|examples/exec-pod.yaml|s#path: /run/lism\$#path: /var/run/lism-device#|mounts host path /var/run/lism-device at /run/lism, not the node's /run/lism"
	"DaemonSet's device directory moved, the opt-in pod not|daemonset.yaml|s#^            path: /run/lism\$#            path: /var/lib/lism#|mounts host path /run/lism at /run/lism, not the node's /var/lib/lism"
	"DaemonSet serving its device outside a host directory|daemonset.yaml|s#^            - run\$#&\n            - --device-socket=/run/lism-exec/device.sock#|preloads liblism.so, but DaemonSet lism mounts no host directory at its device socket's /run/lism-exec"
	"opt-in pod mounting the device directory writable (policy)|examples/exec-pod.yaml|s/readOnly: true/readOnly: false/|lism policy: container redis mounts the node's /run/lism writable"
	"misspelled field in the opt-in pod (types)|examples/exec-pod.yaml|s/readOnly: true/readOnyl: true/|readOnyl"
	"opt-in pod mounting a volume it lacks (API)|examples/exec-pod.yaml|0,/- name: lism\$/ s/- name: lism\$/- name: lism-run/|spec.containers[0].volumeMounts[0].name: Not found: \"lism-run\""
	# API rules: object metadata, ConfigMap, selector
	"DaemonSet name not a DNS subdomain (API)|daemonset.yaml|0,/^  name: lism\$/ s/^  name: lism\$/  name: lism_agent/|metadata.name: Invalid value: \"lism_agent\": a lowercase RFC 1123 subdomain"
	"annotation key not a qualified name (API)|daemonset.yaml|s/prometheus.io\/path: /prometheus.io\/path\/x: /|spec.template.annotations: Invalid value: \"prometheus.io/path/x\""
	"ConfigMap key with spaces (API)|configmap.yaml|s/^  LISM_LOG_INTERVAL:/  LISM LOG INTERVAL:/|data[LISM LOG INTERVAL]: Invalid value: \"LISM LOG INTERVAL\": a valid config key must consist of"
	"selector label value invalid (API)|daemonset.yaml|/^  selector:\$/,/^  [a-z]/ s/app.kubernetes.io\/name: lism\$/app.kubernetes.io\/name: \"lism!\"/|spec.selector.matchLabels: Invalid value: \"lism!\""
	"selector In without values (API)|daemonset.yaml|s/^    matchLabels:\$/    matchExpressions:\n      - {key: app.kubernetes.io\/name, operator: In, values: []}\n&/|spec.selector.matchExpressions[0].values: Required value: must be specified when"
	"selector Exists with values (API)|daemonset.yaml|s/^    matchLabels:\$/    matchExpressions:\n      - {key: app.kubernetes.io\/name, operator: Exists, values: [lism]}\n&/|spec.selector.matchExpressions[0].values: Forbidden: may not be specified when"
	"selector operator unknown (API)|daemonset.yaml|s/^    matchLabels:\$/    matchExpressions:\n      - {key: app.kubernetes.io\/name, operator: Equals, values: [lism]}\n&/|spec.selector.matchExpressions[0].operator: Invalid value: \"Equals\": not a valid selector operator"
	"empty selector (API)|daemonset.yaml|/^  selector:\$/,/^  updateStrategy:\$/ { s/^  selector:\$/  selector: {}/; /^    matchLabels:\$/d; /^      app.kubernetes.io\/name: lism\$/d }|spec.selector: Invalid value: {}: empty selector is invalid for daemonset"
	# API rules: privileges and security context
	'init container unprivileged with Bidirectional propagation (API)|daemonset.yaml|/^ *- name: mount-bpffs$/,/mountPropagation/ s/privileged: true/privileged: false/|Forbidden: Bidirectional mount propagation is available only to privileged containers'
	'privileged init container with allowPrivilegeEscalation false (API)|daemonset.yaml|s/^\( *\)privileged: true$/&\n\1allowPrivilegeEscalation: false/|cannot set `allowPrivilegeEscalation` to false and `privileged` to true'
	'CAP_SYS_ADMIN added with allowPrivilegeEscalation false (API)|daemonset.yaml|s/^\( *\)add: \[\(.*\)\]$/\1add: [\2, "CAP_SYS_ADMIN"]/|cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN'
	"runAsUser out of range (API)|daemonset.yaml|s/runAsUser: 0/runAsUser: -1/|runAsUser: Invalid value: -1: must be between 0 and 4294967295, inclusive"
	"AppArmor Localhost without a profile (API)|daemonset.yaml|0,/type: Unconfined/ s/type: Unconfined/type: Localhost/|localhostProfile: Required value: must be set when AppArmor type is Localhost"
	"AppArmor Unconfined with a localhostProfile (API)|daemonset.yaml|0,/type: Unconfined/ s/^\( *\)type: Unconfined\$/&\n\1localhostProfile: lism/|can only be set when AppArmor type is Localhost"
	"AppArmor annotation contradicting the field (API)|daemonset.yaml|s/^\( *\)prometheus.io\/scrape: \"true\"\$/&\n\1container.apparmor.security.beta.kubernetes.io\/lism: runtime\/default/|apparmor type in annotation and field must match"
	"AppArmor annotation naming no container (API)|daemonset.yaml|s/^\( *\)prometheus.io\/scrape: \"true\"\$/&\n\1container.apparmor.security.beta.kubernetes.io\/lsm: unconfined/|container not found"
	"seccomp Localhost without a profile (API)|daemonset.yaml|s/type: RuntimeDefault/type: Localhost/|localhostProfile: Required value: must be set when seccomp type is Localhost"
	"seccomp RuntimeDefault with a localhostProfile (API)|daemonset.yaml|s/^\( *\)type: RuntimeDefault\$/&\n\1localhostProfile: lism.json/|can only be set when seccomp type is Localhost"
	"seccomp Localhost with an absolute path (API)|daemonset.yaml|s/^\( *\)type: RuntimeDefault\$/\1type: Localhost\n\1localhostProfile: \/var\/lib\/kubelet\/seccomp\/lism.json/|must be a relative path"
	"unsupported procMount (API)|daemonset.yaml|0,/runAsUser: 0/ s/^\( *\)runAsUser: 0\$/&\n\1procMount: Masked/|procMount: Unsupported value: \"Masked\""
	'Unmasked procMount with host users (API)|daemonset.yaml|0,/runAsUser: 0/ s/^\( *\)runAsUser: 0$/&\n\1procMount: Unmasked/|`hostUsers` must be false to use `Unmasked`'
	"AppArmor Localhost with an empty profile (API)|daemonset.yaml|0,/type: Unconfined/ s/^\( *\)type: Unconfined\$/\1type: Localhost\n\1localhostProfile: \"\"/|localhostProfile: Required value: must be set when AppArmor type is Localhost"
	"AppArmor profile without a type (API)|daemonset.yaml|0,/type: Unconfined/ s/type: Unconfined/type: \"\"/|appArmorProfile.type: Required value: type is required when appArmorProfile is set"
	"unsupported AppArmor type (API)|daemonset.yaml|0,/type: Unconfined/ s/type: Unconfined/type: Unconfinded/|appArmorProfile.type: Unsupported value: \"Unconfinded\""
	"AppArmor annotation with an invalid profile (API)|daemonset.yaml|s/^\( *\)prometheus.io\/scrape: \"true\"\$/&\n\1container.apparmor.security.beta.kubernetes.io\/lism: unconfined-please/|invalid AppArmor profile name: \"unconfined-please\""
	"seccomp Localhost profile with .. (API)|daemonset.yaml|s/^\( *\)type: RuntimeDefault\$/\1type: Localhost\n\1localhostProfile: ..\/lism.json/|localhostProfile: Invalid value: \"../lism.json\": must not contain"
	"seccomp profile without a type (API)|daemonset.yaml|s/type: RuntimeDefault/type: \"\"/|seccompProfile.type: Required value: type is required when seccompProfile is set"
	"unsupported seccomp type (API)|daemonset.yaml|s/type: RuntimeDefault/type: Default/|seccompProfile.type: Unsupported value: \"Default\""
	"seccomp pod annotation invalid (API)|daemonset.yaml|s/^\( *\)prometheus.io\/scrape: \"true\"\$/&\n\1seccomp.security.alpha.kubernetes.io\/pod: bogus/|must be a valid seccomp profile"
	"seccomp container annotation contradicting the field (API)|daemonset.yaml|s/^\( *\)prometheus.io\/scrape: \"true\"\$/&\n\1container.seccomp.security.alpha.kubernetes.io\/lism: unconfined/|seccomp type in annotation and field must match"
	# API rules: probes
	'readiness probe with two handlers (API)|daemonset.yaml|s/^\( *\)readinessProbe:$/&\n\1  exec:\n\1    command: ["true"]/|readinessProbe.httpGet: Forbidden: may not specify more than 1 handler type'
	"startup probe without a handler (API)|daemonset.yaml|/^ *startupProbe:\$/,/periodSeconds/ { /httpGet:/d; /path:/d; /port:/d; /host:/d }|startupProbe: Required value: must specify a handler type"
	"liveness successThreshold not 1 (API)|daemonset.yaml|s/^\( *\)livenessProbe:\$/&\n\1  successThreshold: 2/|livenessProbe.successThreshold: Invalid value: 2: must be 1"
	"startup successThreshold not 1 (API)|daemonset.yaml|s/^\( *\)startupProbe:\$/&\n\1  successThreshold: 3/|startupProbe.successThreshold: Invalid value: 3: must be 1"
	"negative probe period (API)|daemonset.yaml|/^ *readinessProbe:\$/,/periodSeconds/ s/periodSeconds: [0-9]*/periodSeconds: -10/|readinessProbe.periodSeconds: Invalid value: -10: must be greater than or equal to 0"
	"readiness probe with terminationGracePeriodSeconds (API)|daemonset.yaml|s/^\( *\)readinessProbe:\$/&\n\1  terminationGracePeriodSeconds: 10/|must not be set for readinessProbes"
	"probe on an init container (API)|daemonset.yaml|s/^\( *\)command: \[\"\/usr\/sbin\/lism\", \"mount-bpffs\", \"--soft\"\]\$/&\n\1livenessProbe:\n\1  tcpSocket:\n\1    port: 19435/|initContainers[0].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always"
	"probe port name the container lacks (kubelet)|daemonset.yaml|/^ *livenessProbe:\$/,/periodSeconds/ s/port: [0-9]*\$/port: metricz/|couldn't find port: metricz"
	"probe port 0 (API)|daemonset.yaml|/^ *readinessProbe:\$/,/periodSeconds/ s/port: 19435/port: 0/|readinessProbe.httpGet.port: Invalid value: 0: must be between 1 and 65535, inclusive"
	"probe port name invalid (API)|daemonset.yaml|/^ *readinessProbe:\$/,/periodSeconds/ s/port: 19435/port: metrics_port/|readinessProbe.httpGet.port: Invalid value: \"metrics_port\": must contain only alpha-numeric"
	"unsupported probe scheme (API)|daemonset.yaml|s/^\( *\)path: \/healthz\$/&\n\1scheme: http/|readinessProbe.httpGet.scheme: Unsupported value: \"http\": supported values: \"HTTP\", \"HTTPS\""
	"probe terminationGracePeriodSeconds 0 (API)|daemonset.yaml|s/^\( *\)livenessProbe:\$/&\n\1  terminationGracePeriodSeconds: 0/|livenessProbe.terminationGracePeriodSeconds: Invalid value: 0: must be greater than 0"
	"sidecar init container's probe (API)|daemonset.yaml|s/^\( *\)command: \[\"\/usr\/sbin\/lism\", \"mount-bpffs\", \"--soft\"\]\$/&\n\1restartPolicy: Always\n\1livenessProbe:\n\1  successThreshold: 2\n\1  tcpSocket:\n\1    port: 19435/|initContainers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1"
	# API rules: ports
	"containerPort out of range (API)|daemonset.yaml|s/containerPort: 19435/containerPort: 70000/|containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive"
	"port name over 15 characters (API)|daemonset.yaml|s/- name: metrics\$/- name: metrics-endpoint/|ports[0].name: Invalid value: \"metrics-endpoint\": must be no more than 15 characters"
	"port name in upper case (API)|daemonset.yaml|s/- name: metrics\$/- name: Metrics/|must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"
	'hostPort other than containerPort with hostNetwork (API)|daemonset.yaml|s/^\( *\)containerPort: 19435$/&\n\1hostPort: 19436/|hostPort: Invalid value: 19436: must match `containerPort` when `hostNetwork` is true'
	"unsupported port protocol (API)|daemonset.yaml|s/protocol: TCP/protocol: HTTP/|protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\""
	"two ports with one name (API)|daemonset.yaml|s/^\( *\)- name: metrics\$/\1- name: metrics\n\1  containerPort: 19436\n\1  protocol: TCP\n&/|ports[1].name: Duplicate value: \"metrics\""
	"containerPort 0 (API)|daemonset.yaml|s/containerPort: 19435/containerPort: 0/|ports[0].containerPort: Required value"
	"hostPort out of range (API)|daemonset.yaml|s/^\( *\)containerPort: 19435\$/&\n\1hostPort: 65536/|hostPort: Invalid value: 65536: must be between 1 and 65535, inclusive"
	"two ports on one hostPort (API)|daemonset.yaml|s/^\( *\)- name: metrics\$/\1- name: metrics-b\n\1  containerPort: 19435\n\1  hostPort: 19435\n\1  protocol: TCP\n&\n\1  hostPort: 19435/|ports[1].hostPort: Duplicate value: \"TCP//19435\""
	# API rules: names, volumes, env, resources
	"container name not a DNS-1123 label (API)|daemonset.yaml|s/^\( *\)- name: lism\$/\1- name: lism_agent/|a lowercase RFC 1123 label must consist of lower case alphanumeric characters"
	"init and app containers with one name (API)|daemonset.yaml|s/- name: mount-bpffs\$/- name: lism/|initContainers[0].name: Duplicate value: \"lism\""
	"volume name with a dot (API)|daemonset.yaml|s/- name: cgroup\$/- name: cgroup.root/|volumes[1].name: Invalid value: \"cgroup.root\": must not contain dots"
	"two volumes with one name (API)|daemonset.yaml|s/- name: cgroup\$/- name: bpffs/|volumes[1].name: Duplicate value: \"bpffs\""
	"volumeMount of no volume (API)|daemonset.yaml|/^ *volumeMounts:\$/,/^ *volumes:\$/ s/- name: cgroup\$/- name: cgroups/|name: Not found: \"cgroups\""
	"two mounts on one path (API)|daemonset.yaml|s#mountPath: /host/cgroup#mountPath: /sys/fs/bpf#|mountPath: Invalid value: \"/sys/fs/bpf\": must be unique"
	"unsupported mountPropagation (API)|daemonset.yaml|s/mountPropagation: HostToContainer/mountPropagation: HostToContainr/|mountPropagation: Unsupported value: \"HostToContainr\""
	"unsupported hostPath type (API)|daemonset.yaml|s/type: DirectoryOrCreate/type: DirOrCreate/|hostPath.type: Unsupported value: \"DirOrCreate\""
	"hostPath with .. (API)|daemonset.yaml|s#path: /sys/fs/cgroup#path: /sys/fs/bpf/../cgroup#|hostPath.path: Invalid value: \"/sys/fs/bpf/../cgroup\": must not contain"
	"env var name starting with a digit (API)|daemonset.yaml|s/^\( *\)envFrom:\$/\1env:\n\1  - name: 1LISM_DEBUG\n\1    value: \"1\"\n&/|a valid environment variable name must consist of alphabetic characters"
	"memory request above its limit (API)|daemonset.yaml|s/memory: 32Mi/memory: 256Mi/|resources.requests: Invalid value: \"256Mi\": must be less than or equal to memory limit of 128Mi"
	"unknown resource name (API)|daemonset.yaml|s/cpu: 10m/cpus: 10m/|must be a standard resource for containers"
	"template label value with a space (API)|daemonset.yaml|s/app.kubernetes.io\/component: node-agent/app.kubernetes.io\/component: node agent/|a valid label must be an empty string or consist of alphanumeric characters"
	"two app containers with one name (API)|cleanup/daemonset.yaml|s/^\( *\)containers:\$/&\n\1  - name: unload\n\1    image: localhost\/lism:0.9.0/|containers[1].name: Duplicate value: \"unload\""
	"restartPolicy on an app container (API)|daemonset.yaml|s/^\( *\)command: \[\"\/usr\/sbin\/lism\"\]\$/&\n\1restartPolicy: Always/|containers[0].restartPolicy: Forbidden: may not be set for non-init containers"
	"init container restartPolicy other than Always (API)|daemonset.yaml|s/^\( *\)command: \[\"\/usr\/sbin\/lism\", \"mount-bpffs\", \"--soft\"\]\$/&\n\1restartPolicy: OnFailure/|initContainers[0].restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\""
	"container without an image (API)|cleanup/daemonset.yaml|/^ *image: /d|containers[0].image: Required value"
	"unsupported imagePullPolicy (API)|daemonset.yaml|0,/imagePullPolicy: IfNotPresent/ s/imagePullPolicy: IfNotPresent/imagePullPolicy: IfMissing/|imagePullPolicy: Unsupported value: \"IfMissing\""
	"volume with two sources (API)|daemonset.yaml|/^ *volumes:\$/,\$ s/^\( *\)- name: cgroup\$/&\n\1  emptyDir: {}/|volumes[1].hostPath: Forbidden: may not specify more than 1 volume type"
	"hostPath with an empty path (API)|daemonset.yaml|s#path: /sys/fs/cgroup#path: \"\"#|volumes[1].hostPath.path: Required value"
	"subPath with .. (API)|daemonset.yaml|s#^\( *\)mountPath: /host/cgroup\$#&\n\1subPath: ../etc#|volumeMounts.subPath: Invalid value: \"../etc\": must not contain"
	"recursiveReadOnly on a writable mount (API)|daemonset.yaml|s/^\( *\)mountPropagation: HostToContainer\$/&\n\1recursiveReadOnly: IfPossible/|volumeMounts.recursiveReadOnly: Forbidden: may only be specified when readOnly is true"
	"recursiveReadOnly with mount propagation (API)|daemonset.yaml|s/^\( *\)readOnly: true\$/&\n\1recursiveReadOnly: Enabled\n\1mountPropagation: HostToContainer/|volumeMounts.recursiveReadOnly: Forbidden: may only be specified when mountPropagation is None or not specified"
	"unsupported recursiveReadOnly (API)|daemonset.yaml|s/^\( *\)readOnly: true\$/&\n\1recursiveReadOnly: Always/|volumeMounts.recursiveReadOnly: Unsupported value: \"Always\""
	"env var with value and valueFrom (API)|daemonset.yaml|s/^\( *\)envFrom:\$/\1env:\n\1  - name: NODE\n\1    value: \"x\"\n\1    valueFrom:\n\1      fieldRef:\n\1        fieldPath: spec.nodeName\n&/|env[0].valueFrom: Invalid value: \"\": may not be specified when"
	"env var valueFrom without a source (API)|daemonset.yaml|s/^\( *\)envFrom:\$/\1env:\n\1  - name: NODE\n\1    valueFrom: {}\n&/|env[0].valueFrom: Invalid value: \"\": must specify one of:"
	"env var valueFrom with two sources (API)|daemonset.yaml|s/^\( *\)envFrom:\$/\1env:\n\1  - name: NODE\n\1    valueFrom:\n\1      fieldRef:\n\1        fieldPath: spec.nodeName\n\1      configMapKeyRef:\n\1        name: lism-config\n\1        key: LISM_SENDERS\n&/|env[0].valueFrom: Invalid value: \"\": may not have more than one field specified at a time"
	"envFrom prefix invalid (API)|daemonset.yaml|s/^\( *\)- configMapRef:\$/\1- prefix: \"1X_\"\n\1  configMapRef:/|envFrom[0].prefix: Invalid value: \"1X_\": a valid environment variable name"
	"envFrom without a source (API)|daemonset.yaml|s/- configMapRef:/- configMapReff:/|envFrom: Invalid value: \"\": must specify one of:"
	"envFrom with two sources (API)|daemonset.yaml|s/^\( *\)- configMapRef:\$/\1- secretRef:\n\1    name: lism-secret\n\1  configMapRef:/|envFrom: Invalid value: \"\": may not have more than one field specified at a time"
	"negative cpu request (API)|daemonset.yaml|s/cpu: 10m/cpu: -10m/|requests[cpu]: Invalid value: \"-10m\": must be greater than or equal to 0"
	"hugepages request other than its limit (API)|daemonset.yaml|s/^\( *\)cpu: 10m\$/&\n\1hugepages-2Mi: 2Mi/; s/^\( *\)memory: 128Mi\$/&\n\1hugepages-2Mi: 4Mi/|resources.requests: Invalid value: \"2Mi\": must be equal to hugepages-2Mi limit of 4Mi"
	"extended resource without a limit (API)|daemonset.yaml|s/^\( *\)cpu: 10m\$/&\n\1example.com\/gpu: 1/|resources.limits: Required value: Limit must be set for non overcommitable resources"
	"extended resource not an integer (API)|daemonset.yaml|s/^\( *\)memory: 128Mi\$/&\n\1example.com\/gpu: 500m/|limits[example.com/gpu]: Invalid value: \"500m\": must be an integer"
	"memory not a quantity (API)|daemonset.yaml|s/memory: 128Mi/memory: 128MB/|quantities must match the regular expression"
	# API rules: pod and DaemonSet
	"restartPolicy other than Always (API)|daemonset.yaml|s/^\( *\)dnsPolicy: ClusterFirstWithHostNet\$/&\n\1restartPolicy: OnFailure/|restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\""
	"toleration with operator Exists and a value (API)|daemonset.yaml|s/^\( *\)- operator: Exists\$/&\n\1  value: \"x\"/|value must be empty when"
	"nodeAffinity NotIn without values (API)|daemonset.yaml|s/values: \[\"false\"\]/values: []/|matchExpressions[0].values: Required value: must be specified when"
	"maxUnavailable and maxSurge both 0 (API)|daemonset.yaml|s/maxUnavailable: 1/maxUnavailable: 0/|rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0"
	"maxUnavailable and maxSurge both set (API)|daemonset.yaml|s/maxSurge: 0/maxSurge: 1/|rollingUpdate.maxSurge: Invalid value: 1: may not be set when maxUnavailable is non-zero"
	"maxUnavailable over 100% (API)|daemonset.yaml|s/maxUnavailable: 1/maxUnavailable: \"150%\"/|must not be greater than 100%"
	"unknown updateStrategy type (API)|daemonset.yaml|s/type: RollingUpdate/type: Rolling/|spec.updateStrategy: Unsupported value: "
	"unsupported dnsPolicy (API)|daemonset.yaml|s/dnsPolicy: ClusterFirstWithHostNet/dnsPolicy: HostNetwork/|dnsPolicy: Unsupported value: \"HostNetwork\""
	'dnsPolicy None without dnsConfig (API)|daemonset.yaml|s/dnsPolicy: ClusterFirstWithHostNet/dnsPolicy: None/|must provide `dnsConfig` when `dnsPolicy` is None'
	"nodeSelector label value invalid (API)|daemonset.yaml|s/kubernetes.io\/os: linux/kubernetes.io\/os: \"linux os\"/|spec.template.spec.nodeSelector: Invalid value: \"linux os\""
	"shareProcessNamespace with hostPID (API)|daemonset.yaml|s/^\( *\)hostPID: true\$/&\n\1shareProcessNamespace: true/|ShareProcessNamespace and HostPID cannot both be enabled"
	'hostUsers false with host namespaces (API)|daemonset.yaml|s/^\( *\)hostPID: true$/&\n\1hostUsers: false/|spec.template.spec.hostNetwork: Forbidden: when `pod.Spec.HostUsers` is false'
	"serviceAccountName not a DNS subdomain (API)|daemonset.yaml|s/serviceAccountName: lism/serviceAccountName: Lism/|serviceAccountName: Invalid value: \"Lism\""
	"ephemeral container in a template (API)|daemonset.yaml|s/^\( *\)initContainers:\$/\1ephemeralContainers:\n\1  - name: debug\n\1    image: busybox\n&/|ephemeral containers not allowed in pod template"
	"nodeAffinity Exists with values (API)|daemonset.yaml|s/operator: NotIn/operator: Exists/|matchExpressions[0].values: Forbidden: may not be specified when"
	"nodeAffinity Gt with two values (API)|daemonset.yaml|s/operator: NotIn/operator: Gt/; s/values: \[\"false\"\]/values: [\"1\", \"2\"]/|must be specified single value when"
	"nodeAffinity operator unknown (API)|daemonset.yaml|s/operator: NotIn/operator: NotEquals/|matchExpressions[0].operator: Invalid value: \"NotEquals\": not a valid selector operator"
	"nodeAffinity key invalid (API)|daemonset.yaml|s/- key: lism.feature.node.kubernetes.io\/supported/- key: lism.feature.node.kubernetes.io\/supported\/x/|matchExpressions[0].key: Invalid value: \"lism.feature.node.kubernetes.io/supported/x\""
	"nodeAffinity value invalid (API)|daemonset.yaml|s/values: \[\"false\"\]/values: [\"not supported\"]/|matchExpressions[0].values[0]: Invalid value: \"not supported\""
	"toleration with an empty key and Equal (API)|daemonset.yaml|s/- operator: Exists/- operator: Equal/|operator must be Exists when"
	"tolerationSeconds without NoExecute (API)|daemonset.yaml|s/^\( *\)- operator: Exists\$/&\n\1  tolerationSeconds: 60/|effect must be 'NoExecute' when"
	"unsupported toleration operator (API)|daemonset.yaml|s/^\( *\)- operator: Exists\$/\1- key: lism\n\1  operator: Exist/|tolerations[0].operator: Unsupported value: \"Exist\""
	"unsupported toleration effect (API)|daemonset.yaml|s/^\( *\)- operator: Exists\$/&\n\1  effect: NoScheduling/|tolerations[0].effect: Unsupported value: \"NoScheduling\""
	"toleration key invalid (API)|daemonset.yaml|s/^\( *\)- operator: Exists\$/&\n\1  key: \"bad key\"/|tolerations[0].key: Invalid value: \"bad key\""
	"toleration value invalid (API)|daemonset.yaml|s/^\( *\)- operator: Exists\$/\1- key: lism\n\1  operator: Equal\n\1  value: \"bad value\"/|tolerations[0].operator: Invalid value: \"bad value\""
	"activeDeadlineSeconds in a DaemonSet (API)|daemonset.yaml|s/^\( *\)terminationGracePeriodSeconds: \([0-9]*\)\$/&\n\1activeDeadlineSeconds: 600/|activeDeadlineSeconds in DaemonSet is not Supported"
	"negative minReadySeconds (API)|daemonset.yaml|s/^  updateStrategy:\$/  minReadySeconds: -1\n&/|spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0"
	"negative maxUnavailable (API)|daemonset.yaml|s/maxUnavailable: 1/maxUnavailable: -1/|rollingUpdate.maxUnavailable: Invalid value: -1: must be greater than or equal to 0"
	"maxUnavailable neither a number nor a percentage (API)|daemonset.yaml|s/maxUnavailable: 1/maxUnavailable: one/|a valid percent string must be a numeric string followed by an ending"
	# lism policy
	"lism container privileged (policy)|daemonset.yaml|/^ *- name: lism\$/,/volumeMounts:/ { s/privileged: false/privileged: true/; s/allowPrivilegeEscalation: false/allowPrivilegeEscalation: true/ }|container lism is privileged: only the init container mount-bpffs may be"
	"cleanup container privileged (policy)|cleanup/daemonset.yaml|s/privileged: false/privileged: true/; s/allowPrivilegeEscalation: false/allowPrivilegeEscalation: true/|container unload is privileged"
	"capabilities not dropped (policy)|daemonset.yaml|0,/drop: \[\"ALL\"\]/ s/drop: \[\"ALL\"\]/drop: [\"NET_RAW\"]/|container lism does not drop ALL capabilities"
	"allowPrivilegeEscalation not false (policy)|daemonset.yaml|s/allowPrivilegeEscalation: false/allowPrivilegeEscalation: true/|container lism does not set allowPrivilegeEscalation: false"
	"no readiness probe (policy)|daemonset.yaml|/^ *readinessProbe:\$/,/periodSeconds/d|container lism has no readinessProbe"
	"no startup probe (policy)|daemonset.yaml|/^ *startupProbe:\$/,/failureThreshold/d|container lism has no startupProbe"
	"no liveness probe (policy)|daemonset.yaml|/^ *livenessProbe:\$/,/failureThreshold/d|container lism has no livenessProbe"
	"no --metrics-addr (policy)|daemonset.yaml|/--metrics-addr=/d|container lism has no --metrics-addr"
	"readiness probe on another port (policy)|daemonset.yaml|/^ *readinessProbe:\$/,/periodSeconds/ s/port: 19435/port: 19436/|readinessProbe port 19436 is not the --metrics-addr port 19435"
	"metrics containerPort not the metrics-addr port (policy)|daemonset.yaml|s/containerPort: 19435/containerPort: 19436/|port metrics containerPort 19436 is not the --metrics-addr port 19435"
	"metrics-addr moved alone (policy)|daemonset.yaml|s/--metrics-addr=0.0.0.0:19435/--metrics-addr=0.0.0.0:19436/|livenessProbe port 19435 is not the --metrics-addr port 19436"
	"prometheus.io/port annotation not the metrics port (policy)|daemonset.yaml|s/prometheus.io\/port: \"19435\"/prometheus.io\/port: \"9435\"/|prometheus.io/port 9435 is not the --metrics-addr port 19435"
	"nodeSelector not linux (policy)|daemonset.yaml|s/kubernetes.io\/os: linux/kubernetes.io\/os: windows/|nodeSelector must have kubernetes.io/os: linux"
	"cleanup without nodeSelector (policy)|cleanup/daemonset.yaml|/^ *nodeSelector:\$/,/kubernetes.io\/os/d|DaemonSet/lism-cleanup: lism policy: nodeSelector must have kubernetes.io/os: linux"
	"SELinux type not spc_t (policy)|daemonset.yaml|0,/type: spc_t/ s/type: spc_t/type: container_t/|container mount-bpffs does not set seLinuxOptions.type spc_t"
	"AppArmor RuntimeDefault (policy)|daemonset.yaml|s/type: Unconfined/type: RuntimeDefault/|does not set appArmorProfile Unconfined"
	"image without a tag (policy)|cleanup/daemonset.yaml|s#image: localhost/lism:[^ ]*#image: localhost/lism#|image localhost/lism is not localhost/lism:<tag>"
	"image from another registry (policy)|cleanup/daemonset.yaml|s#image: localhost/lism:#image: docker.io/lism/lism:#|is not localhost/lism:"
	"release bumped, kustomizations not (policy)|../../VERSION|s/.*/9.9.9/|newTag 0.9.0 is not VERSION 9.9.9"
	"cleanup newTag not the release (policy)|cleanup/kustomization.yaml|s/newTag: [^ ]*/newTag: 0.0.1/|cleanup/kustomization.yaml: images[0] newTag 0.0.1 is not VERSION"
)

# Each mutation on its own copy of deploy/kubernetes and VERSION, all checked
# by a few node processes (check.mjs --each), the results printed in order.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
names=() files=() expects=() dirs=()
for i in "${!mutations[@]}"; do
	IFS='|' read -r name file expr expect <<<"${mutations[$i]}"
	names[i]=$name files[i]=$file expects[i]=$expect
	mkdir -p "$scratch/$i/deploy"
	cp -r "$root/deploy/kubernetes" "$scratch/$i/deploy/"
	cp "$root/VERSION" "$scratch/$i/" 2>/dev/null
	sed -i "$expr" "$scratch/$i/deploy/kubernetes/$file"
	cmp -s "$root/deploy/kubernetes/$file" "$scratch/$i/deploy/kubernetes/$file" || dirs+=("$scratch/$i/deploy/kubernetes")
done
procs=$(nproc 2>/dev/null || echo 2)
for ((p = 0; p < procs; p++)); do
	batch=()
	for ((j = p; j < ${#dirs[@]}; j += procs)); do batch+=("${dirs[j]}"); done
	[ ${#batch[@]} -eq 0 ] || node "$work/check.mjs" --each "${batch[@]}" &
done
wait
for i in "${!mutations[@]}"; do
	out="$scratch/$i/deploy/kubernetes.out"
	name=${names[i]} expect=${expects[i]}
	if cmp -s "$root/deploy/kubernetes/${files[i]}" "$scratch/$i/deploy/kubernetes/${files[i]}"; then
		echo "check-manifests: mutation '$name' changed nothing (fix the test)"
	elif [ ! -f "$out" ]; then
		echo "check-manifests: mutation '$name': check.mjs did not run"
	elif [ "$(tail -n 1 "$out")" = "exit 0" ]; then
		echo "check-manifests: mutation '$name' was NOT caught"
	elif [ -n "$expect" ] && ! grep -qF -- "$expect" "$out"; then
		echo "check-manifests: mutation '$name' was caught, but not by its rule (no \"$expect\"):"
		sed '$d; s/^/    /' "$out"
	else
		echo "check-manifests: mutation '$name' caught"
		passed=$((passed + 1))
		continue
	fi
	failed=$((failed + 1))
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
