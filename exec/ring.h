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
 *   It is loaded when needed: by a writer whose room seen last is short,
 *   by a reader whose read the unread count (at most the DMB) does not
 *   cover.  Once recv said a reset or the end of the stream, it says it again,
 *   whatever the peer writes after.  No call reads or writes
 *   outside the mapping whatever the header holds.
 * - One caller at a time per rx and per tx: the caller serializes (threads,
 *   and processes sharing the socket after fork).
 * - Waits for bytes: the doorbell rule (exec/bell.h); recv says when the
 *   caller owes a doorbell (rx->owed), send when it rings one (tx->bell).
 * - Waits for room: a writer about to sleep arms (tx_arm) and sleeps only
 *   if that says so; the reader asks (rx_ring after it reads) and rings
 *   when told.  Both put a full fence between their store and their load,
 *   so one of the two always sees the other: no wakeup is lost.
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
#define LISM_RING_LOOK 2 /* recv: its reader looks before it sleeps (bell.h, lism_bell_take_look) */

struct lism_ring_rx {
	struct lism_ring_dir *dir;     /* shared: the ring into this end */
	const unsigned char *buf;      /* this end's DMB */
	__u32 size;
	struct lism_cursor cons;       /* this end's consumer cursor: the authority */
	struct lism_cursor prod_seen;  /* the peer's producer cursor as last checked */
	bool eof;                      /* recv said the end of the stream */
	bool count_trusted;            /* the count covers no byte consumed: recv may read by it */
	bool in_run;                   /* run runs_done comes next: before run_at, after run_bells doorbells */
	struct lism_cursor run_at;
	__u64 run_bells;
	__u64 runs_done;               /* runs read to their end */
	__u64 run_read;                /* bytes read of the current run */
	__u64 owed;                    /* doorbells to eat: one per recv that took unread to 0 or below */
	__u64 eaten;                   /* doorbells eaten: the caller counts them (lism_ring_rx_ate) */
	int err;                       /* 0, or -EPROTO or -ECONNRESET for good */
};

struct lism_ring_tx {
	struct lism_ring_dir *dir;     /* shared: the ring into the peer */
	unsigned char *buf;            /* the peer's DMB */
	__u32 size;
	struct lism_cursor prod;       /* this end's producer cursor: the authority */
	struct lism_cursor cons_seen;  /* the peer's consumer cursor as last checked */
	__u32 state;                   /* LISM_RING_DONE_WRITING ... as this end set them */
	__u64 bells;                   /* doorbells due so far: one per send that took unread above 0 */
	__u64 carry;                   /* bytes published and not counted yet (bell.h, carried counts) */
	__u64 spin_seen;               /* the spin mirror when this end last looked at the word: carry on it */
	bool bell;                     /* the last send is due one: the caller sends it */
	bool in_run;                   /* bytes go through TCP, in run runs - 1 */
	__u64 runs;                    /* runs started */
	__u64 run_len;
	int err;
};

/*
 * Whether this process takes part in carried counts (bell.h): its readers
 * set CARRY with POLLING, and its writers carry while a reader has both.
 * Set by exec/fence.c once the kernel fences this process's CPUs for its
 * peers (membarrier); false, every send is counted (bell.h).
 */
extern bool lism_ring_carry;

/* Whether this process's readers keep the spin mirror (bell.h): 1 while
 * it has one thread, unless $LISM_MIRROR was 0 at start (0: the bench's
 * ablation; exec/fence.c); 2 whatever its threads (the unit tests, whose
 * runner has threads of its own). */
extern int lism_ring_mirror;

/* The device: lay out a header for DMBs of @dmb_size bytes in @len bytes of
 * zeroed memory.  -EINVAL if @len is not lism_ring_region_size(@dmb_size). */
int lism_ring_init(void *base, __u64 len, __u32 dmb_size, __u64 gid, __u64 token0, __u64 token1);

/* An end: take end @end's view of the @len bytes mapped at @base, from the
 * cursors the header holds (0 on a fresh pair).  -EINVAL for a bad @end,
 * -EPROTO if the header does not describe a pair of @len bytes or its
 * cursors break the invariant; -EPROTONOSUPPORT if it is another version's
 * header (a device of another release). */
int lism_ring_attach(void *base, __u64 len, int end, struct lism_ring_rx *rx, struct lism_ring_tx *tx);

/* Copy up to the iovecs' length out of the DMB (read(2)'s answers): the
 * bytes copied; 0 for iovecs of no length, and at the end of the stream
 * (the writer done or closed and everything read); -EAGAIN if nothing is
 * there yet; -EXDEV once the ring is read up to a run (its bytes are on
 * TCP, after rx->run_bells doorbells: lism_ring_run_left);
 * -ECONNRESET if the writer aborted; -EPROTO if the header broke an
 * invariant.  A recv that took the unread count to 0 or below adds one to
 * rx->owed: the doorbells the caller eats, and no others. */
ssize_t lism_ring_recv(struct lism_ring_rx *rx, const struct iovec *iov, int iovcnt, int flags);

/* The bytes waiting in this end's DMB before the next run (FIONREAD), or
 * the error recv said for good (-EPROTO, -ECONNRESET). */
ssize_t lism_ring_unread(struct lism_ring_rx *rx);

/* Copy up to the iovecs' length into the peer's DMB: the bytes copied;
 * -EAGAIN if it is full; -EPIPE if this end shut down writing or the
 * reader closed; -EXDEV in a run; -EPROTO if the header
 * broke an invariant.  tx->bell says whether this send is due a doorbell. */
ssize_t lism_ring_send(struct lism_ring_tx *tx, const struct iovec *iov, int iovcnt);

/* The reader ate @n doorbells. */
void lism_ring_rx_ate(struct lism_ring_rx *rx, __u64 n);

/* After recv said -EXDEV: the run's bytes to read from TCP now (> 0),
 * *@final if that count is final; 0 once it ended and all are read (recv
 * reads the ring again); -EAGAIN while it is open and nothing more is
 * counted; -EPROTO.  A count not final may include bytes the writer
 * counted and then did not send: peek them, and lism_ring_run_valid says
 * how many of the @seen bytes are the run's (what follows a run that
 * ended is doorbells and later runs). */
ssize_t lism_ring_run_left(struct lism_ring_rx *rx, bool *final);
size_t lism_ring_run_valid(struct lism_ring_rx *rx, size_t seen);
void lism_ring_run_read(struct lism_ring_rx *rx, __u64 n);

/* The writer: start a run at the ring's producer cursor (-EAGAIN while
 * LISM_RING_RUNS are unread), count @n bytes into it before sending them
 * (a negative @n takes back what was not sent), and end it once the
 * reader has read the ring up to it (false while it has not). */
int lism_ring_tx_run_start(struct lism_ring_tx *tx);
void lism_ring_tx_run_add(struct lism_ring_tx *tx, __s64 n);
bool lism_ring_tx_run_end(struct lism_ring_tx *tx);

/* This end stops writing (LISM_RING_DONE_WRITING, _CLOSED) or resets
 * (_ABORT): said after every byte already sent. */
void lism_ring_tx_set_state(struct lism_ring_tx *tx, __u32 state);

/* This end stops reading: the peer's sends fail with -EPIPE.  True if the
 * peer's writer sleeps for room and needs a doorbell to learn it. */
bool lism_ring_rx_close(struct lism_ring_rx *rx);

/*
 * A reader about to spin on the ring (exec/bell.h): true if the writer's
 * doorbells are silent now; false if bytes are counted (read them), or
 * recv answers at once.  Spinning ends with poll_end, which every wait in
 * the kernel calls first too: true if bytes are counted and no doorbell
 * rang for them (the caller says them: it reads, or reports POLLIN).
 */
bool lism_ring_rx_poll_begin(struct lism_ring_rx *rx);
bool lism_ring_rx_poll_end(struct lism_ring_rx *rx);
/* Whether bytes are counted with no doorbell (bell.h, lism_bell_silent). */
bool lism_ring_rx_silent(const struct lism_ring_rx *rx);

/* A wait about to sleep in the kernel for input counts itself and ends
 * every spin (true: bytes came silent, read them instead); it wakes with
 * sleep_end.  No spin begins while a wait is counted.  *@carried: a writer
 * may have carried bytes the cursors do not show yet; the caller fences
 * the writers' CPUs (exec/fence.h: one fence for all its rings), then
 * calls rx_fenced, which says (true) if bytes are there with no doorbell. */
bool lism_ring_rx_sleep_begin(struct lism_ring_rx *rx, bool *carried);
bool lism_ring_rx_fenced(struct lism_ring_rx *rx);
void lism_ring_rx_sleep_end(struct lism_ring_rx *rx);

/* Whether the ring into an end says something to read now: bytes counted
 * or published past the consumer cursor, or the writer's end.  A hint from the shared header, without the
 * reader's lock (recv checks): what a spin looks at. */
bool lism_ring_rx_ready(const struct lism_ring_dir *dir);

/* Whether the ring into the peer has room now, or its reader closed: what
 * a writer's spin looks at, without loading what send checks. */
bool lism_ring_tx_room(const struct lism_ring_tx *tx);

/* A writer that waits for room: true if it may sleep (the ring is full);
 * then the reader's next rx_ring after it frees room answers true (once). */
bool lism_ring_tx_arm(struct lism_ring_tx *tx);
bool lism_ring_rx_ring(struct lism_ring_rx *rx);

#endif
