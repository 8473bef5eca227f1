/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * One end's view of a ring DMB pair (include/lism/ring.h): rx reads this
 * end's DMB, tx writes the peer's.  The calls copy bytes and move cursors,
 * nothing else: no syscall, no lock, no allocation.
 *
 * Rules:
 * - An end's own cursor is the private copy here, never the shared one: the
 *   peer can write anything into the header.  The peer's cursor is loaded,
 *   checked (count < size, 0 <= producer - consumer <= size, never moving
 *   back) and a broken check makes that direction's every later call fail
 *   with -EPROTO, which the caller turns into a reset of the connection.
 *   Once recv said a reset or the end of the stream, it says it again,
 *   whatever the peer writes after.  No call reads or writes
 *   outside the mapping whatever the header holds.
 * - One caller at a time per rx and per tx: the caller serializes (threads,
 *   and processes sharing the socket after fork).
 * - Waits: a side about to sleep arms (rx_arm, tx_arm) and sleeps only if
 *   that says so; the other side asks (tx_ring after it writes, rx_ring
 *   after it reads) and rings a doorbell when told.  Both put a full fence
 *   between their store and their load, so one of the two always sees the
 *   other: no wakeup is lost.
 */
#ifndef LISM_EXEC_RING_H
#define LISM_EXEC_RING_H

#include <stdbool.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "lism/ring.h"

/* The largest DMB: keeps every cursor distance well inside 64 bits. */
#define LISM_RING_DMB_MAX (1u << 30)

#define LISM_RING_PEEK 1 /* recv: copy without consuming (MSG_PEEK) */

struct lism_ring_rx {
	struct lism_ring_dir *dir;     /* shared: the ring into this end */
	const unsigned char *buf;      /* this end's DMB */
	__u32 size;
	struct lism_cursor cons;       /* this end's consumer cursor: the authority */
	struct lism_cursor prod_seen;  /* the peer's producer cursor as last checked */
	bool eof;                      /* recv said the end of the stream */
	int err;                       /* 0, or -EPROTO or -ECONNRESET for good */
};

struct lism_ring_tx {
	struct lism_ring_dir *dir;     /* shared: the ring into the peer */
	unsigned char *buf;            /* the peer's DMB */
	__u32 size;
	struct lism_cursor prod;       /* this end's producer cursor: the authority */
	struct lism_cursor cons_seen;  /* the peer's consumer cursor as last checked */
	__u32 state;                   /* LISM_RING_DONE_WRITING ... as this end set them */
	int err;
};

/* The device: lay out a header for DMBs of @dmb_size bytes in @len bytes of
 * zeroed memory.  -EINVAL if @len is not lism_ring_region_size(@dmb_size). */
int lism_ring_init(void *base, __u64 len, __u32 dmb_size, __u64 gid, __u64 token0, __u64 token1);

/* An end: take end @end's view of the @len bytes mapped at @base, from the
 * cursors the header holds (0 on a fresh pair).  -EINVAL for a bad @end,
 * -EPROTO if the header does not describe a pair of @len bytes or its
 * cursors break the invariant. */
int lism_ring_attach(void *base, __u64 len, int end, struct lism_ring_rx *rx, struct lism_ring_tx *tx);

/* Copy up to the iovecs' length out of the DMB (read(2)'s answers): the
 * bytes copied; 0 for iovecs of no length, and at the end of the stream
 * (the writer done or closed and everything read); -EAGAIN if nothing is
 * there yet; -ECONNRESET if the writer aborted; -EPROTO if the header
 * broke an invariant. */
ssize_t lism_ring_recv(struct lism_ring_rx *rx, const struct iovec *iov, int iovcnt, int flags);

/* The bytes waiting in this end's DMB (FIONREAD), or the error recv
 * said for good (-EPROTO, -ECONNRESET). */
ssize_t lism_ring_unread(struct lism_ring_rx *rx);

/* Copy up to the iovecs' length into the peer's DMB: the bytes copied;
 * -EAGAIN if it is full; -EPIPE if this end shut down writing or the
 * reader closed; -EPROTO if the header broke an invariant. */
ssize_t lism_ring_send(struct lism_ring_tx *tx, const struct iovec *iov, int iovcnt);

/* This end stops writing (LISM_RING_DONE_WRITING, _CLOSED) or resets
 * (_ABORT): said after every byte already sent. */
void lism_ring_tx_set_state(struct lism_ring_tx *tx, __u32 state);

/* This end stops reading: the peer's sends fail with -EPIPE.  True if the
 * peer's writer sleeps for room and needs a doorbell to learn it. */
bool lism_ring_rx_close(struct lism_ring_rx *rx);

/* The reader is about to sleep: true if it may (nothing to read, nothing
 * said); then the writer's next tx_ring answers true.  False means read
 * again first. */
bool lism_ring_rx_arm(struct lism_ring_rx *rx);
/* The writer wrote or changed its state: true if the reader sleeps and
 * needs a doorbell (said once per arm). */
bool lism_ring_tx_ring(struct lism_ring_tx *tx);

/* The same for a writer that waits for room, and the reader that frees it. */
bool lism_ring_tx_arm(struct lism_ring_tx *tx);
bool lism_ring_rx_ring(struct lism_ring_rx *rx);

#endif
