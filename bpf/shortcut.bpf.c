// SPDX-License-Identifier: GPL-2.0-only
/*
 * The data path: every send of a socket in the senders map runs this (a
 * member becomes a sender once data goes both ways, include/lism/sender.h);
 * it redirects into the peer through the shortcut map.
 *
 * A direction starts in SYNC: bytes the sender put into TCP before the pair
 * was confirmed (e.g. written right after connect()) may still be in flight
 * or unread.  tcp_bpf reads the shortcut queue before the TCP queue, so a
 * shortcut send now could overtake them.  The direction switches to
 * SHORTCUT only once the peer has read every TCP byte we wrote
 * (peer copied_seq == our write_seq), and it drops back to SYNC -- plain TCP,
 * which is always order-safe behind the shortcut queue -- whenever the
 * peer's DMB bound would be exceeded, so a reader that stops reading gets
 * TCP's flow control instead of unbounded kernel memory: at most the DMB
 * size plus one send (one sk_msg, at most MAX_MSG_FRAGS pages) stays unread.
 * A sender whose peer is gone leaves (sender.h).
 */
#include "sender.bpf.h"
#include "lism/rmem.h"

char LICENSE[] SEC("license") = "GPL";

extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;

/*
 * The peer socket is known by the address its sockops program published in
 * dmb_owner (sk_msg cannot look sockets up).  bpf_rdonly_cast() turns it into
 * an untrusted, read-only view: loads go through the exception table, so a
 * socket freed since we checked its token reads as garbage, never faults.
 * Garbage can only make one send take TCP instead of the shortcut.
 */
static __always_inline struct tcp_sock *tcp_view(__u64 addr)
{
	return bpf_rdonly_cast((void *)addr, bpf_core_type_id_kernel(struct tcp_sock));
}

static __always_inline struct sock *sock_view(__u64 addr)
{
	return bpf_rdonly_cast((void *)addr, bpf_core_type_id_kernel(struct sock));
}

/* Bytes sitting unread in the socket's shortcut receive queue (its DMB):
 * sock_shortcut_unread() (sock.bpf.h) with direct loads, as every send asks. */
static __always_inline __u32 shortcut_unread(__u64 addr)
{
	struct sock *sk = sock_view(addr);
	__u64 ud = (__u64)sk->sk_user_data & ~SK_USER_DATA_FLAGS;
	struct sk_psock *psock;

	if (!ud)
		return 0;
	psock = bpf_rdonly_cast((void *)ud, bpf_core_type_id_kernel(struct sk_psock));
	return psock->msg_tot_len;
}

/* The kernel's PAGE_SHIFT (no BTF names it): set by the loader from its page size. */
const volatile __u16 lism_page_shift = 12;

/* Memory cgroups read on the way up: the reader's own and up to 7 ancestors (pods sit 4-6 deep). */
#define RMEM_MEMCG_DEPTH 8

/*
 * Whether the reader's socket memory could refuse @size bytes more: the
 * redirect would then fail after the verdict, and the writer's send() with
 * it (include/lism/rmem.h).  Read-mostly lines first; the reader's
 * sk_forward_alloc and sk_rmem_alloc, lines it writes at every receive,
 * only when the rest says the charge could fail.
 */
static __always_inline int reader_memory_tight(__u64 addr, __u32 size)
{
	struct sock *sk = sock_view(addr);
	struct lism_rmem r = { .memcg_room = LISM_RMEM_NO_LIMIT, .page_shift = lism_page_shift };
	struct mem_cgroup *memcg = sk->sk_memcg;
	unsigned long *pressure;
	unsigned long flag = 0;

	/*
	 * cgroup v1 kmem.tcp limits: a v1 memory cgroup gives its sockets a
	 * memcg only while such a limit is set (tcpmem_active), and kernels
	 * built without CONFIG_MEMCG_V1 have none of these fields.
	 */
	if (bpf_core_field_exists(memcg->tcpmem) && bpf_core_field_exists(memcg->tcpmem_active) && memcg &&
	    memcg->tcpmem_active) {
		for (int i = 0; i < RMEM_MEMCG_DEPTH && memcg; i++) {
			__u64 room = lism_rmem_room(memcg->tcpmem.usage.counter, memcg->tcpmem.max);

			if (room < r.memcg_room)
				r.memcg_room = room;
			/* css is mem_cgroup's first member: the parent's css is the parent */
			memcg = bpf_rdonly_cast(memcg->css.parent, bpf_core_type_id_kernel(struct mem_cgroup));
		}
	}
	/* under a limit the pages count, and a socket in debt (negative) needs more of them */
	if (r.memcg_room != LISM_RMEM_NO_LIMIT)
		r.forward_alloc = sk->sk_forward_alloc;
	pressure = sk->__sk_common.skc_prot->memory_pressure;
	if (pressure && !bpf_probe_read_kernel(&flag, sizeof(flag), pressure))
		r.global_pressure = flag != 0;
	if (!lism_rmem_tight(&r, size))
		return 0; /* even with nothing charged ahead */
	r.forward_alloc = sk->sk_forward_alloc;
	r.rmem_alloc = sk->sk_backlog.rmem_alloc.counter;
	r.rmem_min = sk->__sk_common.skc_net.net->ipv4.sysctl_tcp_rmem[0];
	return lism_rmem_tight(&r, size);
}

/*
 * Only a reader known to be non-blocking may be redirected to: a blocking
 * reader inside tcp_recvmsg (MSG_WAITALL, SO_RCVLOWAT) waits on the TCP
 * queue only, and tcp_bpf's own read path ignores MSG_WAITALL.  A socket
 * not accept()ed yet has no file, so its mode is unknown: TCP until it is.
 * sock_nonblocking() (sock.bpf.h) with direct loads.
 */
static __always_inline int nonblocking_reader(__u64 addr)
{
	struct sock *sk = sock_view(addr);
	struct socket *so = sk->sk_socket;
	struct file *f;

	if (!so)
		return 0;
	f = so->file;
	return f && (f->f_flags & O_NONBLOCK);
}

/*
 * Ask the sender timer to take this sender, whose peer is gone, out of both
 * maps (sender.h); its sends go to TCP from now on.  It queues once.  0 if
 * the queue is full.
 */
static __always_inline int queue_leave(struct lism_sk *st)
{
	__u64 token = st->token;

	/* before the push: the timer may pop it at once on another CPU */
	st->sender = LISM_SND_LEAVING;
	st->tx = LISM_TX_TCP;
	if (!bpf_map_push_elem(&sender_leaves, &token, 0)) {
		sender_timer_kick();
		return 1;
	}
	st->sender = LISM_SND_JOINED; /* its caller decides what tx becomes */
	st->tx = LISM_TX_SYNC;
	return 0;
}

/*
 * An eager sender's watch (sender.h), at its send while the pair is on:
 * 1 if it is found one-way, its sends going to TCP from this one on.  The
 * sockops program takes it out of the senders map at its next packet (this
 * program may not); it stays in the shortcut map, its peer may still send.
 */
static __always_inline int eager_watch(struct lism_sk *st, const struct tcp_sock *tp,
				       const struct lism_dmb *pe, __u32 size)
{
	const struct lism_dmb *me = dmb_by_token(st->token);
	__u32 in, out;

	if (!tp || !me)
		return 0;
	in = tp->data_segs_in + (__u32)me->rx_msgs;
	out = tp->data_segs_out + (__u32)pe->rx_msgs;
	st->sizes_sends++;
	st->sizes_bytes += lism_sender_bulk_part(size);
	switch (lism_sender_eager_decide(in, out, st->sizes_sends, st->sizes_bytes)) {
	case LISM_SENDER_JOIN:
		st->flags &= ~LISM_SKF_EAGER_WATCH;
		return 0;
	case LISM_SENDER_STOP:
		if (lism_ablate & LISM_ABLATE_ONE_WAY_STOP) {
			st->flags &= ~LISM_SKF_EAGER_WATCH;
			return 0;
		}
		break;
	default:
		return 0;
	}
	/*
	 * Its earlier sends sit in the reader's psock queue, which
	 * tcp_bpf_recvmsg reads before the TCP queue: no reordering.  From
	 * here its bytes are counted at its close (this one included).
	 */
	start_unseen(st, tp);
	st->tx = LISM_TX_TCP;
	st->sender = LISM_SND_TCP;
	st->flags = (st->flags & ~LISM_SKF_EAGER_WATCH) | LISM_SKF_LEAVE_SENDERS;
	stat_add(LISM_S_SENDERS_ONE_WAY, 1);
	return 1;
}

const volatile bool lism_test_reject = false; /* LISM_TEST_REJECT_POINT */

SEC("sk_msg")
int lism_msg(struct sk_msg_md *msg)
{
	struct bpf_sock *sk = msg->sk;
	struct lism_dmb *pe;
	struct tcp_sock *tp;
	struct lism_sk *st;
	__u32 size = msg->size, unread, slot, bucket;
	__u64 *owner, *hist, peer;

	LISM_TEST_REJECT_POINT(lism_test_reject);
	if (!sk)
		return SK_PASS;
	/*
	 * Only a socket that may still send uses the shortcut.  After
	 * shutdown(SHUT_WR) (FIN_WAIT1, LAST_ACK, ...) TCP must refuse the
	 * send with EPIPE; a redirect would succeed and put bytes behind the
	 * peer's EOF.
	 */
	if (sk->state != BPF_TCP_ESTABLISHED && sk->state != BPF_TCP_CLOSE_WAIT)
		return SK_PASS;
	st = bpf_sk_storage_get(&socks, sk, 0, 0);
	if (!st || st->tx == LISM_TX_TCP)
		return SK_PASS;
	lism_churn_count_send(&st->sent, size);
	tp = bpf_skc_to_tcp_sock(sk);
	account_unseen(st, tp); /* at its first send as a sender: what went to TCP before (sender.h) */
	slot = st->peer_slot;
	pe = dmb_get(slot);
	owner = bpf_map_lookup_elem(&dmb_owner, &slot);
	if (!pe || !owner)
		goto tcp;
	if (pe->token != st->peer_token) {
		/*
		 * The peer is gone: this pairing is over, and a sender need not
		 * pay the data path.  A queued leave set tx itself, before the
		 * push: the timer may have answered already (a refusal asks
		 * again at the next send), which a write here would undo.
		 */
		if (st->sender != LISM_SND_JOINED || !queue_leave(st))
			st->tx = LISM_TX_TCP;
		goto tcp;
	}
	if (pe->state != LISM_ST_CONFIRMED)
		goto tcp;
	peer = *owner;
	if (!peer)
		goto tcp;
	if (!(st->flags & LISM_SKF_ALLOW_BLOCKING) && !nonblocking_reader(peer)) {
		/* told to the peer's own program, which may then leave the map safely */
		if (!(pe->conn_flags & LISM_CONN_SEEN_BLOCKING))
			__sync_fetch_and_or(&pe->conn_flags, LISM_CONN_SEEN_BLOCKING);
		goto tcp;
	}
	/*
	 * Non-blocking now (accepted since, or its mode changed): an older
	 * sighting must not let it leave while this send may redirect.
	 */
	if (pe->conn_flags & LISM_CONN_SEEN_BLOCKING)
		__sync_fetch_and_and(&pe->conn_flags, ~LISM_CONN_SEEN_BLOCKING);
	if ((st->flags & LISM_SKF_EAGER_WATCH) && eager_watch(st, tp, pe, size))
		return SK_PASS; /* to TCP, unseen */

	if (st->tx == LISM_TX_SYNC) {
		if (!tp || tcp_view(peer)->copied_seq != tp->write_seq) {
			stat_add(LISM_S_SYNC_HOLDS, 1);
			goto tcp;
		}
		st->tx = LISM_TX_SHORTCUT;
		st->state = LISM_ST_CONFIRMED;
	}

	/* Like a TCP receive buffer, an empty DMB takes one message of any size. */
	unread = shortcut_unread(peer);
	if (unread && (__u64)unread + size > pe->dmb_size) {
		st->tx = LISM_TX_SYNC;
		stat_add(LISM_S_DMB_FULL, 1);
		goto tcp;
	}
	if (lism_rmem_worth_checking(unread, size) && reader_memory_tight(peer, size)) {
		st->tx = LISM_TX_SYNC;
		stat_add(LISM_S_PEER_MEM_TIGHT, 1);
		goto tcp;
	}
	if (bpf_msg_redirect_hash(msg, &shortcut, &st->peer_token, BPF_F_INGRESS) != SK_PASS) {
		st->tx = LISM_TX_SYNC;
		stat_add(LISM_S_REDIRECT_MISS, 1);
		goto tcp;
	}
	/* the cursors and the send count are derived where they are read (cursor.h, "sizes") */
	pe->rx_bytes += size;
	pe->rx_msgs += 1;
	stat_add(LISM_S_SC_BYTES, size);
	bucket = lism_hist_bucket(size);
	hist = bpf_map_lookup_elem(&sizes, &bucket);
	if (hist)
		*hist += 1;
	return SK_PASS;

tcp:
	/*
	 * Whatever goes to TCP puts the direction back into SYNC: the next
	 * shortcut send must wait until the peer has read it.  (After a failed
	 * TCP push the kernel even reuses this PASS for the next send without
	 * running us, which is why that must hold for every PASS.)
	 */
	if (st->tx == LISM_TX_SHORTCUT)
		st->tx = LISM_TX_SYNC;
	count_tcp_bytes(st, size);
	stat_add(LISM_S_TCP_MSGS, 1);
	return SK_PASS;
}

/*
 * Sets the sender join timer's callback (sender.bpf.h), run by the loader
 * through BPF_PROG_RUN when the data path starts, at load and at load
 * --upgrade, like lism_sweep_start: the callback is verified as a tc
 * program's, which may update sockmaps.  Returns 1 when the timer is ready.
 */
SEC("tc")
int lism_sender_start(struct __sk_buff *skb)
{
	(void)skb;
	return sender_start();
}
