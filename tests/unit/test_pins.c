// SPDX-License-Identifier: GPL-2.0-only
/*
 * The pin directory's lock: a short holder (the daemon's fast-path rescan,
 * a set) is waited for, a long one (a load, an unload's wait) still makes
 * the command fail.  flock on a temporary directory: no privileges.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pins.h"

static char dir[] = "/tmp/lism-pins-test-XXXXXX";

static void dir_up(void)
{
	cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
}

static void dir_down(void)
{
	rmdir(dir);
}

TestSuite(pins, .init = dir_up, .fini = dir_down);

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A child that holds the lock for @hold_ms (or until killed), once the parent returns. */
static pid_t holder(int hold_ms)
{
	int p[2];
	pid_t pid;
	char c;

	cr_assert_eq(pipe(p), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) { /* no cr_assert here: the child only exits */
		int fd = lism_pin_trylock(dir);

		c = fd >= 0 ? 'l' : 'e';
		if (write(p[1], &c, 1) != 1 || fd < 0)
			_exit(1);
		usleep((useconds_t)hold_ms * 1000);
		_exit(0);
	}
	close(p[1]);
	cr_assert_eq(read(p[0], &c, 1), 1);
	close(p[0]);
	cr_assert_eq(c, 'l', "the holder could not take the lock");
	return pid;
}

Test(pins, a_short_holder_is_waited_for)
{
	pid_t pid = holder(300);
	double t0 = now_s();
	int fd;

	cr_assert_eq(lism_pin_trylock(dir), -EWOULDBLOCK, "trylock took a held lock");
	fd = lism_pin_lock(dir);
	cr_assert_geq(fd, 0, "lism_pin_lock: %s", strerror(-fd));
	cr_assert_gt(now_s() - t0, 0.1, "the lock was taken while the holder had it");
	close(fd);
	waitpid(pid, NULL, 0);
}

Test(pins, a_long_holder_still_fails_the_lock)
{
	pid_t pid = holder(60 * 1000);
	double t0 = now_s(), waited;
	int fd;

	fd = lism_pin_lock(dir);
	waited = now_s() - t0;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	cr_assert_eq(fd, -EWOULDBLOCK, "got %d", fd);
	cr_assert_geq(waited, LISM_PIN_LOCK_WAIT_MS / 1000.0 * 0.9, "gave up after %.2f s", waited);
	/* free again once the holder is gone */
	fd = lism_pin_trylock(dir);
	cr_assert_geq(fd, 0, "%s", strerror(-fd));
	close(fd);
}
