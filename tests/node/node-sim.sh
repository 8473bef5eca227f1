#!/usr/bin/env bash
# Node simulation for the Kubernetes deployment (make test, root).
#
# lism runs in its image (make image) exactly as deploy/kubernetes runs it,
# every container of the pod spec in order: the privileged mount-bpffs init
# container (its Bidirectional mount reaches the "node"), then the lism
# container with its command and args (ConfigMap values filled), its
# capabilities (drop ALL, add BPF NET_ADMIN PERFMON), no new privileges,
# read-only root, memory limit, host paths (HostToContainer) and the seccomp
# profile deploy/seccomp/lism.json (podman's default profile allows bpf(2)
# only with CAP_SYS_ADMIN).  Test-private: the node's bpffs (a bpffs the
# init container mounts on a directory of this run), a cgroup below the
# cgroup2 root, a metrics port, and the "node" network namespace the
# containers share (hostNetwork).
#
# "Pods" are network namespaces routed through the node namespace, which
# does kube-proxy's ClusterIP DNAT; a second node is a namespace behind an
# uplink.  curl to nginx and redis clients to redis through Service IPs
# take the shortcut (counters read inside the container), byte-exact
# (sha256); a SYN to the other node's pod carries no lism option (while one
# to a local pod does); a server pod outside lism's cgroup falls back
# (peer-no-lism).  lism exec in pods: the container's device serves at the
# node's /run/lism and publishes its liblism.so there; "pods" that mount it
# and set the environment as deploy/kubernetes/examples/exec-pod.yaml does
# move a checksummed stream through a Service IP in a ring (lism's ring pair
# count and the device's attaches say so), a pair with one end opted in stays
# on TCP, byte-exact, and a pod that mapped the library keeps its copy whole
# across a rollout.  A lism that cannot load keeps its container running, not
# ready, saying why.  A restart (rollout) keeps the BPF state and the new
# container adopts it, applying an edited ConfigMap where it can and saying
# what it cannot; the cleanup DaemonSet's container then removes lism and
# leaves no pins, cgroup attachment or BPF programs behind.
# Prints "N passed, N failed".
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
passed=0 failed=0

ok() { echo "node-sim: ok: $*"; passed=$((passed + 1)); }
bad() { echo "node-sim: FAILED: $*"; failed=$((failed + 1)); }
check() { # description, command...
	local what=$1
	shift
	if "$@"; then ok "$what"; else bad "$what"; fi
}
finish() {
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit $?
}

if [ "$(id -u)" -ne 0 ]; then
	if [ "${CI:-}" = true ]; then
		bad "needs root (netns, cgroup2, bpffs, podman)"
	else
		echo "node-sim: skipped: needs root (netns, cgroup2, bpffs, podman); run 'sudo make test'"
	fi
	finish
fi
for tool in podman node nginx redis-server redis-cli redis-benchmark curl iptables bpftool taskset python3 unshare; do
	command -v "$tool" >/dev/null || { bad "$tool is missing (make deps installs it)"; finish; }
done
[ -d "$build/manifests/node_modules/js-yaml" ] || { bad "js-yaml missing: run make check-manifests first"; finish; }

id=$$
cgroot=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
cg_name=lism-node-$id
cg=$cgroot/$cg_name
ctr=lism-node-$id
port=$((21000 + id % 1000))
ns_node=ln$id-node ns_a=ln$id-a ns_b=ln$id-b ns_c=ln$id-c ns_r=ln$id-r
tmp=$(mktemp -d /tmp/lism-node.XXXXXX)
mkdir -p "$tmp/run-lism" # the node's /run/lism (lism exec's device socket; the DaemonSet's hostPath)
# the node's /sys/fs/bpf: a directory of this run, on a shared mount so the
# init container's Bidirectional mount comes back to it
bpffs=$tmp/bpffs
pin_in=/sys/fs/bpf/lism # the DaemonSet's pin path, in the containers
pin=$bpffs/lism         # the same, seen from the node
pids=()

cleanup() {
	# one at a time: podman rm stops at a name that does not exist
	for c in "$ctr" "$ctr-init" "$ctr-2" "$ctr-rejected" "$ctr-cleanup"; do
		podman --runtime runc rm -f -t 0 "$c" >/dev/null 2>&1
	done
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	sleep 0.2
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	pkill -f "$tmp/" 2>/dev/null
	# whatever still runs in the test's cgroup (servers, their workers) goes too
	for _ in $(seq 50); do
		[ -n "$(cat "$cg/cgroup.procs" 2>/dev/null)" ] || break
		xargs -r kill -9 <"$cg/cgroup.procs" 2>/dev/null
		sleep 0.1
	done
	for p in "$pin" "$bpffs/lism-rejected"; do
		[ -e "$p/device" ] && "$build/lism" unload --force --timeout 0 --pin-path "$p" >/dev/null 2>&1
	done
	# the init container's bpffs, then the shared bind mount under it
	for _ in 1 2 3; do mountpoint -q "$bpffs" && umount -l "$bpffs"; done
	for ns in "$ns_a" "$ns_b" "$ns_c" "$ns_r" "$ns_node"; do ip netns del "$ns" 2>/dev/null; done
	[ -d "$cg" ] && rmdir "$cg" 2>/dev/null
	# podman's cgroups for the containers (--cgroup-parent), in every hierarchy
	for d in "$cgroot/$ctr-podman" /sys/fs/cgroup/*/"$ctr-podman"; do
		[ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

# Start a process inside the test's cgroup (lism's "node cgroup") in netns $1.
in_cgroup() ( # ns, command...  (a subshell that becomes the command: $! is its pid)
	ns=$1
	shift
	exec sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cg" ip netns exec "$ns" "$@"
)

# --- the node: pods routed through the node namespace, Services as DNAT
mkdir "$cg" || { bad "cannot create cgroup $cg"; finish; }
ip netns add "$ns_node" && ip -n "$ns_node" link set lo up &&
	ip netns exec "$ns_node" sysctl -qw net.ipv4.ip_forward=1 || { bad "node namespace"; finish; }
i=1
for ns in "$ns_a" "$ns_b" "$ns_c"; do
	ip netns add "$ns" && ip -n "$ns" link set lo up &&
		ip link add eth0 netns "$ns" type veth peer name "veth$i" netns "$ns_node" &&
		ip -n "$ns_node" addr add "10.244.$i.1/24" dev "veth$i" && ip -n "$ns_node" link set "veth$i" up &&
		ip -n "$ns" addr add "10.244.$i.2/24" dev eth0 && ip -n "$ns" link set eth0 up &&
		ip -n "$ns" route add default via "10.244.$i.1" || { bad "pod namespace $ns"; finish; }
	i=$((i + 1))
done
dnat() { # vip:port -> pod:port
	ip netns exec "$ns_node" iptables -t nat -A PREROUTING -p tcp -d "${1%:*}" --dport "${1#*:}" \
		-j DNAT --to-destination "$2"
}
dnat 10.96.0.10:80 10.244.2.2:8080 && dnat 10.96.0.11:6379 10.244.2.2:6379 &&
	dnat 10.96.0.12:80 10.244.3.2:8080 && dnat 10.96.0.13:9000 10.244.2.2:9000 &&
	dnat 10.96.0.13:9001 10.244.2.2:9001 && dnat 10.96.0.13:9002 10.244.2.2:9002 ||
	{ bad "Service DNAT rules"; finish; }
# another node, behind the uplink: its pods (10.244.9.0/24) routed via its address
ip netns add "$ns_r" && ip -n "$ns_r" link set lo up &&
	ip link add up0 netns "$ns_node" type veth peer name eth0 netns "$ns_r" &&
	ip -n "$ns_node" addr add 192.168.77.1/24 dev up0 && ip -n "$ns_node" link set up0 up &&
	ip -n "$ns_r" addr add 192.168.77.2/24 dev eth0 && ip -n "$ns_r" link set eth0 up &&
	ip -n "$ns_r" addr add 10.244.9.2/32 dev lo &&
	ip -n "$ns_r" route add 10.244.0.0/16 via 192.168.77.1 &&
	ip -n "$ns_node" route add 10.244.9.0/24 via 192.168.77.2 || { bad "the other node's namespace"; finish; }

# --- lism, as the DaemonSet runs it
# The node's bpffs directory: a shared mount point, like the node's /sys/fs/bpf.
mkdir -p "$bpffs" && mount --bind "$bpffs" "$bpffs" && mount --make-shared "$bpffs" ||
	{ bad "a shared mount for the node's bpffs"; finish; }
# The ConfigMap as this node runs it: the Service CIDR (the explicit choice
# that lets Service traffic take the shortcut) and a summary every second.
config=(LISM_LOCAL_CIDRS=10.96.0.0/12 LISM_LOG_INTERVAL=1)
spec_of() { # directory, DaemonSet name, ConfigMap overrides...
	node "$here/daemonset.mjs" "$1" "$build/manifests/node_modules" "${@:2}"
}
spec=$(spec_of "$root/deploy/kubernetes" lism "${config[@]}") || { bad "reading the DaemonSet"; finish; }
# podman arguments for container $2 ("init" = the first init container, or a name) of spec $1:
# one per line; the node's host paths mapped to this run's
podman_args() {
	node -e '
		const [spec, which, bpffs, cgroot, seccomp, devdir] = process.argv.slice(1);
		const s = JSON.parse(spec);
		const c = which === "init" ? s.containers.find((x) => x.init) : s.containers.find((x) => x.name === which);
		if (!c) process.exit(1);
		const out = [];
		out.push(s.hostPID ? "--pid=host" : "--pid=private");
		if (c.privileged) out.push("--privileged");
		else {
			out.push("--security-opt", `seccomp=${seccomp}`);
			if (c.capsDrop.includes("ALL")) out.push("--cap-drop", "ALL");
			if (c.capsAdd.length) out.push("--cap-add", c.capsAdd.join(","));
		}
		if (c.noNewPrivileges) out.push("--security-opt", "no-new-privileges");
		if (c.readOnlyRootFilesystem) out.push("--read-only");
		if (c.memoryLimit) out.push(`--memory=${c.memoryLimit}`);
		const prop = { Bidirectional: ",rshared", HostToContainer: ",rslave", None: "" };
		for (const m of c.mounts) {
			/* the node directories are this test run own ones, never the host ones */
			const host = m.host === "/sys/fs/bpf" ? bpffs : m.host === "/sys/fs/cgroup" ? cgroot :
				     m.host === "/run/lism" ? devdir : m.host;
			out.push("-v", `${host}:${m.path}:${m.readOnly ? "ro" : "rw"}${prop[m.propagation]}`);
		}
		out.push(c.image);
		console.log(out.join("\n"));
	' "$1" "$2" "$bpffs" "$cgroot" "$root/deploy/seccomp/lism.json" "$tmp/run-lism"
}
field() { # spec, container name, field: one value per line
	node -e 'const s=JSON.parse(process.argv[1]); const c=s.containers.find((x)=>x.name===process.argv[2]);
		const v=c[process.argv[3]]; console.log(Array.isArray(v) ? v.join("\n") : String(v))' "$1" "$2" "$3"
}
# --cgroup-parent: podman's own cgroups under a name of this run (cleanup removes them;
# the cgroupfs manager: systemd's would want a .slice); the "node" network namespace
run_base=(--cgroup-manager=cgroupfs --runtime runc run --network "ns:/run/netns/$ns_node"
	--cgroup-parent "/$ctr-podman" --ulimit nofile=20000:20000 --ulimit nproc=32768:32768)
lism_progs() { bpftool prog show 2>/dev/null | grep -cE 'name (lism_sockops|lism_msg|lism_destroy|lism_iter_socks) '; }
progs_before=$(lism_progs)
in_node() { ip netns exec "$ns_node" "$@"; }
http_get() { # port, path: the body; exit status 0 on 2xx
	local code
	rm -f "$tmp/http.out"
	code=$(in_node curl -sS -o "$tmp/http.out" -w '%{http_code}' "http://127.0.0.1:$1$2" 2>/dev/null)
	cat "$tmp/http.out" 2>/dev/null
	[ "${code:-0}" -ge 200 ] && [ "${code:-0}" -lt 300 ]
}

# the init container: mounts bpffs on the node's directory (it was none)
mapfile -t init_cmd < <(field "$spec" mount-bpffs command)
mapfile -t init_opts < <(podman_args "$spec" init) || { bad "no init container in the DaemonSet"; finish; }
init_image=${IMAGE:-${init_opts[-1]}}
unset 'init_opts[-1]'
echo "node-sim: podman run ${init_opts[*]} $init_image ${init_cmd[*]}"
podman "${run_base[@]}" --rm --name "$ctr-init" "${init_opts[@]}" --entrypoint "${init_cmd[0]}" \
	"$init_image" "${init_cmd[@]:1}" >"$tmp/init.log" 2>&1
rc=$?
check "the mount-bpffs init container exits 0 (exit $rc: $(tail -1 "$tmp/init.log"))" [ "$rc" = 0 ]
check "and its bpffs mount reached the node ($(stat -f -c %T "$bpffs"))" [ "$(stat -f -c %T "$bpffs")" = bpf_fs ]
podman "${run_base[@]}" --rm --name "$ctr-init" "${init_opts[@]}" --entrypoint "${init_cmd[0]}" \
	"$init_image" "${init_cmd[@]:1}" >"$tmp/init.log" 2>&1
rc=$? n=$(awk -v d="$bpffs" '$5 == d' /proc/self/mountinfo | grep -c ' - bpf ')
check "run again on a node that has bpffs, it exits 0 (exit $rc) and mounts nothing more ($n bpffs there)" \
	[ "$rc" = 0 -a "$n" = 1 ]

# the lism container
mapfile -t cmd < <(field "$spec" lism command)
mapfile -t args < <(field "$spec" lism args | sed -e "s|^--cgroup=/host/cgroup\$|--cgroup=/host/cgroup/$cg_name|" \
	-e "s|^--metrics-addr=.*|--metrics-addr=127.0.0.1:$port|")
mapfile -t opts < <(podman_args "$spec" lism)
image=${IMAGE:-${opts[-1]}}
unset 'opts[-1]'
# never the host's cgroup root or pins: the cgroup rewritten, bpffs this run's
printf '%s\n' "${args[@]}" | grep -qx -- "--cgroup=/host/cgroup/$cg_name" &&
	printf '%s\n' "${args[@]}" | grep -qx -- "--pin-path=$pin_in" &&
	printf '%s\n' "${opts[@]}" | grep -q "^$bpffs:/sys/fs/bpf:" ||
	{ bad "the DaemonSet's --cgroup, --pin-path or bpffs volume changed form: not mapped to the test's own"; finish; }
start_lism() { # container name, then podman options (before the image), then --, then args
	local name=$1 extra=()
	shift
	while [ "$1" != -- ]; do extra+=("$1"); shift; done
	shift
	podman "${run_base[@]}" -d --name "$name" "${opts[@]}" "${extra[@]}" --entrypoint "${cmd[0]}" \
		"$image" "$@" >/dev/null
}
wait_http() { # port, path: until it answers 2xx (20 s)
	for _ in $(seq 200); do http_get "$1" "$2" >/dev/null && return 0; sleep 0.1; done
	return 1
}
echo "node-sim: podman run ${opts[*]} $image ${cmd[*]:1} ${args[*]}"
start_lism "$ctr" -- "${args[@]}" || { bad "starting the lism container"; finish; }
check "the container passes its startup probe ($(field "$spec" lism startup))" wait_http "$port" "$(field "$spec" lism startup)"
check "and its liveness probe ($(field "$spec" lism liveness))" wait_http "$port" "$(field "$spec" lism liveness)"
check "it loads lism and /healthz (its readiness probe) answers 200" wait_http "$port" "$(field "$spec" lism readiness)"
http_get "$port" /healthz >/dev/null || { podman logs "$ctr" | tail -20; finish; }
lism_in() { podman exec "$ctr" /usr/sbin/lism "$@" --pin-path "$pin_in"; }
stat_of() { # a counter of `lism stats -j`, or reason:NAME for a fallback reason's count
	lism_in stats -j | node -e '
		let s = "";
		process.stdin.on("data", (d) => (s += d)).on("end", () => {
			const j = JSON.parse(s), k = process.argv[1];
			if (k.startsWith("reason:"))
				console.log(j.fallback_reasons.find((r) => r.name === k.slice(7))?.count ?? 0);
			else
				console.log(j[k] ?? 0);
		});' "$1"
}
# --- servers: nginx and redis in pod b (under lism), nginx in pod c (not)
head -c $((64 << 20)) /dev/urandom >"$tmp/blob"
want=$(sha256sum <"$tmp/blob" | cut -d' ' -f1)
for p in b c; do
	mkdir -p "$tmp/nginx-$p"
	cat >"$tmp/nginx-$p/nginx.conf" <<-EOF
		daemon off;
		worker_processes 1;
		pid $tmp/nginx-$p/nginx.pid;
		error_log $tmp/nginx-$p/error.log;
		events { worker_connections 256; }
		http {
		  access_log off;
		  sendfile on;
		  client_body_temp_path $tmp/nginx-$p;
		  proxy_temp_path $tmp/nginx-$p;
		  fastcgi_temp_path $tmp/nginx-$p;
		  uwsgi_temp_path $tmp/nginx-$p;
		  scgi_temp_path $tmp/nginx-$p;
		  server { listen 8080; root $tmp; }
		}
	EOF
done
chmod 755 "$tmp"
# nginx and curl on CPUs of their own (when there are two): on one CPU the
# first SYNC after the response's join most often outlasts the whole 64 MiB
# (docs/performance.md, "DMB size"); on two it ends more often
cpu_srv=() cpu_cli=()
if [ "$(nproc)" -ge 2 ]; then cpu_srv=(taskset -c 0) cpu_cli=(taskset -c 1); fi
in_cgroup "$ns_b" "${cpu_srv[@]}" nginx -c "$tmp/nginx-b/nginx.conf" &
pids+=($!)
ip netns exec "$ns_c" nginx -c "$tmp/nginx-c/nginx.conf" &
pids+=($!)
in_cgroup "$ns_b" redis-server --port 6379 --bind 10.244.2.2 --save '' --appendonly no \
	--protected-mode no --dir "$tmp" >"$tmp/redis.log" 2>&1 &
pids+=($!)
up=0
for _ in $(seq 100); do
	if ip netns exec "$ns_a" curl -fsS -o /dev/null http://10.244.2.2:8080/blob -r 0-0 2>/dev/null &&
		ip netns exec "$ns_a" curl -fsS -o /dev/null http://10.244.3.2:8080/blob -r 0-0 2>/dev/null &&
		ip netns exec "$ns_a" redis-cli -h 10.244.2.2 ping >/dev/null 2>&1; then
		up=1
		break
	fi
	sleep 0.1
done
check "nginx and redis pods are up" [ "$up" = 1 ]
[ "$up" = 1 ] || finish

# --- curl -> Service VIP -> nginx pod, both under lism
c0=$(stat_of confirms) b0=$(stat_of shortcut_bytes) j0=$(stat_of senders_joined) h0=$(stat_of sync_holds)
watch_stats="send_size_calls senders_one_way senders_send_limits sender_join_fails fallbacks"
w0=$(for k in $watch_stats; do stat_of "$k"; done | tr '\n' ' ')
in_cgroup "$ns_a" "${cpu_cli[@]}" curl -fsS -o "$tmp/got" http://10.96.0.10/blob
check "curl through the Service IP: 64 MiB, sha256 equal" [ "$(sha256sum <"$tmp/got" | cut -d' ' -f1)" = "$want" ]
c1=$(stat_of confirms) b1=$(stat_of shortcut_bytes) j1=$(stat_of senders_joined) h1=$(stat_of sync_holds)
check "that connection was confirmed (confirms $c0 -> $c1)" [ "$c1" -gt "$c0" ]
# nginx sends the file with sendfile() (as Debian's and the nginx image's
# configs do), 64 KiB at a time: bulk sends, so the response's socket
# becomes a sender after its first 16 (sender.h; with sendfile off nginx
# writes 32 KiB, which stays on TCP, where it runs faster).  Its sends then
# wait until curl has read what went over TCP before (SYNC).  How much
# takes the shortcut after that is the scheduler's call, even on two CPUs:
# 40-59 MiB in earlier runs, 0 in 3 of 3 runs of a slow hour, each send
# held for order (docs/performance.md, "DMB size").  So what is checked is
# that the response joined and ran the data path; the sha256 above proves
# the mix stayed in order, and the redis check below that bytes through the
# Service IP take the shortcut.
check "and its response joined the senders and ran the data path ($((b1 - b0)) of $((64 << 20)) bytes through the shortcut; joined $j0 -> $j1, sends held for order $((h1 - h0)))" \
	[ "$j1" -gt "$j0" -a $((b1 - b0 + h1 - h0)) -gt 0 ]
# what the size watch and the join saw, for a run where it did not join
[ "$j1" -gt "$j0" ] ||
	echo "node-sim: $watch_stats: $w0-> $(for k in $watch_stats; do stat_of "$k"; done | tr '\n' ' ')"

# --- redis clients -> Service VIP -> redis pod
head -c $((1 << 20)) /dev/urandom | base64 -w0 >"$tmp/value"
in_cgroup "$ns_a" redis-cli -h 10.96.0.11 -x set blob <"$tmp/value" >/dev/null
in_cgroup "$ns_a" redis-cli -h 10.96.0.11 --raw get blob | head -c "$(stat -c %s "$tmp/value")" >"$tmp/value.got"
check "redis SET/GET of 1 MiB through the Service IP, equal" cmp -s "$tmp/value" "$tmp/value.got"
c2=$(stat_of confirms) b2=$(stat_of shortcut_bytes)
in_cgroup "$ns_a" redis-benchmark -h 10.96.0.11 -p 6379 -t set,get -n 20000 -c 8 -d 1024 -q >"$tmp/rb.log" 2>&1
check "redis-benchmark through the Service IP completes" grep -q 'GET' "$tmp/rb.log"
c3=$(stat_of confirms) b3=$(stat_of shortcut_bytes)
check "redis connections confirmed ($((c3 - c2)) of 8 benchmark clients)" [ $((c3 - c2)) -ge 8 ]
check "redis bytes took the shortcut ($((b3 - b2)) bytes)" [ $((b3 - b2)) -ge $((20000 * 1024)) ]
sleep 1.2 # the daemon's summary (--log-interval, 1 s here) counts them; no line per connection
summary=$(podman logs "$ctr" 2>&1 | grep -E '^lism: last [0-9]+ s: [0-9]+ connections confirmed' | tail -1)
check "the daemon logs a summary: ${summary:0:100}..." [ -n "$summary" ]
check "and no event per connection (--log-events none)" \
	[ "$(podman logs "$ctr" 2>&1 | grep -cE ' (confirm|close) +(active|passive) ')" = 0 ]

# --- a server pod outside lism's cgroup: the client's proposal gets no answer
f0=$(stat_of reason:peer-no-lism)
in_cgroup "$ns_a" curl -fsS -o "$tmp/got2" http://10.96.0.12/blob
check "curl to the pod outside lism: sha256 equal" [ "$(sha256sum <"$tmp/got2" | cut -d' ' -f1)" = "$want" ]
f1=$(stat_of reason:peer-no-lism)
check "it fell back with peer-no-lism ($f0 -> $f1)" [ "$f1" -gt "$f0" ]

# --- scope: the option goes only to destinations on this node.  iptables
# counts the SYNs that arrive with it (TCP option kind 254, include/lism/option.h)
# and all of them: at the other node's pod, none may carry it; at a local
# pod, reached straight by its IP (its veth route), they must (the control:
# the count can see the option).
syn_rules() { # netns, port
	ip netns exec "$1" iptables -I INPUT -p tcp --dport "$2" --syn -j ACCEPT &&
		ip netns exec "$1" iptables -I INPUT -p tcp --dport "$2" --syn -m tcp --tcp-option 254 -j ACCEPT
}
syn_count() { # netns, port, "opt" or "all"
	ip netns exec "$1" iptables -L INPUT -v -n -x | awk -v p="dpt:$2" -v o="$3" '
		$0 ~ p && (o == "opt") == ($0 ~ /option=254/) { n += $1 } END { print n + 0 }'
}
syn_rules "$ns_r" 8080 && syn_rules "$ns_b" 8080 || bad "iptables SYN counters"
ip netns exec "$ns_r" node -e 'require("net").createServer((s) => s.end("remote\n")).listen(8080, "10.244.9.2")' &
pids+=($!)
for _ in $(seq 50); do
	in_node curl -s -o /dev/null --max-time 1 http://10.244.9.2:8080/ 2>/dev/null
	rc=$?
	[ "$rc" = 0 ] || [ "$rc" = 52 ] && break # 52: answered, not with HTTP
	sleep 0.1
done
r0=$(syn_count "$ns_r" 8080 all)
for i in 1 2 3; do in_cgroup "$ns_a" curl -s -o /dev/null --max-time 2 http://10.244.9.2:8080/ 2>/dev/null; done
check "SYNs to the other node's pod carry no lism option ($(syn_count "$ns_r" 8080 opt) of $(($(syn_count "$ns_r" 8080 all) - r0)) SYNs)" \
	[ "$(syn_count "$ns_r" 8080 opt)" = 0 -a $(($(syn_count "$ns_r" 8080 all) - r0)) -ge 3 ]
in_cgroup "$ns_a" curl -fsS -o /dev/null -r 0-0 http://10.244.2.2:8080/blob
check "a SYN to a local pod by its IP carries it ($(syn_count "$ns_b" 8080 opt) with the option)" \
	[ "$(syn_count "$ns_b" 8080 opt)" -ge 1 ]
# the three pod subnets on their veths at least (and the node's own addresses)
routes_n=$(http_get "$port" /metrics | awk '$1 == "lism_scope_route_entries" { print $2 }')
check "/metrics counts the scope's entries from routes (lism_scope_route_entries ${routes_n:-missing})" \
	[ "${routes_n:-0}" -ge 3 ]

# --- lism conns inside the container: a download held open (200 KB/s of 64 MiB)
in_cgroup "$ns_a" curl -fsS --limit-rate 200k -o "$tmp/held" http://10.96.0.10/blob &
held=$!
for _ in $(seq 50); do
	lism_in conns --wide >"$tmp/conns.txt" 2>&1
	grep -q '/curl' "$tmp/conns.txt" && break
	sleep 0.1
done
pkill -f -- "--limit-rate 200k -o $tmp/held"
{ wait "$held"; } 2>/dev/null
check "lism conns inside the container lists the download's curl (the host's processes)" \
	grep -q '/curl' "$tmp/conns.txt"
progs_running=$(lism_progs)
check "the container's programs are loaded ($progs_before before, $progs_running now)" \
	[ "$progs_running" -gt "$progs_before" ]

# --- lism exec in pods (docs/kubernetes.md, "Rings for pods that opt in"):
# the container's device serves at the node's /run/lism (this run's
# directory) and publishes its image's liblism.so beside the socket
lib_pub=$tmp/run-lism/liblism.so
wait_for() { # command...: until it succeeds (10 s)
	for _ in $(seq 100); do "$@" && return 0; sleep 0.1; done
	return 1
}
published_by() { podman logs "$1" 2>&1 | grep -m1 'liblism.so published at /run/lism/liblism.so'; }
is_published() { published_by "$1" >/dev/null; }
wait_for is_published "$ctr"
podman cp "$ctr:/usr/lib/lism/liblism.so" "$tmp/liblism.image.so" >/dev/null 2>&1
lib_is_the_images() { [ -S "$tmp/run-lism/device.sock" ] && cmp -s "$lib_pub" "$tmp/liblism.image.so"; }
check "the container publishes its image's liblism.so beside its device socket in the node's /run/lism (mode $(stat -c %a "$lib_pub" 2>/dev/null))" \
	[ "$(lib_is_the_images && stat -c %a "$lib_pub")" = 644 ]
check "and logs it: $(published_by "$ctr" | cut -c1-110)..." is_published "$ctr"
# The example pod's environment and volumes, its host paths mapped to this
# run's as the DaemonSet's are
pod_spec=$(spec_of "$root/deploy/kubernetes/examples" redis) || { bad "reading the example pod"; finish; }
mapfile -t pod_env < <(field "$pod_spec" redis env)
mapfile -t pod_mounts < <(node -e '
	const [spec, devdir] = process.argv.slice(1);
	for (const m of JSON.parse(spec).containers[0].mounts) {
		if (m.host !== "/run/lism") { console.log(`unmapped host path ${m.host}`); continue; }
		console.log(devdir, m.path, m.readOnly ? "ro" : "rw");
	}' "$pod_spec" "$tmp/run-lism")
printf '%s\n' "${pod_mounts[@]}" | grep -q '^unmapped' && { bad "the example pod: ${pod_mounts[*]}"; finish; }
read -ra pod_mount_args <<<"${pod_mounts[*]}"
# Start a command in pod netns $1 as the example pod's container runs it: in
# the test's cgroup, in a mount namespace of its own with the pod's volumes
# (over a tmpfs where the node lacks the mount point: the host's own
# /run/lism is never touched), with the pod's environment.
pod_mount_script='
	while [ "$1" != -- ]; do
		src=$1 dst=$2 mode=$3
		shift 3
		[ -d "$dst" ] || { mount -t tmpfs -o mode=0755 pod "$(dirname "$dst")" && mkdir "$dst"; } || exit 1
		mount --bind "$src" "$dst" || exit 1
		[ "$mode" = rw ] || mount -o remount,bind,ro "$dst" || exit 1
	done
	shift
	exec env "$@"'
in_pod() ( # ns, command...  (in the background $! is the subshell, the command its child)
	ns=$1
	shift
	exec sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cg" ip netns exec "$ns" \
		unshare -m --propagation private sh -c "$pod_mount_script" pod "${pod_mount_args[@]}" -- "${pod_env[@]}" "$@"
)
pod_sees_it() {
	in_pod "$ns_a" sh -c 'test -r "${LD_PRELOAD##*:}" && test -S "$LISM_DEVICE" &&
		! touch "$(dirname "$LISM_DEVICE")/x" 2>/dev/null'
}
check "a pod as the example (${pod_env[*]}; /run/lism ${pod_mount_args[2]}) sees the library and the socket, read-only" pod_sees_it
# A checksummed stream from pod a to the Service IP 10.96.0.13, DNAT'd to pod b
stream_py=$root/tests/programs/sha_stream.py
serve_bg() { # runner (in_pod or in_cgroup), port, output file[, nonblock]: the server, listening;
	# the runner's job in $srv, the server's own pid in $srv_pid
	"$1" "$ns_b" python3 "$stream_py" serve 0.0.0.0 "$2" ${4:-} >"$3" 2>&1 &
	srv=$! srv_pid=
	pids+=($srv)
	wait_for grep -q '^listening pid' "$3" || return 1
	srv_pid=$(awk '$1 == "listening" { print $3; exit }' "$3")
	pids+=($srv_pid)
}
send_fg() { # runner, port, bytes, output file
	"$1" "$ns_a" python3 "$stream_py" send 10.96.0.13 "$2" "$3" >"$4" 2>&1
}
end_server() { # its output file: once it has said its line (a client that failed leaves it in accept)
	wait_for grep -q '^bytes' "$1"
	kill $srv_pid "$srv" 2>/dev/null
	wait "$srv" 2>/dev/null
}
word() { awk -v k="$2" '$1 == "bytes" { for (i = 1; i < NF; i++) if ($i == k) { print $(i + 1); exit } }' "$1"; }
same_stream() { # server output, client output, bytes
	[ "$(word "$1" bytes)" = "$3" ] && [ "$(word "$2" bytes)" = "$3" ] &&
		[ -n "$(word "$1" sha256)" ] && [ "$(word "$1" sha256)" = "$(word "$2" sha256)" ]
}
attaches() { http_get "$port" /metrics | awk '$1 == "lism_device_attaches_total" { print $2 }'; }
ring_bytes() { http_get "$port" /metrics | awk '$1 == "lism_device_ring_bytes_total" { print $2 }'; }
total=$((256 << 20))
r0=$(stat_of ring_pairs) a0=$(attaches) rb0=$(ring_bytes)
serve_bg in_pod 9000 "$tmp/serve.out" || bad "the server pod did not listen: $(tail -2 "$tmp/serve.out")"
send_fg in_pod 9000 "$total" "$tmp/send.out"
end_server "$tmp/serve.out"
r1=$(stat_of ring_pairs) a1=$(attaches) tcp=$(word "$tmp/serve.out" tcp)
check "client pod -> Service IP -> server pod, both as the example: $((total >> 20)) MiB, sha256 equal" \
	same_stream "$tmp/serve.out" "$tmp/send.out" "$total"
same_stream "$tmp/serve.out" "$tmp/send.out" "$total" || sed 's/^/node-sim: /' "$tmp/serve.out" "$tmp/send.out"
check "through a ring: lism's ring pairs $r0 -> $r1, the device's attaches $a0 -> $a1 (one per end)" \
	[ "$r1" = $((r0 + 1)) -a "${a1:-0}" = $((${a0:-0} + 2)) ]
check "and its TCP connection carried doorbells only (${tcp:-?} bytes of $total)" [ "${tcp:--1}" -ge 0 -a "${tcp:-0}" -lt $((total / 1000)) ]
for _ in $(seq 20); do # the device folds the rings' headers into its totals every 200 ms
	rb1=$(ring_bytes)
	[ "${rb1:-0}" -ge $((${rb0:-0} + total)) ] && break
	sleep 0.1
done
check "/metrics counts the ring's bytes: lism_device_ring_bytes_total ${rb0:-?} -> ${rb1:-?} (the stream and the server's answer)" \
	[ "${rb1:-0}" -ge $((${rb0:-0} + total)) -a "${rb1:-0}" -lt $((${rb0:-0} + total + 4096)) ]
# Only the client's pod opts in, its server (non-blocking, as event loops
# are: one that the sk_msg path would take) not: the pair stays on TCP, since
# an end under the library never takes the sk_msg path; every byte there
total=$((64 << 20))
r0=$(stat_of ring_pairs) a0=$(attaches) n0=$(stat_of reason:exec-peer-no-lib) b0=$(stat_of shortcut_bytes)
serve_bg in_cgroup 9001 "$tmp/serve-tcp.out" nonblock ||
	bad "the server pod did not listen: $(tail -2 "$tmp/serve-tcp.out")"
send_fg in_pod 9001 "$total" "$tmp/send-tcp.out"
end_server "$tmp/serve-tcp.out"
r1=$(stat_of ring_pairs) a1=$(attaches) n1=$(stat_of reason:exec-peer-no-lib) b1=$(stat_of shortcut_bytes)
tcp=$(word "$tmp/serve-tcp.out" tcp)
check "client pod as the example -> Service IP -> a server pod without it: $((total >> 20)) MiB, sha256 equal" \
	same_stream "$tmp/serve-tcp.out" "$tmp/send-tcp.out" "$total"
check "on TCP with reason exec-peer-no-lib ($n0 -> $n1): no ring ($r0 -> $r1), no attach ($a0 -> $a1), no shortcut bytes ($((b1 - b0))), all $total over TCP (${tcp:-?})" \
	[ "$n1" = $((n0 + 1)) -a "$r1" = "$r0" -a "$a1" = "$a0" -a "$b1" = "$b0" -a "${tcp:-0}" -ge "$total" ]

# --- memory, under the DaemonSet's limit (podman --memory): the peak of each
# lism container's own cgroup (BPF maps are charged to it), loading and
# serving here, adopting and upgrading and idling with the probe below
limit=$(field "$spec" lism memoryLimit)
mem_peak() { # container: "PEAK OOM_KILLS" of its cgroup (v2, or v1's memory controller)
	local path peak=0 ooms=0 d
	path=$(podman inspect -f '{{.State.CgroupPath}}' "$1")
	for d in "$cgroot$path" "/sys/fs/cgroup/memory$path"; do
		[ -r "$d/memory.peak" ] && peak=$(cat "$d/memory.peak")
		[ -r "$d/memory.max_usage_in_bytes" ] && peak=$(cat "$d/memory.max_usage_in_bytes")
		[ -r "$d/memory.events" ] && ooms=$(awk '$1 == "oom_kill" { print $2 }' "$d/memory.events")
		[ -r "$d/memory.oom_control" ] && ooms=$(awk '$1 == "oom_kill" { print $2 }' "$d/memory.oom_control")
	done
	echo "$peak ${ooms:-0}"
}
check_memory() { # container, what it did
	local peak ooms
	read -r peak ooms < <(mem_peak "$1")
	check "memory $2: peak $((peak >> 20)) MiB, at most half the $((limit >> 20)) MiB limit, no OOM kill ($ooms)" \
		[ "$peak" -gt 0 -a "$peak" -le $((limit / 2)) -a "$ooms" = 0 ]
}
check_memory "$ctr" "loading and serving"

# --- a rollout: the pod stops, its successor adopts what is pinned
for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
{ wait; } 2>/dev/null
pids=()
# a server pod under the library, up across the rollout
lib_ino=$(stat -c %i "$lib_pub")
serve_bg in_pod 9002 "$tmp/serve-held.out" || bad "the server pod did not listen: $(tail -2 "$tmp/serve-held.out")"
held_srv=$srv held_pid=$srv_pid
podman --runtime runc stop -t 30 "$ctr" >/dev/null
code=$(podman inspect -f '{{.State.ExitCode}}' "$ctr")
check "the container exits 0 on SIGTERM (exit $code)" [ "$code" = 0 ]
podman logs "$ctr" 2>&1 | tail -2 | sed 's/^/node-sim: lism: /'
check "and leaves lism loaded and attached (pins at $pin, the cgroup link)" \
	[ -e "$pin/device" -a -n "$(bpftool cgroup show "$cg" 2>/dev/null | tail -n +2)" ]
podman --runtime runc rm -f -t 0 "$ctr" >/dev/null 2>&1
# the ConfigMap edited: a lower DMB limit (applied live), another DMB size (fixed at load)
spec2=$(spec_of "$root/deploy/kubernetes" lism "${config[@]}" LISM_MAX_DMBS=4000 LISM_DMB_SIZE=8M)
mapfile -t args2 < <(field "$spec2" lism args | sed -e "s|^--cgroup=/host/cgroup\$|--cgroup=/host/cgroup/$cg_name|" \
	-e "s|^--metrics-addr=.*|--metrics-addr=127.0.0.1:$port|")
start_lism "$ctr" -- "${args2[@]}" || bad "starting the next lism container"
check "the next container adopts the instance: /healthz 200" wait_http "$port" /healthz
check "its log says it adopted it" grep -q 'adopting the instance' <(podman logs "$ctr" 2>&1)
wait_for is_published "$ctr"
podman cp "$ctr:/usr/lib/lism/liblism.so" "$tmp/liblism.image.so" >/dev/null 2>&1
new_copy() { lib_is_the_images && [ "$(stat -c %i "$lib_pub")" != "$lib_ino" ]; }
check "it publishes its liblism.so anew, renamed over the old copy (inode $lib_ino -> $(stat -c %i "$lib_pub"))" new_copy
check "a server pod started before keeps the copy it mapped, whole ($(grep -m1 -o '[^ ]*liblism.so.*' "/proc/$held_pid/maps"))" \
	grep -q 'liblism.so (deleted)$' "/proc/$held_pid/maps"
total=$((64 << 20))
r0=$(stat_of ring_pairs) a0=$(attaches)
send_fg in_pod 9002 "$total" "$tmp/send-held.out"
srv=$held_srv srv_pid=$held_pid
end_server "$tmp/serve-held.out"
r1=$(stat_of ring_pairs) a1=$(attaches)
check "a new client pod to it through the Service IP: $((total >> 20)) MiB, sha256 equal, in a ring from the new container's device (ring pairs $r0 -> $r1, attaches $a0 -> $a1)" \
	[ "$(same_stream "$tmp/serve-held.out" "$tmp/send-held.out" "$total" && echo y)" = y -a \
	"$r1" = $((r0 + 1)) -a "${a1:-0}" = $((${a0:-0} + 2)) ]
max=$(lism_in status -j | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).max_dmbs))')
check "the edited LISM_MAX_DMBS is applied (max_dmbs $max)" [ "$max" = 4000 ]
http_get "$port" /metrics >"$tmp/metrics.txt"
check "the edited LISM_DMB_SIZE is not (fixed at load): lism_settings_not_applied{setting=\"dmb_size\"} 1" \
	grep -qx 'lism_settings_not_applied{setting="dmb_size"} 1' "$tmp/metrics.txt"
check "and the log says so" grep -q 'dmb-size .* not applied' <(podman logs "$ctr" 2>&1)
check_memory "$ctr" "adopting and upgrading"
cready=$(node -e 'const s=JSON.parse(process.argv[1]); console.log((s.containers[0].readinessExec ?? []).join(" "))' \
	"$(spec_of "$root/deploy/kubernetes/cleanup" lism-cleanup)")
podman exec "$ctr" $cready >/dev/null 2>&1
rc=$?
check "the cleanup's readiness probe ($cready) fails while lism is pinned (exit $rc)" [ "$rc" != 0 ]

# --- a node where lism cannot load: its handshake refused by the verifier
# (LISM_TEST_REJECT), on a pin path of its own beside the running instance
mapfile -t args3 < <(printf '%s\n' "${args2[@]}" | sed -e "s|^--pin-path=.*|--pin-path=/sys/fs/bpf/lism-rejected|" \
	-e "s|^--metrics-addr=.*|--metrics-addr=127.0.0.1:$((port + 1))|")
start_lism "$ctr-rejected" --env LISM_TEST_REJECT=handshake -- "${args3[@]}" || bad "starting the rejected container"
check "where lism cannot load, the container serves /livez" wait_http $((port + 1)) /livez
sleep 1
running=$(podman inspect -f '{{.State.Running}}' "$ctr-rejected")
why=$(http_get $((port + 1)) /healthz)
check "it stays running (no crash loop: running=$running) and not ready: /healthz $(in_node curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$((port + 1))/healthz)" \
	[ "$running" = true -a "$(in_node curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$((port + 1))/healthz)" = 503 ]
check "/healthz says why: ${why%%$'\n'*}" grep -q 'verifier refused lism_sockops' <<<"$why"
http_get $((port + 1)) /metrics >"$tmp/metrics3.txt"
metrics_say_why() {
	grep -qx 'lism_up 0' "$tmp/metrics3.txt" &&
		grep -q '^lism_not_running_info{reason=".*verifier refused lism_sockops' "$tmp/metrics3.txt" &&
		grep -qx 'lism_feature_enabled{feature="handshake",core="1"} 0' "$tmp/metrics3.txt"
}
check "/metrics: lism_up 0, lism_not_running_info with the reason, handshake 0" metrics_say_why
check_memory "$ctr-rejected" "failing to load and probing"
podman --runtime runc stop -t 10 "$ctr-rejected" >/dev/null
check "it exits 0 on SIGTERM, leaving no pins ($(podman inspect -f '{{.State.ExitCode}}' "$ctr-rejected"))" \
	[ "$(podman inspect -f '{{.State.ExitCode}}' "$ctr-rejected")" = 0 -a ! -e "$bpffs/lism-rejected" ]

# --- uninstall: the DaemonSet goes, the cleanup DaemonSet's container unloads
podman --runtime runc stop -t 30 "$ctr" >/dev/null
cspec=$(spec_of "$root/deploy/kubernetes/cleanup" lism-cleanup) || bad "reading the cleanup DaemonSet"
cname=$(node -e 'console.log(JSON.parse(process.argv[1]).containers[0].name)' "$cspec")
mapfile -t ccmd < <(field "$cspec" "$cname" command)
mapfile -t cargs < <(field "$cspec" "$cname" args)
mapfile -t copts < <(podman_args "$cspec" "$cname")
cimage=${IMAGE:-${copts[-1]}}
unset 'copts[-1]'
podman "${run_base[@]}" -d --name "$ctr-cleanup" "${copts[@]}" --entrypoint "${ccmd[0]}" "$cimage" "${cargs[@]}" >/dev/null ||
	bad "starting the cleanup container"
for _ in $(seq 100); do grep -q 'staying until stopped' <(podman logs "$ctr-cleanup" 2>&1) && break; sleep 0.2; done
podman logs "$ctr-cleanup" 2>&1 | tail -2 | sed 's/^/node-sim: cleanup: /'
check "the cleanup container unloads and stays running" \
	[ "$(podman inspect -f '{{.State.Running}}' "$ctr-cleanup")" = true ]
mapfile -t ready_cmd < <(node -e 'const s=JSON.parse(process.argv[1]); console.log((s.containers[0].readinessExec ?? []).join("\n"))' "$cspec")
check "its readiness probe (${ready_cmd[*]}) passes now the node is clean" \
	podman exec "$ctr-cleanup" "${ready_cmd[@]}"
check "no pins left at $pin" [ ! -e "$pin" ]
check "no program attached to the cgroup" [ -z "$(bpftool cgroup show "$cg" 2>/dev/null | tail -n +2)" ]
for _ in $(seq 50); do
	progs_after=$(lism_progs)
	[ "$progs_after" -le "$progs_before" ] && break
	sleep 0.1
done
check "no lism programs left ($progs_before before, $progs_after after)" [ "$progs_after" -le "$progs_before" ]
podman --runtime runc stop -t 10 "$ctr-cleanup" >/dev/null
check "the cleanup container exits 0 when deleted" [ "$(podman inspect -f '{{.State.ExitCode}}' "$ctr-cleanup")" = 0 ]
for c in "$ctr" "$ctr-rejected" "$ctr-cleanup"; do podman --runtime runc rm -f -t 0 "$c" >/dev/null 2>&1; done
check "no container left" [ -z "$(podman --runtime runc ps -a --format '{{.Names}}' | grep -F -e "$ctr")" ]
finish
