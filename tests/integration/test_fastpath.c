// SPDX-License-Identifier: GPL-2.0-only
/*
 * The veth fast path (lism xdp): "pods" are namespaces routed through a
 * "node" namespace, as a routed CNI does it, with kube-proxy's rule that
 * drops conntrack-INVALID packets.  lism runs in the node namespace
 * (nsenter keeps the host's bpffs view; `ip netns exec` would remount
 * /sys), with libxdp's own pins in a test-private directory.
 */
#include <bpf/libbpf.h>
#include <criterion/criterion.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fastpath.h"
#include "harness.h"
#include "pins.h"
#include "traffic.h"
#include "xdp_other.skel.h"

static struct env e;
static char libxdp_dir[PATH_MAX + 16];
static const char *node, *pod_a, *pod_b;

static pid_t daemon_pid = -1;

static void down(void)
{
	if (daemon_pid > 0) {
		kill(daemon_pid, SIGKILL);
		waitpid(daemon_pid, NULL, 0);
		daemon_pid = -1;
	}
	env_down(&e);
	if (libxdp_dir[0])
		sh("rm -rf %s", libxdp_dir);
	libxdp_dir[0] = '\0';
}

/* What this suite tests: where the kernel lacks it, the matrix skips the suite (harness.h). */
static void gate(void)
{
	require_root();
	needs(LISM_F_FASTPATH);
}

TestSuite(fastpath, .init = gate, .fini = down, .timeout = 180);

/* build/lism in the node namespace, with the test's pins. */
static int node_lism(const char *args, char *out, size_t len)
{
	char cmd[PATH_MAX * 3];
	const char *bin = getenv("LISM_BIN");

	snprintf(cmd, sizeof(cmd), "LIBXDP_BPFFS=%s nsenter --net=/run/netns/%s %s %s --pin-path %s 2>&1",
		 libxdp_dir, node, bin ? bin : "build/lism", args, e.pin);
	if (out)
		return sh_out(cmd, out, len);
	return sh("%s >/dev/null", cmd);
}

/* Pod @i (1, 2, ...) at 10.78.@i.2/24 and fd00:78:@i::2/64 behind node-side veth "p@i". */
static const char *add_pod(int i)
{
	const char *ns = env_netns(&e, i == 1 ? "a" : i == 2 ? "b" : "c");

	cr_assert_eq(sh("ip link add eth0 netns %s type veth peer name p%d netns %s && "
			"ip -n %s addr add 10.78.%d.1/24 dev p%d && "
			"ip -n %s addr add fd00:78:%d::1/64 dev p%d nodad && ip -n %s link set p%d up && "
			"ip -n %s addr add 10.78.%d.2/24 dev eth0 && "
			"ip -n %s addr add fd00:78:%d::2/64 dev eth0 nodad && ip -n %s link set eth0 up && "
			"ip -n %s route add default via 10.78.%d.1 && "
			"ip -n %s -6 route add default via fd00:78:%d::1",
			ns, i, node, node, i, i, node, i, i, node, i, ns, i, ns, i, ns, ns, i, ns, i),
		     0, "pod %d", i);
	return ns;
}

/* The node and two pods; @liberal: conntrack's nf_conntrack_tcp_be_liberal there. */
static void node_up(int liberal)
{
	require_root();
	env_up(&e, "");
	snprintf(libxdp_dir, sizeof(libxdp_dir), "%s-libxdp", e.pin);
	cr_assert_eq(sh("mkdir -p %s", libxdp_dir), 0);
	node = env_netns(&e, "node");
	cr_assert_eq(sh("ip netns exec %s sysctl -qw net.ipv4.ip_forward=1 && "
			"ip netns exec %s iptables -A FORWARD -m conntrack --ctstate INVALID -j DROP && "
			"ip netns exec %s iptables -A FORWARD -j ACCEPT && "
			"ip netns exec %s sysctl -qw net.ipv6.conf.all.forwarding=1 && "
			"ip netns exec %s ip6tables -A FORWARD -m conntrack --ctstate INVALID -j DROP && "
			"ip netns exec %s sysctl -qw net.netfilter.nf_conntrack_tcp_be_liberal=%d",
			node, node, node, node, node, node, liberal),
		     0, "node namespace");
	pod_a = add_pod(1);
	pod_b = add_pod(2);
	cr_assert_eq(node_lism("xdp attach --iface 'p*'", NULL, 0), 0, "lism xdp attach");
}

static void xdp_stats(__u64 st[LISM_XDP_STAT_MAX])
{
	cr_assert_eq(lism_fastpath_stats(e.pin, st), 0, "reading the fast path counters");
}

/* Packets the node's stack forwarded (the FORWARD chain's ACCEPT rule). */
static __u64 stack_forwarded(void)
{
	char cmd[256], out[4096];
	unsigned long long pkts = 0;

	snprintf(cmd, sizeof(cmd),
		 "ip netns exec %s iptables -L FORWARD -v -x -n | awk '$3 == \"ACCEPT\" { print $1 }'",
		 node);
	cr_assert_eq(sh_out(cmd, out, sizeof(out)), 0);
	sscanf(out, "%llu", &pkts);
	return pkts;
}

/* An address of @family for the text @addr and @port. */
static socklen_t sockaddr_of(int family, const char *addr, int port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons(port);
		cr_assert_eq(inet_pton(AF_INET6, addr, &a->sin6_addr), 1, "%s", addr);
		return sizeof(*a);
	}
	struct sockaddr_in *a = (struct sockaddr_in *)ss;

	a->sin_family = AF_INET;
	a->sin_port = htons(port);
	cr_assert_eq(inet_pton(AF_INET, addr, &a->sin_addr), 1, "%s", addr);
	return sizeof(*a);
}

static int udp_socket(const char *ns, int family, const char *addr, int port)
{
	struct sockaddr_storage ss;
	socklen_t len = sockaddr_of(family, addr, port, &ss);
	int fd;

	netns_switch(ns);
	fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	netns_switch(NULL);
	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&ss, len), 0, "bind %s:%d: %s", addr, port,
		     strerror(errno));
	return fd;
}

static ssize_t recv_wait(int fd, void *buf, size_t len, struct sockaddr_storage *from,
			 socklen_t *fl, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	*fl = sizeof(*from);
	if (poll(&p, 1, timeout_ms) != 1)
		return -1;
	return recvfrom(fd, buf, len, 0, (struct sockaddr *)from, fl);
}

static size_t dgram_len(int i)
{
	return 1 + (size_t)(i * 7919) % 1400;
}

/* Whether @got is datagram @i: its length and the pattern of seed @i. */
static int is_dgram(const __u8 *got, ssize_t r, int i)
{
	if (r != (ssize_t)dgram_len(i))
		return 0;
	for (ssize_t k = 0; k < r; k++)
		if (got[k] != pattern_at((__u32)i, k))
			return 0;
	return 1;
}

/*
 * Receive datagram @i on @fd within @ms.  One that arrives late (a first
 * packet waits for neighbour discovery) must still be an earlier datagram,
 * byte for byte; anything else fails.  1: got it, 0: timeout.
 */
static int recv_dgram(int fd, int i, __u8 *got, size_t cap, struct sockaddr_storage *from,
		      socklen_t *fl, int ms)
{
	for (;;) {
		ssize_t r = recv_wait(fd, got, cap, from, fl, ms);
		int earlier = 0;

		if (r < 0)
			return 0;
		if (is_dgram(got, r, i))
			return 1;
		for (int j = 0; j < i && !earlier; j++)
			earlier = is_dgram(got, r, j);
		cr_assert(earlier, "datagram %d: got %zd bytes that are no datagram sent", i, r);
	}
}

/*
 * @n datagrams of 1..1400 bytes from pod a to pod b over @family, each
 * echoed by the server and compared with what was sent (pattern of its
 * own seed).  Returns echoes received.
 */
static int udp_echo6(int family, int dport, int n)
{
	const char *a = family == AF_INET6 ? "fd00:78:1::2" : "10.78.1.2";
	const char *b = family == AF_INET6 ? "fd00:78:2::2" : "10.78.2.2";
	int c = udp_socket(pod_a, family, a, 0), s = udp_socket(pod_b, family, b, dport), ok = 0;
	struct sockaddr_storage to, from;
	socklen_t tolen = sockaddr_of(family, b, dport, &to), fl;
	static __u8 msg[1400], got[1500];

	for (int i = 0, tries = 0; i < n; i++) {
		size_t len = dgram_len(i);

		for (size_t k = 0; k < len; k++)
			msg[k] = pattern_at((__u32)i, k);
		cr_assert_eq(sendto(c, msg, len, 0, (struct sockaddr *)&to, tolen), (ssize_t)len);
		/* datagram 0 waits for neighbour discovery on the way: resend it until through */
		if (!recv_dgram(s, i, got, sizeof(got), &from, &fl, i ? 200 : 1000)) {
			if (!i && ++tries < 5)
				i--;
			continue;
		}
		cr_assert_eq(sendto(s, got, len, 0, (struct sockaddr *)&from, fl), (ssize_t)len);
		ok += recv_dgram(c, i, got, sizeof(got), &from, &fl, 200);
	}
	close(c);
	close(s);
	return ok;
}

static int udp_echo(int dport, int n)
{
	return udp_echo6(AF_INET, dport, n);
}

/* 16 MiB each way, checked, then both ends see the other's FIN. */
static void tcp_exact_af(int family, const char *dst, int port_hint)
{
	struct pump_result r;
	int l, c, sv, port = port_hint;
	char b;

	netns_switch(pod_b);
	l = tcp_listen(family, family == AF_INET6 ? "fd00:78:2::2" : "10.78.2.2", &port, 1);
	netns_switch(pod_a);
	c = tcp_connect(family, dst, port_hint ? 80 : port, 1);
	netns_switch(NULL);
	sv = tcp_accept(l, 1, 5000);
	pump(c, sv, 16u << 20, 16u << 20, 64u << 10, 7, 60000, &r);
	cr_assert(r.ok, "%s", r.why);
	/* FIN and its ACK go through the stack: conntrack must still accept them */
	cr_assert_eq(shutdown(c, SHUT_WR), 0);
	cr_assert_eq(shutdown(sv, SHUT_WR), 0);
	set_nonblock(c, 0);
	set_nonblock(sv, 0);
	cr_assert_eq(recv(sv, &b, 1, 0), 0, "the server never saw the client's FIN");
	cr_assert_eq(recv(c, &b, 1, 0), 0, "the client never saw the server's FIN");
	close(c);
	close(sv);
	close(l);
}

static void tcp_exact(const char *dst, int port_hint)
{
	tcp_exact_af(AF_INET, dst, port_hint);
}

Test(fastpath, udp_and_tcp_between_pods_skip_the_node_stack)
{
	__u64 st[LISM_XDP_STAT_MAX], stack, before;
	char out[4096];
	int echoed;

	node_up(1);
	echoed = udp_echo(7000, 2000);
	cr_assert_geq(echoed, 1990, "only %d of 2000 datagrams echoed", echoed);
	xdp_stats(st);
	/* the first datagram each way creates the conntrack entry in the stack */
	cr_assert_geq(st[LISM_XDP_FORWARDED], 2 * 1990 - 4, "forwarded %llu packets",
		      (unsigned long long)st[LISM_XDP_FORWARDED]);
	cr_assert_eq(node_lism("status", out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "veth fast path: "), "%s", out);
	/* the node's FORWARD chain saw only the first datagram each way */
	stack = stack_forwarded();
	cr_assert_leq(stack, 10, "the stack forwarded %llu packets, XDP %llu", (unsigned long long)stack,
		      (unsigned long long)st[LISM_XDP_FORWARDED]);
	before = st[LISM_XDP_FORWARDED];
	tcp_exact("10.78.2.2", 0);
	xdp_stats(st);
	/* ACKs and sub-MTU segments skip the stack; GSO batches cannot */
	cr_assert_gt(st[LISM_XDP_FORWARDED] - before, 500, "forwarded %llu TCP packets",
		     (unsigned long long)(st[LISM_XDP_FORWARDED] - before));
	cr_assert_gt(st[LISM_XDP_TOO_BIG], 0, "no GSO batch went to the stack");
	cr_assert_gt(st[LISM_XDP_TCP_FLAGS], 0, "SYN/FIN never went to the stack");
}

Test(fastpath, ipv6_too)
{
	__u64 st[LISM_XDP_STAT_MAX], before;
	int echoed;

	node_up(1);
	echoed = udp_echo6(AF_INET6, 7004, 1000);
	cr_assert_geq(echoed, 995, "only %d of 1000 datagrams echoed", echoed);
	xdp_stats(st);
	cr_assert_geq(st[LISM_XDP_FORWARDED], 2 * 995 - 4, "forwarded %llu packets",
		      (unsigned long long)st[LISM_XDP_FORWARDED]);
	before = st[LISM_XDP_FORWARDED];
	tcp_exact_af(AF_INET6, "fd00:78:2::2", 0);
	xdp_stats(st);
	cr_assert_gt(st[LISM_XDP_FORWARDED] - before, 500, "forwarded %llu TCP packets",
		     (unsigned long long)(st[LISM_XDP_FORWARDED] - before));
}

Test(fastpath, strict_conntrack_keeps_tcp_in_the_stack)
{
	__u64 st[LISM_XDP_STAT_MAX];
	char out[4096];

	node_up(0);
	tcp_exact("10.78.2.2", 0);
	xdp_stats(st);
	cr_assert_gt(st[LISM_XDP_TCP_STRICT], 1000, "tcp_strict %llu",
		     (unsigned long long)st[LISM_XDP_TCP_STRICT]);
	cr_assert_eq(st[LISM_XDP_FORWARDED], 0, "TCP skipped a strict conntrack");
	cr_assert_eq(node_lism("xdp status", out, sizeof(out)), 0);
	cr_assert(strstr(out, "conntrack tracks windows strictly"), "%s", out);
	cr_assert(strstr(out, "attached to: p1 p2"), "%s", out);
}

Test(fastpath, services_new_flows_and_policy_stay_with_the_stack)
{
	__u64 st[LISM_XDP_STAT_MAX];

	node_up(1);
	/* a ClusterIP Service, kube-proxy style: its replies must be un-NATed by the stack */
	cr_assert_eq(sh("ip netns exec %s iptables -t nat -A PREROUTING -p tcp -d 10.96.0.10 "
			"--dport 80 -j DNAT --to-destination 10.78.2.2:8080",
			node),
		     0);
	tcp_exact("10.96.0.10", 8080);
	xdp_stats(st);
	cr_assert_gt(st[LISM_XDP_NAT], 100, "nat %llu", (unsigned long long)st[LISM_XDP_NAT]);
	cr_assert_eq(st[LISM_XDP_FORWARDED], 0, "a NATed flow skipped the stack");
	/* a policy that drops a flow: it never gets a conntrack entry to ride on */
	cr_assert_eq(sh("ip netns exec %s iptables -I FORWARD -p udp --dport 7001 -j DROP", node), 0);
	cr_assert_eq(udp_echo(7001, 50), 0, "a dropped flow got through");
	xdp_stats(st);
	cr_assert_eq(st[LISM_XDP_FORWARDED], 0);
	cr_assert_geq(st[LISM_XDP_NO_CT], 50, "no_ct %llu", (unsigned long long)st[LISM_XDP_NO_CT]);
}

static int xdp_links(void)
{
	char cmd[256], out[4096];
	int n = 0;

	snprintf(cmd, sizeof(cmd), "ip -n %s -o link show | grep -c ' xdp' || true", node);
	cr_assert_eq(sh_out(cmd, out, sizeof(out)), 0);
	sscanf(out, "%d", &n);
	return n;
}

/* With UDP entries of 5 s, every datagram is within the 10 s refresh margin. */
Test(fastpath, entries_near_their_timeout_go_through_the_stack)
{
	__u64 st[LISM_XDP_STAT_MAX];

	node_up(1);
	cr_assert_eq(sh("ip netns exec %s sysctl -qw net.netfilter.nf_conntrack_udp_timeout=5 "
			"net.netfilter.nf_conntrack_udp_timeout_stream=5",
			node),
		     0);
	cr_assert_geq(udp_echo(7005, 200), 199);
	xdp_stats(st);
	cr_assert_eq(st[LISM_XDP_FORWARDED], 0, "a datagram skipped its conntrack refresh");
	cr_assert_geq(st[LISM_XDP_REFRESH], 2 * 199 - 4, "ct_refresh %llu",
		      (unsigned long long)st[LISM_XDP_REFRESH]);
}

Test(fastpath, new_veths_are_picked_up_and_unload_removes_it_all)
{
	char out[4096], path[PATH_MAX], args[PATH_MAX + 32];

	node_up(1);
	cr_assert_eq(xdp_links(), 2);
	add_pod(3);
	cr_assert_eq(node_lism("xdp attach --iface 'p*'", out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "attached to p3") && !strstr(out, "p1"), "%s", out);
	cr_assert_eq(xdp_links(), 3);
	cr_assert_eq(node_lism("xdp detach", out, sizeof(out)), 0, "%s", out);
	cr_assert_eq(xdp_links(), 0, "programs left after detach");
	lism_pin_join(path, sizeof(path), e.pin, LISM_PIN_XDP_PORTS);
	cr_assert_neq(access(path, F_OK), 0, "%s left after detach", path);
	/* unload of the instance takes the fast path with it */
	cr_assert_eq(node_lism("xdp attach --iface 'p*'", NULL, 0), 0);
	cr_assert_eq(xdp_links(), 3);
	cr_assert_eq(node_lism("unload --timeout 5", out, sizeof(out)), 0, "%s", out);
	e.loaded = 0;
	cr_assert_eq(xdp_links(), 0, "programs left after unload");
	cr_assert_neq(access(e.pin, F_OK), 0, "%s left after unload", e.pin);
	/* the other order: the fast path first, then lism is loaded beside it */
	cr_assert_eq(node_lism("xdp attach --iface 'p*'", NULL, 0), 0);
	snprintf(args, sizeof(args), "load --cgroup %s", e.cgroup);
	cr_assert_eq(node_lism(args, out, sizeof(out)), 0, "%s", out);
	e.loaded = 1;
	cr_assert_eq(node_lism("status", out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "veth fast path: "), "%s", out);
	cr_assert_eq(node_lism("unload --timeout 5", out, sizeof(out)), 0, "%s", out);
	e.loaded = 0;
	cr_assert_eq(xdp_links(), 0, "programs left after the second unload");
	cr_assert_neq(access(e.pin, F_OK), 0, "%s left after the second unload", e.pin);
	cr_assert_eq(sh("find %s -name 'dispatch-*' | grep -q .", libxdp_dir), 1,
		     "libxdp dispatchers left");
}

/* A program lism did not attach (a CNI's) is never replaced, and keeps running. */
Test(fastpath, another_xdp_program_is_left_alone)
{
	struct xdp_other *other;
	char out[4096];
	int ifindex;

	node_up(1);
	cr_assert_eq(node_lism("xdp detach", NULL, 0), 0);
	other = xdp_other__open_and_load();
	cr_assert_not_null(other);
	netns_switch(node);
	ifindex = (int)if_nametoindex("p1");
	cr_assert_eq(bpf_xdp_attach(ifindex, bpf_program__fd(other->progs.xdp_other), XDP_FLAGS_SKB_MODE,
				    NULL),
		     0, "attaching the other program: %s", strerror(errno));
	netns_switch(NULL);
	cr_assert_neq(node_lism("xdp attach --iface 'p*'", out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "attaching the fast path to p1 failed"), "%s", out);
	cr_assert(strstr(out, "fast path attached to p2"), "%s", out);
	/* p1 still runs the other program */
	cr_assert_geq(udp_echo(7003, 20), 19);
	cr_assert_gt(other->bss->seen, 0, "the other program stopped seeing packets");
	cr_assert_eq(node_lism("xdp detach", out, sizeof(out)), 0, "%s", out);
	cr_assert_eq(xdp_links(), 1, "detach touched the other program");
	xdp_other__destroy(other);
}

/*
 * `lism run --iface 'p*' @extra` in the node's namespace with the test's
 * cgroup and pins, metrics on @port; started once it says so.  Its stdout
 * is read into @buf; the pipe is returned.
 */
static int node_daemon(const char *extra, int port, char *buf, size_t len)
{
	char cmd[PATH_MAX * 4];
	const char *bin = getenv("LISM_BIN");
	int out;

	snprintf(cmd, sizeof(cmd),
		 "LIBXDP_BPFFS=%s exec nsenter --net=/run/netns/%s %s run --cgroup %s --pin-path %s "
		 "--metrics-addr 127.0.0.1:%d --iface 'p*' %s",
		 libxdp_dir, node, bin ? bin : "build/lism", e.cgroup, e.pin, port, extra);
	daemon_pid = spawn_sh(cmd, &out);
	cr_assert(wait_output(out, buf, len, "running", 5000), "daemon did not start: %s", buf);
	return out;
}

/* The DaemonSet's way: `lism run --iface`, in the node's namespace, keeps it on new veths. */
Test(fastpath, run_keeps_it_on_new_veths_and_unloads_it_on_exit)
{
	char cmd[PATH_MAX], buf[8192] = "", body[1 << 16];
	int out, port = 30000 + getpid() % 1000;

	node_up(1);
	out = node_daemon("--unload-on-exit", port, buf, sizeof(buf));
	add_pod(3);
	cr_assert(wait_output(out, buf, sizeof(buf), "fast path attached to p3", 5000),
		  "the new veth was not picked up: %s", buf);
	cr_assert_eq(xdp_links(), 3);
	cr_assert_geq(udp_echo(7002, 100), 99);
	usleep(1100 * 1000); /* /metrics reads the maps at most once a second */
	snprintf(cmd, sizeof(cmd), "ip netns exec %s curl -fsS http://127.0.0.1:%d/metrics", node, port);
	cr_assert_eq(sh_out(cmd, body, sizeof(body)), 0);
	cr_assert(strstr(body, "\nlism_xdp_packets_total{result=\"forwarded\",reason=\"\"} "), "%s", body);
	cr_assert(!strstr(body, "\nlism_xdp_packets_total{result=\"forwarded\",reason=\"\"} 0\n"),
		  "nothing forwarded");
	stop_spawned(&daemon_pid, out);
	e.loaded = 0;
	cr_assert_eq(xdp_links(), 0, "programs left after the daemon's unload");
	cr_assert_neq(access(e.pin, F_OK), 0, "%s left", e.pin);
}

/*
 * The daemon's rescan takes the pin lock: between an unload's detach and
 * its unlink it would attach programs that nothing removes any more.
 * While the lock is held (here by the test, as an unload holds it) a new
 * veth waits; once it is free the next rescan picks it up.
 */
Test(fastpath, run_leaves_the_fast_path_alone_while_the_pins_are_locked)
{
	char buf[8192] = "";
	int out, lockfd, port = 31000 + getpid() % 1000;

	node_up(1);
	out = node_daemon("", port, buf, sizeof(buf));
	lockfd = lism_pin_trylock(e.pin);
	cr_assert_geq(lockfd, 0, "locking %s: %s", e.pin, strerror(-lockfd));
	add_pod(3);
	usleep(5000 * 1000); /* two rescans (every 2 s) */
	cr_assert_eq(xdp_links(), 2, "a rescan attached to p3 while the pins were locked");
	close(lockfd);
	cr_assert(wait_output(out, buf, sizeof(buf), "fast path attached to p3", 5000),
		  "the new veth was not picked up once the lock was free: %s", buf);
	cr_assert_eq(xdp_links(), 3);
	stop_spawned(&daemon_pid, out);
}
