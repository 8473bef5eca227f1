/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Waits for something to happen, on a slower machine: make vmtest's guests
 * (qemu TCG, no KVM) run everything many times slower than the host, so a
 * wait there lasts LISM_TEST_TIME_SCALE times as long (vmtest sets it; 1
 * elsewhere).  Only for waits that end as soon as the thing happens: a
 * passing test takes no longer, a failing one fails later.
 */
#ifndef LISM_TEST_SLOW_H
#define LISM_TEST_SLOW_H

#include <stdlib.h>

/* The factor: 1 unless LISM_TEST_TIME_SCALE says more. */
static inline int time_scale(void)
{
	const char *s = getenv("LISM_TEST_TIME_SCALE");
	int k = s ? atoi(s) : 1;

	return k > 1 ? k : 1;
}

static inline int scaled_ms(int ms)
{
	int k = time_scale();

	return ms < (1 << 30) / k ? ms * k : ms;
}

#endif
