/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * wait-stress's plan (tests/programs/wait_stress.c): each round's bursts
 * and message sizes, drawn from a seed by both of its processes alike, and
 * by its test, which so knows the messages and bytes a run must end with.
 */
#ifndef LISM_WAIT_PLAN_H
#define LISM_WAIT_PLAN_H

#include <stdint.h>

#define WAIT_BURST_MAX 8
#define WAIT_MSG_MAX (64u << 10)

/* xorshift64: *s never 0 */
static inline uint64_t wait_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static inline uint64_t wait_seed(uint64_t seed, uint64_t salt)
{
	return (seed ^ salt) * 0x9e3779b97f4a7c15ull | 1;
}

/* Mostly small messages (request/response), some of pages, a few up to 64 KiB (several ring wraps per burst). */
static inline uint32_t wait_plan_size(uint64_t *s)
{
	uint64_t x = wait_rand(s);
	unsigned int k = (unsigned int)(x & 15);

	x >>= 8;
	if (k < 8)
		return 1 + (uint32_t)(x % 64);
	if (k < 15)
		return 1 + (uint32_t)(x % 4096);
	return 1 + (uint32_t)(x % WAIT_MSG_MAX);
}

/* One message, or one time in eight a burst of 2..8 sent before the answer is awaited. */
static inline int wait_plan_burst(uint64_t *s)
{
	uint64_t x = wait_rand(s);

	return x & 7 ? 1 : 2 + (int)((x >> 8) % (WAIT_BURST_MAX - 1));
}

struct wait_round {
	int n[2];                          /* [0]: client to server, [1]: the answer */
	uint32_t size[2][WAIT_BURST_MAX];
};

static inline void wait_plan_round(uint64_t *s, struct wait_round *r)
{
	for (int d = 0; d < 2; d++) {
		r->n[d] = wait_plan_burst(s);
		for (int i = 0; i < r->n[d]; i++)
			r->size[d][i] = wait_plan_size(s);
	}
}

#define WAIT_PLAN_SALT 0x706c616eull /* "plan" */

/* The messages and bytes of @rounds rounds of @seed, both directions. */
static inline void wait_plan_totals(int rounds, uint64_t seed, uint64_t *msgs, uint64_t *bytes)
{
	uint64_t s = wait_seed(seed, WAIT_PLAN_SALT);
	struct wait_round r;

	*msgs = *bytes = 0;
	for (int i = 0; i < rounds; i++) {
		wait_plan_round(&s, &r);
		for (int d = 0; d < 2; d++)
			for (int k = 0; k < r.n[d]; k++) {
				*msgs += 1;
				*bytes += r.size[d][k];
			}
	}
}

#endif
