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

struct lism_broker;

struct lism_broker_stats {
	__u64 attaches;     /* memories handed out */
	__u64 refusals;     /* requests refused: not a socket of a ring pair of this device, a malformed
			       request, no memory */
	__u64 rings;        /* ring memories made (one per pair) */
	__u32 held;         /* pairs whose memory the device holds: until both their entries are gone */
};

/*
 * Serve @socket_path (an absolute path; made 0666, its directory made if
 * missing, a socket file of a dead device replaced) for the instance at
 * @pin_path, on a thread of its own, and hold the lease.  0 or -errno;
 * prints nothing.
 */
int lism_broker_start(const char *pin_path, const char *socket_path, struct lism_broker **out);

/* Give up the lease, stop serving, remove the socket; NULL is fine. */
void lism_broker_stop(struct lism_broker *b);

void lism_broker_stats(struct lism_broker *b, struct lism_broker_stats *out);

/* Whether a device answers at @socket_path (a connect succeeds). */
int lism_device_answers(const char *socket_path);

#endif
