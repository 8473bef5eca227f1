/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef LISM_SIGNALS_H
#define LISM_SIGNALS_H

/*
 * Block SIGINT and SIGTERM and return a signalfd that becomes readable when
 * one arrives: the long-running commands wait on it with their other fds,
 * so no signal is lost between a check and the wait.  -errno on failure.
 */
int lism_stop_signals_fd(void);

#endif
