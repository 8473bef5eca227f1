// SPDX-License-Identifier: GPL-2.0-only
/*
 * The socket calls of a ring connection end (rules in conn.h).  The TCP
 * socket is reached through syscall(2), never through libc's wrappers,
 * which liblism interposes.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <linux/sockios.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/single_threaded.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "exec/conn.h"
#include "exec/fence.h"
#include "exec/spin.h"

/*
 * Set once the process is about to take a seccomp filter (lism_conn_sandbox):
 * sshd's pre-auth child keeps read, write and poll for its socket and is
 * killed at a recvfrom or a sendmsg.  From then on a ring end reaches TCP
 * through those three alone.
 */
static int sandboxed;

static int poll_one(int fd, short events, int ms)
{
	struct pollfd p = { .fd = fd, .events = events };
	long n = syscall(SYS_poll, &p, 1, ms);

	return n < 0 ? -errno : n ? p.revents : 0;
}

/* recv for a sandboxed process: read(2), once poll(2) says it will not
 * block (MSG_DONTWAIT), or until @n bytes (MSG_WAITALL).  No MSG_PEEK. */
static ssize_t read_recv(int fd, char *buf, size_t n, int flags)
{
	size_t got = 0;

	while (got < n) {
		int ev = flags & MSG_DONTWAIT ? poll_one(fd, POLLIN, 0) : POLLIN;
		long r;

		if (ev <= 0)
			return got ? (ssize_t)got : ev ?: -EAGAIN;
		r = syscall(SYS_read, fd, buf + got, n - got);
		if (r < 0 && errno == EAGAIN && !(flags & MSG_DONTWAIT)) {
			poll_one(fd, POLLIN, -1); /* O_NONBLOCK, and waiting */
			continue;
		}
		if (r <= 0)
			return got ? (ssize_t)got : r ? -errno : 0;
		got += (size_t)r;
		if (!(flags & MSG_WAITALL))
			break;
	}
	return (ssize_t)got;
}

/* sendmsg for a sandboxed process: write(2) of the first iovec, not
 * waiting if poll(2) says it would (MSG_DONTWAIT), and never into a reset
 * or shut socket, whose write would raise SIGPIPE. */
static ssize_t write_send(int fd, const struct msghdr *m, int flags)
{
	int ev = poll_one(fd, POLLOUT, 0);
	long r;

	if (ev < 0)
		return ev;
	if (ev & POLLERR)
		return -ECONNRESET;
	if (ev & POLLHUP)
		return -EPIPE;
	if (!(ev & POLLOUT) && (flags & MSG_DONTWAIT))
		return -EAGAIN;
	r = syscall(SYS_write, fd, m->msg_iov[0].iov_base, m->msg_iov[0].iov_len);
	return r < 0 ? -errno : r;
}

/* The kernel's calls, past liblism's wrappers: -errno on failure. */
static ssize_t sys_recv(int fd, void *buf, size_t n, int flags)
{
	long r;

	if (sandboxed && !(flags & MSG_PEEK))
		return read_recv(fd, buf, n, flags);
	r = syscall(SYS_recvfrom, fd, buf, n, flags, NULL, NULL);
	return r < 0 ? -errno : r;
}

static ssize_t sys_sendmsg(int fd, const struct msghdr *m, int flags)
{
	long r;

	if (sandboxed && !(flags & MSG_OOB) && m->msg_iovlen)
		return write_send(fd, m, flags);
	r = syscall(SYS_sendmsg, fd, m, flags);
	return r < 0 ? -errno : r;
}

static ssize_t sys_recvmsg(int fd, struct msghdr *m, int flags)
{
	long r;

	if (sandboxed && m->msg_iovlen) /* the first iovec: a short count */
		return sys_recv(fd, m->msg_iov[0].iov_base, m->msg_iov[0].iov_len, flags);
	r = syscall(SYS_recvmsg, fd, m, flags);
	return r < 0 ? -errno : r;
}

/* $LISM_EXEC_DEBUG set: say on stderr why a connection failed (a reset, a broken pipe). */
void lism_exec_debug(int fd, const char *fmt, ...)
{
	static int on = -1;
	char line[256];
	va_list ap;
	int n;

	if (on < 0)
		on = getenv("LISM_EXEC_DEBUG") != NULL;
	if (!on)
		return;
	n = snprintf(line, sizeof(line), "liblism[%d]: fd %d: ", (int)getpid(), fd);
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	(void)!syscall(SYS_write, 2, line, (size_t)n);
}

/* O_NONBLOCK, read once and then kept by the fcntl and ioctl wrappers (lism_conn_set_nonblock). */
static int nonblocking(struct lism_conn *c, int fd, int flags)
{
	int nb = __atomic_load_n(&c->nonblock, __ATOMIC_RELAXED);

	if (flags & MSG_DONTWAIT)
		return 1;
	if (nb < 0) {
		long fl = syscall(SYS_fcntl, fd, F_GETFL);

		nb = fl >= 0 && (fl & O_NONBLOCK);
		__atomic_store_n(&c->nonblock, nb, __ATOMIC_RELAXED);
	}
	return nb;
}

void lism_conn_set_nonblock(struct lism_conn *c, int on)
{
	__atomic_store_n(&c->nonblock, !!on, __ATOMIC_RELAXED);
}

static bool fence_alone(struct lism_conn *c);

void lism_conn_sandbox(struct lism_conn *c, int fd)
{
	if (c) {
		(void)nonblocking(c, fd, 0); /* fcntl: asked now, while it may be */
		/* the sandbox's waits look at no ring: its doorbells ring from now
		 * on, and what a writer carried shows now, while a fence may be made */
		(void)lism_ring_rx_poll_end(&c->map.rx);
		(void)fence_alone(c);
	} else
		sandboxed = 1;
}

/* Set by atomic ORs from either direction's lock, or none (shutdown). */
static __u32 flags_now(struct lism_conn *c)
{
	return __atomic_load_n(&c->flags, __ATOMIC_ACQUIRE);
}

static void lock(struct lism_conn *c, pthread_mutex_t *l)
{
	/* its holder died (kill -9 after a fork): the private cursors may be half moved */
	if (pthread_mutex_lock(l) == EOWNERDEAD) {
		pthread_mutex_consistent(l);
		__atomic_or_fetch(&c->flags, LISM_CONN_ABORTED, __ATOMIC_RELEASE);
	}
}

/*
 * The locks of a process with one thread and a connection no other
 * process holds are nobody's but the caller's: sends and recvs take none
 * (a locked operation per send drained the store buffer behind the ring's
 * cursor, bell.h, carried counts; the robust mutex's lock and unlock, twice
 * a recv that spins, were 5 % of a one-CPU ping-pong).  A send or recv
 * from a signal handler that interrupted one on the same socket (outside
 * its spin and sleep) would deadlock on the lock; without it, tx_busy and
 * rx_busy make it fail with EAGAIN.
 */
int lism_conn_one_thread_off; /* $LISM_ONE_THREAD=0: the ablation */

/*
 * Counted asleep on the ring, every spin ended, and what a writer carried
 * fenced and looked at (bell.h): true if bytes are there with no doorbell.
 * The caller wakes with lism_ring_rx_sleep_end.
 */
static bool sleep_fenced(struct lism_conn *c)
{
	bool carried = false, silent = lism_ring_rx_sleep_begin(&c->map.rx, &carried);

	if (carried) {
		lism_fence_peers();
		silent |= lism_ring_rx_fenced(&c->map.rx);
	}
	return silent;
}

/*
 * The kernel alone watches the ring's input from now on (a sandbox, a
 * socket handed to a wait this library does not make): bytes a writer
 * carried show first.  Counted as a sleeper meanwhile, so that no spin
 * begins between the fence and its look.
 */
static bool fence_alone(struct lism_conn *c)
{
	bool silent = sleep_fenced(c);

	lism_ring_rx_sleep_end(&c->map.rx);
	return silent;
}

static bool tx_alone(struct lism_conn *c)
{
	return lism_conn_one_thread() && !__atomic_load_n(&c->shared, __ATOMIC_RELAXED);
}

/* The rx lock, or (@alone: tx_alone) rx_busy; -EAGAIN: a recv this one interrupted holds it. */
static int rx_lock(struct lism_conn *c, bool alone)
{
	if (!alone) {
		lock(c, &c->rx_lock);
		return 0;
	}
	if (__atomic_load_n(&c->rx_busy, __ATOMIC_RELAXED))
		return -EAGAIN;
	__atomic_store_n(&c->rx_busy, 1, __ATOMIC_RELAXED);
	return 0;
}

static void rx_unlock(struct lism_conn *c, bool alone)
{
	if (!alone)
		pthread_mutex_unlock(&c->rx_lock);
	else
		__atomic_store_n(&c->rx_busy, 0, __ATOMIC_RELAXED);
}

/* Taken again after a spin or a sleep (a nested recv meanwhile is over),
 * as the connection is now: a signal handler's fork may have shared it. */
static void rx_relock(struct lism_conn *c, bool *alone)
{
	*alone = tx_alone(c);
	if (!*alone)
		lock(c, &c->rx_lock);
	else
		__atomic_store_n(&c->rx_busy, 1, __ATOMIC_RELAXED);
}

/* As pthread_mutex_trylock on the rx lock: 0, EBUSY, or EOWNERDEAD (the lock is the caller's). */
static int rx_trylock(struct lism_conn *c, bool alone)
{
	if (!alone)
		return pthread_mutex_trylock(&c->rx_lock);
	return rx_lock(c, true) ? EBUSY : 0;
}

static void tx_lock(struct lism_conn *c, bool alone)
{
	if (!alone)
		lock(c, &c->tx_lock);
	else
		__atomic_store_n(&c->tx_busy, 1, __ATOMIC_RELAXED);
}

static void tx_unlock(struct lism_conn *c, bool alone)
{
	if (!alone)
		pthread_mutex_unlock(&c->tx_lock);
	else
		__atomic_store_n(&c->tx_busy, 0, __ATOMIC_RELAXED);
}

/* Taken again after a spin or a sleep for room, as the connection is now
 * (a signal handler's fork may have shared it). */
static void tx_relock(struct lism_conn *c, bool *alone)
{
	*alone = tx_alone(c);
	tx_lock(c, *alone);
}

static int mutex_init(pthread_mutex_t *l)
{
	pthread_mutexattr_t a;
	int err;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	err = pthread_mutex_init(l, &a);
	pthread_mutexattr_destroy(&a);
	return -err;
}

int lism_conn_open(struct lism_exec_map *m, struct lism_conn **out)
{
	struct lism_conn *c;
	int err;

	c = mmap(NULL, sizeof(*c), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (c == MAP_FAILED)
		return -errno;
	err = mutex_init(&c->rx_lock);
	if (!err)
		err = mutex_init(&c->tx_lock);
	if (err) {
		munmap(c, sizeof(*c));
		return err;
	}
	c->map = *m;
	c->nonblock = -1;
	c->busy_us = lism_spin_default_us();
	/* a spin of the image before an exec ended with it (bell.h: nobody spins here yet) */
	(void)lism_ring_rx_poll_end(&c->map.rx);
	m->base = NULL;
	*out = c;
	return 0;
}

static int eat(struct lism_conn *c, int fd, __u64 n, int wait);

void lism_conn_release(struct lism_conn *c, int fd)
{
	int locked = fd >= 0 && c->map.rx.owed ? pthread_mutex_trylock(&c->rx_lock) : EBUSY;

	/* its holder died (kill -9 after a fork): the lock is ours now, and the connection reset */
	if (locked == EOWNERDEAD) {
		pthread_mutex_consistent(&c->rx_lock);
		__atomic_or_fetch(&c->flags, LISM_CONN_ABORTED, __ATOMIC_RELEASE);
	}
	/* a doorbell owed and here now would turn the close into a reset (unread data) */
	if (!locked)
		(void)eat(c, fd, c->map.rx.owed, 0);
	if (!locked || locked == EOWNERDEAD)
		pthread_mutex_unlock(&c->rx_lock);
	lism_exec_detach(&c->map);
	munmap(c, sizeof(*c));
}

void lism_conn_abort(struct lism_conn *c, int fd)
{
	struct linger lg = { 1, 0 };

	__atomic_or_fetch(&c->flags, LISM_CONN_ABORTED, __ATOMIC_RELEASE);
	lism_ring_tx_set_state(&c->map.tx, LISM_RING_ABORT);
	if (!sandboxed) /* sandboxed, the close is a FIN: the ring's state says the reset */
		syscall(SYS_setsockopt, fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	syscall(SYS_shutdown, fd, SHUT_RDWR); /* the peer's sleeping reader wakes */
}

/*
 * Eat up to @n doorbells that are there now, or (@wait) exactly @n, waiting
 * for them (they were sent before what follows on TCP: a run's bytes).
 * -errno only for a broken connection.
 */
static int eat(struct lism_conn *c, int fd, __u64 n, int wait)
{
	char buf[64];

	while (n) {
		ssize_t r = sys_recv(fd, buf, n < sizeof(buf) ? n : sizeof(buf), wait ? MSG_WAITALL : MSG_DONTWAIT);

		if (r == -EINTR && wait)
			continue;
		if (r <= 0 && !wait)
			return r == -EAGAIN || r == 0 ? 0 : (int)r;
		if (r <= 0)
			return r ? (int)r : -EPROTO;
		for (ssize_t i = 0; i < r; i++)
			if (buf[i] != LISM_CONN_BELL)
				return -EPROTO;
		lism_ring_rx_ate(&c->map.rx, (__u64)r);
		n -= (__u64)r;
	}
	return 0;
}

static int rx_fail(struct lism_conn *c, int fd, ssize_t err)
{
	lism_exec_debug(fd, "recv fails: %s (ring: producer %llx, doorbells owed %llu eaten %llu, run %d)", strerror((int)-err),
	      (unsigned long long)c->map.rx.prod_seen.count, (unsigned long long)c->map.rx.owed,
	      (unsigned long long)c->map.rx.eaten, c->map.rx.in_run);
	if (err == -EPROTO) {
		lism_conn_abort(c, fd);
		return -ECONNRESET;
	}
	return (int)err;
}

/* The iovecs past their first @n bytes, in @out (at most @max). */
static int iov_skip(const struct iovec *iov, int iovcnt, size_t n, struct iovec *out, int max)
{
	int k = 0;

	for (int i = 0; i < iovcnt && k < max; i++) {
		if (n >= iov[i].iov_len) {
			n -= iov[i].iov_len;
			continue;
		}
		out[k].iov_base = (char *)iov[i].iov_base + n;
		out[k++].iov_len = iov[i].iov_len - n;
		n = 0;
	}
	return k;
}

/*
 * The kernel said the connection is broken (a reset), once: reads say it
 * once the ring is read, and sends fail from now on, as TCP's do after
 * its reset (its peer reads no more).
 */
static void rx_broken(struct lism_conn *c, int err)
{
	c->rx_err = err;
	__atomic_or_fetch(&c->flags, LISM_CONN_RESET, __ATOMIC_RELEASE);
}

/*
 * recv(MSG_PEEK)'s answer from poll(2), for a sandboxed process: 1 for
 * bytes there, 0 for the peer's FIN, -ECONNRESET, -EAGAIN (nothing, not
 * waiting), -EINTR.  Bytes before a FIN read as the FIN: the caller reads
 * the ring again before it says the end.
 */
static ssize_t poll_look(int fd, int wait)
{
	int ev = poll_one(fd, POLLIN | POLLRDHUP, wait ? -1 : 0);

	if (ev <= 0)
		return ev ?: -EAGAIN;
	if (ev & POLLERR)
		return -ECONNRESET;
	return ev & (POLLRDHUP | POLLHUP) ? 0 : 1;
}

/*
 * The ring is empty: what the TCP connection says, now or (@wait) once
 * something comes -- a doorbell, run bytes, a FIN or a reset; asleep in the
 * kernel, so SO_RCVTIMEO, signals and SA_RESTART are its own.  0: nothing
 * (not waiting); 1: look at the ring again (a reset is kept in rx_err, said
 * once the ring is read); -ENOTCONN: the peer's FIN; another -errno: the
 * wait's (-EAGAIN: SO_RCVTIMEO, -EINTR) or the connection's.
 */
static int tcp_look(struct lism_conn *c, int fd, int wait, bool *alone)
{
	char buf[64];
	ssize_t seen;

	if (wait) {
		/* no sleep in the kernel over bytes a spin hid from it (bell.h) */
		if (sleep_fenced(c)) {
			lism_conn_sleep_end(c);
			return 1;
		}
		/* not holding the lock asleep: a shutdown or a FIONREAD on another
		 * thread goes on, and a process killed asleep leaves it consistent */
		rx_unlock(c, *alone);
	}
	if (sandboxed)
		seen = poll_look(fd, wait);
	else
		seen = sys_recv(fd, buf, sizeof(buf), MSG_PEEK | (wait ? 0 : MSG_DONTWAIT));
	if (wait) {
		lism_conn_sleep_end(c);
		rx_relock(c, alone);
	}
	if (seen == -EAGAIN && !wait)
		return 0;
	if (sandboxed && seen == -ECONNRESET && c->rx_err)
		seen = 0; /* poll says it again: it was said */
	if (sandboxed && seen == 0) {
		/* a FIN, and maybe doorbells before it: the owed ones go */
		int err = eat(c, fd, c->map.rx.owed, 0);

		if (err && !c->rx_err)
			c->rx_err = err;
	}
	if (seen == 0)
		return c->rx_err ?: -ENOTCONN;
	if (seen == -ECONNRESET || seen == -EPIPE) {
		rx_broken(c, (int)seen);
		return 1;
	}
	if (seen < 0)
		return (int)seen;
	/* only owed ones: another is the doorbell of bytes just published */
	return eat(c, fd, c->map.rx.owed, 0) ?: 1;
}

/* At most @max bytes of the iovecs, in at most @outmax entries of @out. */
static int iov_cap(const struct iovec *iov, int iovcnt, size_t max, struct iovec *out, int outmax)
{
	int k = 0;

	for (int i = 0; i < iovcnt && max && k < outmax; i++, k++) {
		out[k] = iov[i];
		if (out[k].iov_len > max)
			out[k].iov_len = max;
		max -= out[k].iov_len;
	}
	return k;
}

/*
 * The ring is read up to a run: its doorbells, then its bytes from TCP.
 * Bytes read; 0 when the run is over (read the ring again); -EAGAIN when
 * it is open with nothing counted yet; -ENOTCONN at the peer's FIN.
 */
static ssize_t recv_run(struct lism_conn *c, int fd, const struct iovec *iov, int iovcnt, int flags)
{
	struct lism_ring_rx *rx = &c->map.rx;
	struct iovec capped[64];
	struct msghdr m = { .msg_iov = capped };
	ssize_t left, r;
	bool final;
	int err;

	if (rx->eaten < rx->run_bells) {
		err = eat(c, fd, rx->run_bells - rx->eaten, 1); /* sent before the run: here or coming */
		if (err)
			return err;
	}
	left = lism_ring_run_left(rx, &final);
	if (left <= 0)
		return left;
	m.msg_iovlen = (size_t)iov_cap(iov, iovcnt, (size_t)left, capped, 64);
	if (final || (flags & MSG_PEEK) || sandboxed) {
		r = sys_recvmsg(fd, &m, (flags & MSG_PEEK) | MSG_DONTWAIT);
		if (r > 0 && (flags & MSG_PEEK))
			r = (ssize_t)lism_ring_run_valid(rx, (size_t)r);
		/* sandboxed, there is no look first: a read past the run (its writer
		 * took back counted bytes, ended it and sent on meanwhile) resets */
		else if (r > 0 && !final && lism_ring_run_valid(rx, (size_t)r) != (size_t)r)
			return -EPROTO;
	} else {
		/* the count may hold bytes never sent, and the run may end
		 * meanwhile: look, then take only what was the run's */
		r = sys_recvmsg(fd, &m, MSG_PEEK | MSG_DONTWAIT);
		if (r > 0) {
			r = (ssize_t)lism_ring_run_valid(rx, (size_t)r);
			if (sys_recv(fd, NULL, (size_t)r, MSG_TRUNC | MSG_DONTWAIT) != r)
				return -EPROTO;
		}
	}
	if (r > 0 && !(flags & MSG_PEEK))
		lism_ring_run_read(rx, (__u64)r);
	if (r == 0)
		return -ENOTCONN; /* counted bytes never sent: the writer went */
	return r;
}

static void unshare_check(struct lism_conn *c);

bool lism_conn_spin_begin(struct lism_conn *c)
{
	/* refused while bytes are counted or a wait sleeps on the ring (bell.h) */
	if (__atomic_load_n(&c->shared, __ATOMIC_RELAXED) || !c->busy_us || sandboxed ||
	    !lism_ring_rx_poll_begin(&c->map.rx))
		return false;
	unshare_check(c);
	return !__atomic_load_n(&c->shared, __ATOMIC_RELAXED);
}

void lism_conn_look_end(struct lism_conn *c)
{
	unshare_check(c);
}

bool lism_conn_sleep_begin(struct lism_conn *c, bool *carried)
{
	return lism_ring_rx_sleep_begin(&c->map.rx, carried);
}

bool lism_conn_fenced(struct lism_conn *c)
{
	return lism_ring_rx_fenced(&c->map.rx);
}

void lism_conn_sleep_end(struct lism_conn *c)
{
	lism_ring_rx_sleep_end(&c->map.rx);
}

bool lism_conn_sandboxed(void)
{
	return sandboxed;
}

bool lism_conn_ready(struct lism_conn *c)
{
	return (flags_now(c) & (LISM_CONN_ABORTED | LISM_CONN_RD_SHUT)) || lism_ring_rx_ready(c->map.rx.dir);
}

bool lism_conn_says(struct lism_conn *c, int fd)
{
	int err, inq = 0;
	bool says = true, final, alone;
	ssize_t n, left;

	if (!lism_conn_ready(c))
		return false;
	if ((flags_now(c) & (LISM_CONN_ABORTED | LISM_CONN_RD_SHUT)) || sandboxed)
		return true; /* sandboxed: no syscall of the wrapper's own */
	alone = tx_alone(c);
	err = rx_trylock(c, alone);
	if (err && err != EOWNERDEAD)
		return true; /* a recv is at it: it says what is there */
	if (err == EOWNERDEAD) {
		pthread_mutex_consistent(&c->rx_lock);
		__atomic_or_fetch(&c->flags, LISM_CONN_ABORTED, __ATOMIC_RELEASE);
	} else if (!(n = lism_ring_unread(&c->map.rx)) && c->map.rx.in_run &&
		   (left = lism_ring_run_left(&c->map.rx, &final)) > 0) {
		/* at a run whose bytes TCP has not brought yet (the ring's after
		 * it are counted): the kernel says the socket readable when they land */
		says = !syscall(SYS_ioctl, fd, SIOCINQ, &inq) && (__u64)inq > c->map.rx.run_bells - c->map.rx.eaten;
	}
	rx_unlock(c, alone);
	return says;
}

bool lism_conn_kernel_says(struct lism_conn *c, int fd)
{
	bool alone = tx_alone(c);
	int err = rx_trylock(c, alone), ev = 1;

	if (err && err != EOWNERDEAD)
		return true; /* a recv is at it: it says what is there */
	if (err == EOWNERDEAD) {
		pthread_mutex_consistent(&c->rx_lock);
		__atomic_or_fetch(&c->flags, LISM_CONN_ABORTED, __ATOMIC_RELEASE);
	}
	/* a doorbell owed and come late (its bytes read from the ring before it
	 * landed) is all the kernel sees: eaten, what is left is the truth */
	if (c->map.rx.owed && !eat(c, fd, c->map.rx.owed, 0))
		ev = poll_one(fd, POLLIN, 0);
	rx_unlock(c, alone);
	return ev != 0;
}

void lism_conn_set_shared(struct lism_conn *c)
{
	/* a wait elsewhere may not look at the ring: its doorbells ring from
	 * now on.  No lock (fork's handler may be here): a take or a spin
	 * that set POLLING looks at shared after it, past a fence as this
	 * does, and ends it if this came first (unshare_check) */
	__atomic_store_n(&c->shared, 1, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	(void)lism_ring_rx_poll_end(&c->map.rx);
}

bool lism_conn_kernel_alone(struct lism_conn *c)
{
	/* with no rx lock (one thread), only a recv this call interrupted (a
	 * signal handler's) can be in flight: its bytes are said now */
	bool interrupted = tx_alone(c) && __atomic_load_n(&c->rx_busy, __ATOMIC_RELAXED);

	lism_conn_set_shared(c);
	/* a take in flight may have looked after set_shared's end of POLLING
	 * (its own look-again ends it, and leaves its bytes silent): through
	 * the rx lock, every take that saw the ring unshared is over */
	if (!interrupted) {
		lock(c, &c->rx_lock);
		pthread_mutex_unlock(&c->rx_lock);
	}
	/* the kernel alone waits from now on: what a writer carried shows first */
	return fence_alone(c) || interrupted;
}

/* After POLLING may have been set: end it if the ring became shared meanwhile (set_shared). */
static void unshare_check(struct lism_conn *c)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST); /* against set_shared's: one of the two sees the other */
	if (__atomic_load_n(&c->shared, __ATOMIC_SEQ_CST))
		(void)lism_ring_rx_poll_end(&c->map.rx);
}

static bool looks(struct lism_conn *c);

/*
 * A blocking recv found the ring empty: spin on it for this thread's
 * budget before the sleep in the kernel, the rx lock released as for the
 * sleep.  True if something came.
 */
static bool spin(struct lism_conn *c, bool *alone)
{
	__u64 budget = __atomic_load_n(&c->shared, __ATOMIC_RELAXED) || sandboxed ? 0 : lism_spin_budget_ns(c->busy_us);
	struct lism_spin sp;
	bool found;

	if (!budget)
		return false;
	rx_unlock(c, *alone);
	if (!lism_conn_spin_begin(c)) {
		/* bytes counted already (look again), or a wait sleeps on it (no spin) */
		found = lism_conn_ready(c);
		rx_relock(c, alone);
		return found;
	}
	lism_spin_start(&sp, budget);
	while (!(found = lism_conn_ready(c)) && lism_spin_next(&sp))
		;
	/* found, a reader that looks keeps POLLING: its take sets it again
	 * (bell.h, lism_bell_take_look), and the next write is silent too */
	if (!found || !looks(c))
		found |= lism_ring_rx_poll_end(&c->map.rx);
	lism_spin_result(found, c->busy_us);
	rx_relock(c, alone);
	return found;
}

/*
 * A blocking send found the ring full: spin for room for this thread's
 * budget of such spins (as a reader spins for bytes, adapted apart) before
 * it sleeps on the futex: a reader that drains the ring frees room within
 * microseconds, and the sleep costs a futex wait, its wake, and the
 * liveness and timeout look-ups before them.  Never past @left_ns (what
 * SO_SNDTIMEO leaves).  The caller released the tx lock, as for the sleep.
 * True if room came.
 */
static bool spin_room(struct lism_conn *c, __u64 left_ns)
{
	__u64 budget = __atomic_load_n(&c->shared, __ATOMIC_RELAXED) || sandboxed ? 0
										   : lism_spin_room_budget_ns(c->busy_us);
	struct lism_spin sp;
	bool found;

	if (budget > left_ns)
		budget = left_ns;
	if (!budget)
		return false;
	lism_spin_start(&sp, budget);
	while (!(found = lism_ring_tx_room(&c->map.tx)) && lism_spin_next(&sp))
		;
	lism_spin_room_result(found, c->busy_us);
	return found;
}

static int readers_look; /* lism_conn_readers_look */

void lism_conn_readers_look(void)
{
	const char *e = getenv("LISM_READER_LOOKS"), *o = getenv("LISM_ONE_THREAD");

	__atomic_store_n(&readers_look, !(e && !strcmp(e, "0")), __ATOMIC_RELAXED);
	__atomic_store_n(&lism_conn_one_thread_off, o && !strcmp(o, "0"), __ATOMIC_RELAXED);
}

bool lism_conn_readers_looking(void)
{
	return __atomic_load_n(&readers_look, __ATOMIC_RELAXED) && !sandboxed;
}

/*
 * Whether this reader looks at the ring before any of its waits sleeps
 * (bell.h, lism_bell_take_look): the process's waits are liblism's
 * (lism_conn_readers_look), one process alone holds the socket, and no
 * sandbox.
 */
static bool looks(struct lism_conn *c)
{
	return __atomic_load_n(&readers_look, __ATOMIC_RELAXED) && !__atomic_load_n(&c->shared, __ATOMIC_RELAXED) &&
	       !sandboxed;
}

/* lism_conn_recv with the rx lock held (released while it sleeps). */
static ssize_t recv_locked(struct lism_conn *c, int fd, const struct iovec *iov, int iovcnt, int flags, bool *alone)
{
	struct iovec rest[64];
	size_t want = 0, got = 0;
	int peek = flags & MSG_PEEK, nb = -1, say, idle = 0;
	bool look;
	ssize_t r = 0;

	for (int i = 0; i < iovcnt; i++)
		want += iov[i].iov_len;
	while (got < want || !want) {
		const struct iovec *v = iov;
		int vn = iovcnt;

		if (flags_now(c) & LISM_CONN_ABORTED) {
			r = -ECONNRESET;
			break;
		}
		if (flags_now(c) & LISM_CONN_RD_SHUT) {
			r = 0;
			break;
		}
		if (got) {
			vn = iov_skip(iov, iovcnt, got, rest, 64);
			v = rest;
		}
		look = !peek && looks(c);
		r = lism_ring_recv(&c->map.rx, v, vn, peek ? LISM_RING_PEEK : look ? LISM_RING_LOOK : 0);
		if (look)
			unshare_check(c);
		if (r == -EXDEV) {
			r = recv_run(c, fd, v, vn, flags);
			if (r == 0)
				continue; /* the run is over: the ring again */
		} else if (r > 0 && !peek) {
			if (c->map.rx.owed) {
				int err = eat(c, fd, c->map.rx.owed, 0);

				/* the bytes are read: they are returned, the error said after */
				if (err == -EPROTO)
					rx_fail(c, fd, err);
				else if (err)
					rx_broken(c, err);
			}
			/* room freed: a writer sleeping for it wakes */
			if (lism_ring_rx_ring(&c->map.rx))
				syscall(SYS_futex, &c->map.rx.dir->prod.writer_waits, FUTEX_WAKE, 1, NULL, NULL, 0);
		}
		if (r > 0) {
			idle = 0;
			got += (size_t)r;
			/* on, while more is there now (the ring past a run, a run past the
			 * ring): a short read means drained to an edge-triggered reader */
			if (peek)
				break;
			continue;
		}
		if (r == 0)
			break; /* the end of the stream, or a read of no bytes */
		if (r == -ENOTCONN) {
			r = c->rx_err;
			break;
		}
		if (r != -EAGAIN) {
			r = rx_fail(c, fd, r);
			break;
		}
		if (got && !(flags & MSG_WAITALL))
			break;
		if (nb < 0)
			nb = nonblocking(c, fd, flags);
		if (!nb && spin(c, alone) && ++idle < 1000)
			continue; /* a peer's count with no bytes behind it spins no more than that */
		say = tcp_look(c, fd, !nb, alone);
		if (say == 0 || say == -EAGAIN || say == -EINTR) {
			r = say ?: -EAGAIN; /* nothing, SO_RCVTIMEO, or a signal */
			break;
		}
		if (say == 1) {
			/* bytes came meanwhile; a peer that only sends doorbells is broken */
			if (++idle < 1000)
				continue;
			say = -EPROTO;
		}
		/* the peer's FIN or reset: what it wrote before is in the ring (or its run) */
		if (say != -EPROTO && (lism_ring_unread(&c->map.rx) > 0 || c->map.rx.in_run) && ++idle < 1000)
			continue;
		r = say == -ENOTCONN ? 0 : rx_fail(c, fd, say);
		break;
	}
	/* said once, as the kernel does: the next read is the end of the stream */
	if (!got && r < 0 && r == c->rx_err)
		c->rx_err = 0;
	if (got)
		return (ssize_t)got;
	return r;
}

ssize_t lism_conn_recv(struct lism_conn *c, int fd, const struct iovec *iov, int iovcnt, int flags)
{
	bool alone = tx_alone(c);
	ssize_t r = rx_lock(c, alone);

	if (r)
		return r;
	r = recv_locked(c, fd, iov, iovcnt, flags, &alone);
	rx_unlock(c, alone);
	return r;
}

ssize_t lism_conn_recv_into(struct lism_conn *c, int fd, void *buf, size_t n, int flags,
			    ssize_t (*sink)(void *arg, const void *buf, size_t n), void *arg)
{
	struct iovec v = { buf, n };
	bool alone = tx_alone(c);
	ssize_t r = rx_lock(c, alone), w;

	if (r)
		return r;
	r = recv_locked(c, fd, &v, 1, (flags & MSG_DONTWAIT) | MSG_PEEK, &alone);
	if (r > 0) {
		/* the lock held from the look to the take: the bytes taken are those the sink took */
		w = sink(arg, buf, (size_t)r);
		if (w > 0) {
			/* a shutdown(SHUT_RD) or a reset meanwhile: what the sink took is said;
			 * fewer bytes than were peeked under the lock: the header lied */
			ssize_t t;

			v.iov_len = (size_t)w;
			t = recv_locked(c, fd, &v, 1, MSG_DONTWAIT, &alone);

			if (t > 0 && t != w)
				w = rx_fail(c, fd, -EPROTO);
		}
		r = w;
	}
	rx_unlock(c, alone);
	return r;
}

/*
 * A doorbell to the reader (tx lock held); an error it meets is the next
 * send's.  Its send buffer has room: a writer leaves a run only while the
 * socket is writable (run_over), and only doorbells follow until the
 * reader eats them.
 */
static void ring_bell(struct lism_conn *c, int fd)
{
	char b = LISM_CONN_BELL;
	struct iovec v = { &b, 1 };
	struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1 };

	for (;;) {
		ssize_t r = sys_sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (r == 1)
			return;
		if (r != -EAGAIN && r != -EINTR) {
			lism_exec_debug(fd, "a doorbell failed: %s", strerror((int)-r));
			c->tx_err = (int)r;
			return;
		}
		/* a send buffer full of doorbells: its reader eats them, so room comes */
		poll_one(fd, POLLOUT, LISM_CONN_LIVENESS_MS);
	}
}

/*
 * Whether the writer's run is over (tx lock held): its reader has read
 * the ring up to it, and the socket is writable.  While the send buffer
 * is full of the run's bytes, the writer stays in the run and TCP says
 * EAGAIN, as for any TCP writer: back on the ring it would owe a doorbell
 * it could not send, and a reader that reads once per wakeup would never
 * learn of the ring's bytes.
 */
static bool run_over(struct lism_conn *c, int fd)
{
	if (!c->map.tx.in_run)
		return true;
	return (poll_one(fd, POLLOUT, 0) & POLLOUT) && lism_ring_tx_run_end(&c->map.tx);
}

/* The reader's process went: its socket sent a FIN without saying done-writing first, or a reset. */
static int peer_gone(struct lism_conn *c, int fd)
{
	int ev = poll_one(fd, POLLRDHUP, 0);
	__u32 said;

	if (ev <= 0)
		return 0;
	if (ev & (POLLERR | POLLHUP))
		return 1;
	said = __atomic_load_n(&c->map.rx.dir->prod.state, __ATOMIC_ACQUIRE);
	return (ev & POLLRDHUP) && !(said & LISM_RING_DONE_WRITING);
}

/* Whether every caught signal restarts calls (SA_RESTART): a send
 * interrupted while it waited on the futex goes on, as the kernel's would. */
static int signals_restart(void)
{
	if (sandboxed)
		return 0; /* sigaction is not the sandbox's: the futex's EINTR */
	for (int s = 1; s < NSIG; s++) {
		struct sigaction sa;

		if (s == SIGKILL || s == SIGSTOP || sigaction(s, NULL, &sa))
			continue;
		if (sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN && !(sa.sa_flags & SA_RESTART))
			return 0;
	}
	return 1;
}

static long sndtimeo_ms(int fd)
{
	struct timeval tv = { 0 };
	socklen_t len = sizeof(tv);

	if (sandboxed)
		return -1; /* getsockopt is not the sandbox's */
	if (syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_SNDTIMEO, &tv, &len) || (!tv.tv_sec && !tv.tv_usec))
		return -1;
	return tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/*
 * @n bytes through TCP in this end's run (tx lock held): counted before
 * they are sent, the part not sent taken back after.
 */
static ssize_t send_run(struct lism_conn *c, int fd, const struct iovec *iov, int iovcnt, int flags)
{
	struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt };
	__s64 n = 0;
	ssize_t r;

	for (int i = 0; i < iovcnt; i++)
		n += (__s64)iov[i].iov_len;
	if (flags & MSG_OOB)
		n -= n > 0; /* the urgent byte leaves the stream */
	lism_ring_tx_run_add(&c->map.tx, n);
	r = sys_sendmsg(fd, &m, flags | MSG_NOSIGNAL); /* SIGPIPE is raised once, by lism_conn_send */
	lism_ring_tx_run_add(&c->map.tx, (r > 0 ? (__s64)r - ((flags & MSG_OOB) && r > 0) : 0) - n);
	return r;
}

/* Start a run (tx lock held); a blocking caller waits for a free slot. */
static int run_start(struct lism_conn *c, int fd, int nb)
{
	for (;;) {
		int err = lism_ring_tx_run_start(&c->map.tx);
		struct timespec nap = { 0, 200000 };

		if (err != -EAGAIN || nb)
			return err;
		if (peer_gone(c, fd))
			return -EPIPE;
		nanosleep(&nap, NULL); /* its reader is LISM_RING_RUNS runs behind: it reads them first */
	}
}

ssize_t lism_conn_send(struct lism_conn *c, int fd, const struct iovec *iov, int iovcnt, int flags)
{
	struct iovec rest[64];
	size_t want = 0, put = 0;
	long deadline = -2;
	int nb = -1;
	ssize_t r = 0;
	bool alone = tx_alone(c);

	for (int i = 0; i < iovcnt; i++)
		want += iov[i].iov_len;
	if (alone && __atomic_load_n(&c->tx_busy, __ATOMIC_RELAXED))
		return -EAGAIN; /* a signal handler's, inside a send on this socket */
	tx_lock(c, alone);
	if (flags & MSG_OOB) {
		nb = nonblocking(c, fd, flags);
		r = run_start(c, fd, nb) ?: send_run(c, fd, iov, iovcnt, flags);
		goto out;
	}
	for (;;) {
		const struct iovec *v = iov;
		__u32 state = flags_now(c);
		int vn = iovcnt;

		if (state & LISM_CONN_ABORTED) {
			r = -ECONNRESET;
			break;
		}
		if (state & LISM_CONN_RESET) {
			r = -EPIPE; /* not into a ring nobody reads: TCP's send fails after its reset */
			break;
		}
		if (c->tx_err) {
			r = c->tx_err;
			break;
		}
		if (put) {
			vn = iov_skip(iov, iovcnt, put, rest, 64);
			v = rest;
		}
		/* back to the ring once its reader has read up to the run, and TCP has room */
		if (!run_over(c, fd)) {
			r = send_run(c, fd, v, vn, flags);
			if (r > 0)
				put += (size_t)r;
			break;
		}
		r = lism_ring_send(&c->map.tx, v, vn);
		if (r > 0) {
			put += (size_t)r;
			if (c->map.tx.bell)
				ring_bell(c, fd);
			if (put == want)
				break;
			continue;
		}
		if (r == 0)
			break;
		if (r == -EPROTO) {
			lism_exec_debug(fd, "send: the ring's header broke an invariant: reset");
			lism_conn_abort(c, fd);
			r = -ECONNRESET;
			break;
		}
		if (r != -EAGAIN) {
			lism_exec_debug(fd, "send: %s (state %#x, reader state %#x)", strerror((int)-r), c->map.tx.state,
			      c->map.tx.dir->cons.state);
			break;
		}
		if (nb < 0)
			nb = nonblocking(c, fd, flags);
		if (nb) {
			/* a full ring and a writable socket would spin an EPOLLOUT waiter,
			 * and a short count would leave an edge-triggered one waiting for
			 * an edge that never comes: TCP's back-pressure instead, in a run */
			r = lism_ring_tx_run_start(&c->map.tx);
			if (r)
				break;
			continue;
		}
		if (deadline == -2) {
			long t = sndtimeo_ms(fd);

			deadline = t < 0 ? -1 : now_ms() + t;
		}
		{
			/* the lock released as for the sleep: a signal handler's send
			 * on this socket goes on meanwhile */
			long left = deadline < 0 ? LONG_MAX / 1000000 : deadline - now_ms();
			bool room;

			tx_unlock(c, alone);
			room = left > 0 && spin_room(c, (__u64)left * 1000000);
			tx_relock(c, &alone);
			if (room)
				continue;
		}
		if (peer_gone(c, fd)) {
			lism_exec_debug(fd, "send: the reader's socket went");
			r = -EPIPE;
			break;
		}
		if (deadline >= 0 && now_ms() >= deadline) {
			r = -EAGAIN;
			break;
		}
		if (lism_ring_tx_arm(&c->map.tx)) {
			struct timespec ts = { 0, LISM_CONN_LIVENESS_MS * 1000000L };
			long slept;

			tx_unlock(c, alone); /* as tcp_look */
			slept = syscall(SYS_futex, &c->map.tx.dir->prod.writer_waits, FUTEX_WAIT, 1, &ts, NULL, 0);
			if (slept && errno == EINTR && !signals_restart()) {
				tx_relock(c, &alone);
				r = -EINTR;
				break;
			}
			tx_relock(c, &alone);
		}
	}
out:
	tx_unlock(c, alone);
	if (r == -EPIPE && !(flags & MSG_NOSIGNAL) && !put)
		raise(SIGPIPE);
	if (put)
		return (ssize_t)put;
	return r;
}

int lism_conn_shutdown(struct lism_conn *c, int fd, int how)
{
	if (how == SHUT_RD || how == SHUT_RDWR)
		__atomic_or_fetch(&c->flags, LISM_CONN_RD_SHUT, __ATOMIC_RELEASE); /* a blocked reader wakes at the FIN below */
	if (how == SHUT_WR || how == SHUT_RDWR) {
		lock(c, &c->tx_lock);
		lism_ring_tx_set_state(&c->map.tx, LISM_RING_DONE_WRITING); /* before the FIN: a reader that sees it sees this */
		pthread_mutex_unlock(&c->tx_lock);
	}
	return syscall(SYS_shutdown, fd, how) ? -errno : 0;
}

int lism_conn_unread(struct lism_conn *c, int fd)
{
	bool alone = tx_alone(c);
	ssize_t n = rx_lock(c, alone);
	int inq = 0;

	if (n)
		return (int)n; /* a recv this interrupted is at the cursors */
	n = lism_ring_unread(&c->map.rx);
	if (!n && c->map.rx.in_run) {
		/* at a run: its bytes on TCP, after the doorbells still there */
		bool final;
		ssize_t left = lism_ring_run_left(&c->map.rx, &final);

		if (left > 0 && !syscall(SYS_ioctl, fd, SIOCINQ, &inq)) {
			n = inq - (ssize_t)(c->map.rx.run_bells - c->map.rx.eaten);
			n = n < 0 ? 0 : n > left ? left : n;
		}
	}
	rx_unlock(c, alone);
	if (n == -EPROTO)
		return -ECONNRESET;
	return n < 0 ? (int)n : n > INT_MAX ? INT_MAX : (int)n;
}

ssize_t lism_conn_sendfile(struct lism_conn *c, int fd, ssize_t (*kernel)(void *arg, size_t n), void *arg,
			   size_t n)
{
	ssize_t r;

	lock(c, &c->tx_lock);
	r = run_start(c, fd, nonblocking(c, fd, 0));
	if (!r) {
		lism_ring_tx_run_add(&c->map.tx, (__s64)n);
		r = kernel(arg, n);
		lism_ring_tx_run_add(&c->map.tx, (r > 0 ? r : 0) - (__s64)n);
	}
	pthread_mutex_unlock(&c->tx_lock);
	return r;
}
