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
 * segments.  (At 14 B..1 KiB a stream over the shortcut runs at 0.3-0.6x
 * TCP, at 16 KiB..64000 B 0.5-0.9x; at >= 64 KiB per send the handoff is
 * amortised and the shortcut wins again, 2.7-4x.)
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

struct lism_stream {
	__u64 hold_until; /* monotonic ns until which sends stay on TCP; 0: no hold */
	__u8 streak;      /* consecutive shortcut sends that found the reader behind */
	__u8 calm;        /* consecutive shortcut sends that found it caught up */
	__u8 hold_shift;  /* next hold: LISM_STREAM_HOLD_MIN_NS << hold_shift */
	__u8 pad[5];
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

static inline void lism_stream_start_hold(struct lism_stream *s, __u64 now)
{
	s->hold_until = now + (LISM_STREAM_HOLD_MIN_NS << s->hold_shift);
	if (s->hold_shift < LISM_STREAM_HOLD_MAX_SHIFT)
		s->hold_shift++;
}

#endif
