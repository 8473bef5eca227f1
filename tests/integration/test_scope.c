// SPDX-License-Identifier: GPL-2.0-only
/*
 * The scope from the node's routes (user/routes.h), on a node built in the
 * test's own network namespace (env_up's "home"):
 *
 *   pod A  10.250.0.5, fd00:250::5   /32 /128 via veth vpa    (kindnet, Calico)
 *   pod B  10.250.0.6, .7, 10.250.9.5 /32 via veth vpb          (.7 and 10.250.9.0/24 excluded)
 *   pod C  on bridge cni0 (10.253.0.1/24) of veths             (flannel, bridge)
 *   br1    10.254.0.1/24, a bridge with a VM's tap port          (not local)
 *   up0    10.251.0.1/24, a veth to a "remote node" netns, with
 *          10.252.0.0/24 via 10.251.0.2 (the remote pods)       (an uplink: not local)
 *   kube-ipvs0  a dummy with ClusterIPs 10.96.0.10, fd00:96::a    (kube-proxy IPVS: not local)
 *   lo     AnyIP 10.97.0.0/16 and fd00:97::/64, 169.254.20.10    (not local)
 *
 * The sync runs here, against the scope map of the lism env_up loaded.
 * Faults of the kernel's answers (an interrupted dump, an error, none at
 * all) are made by this file's mnl_socket_recvfrom() (below).
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "lism/abi.h"
#include "pins.h"
#include "routes.h"
#include "scope.h"
#include "traffic.h"

static struct env e;
static struct lism_routes *routes;
static int scope_fd = -1;

/*
 * Fault injection.  routes.c sends its requests and reads the kernel's
 * answers through libmnl's mnl_socket_sendto() and mnl_socket_recvfrom();
 * the definitions here, in the test binary, take the place of the shared
 * library's (nothing else in it uses libmnl).  They do what libmnl does,
 * and, when a test sets @fault, to the answer to the next @fault_n requests
 * of type @fault_type:
 *   INTR   flag its first part NLM_F_DUMP_INTR (the kernel's "this dump
 *          changed while you read it"; the rest of the dump stays queued);
 *   ERROR  answer NLMSG_ERROR -EOPNOTSUPP instead (the real answer is read
 *          and dropped: an error comes alone);
 *   LOSE   drop every part: the answer never comes.
 */
static enum { PASS, INTR, ERROR, LOSE } fault;
static int fault_type, fault_n, faults; /* faults: made so far */
static int rest_queued;                 /* INTR: a part flagged was not the answer's last */
static int req_type, req_first;         /* the last request; its answer's first part is still to come */

ssize_t mnl_socket_sendto(const struct mnl_socket *nl, const void *buf, size_t len)
{
	static const struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };

	req_type = ((const struct nlmsghdr *)buf)->nlmsg_type;
	req_first = 1;
	return sendto(mnl_socket_get_fd(nl), buf, len, 0, (const struct sockaddr *)&kernel, sizeof(kernel));
}

static ssize_t recv_part(const struct mnl_socket *nl, void *buf, size_t len)
{
	struct sockaddr_nl sa;
	struct iovec iov = { buf, len };
	struct msghdr msg = { .msg_name = &sa, .msg_namelen = sizeof(sa), .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n = recvmsg(mnl_socket_get_fd(nl), &msg, 0);

	if (n >= 0 && (msg.msg_flags & MSG_TRUNC)) {
		errno = ENOSPC;
		return -1;
	}
	return n;
}

/* Whether the part @buf ends the answer (NLMSG_DONE or NLMSG_ERROR). */
static int last_part(const void *buf, ssize_t n)
{
	int len = (int)n;

	for (const struct nlmsghdr *h = buf; mnl_nlmsg_ok(h, len); h = mnl_nlmsg_next(h, &len))
		if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR)
			return 1;
	return 0;
}

ssize_t mnl_socket_recvfrom(const struct mnl_socket *nl, void *buf, size_t len)
{
	ssize_t n = recv_part(nl, buf, len);
	int hit = n > 0 && fault != PASS && fault_n > 0 && req_type == fault_type && req_first;

	if (n > 0)
		req_first = 0;
	if (!hit)
		return n;
	fault_n--;
	faults++;
	if (fault == INTR) {
		((struct nlmsghdr *)buf)->nlmsg_flags |= NLM_F_DUMP_INTR;
		rest_queued |= !last_part(buf, n);
	} else {
		struct nlmsghdr h = *(struct nlmsghdr *)buf, *err;
		struct nlmsgerr *e;

		while (n > 0 && !last_part(buf, n))
			n = recv_part(nl, buf, len);
		if (fault == LOSE) /* the next part is the next request's, or never */
			return n < 0 ? n : recv_part(nl, buf, len);
		err = mnl_nlmsg_put_header(buf);
		err->nlmsg_type = NLMSG_ERROR;
		err->nlmsg_seq = h.nlmsg_seq;
		err->nlmsg_pid = h.nlmsg_pid;
		e = mnl_nlmsg_put_extra_header(err, sizeof(*e));
		e->error = -EOPNOTSUPP;
		e->msg = (struct nlmsghdr){ .nlmsg_len = NLMSG_LENGTH(0), .nlmsg_type = (__u16)req_type };
		n = err->nlmsg_len;
	}
	return n;
}

static void down(void)
{
	lism_routes_close(routes);
	routes = NULL;
	if (scope_fd >= 0)
		close(scope_fd);
	scope_fd = -1;
	env_down(&e);
}

TestSuite(scope, .fini = down, .timeout = 60);

static const char *home, *pod_a, *pod_b;

/* A pod: netns @ns behind veth @veth of the node; @addrs its /32s (and /128s), routed via the veth. */
static void pod(const char *ns, const char *veth, const char *addrs)
{
	char list[256];

	cr_assert_eq(sh("ip -n %s link add %s type veth peer name eth0 netns %s && ip -n %s link set %s up && "
			"ip -n %s link set eth0 up && ip -n %s route add default dev eth0",
			home, veth, ns, home, veth, ns, ns),
		     0);
	snprintf(list, sizeof(list), "%s", addrs);
	for (char *a = strtok(list, " "); a; a = strtok(NULL, " ")) {
		int v6 = strchr(a, ':') != NULL;

		cr_assert_eq(sh("ip -n %s addr add %s/%d dev eth0 %s && ip -n %s route add %s/%d dev %s", ns, a,
				v6 ? 128 : 32, v6 ? "nodad" : "", home, a, v6 ? 128 : 32, veth),
			     0, "pod address %s", a);
	}
}

static void node(void)
{
	const char *pod_c, *remote;

	require_root();
	env_up(&e, "--exclude-cidr 10.250.0.7,10.250.9.0/24");
	home = e.netns[0];
	pod_a = env_netns(&e, "pa");
	pod_b = env_netns(&e, "pb");
	pod_c = env_netns(&e, "pc");
	remote = env_netns(&e, "rn");
	/* addresses final at once: no DAD completing later changes the routes under a test */
	cr_assert_eq(sh("ip netns exec %s sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0",
			home),
		     0);
	pod(pod_a, "vpa", "10.250.0.5 fd00:250::5");
	pod(pod_b, "vpb", "10.250.0.6 10.250.0.7 10.250.9.5");
	cr_assert_eq(sh("ip -n %s link add cni0 type bridge && ip -n %s addr add 10.253.0.1/24 dev cni0 && "
			"ip -n %s link add vpc type veth peer name eth0 netns %s && ip -n %s link set vpc master cni0 && "
			"ip -n %s link set vpc up && ip -n %s link set cni0 up && ip -n %s link set eth0 up && "
			"ip -n %s addr add 10.253.0.5/24 dev eth0",
			home, home, home, pod_c, home, home, home, pod_c, pod_c),
		     0);
	/* a VM's tap beside a veth: the bridge reaches beyond this host's namespaces */
	cr_assert_eq(sh("ip -n %s link add br1 type bridge && ip -n %s tuntap add mode tap tp1 && "
			"ip -n %s link set tp1 master br1 && ip -n %s link set tp1 up && ip -n %s link set br1 up && "
			"ip -n %s addr add 10.254.0.1/24 dev br1",
			home, home, home, home, home, home),
		     0);
	cr_assert_eq(sh("ip -n %s link add up0 type veth peer name eth0 netns %s && ip -n %s link set up0 up && "
			"ip -n %s link set eth0 up && ip -n %s addr add 10.251.0.1/24 dev up0 && "
			"ip -n %s addr add 10.251.0.2/24 dev eth0 && ip -n %s route add 10.252.0.0/24 via 10.251.0.2",
			home, remote, home, remote, home, remote, home),
		     0);
	/*
	 * kube-proxy's IPVS mode (ClusterIPs on the dummy kube-ipvs0) is the
	 * unit tests' (routes/rtn_local_on_a_dummy_is_not_local): these
	 * machines' kernels have no dummy device to build it with.
	 */
	/* AnyIP ranges, and a link-local address, the node's own */
	cr_assert_eq(sh("ip -n %s route add local 10.97.0.0/16 dev lo && ip -n %s route add local fd00:97::/64 dev lo && "
			"ip -n %s addr add 169.254.20.10/32 dev lo",
			home, home, home),
		     0);
	scope_fd = lism_pin_open(e.pin, "scope");
	cr_assert_geq(scope_fd, 0, "%s", strerror(-scope_fd));
	cr_assert_eq(lism_routes_open(&routes), 0);
}

static struct lism_scope_key key(const char *cidr)
{
	struct lism_scope_key k = { 0 };
	struct lism_cidr c;

	cr_assert_eq(lism_parse_cidr(cidr, &c), 0, "%s", cidr);
	k.prefixlen = c.prefixlen;
	memcpy(k.addr, c.addr, 16);
	return k;
}

/* What the handshake's in_scope() finds for @addr: the value of the longest match, 0 for none. */
static __u8 verdict(const char *addr)
{
	struct lism_scope_key k = key(addr);
	__u8 v = 0;

	if (bpf_map_lookup_elem(scope_fd, &k, &v))
		cr_assert_eq(errno, ENOENT, "lookup %s: %s", addr, strerror(errno));
	return v;
}

/* The entry of exactly @cidr (0: none), and how many entries of @value there are. */
static __u8 entry(const char *cidr, __u8 value, int *n_value)
{
	struct lism_scope_key k = key(cidr);
	struct lism_scope_entry *v;
	__u8 found = 0;
	int n;

	cr_assert_eq(lism_scope_read(scope_fd, &v, &n), 0);
	if (n_value)
		*n_value = 0;
	for (int i = 0; i < n; i++) {
		if (v[i].key.prefixlen == k.prefixlen && !memcmp(v[i].key.addr, k.addr, 16))
			found = v[i].value;
		if (n_value && v[i].value == value)
			(*n_value)++;
	}
	free(v);
	return found;
}

/* How many route entries lie within @cidr. */
static int route_entries_in(const char *cidr)
{
	struct lism_scope_key p = key(cidr);
	struct lism_scope_entry *v;
	int n, in = 0;

	cr_assert_eq(lism_scope_read(scope_fd, &v, &n), 0);
	for (int i = 0; i < n; i++) {
		__u32 bytes = p.prefixlen / 8, bits = p.prefixlen % 8;

		if (v[i].value != LISM_SCOPE_ROUTE || v[i].key.prefixlen < p.prefixlen ||
		    memcmp(v[i].key.addr, p.addr, bytes))
			continue;
		in += !bits || !((v[i].key.addr[bytes] ^ p.addr[bytes]) & (__u8)(0xff00 >> bits));
	}
	free(v);
	return in;
}

static int sync_ok(struct lism_routes_stats *st)
{
	int n = lism_routes_sync(routes, scope_fd, st);

	cr_assert_geq(n, 0, "sync: %s", strerror(-n));
	return n;
}

/* Sync on each notification until @addr's verdict is @want, within 3 s; 0 if it never was. */
static int follow_until(const char *addr, __u8 want)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd p = { .fd = lism_routes_fd(routes), .events = POLLIN };
		long ms;

		clock_gettime(CLOCK_MONOTONIC, &t);
		ms = 3000 - ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (ms <= 0 || poll(&p, 1, (int)ms) <= 0)
			return 0;
		sync_ok(NULL);
		if (verdict(addr) == want)
			return 1;
	}
}

Test(scope, local_routes_follow_the_nodes_pods)
{
	struct lism_routes_stats st;
	struct lism_scope_key stale = key("10.99.0.0/24");
	__u8 route = LISM_SCOPE_ROUTE;
	int n_conf, n_conf_after, n_route;

	node();
	/* a route entry a previous daemon left for a prefix that is no longer local */
	cr_assert_eq(bpf_map_update_elem(scope_fd, &stale, &route, BPF_NOEXIST), 0);
	entry("10.99.0.0/24", LISM_SCOPE_LOCAL, &n_conf);

	cr_assert_gt(sync_ok(&st), 0);
	cr_assert_eq(st.removed, 1, "the stale route entry");
	cr_assert_eq(entry("10.99.0.0/24", 0, NULL), 0);
	cr_assert_eq(entry("10.250.0.5/32", 0, NULL), LISM_SCOPE_ROUTE, "pod A (veth /32)");
	cr_assert_eq(entry("fd00:250::5/128", 0, NULL), LISM_SCOPE_ROUTE, "pod A (veth /128)");
	cr_assert_eq(entry("10.250.0.6/32", 0, NULL), LISM_SCOPE_ROUTE, "pod B");
	cr_assert_eq(entry("10.253.0.0/24", 0, NULL), LISM_SCOPE_ROUTE, "the bridge of veths");
	cr_assert_eq(entry("10.253.0.1/32", 0, NULL), LISM_SCOPE_ROUTE, "the node's address (RTN_LOCAL)");
	cr_assert_eq(entry("10.251.0.1/32", 0, NULL), LISM_SCOPE_ROUTE, "the node's address on its uplink");
	cr_assert_eq(verdict("10.250.0.5"), LISM_SCOPE_ROUTE);
	cr_assert_eq(verdict("10.253.0.77"), LISM_SCOPE_ROUTE, "a pod on the bridge");

	cr_assert_eq(verdict("10.251.0.2"), 0, "the uplink's subnet (the remote node)");
	cr_assert_eq(entry("10.251.0.0/24", 0, NULL), 0);
	cr_assert_eq(verdict("10.252.0.9"), 0, "a remote pod (via a gateway)");
	cr_assert_eq(verdict("10.254.0.9"), 0, "a bridge with a port that is no veth");
	cr_assert_eq(entry("10.254.0.0/24", 0, NULL), 0);
	cr_assert_eq(entry("fe80::/64", 0, NULL), 0, "link-local prefixes are on every veth");
	cr_assert_eq(route_entries_in("fe80::/10"), 0, "the veths' own fe80:: addresses");
	cr_assert_eq(entry("169.254.20.10/32", 0, NULL), 0, "a link-local address");
	/* RTN_LOCAL: one address only (not on a dummy: the unit tests) */
	cr_assert_eq(entry("10.97.0.0/16", 0, NULL), 0, "an AnyIP range");
	cr_assert_eq(entry("fd00:97::/64", 0, NULL), 0, "an IPv6 AnyIP range");
	cr_assert_eq(verdict("10.97.0.5"), 0);

	/* exclusions win: the same prefix, and a wider one */
	cr_assert_eq(entry("10.250.0.7/32", 0, NULL), LISM_SCOPE_EXCLUDE);
	cr_assert_eq(verdict("10.250.9.5"), LISM_SCOPE_EXCLUDE);
	cr_assert_eq(entry("10.250.9.5/32", 0, NULL), 0);
	/* and every configured entry is as it was */
	entry("10.99.0.0/24", LISM_SCOPE_LOCAL, &n_conf_after);
	cr_assert_eq(n_conf_after, n_conf);
	entry("10.99.0.0/24", LISM_SCOPE_ROUTE, &n_route);
	cr_assert_eq(st.entries, n_route);

	/* nothing changed: no notification, nothing to do */
	cr_assert_eq(sync_ok(&st), 0);
	cr_assert_eq(st.added + st.removed, 0);

	/* a pod comes: its route shows up through a notification */
	const char *pod_d = env_netns(&e, "pd");

	pod(pod_d, "vpd", "10.250.0.8");
	cr_assert(follow_until("10.250.0.8", LISM_SCOPE_ROUTE), "the new pod's route did not come");
	cr_assert_eq(entry("10.250.0.8/32", 0, NULL), LISM_SCOPE_ROUTE);
	/* and goes */
	cr_assert_eq(sh("ip -n %s link del vpd", home), 0);
	cr_assert(follow_until("10.250.0.8", 0), "the gone pod's route stayed");
	cr_assert_eq(verdict("10.250.0.5"), LISM_SCOPE_ROUTE, "the other pods stay");

	/* a gateway route through pod A's veth makes it an uplink: its pod is no longer local */
	cr_assert_eq(sh("ip -n %s route add 10.77.0.0/16 via 10.250.0.5 dev vpa onlink", home), 0);
	cr_assert(follow_until("10.250.0.5", 0), "a veth with a gateway route stayed local");
	cr_assert_eq(verdict("10.250.0.6"), LISM_SCOPE_ROUTE, "pod B's veth is no uplink");
	/* so does a hop of a multipath route (RTA_MULTIPATH: no RTA_OIF, a device per hop) */
	cr_assert_eq(sh("ip -n %s route add 10.78.0.0/16 nexthop via 10.250.0.5 dev vpa onlink "
			"nexthop via 10.250.0.6 dev vpb onlink",
			home),
		     0);
	cr_assert(follow_until("10.250.0.6", 0), "a veth with a multipath hop stayed local");
	cr_assert_eq(verdict("10.253.0.77"), LISM_SCOPE_ROUTE, "the bridge is no uplink");
}

/* A burst that overflows the notification socket (ENOBUFS) is made up for by the dump. */
Test(scope, a_lost_notification_burst_resyncs)
{
	struct lism_routes_stats st;
	int small = 1;
	FILE *f;
	char path[] = "/tmp/lism-scope-batch-XXXXXX";
	int fd;

	node();
	sync_ok(&st);
	cr_assert_eq(setsockopt(lism_routes_fd(routes), SOL_SOCKET, SO_RCVBUFFORCE, &small, sizeof(small)), 0);
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	f = fdopen(fd, "w");
	for (int i = 1; i <= 200; i++)
		fprintf(f, "route add 10.248.%d.%d/32 dev vpa\n", i / 250, i % 250);
	fclose(f);
	cr_assert_eq(sh("ip -n %s -batch %s", home, path), 0);
	unlink(path);
	cr_assert_eq(sync_ok(&st), 200, "added %d removed %d", st.added, st.removed);
	for (int i = 1; i <= 200; i++) {
		char a[32];

		snprintf(a, sizeof(a), "10.248.%d.%d", i / 250, i % 250);
		cr_assert_eq(verdict(a), LISM_SCOPE_ROUTE, "%s", a);
	}
}

/*
 * The handshake proposes to a route entry (it tests the LOCAL bit), not to
 * an exclusion nor beyond the uplink; forget removes the route entries only,
 * and fill_once (lism load) brings them back.
 */
Test(scope, the_handshake_proposes_to_route_entries)
{
	struct lism_snapshot st;
	int port = 0, l, c, s, n_excl, n_excl_after, n_route;

	node();
	cr_assert_gt(lism_routes_fill_once(scope_fd), 0);
	entry("10.250.0.5/32", LISM_SCOPE_EXCLUDE, &n_excl);
	env_enter(&e);
	netns_switch(pod_a);
	l = tcp_listen(AF_INET, "10.250.0.5", &port, 1);
	netns_switch(NULL);
	c = tcp_connect(AF_INET, "10.250.0.5", port, 1);
	s = tcp_accept(l, 1, 5000);
	snap(&e, &st);
	cr_assert_eq(st.stats[LISM_S_PROPOSALS_SENT], 1, "no proposal to a pod of a route entry");
	close(c);
	close(s);
	close(l);

	netns_switch(pod_b);
	l = tcp_listen(AF_INET, "0.0.0.0", &port, 1);
	netns_switch(NULL);
	c = tcp_connect(AF_INET, "10.250.0.7", port, 1); /* excluded */
	s = tcp_accept(l, 1, 5000);
	close(c);
	close(s);
	close(l);
	snap(&e, &st);
	cr_assert_eq(st.stats[LISM_S_PROPOSALS_SENT], 1, "a proposal to an excluded pod");

	cr_assert_gt(lism_routes_forget(scope_fd), 0);
	entry("10.250.0.5/32", LISM_SCOPE_ROUTE, &n_route);
	entry("10.250.0.5/32", LISM_SCOPE_EXCLUDE, &n_excl_after);
	cr_assert_eq(n_route, 0);
	cr_assert_eq(n_excl_after, n_excl);
	cr_assert_eq(verdict("10.250.0.5"), 0);
	cr_assert_gt(lism_routes_fill_once(scope_fd), 0);
	cr_assert_eq(verdict("10.250.0.5"), LISM_SCOPE_ROUTE);
	env_leave(&e);
}

/* Links enough that the link dump comes in several parts (an abandoned one leaves the rest queued). */
static void many_links(int n)
{
	char path[] = "/tmp/lism-scope-links-XXXXXX";
	int fd = mkstemp(path);
	FILE *f;

	cr_assert_geq(fd, 0);
	f = fdopen(fd, "w");
	for (int i = 0; i < n / 2; i++)
		fprintf(f, "link add lsd%d type veth peer name lsp%d\n", i, i);
	fclose(f);
	cr_assert_eq(sh("ip -n %s -batch %s", home, path), 0);
	unlink(path);
}

/*
 * A dump the kernel flags NLM_F_DUMP_INTR (links or routes changed while
 * it was read) is read again, from a fresh socket (the rest of the old
 * dump is still queued); a dump interrupted every time is -EAGAIN, not
 * -EINTR, after a bounded number of tries, and the next sync succeeds.
 */
Test(scope, an_interrupted_dump_is_read_again)
{
	struct lism_routes_stats st;
	int n;

	node();
	many_links(150);
	fault = INTR;
	fault_type = RTM_GETLINK;
	fault_n = 1;
	n = lism_routes_sync(routes, scope_fd, &st);
	cr_assert_gt(n, 0, "sync: %s", strerror(-n));
	cr_assert_eq(faults, 1);
	cr_assert(rest_queued, "the link dump was one part: nothing of it was left to abandon");
	cr_assert_eq(verdict("10.250.0.5"), LISM_SCOPE_ROUTE);
	cr_assert_eq(verdict("10.253.0.77"), LISM_SCOPE_ROUTE);

	/* the route dump too, every time it is read */
	cr_assert_eq(sh("ip -n %s route add 10.248.0.1/32 dev vpa", home), 0);
	fault_type = RTM_GETROUTE;
	fault_n = 1000;
	faults = 0;
	n = lism_routes_sync(routes, scope_fd, &st);
	cr_assert_eq(n, -EAGAIN, "sync: %s", strerror(-n));
	cr_assert_geq(faults, 2, "read again");
	cr_assert_leq(faults, 8, "tries are bounded");
	cr_assert_eq(verdict("10.248.0.1"), 0, "nothing reconciled from an inconsistent read");
	/* it stays stale: the next sync reads without news */
	fault = PASS;
	cr_assert_eq(sync_ok(&st), 1);
	cr_assert_eq(st.added, 1);
	cr_assert_eq(verdict("10.248.0.1"), LISM_SCOPE_ROUTE);
}

/* NLMSG_ERROR instead of a dump: that error, not a wait for a NLMSG_DONE that never comes. */
Test(scope, a_dump_answered_by_an_error_fails_with_it)
{
	struct lism_routes_stats st;
	int n;

	node();
	fault = ERROR;
	fault_type = RTM_GETROUTE;
	fault_n = 1;
	n = lism_routes_sync(routes, scope_fd, &st);
	cr_assert_eq(n, -EOPNOTSUPP, "sync: %s", strerror(-n));
	cr_assert_eq(faults, 1);
	cr_assert_eq(verdict("10.250.0.5"), 0);
	fault = PASS;
	cr_assert_gt(sync_ok(&st), 0);
	cr_assert_eq(verdict("10.250.0.5"), LISM_SCOPE_ROUTE);
}

/* A lost answer: -ETIMEDOUT after the dump socket's 5 s, not a daemon stuck in recv. */
Test(scope, a_lost_answer_times_out, .timeout = 120) /* its netns setup takes 30 s under TCG (make vmtest) */
{
	struct lism_routes_stats st;
	struct timespec t0, t;
	double s;
	int n;

	node();
	fault = LOSE;
	fault_type = RTM_GETLINK;
	fault_n = 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	n = lism_routes_sync(routes, scope_fd, &st);
	clock_gettime(CLOCK_MONOTONIC, &t);
	s = (double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9;
	cr_assert_eq(n, -ETIMEDOUT, "sync: %s", strerror(-n));
	cr_assert_eq(faults, 1);
	cr_assert(s > 4.5 && s < 15, "timed out after %.1f s", s);
	fault = PASS;
	cr_assert_gt(sync_ok(&st), 0);
	cr_assert_eq(verdict("10.250.0.5"), LISM_SCOPE_ROUTE);
}

/*
 * A full map: what fits is written, the sync says -ENOSPC (and stays
 * stale), and st.entries is the route entries the map holds; once there is
 * room, the rest comes.
 */
Test(scope, a_full_map_takes_what_fits)
{
	struct lism_routes_stats st;
	struct bpf_map_info info = { 0 };
	__u32 info_len = sizeof(info);
	struct lism_scope_entry *v;
	__u8 local = LISM_SCOPE_LOCAL;
	int n, total, fillers = 0, w, in_map;
	struct lism_scope_key k;

	node();
	sync_ok(&st);
	w = st.entries;
	entry("10.99.0.0/24", LISM_SCOPE_ROUTE, &in_map);
	cr_assert_eq(in_map, w);
	cr_assert_eq(bpf_obj_get_info_by_fd(scope_fd, &info, &info_len), 0);
	cr_assert_eq(lism_scope_read(scope_fd, &v, &total), 0);
	free(v);
	/* fill it with configured entries (10.200/16 is nobody's) */
	for (; total + fillers < (int)info.max_entries; fillers++) {
		k = key("10.200.0.0/32");
		k.addr[14] = (__u8)(fillers >> 8);
		k.addr[15] = (__u8)fillers;
		cr_assert_eq(bpf_map_update_elem(scope_fd, &k, &local, BPF_NOEXIST), 0, "filler %d: %s", fillers,
			     strerror(errno));
	}
	k.addr[15]++;
	cr_assert_neq(bpf_map_update_elem(scope_fd, &k, &local, BPF_NOEXIST), 0);
	cr_assert_eq(errno, ENOSPC);
	/* three route entries gone, one more filler: room for two; a new pod route: four missing */
	k = key("10.250.0.5/32");
	cr_assert_eq(bpf_map_delete_elem(scope_fd, &k), 0);
	k = key("fd00:250::5/128");
	cr_assert_eq(bpf_map_delete_elem(scope_fd, &k), 0);
	k = key("10.250.0.6/32");
	cr_assert_eq(bpf_map_delete_elem(scope_fd, &k), 0);
	k = key("10.201.0.1/32");
	cr_assert_eq(bpf_map_update_elem(scope_fd, &k, &local, BPF_NOEXIST), 0);
	cr_assert_eq(sh("ip -n %s route add 10.248.0.1/32 dev vpa", home), 0);

	n = lism_routes_sync(routes, scope_fd, &st);
	cr_assert_eq(n, -ENOSPC, "sync: %s", strerror(-n));
	cr_assert_eq(st.added, 2);
	cr_assert_eq(st.removed, 0);
	entry("10.99.0.0/24", LISM_SCOPE_ROUTE, &in_map);
	cr_assert_eq(in_map, w - 1);
	cr_assert_eq(st.entries, in_map, "entries: what the map holds");
	/* still full, still stale: the same again, without news */
	n = lism_routes_sync(routes, scope_fd, &st);
	cr_assert_eq(n, -ENOSPC);
	cr_assert_eq(st.added, 0);
	cr_assert_eq(st.entries, in_map);

	/* room again: the rest comes at the next sync */
	k = key("10.201.0.1/32");
	cr_assert_eq(bpf_map_delete_elem(scope_fd, &k), 0);
	k = key("10.200.0.0/32");
	cr_assert_eq(bpf_map_delete_elem(scope_fd, &k), 0);
	cr_assert_eq(sync_ok(&st), 2);
	entry("10.99.0.0/24", LISM_SCOPE_ROUTE, &in_map);
	cr_assert_eq(in_map, w + 1);
	cr_assert_eq(st.entries, in_map);
	cr_assert_eq(verdict("10.248.0.1"), LISM_SCOPE_ROUTE);
}
