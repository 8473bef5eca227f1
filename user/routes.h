/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Node-local scope from the routing table (--local-routes): a destination
 * is on this node if the kernel delivers it locally (an RTN_LOCAL route of
 * one address, /32 or /128, in the local table, on a device that is no
 * dummy: kube-proxy's IPVS mode puts every ClusterIP on the dummy
 * kube-ipvs0) or routes it, without a gateway, straight to a veth or to a
 * bridge whose ports are all veths, on a device that is no uplink (carries
 * no gateway route and no default route).  A veth's other end is always on
 * this host, so a prefix routed there cannot be on another node.
 * Link-local prefixes and addresses (fe80::/10, 169.254/16) never are: the
 * key names no device.
 *
 * Invariant: the scope map holds a LISM_SCOPE_ROUTE entry exactly for each
 * such prefix that no exclusion covers and that has no entry of another
 * value; entries of another value (loopback, load-time addresses,
 * --local-cidr, --exclude-cidr) are never written nor removed here.
 */
#ifndef LISM_ROUTES_H
#define LISM_ROUTES_H

#include <linux/types.h>

#include "cli.h"

/* The parsed model the rule runs on (RTM_GETLINK, RTM_GETROUTE dumps). */
struct lism_route_link {
	int ifindex;
	int master;    /* IFLA_MASTER: the bridge it is a port of, or 0 */
	char kind[16]; /* IFLA_INFO_KIND: "veth", "bridge", "vxlan"...; "" for a physical NIC */
};

struct lism_route {
	struct lism_cidr dst; /* IPv6, or IPv4 as ::ffff:a.b.c.d (/96 + len), as scope.c */
	__u8 family;          /* AF_INET, AF_INET6 */
	__u32 table;          /* RT_TABLE_* (RTA_TABLE) */
	__u8 type;            /* RTN_* */
	__u8 gateway;         /* RTA_GATEWAY, RTA_VIA, RTA_MULTIPATH or RTA_NH_ID */
	int oif;              /* output device, 0: none (a multipath route is one row per hop) */
};

struct lism_route_model {
	const struct lism_route_link *links;
	int n_links;
	const struct lism_route *routes;
	int n_routes;
};

/*
 * The rule, pure: @local[i] = 1 if routes[i] makes its prefix node-local,
 * else 0.  Returns how many are.
 */
int lism_routes_classify(const struct lism_route_model *m, __u8 *local);

struct lism_routes;

struct lism_routes_stats {
	int entries; /* LISM_SCOPE_ROUTE entries in the map after the sync (after a partial one too) */
	int added;
	int removed;
};

/* An rtnetlink socket subscribed to link, IPv4/IPv6 address and route changes.  0 or -errno. */
int lism_routes_open(struct lism_routes **out);
/* Readable when something changed: poll() it, then lism_routes_sync(). */
int lism_routes_fd(const struct lism_routes *r);
/*
 * Drain the notifications; on the first call, after any arrived (or were
 * lost: ENOBUFS) and after a failed call, dump links and routes, classify
 * and reconcile the scope map @scope_fd to the invariant above.  Without
 * news it costs one recv(): calling it on every turn of a loop is fine.
 * Returns the entries added + removed, or -errno (the next call retries):
 * -ENOSPC: the map is full; what fit was done, and @st says what the map
 * holds now; -ETIMEDOUT: the kernel did not answer a dump within 5 s;
 * -EAGAIN: the routes changed during every read.  @st (optional) gets the
 * counts of this call (entries: what the map holds, the last sync's count
 * when this one failed before reconciling).
 */
int lism_routes_sync(struct lism_routes *r, int scope_fd, struct lism_routes_stats *st);
void lism_routes_close(struct lism_routes *r);

/* `lism load --local-routes on`: one sync of @scope_fd from this namespace's routes.  Same return. */
int lism_routes_fill_once(int scope_fd);
/* Remove every LISM_SCOPE_ROUTE entry (--local-routes off over an instance that had them).  Same return. */
int lism_routes_forget(int scope_fd);

#endif
