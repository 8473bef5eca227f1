/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * DMB slots and tokens (the smc_lo_register_dmb analog).  Taking and giving
 * back a slot is O(1) whatever the table size: free slots wait in a FIFO
 * queue map (the kernel's, lock-protected), and the in-use counter is one
 * atomic.  Included by the handshake and by the allocator's own test
 * program, so both run this exact code.
 */
#ifndef LISM_DMB_BPF_H
#define LISM_DMB_BPF_H

#include "lism.bpf.h"

/*
 * Take a free slot and reset its entry.  The entry is not visible under a
 * token until dmb_publish().  NULL when the table is full or at max_dmbs.
 */
static __always_inline struct lism_dmb *dmb_take(const struct lism_device *d, __u32 *slot_out)
{
	struct lism_usage *u;
	struct lism_dmb *e;
	__u32 zero = 0, slot, gen;
	__s64 now;

	u = bpf_map_lookup_elem(&usage, &zero);
	if (!u)
		return NULL;
	now = __sync_add_and_fetch(&u->dmbs_in_use, 1);
	if (now > d->max_dmbs || bpf_map_pop_elem(&dmb_free, &slot)) {
		__sync_fetch_and_sub(&u->dmbs_in_use, 1);
		return NULL;
	}
	if (now > u->dmbs_hwm)
		u->dmbs_hwm = now; /* racy max: a view, not an invariant */
	e = dmb_get(slot);
	if (!e) { /* cannot happen: slots come from 0..capacity-1 */
		bpf_map_push_elem(&dmb_free, &slot, 0);
		__sync_fetch_and_sub(&u->dmbs_in_use, 1);
		return NULL;
	}
	gen = e->gen + 1;
	__builtin_memset(e, 0, sizeof(*e));
	e->gen = gen;
	e->dmb_size = d->dmb_size;
	e->created_ns = bpf_ktime_get_ns();
	*slot_out = slot;
	return e;
}

/* Device-private bits (GID bytes 12..15, never on the wire) salting the generations. */
static __always_inline __u32 token_salt(const struct lism_device *d)
{
	return ((__u32)d->gid[12] << 24) | ((__u32)d->gid[13] << 16) | ((__u32)d->gid[14] << 8) |
	       d->gid[15];
}

/* Give the entry its token; from now on dmb_by_token() finds it. */
static __always_inline __u64 dmb_publish(const struct lism_device *d, struct lism_dmb *e, __u32 slot,
					 __u8 role)
{
	__u64 token = lism_token_make(slot, e->gen, token_salt(d));

	e->role = role;
	e->state = role == LISM_ROLE_ACTIVE ? LISM_ST_PROPOSED : LISM_ST_ACCEPTED;
	__sync_lock_test_and_set(&e->token, token);
	return token;
}

/*
 * Give @token's slot back.  Either end (or a close racing a handshake, or
 * the sweep) may try; the compare-and-swap on the token makes exactly one
 * of them win: 1 for the winner, with *@peer (if not NULL) the entry's
 * peer_token as it left it (0 if nobody answered), read after the token is
 * gone and before the slot can be taken again, so a claim that lands
 * concurrently is either seen here or sees the token gone.
 */
static __always_inline int dmb_release(struct lism_dmb *e, __u64 token, __u64 *peer)
{
	__u32 slot = lism_token_slot(token), zero = 0;
	struct lism_usage *u;
	__u64 none = 0, p;

	if (!token || __sync_val_compare_and_swap(&e->token, token, 0) != token)
		return 0;
	p = __sync_fetch_and_add(&e->peer_token, 0);
	if (peer)
		*peer = p;
	e->state = LISM_ST_FREE;
	e->cookie = 0; /* before the slot can be taken again: no destroy takes it for its owner's */
	bpf_map_update_elem(&dmb_owner, &slot, &none, BPF_ANY);
	bpf_map_push_elem(&dmb_free, &slot, 0);
	u = bpf_map_lookup_elem(&usage, &zero);
	if (u)
		__sync_fetch_and_sub(&u->dmbs_in_use, 1);
	return 1;
}

/* Release a passive entry that never established (nobody else can find it). */
static __always_inline void release_unestablished(__u64 rtoken)
{
	struct lism_dmb *re = dmb_by_token(rtoken);

	if (!re || __sync_val_compare_and_swap(&re->state, LISM_ST_ACCEPTED, LISM_ST_CLOSED) !=
			   LISM_ST_ACCEPTED)
		return;
	/* The slot may have been released and taken again between the two reads. */
	if (__sync_fetch_and_add(&re->token, 0) != rtoken) {
		__sync_val_compare_and_swap(&re->state, LISM_ST_CLOSED, LISM_ST_ACCEPTED);
		return;
	}
	dmb_release(re, rtoken, NULL);
}

/*
 * Release an end's own entry; an active end also takes an unestablished
 * answer with it.  1 if this caller released it.
 */
static __always_inline int release_own(struct lism_dmb *e, __u64 token)
{
	__u8 role = e->role;
	__u64 peer;

	if (!dmb_release(e, token, &peer))
		return 0;
	if (role == LISM_ROLE_ACTIVE && peer)
		release_unestablished(peer);
	return 1;
}

/* This end is closed: forget its entry in its socket storage. */
static __always_inline void sk_closed(struct lism_sk *st)
{
	st->token = 0;
	st->state = LISM_ST_CLOSED;
	st->tx = LISM_TX_TCP;
}

/* This end is closed and still owns its entry: count the close, give the entry back. */
static __always_inline void close_own(struct lism_sk *st, struct lism_dmb *e, __u64 token)
{
	stat_add(LISM_S_CLOSES, 1);
	release_own(e, token);
	sk_closed(st);
}

/*
 * A fallback, recorded on a socket's storage and on its own entry (if it
 * has one), which is freed.  What it sent over TCP unseen is counted first.
 */
static __always_inline void fallback_own(struct lism_sk *st, const struct tcp_sock *tp,
					 struct lism_dmb *e, __u8 reason)
{
	account_unseen(st, tp); /* sent before it was a sender: its sends no longer run the sk_msg program */
	st->state = LISM_ST_FALLBACK;
	st->reason = reason;
	st->tx = LISM_TX_TCP;
	st->sender = LISM_SND_NONE; /* no longer a member (a queued join then finds no token) */
	reason_count(reason);
	stat_add(LISM_S_FALLBACKS, 1);
	if (e) {
		e->reason = reason;
		e->state = LISM_ST_FALLBACK;
		emit_event(LISM_EV_FALLBACK, reason, e);
		release_own(e, st->token);
	}
	st->token = 0;
}

/* The peer's entry, if still confirmed under @ptoken, falls back because this end did (@why). */
static __always_inline void decline_peer_entry(__u64 ptoken, __u8 why)
{
	struct lism_dmb *pe = dmb_by_token(ptoken);

	if (pe && __sync_val_compare_and_swap(&pe->state, LISM_ST_CONFIRMED, LISM_ST_FALLBACK) ==
			  LISM_ST_CONFIRMED) {
		pe->reason = LISM_R_PEER_DECLINED;
		pe->peer_reason = why;
	}
}

#endif
