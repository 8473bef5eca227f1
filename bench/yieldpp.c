// SPDX-License-Identifier: GPL-2.0-only
/*
 * yieldpp: the floor of a ping-pong between two processes on one CPU.  A
 * parent and its child, both pinned to CPU 0, pass a turn through a word
 * of shared memory; each waits for its turn with sched_yield(2), as a ring
 * reader's spin does (exec/spin.h): each one-way is one yield and one
 * switch to the other process, and nothing else.  A one-CPU ping-pong
 * through any channel between two processes pays at least that, so
 * TCP's one-CPU sockperf ping-pong over this figure is the most any ring
 * can gain there (issue 28).  Prints "one_way_us X" (the median of
 * ROUNDS runs of SECONDS / ROUNDS each).
 *
 *   yieldpp [-t SECONDS] [-c CPU]
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"

enum { ROUNDS = 5 };

struct shared {
	uint64_t turn; /* even: the parent's, odd: the child's */
	uint64_t stop; /* the parent ended the run at this turn */
};

static void wait_turn(struct shared *s, uint64_t want)
{
	while (__atomic_load_n(&s->turn, __ATOMIC_ACQUIRE) != want && !__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE))
		sched_yield();
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	double secs = 3, one_way[ROUNDS];
	int cpu = 0, opt;
	cpu_set_t set;

	while ((opt = getopt(argc, argv, "t:c:")) != -1) {
		if (opt == 't')
			secs = atof(optarg);
		else if (opt == 'c')
			cpu = atoi(optarg);
		else {
			fprintf(stderr, "usage: yieldpp [-t SECONDS] [-c CPU]\n");
			return 2;
		}
	}
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity");
	for (int r = 0; r < ROUNDS; r++) {
		struct shared *s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		uint64_t t = 0;
		double t0, t1;
		pid_t child;
		int status;

		if (s == MAP_FAILED)
			die("mmap");
		child = fork();
		if (child < 0)
			die("fork");
		if (!child) {
			/* the child answers each of the parent's turns until it stops */
			for (uint64_t want = 1;; want += 2) {
				wait_turn(s, want);
				if (__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE))
					_exit(0);
				__atomic_store_n(&s->turn, want + 1, __ATOMIC_RELEASE);
			}
		}
		t0 = now_s();
		do {
			for (int i = 0; i < 1000; i++, t += 2) {
				__atomic_store_n(&s->turn, t + 1, __ATOMIC_RELEASE);
				wait_turn(s, t + 2);
			}
			t1 = now_s();
		} while (t1 - t0 < secs / ROUNDS);
		__atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
		if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status))
			die("the child did not end cleanly");
		munmap(s, sizeof(*s));
		one_way[r] = (t1 - t0) / (double)t * 1e6; /* t turns: t one-ways */
	}
	qsort(one_way, ROUNDS, sizeof(one_way[0]), cmp);
	printf("one_way_us %.3f\n", one_way[ROUNDS / 2]);
	return 0;
}
