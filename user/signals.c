// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <time.h>

#include "signals.h"

int lism_stop_signals_fd(void)
{
	sigset_t mask;
	int fd;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &mask, NULL))
		return -errno;
	fd = signalfd(-1, &mask, SFD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static const int stop_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };

void lism_stop_signals_hold(sigset_t *old)
{
	sigset_t stop;

	sigemptyset(&stop);
	for (size_t i = 0; i < sizeof(stop_signals) / sizeof(stop_signals[0]); i++)
		sigaddset(&stop, stop_signals[i]);
	sigprocmask(SIG_BLOCK, &stop, old);
}

int lism_stop_signals_release(const sigset_t *old)
{
	struct timespec now = { 0, 0 };
	sigset_t pending, take;
	int first = 0;

	sigemptyset(&take);
	if (!sigpending(&pending))
		for (size_t i = 0; i < sizeof(stop_signals) / sizeof(stop_signals[0]); i++)
			if (sigismember(&pending, stop_signals[i]) && !sigismember(old, stop_signals[i]))
				sigaddset(&take, stop_signals[i]);
	for (int sig; (sig = sigtimedwait(&take, NULL, &now)) > 0;)
		if (!first)
			first = sig;
	sigprocmask(SIG_SETMASK, old, NULL);
	return first;
}
