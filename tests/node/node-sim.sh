#!/usr/bin/env bash
# Node simulation for the Kubernetes deployment (make test, root).
#
# lism runs in its image (make image) exactly as deploy/kubernetes runs it:
# the DaemonSet container's command and args with the ConfigMap's values,
# its capabilities (drop ALL, add BPF NET_ADMIN PERFMON), no new privileges,
# read-only root, host network, the bpffs and cgroup2-root host paths, and
# the seccomp profile deploy/seccomp/lism.json (podman's default profile
# allows bpf(2) only with CAP_SYS_ADMIN).  Only the paths are test-private:
# a cgroup below the cgroup2 root, a pin directory, a metrics port on
# loopback.
#
# "Pods" are network namespaces routed through a "node" namespace that does
# kube-proxy's ClusterIP DNAT.  curl to nginx and redis clients to redis
# through Service IPs must take the shortcut (counters read inside the
# container), byte-exact (sha256); a server pod outside lism's cgroup falls
# back (peer-no-lism); the preStop hook and a stop of the container unload
# lism and leave no pins, cgroup attachment or BPF links behind.
# Prints "N passed, N failed".
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
image=${IMAGE:-localhost/lism:latest}
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
for tool in podman node nginx redis-server redis-cli redis-benchmark curl iptables bpftool taskset; do
	command -v "$tool" >/dev/null || { bad "$tool is missing (make deps installs it)"; finish; }
done
[ -d "$build/manifests/node_modules/js-yaml" ] || { bad "js-yaml missing: run make check-manifests first"; finish; }

id=$$
cgroot=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
cg_name=lism-node-$id
cg=$cgroot/$cg_name
pin=/sys/fs/bpf/lism-node-$id
ctr=lism-node-$id
libxdp=/sys/fs/bpf/lism-node-$id-libxdp
port=$((21000 + id % 1000))
ns_node=ln$id-node ns_a=ln$id-a ns_b=ln$id-b ns_c=ln$id-c
tmp=$(mktemp -d /tmp/lism-node.XXXXXX)
pids=()

cleanup() {
	# one at a time: podman rm stops at a name that does not exist
	for c in "$ctr" "$ctr-xdp"; do podman --runtime runc rm -f -t 0 "$c" >/dev/null 2>&1; done
	rm -rf "$pin-xdp" "$libxdp" 2>/dev/null
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
	[ -e "$pin/device" ] && "$build/lism" unload --force --timeout 0 --pin-path "$pin" >/dev/null 2>&1
	rm -rf "$pin" 2>/dev/null
	for ns in "$ns_a" "$ns_b" "$ns_c" "$ns_node"; do ip netns del "$ns" 2>/dev/null; done
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
	dnat 10.96.0.12:80 10.244.3.2:8080 || { bad "Service DNAT rules"; finish; }

# --- lism, as the DaemonSet runs it
spec=$(node "$here/daemonset.mjs" "$root/deploy/kubernetes" "$build/manifests/node_modules") ||
	{ bad "reading the DaemonSet"; finish; }
field() { node -e 'const s=JSON.parse(process.argv[1]); const v=s[process.argv[2]]; console.log(Array.isArray(v) ? v.join("\n") : String(v))' "$spec" "$1"; }
mapfile -t cmd < <(field command)
mapfile -t args < <(field args | sed -e "s|^--cgroup=/host/cgroup\$|--cgroup=/host/cgroup/$cg_name|" \
	-e "s|^--pin-path=.*|--pin-path=$pin|" -e "s|^--metrics-addr=.*|--metrics-addr=127.0.0.1:$port|" \
	-e "s|^--log-interval=.*|--log-interval=1|")
mapfile -t prestop < <(field preStop | sed -e "s|^--pin-path=.*|--pin-path=$pin|")
# never the host's cgroup root or pins: the rewrites above must have taken
printf '%s\n' "${args[@]}" | grep -qx -- "--cgroup=/host/cgroup/$cg_name" &&
	printf '%s\n' "${args[@]}" | grep -qx -- "--pin-path=$pin" ||
	{ bad "the DaemonSet's --cgroup or --pin-path changed form: not rewritten to the test's own"; finish; }
caps=$(field capsAdd | paste -sd, -)
# the DaemonSet container's privileges and mounts
pidns=private
[ "$(field hostPID)" = true ] && pidns=host
# --cgroup-parent: podman's own cgroups under a name of this run (cleanup removes them;
# the cgroupfs manager, named in run_opts: systemd's would want a .slice)
sec_opts=(--pid "$pidns" --cgroup-parent "/$ctr-podman" --ulimit nofile=20000:20000 --ulimit nproc=32768:32768
	--security-opt "seccomp=$root/deploy/seccomp/lism.json")
[ "$(field capsDrop)" = ALL ] && sec_opts+=(--cap-drop ALL)
sec_opts+=(--cap-add "$caps")
[ "$(field noNewPrivileges)" = true ] && sec_opts+=(--security-opt no-new-privileges)
[ "$(field readOnlyRootFilesystem)" = true ] && sec_opts+=(--read-only)
while read -r m; do
	[ "${m%%:*}" = /sys/fs/cgroup ] && m=$cgroot:${m#*:} # this machine's cgroup2 root
	sec_opts+=(-v "$m")
done < <(field mounts)
run_opts=(--cgroup-manager=cgroupfs --runtime runc run -d --name "$ctr" --network host "${sec_opts[@]}")
lism_progs() { bpftool prog show 2>/dev/null | grep -cE 'name (lism_sockops|lism_msg|lism_destroy|lism_iter_socks) '; }
progs_before=$(lism_progs)

echo "node-sim: podman ${run_opts[*]} $image ${cmd[*]:1} ${args[*]}"
podman "${run_opts[@]}" --entrypoint "${cmd[0]}" "$image" "${args[@]}" >/dev/null ||
	{ bad "starting the lism container"; finish; }
healthy=0
for _ in $(seq 100); do
	if curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; then healthy=1; break; fi
	sleep 0.1
done
check "the container loads lism and /healthz answers 200" [ "$healthy" = 1 ]
[ "$healthy" = 1 ] || { podman logs "$ctr" | tail -20; finish; }
lism_in() { podman exec "$ctr" /usr/sbin/lism "$@" --pin-path "$pin"; }
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

# --- the veth fast path, from the same image with the same privileges plus
# CAP_SYS_ADMIN (what enabling it asks of the DaemonSet), in the node's
# network namespace (the DaemonSet's hostNetwork), on the pod veths.
# Plain TCP between pods (clients outside lism's cgroup: no shortcut), so the
# packets cross the node; conntrack liberal, so established TCP may skip it.
ip netns exec "$ns_node" iptables -A FORWARD -m conntrack --ctstate INVALID -j DROP &&
	ip netns exec "$ns_node" sysctl -qw net.netfilter.nf_conntrack_tcp_be_liberal=1 ||
	bad "node conntrack settings"
mkdir -p "$libxdp"
xdp_in() { # extra podman options, then --, then lism xdp arguments
	local extra=()
	while [ "$1" != -- ]; do extra+=("$1"); shift; done
	shift
	podman --cgroup-manager=cgroupfs --runtime runc run --rm --name "$ctr-xdp" --network "ns:/run/netns/$ns_node" \
		--env "LIBXDP_BPFFS=$libxdp" "${sec_opts[@]}" "${extra[@]}" --entrypoint /usr/sbin/lism \
		"$image" xdp "$@" --pin-path "$pin-xdp"
}
xdp_count() { ip -n "$ns_node" -o link show | grep -c ' xdp'; }
# libxdp reads attached XDP programs by id (BPF_PROG_GET_FD_BY_ID): CAP_SYS_ADMIN
xdp_in -- attach --iface 'veth*' >"$tmp/xdp.log" 2>&1
xdp_in -- status >>"$tmp/xdp.log" 2>&1
check "without CAP_SYS_ADMIN a second look at the veths fails and says why" \
	grep -q 'needs it' "$tmp/xdp.log"
xdp_in --cap-add SYS_ADMIN -- detach >/dev/null 2>&1
xdp_in --cap-add SYS_ADMIN -- attach --iface 'veth*' >"$tmp/xdp.log" 2>&1
check "lism xdp attach in the image attaches to the 3 pod veths ($(xdp_count) with XDP)" [ "$(xdp_count)" = 3 ]
grep -v '^lism: fast path attached' "$tmp/xdp.log" | sed 's/^/node-sim: xdp: /'
ip netns exec "$ns_a" redis-benchmark -h 10.244.2.2 -p 6379 -t set,get -n 20000 -c 8 -d 1024 -q >"$tmp/rb2.log" 2>&1
check "redis-benchmark pod to pod with the fast path completes" grep -q 'GET' "$tmp/rb2.log"
fwd=$(xdp_in --cap-add SYS_ADMIN -- status -j 2>/dev/null | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).counters.forwarded))')
check "the fast path forwarded its packets past the node's stack ($fwd packets)" [ "${fwd:-0}" -ge 20000 ]
in_cgroup "$ns_a" curl -fsS -o "$tmp/got3" http://10.96.0.10/blob
check "curl through the Service IP with the fast path on: sha256 equal" [ "$(sha256sum <"$tmp/got3" | cut -d' ' -f1)" = "$want" ]
xdp_in --cap-add SYS_ADMIN -- detach >"$tmp/xdp.log" 2>&1 || sed 's/^/node-sim: xdp: /' "$tmp/xdp.log"
check "lism xdp detach leaves no XDP program ($(xdp_count) left)" [ "$(xdp_count)" = 0 ]
no_xdp_pins() { [ ! -e "$pin-xdp" ] && [ -z "$(find "$libxdp" -name 'dispatch-*')" ]; }
check "and no pins" no_xdp_pins

# --- the DaemonSet goes away: preStop, then SIGTERM
# a download held open (200 KB/s of 64 MiB) while lism conns looks for it
in_cgroup "$ns_a" curl -fsS --limit-rate 200k -o "$tmp/held" http://10.96.0.10/blob &
held=$!
for _ in $(seq 50); do
	lism_in conns --wide >"$tmp/conns.txt" 2>&1
	grep -q '/curl' "$tmp/conns.txt" && break
	sleep 0.1
done
pkill -f -- "--limit-rate 200k -o $tmp/held"
wait "$held" 2>/dev/null
check "lism conns inside the container lists the download's curl (the host's processes)" \
	grep -q '/curl' "$tmp/conns.txt"
progs_running=$(lism_progs)
check "the container's programs are loaded ($progs_before before, $progs_running now)" \
	[ "$progs_running" -gt "$progs_before" ]
podman exec "$ctr" "${prestop[@]}" >/dev/null
check "preStop switched the device off to drain" [ "$(lism_in status -j | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const j=JSON.parse(s);console.log(j.active+"/"+j.draining)})')" = false/true ]
for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
wait 2>/dev/null
pids=()
podman --runtime runc stop -t 60 "$ctr" >/dev/null
code=$(podman inspect -f '{{.State.ExitCode}}' "$ctr")
check "the container exits 0 on SIGTERM (exit $code)" [ "$code" = 0 ]
podman logs "$ctr" 2>&1 | tail -3 | sed 's/^/node-sim: lism: /'
check "no pins left at $pin" [ ! -e "$pin" ]
check "no program attached to the cgroup" [ -z "$(bpftool cgroup show "$cg" 2>/dev/null | tail -n +2)" ]
for _ in $(seq 50); do
	progs_after=$(lism_progs)
	[ "$progs_after" -le "$progs_before" ] && break
	sleep 0.1
done
check "no lism programs left ($progs_before before, $progs_after after)" [ "$progs_after" -le "$progs_before" ]
for c in "$ctr" "$ctr-xdp"; do podman --runtime runc rm -f -t 0 "$c" >/dev/null 2>&1; done
check "no container left" [ -z "$(podman --runtime runc ps -a --format '{{.Names}}' | grep -Fx -e "$ctr" -e "$ctr-xdp")" ]
finish
