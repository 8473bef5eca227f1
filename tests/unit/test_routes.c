// SPDX-License-Identifier: GPL-2.0-only
/*
 * The node-local rule of user/routes.h over hand-built models of the
 * routing tables CNIs make.  Each verdict is checked against a twin that
 * differs only in what the rule looks at, so a rule that ignored it fails.
 */
#include <criterion/criterion.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include "routes.h"

#define MAXR 16

struct model {
	struct lism_route_link links[MAXR];
	struct lism_route routes[MAXR];
	int n_links, n_routes;
	__u8 local[MAXR];
};

enum { LO = 1, ETH0, VETH1, VETH2, VETH3, CNI0, TAP0, VXLAN0, TUNL0, IPVS0, GONE };

static void link_add(struct model *m, int ifindex, const char *kind, int master)
{
	struct lism_route_link *l = &m->links[m->n_links++];

	l->ifindex = ifindex;
	l->master = master;
	snprintf(l->kind, sizeof(l->kind), "%s", kind);
}

/* A route to @dst ("default" too); returns its row. */
static int route_add(struct model *m, const char *dst, __u8 type, __u32 table, int gateway, int oif)
{
	struct lism_route *r = &m->routes[m->n_routes];
	int v6 = strchr(dst, ':') != NULL;

	cr_assert_lt(m->n_routes, MAXR);
	memset(r, 0, sizeof(*r));
	r->family = v6 ? AF_INET6 : AF_INET;
	if (!strcmp(dst, "default") || !strcmp(dst, "default6")) {
		r->family = dst[7] ? AF_INET6 : AF_INET;
		cr_assert_eq(lism_parse_cidr(dst[7] ? "::/0" : "0.0.0.0/0", &r->dst), 0);
	} else {
		cr_assert_eq(lism_parse_cidr(dst, &r->dst), 0, "%s", dst);
	}
	r->type = type;
	r->table = table;
	r->gateway = (__u8)gateway;
	r->oif = oif;
	return m->n_routes++;
}

#define MAIN(m, dst, gw, oif) route_add(m, dst, RTN_UNICAST, RT_TABLE_MAIN, gw, oif)

static int classify(struct model *m)
{
	struct lism_route_model rm = { m->links, m->n_links, m->routes, m->n_routes };

	memset(m->local, 0xaa, sizeof(m->local));
	return lism_routes_classify(&rm, m->local);
}

/* A node: lo, a physical eth0 with the default route and the node subnet. */
static void node(struct model *m)
{
	memset(m, 0, sizeof(*m));
	link_add(m, LO, "", 0);
	link_add(m, ETH0, "", 0);
	route_add(m, "default", RTN_UNICAST, RT_TABLE_MAIN, 1, ETH0);
	MAIN(m, "192.168.1.0/24", 0, ETH0);
}

/* Calico, kindnet, GKE, AWS VPC CNI: a /32 per pod via its veth. */
Test(routes, per_pod_veth_host_route_is_local)
{
	struct model m;
	int pod, remote;

	node(&m);
	link_add(&m, VETH1, "veth", 0);
	pod = MAIN(&m, "10.244.0.5/32", 0, VETH1);
	remote = MAIN(&m, "10.244.1.0/24", 1, ETH0); /* another node's pods */
	cr_assert_eq(classify(&m), 1);
	cr_assert_eq(m.local[pod], 1);
	cr_assert_eq(m.local[remote], 0);
	cr_assert_eq(m.local[0], 0, "the default route");
	cr_assert_eq(m.local[1], 0, "the node subnet on the physical NIC");
	/* the same route on a device that is no veth is not local */
	m.links[2].kind[0] = '\0';
	cr_assert_eq(classify(&m), 0);
}

/* flannel, bridge plugin, kubenet: the node's pod subnet on a bridge of veths. */
Test(routes, bridge_subnet_is_local_only_when_all_ports_are_veths)
{
	struct model m;
	int sub;

	node(&m);
	link_add(&m, CNI0, "bridge", 0);
	link_add(&m, VETH1, "veth", CNI0);
	link_add(&m, VETH2, "veth", CNI0);
	sub = MAIN(&m, "10.244.0.0/24", 0, CNI0);
	cr_assert_eq(classify(&m), 1);
	cr_assert_eq(m.local[sub], 1);

	/* the uplink, a VM's tap or a vxlan as one more port: the bridge reaches other hosts */
	static const char *const others[] = { "", "tun", "vxlan" };

	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		node(&m);
		link_add(&m, CNI0, "bridge", 0);
		link_add(&m, VETH1, "veth", CNI0);
		link_add(&m, TAP0, others[i], CNI0);
		sub = MAIN(&m, "10.244.0.0/24", 0, CNI0);
		cr_assert_eq(classify(&m), 0, "a bridge with a '%s' port", others[i]);
		cr_assert_eq(m.local[sub], 0);
	}

	/* no port yet: nothing is there */
	node(&m);
	link_add(&m, CNI0, "bridge", 0);
	link_add(&m, VETH1, "veth", 0); /* a veth, but not its port */
	sub = MAIN(&m, "10.244.0.0/24", 0, CNI0);
	cr_assert_eq(classify(&m), 0);
}

/*
 * kind: the node's eth0 is a veth (to the docker bridge, the other nodes
 * behind it) with routes via gateways: neither its gateway routes nor its
 * own subnet are local, the pods' veths still are.
 */
Test(routes, a_gateway_route_makes_its_device_an_uplink)
{
	struct model m;
	int subnet, remote, pod;

	memset(&m, 0, sizeof(m));
	link_add(&m, ETH0, "veth", 0);
	link_add(&m, VETH1, "veth", 0);
	subnet = MAIN(&m, "172.18.0.0/16", 0, ETH0);
	pod = MAIN(&m, "10.244.0.5/32", 0, VETH1);
	cr_assert_eq(classify(&m), 2, "without a gateway route both veths are local");
	remote = MAIN(&m, "10.244.1.0/24", 1, ETH0);
	cr_assert_eq(classify(&m), 1);
	cr_assert_eq(m.local[subnet], 0, "the uplink's subnet (the other nodes)");
	cr_assert_eq(m.local[remote], 0);
	cr_assert_eq(m.local[pod], 1);

	/* a gateway route in another table makes an uplink too (AWS VPC CNI's per-ENI tables) */
	m.routes[remote].table = 2;
	cr_assert_eq(classify(&m), 1);
	cr_assert_eq(m.local[subnet], 0);

	/* a bridge with an uplink port is not local either */
	memset(&m, 0, sizeof(m));
	link_add(&m, CNI0, "bridge", 0);
	link_add(&m, VETH1, "veth", CNI0);
	subnet = MAIN(&m, "10.244.0.0/24", 0, CNI0);
	cr_assert_eq(classify(&m), 1);
	MAIN(&m, "10.9.0.0/16", 1, VETH1);
	cr_assert_eq(classify(&m), 0);
}

/* Calico's tunl0, flannel.1, cilium_host: remote pods via gateways; Cilium's pod CIDR too. */
Test(routes, tunnels_and_cilium_host_are_not_local)
{
	struct model m;

	node(&m);
	link_add(&m, TUNL0, "ipip", 0);
	link_add(&m, VXLAN0, "vxlan", 0);
	link_add(&m, VETH2, "veth", 0); /* cilium_host */
	MAIN(&m, "10.244.1.0/26", 1, TUNL0);
	MAIN(&m, "10.244.2.0/24", 0, VXLAN0); /* even with no gateway */
	MAIN(&m, "10.0.0.0/24", 1, VETH2);    /* the node's pod CIDR via cilium_host's own address */
	MAIN(&m, "10.0.0.163/32", 0, VETH2);  /* cilium_host's address route */
	cr_assert_eq(classify(&m), 0);
}

Test(routes, the_default_routes_device_is_excluded)
{
	struct model m;
	int sub;

	memset(&m, 0, sizeof(m));
	link_add(&m, VETH1, "veth", 0);
	sub = MAIN(&m, "10.0.2.0/24", 0, VETH1);
	cr_assert_eq(classify(&m), 1);
	route_add(&m, "default", RTN_UNICAST, RT_TABLE_MAIN, 0, VETH1); /* no gateway: still the way out */
	cr_assert_eq(classify(&m), 0);
	cr_assert_eq(m.local[sub], 0);
	cr_assert_eq(m.local[1], 0, "the default route itself");
}

/* Calico's blackhole for its own block; unreachable, prohibit. */
Test(routes, blackhole_and_unreachable_are_not_local)
{
	struct model m;

	node(&m);
	link_add(&m, VETH1, "veth", 0);
	route_add(&m, "10.244.0.0/26", RTN_BLACKHOLE, RT_TABLE_MAIN, 0, 0);
	route_add(&m, "10.244.0.64/26", RTN_UNREACHABLE, RT_TABLE_MAIN, 0, 0);
	route_add(&m, "10.244.0.128/26", RTN_PROHIBIT, RT_TABLE_MAIN, 0, 0);
	/* the type decides, not the device: the same on a veth */
	route_add(&m, "10.244.0.192/26", RTN_BLACKHOLE, RT_TABLE_MAIN, 0, VETH1);
	cr_assert_eq(classify(&m), 0);
	m.routes[m.n_routes - 1].type = RTN_UNICAST;
	cr_assert_eq(classify(&m), 1);
}

Test(routes, other_tables_are_not_local)
{
	struct model m;
	int r, own;

	node(&m);
	link_add(&m, VETH1, "veth", 0);
	r = route_add(&m, "10.244.0.5/32", RTN_UNICAST, 100, 0, VETH1);
	route_add(&m, "0.0.0.0/0", RTN_LOCAL, 100, 0, LO); /* TPROXY: local 0/0 table 100 */
	own = route_add(&m, "10.9.9.9/32", RTN_LOCAL, 100, 0, LO);
	cr_assert_eq(classify(&m), 0);
	m.routes[r].table = RT_TABLE_MAIN;
	m.routes[own].table = RT_TABLE_LOCAL;
	cr_assert_eq(classify(&m), 2);
	cr_assert_eq(m.local[r], 1);
	cr_assert_eq(m.local[own], 1);
}

/* The node's own addresses: RTN_LOCAL in the local table, whatever its device. */
Test(routes, rtn_local_is_local)
{
	struct model m;
	int own, lo, bcast;

	node(&m);
	own = route_add(&m, "192.168.1.10/32", RTN_LOCAL, RT_TABLE_LOCAL, 0, ETH0); /* on the uplink */
	lo = route_add(&m, "127.0.0.1/32", RTN_LOCAL, RT_TABLE_LOCAL, 0, LO);
	bcast = route_add(&m, "192.168.1.255/32", RTN_BROADCAST, RT_TABLE_LOCAL, 0, ETH0);
	cr_assert_eq(classify(&m), 2);
	cr_assert_eq(m.local[own], 1);
	cr_assert_eq(m.local[lo], 1);
	cr_assert_eq(m.local[bcast], 0);
}

/*
 * AnyIP: "local 10.96.0.0/12 dev lo" makes the node answer for a whole
 * range (Service CIDRs, on other nodes' behalf): only an RTN_LOCAL of one
 * address puts it in scope.  127/8 is configured (scope.c), not from here.
 */
Test(routes, rtn_local_counts_only_host_routes)
{
	struct model m;
	int any4, any6, lo8, host4, host6, lo;

	node(&m);
	any4 = route_add(&m, "10.96.0.0/12", RTN_LOCAL, RT_TABLE_LOCAL, 0, LO);
	any6 = route_add(&m, "fd00:96::/108", RTN_LOCAL, RT_TABLE_LOCAL, 0, LO);
	lo8 = route_add(&m, "127.0.0.0/8", RTN_LOCAL, RT_TABLE_LOCAL, 0, LO);
	host4 = route_add(&m, "10.96.0.0/31", RTN_LOCAL, RT_TABLE_LOCAL, 0, LO);
	host6 = route_add(&m, "fd00:96::/127", RTN_LOCAL, RT_TABLE_LOCAL, 0, LO);
	lo = route_add(&m, "127.0.0.1/32", RTN_LOCAL, RT_TABLE_LOCAL, 0, LO);
	cr_assert_eq(classify(&m), 1);
	cr_assert_eq(m.local[any4], 0, "an IPv4 AnyIP prefix");
	cr_assert_eq(m.local[any6], 0, "an IPv6 AnyIP prefix");
	cr_assert_eq(m.local[lo8], 0);
	cr_assert_eq(m.local[host4], 0, "a /31 is two addresses");
	cr_assert_eq(m.local[host6], 0, "a /127 is two addresses");
	cr_assert_eq(m.local[lo], 1);
	/* the same rows as host routes are local */
	cr_assert_eq(lism_parse_cidr("10.96.0.0/32", &m.routes[host4].dst), 0);
	cr_assert_eq(lism_parse_cidr("fd00:96::/128", &m.routes[host6].dst), 0);
	cr_assert_eq(classify(&m), 3);
	cr_assert_eq(m.local[host4], 1);
	cr_assert_eq(m.local[host6], 1);
	cr_assert_eq(m.local[any4], 0);
}

/*
 * Every veth has an fe80::/128 of its own in the local table, and the same
 * address may be on any link: link-local addresses are never local, as
 * link-local prefixes are not (2-3 entries a pod otherwise, of 1024).
 */
Test(routes, rtn_local_link_local_addresses_are_not_local)
{
	struct model m;
	int ll6, ll4, g6, g4;

	node(&m);
	link_add(&m, VETH1, "veth", 0);
	ll6 = route_add(&m, "fe80::a8c1:abff:fe12:3456/128", RTN_LOCAL, RT_TABLE_LOCAL, 0, VETH1);
	ll4 = route_add(&m, "169.254.20.10/32", RTN_LOCAL, RT_TABLE_LOCAL, 0, LO);
	/* twins just outside fe80::/10 and 169.254/16 */
	g6 = route_add(&m, "fec0::a8c1:abff:fe12:3456/128", RTN_LOCAL, RT_TABLE_LOCAL, 0, VETH1);
	g4 = route_add(&m, "169.255.20.10/32", RTN_LOCAL, RT_TABLE_LOCAL, 0, LO);
	cr_assert_eq(classify(&m), 2);
	cr_assert_eq(m.local[ll6], 0, "a veth's fe80:: address");
	cr_assert_eq(m.local[ll4], 0, "a 169.254/16 address");
	cr_assert_eq(m.local[g6], 1);
	cr_assert_eq(m.local[g4], 1);
	/* the other end of the range too */
	cr_assert_eq(lism_parse_cidr("febf::1/128", &m.routes[g6].dst), 0);
	cr_assert_eq(classify(&m), 1);
	cr_assert_eq(m.local[g6], 0);
}

/*
 * kube-proxy in IPVS mode (and kube-router) binds every ClusterIP to the
 * dummy kube-ipvs0: the kernel takes them as its own, then DNATs them to
 * backends that may be on other nodes.  An RTN_LOCAL on a dummy is not
 * local; nor on a device the link dump did not have.
 */
Test(routes, rtn_local_on_a_dummy_is_not_local)
{
	struct model m;
	int svc4, svc6, own, gone;

	node(&m);
	link_add(&m, IPVS0, "dummy", 0);
	svc4 = route_add(&m, "10.96.0.10/32", RTN_LOCAL, RT_TABLE_LOCAL, 0, IPVS0);
	svc6 = route_add(&m, "fd00:96::a/128", RTN_LOCAL, RT_TABLE_LOCAL, 0, IPVS0);
	own = route_add(&m, "192.168.1.10/32", RTN_LOCAL, RT_TABLE_LOCAL, 0, ETH0);
	gone = route_add(&m, "192.168.1.11/32", RTN_LOCAL, RT_TABLE_LOCAL, 0, GONE);
	cr_assert_eq(classify(&m), 1);
	cr_assert_eq(m.local[svc4], 0, "a ClusterIP on kube-ipvs0");
	cr_assert_eq(m.local[svc6], 0, "an IPv6 ClusterIP on kube-ipvs0");
	cr_assert_eq(m.local[own], 1);
	cr_assert_eq(m.local[gone], 0, "a device not in the link dump");
	/* the same addresses on a device of another kind are the node's */
	snprintf(m.links[2].kind, sizeof(m.links[2].kind), "%s", "bond");
	cr_assert_eq(classify(&m), 3);
	cr_assert_eq(m.local[svc4], 1);
	cr_assert_eq(m.local[svc6], 1);
}

Test(routes, ipv6)
{
	struct model m;
	int pod, ll, remote, own, sub;

	memset(&m, 0, sizeof(m));
	link_add(&m, LO, "", 0);
	link_add(&m, ETH0, "", 0);
	link_add(&m, VETH1, "veth", 0);
	link_add(&m, CNI0, "bridge", 0);
	link_add(&m, VETH2, "veth", CNI0);
	route_add(&m, "default6", RTN_UNICAST, RT_TABLE_MAIN, 1, ETH0);
	pod = MAIN(&m, "fd00:10:244::5/128", 0, VETH1);
	sub = MAIN(&m, "fd00:10:245::/64", 0, CNI0);
	ll = MAIN(&m, "fe80::/64", 0, VETH1); /* on every link: the key has no device */
	remote = MAIN(&m, "fd00:10:244:1::/64", 1, ETH0);
	own = route_add(&m, "::1/128", RTN_LOCAL, RT_TABLE_LOCAL, 0, LO);
	cr_assert_eq(classify(&m), 3);
	cr_assert_eq(m.local[pod], 1);
	cr_assert_eq(m.local[sub], 1);
	cr_assert_eq(m.local[ll], 0);
	cr_assert_eq(m.local[remote], 0);
	cr_assert_eq(m.local[own], 1);
	cr_assert_eq(m.routes[pod].dst.prefixlen, 128, "IPv6 keys are not mapped");
	/* the gateway route makes the veth an uplink in IPv6 too */
	MAIN(&m, "fd00:99::/64", 1, VETH1);
	cr_assert_eq(classify(&m), 2);
	cr_assert_eq(m.local[pod], 0);
}

/*
 * A prefix with a second main-table route that is not local (another
 * metric, via a gateway): the kernel may take that one, so not local.
 * Multipath and nexthop-object routes are gateway rows (routes.c).
 */
Test(routes, a_prefix_also_routed_elsewhere_is_not_local)
{
	struct model m;
	int pod;

	node(&m);
	link_add(&m, VETH1, "veth", 0);
	pod = MAIN(&m, "10.244.0.5/32", 0, VETH1);
	cr_assert_eq(classify(&m), 1);
	MAIN(&m, "10.244.0.5/32", 1, ETH0);
	cr_assert_eq(classify(&m), 0);
	cr_assert_eq(m.local[pod], 0);
	/* a same-prefix route elsewhere in another table does not count against it */
	m.routes[m.n_routes - 1].table = 7;
	cr_assert_eq(classify(&m), 1);
}
