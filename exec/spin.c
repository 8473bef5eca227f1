// SPDX-License-Identifier: GPL-2.0-only
/*
 * The spin bound of ring waits and its per-thread adaptation (rules in spin.h).
 */
#include <sched.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "spin.h"

#ifndef SO_BUSY_POLL
#define SO_BUSY_POLL 46
#endif

struct spin_state {
	__u64 budget_ns; /* 0: the whole bound next */
	__u32 skip;      /* waits left that do not spin */
	__u32 misses;    /* misses in a row below the floor */
};

/* A thread's waits for input, and its writes' waits for room, adapt apart:
 * a writer that finds room at once says nothing of its idle reads. */
static __thread struct spin_state spin __attribute__((tls_model("initial-exec"))),
	room __attribute__((tls_model("initial-exec"))); /* no __tls_get_addr: liblism is preloaded */

__u32 lism_spin_default_us(void)
{
	static int us = -1;
	int v = __atomic_load_n(&us, __ATOMIC_RELAXED);

	if (v < 0) {
		const char *s = getenv("LISM_BUSY_POLL_US");
		char *end;
		long n = s && *s ? strtol(s, &end, 10) : -1;

		v = n < 0 || *end ? LISM_SPIN_DEFAULT_US : n > LISM_SPIN_MAX_US ? LISM_SPIN_MAX_US : (int)n;
		__atomic_store_n(&us, v, __ATOMIC_RELAXED);
	}
	return (__u32)v;
}

__u32 lism_spin_bound_us(int fd)
{
	int v = 0;
	socklen_t len = sizeof(v);

	/* syscall(2): the application's getsockopt may be anybody's */
	if (!syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_BUSY_POLL, &v, &len) && v > 0)
		return v > LISM_SPIN_MAX_US ? LISM_SPIN_MAX_US : (__u32)v;
	return lism_spin_default_us();
}

static __u64 budget(struct spin_state *st, __u32 max_us)
{
	__u64 max = (__u64)max_us * 1000;

	if (!max)
		return 0;
	if (st->skip) {
		st->skip--;
		return 0;
	}
	if (!st->budget_ns || st->budget_ns > max)
		st->budget_ns = max;
	return st->budget_ns;
}

static void result(struct spin_state *st, bool found, __u32 max_us)
{
	if (found) {
		st->budget_ns = (__u64)max_us * 1000;
		st->misses = st->skip = 0;
		return;
	}
	st->budget_ns /= 2;
	if (st->budget_ns >= LISM_SPIN_FLOOR_NS)
		return;
	st->budget_ns = 0; /* the whole bound, once the skips are over */
	st->skip = st->misses < 10 ? 1u << st->misses : LISM_SPIN_SKIP_MAX;
	if (st->skip > LISM_SPIN_SKIP_MAX)
		st->skip = LISM_SPIN_SKIP_MAX;
	st->misses++;
}

__u64 lism_spin_budget_ns(__u32 max_us)
{
	return budget(&spin, max_us);
}

void lism_spin_result(bool found, __u32 max_us)
{
	result(&spin, found, max_us);
}

__u64 lism_spin_room_budget_ns(__u32 max_us)
{
	return budget(&room, max_us);
}

void lism_spin_room_result(bool found, __u32 max_us)
{
	result(&room, found, max_us);
}

__u64 lism_spin_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (__u64)t.tv_sec * 1000000000ull + (__u64)t.tv_nsec;
}

__u64 lism_spin_yield_ns(void)
{
	static long long ns = -1;
	long long v = __atomic_load_n(&ns, __ATOMIC_RELAXED);

	if (v < 0) {
		const char *s = getenv("LISM_BUSY_POLL_YIELD_NS");

		v = s && *s ? atoll(s) : LISM_SPIN_YIELD_NS;
		__atomic_store_n(&ns, v, __ATOMIC_RELAXED);
	}
	return (__u64)v;
}

/* Between two looks at the rings: a pause, and the CPU yielded every
 * LISM_SPIN_YIELD_NS (@since_ns: the spin's time so far; @last: the state
 * it keeps). */
static void relax(__u64 since_ns, __u64 *last)
{
	if (since_ns - *last >= lism_spin_yield_ns()) {
		*last = since_ns;
		sched_yield();
		return;
	}
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

bool lism_spin_next(struct lism_spin *s)
{
	if (!(++s->looks % LISM_SPIN_CLOCK_LOOKS)) {
		__u64 now = lism_spin_now_ns();

		if (!s->t0)
			s->t0 = now;
		s->t = now - s->t0;
		if (s->t >= s->budget_ns)
			return false;
	}
	relax(s->t, &s->yielded);
	return true;
}
