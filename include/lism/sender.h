/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Which members' sends run the data path.
 *
 * Every paired end is a member of the shortcut map (its peer may redirect
 * into it); it becomes a sender (the senders map, which carries the sk_msg
 * program) only when that wins, because a socket whose sends run the
 * program pays tcp_bpf's send path even for sends kept on TCP:
 *
 * - join: data went both ways (it sends after LISM_SENDER_MIN_SEGS data
 *   segments each way), or its first LISM_SENDER_SIZE_SENDS sends (the
 *   per-sendmsg callback, 6.15) average LISM_SENDER_BULK_BYTES in sends of
 *   LISM_SENDER_BIG or more; not while corked, not with a send limit below
 *   LISM_SENDER_MIN_SEND_LIMIT (SO_SNDBUF, tcp_wmem, TCP_NOTSENT_LOWAT);
 * - a bulk joiner whose application set no SO_SNDBUF gets
 *   LISM_SENDER_BULK_SNDBUF;
 * - a member that moved LISM_SENDER_WATCH_SEGS segments without joining
 *   stays plain TCP for its life;
 * - leave: a sender whose peer is gone leaves both maps (nothing can be
 *   redirected to it, and its sends would pay the data path for nothing);
 * - an eager sender (--eager-senders) is watched the same way, counting its
 *   shortcut messages with its TCP segments (lism_sender_eager_decide); found
 *   one-way, its sends go to TCP and it leaves the senders map, staying a
 *   member (its peer may still redirect into it).  Its earlier bytes in the
 *   reader's psock queue are read first (tcp_bpf_recvmsg), so order holds.
 *
 * Invariants: a join or a leave never reorders bytes (a new sender's
 * direction starts in SYNC; a leaver's shortcut queue is empty);
 * nobody leaves while a redirect into it may be in flight
 * (LISM_CONN_PEER_SENDS set and the peer's entry not released); joins and
 * leaves run in a BPF timer's tc program (bpf/sender.bpf.h), because sockops
 * may update a sockmap only in the ESTABLISHED callbacks.  The measurements behind each rule:
 * docs/performance-journal.md, "Who sends through the data path".
 */
#ifndef LISM_SENDER_H
#define LISM_SENDER_H

#include "types.h"

#define LISM_SENDER_MIN_SEGS 4
#define LISM_SENDER_BIG (64u << 10) /* a send this big or bigger: the shortcut wins (bulk) */
#define LISM_SENDER_SIZE_SENDS 16
#define LISM_SENDER_BULK_BYTES (32u << 10)
#define LISM_SENDER_WATCH_SEGS 1024
#define LISM_SENDER_JOINS_PER_TICK 128
#define LISM_SENDER_LEAVES_PER_TICK 16
#define LISM_SENDER_BULK_SNDBUF (208u << 10) /* SO_SNDBUF: sk_sndbuf 416 KiB (at most 2 x net.core.wmem_max) */
#define LISM_SENDER_MIN_SNDBUF_SEGS 4 /* segments of 64 KiB */
#define LISM_SENDER_MIN_SEND_LIMIT (LISM_SENDER_MIN_SNDBUF_SEGS * (64u << 10)) /* sk_sndbuf, TCP_NOTSENT_LOWAT */

enum lism_sender_verdict {
	LISM_SENDER_WAIT = 0, /* keep watching */
	LISM_SENDER_JOIN = 1, /* data went both ways, or bulk sends: join the senders */
	LISM_SENDER_STOP = 2, /* one-way so far, for long enough: stay on TCP */
};

/*
 * Decide at an outgoing packet of @skb_len payload bytes (0: a pure ACK),
 * given the socket's data segment counts so far (tcp_sock data_segs_in/out).
 */
static inline int lism_sender_decide(__u32 skb_len, __u32 data_segs_in, __u32 data_segs_out)
{
	if (skb_len && data_segs_in >= LISM_SENDER_MIN_SEGS && data_segs_out >= LISM_SENDER_MIN_SEGS)
		return LISM_SENDER_JOIN;
	/*
	 * Long, and never a data send after data went both ways: a writer
	 * nobody answers, one long answer to a request, a reader that stopped
	 * asking.  The watch ends; its sends stay plain TCP.
	 */
	if (data_segs_out > LISM_SENDER_WATCH_SEGS || data_segs_in > LISM_SENDER_WATCH_SEGS)
		return LISM_SENDER_STOP;
	return LISM_SENDER_WAIT;
}

/* Whether @sends whose sends of LISM_SENDER_BIG or more carried @bulk bytes were bulk sends. */
static inline int lism_sender_bulk(__u32 sends, __u64 bulk)
{
	return bulk >= (__u64)sends * LISM_SENDER_BULK_BYTES;
}

/*
 * An eager sender's watch, at each of its sends: @in and @out count what
 * went each way, TCP data segments and shortcut messages together (a
 * shortcut stream sends no TCP segments); of its @sends so far, sends of
 * LISM_SENDER_BIG or more carried @bulk bytes.  One-way bulk sends (what
 * the size watch joins, lism_sender_sizes) stay: JOIN.
 */
static inline int lism_sender_eager_decide(__u32 in, __u32 out, __u32 sends, __u64 bulk)
{
	int v = lism_sender_decide(1, in, out);

	if (v == LISM_SENDER_STOP && lism_sender_bulk(sends, bulk))
		return LISM_SENDER_JOIN;
	return v;
}

/* What a measured send of @size bytes adds to the bulk bytes: only a send the shortcut wins. */
static inline __u32 lism_sender_bulk_part(__u32 size)
{
	return size >= LISM_SENDER_BIG ? size : 0;
}

/*
 * A member's first @sends, measured, whose sends of LISM_SENDER_BIG or
 * more carried @bulk bytes: LISM_SENDER_WAIT until it made
 * LISM_SENDER_SIZE_SENDS of them, then JOIN if they were bulk sends, else
 * STOP (the size watch ends; the segment watch above goes on).
 */
static inline int lism_sender_sizes(__u32 sends, __u64 bulk)
{
	if (sends < LISM_SENDER_SIZE_SENDS)
		return LISM_SENDER_WAIT;
	return lism_sender_bulk(sends, bulk) ? LISM_SENDER_JOIN : LISM_SENDER_STOP;
}

/*
 * Whether a member's send limits suit the data path: @sndbuf bytes of send
 * buffer (sk_sndbuf) now, @locked if its application set SO_SNDBUF, else
 * TCP may grow it up to @wmem_max (net.ipv4.tcp_wmem[2]); and
 * @notsent_lowat, its effective TCP_NOTSENT_LOWAT (UINT_MAX: none).
 */
static inline int lism_sender_limits_fit(int locked, __u32 sndbuf, __u32 wmem_max, __u32 notsent_lowat)
{
	__u32 most = (locked || sndbuf > wmem_max) ? sndbuf : wmem_max;

	return most >= LISM_SENDER_MIN_SEND_LIMIT && notsent_lowat >= LISM_SENDER_MIN_SEND_LIMIT;
}

/*
 * The bytes a socket has written, up to a 64-bit base, from TCP's own
 * counters: bytes_acked (64 bits) plus what is sent but unacknowledged
 * (write_seq - snd_una, which never exceeds the send buffer).  Taking it
 * once when its sends stop being seen and once when they are seen again
 * gives the bytes that went to TCP unseen, however many GiB.
 */
static inline __u64 lism_sender_written(__u64 bytes_acked, __u32 snd_una, __u32 write_seq)
{
	return bytes_acked + (__u32)(write_seq - snd_una);
}

#endif
