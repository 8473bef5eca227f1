/* SPDX-License-Identifier: GPL-2.0-only */
/* What the bench workload programs share: a clock, fatal errors, waiting on a socket
 * (inline: a program that uses only some of them builds with -Werror). */
#ifndef LISM_BENCH_UTIL_H
#define LISM_BENCH_UTIL_H

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Report what failed, with errno, under the program's name, and exit 1. */
static inline void die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what, strerror(errno));
	exit(1);
}

/* Wait until @fd is ready for @ev; 10 s without is fatal. */
static inline void wait_for(int fd, short ev)
{
	struct pollfd p = { .fd = fd, .events = ev };

	if (poll(&p, 1, 10000) != 1)
		die("poll timed out");
}

#endif
