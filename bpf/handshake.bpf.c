// SPDX-License-Identifier: GPL-2.0-only
/*
 * The handshake (CLC analog), as one sockops program:
 *
 *   connect()          TCP_CONNECT_CB: take a DMB slot, state PROPOSED
 *   SYN                WRITE_HDR_OPT:  option {GID, token S}
 *   listener gets SYN  HDR_OPT_LEN:    S names a PROPOSED entry of this kernel
 *                                      -> take a slot R, claim S (CAS), ACCEPTED
 *   SYN-ACK            WRITE_HDR_OPT:  option {GID, token R}
 *   client established ACTIVE_ESTABLISHED: R names S and S was claimed by R
 *                                      -> join the shortcut map, READY
 *   server established PASSIVE_ESTABLISHED: the saved SYN names S, S names R
 *                                      -> join, both CONFIRMED
 *
 * Anything else declines with a reason and the connection stays on TCP.
 * Pairing never looks at addresses (DNAT rewrites them); it needs both
 * tokens to be live entries of this kernel's table naming each other, so a
 * packet from elsewhere cannot complete it.
 */
#include "policy.bpf.h"
#include "sender.bpf.h"
#include "sock.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/*
 * The kernel socket behind the context, request socks included (s->sk is
 * NULL for them): bpf_sock_ops_kern.sk, read where the context lies, since
 * bpf_cast_to_kern_ctx() is 6.2's and lism's handshake runs on 6.1.
 */
static __always_inline void *ctx_sock(struct bpf_sock_ops *s)
{
	void *sk = NULL;

	bpf_probe_read_kernel(&sk, sizeof(sk), (void *)s + bpf_core_field_offset(struct bpf_sock_ops_kern, sk));
	return sk;
}

/* A fresh entry for this connection end, published under a new token. */
static __always_inline struct lism_dmb *dmb_alloc(const struct lism_device *d, __u8 role,
						  struct bpf_sock_ops *s)
{
	struct lism_dmb *e;
	struct addr6 l, r;
	__u32 slot;

	e = dmb_take(d, &slot);
	if (!e)
		return NULL;
	sockops_local(s, &l);
	sockops_remote(s, &r);
	e->lport = (__u16)s->local_port;
	e->rport = sockops_rport(s);
	__builtin_memcpy(e->laddr, l.w, 16);
	__builtin_memcpy(e->raddr, r.w, 16);
	dmb_publish(d, e, slot, role);
	return e;
}

/* An event about a socket that has no DMB entry (yet): addresses from the context. */
static __always_inline void emit_sock_event(struct bpf_sock_ops *s, __u8 type, __u8 reason, __u8 role)
{
	struct lism_dmb e = { .role = role };
	struct addr6 l, r;

	sockops_local(s, &l);
	sockops_remote(s, &r);
	e.lport = (__u16)s->local_port;
	e.rport = sockops_rport(s);
	__builtin_memcpy(e.laddr, l.w, 16);
	__builtin_memcpy(e.raddr, r.w, 16);
	emit_event(type, reason, &e);
}

/* Record a fallback on a socket's storage; its entry, if any, is freed. */
static __always_inline void sk_fallback(struct bpf_sock_ops *s, struct lism_sk *st,
					struct lism_dmb *e, __u8 reason)
{
	struct bpf_sock *sk = s->sk;

	if (!e)
		emit_sock_event(s, LISM_EV_FALLBACK, reason, st->role);
	fallback_own(st, sk ? bpf_skc_to_tcp_sock(sk) : NULL, e, reason);
}

static __always_inline void cb_flags(struct bpf_sock_ops *s, __u32 set, __u32 clear)
{
	__u32 f = s->bpf_sock_ops_cb_flags;

	bpf_sock_ops_cb_flags_set(s, (f | set) & ~clear);
}

/* Search spec for bpf_load_hdr_opt: kind 254 with our 2-byte ExID. */
static __always_inline int load_opt(struct bpf_sock_ops *s, __u64 flags, struct lism_opt *o)
{
	__u8 buf[LISM_OPT_LEN] = { LISM_OPT_KIND, 4, LISM_OPT_EXID >> 8, LISM_OPT_EXID & 0xff };
	int n = bpf_load_hdr_opt(s, buf, sizeof(buf), flags);

	if (n < 0)
		return n;
	return lism_opt_parse(buf, n, o);
}

static __always_inline int store_opt(struct bpf_sock_ops *s, __u64 gid, __u64 token)
{
	struct lism_opt o = { .gid = gid, .token = token };
	__u8 buf[LISM_OPT_LEN];

	lism_opt_encode(buf, &o);
	return bpf_store_hdr_opt(s, buf, sizeof(buf), 0);
}

/* Blocking mode of the listener a request sock (SYN-ACK callbacks) belongs to. */
static __always_inline int request_listener_nonblocking(struct bpf_sock_ops *s)
{
	struct request_sock *req = ctx_sock(s);
	struct sock *lsk = BPF_CORE_READ(req, __req_common.skc_listener); /* rsk_listener */

	return lsk && sock_nonblocking(lsk);
}

/* The request sock's sequence numbers: the client's ISN, and the one of our SYN-ACK. */
static __always_inline void request_isns(struct bpf_sock_ops *s, __u32 *rcv_isn, __u32 *snt_isn)
{
	struct tcp_request_sock *treq = ctx_sock(s);

	*rcv_isn = BPF_CORE_READ(treq, rcv_isn);
	*snt_isn = BPF_CORE_READ(treq, snt_isn);
}

/*
 * Publish the socket that owns @slot's entry: its address (the peer's
 * sender reads it) and its cookie (the backstop and the sweep tell by both
 * whether the entry's socket is still the one alive at that address).
 */
static __always_inline void set_owner(struct bpf_sock_ops *s, struct lism_dmb *e, __u32 slot)
{
	__u64 owner = (__u64)s->sk;

	bpf_map_update_elem(&dmb_owner, &slot, &owner, BPF_ANY);
	e->cookie = bpf_get_socket_cookie(s);
}

/* The socket's kernel address as a plain number (probe reads take it; the verifier's pointer would not). */
static __always_inline __u64 sock_addr(struct bpf_sock_ops *s)
{
	return (__u64)ctx_sock(s);
}

/* The socket runs liblism: it carries the lism exec mark (lism/exec.h). */
static __always_inline int exec_marked(struct bpf_sock *sk)
{
	return bpf_sk_storage_get(&exec_marks, sk, 0, 0) != NULL;
}

/*
 * A SYN's listener runs liblism: on_listen() put its address in the
 * exec_listeners map, with its cookie, which must still be the cookie at
 * that address (probe reads: a SYN's listener is no trusted pointer, and a
 * walk of its storages here took the verifier past its limit).
 */
static __always_inline int listener_exec_marked(struct bpf_sock_ops *s)
{
	struct request_sock *req = ctx_sock(s);
	struct sock *lsk = BPF_CORE_READ(req, __req_common.skc_listener);
	__u64 addr = (__u64)lsk, *cookie;

	cookie = addr ? bpf_map_lookup_elem(&exec_listeners, &addr) : NULL;
	return cookie && *cookie == (__u64)BPF_CORE_READ(lsk, __sk_common.skc_cookie.counter);
}

static void on_connect(struct bpf_sock_ops *s)
{
	struct lism_device *d = lism_dev();
	struct bpf_sock *sk = s->sk;
	struct tcp_sock *tp;
	struct lism_sk *st;
	struct lism_dmb *e;
	struct addr6 r;
	int exec;
	__u8 why;

	if (!d || !sk || (s->family != AF_INET && s->family != AF_INET6))
		return;
	sockops_remote(s, &r);
	if (!policy_in_scope(&r))
		return; /* not a candidate: no state, no option on the wire */
	if (policy_nested(sock_addr(s), d->socks_id)) {
		reason_count(LISM_R_NESTED);
		return;
	}
	if (d->active && policy_churn_skip(s, d, &r)) {
		/*
		 * Counted, but no storage and no event: at the connection
		 * rates where this happens the skip must cost next to nothing.
		 */
		reason_count(LISM_R_SHORT_LIVED);
		stat_add(LISM_S_FALLBACKS, 1);
		return;
	}
	st = bpf_sk_storage_get(&socks, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!st)
		return;
	bpf_get_socket_cookie(s); /* made now: lism conns names the socket by it (views.bpf.c cannot make one) */
	st->role = LISM_ROLE_ACTIVE;
	st->token = 0;
	st->peer_token = 0;
	st->tx = LISM_TX_TCP;
	st->sent = 0;
	st->flags = 0;
	st->sender = LISM_SND_NONE;
	why = policy_decline(d, sockops_rport(s));
	/* liblism keeps blocking semantics itself: its sockets never join the sk_msg path */
	exec = exec_marked(sk);
	if (why == LISM_R_NONE && !exec)
		why = policy_decline_blocking(d, sock_nonblocking((const struct sock *)
								    bpf_skc_to_tcp_sock(sk)));
	if (why != LISM_R_NONE) {
		sk_fallback(s, st, NULL, why);
		return;
	}
	e = dmb_alloc(d, LISM_ROLE_ACTIVE, s);
	if (!e) {
		emit_sock_event(s, LISM_EV_LIMIT, LISM_R_MAX_DMB, LISM_ROLE_ACTIVE);
		sk_fallback(s, st, NULL, LISM_R_MAX_DMB);
		return;
	}
	tp = bpf_skc_to_tcp_sock(sk);
	if (tp)
		e->isn = tp->write_seq; /* the SYN about to go out carries it */
	if (exec)
		__sync_fetch_and_or(&e->conn_flags, LISM_CONN_EXEC);
	st->token = e->token;
	st->slot = lism_token_slot(e->token);
	set_owner(s, e, st->slot); /* from now on the sweep covers it */
	sweep_kick(); /* the passive end's entry only exists beside an active one: armed here */
	st->state = LISM_ST_PROPOSED;
	st->reason = LISM_R_NONE;
	stat_add(LISM_S_PROPOSALS_SENT, 1);
	cb_flags(s, BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG | BPF_SOCK_OPS_STATE_CB_FLAG, 0);
}

static void on_listen(struct bpf_sock_ops *s)
{
	struct bpf_sock *sk = s->sk;
	int one = 1, app = 0;

	/*
	 * The passive side reads the client's option from the SYN once
	 * established.  An application's own TCP_SAVE_SYN stays (2 also keeps
	 * the MAC header, which 1 would drop).
	 */
	if (bpf_getsockopt(s, SOL_TCP, TCP_SAVE_SYN, &app, sizeof(app)) || !app)
		bpf_setsockopt(s, SOL_TCP, TCP_SAVE_SYN, &one, sizeof(one));
	cb_flags(s, BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG, 0);
	if (sk && exec_marked(sk)) { /* for its SYNs' blocking check (listener_exec_marked) */
		__u64 addr = sock_addr(s), cookie = bpf_get_socket_cookie(s);

		bpf_map_update_elem(&exec_listeners, &addr, &cookie, BPF_ANY);
	}
}

/*
 * The passive side's decision for a SYN naming @o, taken while the SYN-ACK
 * is built (the listener is not locked here; the claim is a CAS).  Returns
 * the token to answer with, or 0 to answer nothing.  With @claim 0 it only
 * finds an earlier answer, so a retransmitted SYN-ACK carries the same token.
 */
static __u64 passive_accept(struct bpf_sock_ops *s, const struct lism_device *d,
			    const struct lism_opt *o, int claim)
{
	struct lism_dmb *se, *re;
	__u32 rcv_isn, snt_isn;
	__u64 claimed, rtoken;
	struct addr6 r;
	__u8 why;

	se = dmb_by_token(o->token);
	if (!se || se->role != LISM_ROLE_ACTIVE)
		return 0; /* not a live proposal of this kernel */
	request_isns(s, &rcv_isn, &snt_isn);
	if (rcv_isn != se->isn) {
		/* the token is live, but this SYN is not the one that carried it */
		if (claim)
			reason_count(LISM_R_HANDSHAKE_INVALID);
		return 0;
	}
	sockops_remote(s, &r);
	claimed = se->peer_token;
	if (claimed) {
		re = dmb_by_token(claimed);
		if (re && re->state == LISM_ST_ACCEPTED && re->rport == sockops_rport(s) &&
		    addr_eq(re->raddr, &r))
			return claimed; /* our own earlier answer */
		if (claim)
			reason_count(LISM_R_TOKEN_CLAIMED);
		return 0;
	}
	if (!claim || se->state != LISM_ST_PROPOSED)
		return 0;
	/* Declines are written into the client's entry: it is on this kernel. */
	why = policy_decline(d, s->local_port);
	if (why == LISM_R_NONE)
		why = policy_decline_blocking(d, request_listener_nonblocking(s));
	if (why == LISM_R_BLOCKING && listener_exec_marked(s))
		why = LISM_R_NONE; /* liblism keeps blocking semantics itself (on_connect) */
	if (why != LISM_R_NONE) {
		se->peer_reason = why;
		return 0;
	}
	re = dmb_alloc(d, LISM_ROLE_PASSIVE, s);
	if (!re) {
		emit_sock_event(s, LISM_EV_LIMIT, LISM_R_MAX_DMB, LISM_ROLE_PASSIVE);
		se->peer_reason = LISM_R_MAX_DMB;
		return 0;
	}
	re->peer_token = o->token;
	re->isn = snt_isn;
	rtoken = re->token;
	if (__sync_val_compare_and_swap(&se->peer_token, 0, rtoken) != 0) {
		reason_count(LISM_R_TOKEN_CLAIMED);
		dmb_release(re, rtoken, NULL);
		return 0;
	}
	if (__sync_fetch_and_add(&se->token, 0) != o->token) {
		/*
		 * The client released its entry meanwhile; its release may not
		 * have seen our claim.  Take the claim back (the slot may be
		 * someone else's by now) and release our answer.
		 */
		__sync_val_compare_and_swap(&se->peer_token, rtoken, 0);
		release_unestablished(rtoken);
		return 0;
	}
	stat_add(LISM_S_ACCEPTS_SENT, 1);
	return re->token;
}

/* Leave both maps (a member that never became a sender is in one). */
static __always_inline void leave(__u64 token)
{
	bpf_map_delete_elem(&senders, &token);
	bpf_map_delete_elem(&shortcut, &token);
}

/*
 * An accepted member turned out to be in blocking mode (accept() does not
 * inherit the listener's O_NONBLOCK).  Its peer no longer redirects to it
 * (see shortcut.bpf.c), so once its shortcut queue is empty it can leave
 * the maps and read with plain TCP again, blocking waits included.  Runs
 * on the member's outgoing packets until it decides (LISM_SKF_MODE_KNOWN).
 */
static __always_inline void check_member_mode(struct bpf_sock_ops *s, struct lism_sk *st)
{
	struct bpf_sock *sk = s->sk;
	struct lism_dmb *e;
	const struct sock *ksk;
	unsigned int fl;
	__u64 ptoken;

	if (!sk)
		return;
	ksk = (const struct sock *)bpf_skc_to_tcp_sock(sk);
	if (!ksk || sock_file_flags(ksk, &fl))
		return; /* not accepted yet */
	if (fl & O_NONBLOCK) {
		st->flags |= LISM_SKF_MODE_KNOWN;
		return;
	}
	e = dmb_by_token(st->token);
	/*
	 * Leave only once no redirect of the peer's can be in flight to us:
	 * it never became a sender, or its sender has seen us blocking (it
	 * then sends over TCP); once our shortcut queue is empty (leaving
	 * drops what is unread); and not while the join timer may be adding
	 * us to the senders.
	 */
	if (!e || st->sender == LISM_SND_QUEUED ||
	    ((e->conn_flags & LISM_CONN_PEER_SENDS) && !(e->conn_flags & LISM_CONN_SEEN_BLOCKING)))
		return;
	if (sock_shortcut_unread_if_counted(ksk))
		return; /* next packet */
	ptoken = st->peer_token;
	leave(st->token);
	sk_fallback(s, st, e, LISM_R_BLOCKING);
	st->flags |= LISM_SKF_MODE_KNOWN;
	decline_peer_entry(ptoken, LISM_R_BLOCKING);
}

/*
 * An outgoing packet of a member (HDR_OPT_LEN_CB, while the flag is on):
 * a passive member's blocking mode, and whether data went both ways yet
 * (sender.h).  The callback is switched off once neither needs it.
 */
static __always_inline int paired(const struct lism_sk *st)
{
	return st->token && (st->state == LISM_ST_READY || st->state == LISM_ST_CONFIRMED);
}

static void on_member_packet(struct bpf_sock_ops *s)
{
	struct bpf_sock *sk = s->sk;
	struct lism_sk *st;

	if (!sk)
		return;
	st = bpf_sk_storage_get(&socks, sk, 0, 0);
	/*
	 * This callback also runs for a client in SYN_SENT (tcp_current_mss
	 * calls it without a packet), whose flag must stay on for its SYN
	 * retransmissions to carry the option.
	 */
	if (!st || st->state == LISM_ST_PROPOSED)
		return;
	if (paired(st) && !(st->flags & LISM_SKF_MODE_KNOWN) && st->role == LISM_ROLE_PASSIVE)
		check_member_mode(s, st); /* may leave: paired() is asked again below */
	if (paired(st) && st->sender == LISM_SND_WATCH)
		sender_watch(s, st);
	sender_sizes_settle(s, st); /* the sendmsg callback cannot switch itself off */
	sender_bulk_sndbuf(s, st);
	if (st->flags & LISM_SKF_LEAVE_SENDERS) {
		/*
		 * Found one-way by the data path (shortcut.bpf.c), which may not
		 * update a sockmap: leave the senders here.  Its psock stays (the
		 * shortcut map holds it), and so does its sk_msg program (the
		 * kernel keeps a psock's programs while any map holds it): its
		 * sends run it, and pass to TCP at once.
		 */
		bpf_map_delete_elem(&senders, &st->token);
		st->flags &= ~LISM_SKF_LEAVE_SENDERS;
	}
	if (paired(st) && (!(st->flags & LISM_SKF_MODE_KNOWN) || st->sender == LISM_SND_WATCH ||
			   (st->flags & LISM_SKF_EAGER_WATCH)))
		return;
	if (st->flags & LISM_SKF_SIZES_ON)
		return; /* this callback must live until it switched that one off */
	cb_flags(s, 0, BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG);
}

static void on_hdr_opt_len(struct bpf_sock_ops *s)
{
	__u8 flags = s->skb_tcp_flags;
	struct lism_device *d;
	struct lism_opt o;
	struct addr6 r;

	if (!(flags & TCPHDR_SYN)) {
		on_member_packet(s);
		return;
	}
	if (!(flags & TCPHDR_ACK)) { /* our SYN */
		struct bpf_sock *sk = s->sk;
		struct lism_sk *st;

		if (!sk)
			return;
		st = bpf_sk_storage_get(&socks, sk, 0, 0);
		if (!st || st->state != LISM_ST_PROPOSED)
			return;
		if (bpf_reserve_hdr_opt(s, LISM_OPT_LEN, 0))
			sk_fallback(s, st, dmb_by_token(st->token), LISM_R_OPT_SPACE);
		return;
	}
	/* A SYN-ACK of one of our listeners; the socket is the request sock. */
	if (s->args[0] & BPF_WRITE_HDR_TCP_SYNACK_COOKIE)
		return; /* no state survives a syncookie: let the client fall back */
	d = lism_dev();
	if (!d || load_opt(s, BPF_LOAD_HDR_OPT_TCP_SYN, &o))
		return;
	stat_add(LISM_S_PROPOSALS_RECV, 1);
	if (o.gid != gid_tag(d)) {
		reason_count(LISM_R_GID_MISMATCH);
		return;
	}
	sockops_remote(s, &r);
	if (!policy_in_scope(&r))
		return;
	if (passive_accept(s, d, &o, 1))
		bpf_reserve_hdr_opt(s, LISM_OPT_LEN, 0);
}

static void on_write_hdr_opt(struct bpf_sock_ops *s)
{
	__u8 flags = s->skb_tcp_flags;
	struct lism_device *d = lism_dev();
	struct lism_opt o;
	__u64 token;

	if (!d || !(flags & TCPHDR_SYN))
		return;
	if (!(flags & TCPHDR_ACK)) {
		struct bpf_sock *sk = s->sk;
		struct lism_sk *st;

		if (!sk)
			return;
		st = bpf_sk_storage_get(&socks, sk, 0, 0);
		if (st && st->state == LISM_ST_PROPOSED)
			store_opt(s, gid_tag(d), st->token);
		return;
	}
	if (s->args[0] & BPF_WRITE_HDR_TCP_SYNACK_COOKIE)
		return;
	if (load_opt(s, BPF_LOAD_HDR_OPT_TCP_SYN, &o) || o.gid != gid_tag(d))
		return;
	token = passive_accept(s, d, &o, 0);
	if (token)
		store_opt(s, gid_tag(d), token);
}

/* @reason: none, or no-data-path for a pair whose bytes stay on TCP (events tell them apart). */
static __always_inline void confirm(struct lism_dmb *a, struct lism_dmb *b, __u8 reason)
{
	a->state = LISM_ST_CONFIRMED;
	b->state = LISM_ST_CONFIRMED;
	stat_add(LISM_S_CONFIRMS, 1);
	emit_event(LISM_EV_CONFIRM, reason, a);
}

/* How an end joins (join() below). */
enum join_how {
	JOIN_MAPS,         /* the shortcut map, and the senders by the rules */
	JOIN_NO_DATA_PATH, /* none: this instance runs no data path, or the active end found none */
	JOIN_EXEC,         /* none: the end runs liblism, whose bytes take a ring or TCP (lism/exec.h) */
};

/*
 * The pair's transport under lism exec, decided once, here, for both ends
 * (lism/exec.h): a ring if both run liblism and a device holds its lease.
 * Written once both entries are CONFIRMED, so an end that reads RING finds
 * its pair confirmed when it asks the device; a compare-and-swap on the
 * active entry, because its end may have settled it as KERNEL meanwhile
 * (LISM_SO_KERNEL), and then that holds for both.
 */
static __always_inline void exec_decide(struct lism_dmb *re, struct lism_dmb *se, __u64 stoken, int exec,
					int peer_exec)
{
	__u32 word, epoch = 0, zero = 0, old;
	struct lism_exec_lease *l;

	if (!exec && !peer_exec)
		return; /* neither asked: nothing to decide, the sk_msg path as ever */
	word = LISM_EXEC_WORD(LISM_EXEC_KERNEL, LISM_R_EXEC_PEER_NO_LIB);
	if (exec && peer_exec) {
		l = bpf_map_lookup_elem(&exec_lease, &zero);
		if (l && l->until_ns > bpf_ktime_get_ns()) {
			word = LISM_EXEC_WORD(LISM_EXEC_RING, 0);
			epoch = l->epoch;
		} else {
			word = LISM_EXEC_WORD(LISM_EXEC_KERNEL, LISM_R_EXEC_NO_DEVICE);
		}
	}
	se->exec_epoch = epoch; /* read only with RING, which the swap below publishes after it */
	old = __sync_val_compare_and_swap(&se->exec, 0, word);
	if (se->token != stoken) { /* released and taken again meanwhile: not this pair's word */
		if (!old)
			__sync_val_compare_and_swap(&se->exec, word, 0);
		return;
	}
	if (old) { /* its end settled it first (exec-undecided): that holds for both */
		word = old;
		epoch = 0;
	} else if (LISM_EXEC_MODE(word) == LISM_EXEC_RING) {
		stat_add(LISM_S_RING_PAIRS, 1);
	} else {
		reason_count(LISM_EXEC_REASON(word));
	}
	re->exec_epoch = epoch;
	__sync_lock_test_and_set(&re->exec, word);
}

/*
 * Join the shortcut map under our own token: from now on the peer may
 * redirect to us.  Our own sends run the data path once we are a sender
 * too: at once with --eager-senders, else when data went both ways
 * (sender.h), watched from our outgoing packets -- never if our send
 * buffer or unsent-bytes limit is too small for the data path.
 * Returns 0, -1 if the maps refused it, or 1 when this instance runs no data
 * path (its kernel lacks one, or the verifier refused it) or @how says none:
 * the pair is confirmed all the same and its bytes stay off the sk_msg path.
 */
static __always_inline int join(struct bpf_sock_ops *s, const struct lism_device *d,
				struct lism_dmb *e, struct lism_sk *st, enum join_how how)
{
	struct bpf_sock *sk = s->sk;
	__u64 key = st->token;
	struct tcp_sock *tp;

	if (how != JOIN_MAPS || !(d->flags & LISM_DEV_F_DATA_PATH)) {
		st->flags = LISM_SKF_MODE_KNOWN; /* nothing to watch: it never joins */
		__sync_fetch_and_or(&e->conn_flags, LISM_CONN_NO_DATA_PATH);
		if (how != JOIN_EXEC) {
			st->reason = LISM_R_NO_DATA_PATH;
			reason_count(LISM_R_NO_DATA_PATH);
		}
		if (st->role == LISM_ROLE_PASSIVE)
			set_owner(s, e, st->slot);
		return 1;
	}
	if (!sk || bpf_sock_hash_update(s, &shortcut, &key, BPF_NOEXIST))
		return -1;
	tp = bpf_skc_to_tcp_sock(sk);
	st->flags = ((d->flags & LISM_DEV_F_ALLOW_BLOCKING) ? LISM_SKF_ALLOW_BLOCKING : 0) |
		    (st->role == LISM_ROLE_ACTIVE || (d->flags & LISM_DEV_F_ALLOW_BLOCKING) ?
			     LISM_SKF_MODE_KNOWN : 0);
	if (!(d->flags & LISM_DEV_F_EAGER_SENDERS)) {
		st->sender = LISM_SND_WATCH;
		start_unseen(st, tp);
		sender_sizes_start(s, st, tp);
		cb_flags(s, BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG, 0);
	} else if (!sender_keep_off(st, tp)) { /* small send limits: not even eagerly (sender.h) */
		if (bpf_sock_hash_update(s, &senders, &key, BPF_NOEXIST)) {
			bpf_map_delete_elem(&shortcut, &key);
			return -1;
		}
		st->sender = LISM_SND_JOINED;
		/* watched from its sends until found both-ways or one-way (sender.h) */
		st->flags |= LISM_SKF_EAGER_WATCH;
		st->sizes_sends = 0;
		st->sizes_bytes = 0;
		cb_flags(s, BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG, 0);
	}
	if (st->role == LISM_ROLE_PASSIVE) /* the active end published itself at connect() */
		set_owner(s, e, st->slot);
	return 0;
}

static void on_active_established(struct bpf_sock_ops *s)
{
	struct lism_device *d = lism_dev();
	struct bpf_sock *sk = s->sk;
	struct lism_dmb *se, *re;
	struct tcp_sock *tp;
	struct lism_sk *st;
	struct lism_opt o;
	int err;

	if (!d || !sk)
		return;
	st = bpf_sk_storage_get(&socks, sk, 0, 0);
	if (!st || st->state != LISM_ST_PROPOSED)
		return;
	cb_flags(s, 0, BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG);
	se = dmb_by_token(st->token);
	if (!se) {
		sk_fallback(s, st, NULL, LISM_R_NOT_CONFIRMED);
		return;
	}
	err = load_opt(s, 0, &o);
	if (err == -ENOMSG) {
		if (se->peer_reason)
			sk_fallback(s, st, se, LISM_R_PEER_DECLINED);
		else
			sk_fallback(s, st, se, LISM_R_PEER_NO_LISM);
		return;
	}
	if (err) {
		sk_fallback(s, st, se, LISM_R_HANDSHAKE_INVALID);
		return;
	}
	stat_add(LISM_S_ACCEPTS_RECV, 1);
	if (o.gid != gid_tag(d)) {
		sk_fallback(s, st, se, LISM_R_GID_MISMATCH);
		return;
	}
	re = dmb_by_token(o.token);
	tp = bpf_skc_to_tcp_sock(sk);
	/* rcv_nxt is the SYN-ACK's sequence + 1: it must be the SYN-ACK R's listener sent */
	if (!re || !tp || re->role != LISM_ROLE_PASSIVE || re->peer_token != st->token ||
	    se->peer_token != o.token || re->isn != tp->rcv_nxt - 1) {
		sk_fallback(s, st, se, LISM_R_HANDSHAKE_INVALID);
		return;
	}
	err = join(s, d, se, st, (se->conn_flags & LISM_CONN_EXEC) ? JOIN_EXEC : JOIN_MAPS);
	if (err < 0) {
		sk_fallback(s, st, se, LISM_R_SOCKMAP);
		return;
	}
	st->peer_token = o.token;
	st->peer_slot = lism_token_slot(o.token);
	if (st->sender == LISM_SND_JOINED) /* --eager-senders */
		mark_peer_receives(st);
	st->tx = err ? LISM_TX_TCP : LISM_TX_SYNC;
	st->state = LISM_ST_READY;
	se->state = LISM_ST_READY;
}

/*
 * The passive end cannot join after the active end did: take the active end
 * out of the map again.  It never received shortcut data (we never joined),
 * so leaving purges nothing.
 */
static __always_inline void decline_active(struct lism_dmb *se, __u64 stoken, __u8 why)
{
	/* The client may be closing right now: only touch its entry while it is its. */
	if (se->token != stoken ||
	    __sync_val_compare_and_swap(&se->state, LISM_ST_READY, LISM_ST_FALLBACK) != LISM_ST_READY)
		return;
	se->peer_reason = why;
	leave(stoken);
	se->reason = LISM_R_PEER_DECLINED;
	reason_count(LISM_R_PEER_DECLINED);
	stat_add(LISM_S_FALLBACKS, 1);
	emit_event(LISM_EV_FALLBACK, LISM_R_PEER_DECLINED, se);
	dmb_release(se, stoken, NULL);
}

static void on_passive_established(struct bpf_sock_ops *s)
{
	struct lism_device *d = lism_dev();
	struct bpf_sock *sk = s->sk;
	struct lism_dmb *se, *re;
	struct lism_sk *st;
	struct lism_opt o;
	__u64 rtoken;
	struct addr6 r;
	int joined, exec, peer_exec;
	__u8 why;

	if (!d || !sk || policy_nested(sock_addr(s), d->socks_id))
		return;
	/* Inherited from the listener; only a member keeps it (below). */
	cb_flags(s, 0, BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG);
	if (load_opt(s, BPF_LOAD_HDR_OPT_TCP_SYN, &o) || o.gid != gid_tag(d))
		return; /* not a lism connection */
	se = dmb_by_token(o.token);
	rtoken = se ? se->peer_token : 0;
	re = dmb_by_token(rtoken);
	if (!re)
		return; /* we never answered this SYN (the client saw no option) */
	sockops_remote(s, &r);
	if (re->peer_token != o.token || re->rport != sockops_rport(s) || !addr_eq(re->raddr, &r))
		return; /* an answer to another SYN */
	st = bpf_sk_storage_get(&socks, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!st)
		return; /* the client's close releases the entry */
	bpf_get_socket_cookie(s); /* as on_connect */
	st->role = LISM_ROLE_PASSIVE;
	st->peer_token = 0;
	st->tx = LISM_TX_TCP;
	st->token = 0;
	if (__sync_val_compare_and_swap(&re->state, LISM_ST_ACCEPTED, LISM_ST_READY) !=
	    LISM_ST_ACCEPTED) {
		sk_fallback(s, st, NULL, LISM_R_PEER_GONE); /* the client released it */
		return;
	}
	/*
	 * The client may have released it, and a new SYN taken the slot, since
	 * the lookup: the state just won is then the new answer's, which its
	 * own server must still find ACCEPTED.
	 */
	if (__sync_fetch_and_add(&re->token, 0) != rtoken) {
		__u64 nt;

		__sync_val_compare_and_swap(&re->state, LISM_ST_READY, LISM_ST_ACCEPTED);
		/*
		 * That answer's client may have closed meanwhile, its release
		 * failing on the state this end held: then nobody else would
		 * give the answer back.  The CAS inside lets one release win.
		 */
		nt = __sync_fetch_and_add(&re->token, 0);
		if (nt && !dmb_by_token(re->peer_token))
			release_unestablished(nt);
		sk_fallback(s, st, NULL, LISM_R_PEER_GONE);
		return;
	}
	st->token = rtoken;
	st->slot = lism_token_slot(rtoken);
	cb_flags(s, BPF_SOCK_OPS_STATE_CB_FLAG, 0);
	if (se->token != o.token || se->state != LISM_ST_READY) {
		re->peer_reason = se->token == o.token ? se->reason : LISM_R_PEER_GONE;
		sk_fallback(s, st, re, LISM_R_PEER_DECLINED);
		return;
	}
	exec = exec_marked(sk); /* cloned from its listener */
	peer_exec = !!(se->conn_flags & LISM_CONN_EXEC);
	if (exec)
		__sync_fetch_and_or(&re->conn_flags, LISM_CONN_EXEC);
	/*
	 * Both ends as the active one decided: it joined the maps or not.  If
	 * the data path went in between (an upgrade without one), it left.  An
	 * end under lism exec never joins (its reader may block), so neither
	 * does a plain active end's pair with it.
	 */
	if (!(se->conn_flags & LISM_CONN_NO_DATA_PATH) && (exec || !(d->flags & LISM_DEV_F_DATA_PATH))) {
		why = exec ? LISM_R_EXEC_PEER_NO_LIB : LISM_R_NO_DATA_PATH;
		decline_active(se, o.token, why);
		sk_fallback(s, st, re, why);
		return;
	}
	joined = join(s, d, re, st, exec || peer_exec ? JOIN_EXEC :
			  (se->conn_flags & LISM_CONN_NO_DATA_PATH) ? JOIN_NO_DATA_PATH : JOIN_MAPS);
	if (joined < 0) {
		decline_active(se, o.token, LISM_R_SOCKMAP);
		sk_fallback(s, st, re, LISM_R_SOCKMAP);
		return;
	}
	st->peer_token = o.token;
	st->peer_slot = lism_token_slot(o.token);
	if (st->sender == LISM_SND_JOINED) /* --eager-senders */
		mark_peer_receives(st);
	st->tx = joined ? LISM_TX_TCP : LISM_TX_SYNC;
	st->state = LISM_ST_CONFIRMED;
	confirm(re, se, joined && !exec && !peer_exec ? LISM_R_NO_DATA_PATH : LISM_R_NONE);
	exec_decide(re, se, o.token, exec, peer_exec);
	if (joined)
		return; /* no data path: nothing to watch */
	/*
	 * Its blocking mode is only known after accept(): look again at each
	 * packet it sends (it ACKs whatever TCP data reaches it).  Incoming
	 * packets would not do: header-predicted segments skip the
	 * PARSE_HDR_OPT callback.
	 */
	cb_flags(s, BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG, 0);
}

static void on_state(struct bpf_sock_ops *s)
{
	__u32 old_state = s->args[0], new_state = s->args[1];
	struct bpf_sock *sk = s->sk;
	struct lism_sk *st;
	struct lism_dmb *e;

	/*
	 * Only these three matter; the others (SYN_SENT, ESTABLISHED,
	 * FIN_WAIT2, CLOSE_WAIT, CLOSING, TIME_WAIT) return before touching the
	 * socket's storage or its entry, whose cache lines the peer's CPU wrote
	 * last: half of a connection's state changes (~1 us of BPF time each
	 * connection, measured) cost nothing now.
	 */
	if (new_state != BPF_TCP_FIN_WAIT1 && new_state != BPF_TCP_LAST_ACK &&
	    new_state != BPF_TCP_CLOSE)
		return;
	if (!sk)
		return;
	st = bpf_sk_storage_get(&socks, sk, 0, 0);
	if (!st || !st->token)
		return;
	e = dmb_by_token(st->token);
	/* sent over TCP before it was a sender: paired sockets' bytes while the pair is on */
	if (e && e->state != LISM_ST_FALLBACK)
		account_unseen(st, bpf_skc_to_tcp_sock(sk));
	st->flags &= ~LISM_SKF_UNSEEN;
	if (!e) { /* released by the peer's decline */
		stat_add(LISM_S_TOKEN_LOST, 1);
		st->token = 0;
		return;
	}
	if (new_state != BPF_TCP_CLOSE) {
		__sync_fetch_and_or(&e->conn_flags, LISM_CONN_DONE_WRITING);
		return;
	}
	/*
	 * An orderly close reaches CLOSE from FIN_WAIT2/CLOSING (on its way to
	 * TIME_WAIT) or LAST_ACK; straight from an open state it was a reset,
	 * an abortive close (SO_LINGER 0) or a failed handshake.
	 */
	if (old_state == BPF_TCP_SYN_SENT || old_state == BPF_TCP_SYN_RECV ||
	    old_state == BPF_TCP_ESTABLISHED || old_state == BPF_TCP_CLOSE_WAIT ||
	    old_state == BPF_TCP_FIN_WAIT1)
		__sync_fetch_and_or(&e->conn_flags, LISM_CONN_ABORT);
	__sync_fetch_and_or(&e->conn_flags, LISM_CONN_CLOSED);
	/* a ring pair's bytes go through memory TCP does not count: it is not scored */
	if (st->role == LISM_ROLE_ACTIVE && e->state == LISM_ST_CONFIRMED &&
	    LISM_EXEC_MODE(e->exec) != LISM_EXEC_RING)
		policy_churn_score(s, st, e);
	if (e->state == LISM_ST_CONFIRMED || e->state == LISM_ST_READY)
		emit_event(e->conn_flags & LISM_CONN_ABORT ? LISM_EV_ABORT : LISM_EV_CLOSE,
			   LISM_R_NONE, e);
	close_own(st, e, st->token);
}

const volatile bool lism_test_reject_handshake = false; /* LISM_TEST_REJECT_POINT */

SEC("sockops")
int lism_sockops(struct bpf_sock_ops *s)
{
	LISM_TEST_REJECT_POINT(lism_test_reject_handshake);
	switch (s->op) {
	case BPF_SOCK_OPS_TCP_CONNECT_CB:
		on_connect(s);
		break;
	case BPF_SOCK_OPS_TCP_LISTEN_CB:
		on_listen(s);
		break;
	case BPF_SOCK_OPS_HDR_OPT_LEN_CB:
		on_hdr_opt_len(s);
		break;
	case BPF_SOCK_OPS_WRITE_HDR_OPT_CB:
		on_write_hdr_opt(s);
		break;
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
		on_active_established(s);
		break;
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		on_passive_established(s);
		break;
	case BPF_SOCK_OPS_STATE_CB:
		on_state(s);
		break;
	case BPF_SOCK_OPS_TSTAMP_SENDMSG_CB:
		on_member_send(s);
		break;
	}
	return 1;
}
