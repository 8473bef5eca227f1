// SPDX-License-Identifier: GPL-2.0-only
/*
 * liblism.so's waits: poll, select and epoll over ring sockets (issue 28).
 * The kernel's readiness is right for a ring socket by its doorbells
 * (include/lism/ring.h); these wrappers only spin on the rings before the
 * kernel's sleep, so that a message that comes soon is seen without a
 * doorbell, a wakeup or a syscall (exec/bell.h, exec/spin.h).
 *
 * Rules:
 * - A wait that watches a decided ring socket for input first asks the
 *   kernel without sleeping; then it spins (its thread's budget), looking
 *   at the rings and, every LISM_SPIN_YIELD_NS, at the kernel for the other
 *   fds; then it ends every spin (bell.h: bytes it hid are said here) and
 *   sleeps in the kernel for what is left of the caller's timeout.
 * - A ring socket is said readable from its ring when it has bytes counted
 *   or its writer's end: level-triggered, whenever that holds; edge-
 *   triggered (EPOLLET), only when the ring moved since it was last said.
 *   An event the kernel also returned is merged into one.
 * - epoll: registrations with EPOLLIN of sockets liblism knows are kept per
 *   epoll fd (not EPOLLONESHOT or EPOLLEXCLUSIVE ones, which stay the
 *   kernel's alone).  An epoll fd made before an exec, or shared with
 *   another process after fork, is waited on as the kernel's alone.
 * - ppoll, pselect, epoll_pwait and epoll_pwait2 (a signal mask) do not
 *   spin, but end any spin and say hidden bytes before they sleep.
 */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "exec/conn.h"
#include "exec/preload.h"
#include "exec/spin.h"

#define EXPORT /* exported: exec/liblism.map */

static struct {
	int (*poll)(struct pollfd *, nfds_t, int);
	int (*ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
	int (*select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
	int (*pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *);
	int (*epoll_ctl)(int, int, int, struct epoll_event *);
	int (*epoll_wait)(int, struct epoll_event *, int, int);
	int (*epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
	int (*epoll_pwait2)(int, struct epoll_event *, int, const struct timespec *, const sigset_t *);
} real;

static void resolve(void)
{
#define R(name) real.name = dlsym(RTLD_NEXT, #name)
	R(poll); R(ppoll); R(select); R(pselect); R(epoll_ctl); R(epoll_wait); R(epoll_pwait); R(epoll_pwait2);
#undef R
}

#define REAL(name) (real.name ? real.name : (resolve(), real.name))

/* ---- the rings a wait watches ---- */

struct ring {
	struct lism_conn *c;
	void *ref;
	int at;       /* its pollfd, its fd (select), its registration (epoll) */
	int spinning; /* spin_begin said yes */
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
			return -ENOMEM; /* the rings so far are spun on; the rest are the kernel's */
		}
		if (w->r == w->local)
			memcpy(r, w->local, sizeof(w->local));
		w->r = r;
		w->cap = cap;
	}
	w->r[w->nr++] = (struct ring){ .c = c, .ref = ref, .at = at };
	return 0;
}

static void waiter_done(struct waiter *w)
{
	for (int i = 0; i < w->nr; i++)
		lism_fd_put(w->r[i].ref);
	if (w->r && w->r != w->local)
		free(w->r);
	w->nr = 0;
}

static long ms_since(__u64 t0)
{
	return (long)((lism_spin_now_ns() - t0) / 1000000);
}

/*
 * The wait (rules above): the kernel's count with the rings' merged in,
 * or -1 and errno.  @spin: whether it may spin (no signal mask).
 */
static int wait_rings(struct waiter *w, int ms, bool spin)
{
	__u64 t0 = lism_spin_now_ns(), budget = 0, t = 0, yielded = 0;
	__u32 bound = 0;
	int n, kn = 0, spinning = 0;
	bool found = false;

	n = w->kernel(w, 0);
	if (n < 0)
		return n;
	n = w->say(w, n);
	if (n || !ms)
		return n;
	for (int i = 0; spin && i < w->nr; i++)
		if (w->r[i].c->busy_us > bound && !w->r[i].c->shared)
			bound = w->r[i].c->busy_us;
	budget = lism_spin_budget_ns(bound);
	for (int i = 0; budget && i < w->nr; i++)
		spinning += w->r[i].spinning = lism_conn_spin_begin(w->r[i].c);
	if (spinning) {
		while (!found && (t = lism_spin_now_ns() - t0) < budget) {
			for (int i = 0; i < w->nr && !found; i++)
				found = lism_conn_ready(w->r[i].c);
			if (!found && t - yielded >= LISM_SPIN_YIELD_NS) {
				kn = w->kernel(w, 0); /* the other fds, now and then */
				if (kn < 0)
					return kn; /* EINTR: a signal came, as it may to any wait */
				found = kn > 0;
			}
			if (!found)
				lism_spin_relax(t, &yielded);
		}
	}
	/* every spin ends (and a spin on another thread: bell.h) before any sleep */
	for (int i = 0; i < w->nr; i++)
		found |= lism_conn_spin_end(w->r[i].c);
	if (spinning)
		lism_spin_result(found, t, bound);
	if (found) {
		/* what the kernel said in the spin is taken (an edge): said now, with the rings */
		n = kn > 0 ? kn : w->kernel(w, 0);
		if (n < 0)
			return n;
		n = w->say(w, n);
		if (n)
			return n;
	}
	for (;;) {
		int left = ms;

		if (ms > 0 && (left = ms - (int)ms_since(t0)) < 0)
			left = 0;
		n = w->kernel(w, left);
		if (n < 0)
			return n;
		n = w->say(w, n);
		/* a wakeup by a late doorbell alone says nothing: sleep again */
		if (n || !left)
			return n;
	}
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

		if (!lism_conn_ready(w->r[i].c)) {
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

	for (nfds_t i = 0; i < nfds && !lism_conn_sandboxed(); i++)
		if ((fds[i].events & (POLLIN | POLLRDNORM)) && fds[i].fd >= 0 && waiter_add(&w, fds[i].fd, (int)i))
			break;
	if (!w.nr) {
		waiter_done(&w);
		return mask ? REAL(ppoll)(fds, nfds, ts, mask) : REAL(poll)(fds, nfds, ms);
	}
	n = wait_rings(&w, ms, !mask);
	waiter_done(&w);
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
	if (!mask)
		return poll_rings(fds, nfds, ts_ms(ts), NULL, NULL);
	return poll_rings(fds, nfds, ts_ms(ts), ts, mask);
}

/* ---- select ---- */

struct select_args {
	int nfds;
	fd_set *sets[3], in[3];
	const sigset_t *mask;
	const struct timespec *ts;
};

static int select_kernel(struct waiter *w, int ms)
{
	struct select_args *a = w->arg;

	for (int i = 0; i < 3; i++)
		if (a->sets[i])
			*a->sets[i] = a->in[i]; /* select writes its sets: each call from the caller's */
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

		if (!lism_conn_ready(w->r[i].c)) {
			if (n > 0 && FD_ISSET(fd, a->sets[0]) && !lism_conn_kernel_says(w->r[i].c, fd)) {
				FD_CLR(fd, a->sets[0]);
				n--;
			}
			continue;
		}
		if (n <= 0) { /* the kernel said nothing: its sets are empty */
			n = 0;
			for (int k = 0; k < 3; k++)
				if (a->sets[k])
					FD_ZERO(a->sets[k]);
		}
		if (!FD_ISSET(fd, a->sets[0])) {
			FD_SET(fd, a->sets[0]);
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
	__u64 t0 = lism_spin_now_ns();
	int n;

	for (int fd = 0; rd && fd < nfds && fd < FD_SETSIZE && !lism_conn_sandboxed(); fd++)
		if (FD_ISSET(fd, rd) && waiter_add(&w, fd, fd))
			break;
	if (!w.nr) {
		waiter_done(&w);
		if (mask || ts)
			return REAL(pselect)(nfds, rd, wr, ex, ts, mask);
		return REAL(select)(nfds, rd, wr, ex, tv);
	}
	for (int i = 0; i < 3; i++)
		if (a.sets[i])
			a.in[i] = *a.sets[i];
	n = wait_rings(&w, ms, !mask);
	waiter_done(&w);
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

	return select_rings(nfds, rd, wr, ex, ms, NULL, NULL, tv);
}

EXPORT int pselect(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, const struct timespec *ts, const sigset_t *mask)
{
	return select_rings(nfds, rd, wr, ex, ts_ms(ts), ts, mask, NULL);
}

/* ---- epoll ---- */

struct reg {
	int fd;
	__u32 events;
	__u64 data;
	__u64 said; /* EPOLLET: the ring's producer and state when it was last said */
};

struct eset {
	pthread_mutex_t lock;
	int n, cap;
	struct reg *r;
};

#define ESETS 65536
static struct eset *esets[ESETS];
static int esets_end; /* above the highest epoll fd with a set */
static int regs;      /* registrations in every set: 0 and a close looks nowhere */

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
	if (!__atomic_compare_exchange_n(&esets[epfd], &s, fresh, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		free(fresh);
		return s;
	}
	for (int end = __atomic_load_n(&esets_end, __ATOMIC_RELAXED); end <= epfd;)
		if (__atomic_compare_exchange_n(&esets_end, &end, epfd + 1, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			break;
	return fresh;
}

static void eset_del(struct eset *s, int fd)
{
	for (int i = 0; i < s->n; i++)
		if (s->r[i].fd == fd) {
			s->r[i] = s->r[--s->n];
			__atomic_sub_fetch(&regs, 1, __ATOMIC_RELAXED);
			return;
		}
}

static void eset_put(struct eset *s, int fd, const struct epoll_event *ev)
{
	struct reg r = { .fd = fd, .events = ev->events, .data = ev->data.u64, .said = ~0ull };

	for (int i = 0; i < s->n; i++)
		if (s->r[i].fd == fd) {
			s->r[i] = r;
			return;
		}
	if (s->n == s->cap) {
		int cap = s->cap ? 2 * s->cap : 16;
		struct reg *g = realloc(s->r, (size_t)cap * sizeof(*g));

		if (!g)
			return; /* not spun on: the kernel's readiness alone, still right */
		s->r = g;
		s->cap = cap;
	}
	s->r[s->n++] = r;
	__atomic_add_fetch(&regs, 1, __ATOMIC_RELAXED);
}

void lism_poll_forget(int fd)
{
	struct eset *s;

	if (fd >= 0 && fd < ESETS && (s = __atomic_exchange_n(&esets[fd], NULL, __ATOMIC_ACQ_REL))) {
		/* the epoll fd itself: a wait on it now is the caller's bug, as with the kernel's */
		__atomic_sub_fetch(&regs, s->n, __ATOMIC_RELAXED);
		free(s->r);
		free(s);
	}
	if (!__atomic_load_n(&regs, __ATOMIC_RELAXED) || !lism_fd_known(fd))
		return;
	for (int e = 0, end = __atomic_load_n(&esets_end, __ATOMIC_RELAXED); e < end; e++) {
		if (!(s = __atomic_load_n(&esets[e], __ATOMIC_ACQUIRE)))
			continue;
		pthread_mutex_lock(&s->lock);
		eset_del(s, fd);
		pthread_mutex_unlock(&s->lock);
	}
}

EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	int r = REAL(epoll_ctl)(epfd, op, fd, ev);
	struct eset *s;

	if (r)
		return r;
	if (op != EPOLL_CTL_DEL && ev && (ev->events & EPOLLIN) && !(ev->events & (EPOLLONESHOT | EPOLLEXCLUSIVE)) &&
	    lism_fd_known(fd))
		s = eset_of(epfd, true);
	else
		s = eset_of(epfd, false);
	if (!s)
		return r;
	pthread_mutex_lock(&s->lock);
	if (op != EPOLL_CTL_DEL && ev && (ev->events & EPOLLIN) && !(ev->events & (EPOLLONESHOT | EPOLLEXCLUSIVE)) &&
	    lism_fd_known(fd))
		eset_put(s, fd, ev);
	else
		eset_del(s, fd);
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
		struct reg *r = NULL;
		bool ready = lism_conn_ready(w->r[i].c);
		__u64 mark;
		int k;

		for (int j = 0; j < a->set->n; j++)
			if (a->set->r[j].fd == w->r[i].at)
				r = &a->set->r[j];
		if (!r)
			continue; /* unregistered meanwhile */
		for (k = 0; k < n && a->ev[k].data.u64 != r->data; k++)
			;
		if (!ready) {
			if (k < n && (a->ev[k].events & (EPOLLIN | EPOLLRDNORM)) &&
			    !lism_conn_kernel_says(w->r[i].c, r->fd)) {
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

	if (s && max > 0 && !lism_conn_sandboxed()) {
		pthread_mutex_lock(&s->lock);
		for (int i = 0; i < s->n; i++)
			if (waiter_add(&w, s->r[i].fd, s->r[i].fd))
				break;
		pthread_mutex_unlock(&s->lock);
	}
	if (!w.nr) {
		waiter_done(&w);
		if (pwait2)
			return REAL(epoll_pwait2)(epfd, ev, max, ts, mask);
		return mask ? REAL(epoll_pwait)(epfd, ev, max, ms, mask) : REAL(epoll_wait)(epfd, ev, max, ms);
	}
	n = wait_rings(&w, ms, !mask);
	waiter_done(&w);
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
