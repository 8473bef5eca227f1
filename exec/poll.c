// SPDX-License-Identifier: GPL-2.0-only
/*
 * liblism.so's waits: poll, select and epoll over ring sockets (issue 28).
 * The kernel's readiness is right for a ring socket by its doorbells
 * (include/lism/ring.h), except for bytes whose doorbell a reader's spin
 * or look made silent (exec/bell.h): these wrappers say those from the
 * rings, and spin on the rings before the kernel's sleep, so that a
 * message that comes soon is seen without a doorbell, a wakeup or a
 * syscall (exec/spin.h).
 *
 * Rules:
 * - A wait that watches a decided ring socket for input first asks the
 *   kernel without sleeping; then it spins (its thread's budget), looking
 *   at the rings and, every LISM_SPIN_KERNEL_NS, at the kernel for the other
 *   fds; then it ends every spin (bell.h: bytes it hid are said here) and
 *   sleeps in the kernel for what is left of the caller's timeout.
 * - A ring socket is said readable from its ring when it has bytes counted
 *   or its writer's end: level-triggered, whenever that holds; edge-
 *   triggered (EPOLLET), only when the ring moved since it was last said.
 *   An event the kernel also returned is merged into one.
 * - epoll: every registration is kept per epoll fd (its data may be a ring
 *   socket's too: then the kernel's event is not filtered); those with
 *   EPOLLIN of ring sockets are spun on (EPOLLEXCLUSIVE too: several sets
 *   may say one event, as the kernel may).  A socket registered
 *   EPOLLONESHOT is the kernel's alone from then on, never spun on nor
 *   looked at (bell.h); bytes it had with no doorbell are said by a
 *   stand-in (oneshot_ctl).
 * - Readers look (bell.h, lism_bell_take_look) only while this library
 *   sees every wait of the process: an epoll fd it did not make (made
 *   before an exec, a dup of one), or one of its epoll fds waited on inside
 *   another wait (nested in an epoll set, in poll or select), turns looks
 *   and spins off for every ring of the process, for good
 *   (lism_fd_unseen_wait).
 * - ppoll, pselect, epoll_pwait and epoll_pwait2 (a signal mask) do not
 *   spin, but end any spin and say hidden bytes before they sleep; nor does
 *   any wait under a seccomp sandbox (exec/conn.h), which asks the kernel
 *   through the call the program made.
 * - A wait asleep in the kernel counts itself on each ring it watches
 *   (lism_conn_sleep_begin): nobody spins on those meanwhile.
 * - epoll_ctl of a ring socket the kernel's set holds already may be held
 *   back until the set's next wait (lazy registrations, below): every wait
 *   on a set applies its changes before it asks the kernel.
 */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "exec/conn.h"
#include "exec/fence.h"
#include "exec/preload.h"
#include "exec/spin.h"

#define EXPORT /* exported: exec/liblism.map */

static struct {
	int (*poll)(struct pollfd *, nfds_t, int);
	int (*ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
	int (*select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
	int (*pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *);
	int (*epoll_create)(int);
	int (*epoll_create1)(int);
	int (*epoll_ctl)(int, int, int, struct epoll_event *);
	int (*epoll_wait)(int, struct epoll_event *, int, int);
	int (*epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
	int (*epoll_pwait2)(int, struct epoll_event *, int, const struct timespec *, const sigset_t *);
} real;

static void resolve(void)
{
#define R(name) real.name = dlsym(RTLD_NEXT, #name)
	R(poll); R(ppoll); R(select); R(pselect); R(epoll_create); R(epoll_create1); R(epoll_ctl); R(epoll_wait); R(epoll_pwait); R(epoll_pwait2);
#undef R
}

#define REAL(name) (real.name ? real.name : (resolve(), real.name))

/* An epoll fd of this image waited on inside another wait (defined with the epoll sets). */
static void nested_wait(int fd);

/* ---- the rings a wait watches ---- */

struct ring {
	struct lism_conn *c;
	void *ref;
	int at;       /* its pollfd, its fd (select), its registration (epoll) */
	bool carried; /* its sleep_begin said CARRIED: fenced before the wait sleeps */
};

#define LOCAL_RINGS 32

struct waiter {
	struct ring *r;
	int nr, cap;
	/* the kernel's wait with @ms (0: none; -1: forever): events, or -1 and errno */
	int (*kernel)(struct waiter *w, int ms);
	/* the rings' readiness merged into the kernel's @n events: the total */
	int (*say)(struct waiter *w, int n);
	void *arg;
	struct eset *set;               /* epoll: the set it counts itself a waiter of (eset_leave) */
	bool asleep;                    /* counted asleep on each ring (lism_conn_sleep_begin) */
	struct ring local[LOCAL_RINGS]; /* on the stack: poll may be called from a signal handler */
};

static int waiter_add(struct waiter *w, int fd, int at)
{
	void *ref;
	struct lism_conn *c = lism_fd_ring(fd, &ref);

	if (!c)
		return 0;
	if (!w->r) {
		w->r = w->local;
		w->cap = LOCAL_RINGS;
	}
	if (w->nr == w->cap) {
		int cap = 2 * w->cap;
		struct ring *r = w->r == w->local ? malloc((size_t)cap * sizeof(*r))
						  : realloc(w->r, (size_t)cap * sizeof(*r));

		if (!r) {
			lism_fd_put(ref);
			/* the rings so far are spun on; the rest are the kernel's, which looks at no ring */
			lism_fd_unseen_wait("no memory for a wait's rings");
			return -ENOMEM;
		}
		if (w->r == w->local)
			memcpy(r, w->local, sizeof(w->local));
		w->r = r;
		w->cap = cap;
	}
	w->r[w->nr++] = (struct ring){ .c = c, .ref = ref, .at = at };
	return 0;
}

static void eset_leave(struct eset *s);

static void waiter_done(struct waiter *w)
{
	for (int i = 0; i < w->nr; i++)
		lism_fd_put(w->r[i].ref);
	if (w->r && w->r != w->local)
		free(w->r);
	w->nr = 0;
	if (w->set)
		eset_leave(w->set);
	w->set = NULL;
}

static long ms_since(__u64 t0)
{
	return (long)((lism_spin_now_ns() - t0) / 1000000);
}

/* The waits asleep end (a cancellation in the sleep too): the rings may be spun on again. */
static void waiter_wake(struct waiter *w)
{
	int saved = errno;

	if (w->asleep)
		for (int i = 0; i < w->nr; i++)
			lism_conn_sleep_end(w->r[i].c);
	w->asleep = false;
	errno = saved;
}

static void waiter_cleanup(void *arg)
{
	waiter_wake(arg);
	waiter_done(arg);
}

/*
 * The wait (rules above): the kernel's count with the rings' merged in,
 * or -1 and errno.  @spin: whether it may spin (no signal mask, no sandbox).
 */
static int wait_rings(struct waiter *w, int ms, bool spin)
{
	__u64 t0 = lism_spin_now_ns(), budget = 0, asked = 0;
	struct lism_spin sp;
	__u32 bound = 0;
	int n, kn = 0, spinning = 0;
	bool found = false, carried = false;

	n = w->kernel(w, 0);
	if (n < 0)
		return n;
	n = w->say(w, n);
	if (n || !ms)
		return n;
	for (int i = 0; spin && i < w->nr; i++)
		if (w->r[i].c->busy_us > bound && !__atomic_load_n(&w->r[i].c->shared, __ATOMIC_RELAXED))
			bound = w->r[i].c->busy_us;
	budget = lism_spin_budget_ns(bound);
	if (ms > 0 && budget > (__u64)ms * 1000000)
		budget = (__u64)ms * 1000000; /* the caller's timeout bounds it (two looks past at most) */
	for (int i = 0; budget && i < w->nr; i++)
		spinning += lism_conn_spin_begin(w->r[i].c);
	lism_spin_start(&sp, budget);
	sp.t0 = t0; /* its budget counts from the wait's start, as the timeout does */
	while (spinning && !found) {
		for (int i = 0; i < w->nr && !found; i++)
			found = lism_conn_ready(w->r[i].c);
		if (!found && sp.t - asked >= LISM_SPIN_KERNEL_NS) {
			asked = sp.t;
			kn = w->kernel(w, 0); /* the other fds, now and then */
			found = kn != 0; /* events, or an error (EINTR: a signal came, as to any wait) */
		}
		if (!found && !lism_spin_next(&sp))
			break;
	}
	if (spinning)
		lism_spin_result(found, bound);
	if (found && kn >= 0 && lism_conn_readers_looking()) {
		/* the process looks before it sleeps (bell.h): its spins' POLLING
		 * stays, and the next write to these rings is silent too */
		for (int i = 0; i < w->nr; i++)
			lism_conn_look_end(w->r[i].c);
		n = kn > 0 ? kn : w->kernel(w, 0);
		if (n < 0 || (n = w->say(w, n)))
			return n;
		kn = 0; /* said nothing (a late doorbell's event, filtered): sleep */
		found = false;
	}
	/* counted asleep on each ring, and every spin ended (this one's,
	 * another thread's) in the same operation: nobody spins on a ring
	 * while this sleeps, and bytes a spin hid are said here (bell.h) */
	for (int i = 0; i < w->nr; i++) {
		found |= lism_conn_sleep_begin(w->r[i].c, &w->r[i].carried);
		carried |= w->r[i].carried;
	}
	w->asleep = true;
	if (carried) { /* one fence for every ring whose writer may have carried (bell.h) */
		lism_fence_peers();
		for (int i = 0; i < w->nr; i++)
			if (w->r[i].carried)
				found |= lism_conn_fenced(w->r[i].c);
	}
	if (kn < 0) {
		n = kn;
		goto out;
	}
	if (found) {
		/* what the kernel said in the spin is taken (an edge): said now, with the rings */
		n = kn > 0 ? kn : w->kernel(w, 0);
		if (n < 0 || (n = w->say(w, n)))
			goto out;
	}
	for (;;) {
		int left = ms;

		if (ms > 0 && (left = ms - (int)ms_since(t0)) < 0)
			left = 0;
		n = w->kernel(w, left);
		if (n < 0)
			break;
		n = w->say(w, n);
		/* a wakeup by a late doorbell alone says nothing: sleep again */
		if (n || !left)
			break;
	}
out:
	waiter_wake(w);
	return n;
}

/* @w's wait, its references given back however it ends (a cancellation in the sleep too). */
static int waiter_run(struct waiter *w, int ms, bool spin)
{
	int n;

	pthread_cleanup_push(waiter_cleanup, w);
	n = wait_rings(w, ms, spin);
	pthread_cleanup_pop(0);
	waiter_done(w);
	return n;
}

/* ---- poll ---- */

struct poll_args {
	struct pollfd *fds;
	nfds_t nfds;
	const struct timespec *ts;
	const sigset_t *mask;
};

static int poll_kernel(struct waiter *w, int ms)
{
	struct poll_args *a = w->arg;

	if (!ms && lism_conn_sandboxed())
		return REAL(poll)(a->fds, a->nfds, 0); /* what the program calls is what its filter allows */
	if (!ms) { /* syscall(2): no cancellation point in a spin */
		struct timespec zero = { 0, 0 };

		return (int)syscall(SYS_ppoll, a->fds, a->nfds, &zero, NULL, (size_t)8);
	}
	if (!a->mask)
		return REAL(poll)(a->fds, a->nfds, ms);
	if (ms < 0)
		return REAL(ppoll)(a->fds, a->nfds, a->ts, a->mask);
	{
		struct timespec left = { ms / 1000, (ms % 1000) * 1000000L };

		return REAL(ppoll)(a->fds, a->nfds, &left, a->mask);
	}
}

static int poll_say(struct waiter *w, int n)
{
	struct poll_args *a = w->arg;

	for (int i = 0; i < w->nr; i++) {
		struct pollfd *p = &a->fds[w->r[i].at];

		if (!lism_conn_says(w->r[i].c, p->fd)) {
			if ((p->revents & (POLLIN | POLLRDNORM)) && !lism_conn_kernel_says(w->r[i].c, p->fd)) {
				p->revents &= (short)~(POLLIN | POLLRDNORM);
				n -= !p->revents;
			}
			continue;
		}
		n += !p->revents;
		p->revents |= (short)(p->events & (POLLIN | POLLRDNORM));
	}
	return n;
}

static int poll_rings(struct pollfd *fds, nfds_t nfds, int ms, const struct timespec *ts, const sigset_t *mask)
{
	struct poll_args a = { fds, nfds, ts, mask };
	struct waiter w = { .kernel = poll_kernel, .say = poll_say, .arg = &a };
	int n;

	for (nfds_t i = 0; i < nfds; i++) {
		if (fds[i].fd < 0)
			continue;
		nested_wait(fds[i].fd);
		if ((fds[i].events & (POLLIN | POLLRDNORM)) && waiter_add(&w, fds[i].fd, (int)i))
			break;
	}
	if (!w.nr) {
		waiter_done(&w);
		return mask ? REAL(ppoll)(fds, nfds, ts, mask) : REAL(poll)(fds, nfds, ms);
	}
	n = waiter_run(&w, ms, !mask && !lism_conn_sandboxed());
	return n;
}

static int ts_ms(const struct timespec *ts)
{
	if (!ts)
		return -1;
	if (ts->tv_sec > 1000000)
		return 1000000000;
	return (int)(ts->tv_sec * 1000 + (ts->tv_nsec + 999999) / 1000000);
}

EXPORT int poll(struct pollfd *fds, nfds_t nfds, int ms)
{
	return poll_rings(fds, nfds, ms, NULL, NULL);
}

EXPORT int __poll_chk(struct pollfd *fds, nfds_t nfds, int ms, size_t len)
{
	(void)len;
	return poll(fds, nfds, ms);
}

EXPORT int ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *ts, const sigset_t *mask)
{
	if (ts && (ts->tv_sec < 0 || ts->tv_nsec < 0))
		return REAL(ppoll)(fds, nfds, ts, mask); /* the kernel's EINVAL */
	if (!mask)
		return poll_rings(fds, nfds, ts_ms(ts), NULL, NULL);
	return poll_rings(fds, nfds, ts_ms(ts), ts, mask);
}

EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t nfds, const struct timespec *ts, const sigset_t *mask, size_t len)
{
	(void)len;
	return ppoll(fds, nfds, ts, mask);
}

/* ---- select ---- */

/* fd sets as the kernel reads them: nfds bits, any number (no FD_SETSIZE,
 * whose fortified macros abort past it) */
#define LONG_BITS (8 * (int)sizeof(unsigned long))

static bool bit_isset(const fd_set *set, int fd)
{
	return ((const unsigned long *)set)[fd / LONG_BITS] >> (fd % LONG_BITS) & 1;
}

static void bit_set(fd_set *set, int fd, bool on)
{
	unsigned long *w = &((unsigned long *)set)[fd / LONG_BITS], m = 1ul << (fd % LONG_BITS);

	*w = on ? *w | m : *w & ~m;
}

struct select_args {
	int nfds;
	size_t bytes;            /* of each set the caller passed */
	fd_set *sets[3];
	unsigned long *in[3];    /* the caller's sets, each kernel call starts from them */
	const sigset_t *mask;
	const struct timespec *ts;
};

static int select_kernel(struct waiter *w, int ms)
{
	struct select_args *a = w->arg;

	for (int i = 0; i < 3; i++)
		if (a->sets[i])
			memcpy(a->sets[i], a->in[i], a->bytes); /* select writes its sets */
	if (!ms && lism_conn_sandboxed()) {
		struct timeval zero = { 0, 0 };

		return REAL(select)(a->nfds, a->sets[0], a->sets[1], a->sets[2], &zero);
	}
	if (!ms) {
		struct timespec zero = { 0, 0 };

		return (int)syscall(SYS_pselect6, a->nfds, a->sets[0], a->sets[1], a->sets[2], &zero, NULL);
	}
	if (a->mask || ms > 0) {
		struct timespec left = { ms / 1000, (ms % 1000) * 1000000L };

		return REAL(pselect)(a->nfds, a->sets[0], a->sets[1], a->sets[2], ms < 0 ? NULL : &left, a->mask);
	}
	return REAL(select)(a->nfds, a->sets[0], a->sets[1], a->sets[2], NULL);
}

static int select_say(struct waiter *w, int n)
{
	struct select_args *a = w->arg;

	for (int i = 0; i < w->nr; i++) {
		int fd = w->r[i].at;

		if (!lism_conn_says(w->r[i].c, fd)) {
			if (n > 0 && bit_isset(a->sets[0], fd) && !lism_conn_kernel_says(w->r[i].c, fd)) {
				bit_set(a->sets[0], fd, false);
				n--;
			}
			continue;
		}
		if (n <= 0) { /* the kernel said nothing: its sets are empty */
			n = 0;
			for (int k = 0; k < 3; k++)
				if (a->sets[k])
					memset(a->sets[k], 0, a->bytes);
		}
		if (!bit_isset(a->sets[0], fd)) {
			bit_set(a->sets[0], fd, true);
			n++;
		}
	}
	return n;
}

static int select_rings(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, int ms, const struct timespec *ts,
			const sigset_t *mask, struct timeval *tv)
{
	struct select_args a = { .nfds = nfds, .sets = { rd, wr, ex }, .mask = mask, .ts = ts };
	struct waiter w = { .kernel = select_kernel, .say = select_say, .arg = &a };
	unsigned long local[3][FD_SETSIZE / LONG_BITS], *heap = NULL;
	__u64 t0 = lism_spin_now_ns();
	int n;

	for (int fd = 0; rd && fd < nfds; fd++) {
		if (!bit_isset(rd, fd))
			continue;
		nested_wait(fd);
		if (waiter_add(&w, fd, fd))
			break;
	}
	if (!w.nr) {
		waiter_done(&w);
		if (mask || ts)
			return REAL(pselect)(nfds, rd, wr, ex, ts, mask);
		return REAL(select)(nfds, rd, wr, ex, tv);
	}
	a.bytes = (size_t)(nfds + LONG_BITS - 1) / LONG_BITS * sizeof(unsigned long);
	if (a.bytes > sizeof(local[0]) && !(heap = malloc(3 * a.bytes))) {
		waiter_done(&w);
		errno = ENOMEM;
		return -1;
	}
	for (int i = 0; i < 3; i++) {
		a.in[i] = heap ? (unsigned long *)((char *)heap + i * a.bytes) : local[i];
		if (a.sets[i])
			memcpy(a.in[i], a.sets[i], a.bytes);
	}
	n = waiter_run(&w, ms, !mask && !lism_conn_sandboxed());
	free(heap);
	if (tv && ms > 0) { /* Linux's select says the time left */
		long left = ms - ms_since(t0);

		left = left < 0 ? 0 : left;
		tv->tv_sec = left / 1000;
		tv->tv_usec = (left % 1000) * 1000;
	}
	return n;
}

EXPORT int select(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv)
{
	int ms = tv ? (tv->tv_sec > 1000000 ? 1000000000 : (int)(tv->tv_sec * 1000 + (tv->tv_usec + 999) / 1000)) : -1;

	if (tv && (tv->tv_sec < 0 || tv->tv_usec < 0))
		return REAL(select)(nfds, rd, wr, ex, tv); /* the kernel's EINVAL */
	return select_rings(nfds, rd, wr, ex, ms, NULL, NULL, tv);
}

EXPORT int pselect(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, const struct timespec *ts, const sigset_t *mask)
{
	if (ts && (ts->tv_sec < 0 || ts->tv_nsec < 0))
		return REAL(pselect)(nfds, rd, wr, ex, ts, mask);
	return select_rings(nfds, rd, wr, ex, ts_ms(ts), ts, mask, NULL);
}

/* ---- epoll ---- */

/* A registration of an epoll fd, as epoll_ctl made it (every fd's: the
 * data of one may be another's too). */
struct reg {
	__u32 events;
	int used;
	int ring_at; /* its place in rings[]: a ring socket's spun on; -1 */
	__u64 data;
	__u64 said;  /* EPOLLET: the ring's producer and state when it was last said */
	int standin; /* EPOLLONESHOT over silent bytes: the eventfd in the kernel's set for it; -1 */
	int wake;    /* put in while waits ran, over silent bytes: the eventfd that wakes one; -1 */
	/* lazy registrations (below) */
	int kin;     /* the kernel's set holds the fd, by a registration a MOD may change */
	int dirty;   /* the application's changed since: the next wait on the set applies it */
	int added;   /* the change held back is an ADD (after a DEL held back) */
};

struct eset {
	pthread_mutex_t lock;
	int epfd;
	int made;        /* by this image's epoll_create (an epoll fd it can follow), and not closed since */
	int waiting;     /* waits on the set that collected their rings and have not ended */
	int cap;         /* of by_fd */
	struct reg *by_fd;
	int nring, ring_cap;
	int *rings;      /* the fds a wait spins on */
	int cloexec;     /* made close-on-exec: no exec'd image inherits it with changes not applied */
	int ndirty, dirty_cap;
	int *dirty;      /* the fds whose registrations wait for the set's next wait */
};

#define ESETS 65536
/* never freed: a thread may wait on an epoll fd another closes (the kernel allows it) */
static struct eset *esets[ESETS];
static int esets_end; /* above the highest epoll fd with a set */
static int regs;      /* ring registrations in every set: 0 and a close looks nowhere */

static struct eset *eset_of(int epfd, bool make)
{
	struct eset *s, *fresh;

	if (epfd < 0 || epfd >= ESETS)
		return NULL;
	s = __atomic_load_n(&esets[epfd], __ATOMIC_ACQUIRE);
	if (s || !make)
		return s;
	fresh = calloc(1, sizeof(*fresh));
	if (!fresh)
		return NULL;
	pthread_mutex_init(&fresh->lock, NULL);
	fresh->epfd = epfd;
	if (!__atomic_compare_exchange_n(&esets[epfd], &s, fresh, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		free(fresh);
		return s;
	}
	for (int end = __atomic_load_n(&esets_end, __ATOMIC_RELAXED); end <= epfd;)
		if (__atomic_compare_exchange_n(&esets_end, &end, epfd + 1, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			break;
	return fresh;
}

static void ring_drop(struct eset *s, int fd)
{
	struct reg *r = &s->by_fd[fd];
	int last;

	if (r->ring_at < 0)
		return;
	last = s->rings[--s->nring];
	s->rings[r->ring_at] = last;
	s->by_fd[last].ring_at = r->ring_at;
	r->ring_at = -1;
	__atomic_sub_fetch(&regs, 1, __ATOMIC_RELAXED);
}

/* An eventfd of this library's, always readable, in @s's kernel set with @ev: its fd, or -1 and errno. */
static int eventfd_add(struct eset *s, const struct epoll_event *ev)
{
	int e = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);

	if (e >= 0 && REAL(epoll_ctl)(s->epfd, EPOLL_CTL_ADD, e, (struct epoll_event *)ev)) {
		int saved = errno;

		syscall(SYS_close, e);
		errno = saved;
		e = -1;
	}
	return e;
}

/* An eventfd of this library's out of @s's kernel set, and closed (a copy a fork made is the child's). */
static void eventfd_drop(struct eset *s, int e)
{
	if (e >= 0) {
		REAL(epoll_ctl)(s->epfd, EPOLL_CTL_DEL, e, NULL);
		syscall(SYS_close, e);
	}
}

static void standin_drop(struct eset *s, struct reg *r)
{
	eventfd_drop(s, r->standin);
	r->standin = -1;
}

/*
 * Lazy registrations.  Event loops built on ae (redis, redis-benchmark,
 * wrk) register a socket for output after each request and take it out
 * after each write: two EPOLL_CTL_DELs and two ADDs a request, ~1 us of
 * allocating and freeing epitems here, which MODs (~0.27 us for two)
 * avoid.  So a registration of a ring socket that the kernel holds already
 * follows the application's DEL, ADD and MOD in this set's table alone,
 * and the set's next wait applies what changed with one MOD (or the
 * DEL) before it asks the kernel.  The kernel's set differs from the
 * application's only while no wait on it runs, so no wait sees the
 * difference:
 * - never while a wait on the set runs (the call goes to the kernel), nor
 *   for a set this image did not make, or one that is not close-on-exec
 *   (an exec'd image would inherit it unapplied);
 * - never once a wait or a change this library does not see may reach a
 *   set (a dup of it, a set nested in another wait or passed to another
 *   process, a fork, a sandbox): lism_poll_lazy_end applies everything
 *   first, for good;
 * - only calls that succeed: the first ADD of an fd, every call the kernel
 *   would refuse, and EPOLLONESHOT, EPOLLEXCLUSIVE and EPOLLWAKEUP go to
 *   the kernel (after the change held back), so their errors are its own;
 * - a close of the fd applies its change first (the fd names the file);
 *   an fd or a set closed behind this library's back is forgotten, its
 *   changes unapplied (reg_forget).
 * $LISM_EPOLL_LAZY=0 turns it off (the bench's ablation).
 */
#define LAZY_EVENTS (EPOLLIN | EPOLLPRI | EPOLLOUT | EPOLLERR | EPOLLHUP | EPOLLRDNORM | EPOLLRDBAND | \
		     EPOLLWRNORM | EPOLLWRBAND | EPOLLMSG | EPOLLRDHUP | EPOLLET)

static int lazy_off = -1; /* -1: $LISM_EPOLL_LAZY not read yet */

static bool lazy_ok(struct eset *s, const struct epoll_event *ev)
{
	int off = __atomic_load_n(&lazy_off, __ATOMIC_SEQ_CST);

	if (off < 0) {
		const char *v = getenv("LISM_EPOLL_LAZY");

		off = v && !strcmp(v, "0");
		__atomic_compare_exchange_n(&lazy_off, &(int){ -1 }, off, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		off = __atomic_load_n(&lazy_off, __ATOMIC_SEQ_CST);
	}
	return !off && s->made && s->cloexec && !s->waiting && !lism_conn_sandboxed() &&
	       (!ev || !(ev->events & ~(__u32)LAZY_EVENTS));
}

/* Apply @fd's registration to the kernel's set (@s locked). */
static void lazy_apply(struct eset *s, int fd)
{
	struct reg *r = &s->by_fd[fd];
	struct epoll_event ev = { .events = r->events, .data.u64 = r->data };
	int added = r->added;

	r->dirty = r->added = 0;
	if (!r->kin)
		return;
	if (!r->used) {
		REAL(epoll_ctl)(s->epfd, EPOLL_CTL_DEL, fd, NULL);
		r->kin = 0;
		return;
	}
	/* even when the kernel holds these events already: a DEL and an ADD
	 * re-arm an EPOLLET registration, and so does the MOD.  ENOENT after
	 * an ADD held back: the file the kernel held at @fd was closed behind
	 * this library's back; the ADD asked for the file there now. */
	if (REAL(epoll_ctl)(s->epfd, EPOLL_CTL_MOD, fd, &ev) &&
	    (errno != ENOENT || !added || REAL(epoll_ctl)(s->epfd, EPOLL_CTL_ADD, fd, &ev))) {
		lism_exec_debug(fd, "an epoll registration changed lazily could not be applied: %s", strerror(errno));
		r->kin = 0;
	}
}

/* Apply every change @s holds back (@s locked). */
static void lazy_apply_all(struct eset *s)
{
	for (int i = 0; i < s->ndirty; i++)
		if (s->dirty[i] < s->cap && s->by_fd[s->dirty[i]].dirty)
			lazy_apply(s, s->dirty[i]);
	s->ndirty = 0;
}

/* @fd's registration changed in the table alone: applied by the next wait, or now (no memory). */
static void lazy_mark(struct eset *s, int fd)
{
	struct reg *r = &s->by_fd[fd];

	if (r->dirty)
		return;
	if (s->ndirty == s->dirty_cap) {
		int cap = s->dirty_cap ? 2 * s->dirty_cap : 16;
		int *g = realloc(s->dirty, (size_t)cap * sizeof(*g));

		if (!g) {
			r->dirty = 1;
			lazy_apply(s, fd);
			return;
		}
		s->dirty = g;
		s->dirty_cap = cap;
	}
	r->dirty = 1;
	s->dirty[s->ndirty++] = fd;
}

static void eset_put(struct eset *s, int fd, const struct epoll_event *ev, bool ring);
static void eset_drop(struct eset *s, int fd);

/*
 * epoll_ctl on a known socket the kernel's set holds already (@s locked):
 * 1 and *@res if done in the table alone; else 0, with the kernel's set
 * made the application's first, for the caller's call to the kernel.
 */
static int lazy_ctl(struct eset *s, int op, int fd, struct epoll_event *ev, int *res)
{
	struct reg *r = fd >= 0 && fd < s->cap ? &s->by_fd[fd] : NULL;

	if (!r || !r->kin)
		return 0;
	/* only calls that succeed are answered here; the kernel says every
	 * error (EEXIST, ENOENT, EINVAL...) as it would have, once the
	 * change held back is applied */
	if (!lazy_ok(s, op == EPOLL_CTL_DEL ? NULL : ev) ||
	    !(op == EPOLL_CTL_ADD ? ev && !r->used : op == EPOLL_CTL_MOD ? ev && r->used : op == EPOLL_CTL_DEL && r->used)) {
		if (r->dirty)
			lazy_apply(s, fd);
		return 0;
	}
	if (op == EPOLL_CTL_DEL) {
		eset_drop(s, fd);
	} else {
		eset_put(s, fd, ev, ev->events & EPOLLIN);
		r->added |= op == EPOLL_CTL_ADD;
	}
	lazy_mark(s, fd);
	*res = 0;
	return 1;
}

/* The application's registration of @fd ends (the kernel's follows: eset_del, or a lazy DEL). */
static void eset_drop(struct eset *s, int fd)
{
	ring_drop(s, fd);
	standin_drop(s, &s->by_fd[fd]);
	eventfd_drop(s, s->by_fd[fd].wake);
	s->by_fd[fd].wake = -1;
	s->by_fd[fd].used = 0;
}

/* @fd leaves @s: its close, or the kernel's DEL done (a change held back is applied first). */
static void eset_del(struct eset *s, int fd)
{
	if (fd < 0 || fd >= s->cap)
		return;
	if (s->by_fd[fd].dirty)
		lazy_apply(s, fd); /* before the fd closes: a DEL held back names the file by it */
	s->by_fd[fd].kin = 0;
	if (s->by_fd[fd].used)
		eset_drop(s, fd);
}

/*
 * A ring socket put in @s (@s locked) while waits on @s run: they
 * collected their rings before it, so they would neither end its look nor
 * count themselves asleep on it (bell.h).  It is the kernel's alone from
 * then on (lism_fd_kernel_alone: its crossings ring), and if it held bytes
 * with no doorbell, a one-shot eventfd with its event wakes one of them.
 */
static void handed(struct eset *s, int fd)
{
	struct reg *r = &s->by_fd[fd];
	struct epoll_event wev = { .events = EPOLLIN | EPOLLONESHOT, .data.u64 = r->data };

	if (!s->waiting || !lism_fd_kernel_alone(fd))
		return;
	eventfd_drop(s, r->wake);
	r->wake = eventfd_add(s, &wev);
	if (r->wake < 0)
		lism_exec_debug(fd, "put in an epoll set being waited on, over bytes with no doorbell, and no eventfd to "
				    "wake a waiter: %s", strerror(errno));
}

static void eset_leave(struct eset *s)
{
	pthread_mutex_lock(&s->lock);
	s->waiting--;
	pthread_mutex_unlock(&s->lock);
}

/* A fork's child: none of its threads waits (the parent's counts are the parent's). */
void lism_poll_forked(void)
{
	for (int e = 0, end = __atomic_load_n(&esets_end, __ATOMIC_RELAXED); e < end; e++) {
		struct eset *s = __atomic_load_n(&esets[e], __ATOMIC_ACQUIRE);

		if (s)
			s->waiting = 0;
	}
}

/* Keep @fd's registration; @ring: a ring socket's to spin on. */
static void eset_put(struct eset *s, int fd, const struct epoll_event *ev, bool ring)
{
	struct reg *r;

	if (fd < 0)
		return;
	if (fd >= s->cap) {
		int cap = fd + 1 > 2 * s->cap ? fd + 1 : 2 * s->cap;
		struct reg *g = realloc(s->by_fd, (size_t)cap * sizeof(*g));

		if (!g) {
			if (ring) /* not spun on: the kernel's readiness alone, which looks at no ring */
				lism_fd_unseen_wait("no memory for an epoll registration");
			return;
		}
		for (int i = s->cap; i < cap; i++)
			g[i] = (struct reg){ .ring_at = -1, .standin = -1, .wake = -1 };
		s->by_fd = g;
		s->cap = cap;
	}
	r = &s->by_fd[fd];
	r->used = 1;
	r->events = ev->events;
	r->data = ev->data.u64;
	r->said = ~0ull;
	if (!ring) {
		ring_drop(s, fd);
		return;
	}
	if (r->ring_at >= 0)
		return;
	if (s->nring == s->ring_cap) {
		int cap = s->ring_cap ? 2 * s->ring_cap : 16;
		int *g = realloc(s->rings, (size_t)cap * sizeof(*g));

		if (!g) {
			lism_fd_unseen_wait("no memory for an epoll registration");
			return;
		}
		s->rings = g;
		s->ring_cap = cap;
	}
	r->ring_at = s->nring;
	s->rings[s->nring++] = fd;
	__atomic_add_fetch(&regs, 1, __ATOMIC_RELAXED);
	handed(s, fd);
}

/* Whether another registration of the set has @data too (its event would be @fd's). */
static bool data_shared(struct eset *s, int fd, __u64 data)
{
	for (int i = 0; i < s->cap; i++)
		if (i != fd && s->by_fd[i].used && s->by_fd[i].data == data)
			return true;
	return false;
}

void lism_poll_forget(int fd)
{
	struct eset *s;

	if (fd >= 0 && fd < ESETS && (s = __atomic_load_n(&esets[fd], __ATOMIC_ACQUIRE))) {
		/* the epoll fd itself: emptied, kept (a wait on it may still hold it) */
		pthread_mutex_lock(&s->lock);
		__atomic_store_n(&s->made, 0, __ATOMIC_RELAXED); /* its number may be a dup's next */
		/* a change held back is applied: a dup may keep the set open */
		for (int i = 0; i < s->cap; i++)
			eset_del(s, i);
		s->ndirty = 0;
		pthread_mutex_unlock(&s->lock);
	}
	if (!lism_fd_known(fd))
		return;
	for (int e = 0, end = __atomic_load_n(&esets_end, __ATOMIC_RELAXED); e < end; e++) {
		if (!(s = __atomic_load_n(&esets[e], __ATOMIC_ACQUIRE)))
			continue;
		pthread_mutex_lock(&s->lock);
		eset_del(s, fd);
		pthread_mutex_unlock(&s->lock);
	}
}

static bool made_here(struct eset *s)
{
	return s && __atomic_load_n(&s->made, __ATOMIC_RELAXED);
}

static void nested_wait(int fd)
{
	if (fd >= 0 && fd < ESETS && made_here(__atomic_load_n(&esets[fd], __ATOMIC_ACQUIRE))) {
		lism_fd_unseen_wait("an epoll fd waited on inside another wait");
		lism_poll_lazy_end();
	}
}

/* @fd's registration in @s was a file's closed behind this library's
 * back (@s locked): forgotten, nothing of it applied. */
static void reg_forget(struct eset *s, int fd)
{
	s->by_fd[fd].dirty = s->by_fd[fd].kin = s->by_fd[fd].added = 0;
	if (s->by_fd[fd].used)
		eset_drop(s, fd);
}

/* A new epoll fd numbered as @s (@made: this image made it): what @s kept
 * was a set closed behind this library's back. */
static void eset_renew(struct eset *s, int made, bool cloexec)
{
	pthread_mutex_lock(&s->lock);
	if (!made)
		__atomic_store_n(&s->made, 0, __ATOMIC_RELAXED);
	for (int i = 0; i < s->cap; i++)
		reg_forget(s, i);
	s->ndirty = 0;
	s->cloexec = cloexec;
	pthread_mutex_unlock(&s->lock);
	if (made)
		__atomic_store_n(&s->made, 1, __ATOMIC_RELAXED);
}

static int made(int epfd, bool cloexec)
{
	struct eset *s = eset_of(epfd, true);

	if (s)
		eset_renew(s, 1, cloexec);
	return epfd;
}

void lism_poll_fresh(int fd)
{
	struct eset *s = eset_of(fd, false);

	if (s)
		eset_renew(s, 0, false);
}

EXPORT int epoll_create(int size)
{
	return made(REAL(epoll_create)(size), false);
}

EXPORT int epoll_create1(int flags)
{
	return made(REAL(epoll_create1)(flags), flags & EPOLL_CLOEXEC);
}

void lism_poll_cloexec(int fd, bool on)
{
	struct eset *s = eset_of(fd, false);

	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	if (!on)
		lazy_apply_all(s);
	s->cloexec = on;
	pthread_mutex_unlock(&s->lock);
}

void lism_poll_lazy_end(void)
{
	static int ended;

	if (__atomic_load_n(&ended, __ATOMIC_ACQUIRE))
		return; /* applied everything after lazy_off was set: nothing is held back since */
	__atomic_store_n(&lazy_off, 1, __ATOMIC_SEQ_CST); /* a change after this sees it, under its set's lock */
	for (int e = 0, end = __atomic_load_n(&esets_end, __ATOMIC_SEQ_CST); e < end; e++) {
		struct eset *s = __atomic_load_n(&esets[e], __ATOMIC_ACQUIRE);

		if (!s)
			continue;
		pthread_mutex_lock(&s->lock);
		lazy_apply_all(s);
		pthread_mutex_unlock(&s->lock);
	}
	__atomic_store_n(&ended, 1, __ATOMIC_RELEASE);
}

void lism_poll_stale(int fd)
{
	for (int e = 0, end = __atomic_load_n(&esets_end, __ATOMIC_RELAXED); e < end; e++) {
		struct eset *s = __atomic_load_n(&esets[e], __ATOMIC_ACQUIRE);

		if (!s)
			continue;
		pthread_mutex_lock(&s->lock);
		if (fd < s->cap)
			reg_forget(s, fd);
		pthread_mutex_unlock(&s->lock);
	}
}

void lism_poll_passed(int fd)
{
	if (made_here(eset_of(fd, false)))
		lism_poll_lazy_end(); /* another process may wait on it */
}

/*
 * EPOLLONESHOT on a ring socket: the kernel's alone from then on (no spin,
 * no look), but bytes counted before may be silent (bell.h), and the
 * kernel would not say them.  While they are, an eventfd that is always
 * readable stands in for the socket in the kernel's set, with its events
 * and data: the wait that takes the shot reads the ring, as it would have
 * for a doorbell.  A MOD re-arms the stand-in while they still are, else
 * puts the socket itself in; a DEL, a MOD without EPOLLONESHOT, or a close
 * of the socket or the epoll fd ends it.  Called with @s locked.
 */
static int oneshot_ctl(struct eset *s, int epfd, int op, int fd, struct epoll_event *ev)
{
	struct reg *r = fd < s->cap && s->by_fd[fd].used ? &s->by_fd[fd] : NULL;
	struct epoll_event sev = *ev;
	bool silent;
	int e;

	/* the stand-in says input alone: an eventfd is writable whatever the socket is */
	sev.events &= ~(__u32)(EPOLLOUT | EPOLLWRNORM | EPOLLWRBAND);
	if (op == EPOLL_CTL_ADD && r) {
		errno = EEXIST;
		return -1;
	}
	if (op == EPOLL_CTL_MOD && !r)
		return REAL(epoll_ctl)(epfd, op, fd, ev); /* the kernel's answer (ENOENT) */
	silent = lism_fd_kernel_alone(fd) && (ev->events & (EPOLLIN | EPOLLRDNORM));
	if (r && r->standin >= 0) {
		if (silent) /* still: the stand-in again */
			return REAL(epoll_ctl)(epfd, EPOLL_CTL_MOD, r->standin, &sev) ? -1 : (eset_put(s, fd, ev, false), 0);
		standin_drop(s, r);
		op = EPOLL_CTL_ADD; /* the socket was never in the kernel's set */
	} else if (silent) {
		if (op == EPOLL_CTL_MOD && REAL(epoll_ctl)(epfd, EPOLL_CTL_DEL, fd, NULL))
			return -1;
		if ((e = eventfd_add(s, &sev)) < 0)
			return -1;
		eset_put(s, fd, ev, false);
		s->by_fd[fd].standin = e;
		lism_exec_debug(fd, "EPOLLONESHOT over bytes with no doorbell: eventfd %d stands in for it", e);
		return 0;
	}
	if (REAL(epoll_ctl)(epfd, op, fd, ev))
		return -1;
	eset_put(s, fd, ev, false);
	return 0;
}

EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	bool known = lism_fd_known(fd), ring;
	struct eset *s = NULL;
	int r;

	if (known && op != EPOLL_CTL_DEL && ev && (ev->events & EPOLLONESHOT) && (s = eset_of(epfd, true))) {
		pthread_mutex_lock(&s->lock);
		if (fd >= 0 && fd < s->cap && s->by_fd[fd].dirty)
			lazy_apply(s, fd); /* the kernel's set is the application's again */
		r = oneshot_ctl(s, epfd, op, fd, ev);
		if (fd >= 0 && fd < s->cap)
			s->by_fd[fd].kin = 0; /* one-shot: never lazy */
		pthread_mutex_unlock(&s->lock);
		return r;
	}
	if (known && (s = eset_of(epfd, op != EPOLL_CTL_DEL && ev))) {
		pthread_mutex_lock(&s->lock);
		if (fd < s->cap && s->by_fd[fd].used && s->by_fd[fd].standin >= 0) {
			if (op == EPOLL_CTL_ADD) {
				pthread_mutex_unlock(&s->lock);
				errno = EEXIST;
				return -1;
			}
			/* out of its one shot: the socket itself from now on (or nothing) */
			eset_del(s, fd);
			r = op == EPOLL_CTL_DEL ? 0 : REAL(epoll_ctl)(epfd, EPOLL_CTL_ADD, fd, ev);
			if (!r && op != EPOLL_CTL_DEL) /* level or edge: this library's waits say its silent bytes */
				eset_put(s, fd, ev, ev && (ev->events & EPOLLIN));
			pthread_mutex_unlock(&s->lock);
			return r;
		}
		if (lazy_ctl(s, op, fd, ev, &r)) {
			pthread_mutex_unlock(&s->lock);
			return r;
		}
		/* the kernel's call and the table's change under one lock: no
		 * lazy change of another thread's falls between them */
		r = REAL(epoll_ctl)(epfd, op, fd, ev);
		if (!r && op != EPOLL_CTL_DEL && ev && (ev->events & EPOLLIN) && !made_here(s))
			lism_fd_unseen_wait("a ring socket in an epoll fd liblism did not make");
		if (!r && (op == EPOLL_CTL_DEL || !ev)) {
			eset_del(s, fd);
		} else if (!r) {
			eset_put(s, fd, ev, ev->events & EPOLLIN);
			if (fd < s->cap && s->by_fd[fd].used) /* what the kernel holds now: a later change may be lazy */
				s->by_fd[fd].kin = !(ev->events & ~(__u32)LAZY_EVENTS);
		}
		pthread_mutex_unlock(&s->lock);
		return r;
	}
	r = REAL(epoll_ctl)(epfd, op, fd, ev);
	if (r)
		return r;
	if (op != EPOLL_CTL_DEL && !known)
		nested_wait(fd);
	ring = known && op != EPOLL_CTL_DEL && ev && (ev->events & EPOLLIN);
	/* every registration is kept: a ring's data may be another fd's too */
	s = eset_of(epfd, op != EPOLL_CTL_DEL && ev);
	if (!s) {
		if (ring) /* kept nowhere: waited on as the kernel's alone */
			lism_fd_unseen_wait("an epoll fd past liblism's table, or no memory for it");
		return r;
	}
	if (ring && !made_here(s))
		lism_fd_unseen_wait("a ring socket in an epoll fd liblism did not make");
	pthread_mutex_lock(&s->lock);
	if (fd >= 0 && fd < s->cap) /* not a socket this library knows: never lazy */
		s->by_fd[fd].dirty = s->by_fd[fd].kin = s->by_fd[fd].added = 0;
	if (op == EPOLL_CTL_DEL || !ev)
		eset_del(s, fd);
	else
		eset_put(s, fd, ev, ring);
	pthread_mutex_unlock(&s->lock);
	return r;
}

struct epoll_args {
	int epfd, max;
	struct epoll_event *ev;
	struct eset *set;
	const sigset_t *mask;
	const struct timespec *ts;
};

static int epoll_kernel(struct waiter *w, int ms)
{
	struct epoll_args *a = w->arg;

	if (!ms && lism_conn_sandboxed())
		return REAL(epoll_wait)(a->epfd, a->ev, a->max, 0);
	if (!ms)
		return (int)syscall(SYS_epoll_pwait, a->epfd, a->ev, a->max, 0, NULL, (size_t)8);
	if (!a->mask)
		return REAL(epoll_wait)(a->epfd, a->ev, a->max, ms);
	return REAL(epoll_pwait)(a->epfd, a->ev, a->max, ms, a->mask);
}

/* The ring's place and state, for EPOLLET: a move of either is a new edge. */
static __u64 ring_mark(struct lism_conn *c)
{
	const struct lism_ring_dir *d = c->map.rx.dir;

	return __atomic_load_n(&d->prod.cursor, __ATOMIC_ACQUIRE) ^
	       (__u64)__atomic_load_n(&d->prod.state, __ATOMIC_ACQUIRE) << 61;
}

static int epoll_say(struct waiter *w, int n)
{
	struct epoll_args *a = w->arg;

	if (n < 0)
		n = 0;
	pthread_mutex_lock(&a->set->lock);
	for (int i = 0; i < w->nr; i++) {
		int fd = w->r[i].at;
		struct reg *r = fd < a->set->cap && a->set->by_fd[fd].ring_at >= 0 ? &a->set->by_fd[fd] : NULL;
		bool ready = lism_conn_says(w->r[i].c, fd);
		__u64 mark;
		int k;

		if (!r)
			continue; /* unregistered meanwhile */
		for (k = 0; k < n && a->ev[k].data.u64 != r->data; k++)
			;
		if (!ready) {
			if (k < n && (a->ev[k].events & (EPOLLIN | EPOLLRDNORM)) && !data_shared(a->set, fd, r->data) &&
			    !lism_conn_kernel_says(w->r[i].c, fd)) {
				a->ev[k].events &= ~(__u32)(EPOLLIN | EPOLLRDNORM);
				if (!a->ev[k].events)
					a->ev[k] = a->ev[--n];
			}
			continue;
		}
		mark = ring_mark(w->r[i].c);
		if ((r->events & EPOLLET) && mark == r->said && k == n)
			continue; /* said already, and nothing came since */
		if (k == n) {
			if (n == a->max)
				continue; /* the next wait says it */
			a->ev[n].events = 0;
			a->ev[n++].data.u64 = r->data;
		}
		a->ev[k].events |= r->events & (EPOLLIN | EPOLLRDNORM);
		r->said = mark;
	}
	pthread_mutex_unlock(&a->set->lock);
	return n;
}

static int epoll_rings(int epfd, struct epoll_event *ev, int max, int ms, const struct timespec *ts,
		       const sigset_t *mask, bool pwait2)
{
	struct eset *s = eset_of(epfd, false);
	struct epoll_args a = { epfd, max, ev, s, mask, ts };
	struct waiter w = { .kernel = epoll_kernel, .say = epoll_say, .arg = &a };
	int n;

	if (!made_here(s)) {
		lism_fd_unseen_wait("a wait on an epoll fd liblism did not make");
		lism_poll_lazy_end(); /* a dup of a set: its changes held back apply now */
	}

	if (s) {
		pthread_mutex_lock(&s->lock);
		lazy_apply_all(s); /* the kernel's set is the application's from here to the wait's end */
		if (max > 0) {
			s->waiting++; /* a ring put in from now on is the kernel's alone (handed) */
			w.set = s;
			for (int i = 0; i < s->nring; i++)
				if (waiter_add(&w, s->rings[i], s->rings[i]))
					break;
		}
		pthread_mutex_unlock(&s->lock);
	}
	if (!w.nr) {
		pthread_cleanup_push(waiter_cleanup, &w);
		if (pwait2)
			n = REAL(epoll_pwait2)(epfd, ev, max, ts, mask);
		else
			n = mask ? REAL(epoll_pwait)(epfd, ev, max, ms, mask) : REAL(epoll_wait)(epfd, ev, max, ms);
		pthread_cleanup_pop(0);
		waiter_done(&w);
		return n;
	}
	n = waiter_run(&w, ms, !mask && !lism_conn_sandboxed());
	return n;
}

EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int max, int ms)
{
	return epoll_rings(epfd, ev, max, ms, NULL, NULL, false);
}

EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int max, int ms, const sigset_t *mask)
{
	return epoll_rings(epfd, ev, max, ms, NULL, mask, false);
}

EXPORT int epoll_pwait2(int epfd, struct epoll_event *ev, int max, const struct timespec *ts, const sigset_t *mask)
{
	return epoll_rings(epfd, ev, max, ts_ms(ts), ts, mask, true);
}
