/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Adaptive engagement: which sends of a paired socket take the shortcut.
 *
 * Measured on the target machines (docs/performance.md): the shortcut wins
 * whenever the reader keeps up -- request/response, ping-pong, bursts --
 * because each send skips the loopback TCP stack.  It loses when the reader
 * falls behind a stream of sends below 64 KiB: every redirect takes the
 * reader's socket lock, which the reader holds while it copies, so sender
 * and reader serialise and trade a cross-CPU wakeup per send, while TCP
 * queues to the reader's backlog without waiting and coalesces small
 * segments.  (sockperf's blocking reader: at 14 B..1 KiB a stream over the
 * shortcut runs at 0.3-0.6x TCP, at 16 KiB..64000 B 0.5-0.9x; at >= 64 KiB
 * per send the handoff is amortised and the shortcut wins again, 2.7-4x.
 * A reader that reads each small message with its own read() makes TCP
 * itself slow, and across CPUs a redirect per send then wins, 1.6x at
 * 100 B..1 KiB, where these holds cost it: docs/performance.md, "Batching,
 * and which reader the redirect beats".)
 *
 * So a direction counts consecutive shortcut sends that find the reader
 * still behind (bytes of ours unread).  After LISM_STREAM_STREAK of them it
 * is a stream: the sends go to TCP for a hold time, and since TCP bytes are
 * then in flight the direction goes back through SYNC (order-safe) before
 * it may use the shortcut again.  Each new stream detection doubles the
 * hold (up to LISM_STREAM_HOLD_MAX_SHIFT); a run of LISM_STREAM_CALM sends
 * that find the reader caught up resets it.  Sends of LISM_STREAM_BIG bytes
 * or more never count as streaming.
 *
 * While a direction streams, running the data-path program on every send
 * costs more than its decision is worth (it would say "TCP" again), so a
 * send kept on TCP passes its verdict ahead (bpf_msg_apply_bytes): the
 * kernel applies the same PASS to a budget of bytes -- this send and up to
 * LISM_STREAM_PASS_SENDS - 1 more of its size, at most 64 KiB -- without
 * running the program again.  The bytes that pass unseen are accounted when
 * the program next runs, or when the socket stops sending or falls back,
 * from how far the socket's write_seq moved.
 *
 * Pure functions on a small state, shared by the data-path program and the
 * unit tests.
 */
#ifndef LISM_STREAM_H
#define LISM_STREAM_H

#include "types.h"

#define LISM_STREAM_STREAK 4
#define LISM_STREAM_CALM 4
#define LISM_STREAM_HOLD_MIN_NS 1000000ull /* 1 ms */
#define LISM_STREAM_HOLD_MAX_SHIFT 6       /* 64 ms */
#define LISM_STREAM_BIG (64u << 10)
#define LISM_STREAM_PASS_SENDS 16

struct lism_stream {
	__u64 hold_until; /* monotonic ns until which sends stay on TCP; 0: no hold */
	__u8 streak;      /* consecutive shortcut sends that found the reader behind */
	__u8 calm;        /* consecutive shortcut sends that found it caught up */
	__u8 hold_shift;  /* next hold: LISM_STREAM_HOLD_MIN_NS << hold_shift */
	__u8 passing;     /* a verdict was passed ahead (pass_end is valid) */
	__u32 pass_end;   /* write_seq after the send that passed it ahead */
};

/* Whether a hold is running at @now (and forget one that ended). */
static inline int lism_stream_held(struct lism_stream *s, __u64 now)
{
	if (!s->hold_until)
		return 0;
	if (now < s->hold_until)
		return 1;
	s->hold_until = 0;
	return 0;
}

/*
 * A send of @size bytes is about to take the shortcut while @unread bytes
 * of ours wait in the reader's queue.  Returns 1 when this send starts a
 * stream hold (the caller then reads the clock and calls
 * lism_stream_start_hold), 0 to go ahead.
 */
static inline int lism_stream_note(struct lism_stream *s, __u32 unread, __u32 size)
{
	if (!unread) {
		s->streak = 0;
		if (s->calm < LISM_STREAM_CALM && ++s->calm == LISM_STREAM_CALM)
			s->hold_shift = 0; /* keeps up: whatever streamed before is over */
		return 0;
	}
	s->calm = 0;
	if (size >= LISM_STREAM_BIG)
		return 0;
	if (++s->streak < LISM_STREAM_STREAK)
		return 0;
	s->streak = 0;
	return 1;
}

/* Whether the direction streams: a stream was found and no calm run ended it. */
static inline int lism_stream_active(const struct lism_stream *s)
{
	return s->hold_shift != 0;
}

/*
 * Bytes for which a send of @size bytes kept on TCP lets the kernel pass
 * sends to TCP without running the program (the budget starts with this
 * send): whole sends of its size, LISM_STREAM_PASS_SENDS of them, fewer
 * when that would exceed LISM_STREAM_BIG -- the budget outlives a change of
 * pattern, so it is kept small in bytes: after a stream, at most 64 KiB of
 * later sends, whatever their size, go to TCP unseen.  0 for a send of
 * LISM_STREAM_BIG or more: such sends never stream, and each may take the
 * shortcut again as soon as the peer read our TCP bytes.  Records where the
 * unseen bytes start (@write_seq: the socket's before this send) for
 * lism_stream_passed().
 */
static inline __u32 lism_stream_pass_ahead(struct lism_stream *s, __u32 write_seq, __u32 size)
{
	__u32 sends;

	if (!size || size >= LISM_STREAM_BIG)
		return 0;
	sends = LISM_STREAM_BIG / size;
	if (sends > LISM_STREAM_PASS_SENDS)
		sends = LISM_STREAM_PASS_SENDS;
	s->pass_end = write_seq + size;
	s->passing = 1;
	return size * sends;
}

/*
 * Bytes that went to TCP under a verdict passed ahead without the program
 * seeing them, given the socket's @write_seq now; forgets the grant.  (The
 * granting send was accounted when it was decided; if the kernel failed to
 * push part of it, the count stops at zero.)
 */
static inline __u32 lism_stream_passed(struct lism_stream *s, __u32 write_seq)
{
	__u32 moved = write_seq - s->pass_end;

	if (!s->passing)
		return 0;
	s->passing = 0;
	return (__s32)moved > 0 ? moved : 0;
}

static inline void lism_stream_start_hold(struct lism_stream *s, __u64 now)
{
	s->hold_until = now + (LISM_STREAM_HOLD_MIN_NS << s->hold_shift);
	if (s->hold_shift < LISM_STREAM_HOLD_MAX_SHIFT)
		s->hold_shift++;
}

#endif
