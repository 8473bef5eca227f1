/* SPDX-License-Identifier: GPL-2.0-only */
/* CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns(): for deadlines and leases. */
#ifndef LISM_CLOCK_H
#define LISM_CLOCK_H

#include <linux/types.h>
#include <time.h>

static inline __u64 lism_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

static inline double lism_mono_s(void)
{
	return (double)lism_mono_ns() / 1e9;
}

#endif
