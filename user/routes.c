// SPDX-License-Identifier: GPL-2.0-only
#include <bpf/bpf.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "lism/abi.h"
#include "routes.h"
#include "scope.h"

/*
 * The rule (routes.h) and why each case is what it is.
 *
 * - RTN_LOCAL in the local table, of one address (/32, /128), not on a
 *   dummy device: the kernel delivers it to this namespace (the node's
 *   addresses, 127.0.0.1).  Only the local table: TPROXY setups put
 *   "local 0.0.0.0/0" in a policy table of their own.  Only host routes: an
 *   AnyIP prefix ("local 10.96.0.0/12 dev lo") is a whole range a node
 *   answers for, typically on another's behalf (Service CIDRs); 127/8 is a
 *   configured entry anyway (scope.c).  Not on a dummy: kube-proxy in IPVS
 *   mode (and kube-router) binds every ClusterIP to the dummy kube-ipvs0
 *   and DNATs it to backends that may be on other nodes; a service address
 *   on a dummy (NodeLocal DNSCache's nodelocaldns, a BGP loopback) is left
 *   out with them: narrower is safe, --local-cidr adds it.  The device is the
 *   route's RTA_OIF (a local-table route has one); one the link dump did
 *   not have (added since: a notification is on its way) is not local yet.
 * - Unicast in the main table, no gateway, out of a veth (or netkit, the
 *   veth's successor): the other end of the pair is in a namespace of this
 *   host.  Calico: a /32 (/128) per pod via its caliXXX veth; kindnet, GKE,
 *   AWS VPC CNI: the same with a per-pod veth; Cilium with endpoint routes:
 *   a /32 via its lxcXXX veth.
 * - The same out of a bridge whose ports are all veths: flannel, the bridge
 *   plugin and kubenet put the node's pod subnet on cni0/cbr0, a bridge of
 *   the pods' veths (so is docker0 of a host's containers).  A bridge with
 *   the uplink, a physical NIC, a VM's tap or a vxlan enslaved reaches other
 *   hosts: not local; nor is one without ports (nothing there yet).
 * - Never on an uplink, a device with a gateway or default route: kind's
 *   node eth0 is a veth (to the docker bridge, other nodes behind it) and
 *   carries the default route, so its /16 would otherwise take every node.
 *   Calico's tunl0/vxlan.calico, flannel.1 and cilium_host carry the routes
 *   to other nodes' pods via gateways.  Cilium without endpoint routes
 *   routes its whole pod CIDR via cilium_host (a veth, but with a gateway):
 *   nothing is local there by this rule; --local-cidr says it instead.
 * - Everything else is not local: gateways (other nodes), blackhole,
 *   unreachable, prohibit, other tables (policy routing we do not follow),
 *   tunnels, physical devices, nexthop objects (RTA_NH_ID: its device is not
 *   in the route), default routes, link-local prefixes and addresses
 *   (fe80::/10, 169.254/16: the same prefix is on every link, the key has
 *   no device; each veth has an fe80::/128 RTN_LOCAL, 2-3 entries a pod of
 *   a 1024-entry map otherwise).
 *   And a prefix is only local if no other main-table route of it is not
 *   (two routes of one prefix, one via a gateway: the kernel may take that one).
 */

static int is_v4(const struct lism_route *r)
{
	return r->family == AF_INET;
}

static int is_default(const struct lism_route *r)
{
	return r->dst.prefixlen == (is_v4(r) ? 96u : 0u);
}

static const struct lism_route_link *link_of(const struct lism_route_model *m, int ifindex)
{
	for (int i = 0; i < m->n_links; i++)
		if (m->links[i].ifindex == ifindex)
			return &m->links[i];
	return NULL;
}

/* Both ends of the pair are on this host. */
static int is_pair(const struct lism_route_link *l)
{
	return !strcmp(l->kind, "veth") || !strcmp(l->kind, "netkit");
}

/* A way off the node: any table's gateway or default route goes out of it. */
static int is_uplink(const struct lism_route_model *m, int ifindex)
{
	for (int i = 0; i < m->n_routes; i++) {
		const struct lism_route *r = &m->routes[i];

		if (r->oif == ifindex && (r->gateway || is_default(r)))
			return 1;
	}
	return 0;
}

static int bridge_of_pairs(const struct lism_route_model *m, int ifindex)
{
	int ports = 0;

	for (int i = 0; i < m->n_links; i++) {
		const struct lism_route_link *p = &m->links[i];

		if (p->master != ifindex)
			continue;
		if (!is_pair(p) || is_uplink(m, p->ifindex))
			return 0;
		ports++;
	}
	return ports > 0;
}

static int route_local(const struct lism_route_model *m, const struct lism_route *r)
{
	const struct lism_route_link *l;

	if (lism_cidr_link_local(&r->dst))
		return 0;
	if (r->type == RTN_LOCAL) {
		/* one address (IPv4 keys are /96 + len: a /32 is 128 too), on a device we know */
		if (r->table != RT_TABLE_LOCAL || r->dst.prefixlen != 128)
			return 0;
		l = link_of(m, r->oif);
		return l && strcmp(l->kind, "dummy");
	}
	if (r->type != RTN_UNICAST || r->table != RT_TABLE_MAIN || r->gateway || !r->oif || is_default(r))
		return 0;
	l = link_of(m, r->oif);
	if (!l || is_uplink(m, r->oif))
		return 0;
	if (is_pair(l))
		return 1;
	return !strcmp(l->kind, "bridge") && bridge_of_pairs(m, r->oif);
}

static int same_dst(const struct lism_route *a, const struct lism_route *b)
{
	return a->family == b->family && a->dst.prefixlen == b->dst.prefixlen &&
	       !memcmp(a->dst.addr, b->dst.addr, 16);
}

int lism_routes_classify(const struct lism_route_model *m, __u8 *local)
{
	int n = 0;

	for (int i = 0; i < m->n_routes; i++)
		local[i] = (__u8)route_local(m, &m->routes[i]);
	for (int i = 0; i < m->n_routes; i++) {
		if (!local[i] || m->routes[i].type == RTN_LOCAL)
			continue;
		for (int j = 0; j < m->n_routes && local[i]; j++) {
			const struct lism_route *o = &m->routes[j];

			if (j != i && !local[j] && o->table == RT_TABLE_MAIN && o->type == RTN_UNICAST &&
			    same_dst(o, &m->routes[i]))
				local[i] = 0;
		}
	}
	for (int i = 0; i < m->n_routes; i++)
		n += local[i];
	return n;
}

/* ---- the scope map ---- */

static int covers(const struct lism_scope_key *p, const struct lism_scope_key *k)
{
	__u32 bytes = p->prefixlen / 8, bits = p->prefixlen % 8;

	if (memcmp(p->addr, k->addr, bytes))
		return 0;
	return !bits || !((p->addr[bytes] ^ k->addr[bytes]) & (__u8)(0xff00 >> bits));
}

/*
 * Whether the entry that decides for @k's addresses without route entries
 * (the longest configured prefix strictly covering it) keeps them out: a
 * route entry must never turn an exclusion into local.
 */
static int excluded(const struct lism_scope_entry *have, int n, const struct lism_scope_key *k)
{
	const struct lism_scope_entry *best = NULL;

	for (int i = 0; i < n; i++) {
		const struct lism_scope_entry *e = &have[i];

		if (e->value == LISM_SCOPE_ROUTE || e->key.prefixlen >= k->prefixlen || !covers(&e->key, k))
			continue;
		if (!best || e->key.prefixlen > best->key.prefixlen)
			best = e;
	}
	return best && !(best->value & LISM_SCOPE_LOCAL);
}

static int same_key(const struct lism_scope_key *a, const struct lism_scope_key *b)
{
	return a->prefixlen == b->prefixlen && !memcmp(a->addr, b->addr, 16);
}

static void key_of(const struct lism_route *r, struct lism_scope_key *k)
{
	memset(k, 0, sizeof(*k));
	k->prefixlen = r->dst.prefixlen;
	memcpy(k->addr, r->dst.addr, 16);
}

/* Make @fd's route entries those of @want (the local rows of @routes). */
static int reconcile(int fd, const struct lism_route *routes, const __u8 *want, int n,
		     struct lism_routes_stats *st)
{
	struct lism_routes_stats s = { 0 };
	struct lism_scope_entry *have = NULL;
	struct lism_scope_key k;
	int n_have = 0, err;

	err = lism_scope_read(fd, &have, &n_have);
	if (err)
		return err;
	/* removals first: they free room for additions in a full map */
	for (int i = 0; i < n_have; i++) {
		int keep = 0;

		if (have[i].value != LISM_SCOPE_ROUTE)
			continue;
		for (int j = 0; j < n && !keep; j++) {
			key_of(&routes[j], &k);
			keep = want[j] && same_key(&k, &have[i].key);
		}
		if (keep && !excluded(have, n_have, &have[i].key)) {
			s.entries++;
			continue;
		}
		if (bpf_map_delete_elem(fd, &have[i].key) && errno != ENOENT) {
			err = err ?: -errno;
			s.entries++;
			continue;
		}
		s.removed++;
	}
	for (int j = 0; j < n; j++) {
		int known = 0;
		__u8 v = LISM_SCOPE_ROUTE;

		if (!want[j])
			continue;
		key_of(&routes[j], &k);
		for (int i = 0; i < n_have && !known; i++)
			known = same_key(&k, &have[i].key);
		/* this prefix's second route (IPv6: one per device): written, and counted, once */
		for (int i = 0; i < j && !known; i++)
			known = want[i] && same_dst(&routes[i], &routes[j]);
		if (known || excluded(have, n_have, &k))
			continue;
		/*
		 * NOEXIST: an entry written meanwhile stays (kernels before 6.13
		 * ignore it in an LPM trie and overwrite: only a concurrent
		 * writer's entry of the same prefix is at stake there).
		 * ENOSPC (the map is full): the rest is tried all the same, and
		 * the count says what is there.
		 */
		if (bpf_map_update_elem(fd, &k, &v, BPF_NOEXIST)) {
			if (errno != EEXIST)
				err = err ?: -errno;
			continue;
		}
		s.added++;
		s.entries++;
	}
	free(have);
	if (st)
		*st = s;
	return err ?: s.added + s.removed;
}

int lism_routes_forget(int scope_fd)
{
	return reconcile(scope_fd, NULL, NULL, 0, NULL);
}

/* ---- rtnetlink ---- */

struct lism_routes {
	struct mnl_socket *events; /* subscribed; only read to learn that something changed */
	struct mnl_socket *dump;   /* our requests and their answers; NULL: open it at the next read */
	unsigned int seq;
	int stale;                 /* dump and reconcile at the next sync */
	int intr;                  /* a dump said NLM_F_DUMP_INTR: it changed while read */
	int entries;               /* route entries after the last reconcile */
	struct lism_route_link *links;
	struct lism_route *routes;
	__u8 *local;
	int n_links, cap_links, n_routes, cap_routes;
	char buf[32768]; /* the kernel sizes dump parts to the reader's buffer */
};

static int grow(void **v, int *cap, int n, size_t size)
{
	void *nv;
	int ncap;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 64;
	nv = realloc(*v, (size_t)ncap * size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

struct attrs {
	const struct nlattr **tb;
	int max;
};

static int attr_cb(const struct nlattr *a, void *data)
{
	const struct attrs *at = data;

	if (mnl_attr_get_type(a) <= at->max)
		at->tb[mnl_attr_get_type(a)] = a;
	return MNL_CB_OK;
}

static __u32 attr_u32(const struct nlattr *a, __u32 dflt)
{
	return a && !mnl_attr_validate(a, MNL_TYPE_U32) ? mnl_attr_get_u32(a) : dflt;
}

static int on_link(const struct nlmsghdr *nlh, void *data)
{
	struct lism_routes *r = data;
	const struct nlattr *tb[IFLA_MAX + 1] = { 0 }, *info[IFLA_INFO_MAX + 1] = { 0 };
	struct attrs at = { tb, IFLA_MAX }, ai = { info, IFLA_INFO_MAX };
	const struct ifinfomsg *ifi = mnl_nlmsg_get_payload(nlh);
	struct lism_route_link *l;

	if (nlh->nlmsg_type != RTM_NEWLINK || mnl_attr_parse(nlh, sizeof(*ifi), attr_cb, &at) < 0)
		return MNL_CB_OK;
	if (grow((void **)&r->links, &r->cap_links, r->n_links, sizeof(*r->links))) {
		errno = ENOMEM;
		return MNL_CB_ERROR;
	}
	l = &r->links[r->n_links++];
	memset(l, 0, sizeof(*l));
	l->ifindex = ifi->ifi_index;
	l->master = (int)attr_u32(tb[IFLA_MASTER], 0);
	if (tb[IFLA_LINKINFO] && mnl_attr_parse_nested(tb[IFLA_LINKINFO], attr_cb, &ai) >= 0 &&
	    info[IFLA_INFO_KIND]) {
		const char *kind = mnl_attr_get_payload(info[IFLA_INFO_KIND]);
		size_t n = strnlen(kind, mnl_attr_get_payload_len(info[IFLA_INFO_KIND]));

		memcpy(l->kind, kind, n < sizeof(l->kind) ? n : sizeof(l->kind) - 1);
	}
	return MNL_CB_OK;
}

static int push_route(struct lism_routes *r, const struct lism_route *rt)
{
	if (grow((void **)&r->routes, &r->cap_routes, r->n_routes, sizeof(*r->routes))) {
		errno = ENOMEM;
		return -1;
	}
	r->routes[r->n_routes++] = *rt;
	return 0;
}

static int on_route(const struct nlmsghdr *nlh, void *data)
{
	struct lism_routes *r = data;
	const struct nlattr *tb[RTA_MAX + 1] = { 0 };
	struct attrs at = { tb, RTA_MAX };
	const struct rtmsg *rtm = mnl_nlmsg_get_payload(nlh);
	struct lism_route rt = { 0 };
	int alen;

	if (nlh->nlmsg_type != RTM_NEWROUTE || mnl_attr_parse(nlh, sizeof(*rtm), attr_cb, &at) < 0)
		return MNL_CB_OK;
	/* other families (multicast, MPLS) answer an AF_UNSPEC dump too; clones are no routes */
	if ((rtm->rtm_family != AF_INET && rtm->rtm_family != AF_INET6) || (rtm->rtm_flags & RTM_F_CLONED))
		return MNL_CB_OK;
	alen = rtm->rtm_family == AF_INET ? 4 : 16;
	if (rtm->rtm_dst_len > alen * 8 || (tb[RTA_DST] && mnl_attr_get_payload_len(tb[RTA_DST]) != alen))
		return MNL_CB_OK;
	rt.family = rtm->rtm_family;
	rt.type = rtm->rtm_type;
	rt.table = attr_u32(tb[RTA_TABLE], rtm->rtm_table);
	rt.oif = (int)attr_u32(tb[RTA_OIF], 0);
	rt.gateway = tb[RTA_GATEWAY] || tb[RTA_VIA] || tb[RTA_MULTIPATH] || tb[RTA_NH_ID];
	/* IPv4 as ::ffff:a.b.c.d, as scope.c and lism_parse_cidr() write it */
	if (alen == 4)
		rt.dst.addr[10] = rt.dst.addr[11] = 0xff;
	if (tb[RTA_DST])
		memcpy(rt.dst.addr + 16 - alen, mnl_attr_get_payload(tb[RTA_DST]), alen);
	rt.dst.prefixlen = rtm->rtm_dst_len + (alen == 4 ? 96 : 0);
	if (push_route(r, &rt))
		return MNL_CB_ERROR;
	if (tb[RTA_MULTIPATH]) { /* one row per hop: each hop's device is an uplink */
		const struct rtnexthop *nh = mnl_attr_get_payload(tb[RTA_MULTIPATH]);
		int len = mnl_attr_get_payload_len(tb[RTA_MULTIPATH]);

		while (len >= (int)sizeof(*nh) && nh->rtnh_len >= sizeof(*nh) && nh->rtnh_len <= len) {
			rt.oif = nh->rtnh_ifindex;
			if (push_route(r, &rt))
				return MNL_CB_ERROR;
			len -= RTNH_ALIGN(nh->rtnh_len);
			nh = RTNH_NEXT(nh);
		}
	}
	return MNL_CB_OK;
}

/* NLMSG_DONE: may carry the dump's error. */
static int on_done(const struct nlmsghdr *nlh, void *data)
{
	(void)data;
	if (mnl_nlmsg_get_payload_len(nlh) >= sizeof(int) && *(int *)mnl_nlmsg_get_payload(nlh) < 0) {
		errno = -*(int *)mnl_nlmsg_get_payload(nlh);
		return MNL_CB_ERROR;
	}
	return MNL_CB_STOP;
}

/*
 * NLMSG_ERROR: the request failed (no dump follows).  With a ctl array of
 * our own, libmnl skips a type without a callback: without this one the
 * error would go unseen and dump() wait for a NLMSG_DONE that never comes.
 */
static int on_error(const struct nlmsghdr *nlh, void *data)
{
	const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);

	(void)data;
	if (mnl_nlmsg_get_payload_len(nlh) < sizeof(*e)) {
		errno = EBADMSG;
		return MNL_CB_ERROR;
	}
	if (!e->error)
		return MNL_CB_STOP; /* an ack */
	errno = e->error < 0 ? -e->error : e->error;
	return MNL_CB_ERROR;
}

/* How long an answer may take: a lost one must not hold the daemon's loop. */
#define DUMP_TIMEOUT_S 5

static void close_dump(struct lism_routes *r)
{
	if (r->dump)
		mnl_socket_close(r->dump);
	r->dump = NULL; /* the next read_model() opens one */
}

static int open_dump(struct lism_routes *r)
{
	struct timeval tv = { .tv_sec = DUMP_TIMEOUT_S };
	int err;

	close_dump(r);
	r->dump = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
	if (r->dump && !mnl_socket_bind(r->dump, 0, MNL_SOCKET_AUTOPID) &&
	    !setsockopt(mnl_socket_get_fd(r->dump), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)))
		return 0;
	err = -errno;
	close_dump(r);
	return err;
}

/*
 * One multi-part dump of @type, all families, through @cb.  0 (r->intr set
 * if the kernel said the dump changed while it was read: then the rest of
 * it is still on the socket) or -errno (-ETIMEDOUT: no answer in time).
 */
static int dump(struct lism_routes *r, int type, mnl_cb_t cb)
{
	static mnl_cb_t ctl[NLMSG_MIN_TYPE] = { [NLMSG_ERROR] = on_error, [NLMSG_DONE] = on_done };
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(r->buf);
	unsigned int portid = mnl_socket_get_portid(r->dump);
	int ret = MNL_CB_OK;

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	nlh->nlmsg_seq = ++r->seq;
	/* zeroed: AF_UNSPEC, every family in one dump */
	mnl_nlmsg_put_extra_header(nlh, type == RTM_GETLINK ? sizeof(struct ifinfomsg) : sizeof(struct rtmsg));
	if (mnl_socket_sendto(r->dump, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	do {
		ssize_t n = mnl_socket_recvfrom(r->dump, r->buf, sizeof(r->buf));

		if (n < 0 && errno == EINTR) /* a signal: the part is still there */
			continue;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
		ret = mnl_cb_run2(r->buf, (size_t)n, r->seq, portid, cb, r, ctl, NLMSG_MIN_TYPE);
	} while (ret > MNL_CB_STOP);
	/*
	 * libmnl (1.0.4 and since) fails a part with a message flagged
	 * NLM_F_DUMP_INTR (EINTR) before any callback sees it: the dump
	 * changed while it was read, read it again.  (No callback of ours
	 * fails with EINTR; were a kernel error one, reading again is right too.)
	 */
	if (ret < 0 && errno == EINTR) {
		r->intr = 1;
		return 0;
	}
	return ret < 0 ? -errno : 0;
}

/* Links and routes of this namespace into r's model, consistent (read again while they change). */
static int read_model(struct lism_routes *r)
{
	for (int tries = 0; tries < 4; tries++) {
		int err = r->dump ? 0 : open_dump(r);

		if (err)
			return err;
		r->n_links = r->n_routes = 0;
		r->intr = 0;
		err = dump(r, RTM_GETLINK, on_link);
		if (!err && !r->intr)
			err = dump(r, RTM_GETROUTE, on_route);
		/* the rest of an abandoned dump would answer the next request: a new socket */
		if (err || r->intr)
			close_dump(r);
		if (err)
			return err;
		if (!r->intr)
			return 0;
	}
	return -EAGAIN; /* changing all the time: the next call tries again */
}

int lism_routes_open(struct lism_routes **out)
{
	struct lism_routes *r = calloc(1, sizeof(*r));
	int rcvbuf = 1 << 20, err;

	if (!r)
		return -ENOMEM;
	r->stale = 1;
	r->events = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (!r->events ||
	    mnl_socket_bind(r->events,
			    RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR | RTMGRP_IPV4_ROUTE |
				    RTMGRP_IPV6_ROUTE,
			    MNL_SOCKET_AUTOPID) < 0) {
		err = -errno;
		lism_routes_close(r);
		return err;
	}
	/* room for a burst (a node's pods starting at once); beyond it ENOBUFS makes a resync */
	setsockopt(mnl_socket_get_fd(r->events), SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	err = open_dump(r);
	if (err) {
		lism_routes_close(r);
		return err;
	}
	*out = r;
	return 0;
}

int lism_routes_fd(const struct lism_routes *r)
{
	return mnl_socket_get_fd(r->events);
}

/* Any notification means "dump again": which one does not matter. */
static int drain(struct lism_routes *r)
{
	for (;;) {
		ssize_t n = recv(mnl_socket_get_fd(r->events), r->buf, sizeof(r->buf), MSG_DONTWAIT);

		if (n >= 0 || errno == ENOBUFS) /* ENOBUFS: some were lost, the dump makes up for them */
			r->stale = 1;
		else if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		else if (errno != EINTR)
			return -errno;
	}
}

int lism_routes_sync(struct lism_routes *r, int scope_fd, struct lism_routes_stats *st)
{
	struct lism_routes_stats s = { .entries = r->entries };
	int err;

	err = drain(r);
	if (!err && r->stale)
		err = read_model(r);
	if (!err && r->stale) {
		struct lism_route_model m = { r->links, r->n_links, r->routes, r->n_routes };
		__u8 *local = realloc(r->local, (size_t)r->n_routes + 1);

		if (local) {
			r->local = local;
			lism_routes_classify(&m, local);
			/* on failure too (ENOSPC: what fit was written), s is what the map holds now */
			err = reconcile(scope_fd, r->routes, local, r->n_routes, &s);
			r->entries = s.entries;
		} else {
			err = -ENOMEM;
		}
	}
	/* a failed call leaves it stale: the next one reads and reconciles again */
	r->stale = err < 0;
	if (st)
		*st = s;
	return err;
}

void lism_routes_close(struct lism_routes *r)
{
	if (!r)
		return;
	if (r->events)
		mnl_socket_close(r->events);
	if (r->dump)
		mnl_socket_close(r->dump);
	free(r->links);
	free(r->routes);
	free(r->local);
	free(r);
}

int lism_routes_fill_once(int scope_fd)
{
	struct lism_routes *r;
	int ret = lism_routes_open(&r);

	if (ret)
		return ret;
	ret = lism_routes_sync(r, scope_fd, NULL);
	lism_routes_close(r);
	return ret;
}
