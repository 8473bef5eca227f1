// SPDX-License-Identifier: GPL-2.0-only
/*
 * Waits on ring sockets (issue 28): wait-stress (tests/programs/wait_stress.c)
 * under `lism exec`, for each way of waiting -- a blocking recv, poll,
 * select, epoll level- and edge-triggered, all of them in turn -- on two
 * CPUs and on one, with LISM_BUSY_POLL_US unset, 0 and 50.  Every message
 * arrives checked, no wait outlasts the watchdog, the run ends in time, and
 * the pair was a ring whose TCP connection carried only its doorbells.  The
 * same program on plain TCP is the control; small rings add full-ring
 * sleeps and runs.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "broker.h"
#include "harness.h"
#include "slow.h"
#include "wait_plan.h"

static struct env e;
static struct lism_broker *dev;
static char bin[PATH_MAX], prog[PATH_MAX];
static pid_t running = -1; /* a run a failed assertion left: killed by down() (its client dies with it) */

/*
 * Rounds per run (LISM_WAIT_ROUNDS for a longer soak): each round is one
 * or more messages each way: a run waits ~50000-70000 times.
 */
#define ROUNDS 20000
#define RUN_LIMIT_MS 30000 /* a run that took this long stalled, even if no single wait hit the watchdog */

static void down(void)
{
	if (running > 0) {
		kill(running, SIGKILL);
		waitpid(running, NULL, 0);
		running = -1;
	}
	lism_broker_stop(dev);
	dev = NULL;
	env_down(&e);
}

static void gate(void)
{
	require_root();
	needs(LISM_F_EXEC);
}

TestSuite(wait, .init = gate, .fini = down, .timeout = 240);

static void up(const char *load_args)
{
	const char *b = getenv("LISM_BIN");
	char dir[PATH_MAX];

	cr_assert(b && realpath(b, bin), "LISM_BIN names the lism under test");
	snprintf(dir, sizeof(dir), "%s", bin);
	snprintf(prog, sizeof(prog), "%s/tests/wait-stress", dirname(dir));
	cr_assert_eq(access(prog, X_OK), 0, "%s: build it (make integration)", prog);
	env_up(&e, load_args);
	cr_assert_eq(lism_broker_start(e.pin, e.device, &dev), 0, "the device did not start");
	env_enter(&e);
}

/* The first two CPUs this process may run on: the runs across CPUs need both. */
static void two_cpus(int cpu[2])
{
	cpu_set_t set;
	int n = 0;

	cr_assert_eq(sched_getaffinity(0, sizeof(set), &set), 0);
	for (int i = 0; i < CPU_SETSIZE && n < 2; i++)
		if (CPU_ISSET(i, &set))
			cpu[n++] = i;
	if (n < 2)
		needs_missing("a second CPU (the runs across CPUs)");
}

static int rounds(void)
{
	const char *r = getenv("LISM_WAIT_ROUNDS");

	return r && atoi(r) > 0 ? atoi(r) : ROUNDS;
}

static long long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000ll + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/*
 * Read @fd (the run's stdout and stderr) to its end within @ms, keeping
 * the last of it in @buf: the run's exit status, or -1 if it was not over
 * in time (then it is killed).
 */
static int run_to_end(pid_t pid, int fd, char *buf, size_t len, int ms)
{
	struct timespec t0;
	size_t n = 0;
	int st;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	buf[0] = '\0';
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		long long left = ms - ms_since(&t0);
		ssize_t r;

		if (left <= 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			close(fd);
			return -1;
		}
		if (poll(&p, 1, (int)left) <= 0)
			continue;
		if (n + 1 == len) { /* full: the older half goes */
			memmove(buf, buf + len / 2, n - len / 2);
			n -= len / 2;
		}
		r = read(fd, buf + n, len - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
		buf[n] = '\0';
	}
	close(fd);
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static unsigned long long field(const char *line, const char *name)
{
	return line_field(line, name);
}

static struct lism_device_totals device_totals(void)
{
	return device_totals_at(e.device);
}

enum { RING = 1, SMALL_RINGS = 2 };

/*
 * wait-stress @method with its server on @cpu_s and its client on @cpu_c,
 * LISM_BUSY_POLL_US=@busy (NULL: unset), under lism exec if @how says
 * RING, else on plain TCP.  It must say OK with the plan's messages and
 * bytes, in time; a ring run must count one ring pair and two attaches
 * more, and its TCP bytes must be its doorbells (with SMALL_RINGS: its
 * doorbells and runs, and there must be runs).
 */
static unsigned long long stress(const char *method, int cpu_s, int cpu_c, const char *busy, uint64_t seed, int how)
{
	char cmd[PATH_MAX * 3], out[8192], *line, what[128];
	uint64_t msgs, bytes;
	struct lism_device_totals d0, d1;
	struct lism_snapshot s0, s1;
	struct timespec t0;
	long long ms;
	int fd, st, n = rounds();

	wait_plan_totals(n, seed, &msgs, &bytes);
	snprintf(what, sizeof(what), "%s, CPUs %d and %d, LISM_BUSY_POLL_US %s, %s, seed %llu", method, cpu_s, cpu_c,
		 busy ? busy : "unset", how & RING ? "ring" : "TCP", (unsigned long long)seed);
	snprintf(cmd, sizeof(cmd), "exec env %s%s %s%s%s %s %d %d %d %llu 2>&1",
		 busy ? "LISM_BUSY_POLL_US=" : "-u LISM_BUSY_POLL_US", busy ? busy : "", how & RING ? bin : "",
		 how & RING ? " exec -- " : "", prog, method, cpu_s, cpu_c, n, (unsigned long long)seed);
	snap(&e, &s0);
	d0 = device_totals();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	running = spawn_sh(cmd, &fd);
	st = run_to_end(running, fd, out, sizeof(out), scaled_ms(RUN_LIMIT_MS));
	running = -1;
	ms = ms_since(&t0);
	cr_assert_neq(st, -1, "%s: not over in %d s: %s", what, scaled_ms(RUN_LIMIT_MS) / 1000, out);
	while (strlen(out) && out[strlen(out) - 1] == '\n')
		out[strlen(out) - 1] = '\0';
	line = strrchr(out, '\n') ? strrchr(out, '\n') + 1 : out;
	cr_assert(st == 0 && !strncmp(line, "OK ", 3), "%s: exit %d: %s", what, st, out);
	cr_assert_eq(field(line, "msgs "), msgs, "%s: %s, the plan has %llu messages", what, line,
		     (unsigned long long)msgs);
	cr_assert_eq(field(line, "bytes "), bytes, "%s: %s, the plan has %llu bytes", what, line,
		     (unsigned long long)bytes);
	/* TCP never wakes a level-triggered reader to nothing; a ring must not either
	 * (a late doorbell alone, exec/poll.c): wrk counts that EAGAIN as an error */
	cr_assert_eq(field(line, "spurious "), 0, "%s: woken to nothing: %s", what, line);
	snap(&e, &s1);
	d1 = device_totals();
	if (how & RING) {
		unsigned long long bells = d1.doorbells - d0.doorbells, runs = d1.runs - d0.runs;
		unsigned long long ring = d1.bytes - d0.bytes, tcp = field(line, "tcp ");

		cr_assert_eq(s1.stats[LISM_S_RING_PAIRS] - s0.stats[LISM_S_RING_PAIRS], 1, "%s: no ring pair", what);
		cr_assert_eq(d1.attaches - d0.attaches, 2, "%s: both ends take the ring from the device", what);
		/* what TCP carried: a byte per doorbell and the runs' bytes, none of which the ring did;
		 * TCP_INFO's bytes_received counts each end's FIN too */
		cr_assert_eq(ring + tcp, bytes + bells + 2,
			     "%s: ring %llu + tcp %llu != %llu + doorbells %llu + 2 FINs (runs %llu)", what, ring, tcp,
			     (unsigned long long)bytes, bells, runs);
		if (how & SMALL_RINGS)
			cr_assert_gt(runs, 0, "%s: a non-blocking writer that fills a small ring goes on in runs", what);
		else
			cr_assert_eq(runs, 0, "%s: a ring that never fills needs no run", what);
	} else {
		cr_assert_eq(s1.stats[LISM_S_RING_PAIRS], s0.stats[LISM_S_RING_PAIRS], "%s: a ring pair", what);
		cr_assert_eq(d1.attaches, d0.attaches, "%s", what);
		cr_assert_geq(field(line, "tcp "), bytes, "%s: all of it on TCP: %s", what, line);
	}
	cr_assert_lt(ms, scaled_ms(RUN_LIMIT_MS), "%s: %lld ms", what, ms);
	cr_log_info("%s: %s (%lld ms)", what, line, ms);
	return (how & RING) ? d1.doorbells - d0.doorbells : 0;
}

/* @method on two CPUs and on one, LISM_BUSY_POLL_US unset, 0 and 50. */
static void every_way(const char *method, int how, uint64_t seed)
{
	static const char *const busy[] = { NULL, "0", "50" };
	int cpu[2];

	unsigned long long bells = 0;

	two_cpus(cpu);
	for (int same = 0; same < 2; same++)
		for (int b = 0; b < 3; b++)
			bells += stress(method, cpu[0], cpu[same ? 0 : 1], busy[b], seed + (uint64_t)(same * 3 + b),
					how | RING);
	/* one run may ring none (its reader always spun or looked: bell.h); six do */
	cr_assert_gt(bells, 0, "%s: no doorbells in six runs", method);
}

Test(wait, a_blocking_recv_is_woken_for_every_message)
{
	up(NULL);
	every_way("recv", 0, 100);
}

Test(wait, poll_is_woken_for_every_message)
{
	up(NULL);
	every_way("poll", 0, 200);
}

Test(wait, select_is_woken_for_every_message)
{
	up(NULL);
	every_way("select", 0, 300);
}

Test(wait, level_triggered_epoll_is_woken_for_every_message)
{
	up(NULL);
	every_way("nb-epoll-lt", 0, 400);
}

Test(wait, edge_triggered_epoll_is_woken_for_every_message)
{
	up(NULL);
	every_way("nb-epoll-et", 0, 500);
}

Test(wait, every_method_in_turn_is_woken_for_every_message)
{
	up(NULL);
	every_way("mixed", 0, 600);
}

/*
 * A socket read through the library's waits (its reader looks: bell.h), then
 * handed to EPOLLONESHOT waits, the kernel's alone: the peer's burst that
 * came meanwhile has no doorbell, and the stand-in must say it (exec/poll.c).
 */
Test(wait, a_socket_handed_to_epolloneshot_is_woken_for_bytes_already_there)
{
	up(NULL);
	every_way("oneshot-late", 0, 900);
}

/*
 * A socket read through the library's waits, then put in an epoll set that
 * another thread already sleeps on: the peer's burst that came meanwhile
 * has no doorbell, and that thread must be woken for it (exec/poll.c, handed).
 */
Test(wait, a_socket_put_in_a_set_being_waited_on_wakes_its_waiter)
{
	up(NULL);
	every_way("handoff-late", 0, 1000);
}

/* 16 KiB rings (the smallest): a blocking writer sleeps for room, a non-blocking one goes on in runs. */
Test(wait, small_rings_with_full_ring_sleeps_and_runs)
{
	up("--dmb-size 16K");
	every_way("mixed", SMALL_RINGS, 700);
}

/* The program itself on plain TCP (no lism exec, no lism): what the ring runs must match. */
Test(wait, the_control_on_plain_tcp)
{
	int cpu[2];

	up(NULL);
	two_cpus(cpu);
	env_plain(&e);
	stress("mixed", cpu[0], cpu[1], NULL, 800, 0);
	env_enter(&e);
}
