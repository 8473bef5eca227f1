// SPDX-License-Identifier: GPL-2.0-only
/*
 * Soak: the uperf TCP_CRR profile (12 threads, each connect / write 200 B /
 * read 1000 B / close, as fast as they can) for LISM_SOAK_SECONDS, then one
 * checksummed stream of LISM_SOAK_GIB each way.  Every byte is checked;
 * zero errors, zero refused or reset connections, and the DMB table and
 * lism's sockets back to zero afterwards.  `make test` runs a short version,
 * `make soak` the full one.
 */
#include <bpf/bpf.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "conns.h"
#include "harness.h"
#include "traffic.h"

enum { CLIENTS = 12, REQ = 200, RESP = 1000 };

static struct env e;

static void down(void)
{
	env_down(&e);
}

/* What this suite tests: where the kernel lacks it, the matrix skips the suite (harness.h). */
static void gate(void)
{
	require_root();
	needs(LISM_F_DATA_PATH);
}

TestSuite(soak, .init = gate, .fini = down, .timeout = 3600);

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static long env_long(const char *name, long def)
{
	const char *v = getenv(name);

	return v && *v ? strtol(v, NULL, 10) : def;
}

struct soak {
	int port;
	int listener; /* made by the test's thread: no cr_assert in the server's */
	double deadline;
	atomic_long conns, errors, refused, reset, mismatches;
	atomic_int stop;
	char first_error[256];
	pthread_mutex_t lock;
};

static void note_error(struct soak *s, atomic_long *counter, const char *what, int err)
{
	atomic_fetch_add(counter, 1);
	atomic_fetch_add(&s->errors, 1);
	pthread_mutex_lock(&s->lock);
	if (!s->first_error[0])
		snprintf(s->first_error, sizeof(s->first_error), "%s: %s", what, strerror(err));
	pthread_mutex_unlock(&s->lock);
}

/* Wait until @fd is ready for @ev (or 5 s). */
static int wait_fd(int fd, short ev)
{
	struct pollfd p = { .fd = fd, .events = ev };

	return poll(&p, 1, 5000) == 1 ? 0 : -ETIMEDOUT;
}

static int read_exact(int fd, __u8 *buf, size_t n)
{
	for (size_t got = 0; got < n;) {
		ssize_t r = recv(fd, buf + got, n - got, 0);

		if (r > 0) {
			got += r;
		} else if (r == 0) {
			return -EPIPE;
		} else if (errno == EAGAIN) {
			if (wait_fd(fd, POLLIN))
				return -ETIMEDOUT;
		} else {
			return -errno;
		}
	}
	return 0;
}

static int write_exact(int fd, const __u8 *buf, size_t n)
{
	for (size_t put = 0; put < n;) {
		ssize_t w = send(fd, buf + put, n - put, MSG_NOSIGNAL);

		if (w > 0)
			put += w;
		else if (w < 0 && errno == EAGAIN)
			wait_fd(fd, POLLOUT);
		else
			return w < 0 ? -errno : -EPIPE;
	}
	return 0;
}

static void fill(__u8 *buf, size_t n, __u32 seed)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = pattern_at(seed, i);
}

/* One CRR client: connect, send a request naming itself, check the answer, close. */
static void *client(void *arg)
{
	struct soak *s = arg;
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(s->port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	__u8 req[REQ], resp[RESP], want[RESP];
	static atomic_uint next_id;

	while (!atomic_load(&s->stop) && now_s() < s->deadline) {
		__u32 id = atomic_fetch_add(&next_id, 1);
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), err = 0;
		socklen_t len = sizeof(err);

		if (fd < 0) {
			note_error(s, &s->errors, "socket", errno);
			continue;
		}
		if (connect(fd, (struct sockaddr *)&to, sizeof(to)) && errno != EINPROGRESS) {
			note_error(s, errno == ECONNREFUSED ? &s->refused : &s->errors, "connect", errno);
			close(fd);
			continue;
		}
		if (wait_fd(fd, POLLOUT) || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) || err) {
			note_error(s, err == ECONNREFUSED ? &s->refused : &s->errors, "connect", err ? err : ETIMEDOUT);
			close(fd);
			continue;
		}
		fill(req, REQ, id);
		memcpy(req, &id, sizeof(id));
		err = write_exact(fd, req, REQ);
		if (!err)
			err = read_exact(fd, resp, RESP);
		if (err) {
			note_error(s, err == -ECONNRESET ? &s->reset : &s->errors, "request", -err);
		} else {
			fill(want, RESP, id ^ 0x5a5a5a5a);
			if (memcmp(resp, want, RESP))
				note_error(s, &s->mismatches, "response bytes", EILSEQ);
			else
				atomic_fetch_add(&s->conns, 1);
		}
		close(fd);
	}
	return NULL;
}

struct conn_state {
	int fd;
	size_t got;
	__u8 req[REQ];
};

/* The server: one epoll loop; answers each request, then closes first (TIME_WAIT stays here). */
static void *server(void *arg)
{
	struct soak *s = arg;
	struct epoll_event ev, out[64];
	int l = s->listener, ep = epoll_create1(0);
	__u8 resp[RESP];

	ev.events = EPOLLIN;
	ev.data.ptr = NULL;
	epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev);
	while (!atomic_load(&s->stop)) {
		int n = epoll_wait(ep, out, 64, 100);

		for (int i = 0; i < n; i++) {
			struct conn_state *cs = out[i].data.ptr;

			if (!cs) {
				int fd;

				while ((fd = accept4(l, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
					cs = calloc(1, sizeof(*cs));
					cs->fd = fd;
					ev.events = EPOLLIN;
					ev.data.ptr = cs;
					epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
				}
				continue;
			}
			ssize_t r = recv(cs->fd, cs->req + cs->got, REQ - cs->got, 0);

			if (r > 0)
				cs->got += r;
			if (cs->got == REQ) {
				__u32 id;

				memcpy(&id, cs->req, sizeof(id));
				for (size_t k = sizeof(id); k < REQ; k++)
					if (cs->req[k] != pattern_at(id, k)) {
						note_error(s, &s->mismatches, "request bytes", EILSEQ);
						break;
					}
				fill(resp, RESP, id ^ 0x5a5a5a5a);
				if (write_exact(cs->fd, resp, RESP))
					note_error(s, &s->errors, "response", errno);
			}
			if (cs->got == REQ || r == 0 || (r < 0 && errno != EAGAIN)) {
				if (r < 0 && errno != EAGAIN)
					note_error(s, errno == ECONNRESET ? &s->reset : &s->errors, "server read",
						   errno);
				epoll_ctl(ep, EPOLL_CTL_DEL, cs->fd, NULL);
				close(cs->fd);
				free(cs);
			}
		}
	}
	close(l);
	close(ep);
	return NULL;
}

static long slab_kib(void)
{
	char line[128];
	long kib = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Slab: %ld kB", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

/* Kernel memory of every map the instance pinned, as fdinfo's memlock counts it. */
static long long lism_map_memory(void)
{
	long long total = 0, v, memlock;
	char path[PATH_MAX * 2], line[128];
	struct dirent *de;
	DIR *d = opendir(e.pin);

	cr_assert_not_null(d, "open %s", e.pin);
	while ((de = readdir(d))) {
		int fd, is_map = 0;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", e.pin, de->d_name);
		fd = bpf_obj_get(path);
		cr_assert_geq(fd, 0, "open pin %s", path);
		snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
		f = fopen(path, "r");
		memlock = 0;
		while (f && fgets(line, sizeof(line), f)) {
			if (!strncmp(line, "map_type:", 9))
				is_map = 1;
			if (sscanf(line, "memlock: %lld", &v) == 1)
				memlock = v;
		}
		if (f)
			fclose(f);
		close(fd);
		if (is_map) /* not the programs and links */
			total += memlock;
	}
	closedir(d);
	return total;
}

static size_t lism_sockets(void)
{
	struct lism_instance in;
	struct lism_conn *conns;
	size_t n;

	cr_assert_eq(lism_instance_open(&in, e.pin), 0);
	cr_assert_eq(lism_conns_collect(&in, &conns, &n), 0);
	lism_instance_close(&in);
	free(conns);
	return n;
}

Test(soak, crr_then_stream)
{
	long seconds = env_long("LISM_SOAK_SECONDS", 120), gib = env_long("LISM_SOAK_GIB", 2);
	struct rlimit rl = { 16384, 16384 };
	struct lism_snapshot before, after;
	static struct soak s;
	pthread_t srv, cl[CLIENTS];
	struct pump_result r;
	long slab0, slab1, left;
	long long maps0, maps1;
	double t0;
	int c, sv;
	const char *ns;

	require_root();
	(void)pattern_at(0, 0); /* the pattern is built lazily: not while 13 threads race for it */
	env_up(&e, "--no-churn-detect"); /* every CRR connection engages: the tables churn */
	ns = env_netns(&e, "soak");
	setrlimit(RLIMIT_NOFILE, &rl);
	memset(&s, 0, sizeof(s));
	pthread_mutex_init(&s.lock, NULL);
	env_enter(&e);
	netns_switch(ns);
	s.listener = tcp_listen(AF_INET, "127.0.0.1", &s.port, 1);
	cr_assert_eq(pthread_create(&srv, NULL, server, &s), 0);
	slab0 = slab_kib();
	maps0 = lism_map_memory();
	t0 = now_s();
	s.deadline = t0 + seconds;
	for (int i = 0; i < CLIENTS; i++)
		cr_assert_eq(pthread_create(&cl[i], NULL, client, &s), 0);
	for (int i = 0; i < CLIENTS; i++)
		pthread_join(cl[i], NULL);
	atomic_store(&s.stop, 1);
	pthread_join(srv, NULL);
	/* counters first: a leftover is easier to read with them */
	left = wait_drained(&e, 5000);
	snap(&e, &before);
	fprintf(stderr,
		"soak CRR: %ld s, %ld connections (%.0f/s), errors %ld (refused %ld, reset %ld, "
		"bytes wrong %ld), confirms %llu, DMBs reaped at destroy %llu (orphans %llu), "
		"swept (socket gone unseen) %llu, lost tokens %llu\n",
		seconds, (long)s.conns, s.conns / (now_s() - t0), (long)s.errors, (long)s.refused,
		(long)s.reset, (long)s.mismatches, (unsigned long long)before.stats[LISM_S_CONFIRMS],
		(unsigned long long)before.stats[LISM_S_REAPED],
		(unsigned long long)before.stats[LISM_S_REAPED_ORPHANS],
		(unsigned long long)before.stats[LISM_S_REAPED_GONE],
		(unsigned long long)before.stats[LISM_S_TOKEN_LOST]);
	cr_assert_eq(left, 0, "DMBs left after the CRR phase");
	cr_assert_eq(s.errors, 0, "%ld errors, first: %s", (long)s.errors, s.first_error);
	cr_assert_gt(s.conns, 0);
	cr_assert_geq(before.stats[LISM_S_CONFIRMS], (unsigned long long)s.conns,
		      "connections that did not take the shortcut");

	/* the stream */
	t0 = now_s();
	tcp_pair(AF_INET, "127.0.0.1", 1, &c, &sv);
	pump(c, sv, (__u64)gib << 30, (__u64)gib << 30, 4u << 20, 99, (int)(600 * 1000), &r);
	cr_assert(r.ok, "%s", r.why);
	close(c);
	close(sv);
	netns_switch(NULL);
	cr_assert_eq(wait_drained(&e, 5000), 0, "DMBs left after the stream");
	snap(&e, &after);
	slab1 = slab_kib();
	maps1 = lism_map_memory();
	fprintf(stderr,
		"soak stream: %ld GiB each way in %.1f s, %llu shortcut bytes; lism maps %lld -> %lld KiB, "
		"kernel slab %+ld KiB (TIME_WAIT sockets included)\n",
		gib, now_s() - t0,
		(unsigned long long)(after.stats[LISM_S_SC_BYTES] - before.stats[LISM_S_SC_BYTES]),
		maps0 >> 10, maps1 >> 10, slab1 - slab0);
	cr_assert_gt(maps0, 0);
	cr_assert_eq(maps1, maps0, "lism's map memory grew");
	cr_assert_eq(lism_sockets(), 0, "sockets with lism state left");
	cr_assert_eq(after.usage.dmbs_in_use, 0);
}
