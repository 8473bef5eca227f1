// SPDX-License-Identifier: GPL-2.0-only
/*
 * liblism.so: the socket calls of an unmodified program, preloaded by
 * `lism exec` (docs/exec.md).  It marks TCP sockets before connect() and
 * listen() (include/lism/exec.h), and at a socket's first call after its
 * handshake reads the pair's decision: RING takes the ring from the device
 * and serves the calls from it (exec/conn.c); anything else leaves the
 * socket to the kernel for its whole life.  The ring's doorbells make the
 * kernel's readiness right, but for bytes a reader's spin or look made
 * silent (exec/bell.h); poll, select and epoll are interposed to say
 * those and to spin on rings before they sleep (exec/poll.c).
 *
 * Rules:
 * - A socket is a ring socket only through a table entry made here (at
 *   connect, at accept, or inherited across exec and found at start); every
 *   call that closes or replaces an fd (close, dup2, dup3, close_range,
 *   closefrom) drops its entry first.  Other fds cost one table load.
 * - Entries are never freed, only reused: a call that loaded one holds a
 *   reference, taken only while the entry is live and checked against the
 *   table after, so a close on another thread cannot pull the ring from
 *   under it.
 * - Calls that read or write a ring socket and are not served here
 *   (stdio on the socket, io_uring, raw syscalls) are not supported: they
 *   would see doorbells as bytes.  docs/exec.md lists them.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "exec/conn.h"
#include "exec/fence.h"
#include "exec/preload.h"
#include "exec/spin.h"

#define EXPORT /* exported: exec/liblism.map */

enum { FD_PENDING = 1, FD_RING, FD_ABORTED };

struct fdent {
	int refs;                /* the table's reference, dups, and calls in flight; 0: free */
	int state;               /* FD_* */
	int shared;              /* a wait elsewhere may watch it: fork, exec, EPOLLONESHOT, SCM_RIGHTS, ... */
	pthread_mutex_t setup;   /* the decision, once */
	struct lism_conn *conn;  /* FD_RING */
	struct fdent *next_free;
};

#define CHUNK_BITS 10
#define CHUNKS 1024 /* 1M fds */
static struct fdent **table[CHUNKS];
/* The device, as $LISM_DEVICE said at start: servers clear their
 * environment before they fork workers (nginx keeps only TZ). */
static char device_path[LISM_DEVICE_PATH_MAX];
/* the device's rings are another version (decide()): no more sockets are marked */
static int rings_off;
/* a wait this library cannot follow was seen (lism_fd_unseen_wait): 1 while
 * every ring is being shared, 2 once they are; new rings are shared too */
static int unseen_waits;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fdent *pool;

/* The next symbols: libc's own. */
static struct {
	int (*connect)(int, const struct sockaddr *, socklen_t);
	int (*listen)(int, int);
	int (*accept4)(int, struct sockaddr *, socklen_t *, int);
	ssize_t (*read)(int, void *, size_t);
	ssize_t (*readv)(int, const struct iovec *, int);
	ssize_t (*recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
	ssize_t (*recvmsg)(int, struct msghdr *, int);
	ssize_t (*write)(int, const void *, size_t);
	ssize_t (*writev)(int, const struct iovec *, int);
	ssize_t (*sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
	ssize_t (*sendmsg)(int, const struct msghdr *, int);
	int (*close)(int);
	int (*shutdown)(int, int);
	int (*ioctl)(int, unsigned long, ...);
	int (*fcntl)(int, int, ...);
	int (*dup)(int);
	int (*dup2)(int, int);
	int (*dup3)(int, int, int);
	ssize_t (*sendfile)(int, int, off_t *, size_t);
	ssize_t (*splice)(int, loff_t *, int, loff_t *, size_t, unsigned int);
	int (*close_range)(unsigned int, unsigned int, int);
	void (*closefrom)(int);
	int (*prctl)(int, ...);
} real;

static void resolve(void)
{
#define R(name) real.name = dlsym(RTLD_NEXT, #name)
	R(connect); R(listen); R(accept4); R(read); R(readv); R(recvfrom); R(recvmsg); R(write);
	R(writev); R(sendto); R(sendmsg); R(close); R(shutdown); R(ioctl); R(fcntl); R(dup); R(dup2);
	R(dup3); R(sendfile); R(splice); R(close_range); R(closefrom); R(prctl);
#undef R
}

#define REAL(name) (real.name ? real.name : (resolve(), real.name))

static struct fdent **slot(int fd, int make)
{
	struct fdent **chunk;
	unsigned int c = (unsigned int)fd >> CHUNK_BITS;

	if (fd < 0 || c >= CHUNKS)
		return NULL;
	chunk = __atomic_load_n(&table[c], __ATOMIC_ACQUIRE);
	if (!chunk && make) {
		struct fdent **fresh = calloc(1u << CHUNK_BITS, sizeof(*fresh));

		if (!fresh)
			return NULL;
		if (!__atomic_compare_exchange_n(&table[c], &chunk, fresh, false, __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE))
			free(fresh); /* another thread made it: chunk holds it now */
		else
			chunk = fresh;
	}
	return chunk ? &chunk[fd & ((1u << CHUNK_BITS) - 1)] : NULL;
}

static struct fdent *ent_new(int state)
{
	struct fdent *e;

	pthread_mutex_lock(&pool_lock);
	e = pool;
	if (e)
		pool = e->next_free;
	pthread_mutex_unlock(&pool_lock);
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e)
			return NULL;
		pthread_mutex_init(&e->setup, NULL);
	}
	e->state = state;
	e->shared = 0;
	e->conn = NULL;
	__atomic_store_n(&e->refs, 1, __ATOMIC_RELEASE);
	return e;
}


/*
 * Drop a reference; the last one unmaps the ring.  @fd only from the close
 * path (ent_drop), where the fd is still open: a call's reference may be
 * the last only after a close on another thread, when the number may
 * already name another file (-1 then).
 */
static void ent_put(struct fdent *e, int fd)
{
	/* one thread (lism_conn_one_thread): plain loads and stores; a signal
	 * handler's calls give back every reference they take */
	if (lism_conn_one_thread()) {
		int refs = __atomic_load_n(&e->refs, __ATOMIC_RELAXED) - 1;

		__atomic_store_n(&e->refs, refs, __ATOMIC_RELAXED);
		if (refs)
			return;
	} else if (__atomic_sub_fetch(&e->refs, 1, __ATOMIC_ACQ_REL))
		return;
	if (e->conn)
		lism_conn_release(e->conn, fd);
	e->conn = NULL;
	pthread_mutex_lock(&pool_lock);
	e->next_free = pool;
	pool = e;
	pthread_mutex_unlock(&pool_lock);
}

/* The entry of @fd with a reference held, or NULL: a plain fd. */
static struct fdent *ent_get(int fd)
{
	struct fdent **s = slot(fd, 0), *e;
	int refs;

	if (!s || !(e = __atomic_load_n(s, __ATOMIC_ACQUIRE)))
		return NULL;
	refs = __atomic_load_n(&e->refs, __ATOMIC_ACQUIRE);
	if (lism_conn_one_thread()) { /* nobody closes it meanwhile (ent_put) */
		if (!refs)
			return NULL;
		__atomic_store_n(&e->refs, refs + 1, __ATOMIC_RELAXED);
		return e;
	}
	do {
		if (!refs)
			return NULL; /* freed meanwhile: the fd closed */
	} while (!__atomic_compare_exchange_n(&e->refs, &refs, refs + 1, true, __ATOMIC_ACQ_REL,
					      __ATOMIC_ACQUIRE));
	if (__atomic_load_n(s, __ATOMIC_ACQUIRE) != e) {
		ent_put(e, -1); /* reused for another fd */
		return NULL;
	}
	return e;
}

/* Set @fd's entry to @e (a reference the table now holds), dropping what it held. */
static void ent_set(int fd, struct fdent *e)
{
	struct fdent **s = slot(fd, e != NULL), *old;

	if (!s)
		return;
	old = __atomic_exchange_n(s, e, __ATOMIC_ACQ_REL);
	if (old)
		ent_put(old, -1);
}

/* Drop @fd's entry before the fd closes: the last reference eats owed doorbells while it can. */
static void ent_drop(int fd)
{
	struct fdent **s = slot(fd, 0), *old;

	lism_poll_forget(fd);
	if (s && (old = __atomic_exchange_n(s, NULL, __ATOMIC_ACQ_REL)))
		ent_put(old, fd);
}

static void ent_dup(int from, int to)
{
	struct fdent *e = ent_get(from);

	lism_poll_passed(from); /* a dup of an epoll fd: its changes are made through it too */
	lism_poll_fresh(to);    /* @to names a new file: a set kept under its number is stale */
	ent_set(to, e); /* the reference ent_get took is the new fd's */
}

/* A TCP socket's handshake is over (the decision can be read). */
static int established(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	return !getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) && ti.tcpi_state != TCP_SYN_SENT &&
	       ti.tcpi_state != TCP_SYN_RECV && ti.tcpi_state != TCP_CLOSE;
}

/*
 * The decision, at a socket's first call: RING takes the ring; KERNEL
 * leaves the fd plain; a failed attach of a RING pair resets it.  Not
 * before the handshake is over (the call then goes to the kernel).
 */
static void decide(int fd, struct fdent *e)
{
	struct lism_exec_info in;
	struct lism_exec_map m;
	struct linger lg = { 1, 0 };
	int err;

	pthread_mutex_lock(&e->setup);
	if (e->state != FD_PENDING || !established(fd))
		goto out;
	if (lism_exec_wait(fd, &in, 200) || in.mode != LISM_EXEC_RING) {
		e->state = 0;
		goto out;
	}
	if (!device_path[0])
		snprintf(device_path, sizeof(device_path), "%s", lism_exec_device_path());
	err = lism_exec_attach(fd, device_path, &m);
	if (!err) {
		if (!lism_conn_open(&m, &e->conn)) {
			int one = 1;

			/* a doorbell goes at once: Nagle would hold it behind an unacked one
			 * until the peer's delayed ACK (40 ms), and a spinning peer sends
			 * nothing back for an ACK to ride on */
			syscall(SYS_setsockopt, fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			e->conn->busy_us = lism_spin_bound_us(fd);
			__atomic_store_n(&e->state, FD_RING, __ATOMIC_SEQ_CST);
			/* after the state: lism_fd_unseen_wait sets its flag, then looks at the state */
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
			if (__atomic_load_n(&e->shared, __ATOMIC_SEQ_CST) || __atomic_load_n(&unseen_waits, __ATOMIC_SEQ_CST))
				lism_conn_set_shared(e->conn);
			goto out;
		}
		lism_exec_detach(&m);
	}
	/*
	 * A device of another release (its rings another version): this pair
	 * resets, and this process marks no more sockets, so that its later
	 * pairs take the kernel's path rather than reset too, until it restarts
	 * with the library of the device's release.
	 */
	if (err == -EPROTONOSUPPORT && !__atomic_exchange_n(&rings_off, 1, __ATOMIC_RELAXED))
		lism_exec_debug(fd, "the device at %s is of another release (its rings are not version %u): "
				"this process marks no more sockets; restart it to use rings", device_path,
				LISM_RING_VERSION);
	/* the peer may write into the ring already: reset, never fall back */
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	REAL(shutdown)(fd, SHUT_RDWR);
	e->state = FD_ABORTED;
out:
	pthread_mutex_unlock(&e->setup);
}

/*
 * The ring of @fd, with a reference in *@ep (NULL: the kernel's fd, *@ep
 * NULL too), or *@ep set and NULL returned with errno for a reset one.
 */
static struct lism_conn *ring_of(int fd, struct fdent **ep)
{
	struct fdent *e = ent_get(fd);

	*ep = NULL;
	if (!e)
		return NULL;
	if (e->state == FD_PENDING)
		decide(fd, e);
	switch (e->state) {
	case FD_RING:
		*ep = e;
		return e->conn;
	case FD_ABORTED:
		*ep = e;
		errno = ECONNRESET;
		return NULL;
	case FD_PENDING:
		ent_put(e, -1);
		return NULL; /* still connecting: the kernel answers */
	default:
		ent_put(e, -1);
		ent_drop(fd); /* KERNEL for good */
		return NULL;
	}
}

struct lism_conn *lism_fd_ring(int fd, void **ref)
{
	struct fdent *e = ent_get(fd);

	*ref = NULL;
	if (!e)
		return NULL;
	/* inherited across exec: a spin of the image before may have hidden bytes
	 * from the kernel (exec/bell.h), which the ring's open says */
	if (e->state == FD_PENDING && e->shared)
		decide(fd, e);
	if (e->state != FD_RING) { /* not decided yet: its first call decides, its doorbells wake */
		ent_put(e, -1);
		return NULL;
	}
	*ref = e;
	return e->conn;
}

void lism_fd_put(void *ref)
{
	if (ref)
		ent_put(ref, -1);
}

static void ent_share(int fd, struct fdent *e);
static void ent_share_now(int fd, struct fdent *e);
static void each_ent(void (*fn)(int fd, struct fdent *e));

bool lism_fd_kernel_alone(int fd)
{
	struct fdent *e = ent_get(fd);
	bool silent = false;

	if (e) {
		ent_share(fd, e);
		if (e->state == FD_RING)
			silent = lism_conn_kernel_alone(e->conn);
		ent_put(e, -1);
	}
	return silent;
}

void lism_fd_unseen_wait(const char *why)
{
	int was = 0;

	if (__atomic_load_n(&unseen_waits, __ATOMIC_ACQUIRE) == 2)
		return;
	if (!__atomic_compare_exchange_n(&unseen_waits, &was, 1, false, __ATOMIC_SEQ_CST, __ATOMIC_ACQUIRE)) {
		/* another thread shares them: this wait sleeps only once they are */
		while (__atomic_load_n(&unseen_waits, __ATOMIC_ACQUIRE) != 2)
			sched_yield();
		return;
	}
	lism_exec_debug(-1, "%s: this process's waits are not all liblism's; its rings neither spin nor look "
			    "from now on", why);
	__atomic_thread_fence(__ATOMIC_SEQ_CST); /* against decide's: it sees the flag, or this sees its ring */
	each_ent(ent_share_now);
	__atomic_store_n(&unseen_waits, 2, __ATOMIC_RELEASE);
}

bool lism_fd_known(int fd)
{
	struct fdent **s = slot(fd, 0);

	return s && __atomic_load_n(s, __ATOMIC_ACQUIRE);
}

static ssize_t answer(struct fdent *e, ssize_t r)
{
	ent_put(e, -1);
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* A call on a ring socket, or the kernel's: @call runs on the conn. */
#define ON_RING(fd, kernel, call)                              \
	do {                                                   \
		struct fdent *e_;                              \
		struct lism_conn *c_ = ring_of((fd), &e_);     \
		if (!e_)                                       \
			return kernel;                         \
		if (!c_) {                                     \
			ent_put(e_, -1);                       \
			return -1;                             \
		}                                              \
		return answer(e_, (call));                    \
	} while (0)

/* ---- sockets made: marked, and looked at when they are used ---- */

EXPORT int connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	int marked = sa && (sa->sa_family == AF_INET || sa->sa_family == AF_INET6) &&
		     !__atomic_load_n(&rings_off, __ATOMIC_RELAXED) && !lism_exec_mark(fd);
	int r = REAL(connect)(fd, sa, len), saved = errno;

	if (marked && (!r || errno == EINPROGRESS)) {
		struct fdent *e = ent_new(FD_PENDING);

		if (e)
			ent_set(fd, e);
	}
	errno = saved;
	return r;
}

EXPORT int listen(int fd, int backlog)
{
	if (!__atomic_load_n(&rings_off, __ATOMIC_RELAXED))
		(void)lism_exec_mark(fd); /* its children inherit the mark; it fails where it does not fit */
	return REAL(listen)(fd, backlog);
}

static int accepted(int fd)
{
	struct lism_exec_info in;

	if (fd >= 0) {
		int saved = errno;

		if (lism_fd_known(fd))
			lism_poll_stale(fd); /* an fd closed behind our back: its registrations were its file's */
		ent_set(fd, NULL); /* a stale entry of an fd closed behind our back */
		if (!lism_exec_info(fd, &in) && (in.flags & LISM_EXEC_I_MARKED)) {
			struct fdent *e = ent_new(FD_PENDING);

			if (e)
				ent_set(fd, e);
		}
		errno = saved;
	}
	return fd;
}

EXPORT int accept4(int fd, struct sockaddr *sa, socklen_t *len, int flags)
{
	return accepted(REAL(accept4)(fd, sa, len, flags));
}

EXPORT int accept(int fd, struct sockaddr *sa, socklen_t *len)
{
	return accepted(REAL(accept4)(fd, sa, len, 0));
}

/* ---- reads ---- */

EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	struct iovec v = { buf, n };

	ON_RING(fd, REAL(read)(fd, buf, n), lism_conn_recv(c_, fd, &v, 1, 0));
}

EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	if (n > buflen)
		abort(); /* what glibc's own does: __chk_fail */
	return read(fd, buf, n);
}

EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
	ON_RING(fd, REAL(readv)(fd, iov, iovcnt), lism_conn_recv(c_, fd, iov, iovcnt, 0));
}

static ssize_t recvfrom_ring(struct lism_conn *c, int fd, const struct iovec *v, int flags, struct sockaddr *sa,
			     socklen_t *len)
{
	ssize_t r = lism_conn_recv(c, fd, v, 1, flags);

	(void)sa;
	if (r >= 0 && len)
		*len = 0; /* TCP names no source */
	return r;
}

EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *sa, socklen_t *len)
{
	struct iovec v = { buf, n };

	if (flags & (MSG_OOB | MSG_ERRQUEUE | MSG_TRUNC))
		return REAL(recvfrom)(fd, buf, n, flags, sa, len);
	ON_RING(fd, REAL(recvfrom)(fd, buf, n, flags, sa, len), recvfrom_ring(c_, fd, &v, flags, sa, len));
}

EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	return recvfrom(fd, buf, n, flags, NULL, NULL);
}

EXPORT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
	if (n > buflen)
		abort();
	return recvfrom(fd, buf, n, flags, NULL, NULL);
}

EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags, struct sockaddr *sa,
			      socklen_t *len)
{
	if (n > buflen)
		abort();
	return recvfrom(fd, buf, n, flags, sa, len);
}

static ssize_t recvmsg_ring(struct lism_conn *c, int fd, struct msghdr *m, int flags)
{
	ssize_t r = lism_conn_recv(c, fd, m->msg_iov, (int)m->msg_iovlen, flags);

	if (r >= 0) {
		m->msg_namelen = 0;
		m->msg_controllen = 0;
		m->msg_flags = 0;
	}
	return r;
}

EXPORT ssize_t recvmsg(int fd, struct msghdr *m, int flags)
{
	if (flags & (MSG_OOB | MSG_ERRQUEUE | MSG_TRUNC))
		return REAL(recvmsg)(fd, m, flags);
	ON_RING(fd, REAL(recvmsg)(fd, m, flags), recvmsg_ring(c_, fd, m, flags));
}

/* ---- writes ---- */

EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	struct iovec v = { (void *)buf, n };

	ON_RING(fd, REAL(write)(fd, buf, n), lism_conn_send(c_, fd, &v, 1, 0));
}

EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	ON_RING(fd, REAL(writev)(fd, iov, iovcnt), lism_conn_send(c_, fd, iov, iovcnt, 0));
}

EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *sa, socklen_t len)
{
	struct iovec v = { (void *)buf, n };

	ON_RING(fd, REAL(sendto)(fd, buf, n, flags, sa, len), lism_conn_send(c_, fd, &v, 1, flags));
}

EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	return sendto(fd, buf, n, flags, NULL, 0);
}

/* Ring sockets passed to another process (SCM_RIGHTS): held there too. */
static void passing(const struct msghdr *m)
{
	const char *end = (const char *)m->msg_control + m->msg_controllen;

	if (!m->msg_control)
		return;
	/* the kernel's EINVAL for headers out of bounds: none read past them here */
	for (struct cmsghdr *h = CMSG_FIRSTHDR(m); h && h->cmsg_len >= CMSG_LEN(0) && (const char *)h + h->cmsg_len <= end;
	     h = CMSG_NXTHDR((struct msghdr *)m, h))
		if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS)
			for (size_t i = 0; i < (h->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
				int pfd;

				memcpy(&pfd, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
				if (lism_fd_known(pfd))
					(void)lism_fd_kernel_alone(pfd);
				lism_poll_passed(pfd);
			}
}

EXPORT ssize_t sendmsg(int fd, const struct msghdr *m, int flags)
{
	if (m && m->msg_controllen)
		passing(m);
	ON_RING(fd, REAL(sendmsg)(fd, m, flags), lism_conn_send(c_, fd, m->msg_iov, (int)m->msg_iovlen, flags));
}

struct kernel_call {
	int in, out;
	off_t *off;
	loff_t *off_in, *off_out;
	unsigned int flags;
};

static ssize_t kernel_sendfile(void *arg, size_t n)
{
	struct kernel_call *k = arg;
	ssize_t r = REAL(sendfile)(k->out, k->in, k->off, n);

	return r < 0 ? -errno : r;
}

static ssize_t kernel_splice(void *arg, size_t n)
{
	struct kernel_call *k = arg;
	ssize_t r = REAL(splice)(k->in, k->off_in, k->out, k->off_out, n, k->flags);

	return r < 0 ? -errno : r;
}

/* The kernel moves the bytes into a ring socket: they go in a run (exec/conn.h). */
EXPORT ssize_t sendfile(int out, int in, off_t *off, size_t n)
{
	struct kernel_call k = { .in = in, .out = out, .off = off };

	ON_RING(out, REAL(sendfile)(out, in, off, n), lism_conn_sendfile(c_, out, kernel_sendfile, &k, n));
}

EXPORT ssize_t sendfile64(int out, int in, off_t *off, size_t n)
{
	return sendfile(out, in, off, n);
}

/* The pipe takes what it takes: a short write leaves the rest in the stream. */
static ssize_t pipe_sink(void *arg, const void *buf, size_t n)
{
	ssize_t w = REAL(write)(*(int *)arg, buf, n);

	return w < 0 ? -errno : w;
}

/* splice out of a ring socket: copied, and only what the pipe took is read. */
static ssize_t splice_out(struct lism_conn *c, int fd, int pipe_fd, size_t n, unsigned int flags)
{
	char buf[65536];
	int size = REAL(fcntl)(pipe_fd, F_GETPIPE_SZ), queued = 0;

	if (size < 0 || REAL(ioctl)(pipe_fd, FIONREAD, &queued))
		return -errno;
	/* the room in bytes is an upper bound (a pipe counts slots): a blocking
	 * pipe may still wait in the write, as the kernel's splice would */
	if (n > (size_t)(size - queued))
		n = (size_t)(size - queued);
	if (n > sizeof(buf))
		n = sizeof(buf);
	if (!n)
		return -EAGAIN;
	return lism_conn_recv_into(c, fd, buf, n, (flags & SPLICE_F_NONBLOCK) ? MSG_DONTWAIT : 0, pipe_sink, &pipe_fd);
}

EXPORT ssize_t splice(int in, loff_t *off_in, int out, loff_t *off_out, size_t n, unsigned int flags)
{
	struct kernel_call k = { .in = in, .out = out, .off_in = off_in, .off_out = off_out, .flags = flags };
	struct fdent *e;
	struct lism_conn *c = ring_of(in, &e);

	if (c)
		return answer(e, splice_out(c, in, out, n, flags));
	if (e) {
		ent_put(e, -1);
		return -1;
	}
	ON_RING(out, REAL(splice)(in, off_in, out, off_out, n, flags), lism_conn_sendfile(c_, out, kernel_splice, &k, n));
}

EXPORT int shutdown(int fd, int how)
{
	ON_RING(fd, REAL(shutdown)(fd, how), lism_conn_shutdown(c_, fd, how));
}

/* ---- fds closed, copied, asked about ---- */

EXPORT int close(int fd)
{
	ent_drop(fd);
	return REAL(close)(fd);
}

EXPORT int dup(int fd)
{
	int r = REAL(dup)(fd);

	if (r >= 0)
		ent_dup(fd, r);
	return r;
}

EXPORT int dup2(int from, int to)
{
	int r;

	/* the kernel closes @to: owed doorbells eaten first, or the close is a reset */
	if (from != to && REAL(fcntl)(from, F_GETFD) >= 0)
		ent_drop(to);
	r = REAL(dup2)(from, to);

	if (r >= 0 && from != to)
		ent_dup(from, to);
	return r;
}

EXPORT int dup3(int from, int to, int flags)
{
	int r;

	if (from != to && REAL(fcntl)(from, F_GETFD) >= 0)
		ent_drop(to); /* as dup2 */
	r = REAL(dup3)(from, to, flags);

	if (r >= 0)
		ent_dup(from, to);
	return r;
}

EXPORT int close_range(unsigned int first, unsigned int last, int flags)
{
	if (!(flags & CLOSE_RANGE_CLOEXEC))
		for (unsigned int fd = first; fd <= last && fd < CHUNKS << CHUNK_BITS; fd++) {
			if (!table[fd >> CHUNK_BITS]) {
				fd |= (1u << CHUNK_BITS) - 1;
				continue;
			}
			ent_drop((int)fd);
		}
	return REAL(close_range)(first, last, flags);
}

EXPORT void closefrom(int lo)
{
	close_range(lo < 0 ? 0 : (unsigned int)lo, ~0u, 0);
}

/* O_NONBLOCK changed on a ring socket: its connection keeps it (no fcntl per call). */
static void nonblock_set(int fd, int on)
{
	struct fdent *e = ent_get(fd);

	if (!e)
		return;
	if (e->state == FD_RING)
		lism_conn_set_nonblock(e->conn, on);
	ent_put(e, -1);
}

EXPORT int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	long arg;
	int r;

	va_start(ap, cmd);
	arg = va_arg(ap, long);
	va_end(ap);
	r = REAL(fcntl)(fd, cmd, arg);
	if (r >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC))
		ent_dup(fd, r);
	if (r >= 0 && cmd == F_SETFL)
		nonblock_set(fd, arg & O_NONBLOCK);
	if (r >= 0 && cmd == F_SETFD)
		lism_poll_cloexec(fd, arg & FD_CLOEXEC);
	if (r >= 0 && cmd == F_SETFL && (arg & O_ASYNC) && lism_fd_known(fd))
		(void)lism_fd_kernel_alone(fd); /* SIGIO is the kernel's: doorbells for every stretch */
	return r;
}

EXPORT int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	long arg;

	va_start(ap, cmd);
	arg = va_arg(ap, long);
	va_end(ap);
	return fcntl(fd, cmd, arg);
}

EXPORT int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (req == FIONREAD) {
		struct fdent *e;
		struct lism_conn *c = ring_of(fd, &e);

		if (c) {
			int n = lism_conn_unread(c, fd);

			ent_put(e, -1);
			if (n < 0) {
				errno = -n;
				return -1;
			}
			*(int *)arg = n;
			return 0;
		}
		if (e) {
			ent_put(e, -1);
			return -1;
		}
	}
	if (req == FIONBIO) {
		int r = REAL(ioctl)(fd, req, arg);

		if (!r && arg)
			nonblock_set(fd, *(int *)arg);
		return r;
	}
	if (req == FIOCLEX || req == FIONCLEX) {
		int r = REAL(ioctl)(fd, req, arg);

		if (!r)
			lism_poll_cloexec(fd, req == FIOCLEX);
		return r;
	}
	if (req == FIOASYNC && arg && *(int *)arg && lism_fd_known(fd))
		(void)lism_fd_kernel_alone(fd); /* as fcntl's O_ASYNC */
	return REAL(ioctl)(fd, req, arg);
}

/*
 * A seccomp filter goes in (sshd's pre-auth child: read, write, poll and
 * futex for its socket, death at anything else liblism would call): every
 * socket is decided and its O_NONBLOCK read while that may be done, and
 * the rings reach TCP through read, write and poll from now on.
 */
static void sandbox(void)
{
	lism_poll_lazy_end(); /* while epoll_ctl is allowed */
	for (unsigned int c = 0; c < CHUNKS; c++) {
		if (!__atomic_load_n(&table[c], __ATOMIC_ACQUIRE))
			continue;
		for (unsigned int i = 0; i < 1u << CHUNK_BITS; i++) {
			int fd = (int)(c << CHUNK_BITS | i);
			struct fdent *e;
			struct lism_conn *conn = ring_of(fd, &e);

			if (conn)
				lism_conn_sandbox(conn, fd);
			if (e)
				ent_put(e, -1);
		}
	}
	lism_conn_sandbox(NULL, -1);
}

EXPORT int prctl(int option, ...)
{
	unsigned long a[4];
	va_list ap;

	va_start(ap, option);
	for (int i = 0; i < 4; i++)
		a[i] = va_arg(ap, unsigned long); /* as glibc's own: unused ones are whatever the registers hold */
	va_end(ap);
	if (option == PR_SET_SECCOMP)
		sandbox();
	return REAL(prctl)(option, a[0], a[1], a[2], a[3]);
}

/* Every socket of the table, for @fn (a reference held meanwhile). */
static void each_ent(void (*fn)(int fd, struct fdent *e))
{
	for (unsigned int c = 0; c < CHUNKS; c++) {
		if (!__atomic_load_n(&table[c], __ATOMIC_ACQUIRE))
			continue;
		for (unsigned int i = 0; i < 1u << CHUNK_BITS; i++) {
			int fd = (int)(c << CHUNK_BITS | i);
			struct fdent *e = ent_get(fd);

			if (e) {
				fn(fd, e);
				ent_put(e, -1);
			}
		}
	}
}

/*
 * ent_share with no lock (lism_fd_unseen_wait, whose caller may hold one
 * under an epoll set's lock): the flag is set first, and a decision in
 * flight looks at it after it made the ring (decide).
 */
static void ent_share_now(int fd, struct fdent *e)
{
	(void)fd;
	__atomic_store_n(&e->shared, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&e->state, __ATOMIC_SEQ_CST) == FD_RING)
		lism_conn_set_shared(e->conn);
}

static void ent_share(int fd, struct fdent *e)
{
	(void)fd;
	pthread_mutex_lock(&e->setup); /* against a decide in flight */
	e->shared = 1;
	if (e->state == FD_RING)
		lism_conn_set_shared(e->conn);
	pthread_mutex_unlock(&e->setup);
}

/* A fork: parent and child hold every socket there is now, so none is spun on again (spin.h). */
static void forking(void)
{
	each_ent(ent_share);
	lism_poll_lazy_end(); /* the other process may wait on the sets too */
}

/* The child: registered for fences again (exec/fence.h), its waits' sets its own. */
static void forked(void)
{
	lism_fence_forked();
	lism_poll_forked();
}

/*
 * At start: sockets this process inherited across exec from a process
 * that ran liblism (sshd's session, a re-exec'd server) are looked at like
 * new ones at their first call.
 */
__attribute__((constructor)) static void start(void)
{
	DIR *d;
	struct dirent *de;

	resolve();
	lism_conn_readers_look(); /* every wait is interposed from here on (exec/poll.c) */
	lism_fence_init();        /* and each one that sleeps can fence (carried counts) */
	pthread_atfork(forking, NULL, forked);
	snprintf(device_path, sizeof(device_path), "%s", lism_exec_device_path());
	d = opendir("/proc/self/fd");
	if (!d)
		return;
	while ((de = readdir(d))) {
		int fd = atoi(de->d_name);
		struct lism_exec_info in;

		if (de->d_name[0] < '0' || de->d_name[0] > '9' || fd == dirfd(d))
			continue;
		if (!lism_exec_info(fd, &in) && (in.flags & LISM_EXEC_I_PAIRED) && (in.flags & LISM_EXEC_I_MARKED) &&
		    in.mode != LISM_EXEC_KERNEL) {
			struct fdent *e = ent_new(FD_PENDING);

			if (e) {
				e->shared = 1; /* the process before the exec may live on (spin.h) */
				ent_set(fd, e);
			}
		}
	}
	closedir(d);
}
