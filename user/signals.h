/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef LISM_SIGNALS_H
#define LISM_SIGNALS_H

#include <signal.h>

/*
 * Block SIGINT and SIGTERM and return a signalfd that becomes readable when
 * one arrives: the long-running commands wait on it with their other fds,
 * so no signal is lost between a check and the wait.  -errno on failure.
 */
int lism_stop_signals_fd(void);

/*
 * Around a change that must be whole (a load, an upgrade): hold off the
 * stop signals, then take the ones that came meanwhile (the first is
 * returned, 0 if none) and restore @old.  One the caller blocked itself
 * (lism run's signalfd) stays pending for it.
 */
void lism_stop_signals_hold(sigset_t *old);
int lism_stop_signals_release(const sigset_t *old);

#endif
