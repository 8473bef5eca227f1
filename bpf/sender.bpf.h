/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Sender joins (include/lism/sender.h): a member's sends start running the
 * data path once data went both ways.  The handshake program decides at
 * an outgoing packet and queues the member's token; a BPF timer joins it to
 * the senders map, the map the sk_msg program is attached to.
 *
 * Why a timer: sockops may update a sockmap only from its ESTABLISHED and
 * LISTEN callbacks (sock_map_op_okay()), long past by then, while tc
 * programs may update one (may_update_sockmap()).  A timer runs the
 * callback of the program that set it, verified as that program's type;
 * lism_sender_start, a tc program the loader runs once through
 * BPF_PROG_RUN, sets it, and the handshake program only starts it.  The
 * callback takes the member from the shortcut map (a reference: the
 * socket cannot be freed under it) and adds it to the senders map.
 */
#ifndef LISM_SENDER_BPF_H
#define LISM_SENDER_BPF_H

#include "lism.bpf.h"
#include "dmb.bpf.h"
#include "sock.bpf.h"
#include "lism/sender.h"

#define SOL_SOCKET 1
#define SO_SNDBUF 7
#define SOCK_SNDBUF_LOCK 1
#define TCP_NAGLE_CORK 2

/* Members whose sends run the sk_msg program, keyed by their own token. */
struct {
	__uint(type, BPF_MAP_TYPE_SOCKHASH);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__uint(max_entries, LISM_DEFAULT_MAX_DMBS);
	__type(key, __u64);
	__type(value, __u64);
} senders SEC(".maps");

/* The member's sends start running the sk_msg program (in SYNC, as every pairing starts). */
static __always_inline void sender_join_one(__u64 token)
{
	struct bpf_sock *sk = bpf_map_lookup_elem(&shortcut, &token), *again;
	struct lism_dmb *me, *pe;
	struct lism_sk *st;

	if (!sk)
		return; /* it closed or left the shortcut since it queued */
	st = bpf_sk_storage_get(&socks, sk, 0, 0);
	if (!st || st->token != token || st->sender != LISM_SND_QUEUED)
		goto out;
	me = dmb_by_token(token);
	pe = dmb_by_token(st->peer_token);
	if (!me || !pe || me->state != LISM_ST_CONFIRMED || pe->state != LISM_ST_CONFIRMED) {
		/* the pair fell back or ended since it queued: the send path would be for nothing */
		st->sender = LISM_SND_TCP;
		goto out;
	}
	/* before its first send can redirect: a blocking peer must not leave after it */
	pe = mark_peer_receives(st);
	if (bpf_map_update_elem(&senders, &token, sk, BPF_NOEXIST)) {
		/* the kernel takes only established sockets: a half-closed one stays on TCP */
		st->sender = LISM_SND_TCP;
		if (pe && pe->token == st->peer_token)
			__sync_fetch_and_and(&pe->conn_flags, ~LISM_CONN_PEER_SENDS);
		stat_add(LISM_S_SENDER_JOIN_FAILS, 1);
		goto out;
	}
	/*
	 * A close() may have run meanwhile: sock_map_close() unlinks the
	 * socket from every map under the socket lock, which the map update
	 * (bh_lock_sock only) does not exclude, and the socket is still
	 * established until tcp_close().  Then the update linked it again, with
	 * a new psock, into the senders alone: take it out.  A close() after
	 * this lookup unlinks the new link itself.
	 */
	again = bpf_map_lookup_elem(&shortcut, &token);
	if (!again) {
		bpf_map_delete_elem(&senders, &token);
		st->sender = LISM_SND_TCP;
		stat_add(LISM_S_SENDER_JOIN_FAILS, 1);
		goto out;
	}
	bpf_sk_release(again);
	st->sender = LISM_SND_JOINED;
	stat_add(LISM_S_SENDERS_JOINED, 1);
out:
	bpf_sk_release(sk);
}

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
	account_unseen(st, tp); /* its sends no longer run the sk_msg program */
	bpf_map_delete_elem(&senders, &token);
	bpf_map_delete_elem(&shortcut, &token);
	st->tx = LISM_TX_TCP;
	st->sender = LISM_SND_TCP;
	stat_add(LISM_S_SENDERS_LEFT, 1);
	/* its close releases what is left of its own entry */
out:
	bpf_sk_release(sk);
}

/* Joins and leaves run here, a bounded batch of each per run. */
static int sender_tick(void *map, __u32 *key, struct lism_sender_join *sj)
{
	int more = 0;
	__u64 token;

	(void)map;
	(void)key;
	for (int i = 0; i < LISM_SENDER_JOINS_PER_TICK; i++) {
		if (bpf_map_pop_elem(&sender_queue, &token))
			break;
		sender_join_one(token);
		more = i == LISM_SENDER_JOINS_PER_TICK - 1;
	}
	for (int i = 0; i < LISM_SENDER_LEAVES_PER_TICK; i++) {
		if (bpf_map_pop_elem(&sender_leaves, &token))
			break;
		sender_leave_one(token);
		more |= i == LISM_SENDER_LEAVES_PER_TICK - 1;
	}
	if (more)
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
	int locked, wmem_max = 0;
	struct sock *sk;
	struct net *net;
	__u32 lowat;

	if (!tp)
		return 0;
	sk = &tp->inet_conn.icsk_inet.sk;
	net = BPF_CORE_READ(sk, __sk_common.skc_net.net);
	locked = sndbuf_set_by_app(tp);
	if (!locked)
		bpf_core_read(&wmem_max, sizeof(wmem_max), &net->ipv4.sysctl_tcp_wmem[2]);
	lowat = tp->notsent_lowat;
	if (!lowat)
		lowat = BPF_CORE_READ(net, ipv4.sysctl_tcp_notsent_lowat);
	return !lism_sender_limits_fit(locked, sk->sk_sndbuf, wmem_max > 0 ? (__u32)wmem_max : 0, lowat);
}

/* A member whose send limits are too small stays on TCP for good: 1 if so. */
static __always_inline int sender_keep_off(struct lism_sk *st, struct tcp_sock *tp)
{
	if ((lism_ablate & LISM_ABLATE_SEND_LIMITS) || !sender_limits_small(tp))
		return 0;
	st->sender = LISM_SND_TCP;
	stat_add(LISM_S_SENDERS_SEND_LIMITS, 1);
	return 1;
}

/*
 * Whether the application holds the member's partial segments back
 * (TCP_CORK): a join now would wait in SYNC behind them until it uncorks
 * (sender.h).
 */
static __always_inline int sender_corked(struct tcp_sock *tp)
{
	return tp && (BPF_CORE_READ_BITFIELD(tp, nonagle) & TCP_NAGLE_CORK);
}

/*
 * Queue the member's join and start the timer.  Only while both entries
 * are confirmed: a pair its peer left (blocking, declined) would pay the
 * sk_msg send path for nothing, and only if its send limits suit the
 * data path.  0 while the pair is not confirmed yet, or while the member
 * is corked: asked again at its next packet or send.
 */
static __always_inline int sender_enqueue(struct lism_sk *st, struct tcp_sock *tp)
{
	struct lism_dmb *me = dmb_by_token(st->token), *pe = dmb_by_token(st->peer_token);
	struct lism_device *d = lism_dev();
	__u64 token = st->token;

	/* the data path went since it joined (an upgrade without one): no sends to run it */
	if (!me || !pe || me->state == LISM_ST_FALLBACK || pe->state == LISM_ST_FALLBACK || !d ||
	    !(d->flags & LISM_DEV_F_DATA_PATH)) {
		st->sender = LISM_SND_TCP;
		return 1;
	}
	if (me->state != LISM_ST_CONFIRMED || pe->state != LISM_ST_CONFIRMED)
		return 0;
	if (sender_keep_off(st, tp))
		return 1;
	if (sender_corked(tp))
		return 0;
	/* before the push: a timer already running on another CPU may pop it at once */
	st->sender = LISM_SND_QUEUED;
	if (bpf_map_push_elem(&sender_queue, &token, 0)) {
		/* a full queue means the timer does not run: stay on TCP rather than wait forever */
		st->sender = LISM_SND_TCP;
		stat_add(LISM_S_SENDER_JOIN_FAILS, 1);
		return 1;
	}
	sender_timer_kick();
	return 1;
}

/* An outgoing packet of a watched member (HDR_OPT_LEN callback). */
static __always_inline void sender_watch(struct bpf_sock_ops *s, struct lism_sk *st)
{
	struct bpf_sock *sk = s->sk;

	switch (lism_sender_decide(s->skb_len, s->data_segs_in, s->data_segs_out)) {
	case LISM_SENDER_JOIN:
		sender_enqueue(st, sk ? bpf_skc_to_tcp_sock(sk) : NULL);
		break;
	case LISM_SENDER_STOP:
		if (lism_ablate & LISM_ABLATE_ONE_WAY_STOP)
			break;
		st->sender = LISM_SND_TCP;
		stat_add(LISM_S_SENDERS_ONE_WAY, 1);
		break;
	}
}

/*
 * The per-sendmsg callback (BPF_SOCK_OPS_TSTAMP_SENDMSG_CB, kernel 6.15+)
 * on or off, leaving any other SK_BPF_CB_* flag as it is.  Only from a
 * callback that holds the socket lock (ESTABLISHED, HDR_OPT_LEN): the
 * kernel refuses bpf_setsockopt from the sendmsg callback itself.
 */
static __always_inline int send_sizes_switch(struct bpf_sock_ops *s, int on)
{
	int flags;

	if (bpf_getsockopt(s, SOL_SOCKET, SK_BPF_CB_FLAGS, &flags, sizeof(flags)))
		return -1; /* a kernel before 6.15: no bulk joins */
	if (!on == !(flags & SK_BPF_CB_TX_TIMESTAMPING))
		return -1; /* already so: on, it is someone else's, and stays */
	flags = on ? flags | SK_BPF_CB_TX_TIMESTAMPING : flags & ~SK_BPF_CB_TX_TIMESTAMPING;
	return (int)bpf_setsockopt(s, SOL_SOCKET, SK_BPF_CB_FLAGS, &flags, sizeof(flags));
}

/* Start measuring a new member's sends (at its join, socket locked). */
static __always_inline void sender_sizes_start(struct bpf_sock_ops *s, struct lism_sk *st,
					       const struct tcp_sock *tp)
{
	st->sizes_bytes = 0;
	st->sizes_sends = 0;
	st->sizes_seq = tp ? tp->write_seq : 0;
	if (tp && !(lism_ablate & LISM_ABLATE_BULK_JOIN) && !send_sizes_switch(s, 1))
		st->flags |= LISM_SKF_SIZES_ON;
}

/*
 * At the packet after a bulk join (sender.h): a send buffer small enough
 * for its reader to drain, so that its TCP bytes do not hold it in SYNC.
 * Not if the application sized the buffer itself.
 */
static __always_inline void sender_bulk_sndbuf(struct bpf_sock_ops *s, struct lism_sk *st)
{
	struct bpf_sock *sk = s->sk;
	int val = LISM_SENDER_BULK_SNDBUF;
	struct tcp_sock *tp;

	if (!(st->flags & LISM_SKF_BULK) || !sk)
		return;
	st->flags &= ~LISM_SKF_BULK;
	if (lism_ablate & LISM_ABLATE_BULK_SNDBUF)
		return;
	if (st->sender != LISM_SND_QUEUED && st->sender != LISM_SND_JOINED)
		return; /* it stays on TCP: nothing to wait for */
	tp = bpf_skc_to_tcp_sock(sk);
	if (!tp || sndbuf_set_by_app(tp) || tp->inet_conn.icsk_inet.sk.sk_sndbuf <= 2 * val)
		return;
	bpf_setsockopt(s, SOL_SOCKET, SO_SNDBUF, &val, sizeof(val));
}

/* At a member's packet: the callback goes off once it has nothing left to measure. */
static __always_inline void sender_sizes_settle(struct bpf_sock_ops *s, struct lism_sk *st)
{
	if (!(st->flags & LISM_SKF_SIZES_ON) ||
	    (!(st->flags & LISM_SKF_SIZES_DONE) && st->token && st->sender == LISM_SND_WATCH))
		return;
	send_sizes_switch(s, 0);
	st->flags &= ~LISM_SKF_SIZES_ON;
}

/* A sendmsg() of a member: its size is how far write_seq moved since the last one. */
static __always_inline void on_member_send(struct bpf_sock_ops *s)
{
	struct bpf_sock *sk = s->sk;
	struct tcp_sock *tp;
	struct lism_sk *st;
	__u32 seq;

	stat_add(LISM_S_SEND_SIZE_CALLS, 1);
	if (!sk)
		return;
	st = bpf_sk_storage_get(&socks, sk, 0, 0);
	tp = bpf_skc_to_tcp_sock(sk);
	if (!st || !tp || (st->flags & LISM_SKF_SIZES_DONE))
		return;
	if (!st->token || st->sender != LISM_SND_WATCH) {
		st->flags |= LISM_SKF_SIZES_DONE;
		return;
	}
	seq = tp->write_seq;
	st->sizes_bytes += lism_sender_bulk_part(seq - st->sizes_seq);
	st->sizes_seq = seq;
	st->sizes_sends++;
	switch (lism_sender_sizes(st->sizes_sends, st->sizes_bytes)) {
	case LISM_SENDER_JOIN:
		if (sender_enqueue(st, tp))
			st->flags |= LISM_SKF_SIZES_DONE | LISM_SKF_BULK;
		break;
	case LISM_SENDER_STOP:
		st->flags |= LISM_SKF_SIZES_DONE;
		break;
	}
}

/* Set the timer's callback (tc program: its callback may update sockmaps), then run it once. */
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
