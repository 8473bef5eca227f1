/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Senders (include/lism/sender.h): the handshake adds each member to the
 * senders map, the map the sk_msg program is attached to, at ESTABLISHED,
 * where sockops may update a sockmap (sock_map_op_okay()).  A sender whose
 * peer is gone is found by the sk_msg program, which may not delete from
 * one (may_update_sockmap()): it queues the token, and a BPF timer takes
 * the sender out of both maps.  A timer runs the callback of the program
 * that set it, verified as that program's type: lism_sender_start, a tc
 * program the loader runs once through BPF_PROG_RUN, sets it, and the
 * sk_msg program only starts it.  The callback takes the member from the
 * shortcut map (a reference: the socket cannot be freed under it).
 */
#ifndef LISM_SENDER_BPF_H
#define LISM_SENDER_BPF_H

#include "lism.bpf.h"
#include "dmb.bpf.h"
#include "sock.bpf.h"
#include "lism/sender.h"

#define SOCK_SNDBUF_LOCK 1

/* Members whose sends run the sk_msg program, keyed by their own token. */
struct {
	__uint(type, BPF_MAP_TYPE_SOCKHASH);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__uint(max_entries, LISM_DEFAULT_MAX_DMBS);
	__type(key, __u64);
	__type(value, __u64);
} senders SEC(".maps");

/*
 * A sender whose peer is gone leaves both maps (sender.h): its socket is
 * plain TCP again (a psock keeps its sk_msg program while any map holds
 * it).  Only while nothing can be redirected to it: the pair is over (its
 * peer's entry released, so the peer's program sends over TCP), and its
 * own shortcut queue is empty (leaving would drop what is unread).
 */
static __always_inline void sender_leave_one(__u64 token)
{
	struct bpf_sock *sk = bpf_map_lookup_elem(&shortcut, &token);
	struct lism_dmb *me, *pe;
	struct tcp_sock *tp;
	struct lism_sk *st;

	if (!sk)
		return; /* it closed since it queued */
	st = bpf_sk_storage_get(&socks, sk, 0, 0);
	if (!st || st->token != token || st->sender != LISM_SND_LEAVING)
		goto out;
	me = dmb_by_token(token);
	pe = dmb_by_token(st->peer_token);
	tp = bpf_skc_to_tcp_sock(sk);
	if (!tp || pe || sock_shortcut_unread((const struct sock *)tp)) {
		stat_add(LISM_S_SENDER_LEAVES_REFUSED, 1);
		/*
		 * Its next send asks again (its reader may have read what its
		 * queue holds by then), or runs the data path if the pair goes
		 * on after all.  Its own entry gone too, it stays on TCP.
		 */
		st->sender = tp && me ? LISM_SND_JOINED : LISM_SND_TCP;
		st->tx = tp && me ? LISM_TX_SYNC : LISM_TX_TCP;
		goto out;
	}
	bpf_map_delete_elem(&senders, &token);
	bpf_map_delete_elem(&shortcut, &token);
	st->tx = LISM_TX_TCP;
	st->sender = LISM_SND_TCP;
	stat_add(LISM_S_SENDERS_LEFT, 1);
	/* its close releases what is left of its own entry */
out:
	bpf_sk_release(sk);
}

/* Leaves run here, a bounded batch per run. */
static int sender_tick(void *map, __u32 *key, struct lism_sender_join *sj)
{
	__u64 token;

	(void)map;
	(void)key;
	for (int i = 0; i < LISM_SENDER_LEAVES_PER_TICK; i++) {
		if (bpf_map_pop_elem(&sender_leaves, &token))
			return 0;
		sender_leave_one(token);
	}
	bpf_timer_start(&sj->timer, 0, 0); /* more may wait: go on at once, in a new run */
	return 0;
}

/*
 * Whether the socket's application set SO_SNDBUF itself (TCP then leaves the
 * size alone).  A bitfield until 6.2 (sk_userlocks:4): read as one.
 */
static __always_inline int sndbuf_set_by_app(const struct tcp_sock *tp)
{
	const struct sock *sk = (const struct sock *)tp;

	return BPF_CORE_READ_BITFIELD_PROBED(sk, sk_userlocks) & SOCK_SNDBUF_LOCK;
}

/*
 * Whether the member's send buffer or unsent-bytes limit is too small for
 * the data path (sender.h): it stays on TCP.  The buffer is what the
 * application set, else what TCP may grow it to (its namespace's
 * tcp_wmem[2]); the limit is the socket's TCP_NOTSENT_LOWAT, else its
 * namespace's sysctl (tcp_notsent_lowat()).  A failed read gives 0:
 * small, TCP, the safe side.
 */
static __always_inline int sender_limits_small(struct tcp_sock *tp)
{
	struct sock *sk = &tp->inet_conn.icsk_inet.sk;
	int locked, wmem_max = 0;
	struct net *net;
	__u32 lowat;

	net = BPF_CORE_READ(sk, __sk_common.skc_net.net);
	locked = sndbuf_set_by_app(tp);
	if (!locked)
		bpf_core_read(&wmem_max, sizeof(wmem_max), &net->ipv4.sysctl_tcp_wmem[2]);
	lowat = tp->notsent_lowat;
	if (!lowat)
		lowat = BPF_CORE_READ(net, ipv4.sysctl_tcp_notsent_lowat);
	return !lism_sender_limits_fit(locked, sk->sk_sndbuf, wmem_max > 0 ? (__u32)wmem_max : 0, lowat);
}

/*
 * A member whose send limits are too small stays on TCP for good, its sends
 * unseen by the sk_msg program from now on (counted when it stops
 * sending): 1 if so.
 */
static __always_inline int sender_keep_off(struct lism_sk *st, struct tcp_sock *tp)
{
	if (!tp || !sender_limits_small(tp))
		return 0;
	st->sender = LISM_SND_TCP;
	stat_add(LISM_S_SENDERS_SEND_LIMITS, 1);
	st->unseen_base = lism_sender_written(tp->bytes_acked, tp->snd_una, tp->write_seq);
	st->flags |= LISM_SKF_UNSEEN;
	return 1;
}

/* Set the timer's callback (tc program: its callback may delete from sockmaps), then run it once. */
static __always_inline int sender_start(void)
{
	struct lism_sender_join *sj;
	struct lism_usage *u;
	__u32 zero = 0;
	long err;

	sj = bpf_map_lookup_elem(&sender_join, &zero);
	u = bpf_map_lookup_elem(&usage, &zero);
	if (!sj || !u)
		return 0;
	err = bpf_timer_init(&sj->timer, &sender_join, CLOCK_MONOTONIC);
	if ((err && err != -EBUSY) || bpf_timer_set_callback(&sj->timer, sender_tick) ||
	    bpf_timer_start(&sj->timer, 0, 0))
		return 0;
	u->sender_timer = 1; /* for lism status */
	return 1;
}

#endif
