/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A preloaded process's side of lism exec's contract (lism/exec.h): mark a
 * socket, read its pair's transport, and take its ring DMB from the device.
 * Library calls: they return 0 or -errno and print nothing.
 *
 * Rule: an end moves bytes through the ring only with the memory the
 * device handed it for that socket, and only when the pair was decided
 * RING; every other answer means the kernel path for the connection's
 * whole life.
 */
#ifndef LISM_EXEC_ATTACH_H
#define LISM_EXEC_ATTACH_H

#include "exec/ring.h"
#include "lism/exec.h"

/* The device's socket: $LISM_DEVICE, else LISM_DEVICE_SOCKET. */
const char *lism_exec_device_path(void);

/* setsockopt(LISM_SO_EXEC) on a fresh TCP socket; -ENOPROTOOPT: no lism exec here. */
int lism_exec_mark(int fd);

/* getsockopt(LISM_SO_INFO); -EOPNOTSUPP (IPv4) or -ENOPROTOOPT (IPv6): no lism exec here. */
int lism_exec_info(int fd, struct lism_exec_info *out);

/*
 * The pair's transport once decided (the passive end decides when the
 * handshake's last ACK reaches it, usually before connect() returns).
 * After @timeout_ms an active end settles it (LISM_SO_KERNEL): the answer
 * is then final either way, RING if the passive end's decision came first.
 */
int lism_exec_wait(int fd, struct lism_exec_info *out, int timeout_ms);

/*
 * One request to the device at @device_path: op @op, with @fd in
 * SCM_RIGHTS unless it is -1; the answer in *@ans and the fd it carried
 * in *@memfd (the caller's to close).  -errno of the exchange, or the
 * device's refusal; -EPROTO for an answer without an fd.
 */
int lism_exec_ask(const char *device_path, __u32 op, int fd, struct lism_device_ans *ans, int *memfd);

struct lism_exec_map {
	void *base;
	__u64 len;
	int end;                  /* 0: the active end */
	struct lism_ring_rx rx;
	struct lism_ring_tx tx;
};

/*
 * Pass @fd to the device at @device_path and map the ring DMB pair it
 * answers with.  -ECONNREFUSED/-ENOENT: no device there; the device's own
 * refusals (-EPERM, -ENOENT, -ESTALE: decided under another device, ...);
 * -EPROTO: the memory is not this pair's, or not sealed.  For a pair
 * decided RING any failure means a reset of the connection.
 */
int lism_exec_attach(int fd, const char *device_path, struct lism_exec_map *m);
void lism_exec_detach(struct lism_exec_map *m);

#endif
