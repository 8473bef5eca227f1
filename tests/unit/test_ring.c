// SPDX-License-Identifier: GPL-2.0-only
/*
 * The ring DMB data path (exec/ring.c): byte-exact streams through rings of
 * awkward sizes, the end-of-stream and reset answers, the checks against a
 * header the peer broke, and the wait protocol under two threads.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/bell.h"
#include "exec/fence.h"
#include "exec/ring.h"

_Static_assert(sizeof(struct lism_ring_hdr) <= LISM_RING_HDR_SIZE, "the header fits its page");

struct pair {
	void *mem;
	__u64 len;
	struct lism_ring_hdr *h;
	struct lism_ring_rx rx[2];
	struct lism_ring_tx tx[2];
};

static void pair_open(struct pair *p, __u32 dmb_size)
{
	p->len = lism_ring_region_size(dmb_size);
	p->mem = calloc(1, p->len);
	cr_assert_not_null(p->mem);
	p->h = p->mem;
	cr_assert_eq(lism_ring_init(p->mem, p->len, dmb_size, 0xabc, 11, 22), 0);
	cr_assert_eq(lism_ring_attach(p->mem, p->len, 0, &p->rx[0], &p->tx[0]), 0);
	cr_assert_eq(lism_ring_attach(p->mem, p->len, 1, &p->rx[1], &p->tx[1]), 0);
}

static void pair_close(struct pair *p)
{
	free(p->mem);
}

/* a message longer than the room a writer saw after its first 8 bytes into a 64-byte DMB */
static const char big[64];

static ssize_t send_buf(struct lism_ring_tx *tx, const void *buf, size_t n)
{
	struct iovec iov = { (void *)buf, n };

	return lism_ring_send(tx, &iov, 1);
}

static ssize_t recv_buf(struct lism_ring_rx *rx, void *buf, size_t n, int flags)
{
	struct iovec iov = { buf, n };

	return lism_ring_recv(rx, &iov, 1, flags);
}

Test(ring, init_and_attach_check_the_layout)
{
	__u32 size = 4096;
	__u64 len = lism_ring_region_size(size);
	void *mem = calloc(1, len);
	struct lism_ring_hdr *h = mem;
	struct lism_ring_rx rx;
	struct lism_ring_tx tx;

	cr_assert_eq(lism_ring_init(mem, len - 1, size, 1, 2, 3), -EINVAL);
	cr_assert_eq(lism_ring_init(mem, lism_ring_region_size(0), 0, 1, 2, 3), -EINVAL);
	cr_assert_eq(lism_ring_attach(mem, len, 0, &rx, &tx), -EPROTO, "no magic yet");
	cr_assert_eq(lism_ring_init(mem, len, size, 1, 2, 3), 0);
	cr_assert_eq(h->token[1], 3);
	cr_assert_eq(lism_ring_attach(mem, len, 2, &rx, &tx), -EINVAL);
	cr_assert_eq(lism_ring_attach(mem, len - 4096, 0, &rx, &tx), -EPROTO, "a mapping shorter than the header says");
	cr_assert_eq(lism_ring_attach(mem, len, 1, &rx, &tx), 0);
	cr_assert_eq(rx.buf, (unsigned char *)mem + LISM_RING_HDR_SIZE + size, "end 1 reads the second DMB");
	cr_assert_eq(tx.buf, (unsigned char *)mem + LISM_RING_HDR_SIZE);
	h->dmb_size = size * 2;
	cr_assert_eq(lism_ring_attach(mem, len, 0, &rx, &tx), -EPROTO, "a size the mapping does not hold");
	h->dmb_size = size;
	h->version = LISM_RING_VERSION + 1;
	cr_assert_eq(lism_ring_attach(mem, len, 0, &rx, &tx), -EPROTONOSUPPORT, "another version's header");
	cr_assert_eq(offsetof(struct lism_ring_hdr, dir) % LISM_RING_LINE, 0);
	/* what each side writes on every call has a line of its own */
	cr_assert_eq(offsetof(struct lism_ring_dir, prod.cursor) / LISM_RING_LINE, 0);
	cr_assert_eq(offsetof(struct lism_ring_dir, prod.bell) / LISM_RING_LINE, 1);
	cr_assert_eq(offsetof(struct lism_ring_dir, prod.state) / LISM_RING_LINE, 2);
	cr_assert_eq(offsetof(struct lism_ring_dir, prod.writer_waits) / LISM_RING_LINE, 2);
	cr_assert_eq(offsetof(struct lism_ring_dir, cons.state) / LISM_RING_LINE, 3);
	cr_assert_eq(offsetof(struct lism_ring_dir, cons.cursor) / LISM_RING_LINE, 4);
	cr_assert_eq(offsetof(struct lism_ring_dir, run) / LISM_RING_LINE, 5);
	free(mem);
}

/* A stream of pseudo-random sends and receives of random sizes and iovec
 * shapes through a ring of an odd size arrives byte-exact. */
Test(ring, stream_arrives_byte_exact_through_wraps)
{
	enum { TOTAL = 1 << 20 };
	struct pair p;
	unsigned char *src = malloc(TOTAL), *dst = malloc(TOTAL);
	size_t sent = 0, got = 0;
	unsigned seed = 7;

	pair_open(&p, 1237);
	for (size_t i = 0; i < TOTAL; i++)
		src[i] = (unsigned char)rand_r(&seed);
	while (got < TOTAL) {
		if (sent < TOTAL) {
			size_t a = rand_r(&seed) % 700, b = rand_r(&seed) % 900;
			struct iovec iov[3] = { { src + sent, 0 }, { NULL, 0 }, { src + sent, 0 } };

			if (a > TOTAL - sent)
				a = TOTAL - sent;
			if (b > TOTAL - sent - a)
				b = TOTAL - sent - a;
			iov[0].iov_len = a;
			iov[2].iov_base = src + sent + a; /* iov[1] empty, base NULL: skipped */
			iov[2].iov_len = b;
			ssize_t n = lism_ring_send(&p.tx[0], iov, 3);
			if (a + b)
				cr_assert(n > 0 || n == -EAGAIN, "send: %zd", n);
			if (n > 0)
				sent += n;
		}
		size_t want = 1 + rand_r(&seed) % 1500;
		unsigned char peek[1500];

		if (want > TOTAL - got)
			continue;
		struct iovec iov[2] = { { dst + got, want / 3 }, { dst + got + want / 3, want - want / 3 } };
		ssize_t k = recv_buf(&p.rx[1], peek, want, LISM_RING_PEEK);
		ssize_t n = lism_ring_recv(&p.rx[1], iov, 2, 0);
		cr_assert_eq(k, n, "a peek sees what the read then takes");
		if (n == -EAGAIN) {
			cr_assert_eq(sent, got, "EAGAIN only when the ring is empty");
			continue;
		}
		cr_assert(n > 0, "recv: %zd", n);
		cr_assert_eq(memcmp(peek, dst + got, n), 0);
		got += n;
		cr_assert_eq(lism_ring_unread(&p.rx[1]), (ssize_t)(sent - got));
	}
	cr_assert_eq(memcmp(src, dst, TOTAL), 0);
	cr_assert(p.h->dir[1].prod.cursor >> 32 > 100, "the ring wrapped many times");
	pair_close(&p);
	free(src);
	free(dst);
}

Test(ring, a_full_ring_says_eagain_until_the_reader_frees_room)
{
	struct pair p;
	char buf[100] = "0123456789", out[100];

	pair_open(&p, 10);
	cr_assert_eq(send_buf(&p.tx[1], buf, 7), 7);
	cr_assert_eq(send_buf(&p.tx[1], buf + 7, 7), 3, "only the room left");
	cr_assert_eq(send_buf(&p.tx[1], buf, 1), -EAGAIN);
	cr_assert_eq(send_buf(&p.tx[1], buf, 0), 0);
	cr_assert_eq(recv_buf(&p.rx[0], out, 4, 0), 4);
	cr_assert_eq(send_buf(&p.tx[1], "abcdef", 6), 4);
	cr_assert_eq(recv_buf(&p.rx[0], out, sizeof(out), 0), 10);
	cr_assert_eq(memcmp(out, "456789abcd", 10), 0);
	cr_assert_eq(recv_buf(&p.rx[0], out, sizeof(out), 0), -EAGAIN);
	cr_assert_eq(recv_buf(&p.rx[1], out, sizeof(out), 0), -EAGAIN, "the other direction is untouched");
	pair_close(&p);
}

Test(ring, end_of_stream_comes_after_every_byte)
{
	struct pair p;
	char out[16];

	pair_open(&p, 64);
	cr_assert_eq(send_buf(&p.tx[0], "last words", 10), 10);
	lism_ring_tx_set_state(&p.tx[0], LISM_RING_DONE_WRITING);
	cr_assert_eq(send_buf(&p.tx[0], "more", 4), -EPIPE, "writing after shutdown");
	cr_assert_eq(recv_buf(&p.rx[1], out, 4, 0), 4);
	cr_assert_eq(recv_buf(&p.rx[1], out + 4, sizeof(out), 0), 6);
	cr_assert_eq(memcmp(out, "last words", 10), 0);
	cr_assert_eq(recv_buf(&p.rx[1], out, sizeof(out), 0), 0, "EOF");
	cr_assert_eq(recv_buf(&p.rx[1], out, sizeof(out), 0), 0, "and EOF again");
	p.h->dir[1].prod.state = 0;
	cr_assert_eq(recv_buf(&p.rx[1], out, sizeof(out), 0), 0, "EOF stays, whatever the peer writes");
	cr_assert_not(lism_ring_rx_poll_begin(&p.rx[1]), "no spin after EOF");
	p.h->dir[1].prod.cursor = lism_cursor_pack((struct lism_cursor){ 0, 12 });
	cr_assert_eq(recv_buf(&p.rx[1], out, sizeof(out), 0), -EPROTO, "bytes after EOF");
	cr_assert_eq(send_buf(&p.tx[1], "reply", 5), 5, "half-close: the other way still flows");
	cr_assert_eq(recv_buf(&p.rx[0], out, sizeof(out), 0), 5);
	pair_close(&p);
}

Test(ring, abort_drops_unread_bytes_and_resets)
{
	struct pair p;
	char out[16];

	pair_open(&p, 64);
	cr_assert_eq(send_buf(&p.tx[0], "unread", 6), 6);
	lism_ring_tx_set_state(&p.tx[0], LISM_RING_ABORT);
	cr_assert_eq(recv_buf(&p.rx[1], out, sizeof(out), 0), -ECONNRESET);
	cr_assert(lism_ring_rx_ready(p.rx[1].dir), "a reset is there to read");
	p.h->dir[1].prod.state = 0;
	cr_assert_eq(recv_buf(&p.rx[1], out, sizeof(out), 0), -ECONNRESET, "a reset stays");
	pair_close(&p);
}

Test(ring, a_closed_reader_fails_the_writer_with_epipe)
{
	struct pair p;

	pair_open(&p, 8);
	cr_assert_eq(send_buf(&p.tx[0], "12345678", 8), 8);
	cr_assert(lism_ring_tx_arm(&p.tx[0]), "full: the writer sleeps");
	cr_assert(lism_ring_rx_close(&p.rx[1]), "the close wakes it");
	cr_assert_eq(send_buf(&p.tx[0], "x", 1), -EPIPE);
	cr_assert_eq(lism_ring_tx_arm(&p.tx[0]), false);
	pair_close(&p);
}

/* Every way the peer can break the producer cursor: the reader fails with
 * -EPROTO from then on, and copies nothing.  It reads the cursor once the
 * count does not cover a read (here: everything counted was read). */
Test(ring, a_broken_producer_cursor_is_refused_for_good)
{
	struct lism_cursor bad[] = {
		{ 0, 64 },          /* count out of the ring */
		{ 0, 0xffffffffu },
		{ 1, 9 },           /* ahead of the consumer by more than the ring */
		{ 0xffffffffu, 0 }, /* behind the consumer */
		{ 0x80000000u, 0 },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct pair p;
		char out[128];

		pair_open(&p, 64);
		cr_assert_eq(send_buf(&p.tx[0], "12345678", 8), 8);
		cr_assert_eq(recv_buf(&p.rx[1], out, sizeof(out), 0), 8);
		p.h->dir[1].prod.cursor = lism_cursor_pack(bad[i]);
		memset(out, 0, sizeof(out));
		cr_assert_eq(recv_buf(&p.rx[1], out, sizeof(out), 0), -EPROTO, "case %zu", i);
		cr_assert_eq(out[0], 0);
		p.h->dir[1].prod.cursor = lism_cursor_pack((struct lism_cursor){ 0, 8 });
		cr_assert_eq(recv_buf(&p.rx[1], out, sizeof(out), 0), -EPROTO, "sticky, case %zu", i);
		cr_assert_eq(lism_ring_unread(&p.rx[1]), -EPROTO);
		pair_close(&p);
	}
}

Test(ring, a_producer_cursor_moving_back_is_refused)
{
	struct pair p;
	char out[8];

	pair_open(&p, 64);
	cr_assert_eq(send_buf(&p.tx[0], "12345678", 8), 8);
	cr_assert_eq(lism_ring_unread(&p.rx[1]), 8);
	p.h->dir[1].prod.cursor = lism_cursor_pack((struct lism_cursor){ 0, 4 });
	p.h->dir[1].prod.bell = LISM_BELL_INIT; /* and a count that does not cover the read */
	cr_assert_eq(recv_buf(&p.rx[1], out, sizeof(out), 0), -EPROTO, "4 bytes, once 8: moved back");
	pair_close(&p);
}

/* A count above what the cursor published: the read it covers stays in the
 * DMB, and the cursor, read once the count no longer covers one, says the
 * lie (the consumer is past the producer). */
Test(ring, a_count_above_the_producer_cursor_is_refused)
{
	struct pair p;
	char out[128];

	pair_open(&p, 64);
	cr_assert_eq(send_buf(&p.tx[0], "12345678", 8), 8);
	p.h->dir[1].prod.bell = LISM_BELL_INIT + 40;
	cr_assert_eq(recv_buf(&p.rx[1], out, sizeof(out), 0), 40, "what the count covers, in the DMB");
	cr_assert_eq(memcmp(out, "12345678", 8), 0);
	cr_assert_eq(recv_buf(&p.rx[1], out, sizeof(out), 0), -EPROTO, "consumer past the producer");
	cr_assert_eq(recv_buf(&p.rx[1], out, sizeof(out), 0), -EPROTO, "for good");
	pair_close(&p);

	pair_open(&p, 64);
	cr_assert_eq(send_buf(&p.tx[0], "12345678", 8), 8);
	p.h->dir[1].prod.bell = LISM_BELL_INIT + 65;
	cr_assert_eq(recv_buf(&p.rx[1], out, sizeof(out), 0), -EPROTO, "more than the DMB holds");
	pair_close(&p);
}

Test(ring, a_broken_consumer_cursor_is_refused_for_good)
{
	struct lism_cursor bad[] = {
		{ 0xffffffffu, 64 }, /* count out of the ring, the distance right */
		{ 0, 9 },           /* ahead of the producer */
		{ 0xffffffffu, 7 }, /* behind the producer by more than the ring */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct pair p;

		pair_open(&p, 64);
		cr_assert_eq(send_buf(&p.tx[0], "12345678", 8), 8);
		p.h->dir[1].cons.cursor = lism_cursor_pack(bad[i]);
		/* the writer reads the cursor when the room it saw last is short */
		cr_assert_eq(send_buf(&p.tx[0], big, 57), -EPROTO, "case %zu", i);
		p.h->dir[1].cons.cursor = 0;
		cr_assert_eq(send_buf(&p.tx[0], "x", 1), -EPROTO, "sticky, case %zu", i);
		pair_close(&p);
	}
}

Test(ring, a_consumer_cursor_moving_back_is_refused)
{
	struct pair p;
	char out[8];

	pair_open(&p, 64);
	cr_assert_eq(send_buf(&p.tx[0], "12345678", 8), 8);
	cr_assert_eq(recv_buf(&p.rx[1], out, 4, 0), 4);
	cr_assert_eq(send_buf(&p.tx[0], big, 57), 57, "more than the room seen: the cursor is read");
	p.h->dir[1].cons.cursor = 0;
	cr_assert_eq(send_buf(&p.tx[0], "12345678", 8), -EPROTO, "0 bytes read, once 4: moved back");
	pair_close(&p);
}

Test(ring, a_read_of_no_bytes_says_0)
{
	struct pair p;
	char out[1];

	pair_open(&p, 64);
	cr_assert_eq(recv_buf(&p.rx[1], out, 0, 0), 0, "as read(2), even on an empty ring");
	cr_assert_eq(send_buf(&p.tx[0], "ab", 2), 2);
	cr_assert_eq(recv_buf(&p.rx[1], out, 0, 0), 0);
	cr_assert_eq(lism_ring_unread(&p.rx[1]), 2, "and takes nothing");
	pair_close(&p);
}

Test(ring, attach_takes_the_cursors_the_header_holds)
{
	struct pair p;
	struct lism_ring_rx rx0, rx1;
	struct lism_ring_tx tx0, tx1;
	char out[8];

	pair_open(&p, 16);
	cr_assert_eq(send_buf(&p.tx[0], "0123456789", 10), 10);
	cr_assert_eq(recv_buf(&p.rx[1], out, 6, 0), 6);
	cr_assert_eq(send_buf(&p.tx[0], "abcdefghij", 10), 10);
	/* end 1 again, as a process after exec would: it reads on where it was */
	cr_assert_eq(lism_ring_attach(p.mem, p.len, 1, &rx1, &tx1), 0);
	cr_assert_eq(recv_buf(&rx1, out, 8, 0), 8);
	cr_assert_eq(memcmp(out, "6789abcd", 8), 0);
	/* and end 0: its writer goes on where it was */
	cr_assert_eq(lism_ring_attach(p.mem, p.len, 0, &rx0, &tx0), 0);
	cr_assert_eq(send_buf(&tx0, "XYZ", 3), 3);
	cr_assert_eq(lism_ring_unread(&rx1), 6 + 3);
	cr_assert_eq(recv_buf(&rx1, out, 8, 0), 8);
	cr_assert_eq(memcmp(out, "efghijXY", 8), 0);
	/* a header whose cursors break the invariant is not attached */
	p.h->dir[1].cons.cursor = lism_cursor_pack((struct lism_cursor){ 5, 0 });
	cr_assert_eq(lism_ring_attach(p.mem, p.len, 1, &rx1, &tx1), -EPROTO);
	pair_close(&p);
}

/*
 * An image killed between its cursor and its take (an exec while another
 * thread was in recv) leaves the count above what is unread: the image
 * after it reads by the cursor alone, never past the writer's bytes.
 */
Test(ring, a_reattach_reads_by_the_cursor_not_a_count_left_high)
{
	struct pair p;
	struct lism_ring_rx rx1;
	struct lism_ring_tx tx1;
	char out[16];

	pair_open(&p, 64);
	cr_assert_eq(send_buf(&p.tx[0], "0123456789", 10), 10);
	cr_assert_eq(recv_buf(&p.rx[1], out, 4, 0), 4);
	p.h->dir[1].prod.bell += 4; /* the 4 read, their take not made */
	cr_assert_eq(lism_ring_attach(p.mem, p.len, 1, &rx1, &tx1), 0);
	cr_assert_eq(lism_bell_unread(p.h->dir[1].prod.bell), 6, "the take the image missed, made at attach");
	cr_assert_eq(recv_buf(&rx1, out, sizeof(out), 0), 6, "what the writer published, not what the count says");
	cr_assert_eq(memcmp(out, "456789", 6), 0);
	cr_assert_eq(recv_buf(&rx1, out, sizeof(out), 0), -EAGAIN);
	cr_assert_eq(send_buf(&p.tx[0], "x", 1), 1);
	cr_assert(p.tx[0].bell, "the writer's next crossing rings: its doorbells are on again");
	pair_close(&p);
}

/* A process after exec takes over the doorbell count: sent and not eaten is owed, but the one of bytes waiting. */
Test(ring, a_reattach_owes_the_doorbells_sent_and_not_eaten)
{
	struct pair p;
	struct lism_ring_rx rx;
	struct lism_ring_tx tx;
	char out[8];

	pair_open(&p, 16);
	cr_assert_eq(send_buf(&p.tx[0], "abcd", 4), 4);
	cr_assert(p.tx[0].bell, "the count crossed above 0: a doorbell");
	cr_assert_eq(recv_buf(&p.rx[1], out, 4, 0), 4);
	cr_assert_eq(p.rx[1].owed, 1, "and back: one to eat");
	cr_assert_eq(lism_ring_attach(p.mem, p.len, 1, &rx, &tx), 0);
	cr_assert_eq(rx.owed, 1, "not eaten before the exec: still owed");
	cr_assert_eq(send_buf(&p.tx[0], "efgh", 4), 4);
	cr_assert_eq(lism_ring_attach(p.mem, p.len, 1, &rx, &tx), 0);
	cr_assert_eq(rx.owed, 1, "the second doorbell is the waiting bytes': not owed");
	lism_ring_rx_ate(&p.rx[1], 1);
	cr_assert_eq(lism_ring_attach(p.mem, p.len, 1, &rx, &tx), 0);
	cr_assert_eq(rx.owed, 0);
	cr_assert_eq(rx.eaten, 1, "the eaten count comes back from the header");
	pair_close(&p);
}

Test(ring, a_spinning_reader_silences_the_doorbells_and_says_the_bytes)
{
	struct pair p;
	char out[4];

	pair_open(&p, 8);
	cr_assert_not(lism_ring_rx_ready(p.rx[1].dir), "nothing to read");
	cr_assert(lism_ring_rx_poll_begin(&p.rx[1]), "nothing to read: the reader may spin");
	cr_assert_eq(send_buf(&p.tx[0], "ab", 2), 2);
	cr_assert_not(p.tx[0].bell, "the reader spins: no doorbell");
	cr_assert(lism_ring_rx_ready(p.rx[1].dir), "the spin sees the bytes");
	cr_assert(lism_ring_rx_poll_end(&p.rx[1]), "bytes with no doorbell: the reader says them");
	cr_assert_not(lism_ring_rx_poll_begin(&p.rx[1]), "bytes counted: read them, no spin");
	cr_assert_eq(send_buf(&p.tx[0], "c", 1), 1);
	cr_assert_not(p.tx[0].bell, "still the silent stretch");
	cr_assert_eq(recv_buf(&p.rx[1], out, 3, 0), 3);
	cr_assert_eq(p.rx[1].owed, 0, "its end owes nothing");
	cr_assert_eq(send_buf(&p.tx[0], "d", 1), 1);
	cr_assert(p.tx[0].bell, "nobody spins: a doorbell");
	cr_assert_not(lism_ring_rx_poll_end(&p.rx[1]), "no spin to end: nothing silent");
	cr_assert_eq(recv_buf(&p.rx[1], out, 1, 0), 1);
	cr_assert_eq(p.rx[1].owed, 1, "and its end owes it");
	cr_assert(lism_ring_rx_poll_begin(&p.rx[1]));
	lism_ring_tx_set_state(&p.tx[0], LISM_RING_CLOSED);
	cr_assert(lism_ring_rx_ready(p.rx[1].dir), "a close is there to read");
	cr_assert_not(lism_ring_rx_poll_end(&p.rx[1]), "no bytes counted: nothing silent");

	/* the writer's side: full, then room */
	cr_assert_eq(send_buf(&p.tx[1], "12345678", 8), 8);
	cr_assert(lism_ring_tx_arm(&p.tx[1]), "full: may sleep");
	cr_assert_eq(recv_buf(&p.rx[0], out, 1, 0), 1);
	cr_assert(lism_ring_rx_ring(&p.rx[0]), "room: the writer needs a doorbell");
	cr_assert_not(lism_ring_rx_ring(&p.rx[0]));
	cr_assert_not(lism_ring_tx_arm(&p.tx[1]), "room: not asleep");
	pair_close(&p);
}

/* The spin mirror (bell.h): the reader's spin turns it on in a new
 * generation; the writer's first carry looks at the word, the next ones
 * do not; an add that finds the spin over forgets the generation; a
 * process with a second thread (this runner's) never turns it on. */
Test(ring, a_writer_carries_on_the_spin_mirror)
{
	struct pair p;
	char out[64];
	bool carried;
	__u64 w;

	lism_ring_carry = true;
	lism_ring_mirror = 2; /* whatever the runner's threads */
	pair_open(&p, 64);
	cr_assert(lism_ring_rx_poll_begin(&p.rx[1]));
	cr_assert_eq(p.h->dir[1].cons.spin, 3, "on, in generation 1");
	cr_assert_eq(send_buf(&p.tx[0], "abc", 3), 3);
	cr_assert_eq(p.tx[0].carry, 3, "carried");
	cr_assert(p.h->dir[1].prod.bell & LISM_BELL_CARRIED, "the first carry looked at the word and said so");
	cr_assert_eq(p.tx[0].spin_seen, 3, "in this generation");
	/* the next one does not look: a word that says no spin does not stop it */
	w = p.h->dir[1].prod.bell;
	p.h->dir[1].prod.bell = w & ~LISM_BELL_POLLING;
	cr_assert_eq(send_buf(&p.tx[0], "def", 3), 3);
	cr_assert_eq(p.tx[0].carry, 6, "carried on the mirror alone");
	p.h->dir[1].prod.bell = w;
	cr_assert_not(lism_ring_rx_poll_end(&p.rx[1]));
	cr_assert_eq(p.h->dir[1].cons.spin, 2, "the spin's end turns it off");
	cr_assert_eq(send_buf(&p.tx[0], "g", 1), 1);
	cr_assert_eq(p.tx[0].carry, 0, "off: the writer looks at the word, and adds");
	cr_assert_eq(p.tx[0].spin_seen, 0, "an add that found the spin over forgets it");
	cr_assert_eq(lism_bell_unread(p.h->dir[1].prod.bell), 7);
	cr_assert_eq(recv_buf(&p.rx[1], out, 64, 0), 7);

	/* an add past half the DMB that finds the spin over forgets the
	 * generation even while the mirror (stale) still shows it */
	cr_assert(lism_ring_rx_poll_begin(&p.rx[1]));
	cr_assert_eq(p.h->dir[1].cons.spin, 5, "a new generation");
	cr_assert_eq(send_buf(&p.tx[0], "0123456789", 10), 10);
	cr_assert_eq(p.tx[0].spin_seen, 5);
	cr_assert_not(lism_ring_rx_sleep_begin(&p.rx[1], &carried));
	cr_assert(carried);
	cr_assert_eq(p.h->dir[1].cons.spin, 4, "off before the sleeper's fence");
	p.h->dir[1].cons.spin = 5; /* the window before the mirror's store */
	cr_assert_eq(send_buf(&p.tx[0], "0123456789abcdefghijklmnopqrstuv", 32), 32);
	cr_assert_eq(p.tx[0].carry, 0, "past half the DMB: an add");
	cr_assert_eq(p.tx[0].spin_seen, 0, "which saw the spin over");
	cr_assert_eq(send_buf(&p.tx[0], "x", 1), 1);
	cr_assert_eq(p.tx[0].carry, 0, "so the next send looks at the word: no spin, an add");
	p.h->dir[1].cons.spin = 4;
	lism_ring_rx_sleep_end(&p.rx[1]);
	cr_assert_eq(recv_buf(&p.rx[1], out, 64, 0), 43);

	/* more threads (this runner has them): never on (their stores would race) */
	lism_ring_mirror = 1;
	cr_assert(lism_ring_rx_poll_begin(&p.rx[1]));
	cr_assert_eq(p.h->dir[1].cons.spin, 4, "off with a second thread");
	cr_assert_eq(send_buf(&p.tx[0], "y", 1), 1);
	cr_assert_eq(p.tx[0].carry, 1, "the writer still carries, looking at the word");
	cr_assert_eq(p.tx[0].spin_seen, 0);
	cr_assert_not(lism_ring_rx_poll_end(&p.rx[1]));
	pair_close(&p);
}

/* Carried counts (bell.h): no add while the reader spins with CARRY; the
 * sleeper's fence shows the bytes; the next add counts the carry. */
Test(ring, a_writer_carries_while_its_reader_spins)
{
	struct pair p;
	char out[8];
	bool carried = false;
	struct lism_ring_rx rx;
	struct lism_ring_tx tx;

	lism_ring_carry = true;
	pair_open(&p, 16);
	cr_assert(lism_ring_rx_poll_begin(&p.rx[1]));
	cr_assert(p.h->dir[1].prod.bell & LISM_BELL_CARRY, "the spin lets the writer carry");
	cr_assert_not(p.h->dir[1].prod.bell & LISM_BELL_CARRIED);
	cr_assert_eq(send_buf(&p.tx[0], "abcde", 5), 5);
	cr_assert_eq(p.tx[0].carry, 5, "carried");
	cr_assert(p.h->dir[1].prod.bell & LISM_BELL_CARRIED, "and the first carry says so");
	cr_assert_eq(p.h->dir[1].prod.carried, 5, "and said in the header, for an exec");
	cr_assert_eq(lism_bell_unread(p.h->dir[1].prod.bell), 0, "not counted");
	cr_assert(lism_ring_rx_ready(p.rx[1].dir), "the spin sees them by the cursor");
	cr_assert_eq(send_buf(&p.tx[0], "fghij", 5), 5);
	cr_assert_eq(p.tx[0].carry, 0, "past half the DMB: counted, with the carry");
	cr_assert_eq(p.h->dir[1].prod.carried, 0);
	cr_assert_eq(lism_bell_unread(p.h->dir[1].prod.bell), 10);
	cr_assert_not(p.tx[0].bell, "silent: the reader spins");
	cr_assert_eq(recv_buf(&p.rx[1], out, 8, LISM_RING_LOOK), 8);
	cr_assert_eq(recv_buf(&p.rx[1], out, 8, LISM_RING_LOOK), 2);
	cr_assert_eq(p.rx[1].owed, 0, "a silent stretch owes nothing");
	cr_assert(p.h->dir[1].prod.bell & LISM_BELL_POLLING, "the look leaves it spinning");
	cr_assert_eq(send_buf(&p.tx[0], "kl", 2), 2);
	cr_assert_eq(p.tx[0].carry, 2);
	cr_assert_not(lism_ring_rx_poll_end(&p.rx[1]), "nothing counted: the end of the spin says nothing");
	cr_assert(p.h->dir[1].prod.bell & LISM_BELL_CARRY, "the fence is still due");
	cr_assert_not(lism_ring_rx_sleep_begin(&p.rx[1], &carried), "the count says nothing");
	cr_assert(carried, "and the sleeper learns a fence is due");
	cr_assert(lism_ring_rx_fenced(&p.rx[1]), "after it: the carried bytes, with no doorbell");
	cr_assert(p.h->dir[1].prod.bell & LISM_BELL_CARRY, "CARRY stays while they are there: every sleeper says them");
	lism_ring_rx_sleep_end(&p.rx[1]);
	cr_assert_not(lism_ring_rx_sleep_begin(&p.rx[1], &carried), "the word says nothing");
	cr_assert(carried && lism_ring_rx_fenced(&p.rx[1]), "the next sleeper's fence says them again");
	lism_ring_rx_sleep_end(&p.rx[1]);

	/* a process after exec takes the carry over from the header */
	cr_assert_eq(lism_ring_attach(p.mem, p.len, 0, &rx, &tx), 0);
	cr_assert_eq(tx.carry, 2);
	cr_assert_eq(recv_buf(&p.rx[1], out, 8, 0), 2, "read by the cursor");
	cr_assert_eq(lism_bell_unread(p.h->dir[1].prod.bell), -2, "the count lags by the carry");
	cr_assert_not(lism_ring_rx_sleep_begin(&p.rx[1], &carried));
	cr_assert(carried);
	cr_assert_not(lism_ring_rx_fenced(&p.rx[1]), "read: nothing to say");
	cr_assert_not(p.h->dir[1].prod.bell & LISM_BELL_CARRY, "and CARRY goes");
	lism_ring_rx_sleep_end(&p.rx[1]);
	cr_assert_eq(send_buf(&tx, "m", 1), 1);
	cr_assert(tx.bell, "nobody spins: the add counts the carry and rings");
	cr_assert_eq(lism_bell_unread(p.h->dir[1].prod.bell), 1);
	cr_assert_eq(tx.carry, 0);
	cr_assert_eq(recv_buf(&p.rx[1], out, 8, 0), 1);
	cr_assert_eq(p.rx[1].owed, 1, "and its end owes the doorbell");

	p.h->dir[1].prod.carried = 9; /* more than half the DMB: no writer carries that */
	cr_assert_eq(lism_ring_attach(p.mem, p.len, 0, &rx, &tx), -EPROTO);
	pair_close(&p);
}

/* Sends of LISM_BELL_CARRY_SEND bytes or more never carry: their add is
 * little beside their copy, and a carry costs the reader's sleep a fence. */
Test(ring, a_large_send_is_counted_while_its_reader_spins)
{
	static char big[LISM_BELL_CARRY_SEND];
	struct pair p;

	lism_ring_carry = true;
	pair_open(&p, 4 * LISM_BELL_CARRY_SEND);
	cr_assert(lism_ring_rx_poll_begin(&p.rx[1]));
	cr_assert_eq(send_buf(&p.tx[0], big, sizeof(big)), (ssize_t)sizeof(big));
	cr_assert_eq(p.tx[0].carry, 0, "not carried");
	cr_assert_eq(lism_bell_unread(p.h->dir[1].prod.bell), (__s64)sizeof(big), "counted");
	cr_assert_not(p.h->dir[1].prod.bell & LISM_BELL_CARRIED, "no fence due");
	cr_assert_eq(send_buf(&p.tx[0], big, sizeof(big) - 1), (ssize_t)sizeof(big) - 1);
	cr_assert_eq(p.tx[0].carry, sizeof(big) - 1, "one byte less is carried");
	pair_close(&p);
}

Test(ring, a_doorbell_word_the_rule_cannot_make_resets)
{
	struct pair p;
	char out[4];

	pair_open(&p, 8);
	cr_assert_eq(send_buf(&p.tx[0], "ab", 2), 2);
	p.h->dir[1].prod.bell |= 1ull << 58;
	cr_assert_eq(recv_buf(&p.rx[1], out, 2, 0), -EPROTO, "a bit the rule never sets");
	cr_assert_eq(send_buf(&p.tx[1], "ab", 2), 2);
	p.h->dir[0].prod.bell = LISM_BELL_INIT + 100;
	cr_assert_eq(send_buf(&p.tx[1], "c", 1), -EPROTO, "more counted than two rings");
	pair_close(&p);
}

/* Two threads, a 4 KiB ring, 64 MiB, the wait protocols with a pipe for
 * doorbells each way.  The writer rings the reader's pipe as the doorbell
 * rule says (tx.bell), and the reader eats exactly what it owes, spinning
 * (POLLING) before some waits and not others: a lost wakeup leaves a side
 * asleep, which ten seconds without a doorbell turn into a failure, and a
 * stray doorbell is one left in the pipe at the end (or a reader that
 * wakes to nothing forever).  The writer's waits for room drain their pipe
 * before they arm (that rule is the writer_waits flag's).  Only sleeps that
 * found no doorbell waiting count as sleeps. */
struct side {
	struct pair *p;
	int bell_in, bell_out; /* sleep on bell_in, ring bell_out */
	__u64 sum, bytes, sleeps, rings, spins, silent;
	int fail;
	int *stop;             /* the other side failed: stop waiting */
	int looks;             /* the reader's takes leave POLLING set (LISM_RING_LOOK, bell.h) */
	int carries;           /* carried counts: the reader sleeps as liblism's waits do (sleep_begin, a fence) */
	__u64 carried;         /* the writer's sends that carried */
};

#define STRESS_BYTES (64ull << 20)

static void drain_bells(struct side *s)
{
	char drain[64];

	while (read(s->bell_in, drain, sizeof(drain)) > 0)
		;
}

static int sleep_on(struct side *s)
{
	struct pollfd pfd = { .fd = s->bell_in, .events = POLLIN };

	if (poll(&pfd, 1, 0) == 1)
		return 0;
	s->sleeps++;
	for (int slice = 0; slice < 100; slice++) {
		if (poll(&pfd, 1, 100) == 1)
			return 0;
		if (__atomic_load_n(s->stop, __ATOMIC_RELAXED))
			return -2;
	}
	return -1; /* ten seconds without a doorbell: one was lost */
}

static void fail(struct side *s, int why)
{
	s->fail = why;
	__atomic_store_n(s->stop, 1, __ATOMIC_RELAXED);
}

static void ring_bell(struct side *s)
{
	s->rings++;
	(void)!write(s->bell_out, "", 1);
}

static __u64 mix(__u64 h, const unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static void *writer(void *arg)
{
	struct side *s = arg;
	unsigned char buf[3000];
	__u64 x = 88172645463325252ull;
	unsigned seed = 3;

	while (s->bytes < STRESS_BYTES && !s->fail) {
		/* carried counts: messages that fit a carry (half the DMB) */
		size_t n = 1 + rand_r(&seed) % (s->carries ? 300 : sizeof(buf));

		if (n > STRESS_BYTES - s->bytes)
			n = STRESS_BYTES - s->bytes;
		for (size_t i = 0; i < n; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			buf[i] = (unsigned char)x;
		}
		for (size_t off = 0; off < n;) {
			ssize_t k = send_buf(&s->p->tx[0], buf + off, n - off);

			if (k > 0) {
				s->sum = mix(s->sum, buf + off, k);
				off += k;
				if (s->p->tx[0].bell)
					ring_bell(s);
				s->carried += !!s->p->tx[0].carry;
			} else if (k != -EAGAIN) {
				fail(s, 1);
				return NULL;
			} else {
				int err;

				drain_bells(s);
				if (lism_ring_tx_arm(&s->p->tx[0]) && (err = sleep_on(s))) {
					fail(s, -err + 1);
					return NULL;
				}
			}
		}
		s->bytes += n;
		if (s->carries && !(rand_r(&seed) % 8)) {
			/* a writer that waits for its answer sends nothing more: its
			 * reader must find what it carried, asleep or not */
			const struct lism_ring_dir *d = s->p->tx[0].dir;
			__u64 t;

			for (t = 0; t < 10000000 && __atomic_load_n(&d->cons.cursor, __ATOMIC_ACQUIRE) !=
							   __atomic_load_n(&d->prod.cursor, __ATOMIC_RELAXED) &&
				    !__atomic_load_n(s->stop, __ATOMIC_RELAXED);
			     t++)
				usleep(1);
			if (t == 10000000) {
				fail(s, 2);
				return NULL;
			}
		}
	}
	lism_ring_tx_set_state(&s->p->tx[0], LISM_RING_CLOSED);
	close(s->bell_out); /* the FIN: the reader's pipe hangs up */
	s->bell_out = -1;
	return NULL;
}

/* Eat the doorbells the reader owes that are in its pipe, never more. */
static void eat_owed(struct side *s)
{
	char drain[64];
	__u64 n = s->p->rx[1].owed;
	ssize_t r;

	if (n && (r = read(s->bell_in, drain, n < sizeof(drain) ? n : sizeof(drain))) > 0)
		lism_ring_rx_ate(&s->p->rx[1], (__u64)r);
}

static void *reader(void *arg)
{
	struct side *s = arg;
	unsigned char buf[5000];
	unsigned seed = 5;
	long idle = 0;

	for (;;) {
		ssize_t k = recv_buf(&s->p->rx[1], buf, 1 + rand_r(&seed) % sizeof(buf), s->looks ? LISM_RING_LOOK : 0);

		eat_owed(s);
		if (k > 0) {
			idle = 0;
			s->sum = mix(s->sum, buf, k);
			s->bytes += k;
			if (lism_ring_rx_ring(&s->p->rx[1]))
				ring_bell(s);
		} else if (k == 0) {
			struct pollfd hup = { .fd = s->bell_in, .events = POLLIN };
			char left;

			/* the end: every doorbell eaten, none left over (once the writer hung up) */
			if (s->p->rx[1].owed || poll(&hup, 1, 10000) != 1 || read(s->bell_in, &left, 1) != 0)
				fail(s, 4);
			return NULL;
		} else if (k != -EAGAIN) {
			fail(s, 1);
			return NULL;
		} else if (++idle > 1000000) {
			fail(s, 5); /* woken a million times to nothing: a doorbell nobody owes */
			return NULL;
		} else {
			int err;

			if (rand_r(&seed) % 2 && lism_ring_rx_poll_begin(&s->p->rx[1])) {
				/* a spin of up to a few thousand looks */
				int looks = rand_r(&seed) % 4000;

				s->spins++;
				while (looks-- && !lism_ring_rx_ready(s->p->rx[1].dir))
					sched_yield();
			}
			/* every wait in the kernel first ends any spin, and reads what it hid */
			if (s->carries) {
				/* as liblism's: the spin's end keeps CARRY, the sleep fences */
				bool carried = false, silent;

				(void)lism_ring_rx_poll_end(&s->p->rx[1]);
				silent = lism_ring_rx_sleep_begin(&s->p->rx[1], &carried);
				if (carried) {
					lism_fence_peers();
					silent |= lism_ring_rx_fenced(&s->p->rx[1]);
				}
				if (silent)
					s->silent++;
				err = silent ? 0 : sleep_on(s);
				lism_ring_rx_sleep_end(&s->p->rx[1]);
				if (err) {
					fail(s, -err + 1);
					return NULL;
				}
				continue;
			}
			if (lism_ring_rx_poll_end(&s->p->rx[1])) {
				s->silent++;
				continue;
			}
			if (lism_ring_rx_ready(s->p->rx[1].dir))
				continue;
			if ((err = sleep_on(s))) {
				fail(s, -err + 1);
				return NULL;
			}
		}
	}
}

static void two_threads(int looks, int carries)
{
	struct pair p;
	int to_reader[2], to_writer[2];
	pthread_t tw, tr;

	pair_open(&p, 4096);
	cr_assert_eq(pipe2(to_reader, O_NONBLOCK), 0);
	cr_assert_eq(pipe2(to_writer, O_NONBLOCK), 0);
	int stop = 0;
	struct side w = { .p = &p, .bell_in = to_writer[0], .bell_out = to_reader[1], .sum = 1, .stop = &stop };
	struct side r = { .p = &p, .bell_in = to_reader[0], .bell_out = to_writer[1], .sum = 1, .stop = &stop,
			  .looks = looks, .carries = carries };

	if (carries) {
		lism_fence_init();
		cr_assert(lism_ring_carry, "this kernel registers no membarrier fence: carried counts are off");
	}

	pthread_create(&tw, NULL, writer, &w);
	pthread_create(&tr, NULL, reader, &r);
	pthread_join(tw, NULL);
	pthread_join(tr, NULL);
	cr_assert_eq(w.fail, 0, "writer failed (%d: 2 is a lost wakeup, 3 the reader failing)", w.fail);
	cr_assert_eq(r.fail, 0, "reader failed (%d: 2 is a lost wakeup, 3 the writer failing, 4 a stray doorbell)",
		     r.fail);
	cr_assert_eq(r.bytes, STRESS_BYTES);
	cr_assert_eq(r.sum, w.sum, "checksums differ");
	cr_assert(w.sleeps > 0 && r.sleeps > 0, "a side never blocked: its wait protocol went untested");
	cr_assert(r.silent > 0, "no spin ever hid a doorbell: the silent stretches went untested");
	if (carries)
		cr_assert(w.carried > 0, "the writer never carried: carried counts went untested");
	cr_log_info("ring stress: writer slept %llu rang %llu carried %llu, reader slept %llu rang %llu spun %llu "
		    "(%llu silent)", (unsigned long long)w.sleeps, (unsigned long long)w.rings, (unsigned long long)w.carried,
		    (unsigned long long)r.sleeps, (unsigned long long)r.rings, (unsigned long long)r.spins,
		    (unsigned long long)r.silent);
	close(to_reader[0]);
	close(to_writer[0]);
	close(to_writer[1]);
	pair_close(&p);
}

Test(ring, two_threads_stream_checksummed_with_no_lost_wakeup, .timeout = 120)
{
	two_threads(0, 0);
}

/* Carried counts (bell.h): the writer leaves its bytes out of the count
 * while the reader spins, and the reader's sleeps fence first. */
Test(ring, two_threads_stream_with_carried_counts, .timeout = 120)
{
	two_threads(1, 1);
}

/* The same with a reader whose takes leave POLLING set while it works, as liblism's do. */
Test(ring, two_threads_stream_with_a_reader_that_looks_before_it_sleeps, .timeout = 120)
{
	two_threads(1, 0);
}
