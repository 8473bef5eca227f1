// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target: the ring reader and writer (exec/ring.c) over any
 * header state the peer can make.  The input sets the DMB size and both
 * directions' cursors, states and wait flags, then runs a sequence of
 * receives, peeks, sends, arms and further header writes.  The region is
 * allocated at its exact size, so ASan catches a copy outside it; the
 * answers must stay within what the calls promise.
 */
#include <errno.h>
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
	__u32 dmb = 1 + (__u32)take(&in, 1);
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
	while (in.n) {
		unsigned op = (unsigned)take(&in, 1);
		size_t n = take(&in, 2) % sizeof(buf);
		struct iovec iov[2] = { { buf, n / 2 }, { buf + n / 2, n - n / 2 } };
		ssize_t r;

		switch (op % 8) {
		case 0:
		case 1:
			r = lism_ring_recv(&rx, iov, 2, op % 2 ? LISM_RING_PEEK : 0);
			if (r > (ssize_t)n || (r < 0 && r != -EAGAIN && r != -ECONNRESET && r != -EPROTO))
				abort();
			break;
		case 2:
			r = lism_ring_send(&tx, iov, 2);
			if (r > (ssize_t)n || (r < 0 && r != -EAGAIN && r != -EPIPE && r != -EPROTO))
				abort();
			break;
		case 3:
			r = lism_ring_unread(&rx);
			if (r > (ssize_t)dmb || (r < 0 && r != -EPROTO))
				abort();
			break;
		case 4:
			(void)lism_ring_rx_arm(&rx);
			(void)lism_ring_tx_ring(&tx);
			break;
		case 5:
			(void)lism_ring_tx_arm(&tx);
			(void)lism_ring_rx_ring(&rx);
			break;
		case 6: /* the peer writes a cursor */
			if (op & 8)
				rx.dir->prod.cursor = take(&in, 8);
			else
				tx.dir->cons.cursor = take(&in, 8);
			break;
		case 7: /* the peer writes a state */
			if (op & 8)
				rx.dir->prod.state = (__u32)take(&in, 1);
			else
				tx.dir->cons.state = (__u32)take(&in, 1);
			break;
		}
	}
out:
	free(mem);
	return 0;
}
