/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Churn detection: connections too short to pay for the shortcut stay on
 * TCP from their SYN on.
 *
 * Engaging a connection costs ~10 us of CPU over plain TCP on the target
 * machines (handshake callbacks, socket storage, DMB entries, the psock of
 * the sockhash and its teardown; docs/performance.md), while a shortcut
 * send saves ~1-2 us, more for big ones.  A connection that moves only a
 * handful of messages (HTTP with `Connection: close`, health checks) is
 * slower with lism than without -- and it cannot be known at the SYN.  So
 * the active end, when it closes, scores what its connection moved: one
 * unit per message either way (its sends, the shortcut messages and TCP
 * data segments it received) plus one per LISM_CHURN_UNIT_BYTES.  At most
 * LISM_CHURN_UNITS units in at most LISM_CHURN_LIFE_NS (an idle pool closed
 * at once is not churn) is a short connection, remembered per destination
 * (the client's netns, the address and port it connected to: a Service IP
 * before DNAT).  Once LISM_CHURN_STREAK short connections to a destination
 * closed in a row, each at most the churn window (--churn-window, default
 * LISM_CHURN_WINDOW_MS) after the one before, new connections to it skip
 * the shortcut (reason short-lived): no option, no state, no DMB.
 *
 * Skipping lasts while connections keep coming, each within the window of
 * the one before: it follows the churn, and a connection opened after a
 * pause engages.  Every LISM_CHURN_PROBE_EVERY-th one engages anyway and is
 * scored again, so one long connection among the probes ends it.  A
 * connection skipped stays on TCP for its whole life (a socket cannot join
 * the sockhash later), which is why skipping needs a real churn: at least
 * one connection per window (20 a second with the default), where the cost
 * adds up (at thousands a second it is a tenth of the CPU); below that
 * every connection engages, at a cost nobody notices.
 *
 * Pure functions on a small state, shared by the handshake program and the
 * unit tests.  The state is updated without locks from several CPUs; a lost
 * update only moves a decision by one connection.
 */
#ifndef LISM_CHURN_H
#define LISM_CHURN_H

#include "types.h"

#define LISM_CHURN_UNITS 8
#define LISM_CHURN_UNIT_BYTES (16u << 10)
#define LISM_CHURN_STREAK 8
#define LISM_CHURN_WINDOW_MS 50
#define LISM_CHURN_WINDOW_MAX_MS 60000
#define LISM_CHURN_PROBE_EVERY 64
#define LISM_CHURN_LIFE_NS 1000000000ull /* 1 s */

/* Key of the "churn" map: a destination as the connecting socket names it. */
struct lism_churn_key {
	__u64 netns;   /* netns cookie of the connecting socket */
	__u8 addr[16]; /* IPv6, or IPv4 as ::ffff:a.b.c.d */
	__u16 port;    /* host order */
	__u16 pad0;
	__u32 pad1;
};

struct lism_churn {
	__u64 last_ns; /* bpf_ktime_get_ns() of the last short close or skipped connection */
	__u32 streak;  /* short closes in a row, each within the window of the one before */
	__u32 seq;     /* connections seen while skipping (picks the probes) */
};

/* Count one send of @size bytes into a saturating per-socket counter. */
static inline void lism_churn_count_send(__u8 *sent, __u32 size)
{
	__u32 n = *sent;

	if (n > LISM_CHURN_UNITS)
		return; /* already long: no more writes */
	n += 1 + size / LISM_CHURN_UNIT_BYTES;
	*sent = n > LISM_CHURN_UNITS ? LISM_CHURN_UNITS + 1 : (__u8)n;
}

/* Units of a connection: its own sends (counted), the messages it received, and its bytes. */
static inline __u64 lism_churn_units(__u8 sent, __u64 rx_msgs, __u64 bytes)
{
	return (__u64)sent + rx_msgs + bytes / LISM_CHURN_UNIT_BYTES;
}

/* Short: little moved, and quickly (a pool of idle connections is not churn). */
static inline int lism_churn_is_short(__u64 units, __u64 lifetime_ns)
{
	return units <= LISM_CHURN_UNITS && lifetime_ns <= LISM_CHURN_LIFE_NS;
}

/* Whether @now is more than @window_ns after @then (another CPU may have written a later @then). */
static inline int lism_churn_expired(__u64 then, __u64 now, __u64 window_ns)
{
	return (__s64)(now - then) > (__s64)window_ns;
}

/* Note activity at @now; never moves back (another CPU may have stored a later time). */
static inline void lism_churn_touch(struct lism_churn *c, __u64 now)
{
	if ((__s64)(now - c->last_ns) > 0)
		c->last_ns = now;
}

/* A scored connection to the destination closed at @now. */
static inline void lism_churn_closed(struct lism_churn *c, int is_short, __u64 now, __u64 window_ns)
{
	if (!is_short || (c->streak && lism_churn_expired(c->last_ns, now, window_ns))) {
		/* over: the next streak starts from scratch, and with a probe */
		c->streak = 0;
		c->seq = 0;
		if (!is_short)
			return;
	}
	if (c->streak < LISM_CHURN_STREAK)
		c->streak++;
	lism_churn_touch(c, now);
}

/* Whether a new connection to the destination at @now skips the shortcut. */
static inline int lism_churn_skip(struct lism_churn *c, __u64 now, __u64 window_ns)
{
	if (c->streak < LISM_CHURN_STREAK || lism_churn_expired(c->last_ns, now, window_ns))
		return 0;
	lism_churn_touch(c, now); /* the churn goes on */
	return __sync_fetch_and_add(&c->seq, 1) % LISM_CHURN_PROBE_EVERY != 0;
}

#endif
