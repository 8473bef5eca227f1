/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The lism device as lism exec's broker (lism/exec.h, docs/exec.md): it
 * holds the lease that lets the handshake decide ring pairs, and hands a
 * pair's ring DMB memory to a process that passes it a socket of that pair.
 *
 * Rule: the memory goes only to a caller that handed over a socket whose
 * entry, cookie and tokens are those of a ring pair decided under this
 * device's epoch; one memory per pair, the same for both ends.  The device
 * keeps it while either end's entry is there (a process that exec()s asks
 * again), and a pair's memory lives as long as its processes map it.
 */
#ifndef LISM_BROKER_H
#define LISM_BROKER_H

#include <linux/types.h>

#include "lism/exec.h"

struct lism_broker;

/*
 * Serve @socket_path (an absolute path; made 0666, its directory made if
 * missing, a socket file of a dead device replaced) for the instance at
 * @pin_path, on a thread of its own, and hold the lease.  0 or -errno;
 * prints nothing.
 */
int lism_broker_start(const char *pin_path, const char *socket_path, struct lism_broker **out);

/* Give up the lease, stop serving, remove the socket; NULL is fine. */
void lism_broker_stop(struct lism_broker *b);

/* Its counters; the ring figures as of its last tick (LISM_BROKER_TICK_MS). */
void lism_broker_stats(struct lism_broker *b, struct lism_device_totals *out);

/*
 * Ask the device at @socket_path for its report (LISM_DEVICE_REPORT): a
 * malloc'd copy in *@out, checked for size.  -ENOENT/-ECONNREFUSED: no
 * device; -EACCES: not root with CAP_BPF or CAP_SYS_ADMIN.
 */
int lism_device_report(const char *socket_path, struct lism_device_report **out);

/* Whether a device answers at @socket_path (a connect succeeds). */
int lism_device_answers(const char *socket_path);

#endif
