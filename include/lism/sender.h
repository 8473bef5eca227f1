/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Which members' sends run the data path.
 *
 * Every paired end is a member of the shortcut map (its peer may redirect
 * into it) and, from the handshake on, a sender (the senders map, which
 * carries the sk_msg program) -- unless its send buffer or unsent-bytes
 * limit is below LISM_SENDER_MIN_SEND_LIMIT (SO_SNDBUF, tcp_wmem,
 * TCP_NOTSENT_LOWAT): through tcp_bpf such a writer waits for ACKs, so its
 * sends stay plain TCP for its life, counted when it shuts down.  A sender
 * whose peer is gone leaves both maps (nothing can be redirected to it, and
 * its sends would pay the data path for nothing).
 *
 * Invariants: a join never reorders bytes (a new sender's direction starts
 * in SYNC); nobody leaves while a redirect into it may be in flight (the
 * peer's entry not released) or its shortcut queue holds bytes.  Why not
 * the rules that made a member a sender only once data went both ways or
 * its sends were bulk: docs/performance-journal.md, "The sender rules
 * removed".
 */
#ifndef LISM_SENDER_H
#define LISM_SENDER_H

#include "types.h"

#define LISM_SENDER_LEAVES_PER_TICK 16
#define LISM_SENDER_MIN_SNDBUF_SEGS 4 /* segments of 64 KiB */
#define LISM_SENDER_MIN_SEND_LIMIT (LISM_SENDER_MIN_SNDBUF_SEGS * (64u << 10)) /* sk_sndbuf, TCP_NOTSENT_LOWAT */

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
 * (write_seq - snd_una, which never exceeds the send buffer).  Taken once
 * when a member's sends stay off the data path and once when it shuts
 * down, it gives the bytes that went to TCP unseen, however many GiB.
 */
static inline __u64 lism_sender_written(__u64 bytes_acked, __u32 snd_una, __u32 write_seq)
{
	return bytes_acked + (__u32)(write_seq - snd_una);
}

#endif
