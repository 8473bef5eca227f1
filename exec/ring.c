// SPDX-License-Identifier: GPL-2.0-only
/*
 * The ring DMB data path of lism exec: copy in, copy out, cursors.  The
 * rules are in ring.h; what is shared is laid out in include/lism/ring.h.
 *
 * Ordering: a writer copies its bytes, then publishes the producer cursor
 * with a release store; a reader loads it with acquire before it copies
 * the bytes out, then publishes the consumer cursor with release, which the
 * writer loads with acquire before it reuses that room.  A writer's state
 * (done, closed, abort) is stored after its last cursor, and a reader loads
 * the state before the cursor: a reader that sees the end of the stream
 * sees every byte before it.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/single_threaded.h>

#include "bell.h"
#include "ring.h"

#define LOAD(p)      __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE(p, v)  __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define FENCE()      __atomic_thread_fence(__ATOMIC_SEQ_CST)

#define WRITER_STATES (LISM_RING_DONE_WRITING | LISM_RING_CLOSED | LISM_RING_ABORT)

bool lism_ring_carry;
int lism_ring_mirror;

/* The CARRY flag this process's readers set with POLLING. */
static __u64 carry_bit(void)
{
	return __atomic_load_n(&lism_ring_carry, __ATOMIC_RELAXED) ? LISM_BELL_CARRY : 0;
}

/* Bytes from @a to @b in a ring of @size (negative if @b is behind). */
static __s64 distance(struct lism_cursor a, struct lism_cursor b, __u32 size)
{
	return (__s64)(__s32)(b.wrap - a.wrap) * size + (__s64)b.count - (__s64)a.count;
}

/* @c moved on by @n <= @size bytes (count stays below size). */
static struct lism_cursor advance(struct lism_cursor c, __u32 n, __u32 size)
{
	__u64 pos = (__u64)c.count + n;

	if (pos >= size) {
		pos -= size;
		c.wrap++;
	}
	c.count = (__u32)pos;
	return c;
}

static size_t iov_total(const struct iovec *iov, int iovcnt)
{
	size_t total = 0;

	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len > SSIZE_MAX - total)
			return SSIZE_MAX;
		total += iov[i].iov_len;
	}
	return total;
}

/* Copy @n bytes between the iovecs and the ring, from ring offset @off on,
 * wrapping at @size.  @n is at most the iovecs' length and @size. */
static void copy_ring(unsigned char *ring, __u32 size, __u32 off, const struct iovec *iov, size_t n,
		      bool into_ring)
{
	size_t in_iov = 0;

	while (n) {
		size_t chunk = iov->iov_len - in_iov;

		if (chunk > n)
			chunk = n;
		if (chunk > size - off)
			chunk = size - off;
		if (chunk) { /* an empty iovec's base may be NULL: no arithmetic on it */
			unsigned char *p = (unsigned char *)iov->iov_base + in_iov;

			if (into_ring)
				memcpy(ring + off, p, chunk);
			else
				memcpy(p, ring + off, chunk);
		}
		n -= chunk;
		off += chunk;
		if (off == size)
			off = 0;
		in_iov += chunk;
		if (in_iov == iov->iov_len) {
			iov++;
			in_iov = 0;
		}
	}
}

/* The bytes the writer has put in this end's DMB, checked; -EPROTO (for
 * good) if the producer cursor is out of the ring, ahead of the consumer by
 * more than the ring, behind it, or moved back. */
static __s64 load_unread(struct lism_ring_rx *rx)
{
	struct lism_cursor p;
	__s64 d;

	if (rx->err)
		return rx->err;
	p = lism_cursor_unpack(LOAD(&rx->dir->prod.cursor));
	d = distance(rx->cons, p, rx->size);
	if (p.count >= rx->size || d < 0 || d > rx->size || distance(rx->prod_seen, p, rx->size) < 0)
		return rx->err = -EPROTO;
	rx->prod_seen = p;
	return d;
}

/* The bytes of the peer's DMB still unread, checked as load_unread(). */
static __s64 load_used(struct lism_ring_tx *tx)
{
	struct lism_cursor c;
	__s64 d;

	if (tx->err)
		return tx->err;
	c = lism_cursor_unpack(LOAD(&tx->dir->cons.cursor));
	d = distance(c, tx->prod, tx->size);
	if (c.count >= tx->size || d < 0 || d > tx->size || distance(tx->cons_seen, c, tx->size) < 0)
		return tx->err = -EPROTO;
	tx->cons_seen = c;
	return d;
}

int lism_ring_init(void *base, __u64 len, __u32 dmb_size, __u64 gid, __u64 token0, __u64 token1)
{
	struct lism_ring_hdr *h = base;

	if (!dmb_size || dmb_size > LISM_RING_DMB_MAX || len != lism_ring_region_size(dmb_size))
		return -EINVAL;
	memset(h, 0, sizeof(*h));
	h->version = LISM_RING_VERSION;
	h->dmb_size = dmb_size;
	h->gid = gid;
	h->token[0] = token0;
	h->token[1] = token1;
	h->dir[0].prod.bell = h->dir[1].prod.bell = LISM_BELL_INIT;
	STORE(&h->magic, LISM_RING_MAGIC); /* last: a header with its magic is whole */
	return 0;
}

static int take(struct lism_ring_rx *rx, __u64 n, bool look, __u64 old);

int lism_ring_attach(void *base, __u64 len, int end, struct lism_ring_rx *rx, struct lism_ring_tx *tx)
{
	struct lism_ring_hdr *h = base;
	__u32 size;

	if (end != 0 && end != 1)
		return -EINVAL;
	if (len < LISM_RING_HDR_SIZE || LOAD(&h->magic) != LISM_RING_MAGIC)
		return -EPROTO;
	if (LOAD(&h->version) != LISM_RING_VERSION)
		return -EPROTONOSUPPORT; /* a device of another release: see liblism's decide() */
	size = LOAD(&h->dmb_size); /* once: the peer may change it after */
	if (!size || size > LISM_RING_DMB_MAX || len != lism_ring_region_size(size))
		return -EPROTO;

	*rx = (struct lism_ring_rx){
		.dir = &h->dir[end],
		.buf = (unsigned char *)base + lism_ring_dmb_offset(end, size),
		.size = size,
		.cons = lism_cursor_unpack(LOAD(&h->dir[end].cons.cursor)),
		.eaten = LOAD(&h->dir[end].cons.eaten),
		.runs_done = LOAD(&h->dir[end].cons.runs_done),
		.run_read = LOAD(&h->dir[end].cons.run_read),
	};
	rx->prod_seen = rx->cons;
	/* an image that consumed before (a process after exec) may have died
	 * between its cursor and its take, leaving the count above what is
	 * there: it reads by the cursor alone */
	rx->count_trusted = !rx->cons.wrap && !rx->cons.count;
	if (!rx->count_trusted) {
		/* and the count it left high would keep the writer's doorbells
		 * off: take what it counts beyond the bytes there, the word loaded
		 * before the cursor (an honest count is never above them; a
		 * writer's add in flight can only make this take too little) */
		__u64 w = LOAD(&h->dir[end].prod.bell), carried = LOAD(&h->dir[end].prod.carried);
		__s64 d = distance(rx->cons, lism_cursor_unpack(LOAD(&h->dir[end].prod.cursor)), size);
		/* the count lags the bytes by the writer's carry, loaded after
		 * the word: a writer that adds or carries between the loads makes
		 * this too little, as one whose add is in flight does */
		__s64 x = lism_bell_unread(w) + (carried <= size / 2 ? (__s64)carried : 0) - d;

		if (d >= 0 && d <= size && x > 0 && x <= size)
			(void)take(rx, (__u64)x, false, w); /* its owes: the count below; a broken word: load_unread's */
	}
	{
		/* a process after exec: the doorbells sent and not eaten are owed,
		 * but one, while bytes wait for it (a rung stretch open) */
		__u64 sent = LOAD(&h->dir[end].prod.bells), live = lism_bell_rung(LOAD(&h->dir[end].prod.bell));

		rx->owed = sent > rx->eaten + live ? sent - rx->eaten - live : 0;
	}
	*tx = (struct lism_ring_tx){
		.dir = &h->dir[!end],
		.buf = (unsigned char *)base + lism_ring_dmb_offset(!end, size),
		.size = size,
		.prod = lism_cursor_unpack(LOAD(&h->dir[!end].prod.cursor)),
		.state = LOAD(&h->dir[!end].prod.state) & WRITER_STATES,
		.bells = LOAD(&h->dir[!end].prod.bells),
		.carry = LOAD(&h->dir[!end].prod.carried), /* a process after exec: what the image carried */
		.runs = LOAD(&h->dir[!end].prod.runs),
	};
	if (tx->carry > size / 2)
		return -EPROTO;
	if (tx->runs) { /* a process after exec: its last run may be open */
		const struct lism_ring_run *r = &h->dir[!end].run[(tx->runs - 1) % LISM_RING_RUNS];

		tx->in_run = !LOAD(&r->ended);
		tx->run_len = LOAD(&r->len);
	}
	/* the consumer may be anywhere up to the producer: check against the
	 * furthest back it could be */
	tx->cons_seen = tx->prod;
	tx->cons_seen.wrap--;
	if (rx->cons.count >= size || tx->prod.count >= size || load_unread(rx) < 0 || load_used(tx) < 0)
		return -EPROTO;
	return 0;
}

/*
 * The spin mirror follows the word @w this reader just made (bell.h): on,
 * in a new generation, when it has POLLING with CARRY and the process one
 * thread; off when it has not.  Stored before a sleeper's fence.  By a
 * CAS from the value it saw: a signal handler's recv or poll between the
 * load and the store may have moved it, and a plain store would bring
 * back a generation a writer may still hold (its values only grow, so a
 * writer's generation is never shown again once it went off).  An "on"
 * from a word stale by then is safe: a new generation makes the writer
 * look at the word.
 */
static void mirror_sync(struct lism_ring_rx *rx, __u64 w)
{
	__u64 m = LOAD(&rx->dir->cons.spin);
	int mode = __atomic_load_n(&lism_ring_mirror, __ATOMIC_RELAXED);
	bool on = lism_bell_carries(w) &&
		  (mode == 2 || (mode == 1 && __atomic_load_n(&__libc_single_threaded, __ATOMIC_RELAXED)));

	/* bounded: only a peer that writes our header keeps changing it, and
	 * the mirror only ever misleads that peer's own writes to us */
	for (int i = 0; i < 8 && on != (m & 1); i++)
		if (__atomic_compare_exchange_n(&rx->dir->cons.spin, &m, on ? ((m >> 1) + 1) << 1 | 1 : m & ~1ull, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			break;
}

/* Take @n from the doorbell word after consuming them: owe a doorbell if
 * the rule says so; -EPROTO if the word is none the rule can make.  @old:
 * the word as loaded last, whose count covered @n (a word loaded before
 * the writer's add would fail the range check: load it again then). */
static int take(struct lism_ring_rx *rx, __u64 n, bool look, __u64 old)
{
	__u64 w;
	bool owes;

	do {
		/* the count lags the bytes by what the writer has not added yet:
		 * its carry and its last send, at most half the DMB and the DMB */
		if (!lism_bell_valid(old, rx->size) || lism_bell_unread(old) < (__s64)n - 2 * (__s64)rx->size)
			return -EPROTO;
		w = look ? lism_bell_take_look(old, n, &owes, carry_bit()) : lism_bell_take(old, n, &owes);
	} while (!__atomic_compare_exchange_n(&rx->dir->prod.bell, &old, w, true, __ATOMIC_ACQ_REL,
					      __ATOMIC_ACQUIRE));
	rx->owed += owes;
	if (look)
		mirror_sync(rx, w);
	return 0;
}

/* The next run, if the writer started it: 1 (rx->run_at, rx->run_bells
 * set), 0 if none, -EPROTO. */
static int load_run(struct lism_ring_rx *rx)
{
	const struct lism_ring_run *r;
	__u64 runs;

	if (rx->in_run)
		return 1;
	runs = LOAD(&rx->dir->prod.runs);
	if (runs == rx->runs_done)
		return 0;
	if (runs - rx->runs_done > LISM_RING_RUNS)
		return rx->err = -EPROTO;
	r = &rx->dir->run[rx->runs_done % LISM_RING_RUNS];
	rx->run_at = lism_cursor_unpack(LOAD(&r->at));
	rx->run_bells = LOAD(&r->bells);
	if (rx->run_at.count >= rx->size || rx->run_bells < rx->eaten)
		return rx->err = -EPROTO;
	rx->in_run = true;
	return 1;
}

ssize_t lism_ring_recv(struct lism_ring_rx *rx, const struct iovec *iov, int iovcnt, int flags)
{
	size_t want = iov_total(iov, iovcnt);
	__u32 state;
	bool restarted = false;
	__u64 w = 0;
	__s64 n;
	int run;

	if (rx->err)
		return rx->err;
	if (!want)
		return 0;
	state = LOAD(&rx->dir->prod.state); /* before the cursor: see the header comment */
	if (state & LISM_RING_ABORT)
		return rx->err = -ECONNRESET;
again:
	run = load_run(rx); /* before the cursor too: the producer is past a run's start */
	if (run < 0)
		return run;
	if (restarted && !run)
		return rx->err = -EPROTO; /* the runs went back: only a hostile peer does that */
	n = 0;
	w = 0;
	if (!run && !rx->eof && rx->count_trusted) {
		/* counted bytes were published before they were counted: while
		 * the count is above 0 the writer's cursor line stays in its cache.
		 * A lying count is bounded, not always caught: at most the DMB,
		 * copied from this end's own DMB (the peer could write those
		 * bytes anyway); one that takes our cursor past the writer's is
		 * caught by the next load_unread() */
		w = LOAD(&rx->dir->prod.bell);
		if (lism_bell_valid(w, rx->size) && lism_bell_unread(w) > 0) {
			n = lism_bell_unread(w);
			if (n > (__s64)rx->size) /* more than the DMB holds: under the rx lock, a lie */
				return rx->err = -EPROTO;
		} else {
			w = 0;
		}
	}
	if (!n)
		n = load_unread(rx);
	if (n < 0)
		return n;
	/* a run that started after load_run() looked, and ended, may come
	 * before the bytes just seen (they were published after it): its
	 * slot was stored before them, so it shows now */
	if (!run && n && LOAD(&rx->dir->prod.runs) != rx->runs_done) {
		restarted = true;
		goto again;
	}
	if (run) {
		__s64 to_run = distance(rx->cons, rx->run_at, rx->size);

		if (to_run < 0 || to_run > n)
			return rx->err = -EPROTO;
		if (!to_run)
			return -EXDEV;
		n = to_run;
	}
	if (rx->eof && n)
		return rx->err = -EPROTO; /* bytes after the end of the stream */
	if (!n) {
		if (!(state & (LISM_RING_DONE_WRITING | LISM_RING_CLOSED)) && !rx->eof)
			return -EAGAIN;
		rx->eof = true;
		return 0;
	}
	if ((size_t)n > want)
		n = (__s64)want;
	copy_ring((unsigned char *)rx->buf, rx->size, rx->cons.count, iov, (size_t)n, false);
	if (!(flags & LISM_RING_PEEK)) {
		rx->cons = advance(rx->cons, (__u32)n, rx->size);
		STORE(&rx->dir->cons.cursor, lism_cursor_pack(rx->cons));
		/* after the cursor; the writer adds after it publishes, so the
		 * count may go below 0 for a moment: only a crossing from above
		 * 0 to 0 or below owes a doorbell, and only if one rang (bell.h) */
		if (take(rx, (__u64)n, flags & LISM_RING_LOOK, w ? w : LOAD(&rx->dir->prod.bell)))
			return rx->err = -EPROTO;
	}
	return n;
}

ssize_t lism_ring_run_left(struct lism_ring_rx *rx, bool *final)
{
	const struct lism_ring_run *r = &rx->dir->run[rx->runs_done % LISM_RING_RUNS];
	__u32 ended;
	__u64 len;

	*final = false;
	if (rx->err)
		return rx->err;
	if (!rx->in_run)
		return 0;
	ended = LOAD(&r->ended); /* before the length: once ended it is final */
	len = LOAD(&r->len);
	if (len < rx->run_read)
		return rx->err = -EPROTO;
	*final = ended;
	if (len > rx->run_read)
		return len - rx->run_read > SSIZE_MAX ? SSIZE_MAX : (ssize_t)(len - rx->run_read);
	if (!ended)
		return -EAGAIN;
	rx->in_run = false;
	rx->run_read = 0;
	rx->runs_done++;
	STORE(&rx->dir->cons.run_read, 0);
	STORE(&rx->dir->cons.runs_done, rx->runs_done);
	return 0;
}

size_t lism_ring_run_valid(struct lism_ring_rx *rx, size_t seen)
{
	const struct lism_ring_run *r = &rx->dir->run[rx->runs_done % LISM_RING_RUNS];
	__u64 len;

	if (!LOAD(&r->ended))
		return seen; /* not ended after they were seen: all were sent in the run */
	len = LOAD(&r->len);
	return len - rx->run_read < seen ? (size_t)(len - rx->run_read) : seen;
}

void lism_ring_run_read(struct lism_ring_rx *rx, __u64 n)
{
	rx->run_read += n;
	STORE(&rx->dir->cons.run_read, rx->run_read);
}

void lism_ring_rx_ate(struct lism_ring_rx *rx, __u64 n)
{
	rx->owed = n < rx->owed ? rx->owed - n : 0;
	rx->eaten += n;
	__atomic_store_n(&rx->dir->cons.eaten, rx->eaten, __ATOMIC_RELAXED);
}

ssize_t lism_ring_unread(struct lism_ring_rx *rx)
{
	int run = load_run(rx);
	__s64 n = load_unread(rx), to_run;

	if (run < 0 || n < 0)
		return run < 0 ? run : n;
	if (!run)
		return n;
	to_run = distance(rx->cons, rx->run_at, rx->size);
	return to_run < 0 || to_run > n ? (rx->err = -EPROTO) : to_run;
}

ssize_t lism_ring_send(struct lism_ring_tx *tx, const struct iovec *iov, int iovcnt)
{
	size_t want = iov_total(iov, iovcnt);
	__s64 used, n;
	__u64 before, add;

	tx->bell = false;
	if (tx->err)
		return tx->err;
	if (tx->in_run)
		return -EXDEV;
	if (tx->state || (LOAD(&tx->dir->cons.state) & LISM_RING_READER_CLOSED))
		return -EPIPE;
	/* the room seen last is a lower bound: the reader's cursor line only
	 * when it is short */
	used = distance(tx->cons_seen, tx->prod, tx->size);
	if ((size_t)(tx->size - used) < want || !want) {
		used = load_used(tx);
		if (used < 0)
			return used;
	}
	n = tx->size - used;
	if (!n)
		return want ? -EAGAIN : 0;
	if ((size_t)n > want)
		n = (__s64)want;
	copy_ring(tx->buf, tx->size, tx->prod.count, iov, (size_t)n, true);
	tx->prod = advance(tx->prod, (__u32)n, tx->size);
	STORE(&tx->dir->prod.cursor, lism_cursor_pack(tx->prod));
	/* a reader that spins with CARRY: no count, no fence (bell.h, carried
	 * counts); a load that is stale is older than its next sleeper's fence.
	 * The compiler keeps the load after the store: the fence's argument is
	 * about this program order */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&lism_ring_carry, __ATOMIC_RELAXED) && n < LISM_BELL_CARRY_SEND &&
	    tx->carry + (__u64)n <= tx->size / 2) {
		/* the spin mirror, on the line of the reader's state loaded above */
		__u64 m = __atomic_load_n(&tx->dir->cons.spin, __ATOMIC_RELAXED), w;
		bool carries = (m & 1) && m == tx->spin_seen;

		if (!carries) {
			w = __atomic_load_n(&tx->dir->prod.bell, __ATOMIC_RELAXED);
			/* the spin's first carry says so, by a CAS from the word seen:
			 * never once POLLING is clear (a failed CAS looks again) */
			while (lism_bell_carries(w) && !(w & LISM_BELL_CARRIED) &&
			       !__atomic_compare_exchange_n(&tx->dir->prod.bell, &w, w | LISM_BELL_CARRIED, false,
							    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
				;
			carries = lism_bell_carries(w);
			/* CARRIED is set in this generation: the next carries need no look */
			tx->spin_seen = carries && (m & 1) ? m : 0;
		}
		if (carries) {
			tx->carry += (__u64)n;
			__atomic_store_n(&tx->dir->prod.carried, tx->carry, __ATOMIC_RELAXED);
			return n;
		}
	}
	/* counted after they are published: a count above 0 always has bytes behind it */
	add = (__u64)n + tx->carry;
	before = __atomic_fetch_add(&tx->dir->prod.bell, add, __ATOMIC_ACQ_REL);
	if (!lism_bell_carries(before))
		tx->spin_seen = 0; /* the spin is over: its doorbell must not seem to cover a later carry */
	if (tx->carry) {
		tx->carry = 0;
		__atomic_store_n(&tx->dir->prod.carried, 0, __ATOMIC_RELAXED);
	}
	if (!lism_bell_valid(before, tx->size))
		return tx->err = -EPROTO; /* the reader's count: out of what the ring allows */
	if (lism_bell_rings(before, add)) {
		tx->bell = true;
		__atomic_store_n(&tx->dir->prod.bells, ++tx->bells, __ATOMIC_RELAXED);
	}
	return n;
}

int lism_ring_tx_run_start(struct lism_ring_tx *tx)
{
	struct lism_ring_run *r = &tx->dir->run[tx->runs % LISM_RING_RUNS];
	__u64 done;

	if (tx->err)
		return tx->err;
	if (tx->in_run)
		return 0;
	done = LOAD(&tx->dir->cons.runs_done);
	if (done > tx->runs)
		return tx->err = -EPROTO;
	if (tx->runs - done >= LISM_RING_RUNS)
		return -EAGAIN;
	STORE(&r->ended, 0);
	STORE(&r->len, 0);
	STORE(&r->bells, tx->bells);
	STORE(&r->at, lism_cursor_pack(tx->prod));
	tx->run_len = 0;
	tx->in_run = true;
	STORE(&tx->dir->prod.runs, ++tx->runs); /* a release: the slot first */
	return 0;
}

void lism_ring_tx_run_add(struct lism_ring_tx *tx, __s64 n)
{
	tx->run_len += (__u64)n;
	STORE(&tx->dir->run[(tx->runs - 1) % LISM_RING_RUNS].len, tx->run_len);
}

bool lism_ring_tx_run_end(struct lism_ring_tx *tx)
{
	if (!tx->in_run)
		return true;
	/* the reader has read the ring up to the run, and counted it (it
	 * stores its cursor before it subtracts: a ring write before that
	 * would find the count above 0 and ring no doorbell) */
	if (load_used(tx) != 0 || lism_bell_unread(LOAD(&tx->dir->prod.bell)) > 0)
		return false;
	STORE(&tx->dir->run[(tx->runs - 1) % LISM_RING_RUNS].ended, 1);
	tx->in_run = false;
	return true;
}

void lism_ring_tx_set_state(struct lism_ring_tx *tx, __u32 state)
{
	/* the end of writing ends an open run too: its length is final, and
	 * no ring byte follows it, so its reader need not wait to reach it */
	if ((state & (LISM_RING_DONE_WRITING | LISM_RING_CLOSED)) && tx->in_run) {
		STORE(&tx->dir->run[(tx->runs - 1) % LISM_RING_RUNS].ended, 1);
		tx->in_run = false;
	}
	tx->state |= state & WRITER_STATES;
	STORE(&tx->dir->prod.state, tx->state);
}

static bool wait_flag_take(__u32 *flag);

bool lism_ring_rx_close(struct lism_ring_rx *rx)
{
	STORE(&rx->dir->cons.state, LISM_RING_READER_CLOSED);
	return wait_flag_take(&rx->dir->prod.writer_waits);
}

/* A side about to sleep raises its flag, then looks again (after a full
 * fence, against the other side's in wait_flag_take). */
static void wait_flag_raise(__u32 *flag)
{
	__atomic_store_n(flag, 1, __ATOMIC_RELAXED);
	FENCE();
}

/* The other side, after its store: whether a sleeper needs a doorbell;
 * a plain load first, so the common answer (nobody sleeps) writes nothing. */
static bool wait_flag_take(__u32 *flag)
{
	FENCE();
	return __atomic_load_n(flag, __ATOMIC_RELAXED) && __atomic_exchange_n(flag, 0, __ATOMIC_ACQ_REL);
}

/* One atomic change of the doorbell word by @rule (the reader's flags): the new word. */
static __u64 bell_change(struct lism_ring_rx *rx, __u64 (*rule)(__u64))
{
	__u64 old = LOAD(&rx->dir->prod.bell), w;

	do {
		w = rule(old);
		if (w == old)
			break;
	} while (!__atomic_compare_exchange_n(&rx->dir->prod.bell, &old, w, true, __ATOMIC_ACQ_REL,
					      __ATOMIC_ACQUIRE));
	mirror_sync(rx, w);
	return w;
}

bool lism_ring_rx_poll_begin(struct lism_ring_rx *rx)
{
	if (rx->err || rx->eof)
		return false;
	__u64 old = LOAD(&rx->dir->prod.bell), w;

	do {
		w = lism_bell_poll_begin(old, carry_bit());
		if (w == old)
			break;
	} while (!__atomic_compare_exchange_n(&rx->dir->prod.bell, &old, w, true, __ATOMIC_ACQ_REL,
					      __ATOMIC_ACQUIRE));
	mirror_sync(rx, w);
	return w & LISM_BELL_POLLING;
}

bool lism_ring_rx_poll_end(struct lism_ring_rx *rx)
{
	return lism_bell_silent(bell_change(rx, lism_bell_poll_end));
}

bool lism_ring_rx_silent(const struct lism_ring_rx *rx)
{
	return lism_bell_silent(LOAD(&rx->dir->prod.bell));
}

bool lism_ring_rx_sleep_begin(struct lism_ring_rx *rx, bool *carried)
{
	__u64 w = bell_change(rx, lism_bell_sleep_begin);

	*carried = w & LISM_BELL_CARRIED;
	return lism_bell_silent(w);
}

/* Bytes published past the consumer cursor, as the header says (a hint:
 * recv checks). */
static bool published(const struct lism_ring_dir *dir)
{
	return LOAD(&dir->prod.cursor) != LOAD(&dir->cons.cursor);
}

/* The reader is at a run some of whose bytes it has still to read from
 * TCP, as the header says: what follows the run in the ring (the writer
 * writes it once the run ended) is read after them, and the kernel says
 * them.  A run read to its end is not in the way: recv goes past it. */
static bool at_run(const struct lism_ring_dir *dir)
{
	__u64 done = LOAD(&dir->cons.runs_done);
	const struct lism_ring_run *r = &dir->run[done % LISM_RING_RUNS];

	return LOAD(&dir->prod.runs) != done && LOAD(&r->at) == LOAD(&dir->cons.cursor) && LOAD(&r->ended) &&
	       LOAD(&dir->cons.run_read) < LOAD(&r->len);
}

bool lism_ring_rx_fenced(struct lism_ring_rx *rx)
{
	/* after the fence every carried byte shows in the cursor: bytes there
	 * with no doorbell rung for them keep CARRY, so that every sleeper
	 * says them until they are read or counted (their writer's add may
	 * still ring: a doorbell after its bytes were read, which is eaten) */
	bool pub = published(rx->dir);
	__u64 old = LOAD(&rx->dir->prod.bell), w;

	do {
		w = lism_bell_fenced(old, pub && !lism_bell_rung(old));
		if (w == old)
			break;
	} while (!__atomic_compare_exchange_n(&rx->dir->prod.bell, &old, w, true, __ATOMIC_ACQ_REL,
					      __ATOMIC_ACQUIRE));
	return lism_bell_silent(w) || (pub && !lism_bell_rung(w) && !at_run(rx->dir));
}

void lism_ring_rx_sleep_end(struct lism_ring_rx *rx)
{
	(void)bell_change(rx, lism_bell_sleep_end);
}

bool lism_ring_rx_ready(const struct lism_ring_dir *dir)
{
	/* only what the kernel would not say: bytes counted, and the writer's
	 * end (its FIN says it too, but after the state: the doorbell channel
	 * is TCP's, the state the ring's) */
	return lism_bell_unread(LOAD(&dir->prod.bell)) > 0 || (published(dir) && !at_run(dir)) ||
	       (LOAD(&dir->prod.state) & WRITER_STATES);
}

bool lism_ring_tx_room(const struct lism_ring_tx *tx)
{
	struct lism_cursor c = lism_cursor_unpack(LOAD(&tx->dir->cons.cursor));

	/* a hint: send checks the cursor it loads */
	return distance(c, tx->prod, tx->size) < (__s64)tx->size ||
	       (LOAD(&tx->dir->cons.state) & LISM_RING_READER_CLOSED);
}

bool lism_ring_tx_arm(struct lism_ring_tx *tx)
{
	wait_flag_raise(&tx->dir->prod.writer_waits);
	if ((LOAD(&tx->dir->cons.state) & LISM_RING_READER_CLOSED) || load_used(tx) != tx->size) {
		__atomic_store_n(&tx->dir->prod.writer_waits, 0, __ATOMIC_RELAXED);
		return false;
	}
	return true;
}

bool lism_ring_rx_ring(struct lism_ring_rx *rx)
{
	return wait_flag_take(&rx->dir->prod.writer_waits);
}
