/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Which connections engage: every decision the handshake takes before a
 * connection end gets a DMB entry, here and nowhere else.  In the order
 * they are asked (the reasons are include/lism/reason.h's):
 *
 *   1. scope: the peer may be on this host (the scope map)     no option, no state
 *   2. one lism per socket: a nearer instance owns it          nested-instance
 *   3. churn: this destination's connections are short         short-lived
 *   4. the device is active                                     inactive
 *   5. the server port (--exclude-port, --include-port)         policy
 *   6. a blocking socket (unless --allow-blocking)              blocking
 *
 * The active end asks all six at connect(), the passive end 4-6 for the
 * SYN it answers (policy_decline(), then policy_decline_blocking()), and
 * 2 again once established.  After engagement, which members' sends run
 * the data path is the sender rules' (sender.h); a sender's send takes the
 * shortcut whenever order and the peer's DMB bound allow (shortcut.bpf.c).
 * docs/semantics.md says the same for users.
 */
#ifndef LISM_POLICY_BPF_H
#define LISM_POLICY_BPF_H

#include "addr.bpf.h"
#include "storage.bpf.h"

/* 1: the option goes only toward destinations that can be on this host. */
static __always_inline int policy_in_scope(const struct addr6 *a)
{
	struct lism_scope_key k = { .prefixlen = 128 };
	__u8 *v;

	__builtin_memcpy(k.addr, a->w, 16);
	v = bpf_map_lookup_elem(&scope, &k);
	return v && (*v & LISM_SCOPE_LOCAL); /* LOCAL or ROUTE (abi.h); EXCLUDE is not */
}

/*
 * 2: one lism per socket.  A cgroup's programs run before its parent's, so an
 * instance attached nearer the socket (a pod's, a test's, under a node-wide
 * one) has seen it first and made its storage: that instance owns it, and
 * this one leaves its option, callbacks and maps alone.
 */
static __noinline int policy_nested(__u64 sk, __u32 own_socks)
{
	/* a kernel that lays storage out otherwise loses only this check, not the handshake */
	if (!STORAGE_READABLE())
		return 0;
	return storage_find((const struct sock *)sk, own_socks, STORAGE_OTHER_LISM) != 0;
}

static __always_inline void churn_key(struct bpf_sock_ops *s, const struct addr6 *r,
				      struct lism_churn_key *k)
{
	k->netns = bpf_get_netns_cookie(s);
	__builtin_memcpy(k->addr, r->w, 16);
	k->port = sockops_rport(s);
}

static __always_inline __u64 churn_window_ns(const struct lism_device *d)
{
	return (__u64)d->churn_window_ms * 1000000;
}

/* 3: whether this connection skips the shortcut: its destination churns (churn.h). */
static __always_inline int policy_churn_skip(struct bpf_sock_ops *s, const struct lism_device *d,
					     const struct addr6 *r)
{
	struct lism_churn_key k = {};
	struct lism_churn *c;

	if (d->flags & LISM_DEV_F_NO_CHURN_DETECT)
		return 0;
	churn_key(s, r, &k);
	c = bpf_map_lookup_elem(&churn, &k);
	return c && lism_churn_skip(c, bpf_ktime_get_ns(), churn_window_ns(d));
}

/* 3, fed: the active end of a confirmed connection closes: score what it moved. */
static __always_inline void policy_churn_score(struct bpf_sock_ops *s, const struct lism_sk *st,
					       const struct lism_dmb *e)
{
	struct lism_device *d = lism_dev();
	struct lism_churn_key k = {};
	__u64 now = bpf_ktime_get_ns();
	struct lism_churn *c;
	struct addr6 r;
	int is_short;

	if (!d || (d->flags & LISM_DEV_F_NO_CHURN_DETECT))
		return;
	/* what went through the shortcut, and what went over TCP either way */
	is_short = lism_churn_is_short(
		lism_churn_units(st->sent, e->rx_msgs + s->data_segs_in +
					   (st->sender == LISM_SND_JOINED ? 0 : s->data_segs_out),
				 e->rx_bytes + s->bytes_received + s->bytes_acked),
		now - e->created_ns);
	if (is_short)
		stat_add(LISM_S_SHORT_CONNS, 1);
	sockops_remote(s, &r);
	churn_key(s, &r, &k);
	c = bpf_map_lookup_elem(&churn, &k);
	if (c) {
		lism_churn_closed(c, is_short, now, churn_window_ns(d));
	} else if (is_short) { /* a long close of an unknown destination: nothing to remember */
		struct lism_churn fresh = {};

		lism_churn_closed(&fresh, 1, now, churn_window_ns(d));
		bpf_map_update_elem(&churn, &k, &fresh, BPF_NOEXIST); /* lost to a racing CPU: one close less */
	}
}

/* 5: whether connections to server port @port may engage. */
static __always_inline int policy_port_allowed(const struct lism_device *d, __u32 port)
{
	__u8 *f = bpf_map_lookup_elem(&ports, &port);
	__u8 flags = f ? *f : 0;

	if (flags & LISM_PORT_EXCLUDE)
		return 0;
	return !(d->flags & LISM_DEV_F_INCLUDE_PORTS) || (flags & LISM_PORT_INCLUDE);
}


/* 4-5: the reason a connection end to server port @port declines, or LISM_R_NONE. */
static __always_inline __u8 policy_decline(const struct lism_device *d, __u32 port)
{
	if (!d->active)
		return LISM_R_INACTIVE;
	if (!policy_port_allowed(d, port))
		return LISM_R_POLICY;
	return LISM_R_NONE;
}

/* 6, asked after 4-5 pass: reading @nonblocking (the socket's file, probe reads) is the dearest. */
static __always_inline __u8 policy_decline_blocking(const struct lism_device *d, int nonblocking)
{
	return nonblocking || (d->flags & LISM_DEV_F_ALLOW_BLOCKING) ? LISM_R_NONE : LISM_R_BLOCKING;
}

#endif
