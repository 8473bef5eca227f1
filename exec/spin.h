/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * How long a waiter spins on its rings before it sleeps in the kernel
 * (issue 28: busy polling for ring pairs, as SO_BUSY_POLL is for NICs).
 *
 * Rules:
 * - The most a wait spins is the socket's SO_BUSY_POLL if it set one, else
 *   $LISM_BUSY_POLL_US (`lism exec --busy-poll`), else LISM_SPIN_DEFAULT_US;
 *   0 never spins.
 * - Each thread adapts: a spin that found something keeps the whole bound;
 *   one that found nothing halves it, and below LISM_SPIN_FLOOR_NS the
 *   thread stops spinning for a number of waits that doubles with each
 *   such miss (up to LISM_SPIN_SKIP_MAX), then tries the whole bound again.
 *   An idle connection's waits soon stop spinning: it costs no CPU.
 * - The spin yields the CPU between two looks (LISM_SPIN_YIELD_NS 0), so
 *   that on one CPU shared with its peer the peer runs at once: a yield
 *   every 2 us made sockperf's one-CPU ping-pong 3.3 us against TCP's 2.5,
 *   every look 0.95 us; across CPUs it costs 0.39 -> 0.53 us (docs/exec.md).
 *   A poll wrapper looks at the kernel for its other fds every
 *   LISM_SPIN_KERNEL_NS.
 * - A ring another process holds too (after fork, or inherited across
 *   exec) is never spun on: a process killed while it spins would leave
 *   the other one asleep without its doorbell (exec/bell.h).
 */
#ifndef LISM_EXEC_SPIN_H
#define LISM_EXEC_SPIN_H

#include <stdbool.h>

#include "lism/types.h"

#define LISM_SPIN_DEFAULT_US 200
#define LISM_SPIN_MAX_US     100000 /* a bound past this is a typo: capped */
#define LISM_SPIN_FLOOR_NS   2000
#define LISM_SPIN_SKIP_MAX   1024
#define LISM_SPIN_YIELD_NS   0
#define LISM_SPIN_KERNEL_NS  2000
#define LISM_SPIN_CLOCK_LOOKS 2

/* The process's bound in microseconds ($LISM_BUSY_POLL_US, read once). */
__u32 lism_spin_default_us(void);

/* A socket's SO_BUSY_POLL as a bound, or the process's. */
__u32 lism_spin_bound_us(int fd);

/* This thread's spin for a wait whose bound is @max_us: nanoseconds, 0 for none. */
__u64 lism_spin_budget_ns(__u32 max_us);

/* The spin ended: it @found something, or not. */
void lism_spin_result(bool found, __u32 max_us);

/* The same for a blocking writer's spin for room (exec/conn.c), adapted apart. */
__u64 lism_spin_room_budget_ns(__u32 max_us);
void lism_spin_room_result(bool found, __u32 max_us);

/* The clock the spin reads. */
__u64 lism_spin_now_ns(void);

/* LISM_SPIN_YIELD_NS, or $LISM_BUSY_POLL_YIELD_NS (the bench's ablation). */
__u64 lism_spin_yield_ns(void);

/*
 * One spin: its budget, and its clock, read after every
 * LISM_SPIN_CLOCK_LOOKS looks (a spin that finds its bytes at its first or
 * second look reads none: two clock reads were 5 % of a one-CPU
 * ping-pong's one-way).  Its budget starts at its first read, so a spin
 * looks LISM_SPIN_CLOCK_LOOKS times before it and as many past it at
 * most, each with its yield; with LISM_SPIN_YIELD_NS above 0 the yields
 * follow the clock as last read.
 */
struct lism_spin {
	__u64 budget_ns;
	__u64 t0;      /* the first read; 0: none yet */
	__u64 t;       /* the time spent at the last read */
	__u64 yielded; /* the time at the last yield */
	__u32 looks;
};

static inline void lism_spin_start(struct lism_spin *s, __u64 budget_ns)
{
	*s = (struct lism_spin){ .budget_ns = budget_ns };
}

/* A look found nothing: relax and true, or false once the budget is spent. */
bool lism_spin_next(struct lism_spin *s);

#endif
