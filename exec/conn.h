/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A ring connection end in a preloaded process: the socket calls of an
 * application (recv, send, shutdown, FIONREAD) on a pair decided RING,
 * over its ring DMBs (exec/ring.h) and its TCP connection, which stays as
 * the doorbell channel (include/lism/ring.h, "Readiness").
 *
 * Rules:
 * - Readiness stays the kernel's: a writer rings one doorbell byte per
 *   move of the ring's unread count from 0, and a reader eats one per move
 *   back to 0; one that finds the ring empty eats every doorbell it sees
 *   (each was sent after bytes it has read).  A blocking recv sleeps on the
 *   TCP socket (a MSG_PEEK recv: SO_RCVTIMEO, signals and SA_RESTART are the
 *   kernel's own); a blocking send whose ring is full sleeps on a futex
 *   in the header and looks at the TCP connection every
 *   LISM_CONN_LIVENESS_MS for a peer that went.
 * - The connection's own TCP events are the truth about its peer: a FIN
 *   without a done-writing state, or a reset, is a peer that closed or
 *   died; the reader still gets every byte the ring holds first.
 * - A non-blocking send that finds the ring full sends through TCP in a
 *   run (include/lism/ring.h), until its reader has read the ring up to
 *   it: TCP's back-pressure and write readiness hold (an application
 *   waiting for EPOLLOUT on a full ring would spin).  sendfile, a splice
 *   into the socket and MSG_OOB go in a run too: the kernel moves those.
 * - The state lives in a page mapped shared, with robust process-shared
 *   locks (one per direction): after fork both processes serialize on it,
 *   as the kernel serializes a TCP socket's callers.
 */
#ifndef LISM_EXEC_CONN_H
#define LISM_EXEC_CONN_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/single_threaded.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "exec/attach.h"

#define LISM_CONN_LIVENESS_MS 100
#define LISM_CONN_BELL 'L' /* a doorbell's byte */

/* lism_conn.flags */
#define LISM_CONN_RD_SHUT (1u << 0) /* shutdown(SHUT_RD): reads say the end of the stream */
#define LISM_CONN_ABORTED (1u << 1) /* reset here: every call says ECONNRESET */
#define LISM_CONN_RESET   (1u << 2) /* the kernel said the connection was reset: sends say EPIPE */

struct lism_conn {
	pthread_mutex_t rx_lock;
	pthread_mutex_t tx_lock;
	struct lism_exec_map map;
	__u32 flags;
	int tx_err;              /* an error a doorbell met, said by the next send */
	int rx_err;              /* an error TCP said once (a reset), said once when the ring is read */
	int nonblock;            /* O_NONBLOCK as the wrappers last set it; -1: not read yet */
	int shared;              /* another process holds the ring too: no spinning (exec/spin.h) */
	int tx_busy;             /* a send runs with no tx lock (one thread): a nested one says EAGAIN */
	int rx_busy;             /* a recv runs with no rx lock (one thread): a nested one says EAGAIN */
	__u32 busy_us;           /* the spin bound of waits for this socket (exec/spin.h) */
};

/* Take over an attached ring (@m is moved into the connection). */
int lism_conn_open(struct lism_exec_map *m, struct lism_conn **out);

/* The process's last reference is gone: unmap (another process may still hold it). */
void lism_conn_release(struct lism_conn *c, int fd);

/* recvmsg(2)/sendmsg(2) on the ring socket @fd: bytes, or -errno.
 * @flags: MSG_PEEK, MSG_DONTWAIT, MSG_WAITALL, MSG_NOSIGNAL, MSG_MORE. */
ssize_t lism_conn_recv(struct lism_conn *c, int fd, const struct iovec *iov, int iovcnt, int flags);
ssize_t lism_conn_send(struct lism_conn *c, int fd, const struct iovec *iov, int iovcnt, int flags);

/*
 * Up to @n bytes (at most what recv would return, in @buf as scratch)
 * handed to @sink, which takes all, part (its count) or none (-errno, said
 * as the call's): only the bytes it took leave the stream.  A splice out
 * of the socket into a pipe, whose room is in slots, not bytes.
 */
ssize_t lism_conn_recv_into(struct lism_conn *c, int fd, void *buf, size_t n, int flags,
			    ssize_t (*sink)(void *arg, const void *buf, size_t n), void *arg);

/* shutdown(2); the real call included. */
int lism_conn_shutdown(struct lism_conn *c, int fd, int how);

/* FIONREAD: the bytes readable now, or -errno. */
int lism_conn_unread(struct lism_conn *c, int fd);

/* sendfile(2) or splice(2) into the socket: @kernel(@arg, @n) makes the
 * kernel's call, in a run. */
ssize_t lism_conn_sendfile(struct lism_conn *c, int fd, ssize_t (*kernel)(void *arg, size_t n), void *arg,
			   size_t n);

/* fcntl(F_SETFL) or ioctl(FIONBIO) changed O_NONBLOCK (the file's, shared by dups and after fork). */
void lism_conn_set_nonblock(struct lism_conn *c, int on);

/*
 * The process is about to take a seccomp filter (prctl PR_SET_SECCOMP):
 * for each ring @c of the process first, what it would ask the kernel
 * later (O_NONBLOCK) is asked now; then with @c NULL, its ring ends reach
 * TCP through read, write and poll alone (sshd's pre-auth child is killed
 * at a recvfrom or a sendmsg).  Sandboxed, a reader cannot peek at a run
 * that is not final: a read that went past it resets the connection.
 */
void lism_conn_sandbox(struct lism_conn *c, int fd);

/*
 * Waits for input (exec/bell.h, exec/spin.h).  A poll wrapper spins on its
 * ring sockets from spin_begin (false: do not spin on this one) until its
 * sleep_begin (below), which ends the spin (true: bytes came with no
 * doorbell, the socket is readable),
 * looking at lism_conn_ready; any wait in the kernel calls sleep_begin first.
 */
bool lism_conn_spin_begin(struct lism_conn *c);
bool lism_conn_ready(struct lism_conn *c);

/*
 * Whether a wait says @fd readable from its ring: lism_conn_ready, unless
 * its reader is at a run whose bytes TCP has not brought yet (a recv would
 * say EAGAIN; the kernel says the socket readable when they land).
 */
bool lism_conn_says(struct lism_conn *c, int fd);

/*
 * A wait goes to sleep in the kernel for @c's input (sleep_begin: counted
 * in the ring's doorbell word, every spin ended, in one operation; true if
 * bytes came silent: say them instead) and wakes (sleep_end): while one
 * sleeps nobody spins on @c, since a spinner's silent bytes would never
 * wake it (exec/bell.h).  *@carried: a writer may have carried bytes
 * (bell.h, carried counts); the wait fences once for all its rings
 * (lism_fence_peers), then asks fenced on each such ring: true if bytes
 * are there with no doorbell (say them instead).
 */
bool lism_conn_sleep_begin(struct lism_conn *c, bool *carried);
bool lism_conn_fenced(struct lism_conn *c);
void lism_conn_sleep_end(struct lism_conn *c);

/*
 * The kernel said @fd readable and its ring holds nothing: whether the
 * socket still says something once the doorbells owed are eaten (a
 * doorbell whose bytes were read from the ring before it landed makes
 * the socket readable with nothing to read; EAGAIN there is an error to
 * wrk and others).  True if in doubt.
 */
bool lism_conn_kernel_says(struct lism_conn *c, int fd);

/* Whether the process took a seccomp filter (lism_conn_sandbox): no spin, no wrapper's own syscalls. */
bool lism_conn_sandboxed(void);

/*
 * A wait this library does not make may watch the ring (another process
 * holds it too, after fork or exec; EPOLLONESHOT; a process whose waits
 * it cannot follow): no spin and no look from now on; POLLING ends.
 * Bytes already counted silent stay so (bell.h) until their reader
 * empties the ring.  Lock-free (fork's handler calls it).
 */
void lism_conn_set_shared(struct lism_conn *c);
/* set_shared, then past every take in flight (the rx lock): whether bytes are silent now
 * (the kernel will not say them), for sure. */
bool lism_conn_kernel_alone(struct lism_conn *c);

/*
 * The process's waits are this library's (liblism.so interposes them):
 * a reader that empties its ring leaves the writer's doorbells silent
 * until its next wait (bell.h, lism_bell_take_look), unless
 * $LISM_READER_LOOKS is 0 (the bench's ablation).  Off by default: a
 * program that links these files and waits in the kernel itself would
 * lose its wakeups.
 */
void lism_conn_readers_look(void);
/* Whether they do (and the process is not sandboxed): a spin that found
 * bytes may leave its POLLING set too, and then calls look_end on each of
 * its rings (POLLING ended on one shared meanwhile). */
bool lism_conn_readers_looking(void);
void lism_conn_look_end(struct lism_conn *c);

/*
 * Whether the process has one thread (glibc's __libc_single_threaded,
 * which turns false before a second thread runs; a raw clone(2) is not
 * seen), unless $LISM_ONE_THREAD is 0 (the bench's ablation): its calls
 * take references with plain operations and its sends no tx lock on a
 * connection no other process holds, since every locked operation drains
 * the store buffer behind a send's cursor (bell.h, carried counts).
 */
static inline bool lism_conn_one_thread(void)
{
	extern int lism_conn_one_thread_off; /* lism_conn_readers_look sets it */

	/* inline: the fd table asks twice a call */
	return !__atomic_load_n(&lism_conn_one_thread_off, __ATOMIC_RELAXED) &&
	       __atomic_load_n(&__libc_single_threaded, __ATOMIC_RELAXED);
}

/* $LISM_EXEC_DEBUG set: say on stderr why a connection failed (a reset, a broken pipe). */
void lism_exec_debug(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reset: the peer's reads say ECONNRESET, and so do ours; the close sends RST. */
void lism_conn_abort(struct lism_conn *c, int fd);

#endif
