// SPDX-License-Identifier: GPL-2.0-only
#include <bpf/bpf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <linux/capability.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ablate.h"
#include "broker.h"
#include "exec/attach.h"
#include "exec/ring.h"
#include "exec/scm.h"
#include "lism/ablate.h"
#include "lism/abi.h"
#include "lism/exec.h"
#include "lism/token.h"
#include "pins.h"

/* How often pairs whose entries are gone give their memory back. */
#define SWEEP_TICKS (1000 / LISM_BROKER_TICK_MS)
/* Callers connected at once (each asks once and is answered at once). */
#define MAX_CLIENTS 256

struct ring_pair {
	__u64 token[2]; /* end 0 (active) and end 1 */
	int memfd;
	const struct lism_ring_hdr *hdr; /* its header, mapped read-only: the views' figures */
	__u64 seen[2][3]; /* each direction's bytes, doorbells and runs already in the totals */
};

struct lism_broker {
	pthread_t thread, reaper;
	int started, reaping, leased;
	pthread_mutex_t lock; /* stats */
	int lfd, efd, tfd, stopfd, reap[2];
	int broker_fd, socks_fd, dmbs_fd;
	int lfd_paused;       /* out of fds: not accepting until the next tick */
	__u32 dmb_size, capacity, epoch;
	__u64 gid;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	dev_t sock_dev;       /* the socket file this device made: only that one is removed */
	ino_t sock_ino;
	struct ring_pair *pairs;
	size_t n, cap;
	int clients[MAX_CLIENTS];
	size_t nclients;
	unsigned int ticks;
	struct lism_device_totals st;
};

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts); /* bpf_ktime_get_ns()'s clock */
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

static void count(struct lism_broker *b, __u64 *field)
{
	pthread_mutex_lock(&b->lock);
	(*field)++;
	b->st.held = (__u32)b->n;
	pthread_mutex_unlock(&b->lock);
}

static int lease(struct lism_broker *b, int on)
{
	struct lism_exec_lease v = { .tgid = (__u32)getpid(), .dmb_size = b->dmb_size, .epoch = b->epoch };
	__u32 zero = 0;

	v.until_ns = on ? mono_ns() + LISM_BROKER_LEASE_NS : 0;
	if (!on) {
		struct lism_exec_lease cur;

		/* only its own: another device may hold the lease by now */
		if (bpf_map_lookup_elem(b->broker_fd, &zero, &cur) || cur.epoch != b->epoch)
			return 0;
	}
	if (!bpf_map_update_elem(b->broker_fd, &zero, &v, BPF_ANY)) {
		b->leased |= on;
		return 0;
	}
	return -errno; /* a renewal that fails lets the lease lapse: new pairs stay on TCP until one takes */
}

static int read_entry(struct lism_broker *b, __u64 token, struct lism_dmb *e)
{
	__u32 slot = lism_token_slot(token);

	if (!lism_token_valid(token, b->capacity) || bpf_map_lookup_elem(b->dmbs_fd, &slot, e))
		return -ENOENT;
	return e->token == token ? 0 : -ENOENT;
}

/*
 * Received fds are closed on a thread of their own: the device may hold
 * the last reference of a caller's socket, whose close can sleep (SO_LINGER).
 */
static void *reaper(void *arg)
{
	struct lism_broker *b = arg;
	int fd;

	while (read(b->reap[0], &fd, sizeof(fd)) == sizeof(fd))
		close(fd);
	return NULL;
}

static void reap(struct lism_broker *b, int fd)
{
	if (!b->reaping || write(b->reap[1], &fd, sizeof(fd)) != sizeof(fd))
		close(fd);
}

/*
 * A sealed memfd laid out as a ring DMB pair: no end can shrink it under
 * the other's mapping.  Its header stays mapped, read-only, in *@hdr.
 */
static int make_ring(struct lism_broker *b, __u64 t0, __u64 t1, const struct lism_ring_hdr **hdr)
{
	__u64 size = lism_ring_region_size(b->dmb_size);
	int fd = memfd_create("lism-dmb", MFD_CLOEXEC | MFD_ALLOW_SEALING), err;
	void *base;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size)) {
		err = -errno;
		goto fail;
	}
	base = mmap(NULL, LISM_RING_HDR_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		err = -errno;
		goto fail;
	}
	err = lism_ring_init(base, size, b->dmb_size, b->gid, t0, t1); /* writes the header only */
	if (!err && mprotect(base, LISM_RING_HDR_SIZE, PROT_READ))
		err = -errno;
	if (!err && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL))
		err = -errno;
	if (!err) {
		*hdr = base;
		return fd;
	}
	munmap(base, LISM_RING_HDR_SIZE);
fail:
	close(fd);
	return err;
}

static struct ring_pair *find(struct lism_broker *b, __u64 t0, __u64 t1)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->pairs[i].token[0] == t0 && b->pairs[i].token[1] == t1)
			return &b->pairs[i];
	return NULL;
}

/*
 * The pair @sfd is an end of, checked against the maps; its memory in
 * *@memfd (the device's: not to be closed).  The caller's own entry must be
 * a ring pair's of this device's epoch, with the socket's cookie; its
 * peer's, while it is there, must name it back.  A peer already gone (it
 * wrote, closed and went before this end asked) does not stop this end:
 * what it wrote is in the ring.
 */
static int attach(struct lism_broker *b, int sfd, struct lism_device_ans *ans, int *memfd)
{
	const struct lism_ring_hdr *hdr = NULL;
	struct lism_dmb e, pe;
	struct lism_sk st;
	struct ring_pair *p;
	__u64 cookie = 0, t0, t1;
	socklen_t len = sizeof(int);
	int proto = 0, end, fd;

	if (getsockopt(sfd, SOL_SOCKET, SO_PROTOCOL, &proto, &len))
		return -errno; /* ENOTSOCK: not a socket */
	if (proto != IPPROTO_TCP)
		return -EPROTONOSUPPORT;
	len = sizeof(cookie);
	if (getsockopt(sfd, SOL_SOCKET, SO_COOKIE, &cookie, &len))
		return -errno;
	/* the socket's own lism state: an sk_storage map takes the socket's fd as its key */
	if (bpf_map_lookup_elem(b->socks_fd, &sfd, &st) || !st.token)
		return -ENOENT;
	/* its entry names its cookie: the socket passed is the one that paired, not a lookalike */
	if (read_entry(b, st.token, &e) || e.cookie != cookie || e.state != LISM_ST_CONFIRMED ||
	    LISM_EXEC_MODE(e.exec) != LISM_EXEC_RING)
		return -EPERM;
	if (e.exec_epoch != b->epoch)
		return -ESTALE; /* decided under another device's lease: its memory went with that device */
	end = e.role == LISM_ROLE_ACTIVE ? 0 : 1;
	t0 = end ? e.peer_token : e.token;
	t1 = end ? e.token : e.peer_token;
	p = find(b, t0, t1);
	if (!p && !read_entry(b, e.peer_token, &pe) &&
	    (pe.peer_token != e.token || LISM_EXEC_MODE(pe.exec) != LISM_EXEC_RING))
		return -EPERM;
	if (!p) {
		if (b->n == b->cap) {
			size_t cap = b->cap ? 2 * b->cap : 64;
			struct ring_pair *bigger = realloc(b->pairs, cap * sizeof(*bigger));

			if (!bigger)
				return -ENOMEM;
			b->pairs = bigger;
			b->cap = cap;
		}
		fd = make_ring(b, t0, t1, &hdr);
		if (fd < 0)
			return fd;
		p = &b->pairs[b->n++];
		*p = (struct ring_pair){ .token = { t0, t1 }, .memfd = fd, .hdr = hdr };
		count(b, &b->st.rings);
	}
	ans->end = (__u32)end;
	ans->dmb_size = b->dmb_size;
	ans->size = lism_ring_region_size(b->dmb_size);
	*memfd = p->memfd;
	return 0;
}

/* A pair's figures as its header says now (its processes write it: loads of a word each). */
static void ring_read(const struct ring_pair *p, struct lism_device_ring *r)
{
	r->token[0] = p->token[0];
	r->token[1] = p->token[1];
	for (int i = 0; i < 2; i++) {
		const struct lism_ring_dir *d = &p->hdr->dir[i];
		struct lism_device_ring_dir *o = &r->dir[i];

		o->prod = __atomic_load_n(&d->prod.cursor, __ATOMIC_RELAXED);
		o->cons = __atomic_load_n(&d->cons.cursor, __ATOMIC_RELAXED);
		o->bells = __atomic_load_n(&d->prod.bells, __ATOMIC_RELAXED);
		o->eaten = __atomic_load_n(&d->cons.eaten, __ATOMIC_RELAXED);
		o->runs = __atomic_load_n(&d->prod.runs, __ATOMIC_RELAXED);
		o->state = __atomic_load_n(&d->prod.state, __ATOMIC_RELAXED);
		o->reader_state = __atomic_load_n(&d->cons.state, __ATOMIC_RELAXED);
	}
}

/*
 * Add what pair @p moved since it was last looked at to the totals.  Only
 * increases count, and the totals saturate: the header is its processes',
 * and a counter of the totals never goes back.
 */
static void fold(struct lism_broker *b, struct ring_pair *p, struct lism_device_ring *r)
{
	ring_read(p, r);
	pthread_mutex_lock(&b->lock);
	for (int i = 0; i < 2; i++) {
		__u64 now[3] = { lism_cursor_bytes(r->dir[i].prod, b->dmb_size), r->dir[i].bells, r->dir[i].runs };
		__u64 *total[3] = { &b->st.bytes, &b->st.doorbells, &b->st.runs };

		for (int k = 0; k < 3; k++)
			if (now[k] > p->seen[i][k]) {
				__u64 d = now[k] - p->seen[i][k];

				*total[k] = *total[k] + d < *total[k] ? UINT64_MAX : *total[k] + d;
				p->seen[i][k] = now[k];
			}
	}
	pthread_mutex_unlock(&b->lock);
}

static void fold_all(struct lism_broker *b)
{
	struct lism_device_ring r;

	for (size_t i = 0; i < b->n; i++)
		fold(b, &b->pairs[i], &r);
}

/* Give pair @i's memory back, its last figures in the totals. */
static void release(struct lism_broker *b, size_t i)
{
	struct ring_pair *p = &b->pairs[i];
	struct lism_device_ring r;

	fold(b, p, &r);
	if ((r.dir[0].state | r.dir[1].state) & LISM_RING_ABORT)
		count(b, &b->st.aborts);
	munmap((void *)p->hdr, LISM_RING_HDR_SIZE);
	close(p->memfd);
	b->pairs[i] = b->pairs[--b->n];
}

/*
 * Pairs with neither entry left: their memory lives on only in the
 * mappings of their processes.  (While one end lives the device keeps it:
 * a process that exec()s asks again.)
 */
static void sweep(struct lism_broker *b)
{
	struct lism_dmb e;
	size_t i = 0;

	while (i < b->n) {
		struct ring_pair *p = &b->pairs[i];

		if (!read_entry(b, p->token[0], &e) || !read_entry(b, p->token[1], &e)) {
			i++;
			continue;
		}
		release(b, i);
	}
	pthread_mutex_lock(&b->lock);
	b->st.held = (__u32)b->n;
	pthread_mutex_unlock(&b->lock);
}

/*
 * Whether process @pid could read lism's maps itself (CAP_BPF or
 * CAP_SYS_ADMIN in its effective set): the device's socket reaches every
 * pod that opts in, whose root is uid 0 too, and the report names every
 * ring pair of the node.  (By pid: a caller that exits and whose pid a
 * privileged process takes meanwhile would pass; it learns nothing it
 * could not read as root with those capabilities.)
 */
static int may_read_maps(pid_t pid)
{
	char path[64], line[256];
	unsigned long long eff = 0;
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1) {
			found = 1;
			break;
		}
	fclose(f);
	return found && (eff & (1ull << CAP_BPF | 1ull << CAP_SYS_ADMIN));
}

/*
 * The report for client @cfd, in a sealed memfd (*@fd, the caller's to
 * close after sending): only for whoever could read the maps (root,
 * may_read_maps), since it names every ring pair and its traffic.
 */
static int report(struct lism_broker *b, int cfd, struct lism_device_ans *ans, int *fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct lism_device_report *r;
	size_t size;
	int err = 0;

	if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		return -errno;
	if ((cred.uid != 0 && cred.uid != geteuid()) || !may_read_maps(cred.pid))
		return -EACCES;
	size = sizeof(*r) + b->n * sizeof(r->ring[0]);
	*fd = memfd_create("lism-report", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (*fd < 0)
		return -errno;
	if (ftruncate(*fd, (off_t)size)) {
		err = -errno;
		goto fail;
	}
	r = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	if (r == MAP_FAILED) {
		err = -errno;
		goto fail;
	}
	r->magic = LISM_DEVICE_MAGIC;
	r->dmb_size = b->dmb_size;
	r->n = b->n;
	for (size_t i = 0; i < b->n; i++)
		fold(b, &b->pairs[i], &r->ring[i]);
	lism_broker_stats(b, &r->totals);
	munmap(r, size);
	/* sealed: the reader may map it and trust its size */
	if (fcntl(*fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL)) {
		err = -errno;
		goto fail;
	}
	ans->size = size;
	ans->dmb_size = b->dmb_size;
	return 0;
fail:
	close(*fd);
	*fd = -1;
	return err;
}

/* The one request of client @cfd, answered; the caller drops the client after it. */
static void serve(struct lism_broker *b, int cfd)
{
	char cbuf[CMSG_SPACE(sizeof(int) * 4)], obuf[CMSG_SPACE(sizeof(int))];
	struct lism_device_req req = { 0 };
	struct lism_device_ans ans = { .magic = LISM_DEVICE_MAGIC };
	struct iovec iov = { &req, sizeof(req) }, oiov = { &ans, sizeof(ans) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct msghdr om = { .msg_iov = &oiov, .msg_iovlen = 1 };
	int fds[4], nfds = 0, memfd = -1, own = -1;
	ssize_t n;

	n = recvmsg(cfd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	/* every fd received is closed, whatever came with it (an empty message carries fds too); 4 fit */
	if (n >= 0)
		nfds = lism_scm_take(&m, fds, 4);
	if (n > 0 && n == sizeof(req) && !(m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) &&
	    req.magic == LISM_DEVICE_MAGIC && req.op == LISM_DEVICE_ATTACH && nfds == 1)
		ans.err = attach(b, fds[0], &ans, &memfd);
	else if (n > 0 && n == sizeof(req) && !(m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) &&
		 req.magic == LISM_DEVICE_MAGIC && req.op == LISM_DEVICE_REPORT && nfds == 0)
		ans.err = report(b, cfd, &ans, &own);
	else
		ans.err = -EINVAL;
	for (int i = 0; i < nfds; i++)
		reap(b, fds[i]); /* the caller's socket is the caller's: nothing of it stays here */
	if (n <= 0)
		return; /* nothing asked: no answer */
	if (ans.err || req.op == LISM_DEVICE_ATTACH)
		count(b, ans.err ? &b->st.refusals : &b->st.attaches);
	if (!ans.err)
		lism_scm_put(&om, obuf, own >= 0 ? own : memfd);
	sendmsg(cfd, &om, MSG_DONTWAIT | MSG_NOSIGNAL); /* a caller gone asks again, or resets */
	if (own >= 0)
		close(own);
}

static void client_drop(struct lism_broker *b, int cfd)
{
	for (size_t i = 0; i < b->nclients; i++)
		if (b->clients[i] == cfd) {
			b->clients[i] = b->clients[--b->nclients];
			break;
		}
	epoll_ctl(b->efd, EPOLL_CTL_DEL, cfd, NULL);
	close(cfd);
}

static void accept_one(struct lism_broker *b)
{
	int cfd = accept4(b->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = cfd };

	if (cfd < 0) {
		if (errno == EMFILE || errno == ENFILE || errno == ENOMEM || errno == ENOBUFS) {
			/* the socket stays readable: not looked at again before the next tick */
			epoll_ctl(b->efd, EPOLL_CTL_DEL, b->lfd, NULL);
			b->lfd_paused = 1;
		}
		return;
	}
	if (b->nclients == MAX_CLIENTS || epoll_ctl(b->efd, EPOLL_CTL_ADD, cfd, &ev)) {
		close(cfd); /* its caller reads an end of stream: no device now */
		return;
	}
	b->clients[b->nclients++] = cfd;
}

static void tick(struct lism_broker *b)
{
	__u64 x;

	if (read(b->tfd, &x, sizeof(x)) != sizeof(x))
		return;
	lease(b, 1);
	if (b->lfd_paused) {
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = b->lfd };

		b->lfd_paused = !!epoll_ctl(b->efd, EPOLL_CTL_ADD, b->lfd, &ev);
	}
	fold_all(b);
	if (++b->ticks % SWEEP_TICKS == 0)
		sweep(b);
}

static void *run(void *arg)
{
	struct lism_broker *b = arg;
	struct epoll_event evs[16];

	for (;;) {
		int n = epoll_wait(b->efd, evs, 16, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return NULL; /* the lease lapses: new pairs stay on TCP */
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;

			if (fd == b->stopfd)
				return NULL;
			if (fd == b->tfd) {
				tick(b);
			} else if (fd == b->lfd) {
				accept_one(b);
			} else {
				serve(b, fd);
				client_drop(b, fd); /* one request per connection */
			}
		}
	}
}

/* The device's socket at @socket_path (0666): a socket file left there by a dead device is replaced. */
static int listen_at(struct lism_broker *b, const char *socket_path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[sizeof(sa.sun_path)], *slash;
	struct stat st;
	int fd, err;

	if (socket_path[0] != '/' || strlen(socket_path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, socket_path);
	strcpy(dir, socket_path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) && errno != EEXIST)
			return -errno;
	}
	if (!lstat(socket_path, &st)) {
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST; /* not ours to remove */
		unlink(socket_path);
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || chmod(socket_path, 0666) ||
	    lstat(socket_path, &st) || listen(fd, 128)) {
		err = -errno;
		close(fd);
		return err;
	}
	strcpy(b->path, socket_path);
	b->sock_dev = st.st_dev;
	b->sock_ino = st.st_ino;
	return fd;
}

int lism_broker_start(const char *pin_path, const char *socket_path, struct lism_broker **out)
{
	struct itimerspec its = { .it_interval = { 0, LISM_BROKER_TICK_MS * 1000000L },
				  .it_value = { 0, LISM_BROKER_TICK_MS * 1000000L } };
	struct lism_broker *b = calloc(1, sizeof(*b));
	int device_fd = -1, err;
	struct lism_device d;
	struct rlimit rl;
	__u32 zero = 0;

	*out = NULL;
	if (!b)
		return -ENOMEM;
	b->lfd = b->efd = b->tfd = b->stopfd = b->broker_fd = b->socks_fd = b->dmbs_fd = -1;
	b->reap[0] = b->reap[1] = -1;
	pthread_mutex_init(&b->lock, NULL);
	/* a memfd per ring pair held: up to half the DMB table, beyond a 1024 soft limit */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	device_fd = lism_pin_open(pin_path, "device");
	b->broker_fd = lism_pin_open(pin_path, "exec_lease");
	b->socks_fd = lism_pin_open(pin_path, "socks");
	b->dmbs_fd = lism_pin_open(pin_path, "dmbs");
	err = device_fd < 0 ? device_fd : b->broker_fd < 0 ? b->broker_fd : b->socks_fd < 0 ? b->socks_fd :
	      b->dmbs_fd < 0 ? b->dmbs_fd : 0;
	if (!err && bpf_map_lookup_elem(device_fd, &zero, &d))
		err = -errno;
	if (!err && getrandom(&b->epoch, sizeof(b->epoch), 0) != sizeof(b->epoch))
		err = -EIO;
	if (err)
		goto fail;
	b->epoch |= 1; /* never 0: an entry decided without a device has epoch 0 */
	{
		/* ring DMBs that stay in cache (lism/ring.h), unless the bench ablates it */
		__u32 ablated = 0;

		(void)lism_ablate_parse(getenv("LISM_ABLATE"), &ablated);
		b->dmb_size = d.dmb_size < LISM_RING_DMB_CACHE || (ablated & LISM_ABLATE_RING_DMB_CACHE)
				      ? d.dmb_size
				      : LISM_RING_DMB_CACHE;
	}
	b->capacity = d.capacity;
	for (int i = 0; i < 8; i++)
		b->gid = b->gid << 8 | d.gid[i]; /* the option's 64 bits (lism/option.h) */
	b->lfd = listen_at(b, socket_path);
	if (b->lfd < 0) {
		err = b->lfd;
		goto fail;
	}
	b->efd = epoll_create1(EPOLL_CLOEXEC);
	b->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	b->stopfd = eventfd(0, EFD_CLOEXEC);
	if (b->efd < 0 || b->tfd < 0 || b->stopfd < 0 || timerfd_settime(b->tfd, 0, &its, NULL) ||
	    pipe2(b->reap, O_CLOEXEC)) {
		err = -errno;
		goto fail;
	}
	for (int i = 0; i < 3; i++) {
		int fd = i == 0 ? b->lfd : i == 1 ? b->tfd : b->stopfd;
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

		if (epoll_ctl(b->efd, EPOLL_CTL_ADD, fd, &ev)) {
			err = -errno;
			goto fail;
		}
	}
	err = -pthread_create(&b->reaper, NULL, reaper, b);
	if (err)
		goto fail;
	b->reaping = 1;
	err = lease(b, 1);
	if (!err)
		err = -pthread_create(&b->thread, NULL, run, b);
	if (err)
		goto fail;
	b->started = 1;
	close(device_fd);
	*out = b;
	return 0;
fail:
	if (device_fd >= 0)
		close(device_fd);
	lism_broker_stop(b);
	return err;
}

void lism_broker_stop(struct lism_broker *b)
{
	struct stat st;

	if (!b)
		return;
	if (b->started) {
		__u64 one = 1;

		while (write(b->stopfd, &one, sizeof(one)) < 0 && errno == EINTR)
			;
		pthread_join(b->thread, NULL);
	}
	if (b->leased)
		lease(b, 0); /* new pairs stay on TCP from now on */
	/* the socket file, unless another device has made its own there since */
	if (b->path[0] && !lstat(b->path, &st) && st.st_dev == b->sock_dev && st.st_ino == b->sock_ino)
		unlink(b->path);
	while (b->n)
		release(b, b->n - 1);
	free(b->pairs);
	for (size_t i = 0; i < b->nclients; i++)
		close(b->clients[i]);
	if (b->reaping) {
		close(b->reap[1]); /* the reaper closes what is queued, then sees the end */
		b->reap[1] = -1;
		pthread_join(b->reaper, NULL);
	}
	{
		int fds[] = { b->lfd, b->efd, b->tfd, b->stopfd, b->reap[0], b->reap[1], b->broker_fd, b->socks_fd,
			      b->dmbs_fd };

		for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
			if (fds[i] >= 0)
				close(fds[i]);
	}
	pthread_mutex_destroy(&b->lock);
	free(b);
}

void lism_broker_stats(struct lism_broker *b, struct lism_device_totals *out)
{
	memset(out, 0, sizeof(*out));
	if (!b)
		return;
	pthread_mutex_lock(&b->lock);
	*out = b->st;
	pthread_mutex_unlock(&b->lock);
}

int lism_device_report(const char *socket_path, struct lism_device_report **out)
{
	struct lism_device_ans ans;
	struct lism_device_report *r = NULL;
	struct stat st;
	int fd, err;

	*out = NULL;
	err = lism_exec_ask(socket_path, LISM_DEVICE_REPORT, -1, &ans, &fd);
	if (err)
		return err;
	if (ans.size < sizeof(*r) || fstat(fd, &st) || (__u64)st.st_size != ans.size) {
		err = -EPROTO;
		goto out;
	}
	r = malloc(ans.size);
	if (!r) {
		err = -ENOMEM;
		goto out;
	}
	if (pread(fd, r, ans.size, 0) != (ssize_t)ans.size) {
		err = -EIO;
		goto out;
	}
	if (r->magic != LISM_DEVICE_MAGIC || r->n > (ans.size - sizeof(*r)) / sizeof(r->ring[0]) ||
	    sizeof(*r) + r->n * sizeof(r->ring[0]) != ans.size) {
		err = -EPROTO;
		goto out;
	}
	*out = r;
	r = NULL;
out:
	free(r);
	close(fd);
	return err;
}

int lism_device_answers(const char *socket_path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s, ok;

	if (strlen(socket_path) >= sizeof(sa.sun_path))
		return 0;
	strcpy(sa.sun_path, socket_path);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return 0;
	ok = !connect(s, (struct sockaddr *)&sa, sizeof(sa));
	close(s);
	return ok;
}
