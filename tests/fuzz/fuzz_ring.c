// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target: the ring reader and writer (exec/ring.c) over any
 * header state the peer can make.  The input sets the DMB size, the end,
 * and both directions' cursors and states, then runs a sequence of
 * receives, peeks, sends, arms, closes and further header writes (the
 * peer's lines, and this end's own, which it must never read back).  The
 * region is allocated at its exact size and, while a call runs, ASan
 * poisons what that call must not touch: the header's unused tail, and
 * the DMB of the other direction.  The answers must stay within what the
 * calls promise, and -EPROTO, once said, is said again.
 */
#include <errno.h>
#include <stdbool.h>
#include <sanitizer/asan_interface.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exec/ring.h"

struct input {
	const uint8_t *p;
	size_t n;
};

static uint64_t take(struct input *in, size_t bytes)
{
	uint64_t v = 0;

	for (size_t i = 0; i < bytes && in->n; i++, in->p++, in->n--)
		v |= (uint64_t)*in->p << (8 * i);
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { data, size };
	__u32 dmb = 1 + (__u32)take(&in, 2) % 4096;
	__u64 len = lism_ring_region_size(dmb);
	unsigned char *mem = malloc(len), buf[600];
	struct lism_ring_hdr *h = (struct lism_ring_hdr *)mem;
	struct lism_ring_rx rx;
	struct lism_ring_tx tx;
	int end = (int)take(&in, 1) & 1;

	memset(mem, 0, len);
	if (lism_ring_init(mem, len, dmb, 1, 2, 3))
		abort();
	for (int d = 0; d < 2; d++) {
		h->dir[d].prod.cursor = take(&in, 8);
		h->dir[d].prod.state = (__u32)take(&in, 1);
		h->dir[d].cons.cursor = take(&in, 8);
		h->dir[d].cons.state = (__u32)take(&in, 1);
	}
	if (lism_ring_attach(mem, len, end, &rx, &tx))
		goto out;
	ASAN_POISON_MEMORY_REGION(mem + sizeof(*h), LISM_RING_HDR_SIZE - sizeof(*h));
	while (in.n) {
		unsigned op = (unsigned)take(&in, 1);
		size_t n = take(&in, 2) % sizeof(buf);
		struct iovec iov[2] = { { buf, n / 2 }, { buf + n / 2, n - n / 2 } };
		ssize_t r;

		switch (op % 11) {
		case 0:
		case 1: {
			int was = rx.err;

			ASAN_POISON_MEMORY_REGION(tx.buf, dmb);
			r = lism_ring_recv(&rx, iov, 2, op % 2 ? LISM_RING_PEEK : 0);
			ASAN_UNPOISON_MEMORY_REGION(tx.buf, dmb);
			if (r > (ssize_t)n ||
			    (r < 0 && r != -EAGAIN && r != -ECONNRESET && r != -EPROTO && r != -EXDEV) ||
			    (was && r != was))
				abort();
			break;
		}
		case 2: {
			int was = tx.err;

			ASAN_POISON_MEMORY_REGION(rx.buf, dmb);
			r = lism_ring_send(&tx, iov, 2);
			ASAN_UNPOISON_MEMORY_REGION(rx.buf, dmb);
			if (r > (ssize_t)n || (r < 0 && r != -EAGAIN && r != -EPIPE && r != -EPROTO && r != -EXDEV) ||
			    (was && r != was))
				abort();
			break;
		}
		case 3:
			r = lism_ring_unread(&rx);
			if (r > (ssize_t)dmb || (r < 0 && r != -EPROTO && r != -ECONNRESET))
				abort();
			break;
		case 4: { /* a spin, and a sleep's count and fence (carried counts on or off) */
			bool carried = false;

			lism_ring_carry = op & 0x80;
			if (lism_ring_rx_poll_begin(&rx))
				(void)lism_ring_rx_ready(rx.dir);
			(void)lism_ring_rx_poll_end(&rx);
			if (op & 0x40) {
				(void)lism_ring_rx_sleep_begin(&rx, &carried);
				if (carried)
					(void)lism_ring_rx_fenced(&rx);
				lism_ring_rx_sleep_end(&rx);
			}
			break;
		}
		case 5:
			(void)lism_ring_tx_arm(&tx);
			(void)lism_ring_rx_ring(&rx);
			break;
		case 6: /* the peer writes a cursor: its own, or this end's */
			switch ((op >> 3) & 3) {
			case 0: rx.dir->prod.cursor = take(&in, 8); break;
			case 1: tx.dir->cons.cursor = take(&in, 8); break;
			case 2: rx.dir->cons.cursor = take(&in, 8); break;
			case 3: tx.dir->prod.cursor = take(&in, 8); break;
			}
			break;
		case 8: { /* the reader at a run: what is left of it, how much of what it saw is the run's */
			bool final;

			r = lism_ring_run_left(&rx, &final);
			if (r < 0 && r != -EAGAIN && r != -EPROTO && r != -ECONNRESET)
				abort();
			if (r > 0 && lism_ring_run_valid(&rx, n) > n)
				abort();
			if (r > 0)
				lism_ring_run_read(&rx, take(&in, 2) % ((size_t)r + 1));
			lism_ring_rx_ate(&rx, take(&in, 1) % 3);
			break;
		}
		case 9: /* the writer's runs */
			switch ((op >> 4) & 3) {
			case 0: r = lism_ring_tx_run_start(&tx);
				if (r && r != -EAGAIN && r != -EPROTO)
					abort();
				break;
			case 1: if (tx.in_run)
					lism_ring_tx_run_add(&tx, (__s64)(take(&in, 2) % 1000) - 300);
				break;
			default: (void)lism_ring_tx_run_end(&tx); break;
			}
			break;
		case 10: { /* the peer writes its counts and runs */
			struct lism_ring_run *run = &rx.dir->run[take(&in, 1) % LISM_RING_RUNS];

			switch ((op >> 4) & 7) {
			case 0: rx.dir->prod.bell = take(&in, 8); break;
			case 1: rx.dir->prod.runs = take(&in, 8); break;
			case 2: run->at = take(&in, 8); break;
			case 3: run->len = take(&in, 8); break;
			case 4: run->bells = take(&in, 8); break;
			case 5: run->ended = (__u32)take(&in, 1); break;
			case 6: tx.dir->cons.runs_done = take(&in, 8); break;
			default: tx.dir->prod.bell = take(&in, 8); break;
			}
			break;
		}
		case 7: /* a state: the peer's, or this end's own calls */
			switch ((op >> 3) & 3) {
			case 0: rx.dir->prod.state = (__u32)take(&in, 1); break;
			case 1: tx.dir->cons.state = (__u32)take(&in, 1); break;
			case 2: lism_ring_tx_set_state(&tx, (__u32)take(&in, 1)); break;
			case 3: (void)lism_ring_rx_close(&rx); break;
			}
			break;
		}
	}
	ASAN_UNPOISON_MEMORY_REGION(mem + sizeof(*h), LISM_RING_HDR_SIZE - sizeof(*h));
out:
	free(mem);
	return 0;
}
