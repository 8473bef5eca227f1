/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Message-size histogram of shortcut sends: bucket i counts sends of at most
 * 64 << i bytes (and more than the bucket before); the last bucket is open.
 * Shared by the data path (counting) and the views (bounds).
 */
#ifndef LISM_HIST_H
#define LISM_HIST_H

#include "types.h"

#define LISM_HIST_BUCKETS 16
#define LISM_HIST_FIRST 64u /* upper bound of bucket 0 */

/* Inlined in BPF: called on every shortcut send. */
#define LISM_HIST_INLINE static inline __attribute__((always_inline))

LISM_HIST_INLINE __u64 lism_hist_bound(__u32 bucket)
{
	return (__u64)LISM_HIST_FIRST << bucket;
}

LISM_HIST_INLINE __u32 lism_hist_bucket(__u64 size)
{
	__u64 bound = LISM_HIST_FIRST;

#ifdef __clang__
#pragma unroll
#endif
	for (__u32 b = 0; b < LISM_HIST_BUCKETS - 1; b++) {
		if (size <= bound)
			return b;
		bound <<= 1;
	}
	return LISM_HIST_BUCKETS - 1;
}

#endif
