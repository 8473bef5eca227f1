/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A ring DMB pair (lism exec): the shared memory of one paired connection,
 * made by the lism device and mapped by the processes of its two ends.
 * Page 0 is this header, then end 0's DMB, then end 1's, each dmb_size
 * bytes.  End i reads its own DMB and its peer writes into it: one ring
 * per direction, dir[i] being the ring into end i.
 *
 * Each direction's cursors are CDC-style {wrap, count} (cursor.h) packed
 * into one 64-bit word, so that a load sees both halves of one store.  The
 * producer lines are written by the writer and the consumer lines by the
 * reader; the exceptions are the writer's wait flag (set by the writer,
 * taken by the reader that frees room) and the doorbell word (both sides,
 * by atomic operations).
 *
 * Invariant: 0 <= producer - consumer <= dmb_size.  The header is shared
 * with another process, so it is untrusted: each end keeps its own cursor
 * privately, checks the peer's against it on every load, and a broken
 * invariant aborts the connection (exec/ring.c).
 *
 * Readiness: the pair's TCP connection stays, as the doorbell channel.
 * The writer sends one doorbell byte each time its count of unread bytes
 * crosses above 0, and the reader eats one each time its consumption takes
 * the count back to 0 or below, so a ring holding bytes always has a
 * doorbell unread (or on its way) on the reader's socket: the kernel's
 * readiness (poll, epoll, a blocking recv) is the ring's.  The exception is
 * a reader that spins on the ring (its POLLING flag, in the same word as
 * the count): the writer's crossings ring nothing then, and the reader says
 * the bytes itself (exec/bell.h has the rule); while it spins, the writer
 * may also leave its bytes out of the count (carried counts, bell.h).
 *
 * Runs: a stretch of the stream may go through TCP instead (a
 * non-blocking writer whose ring is full, sendfile): the writer describes
 * it in a run slot (the ring position it comes before, the doorbells sent
 * before its first byte, its length so far, counted before the bytes are
 * sent), and the reader reads the ring up to it, eats those doorbells,
 * reads its bytes from TCP, and goes on with the ring once it ended.  At
 * most LISM_RING_RUNS runs are open or unread at a time; two at most in
 * practice (a run ends only once its reader reached it, and the next one
 * starts only after that: the one being read, and one open).
 */
#ifndef LISM_RING_H
#define LISM_RING_H

#include "types.h"
#include "cursor.h"

#define LISM_RING_MAGIC    0x676e69726d73696cULL /* "lismring" */
#define LISM_RING_VERSION  7
#define LISM_RING_HDR_SIZE 4096u
#define LISM_RING_LINE     64

/* A direction's conn_state, set by its writer (SMC's peer_done_writing,
 * peer_conn_closed and peer_conn_abort), in the producer line. */
enum {
	LISM_RING_DONE_WRITING = 1u << 0, /* shutdown(SHUT_WR): EOF after the bytes written */
	LISM_RING_CLOSED       = 1u << 1, /* the writer's end is closed: EOF after the bytes */
	LISM_RING_ABORT        = 1u << 2, /* reset: ECONNRESET, unread bytes dropped */
};

/* The reader's state, in the consumer line: nobody will read what is written. */
#define LISM_RING_READER_CLOSED (1u << 0)

#define LISM_RING_RUNS 4

/*
 * The device makes ring DMBs of at most this size (and at most --dmb-size):
 * a ring whose bytes stay in the two CPUs' caches.  sockperf 64000 B moved
 * 16.1-16.9 GB/s through 1 MiB rings against 13.0-13.9 through 4 MiB ones,
 * and the shared two-copy reference 18.6 GB/s at 1 MiB against 14.6-15.7
 * at 4 MiB (2026-12-05; docs/exec.md).
 */
#define LISM_RING_DMB_CACHE (1u << 20)

/*
 * Each direction is laid out by who writes what how often, so that a
 * stream of small messages moves one shared line per message (the
 * doorbell word), not four: the producer cursor's line is the writer's
 * alone (the reader reads the count instead while it is above 0), the
 * consumer cursor's the reader's (the writer reloads it only when the room
 * it last saw is short), and what either side reads on every call but
 * writes rarely (states, runs, the writer's wait flag) has lines of its own.
 */
struct lism_ring_prod {
	__u64 cursor;       /* lism_cursor_pack(): bytes written into the DMB */
	__u64 bells;        /* doorbells sent so far (the writer's count, for a re-attach) */
	__u64 carried;      /* bytes published and not yet added to the count (exec/bell.h,
			       carried counts; for a re-attach), below dmb_size / 2 */
	__u8 pad0[LISM_RING_LINE - 24];
	__u64 bell;         /* the doorbell word (exec/bell.h): bytes counted, less those
			       consumed (the writer adds after it publishes, the reader takes
			       after it consumes, and a writer may carry up to half the DMB
			       to its next add: it stays in [-2 * dmb_size, 2 * dmb_size]),
			       biased, and the reader's POLLING, SILENT and CARRY flags */
	__u8 pad1[LISM_RING_LINE - 8];
	__u32 state;        /* LISM_RING_DONE_WRITING, _CLOSED, _ABORT */
	__u32 writer_waits; /* the writer sleeps for room: the reader rings once it frees some */
	__u64 runs;         /* runs started so far; run i is in run[i % LISM_RING_RUNS] */
	__u8 pad2[LISM_RING_LINE - 16];
};

/* A stretch of the stream that goes through TCP; written by the writer. */
struct lism_ring_run {
	__u64 at;           /* lism_cursor_pack(): the ring position it comes before */
	__u64 bells;        /* doorbells sent before its first byte */
	__u64 len;          /* its bytes so far, counted before they are sent; final once ended */
	__u32 ended;
	__u32 pad;
};

struct lism_ring_cons {
	__u32 state;        /* LISM_RING_READER_CLOSED */
	__u32 pad;
	__u64 spin;         /* the spin mirror (exec/bell.h): generation << 1 | POLLING with
			       CARRY; beside state, which the writer loads every send */
	__u8 pad0[LISM_RING_LINE - 16];
	__u64 cursor;       /* lism_cursor_pack(): bytes read out of the DMB */
	__u64 eaten;        /* doorbells eaten so far (the reader's count, for a re-attach) */
	__u64 runs_done;    /* runs read to their end */
	__u64 run_read;     /* bytes read of run runs_done */
	__u8 pad1[LISM_RING_LINE - 32];
};

struct lism_ring_dir {
	struct lism_ring_prod prod;
	struct lism_ring_cons cons;
	struct lism_ring_run run[LISM_RING_RUNS];
};

struct lism_ring_hdr {
	__u64 magic;
	__u32 version;
	__u32 dmb_size;   /* bytes of each DMB */
	__u64 gid;        /* the device's GID */
	__u64 token[2];   /* end i's DMB token: what the handshake exchanged */
	__u8 pad[LISM_RING_LINE - 40];
	struct lism_ring_dir dir[2];
};

/* The size of the memory of a pair of @dmb_size-byte DMBs. */
static inline __u64 lism_ring_region_size(__u32 dmb_size)
{
	return LISM_RING_HDR_SIZE + 2 * (__u64)dmb_size;
}

/* The offset of end @end's DMB in the region. */
static inline __u64 lism_ring_dmb_offset(int end, __u32 dmb_size)
{
	return LISM_RING_HDR_SIZE + (end ? (__u64)dmb_size : 0);
}

static inline __u64 lism_cursor_pack(struct lism_cursor c)
{
	return (__u64)c.wrap << 32 | c.count;
}

static inline struct lism_cursor lism_cursor_unpack(__u64 v)
{
	struct lism_cursor c = { .wrap = (__u32)(v >> 32), .count = (__u32)v };

	return c;
}

/* The bytes a packed cursor of a DMB of @size bytes stands for (the views'). */
static inline __u64 lism_cursor_bytes(__u64 packed, __u32 size)
{
	struct lism_cursor c = lism_cursor_unpack(packed);

	return (__u64)c.wrap * size + c.count;
}

#endif
