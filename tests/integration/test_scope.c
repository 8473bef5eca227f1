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
 *
 * The sync runs here, against the scope map of the lism env_up loaded.
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <errno.h>
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
