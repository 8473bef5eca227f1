// SPDX-License-Identifier: GPL-2.0-only
/*
 * The scenarios of docs/semantics.md (semantics.h).  Each is what an
 * application does with a connected pair in one process, and each result
 * it sees is one observation: a byte count, 0 or -errno, an event mask.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "semantics.h"
#include "slow.h"

/* ---- the scenarios' means ---- */

static int fail(struct sem_obs *o, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct sem_obs *o, int line, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(o->why, sizeof(o->why), "semantics.c:%d: ", line);

	va_start(ap, fmt);
	vsnprintf(o->why + n, sizeof(o->why) - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

/* What a scenario needs in order to go on (not an observation). */
#define REQUIRE(o, cond)                                                               \
	do {                                                                           \
		if (!(cond))                                                           \
			return fail((o), __LINE__, "%s (errno %s)", #cond, strerror(errno)); \
	} while (0)

#define SEE(o, val)                                                            \
	do {                                                                   \
		long v_ = (val);                                               \
		if ((o)->n >= SEM_OBS_MAX)                                     \
			return fail((o), __LINE__, "more than %d observations", SEM_OBS_MAX); \
		(o)->v[(o)->n++] = v_;                                         \
	} while (0)

/* The byte a stream of @seed carries at @pos: every reader checks it. */
static unsigned char pattern(unsigned seed, unsigned long long pos)
{
	unsigned long long x = (pos + 1) * 0x9e3779b97f4a7c15ull ^ seed * 0xbf58476d1ce4e5b9ull;

	x ^= x >> 31;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 29;
	return (unsigned char)x;
}

static void pattern_fill(unsigned seed, unsigned long long pos, unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pattern(seed, pos + i);
}

static long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Send @n bytes of the stream @seed from @off, waiting for room: 0 or -errno. */
static int send_all(int fd, unsigned seed, unsigned long long off, unsigned long long n)
{
	unsigned char buf[65536];

	for (unsigned long long done = 0; done < n;) {
		size_t len = n - done < sizeof(buf) ? n - done : sizeof(buf);
		ssize_t w;

		pattern_fill(seed, off + done, buf, len);
		w = send(fd, buf, len, MSG_NOSIGNAL);
		if (w < 0 && errno == EAGAIN) {
			struct pollfd p = { .fd = fd, .events = POLLOUT };

			poll(&p, 1, 1000);
			continue;
		}
		if (w < 0)
			return -errno;
		done += (unsigned long long)w;
	}
	return 0;
}

/* Receive and check @n bytes of the stream @seed from @off: 0, -errno, -EPIPE at an early EOF, -EILSEQ. */
static int recv_check(int fd, unsigned seed, unsigned long long off, unsigned long long n, int timeout_ms)
{
	unsigned char buf[65536];
	long deadline = now_ms() + scaled_ms(timeout_ms);

	for (unsigned long long done = 0; done < n;) {
		size_t want = n - done < sizeof(buf) ? n - done : sizeof(buf);
		ssize_t r = recv(fd, buf, want, 0);

		if (r < 0 && errno == EAGAIN) {
			struct pollfd p = { .fd = fd, .events = POLLIN };

			if (now_ms() > deadline)
				return -ETIMEDOUT;
			poll(&p, 1, 100);
			continue;
		}
		if (r < 0)
			return -errno;
		if (r == 0)
			return -EPIPE;
		for (ssize_t i = 0; i < r; i++)
			if (buf[i] != pattern(seed, off + done + (unsigned long long)i))
				return -EILSEQ;
		done += (unsigned long long)r;
	}
	return 0;
}

/* recv's result: bytes, or -errno. */
static long recv_result(int fd, void *buf, size_t len, int flags)
{
	ssize_t n = recv(fd, buf, len, flags);

	return n < 0 ? -errno : n;
}

static long send_result(int fd, const void *buf, size_t len, int flags)
{
	ssize_t n = send(fd, buf, len, flags);

	return n < 0 ? -errno : n;
}

static int wait_readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms);
}

static int set_blocking(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
}

/* ---- the scenarios ---- */

/* EOF after shutdown(SHUT_WR), exactly after the data; the other way goes on; EPIPE after it. */
static int half_close(int c, int s, struct sem_obs *o)
{
	char buf[4096];

	REQUIRE(o, send_all(c, 1, 0, 100000) == 0);
	SEE(o, shutdown(c, SHUT_WR));
	SEE(o, recv_check(s, 1, 0, 100000, 5000));
	SEE(o, wait_readable(s, 2000));
	SEE(o, recv_result(s, buf, sizeof(buf), 0)); /* EOF after exactly the data */
	SEE(o, recv_result(s, buf, sizeof(buf), 0)); /* and again */
	SEE(o, send_result(c, "x", 1, MSG_NOSIGNAL)); /* EPIPE after SHUT_WR */
	/* the other direction still works */
	REQUIRE(o, send_all(s, 2, 0, 50000) == 0);
	SEE(o, recv_check(c, 2, 0, 50000, 5000));
	SEE(o, shutdown(s, SHUT_WR));
	SEE(o, wait_readable(c, 2000));
	SEE(o, recv_result(c, buf, sizeof(buf), 0));
	close(c);
	close(s);
	return 0;
}

/* close() right after sending: the peer reads everything, then EOF. */
static int close_after_send(int c, int s, struct sem_obs *o)
{
	char buf[4096];

	REQUIRE(o, send_all(s, 3, 0, 1 << 20) == 0);
	SEE(o, close(s));
	SEE(o, recv_check(c, 3, 0, 1 << 20, 5000));
	SEE(o, wait_readable(c, 2000));
	SEE(o, recv_result(c, buf, sizeof(buf), 0));
	close(c);
	return 0;
}

/* Abortive close (SO_LINGER 0): ECONNRESET, then EOF, then EPIPE. */
static int reset(int c, int s, struct sem_obs *o)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	char buf[64];

	REQUIRE(o, send_all(c, 4, 0, 1000) == 0);
	SEE(o, recv_check(s, 4, 0, 1000, 5000));
	SEE(o, setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)));
	SEE(o, close(s)); /* abortive close: RST */
	SEE(o, wait_readable(c, 2000));
	SEE(o, recv_result(c, buf, sizeof(buf), 0)); /* ECONNRESET */
	SEE(o, recv_result(c, buf, sizeof(buf), 0)); /* then EOF */
	SEE(o, send_result(c, "x", 1, MSG_NOSIGNAL));
	close(c);
	return 0;
}

/* FIONREAD counts what is there; MSG_PEEK does not consume; an empty non-blocking read is EAGAIN. */
static int fionread_and_peek(int c, int s, struct sem_obs *o)
{
	char peek[100], buf[100];
	int avail = -1;

	REQUIRE(o, send_all(c, 5, 0, 12345) == 0);
	REQUIRE(o, wait_readable(s, 2000) == 1);
	for (int i = 0; i < 100 && avail != 12345; i++) {
		ioctl(s, FIONREAD, &avail);
		if (avail != 12345)
			usleep(1000);
	}
	SEE(o, avail);
	SEE(o, recv_result(s, peek, sizeof(peek), MSG_PEEK));
	SEE(o, recv_result(s, peek, sizeof(peek), MSG_PEEK)); /* peeking again: same bytes */
	SEE(o, recv_result(s, buf, sizeof(buf), 0));
	SEE(o, memcmp(peek, buf, sizeof(buf)) == 0);
	SEE(o, buf[0] == (char)pattern(5, 0) && buf[99] == (char)pattern(5, 99));
	ioctl(s, FIONREAD, &avail);
	SEE(o, avail);
	SEE(o, recv_check(s, 5, 100, 12245, 5000));
	ioctl(s, FIONREAD, &avail);
	SEE(o, avail);
	SEE(o, recv_result(s, buf, sizeof(buf), MSG_DONTWAIT)); /* empty: EAGAIN */
	close(c);
	close(s);
	return 0;
}

/* The events of one epoll_wait on one fd, masked; -1 when it reported none. */
static long epoll_events(int ep, int ms, unsigned mask)
{
	struct epoll_event out[4];
	int n = epoll_wait(ep, out, 4, ms);

	return n == 1 ? (long)(out[0].events & mask) : -1;
}

/* epoll: EPOLLOUT, EPOLLIN on data, nothing when drained, EPOLLIN|EPOLLRDHUP on the peer's FIN. */
static int epoll_readiness(int c, int s, struct sem_obs *o)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP, .data.fd = s }, out[4] = { 0 };
	int ep = epoll_create1(0);
	char buf[1000];

	REQUIRE(o, ep >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev) == 0);
	SEE(o, epoll_wait(ep, out, 4, 100));
	SEE(o, out[0].events & (EPOLLIN | EPOLLOUT | EPOLLRDHUP)); /* OUT only */
	REQUIRE(o, send_all(c, 6, 0, 1000) == 0);
	SEE(o, epoll_events(ep, 1000, EPOLLIN | EPOLLRDHUP)); /* IN */
	SEE(o, recv_check(s, 6, 0, 1000, 1000));
	SEE(o, epoll_events(ep, 100, EPOLLIN | EPOLLRDHUP)); /* nothing to read */
	shutdown(c, SHUT_WR);
	SEE(o, epoll_events(ep, 1000, EPOLLIN | EPOLLRDHUP)); /* IN|RDHUP */
	SEE(o, recv_result(s, buf, sizeof(buf), 0));
	close(ep);
	close(c);
	close(s);
	return 0;
}

/* The events the kernel's set @ep holds for @fd (its fdinfo), masked; -1 if it holds none. */
static long kernel_holds(int ep, int fd, unsigned mask)
{
	char path[64], line[256];
	long ev = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", ep);
	if (!(f = fopen(path, "r")))
		return -2;
	while (fgets(line, sizeof(line), f)) {
		unsigned events;
		int tfd;

		if (sscanf(line, "tfd: %d events: %x", &tfd, &events) == 2 && tfd == fd)
			ev = events & mask;
	}
	fclose(f);
	return ev;
}

/* One epoll_wait's single event: its events masked, and its data above bit 16; -1 for none. */
static long epoll_one(int ep, int ms)
{
	struct epoll_event out[4];
	int n = epoll_wait(ep, out, 4, ms);

	return n == 1 ? (long)(out[0].events & (EPOLLIN | EPOLLOUT)) | (long)out[0].data.u64 << 16 : -n - 1;
}

struct waiting_thread {
	int ep;
	long said;
};

static void *wait_in_thread(void *arg)
{
	struct waiting_thread *t = arg;

	t->said = epoll_one(t->ep, 5000);
	return NULL;
}

#define ERRNO_OF(call) ((call) ? errno : 0)

/*
 * An event loop's epoll_ctl (ae's: redis, redis-benchmark): a socket out of
 * the set and back in, for output, then for input, each wait saying what
 * the last change asked; EPOLLET output re-armed by a DEL and an ADD; the
 * errors of a DEL or a MOD of what is not in, an ADD of what is; a socket
 * taken out and closed while a dup keeps its file (never said again); an
 * ADD while another thread waits (said to it); an ADD through a dup of
 * the set after a DEL through the set.
 */
static int epoll_ctl_sequence(int c, int s, struct sem_obs *o)
{
	struct epoll_event in = { .events = EPOLLIN, .data.u64 = 1 }, out = { .events = EPOLLOUT, .data.u64 = 2 },
			   outet = { .events = EPOLLOUT | EPOLLET, .data.u64 = 3 };
	struct waiting_thread t;
	int ep = epoll_create1(EPOLL_CLOEXEC), ep2, s2;
	pthread_t th;

	REQUIRE(o, ep >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, s, &in) == 0);
	SEE(o, epoll_one(ep, 100));                                   /* none: nothing to read */
	SEE(o, epoll_ctl(ep, EPOLL_CTL_DEL, s, NULL));
	SEE(o, epoll_ctl(ep, EPOLL_CTL_ADD, s, &out));
	o->lazy = kernel_holds(ep, s, EPOLLIN | EPOLLOUT) == EPOLLIN;  /* the kernel has not seen them yet */
	SEE(o, epoll_one(ep, 1000));                                  /* OUT, data 2 */
	SEE(o, kernel_holds(ep, s, EPOLLIN | EPOLLOUT));              /* OUT: a wait applies them */
	SEE(o, ERRNO_OF(epoll_ctl(ep, EPOLL_CTL_ADD, s, &out)));      /* EEXIST */
	REQUIRE(o, send_all(c, 7, 0, 100) == 0);
	SEE(o, epoll_ctl(ep, EPOLL_CTL_DEL, s, NULL));
	SEE(o, ERRNO_OF(epoll_ctl(ep, EPOLL_CTL_DEL, s, NULL)));      /* ENOENT */
	SEE(o, ERRNO_OF(epoll_ctl(ep, EPOLL_CTL_MOD, s, &in)));       /* ENOENT */
	SEE(o, epoll_ctl(ep, EPOLL_CTL_ADD, s, &in));
	SEE(o, epoll_one(ep, 1000));                                  /* IN, data 1 */
	SEE(o, recv_check(s, 7, 0, 100, 1000));
	SEE(o, epoll_ctl(ep, EPOLL_CTL_MOD, s, &outet));
	SEE(o, epoll_one(ep, 1000));                                  /* OUT, data 3 */
	SEE(o, epoll_one(ep, 100));                                   /* none: the edge was said */
	SEE(o, epoll_ctl(ep, EPOLL_CTL_DEL, s, NULL));
	SEE(o, epoll_ctl(ep, EPOLL_CTL_ADD, s, &outet));
	SEE(o, epoll_one(ep, 1000));                                  /* OUT again: re-armed */
	/* out of the set, then closed while a dup keeps the file: never said again */
	REQUIRE(o, (s2 = dup(s)) >= 0);
	SEE(o, epoll_ctl(ep, EPOLL_CTL_DEL, s, NULL));
	close(s);
	SEE(o, kernel_holds(ep, s, EPOLLIN | EPOLLOUT));              /* none */
	REQUIRE(o, send_all(c, 8, 0, 100) == 0);
	SEE(o, epoll_one(ep, 200));                                   /* none */
	SEE(o, recv_check(s2, 8, 0, 100, 1000));
	/* an ADD while another thread waits on the set: said to it */
	REQUIRE(o, send_all(c, 9, 0, 100) == 0);
	t = (struct waiting_thread){ .ep = ep, .said = -100 };
	REQUIRE(o, pthread_create(&th, NULL, wait_in_thread, &t) == 0);
	usleep(100 * 1000);
	SEE(o, epoll_ctl(ep, EPOLL_CTL_ADD, s2, &in));
	pthread_join(th, NULL);
	SEE(o, t.said);                                               /* IN, data 1 */
	SEE(o, recv_check(s2, 9, 0, 100, 1000));
	/* out of the set, then back in through a dup of it */
	SEE(o, epoll_ctl(ep, EPOLL_CTL_DEL, s2, NULL));
	REQUIRE(o, (ep2 = dup(ep)) >= 0);
	SEE(o, epoll_ctl(ep2, EPOLL_CTL_ADD, s2, &out));
	SEE(o, epoll_one(ep, 1000));                                  /* OUT, data 2 */
	close(ep2);
	close(ep);
	close(c);
	close(s2);
	return 0;
}

#define SENDFILE_SIZE (5ull << 20)

/* sendfile() of 5 MiB from a blocking writer to a reader that starts late (a child). */
static int sendfile_case(int c, int s, struct sem_obs *o)
{
	char path[] = "/tmp/lism-sendfile-XXXXXX";
	static unsigned char buf[65536];
	unsigned long long sent = 0;
	int fd = mkstemp(path), st;
	off_t off = 0;
	pid_t pid;

	REQUIRE(o, fd >= 0);
	unlink(path);
	for (unsigned long long at = 0; at < SENDFILE_SIZE; at += sizeof(buf)) {
		pattern_fill(8, at, buf, sizeof(buf));
		REQUIRE(o, write(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf));
	}
	REQUIRE(o, set_blocking(c) == 0);
	/* the receiver reads in a child so a blocking sendfile cannot stall it */
	pid = fork();
	REQUIRE(o, pid >= 0);
	if (pid == 0)
		_exit(recv_check(s, 8, 0, SENDFILE_SIZE, 10000) == 0 ? 0 : 1);
	while (sent < SENDFILE_SIZE) {
		ssize_t n = sendfile(c, fd, &off, SENDFILE_SIZE - sent);

		if (n <= 0)
			break;
		sent += (unsigned long long)n;
	}
	SEE(o, (long)sent);
	waitpid(pid, &st, 0);
	SEE(o, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	close(fd);
	close(c);
	close(s);
	return 0;
}

/* splice(2) from the socket into a pipe (a proxy that splices), 3000 bytes. */
static int splice_read(int c, int s, struct sem_obs *o)
{
	long got = 0, same = 0;
	int p[2];
	char b;

	REQUIRE(o, pipe(p) == 0);
	REQUIRE(o, send_all(c, 9, 0, 3000) == 0);
	REQUIRE(o, wait_readable(s, 2000) == 1);
	for (int i = 0; i < 50 && got < 3000; i++) {
		ssize_t n = splice(s, NULL, p[1], NULL, 3000 - got, SPLICE_F_NONBLOCK);

		if (n > 0)
			got += n;
		else
			usleep(10000);
	}
	SEE(o, got);
	for (long i = 0; i < got; i++) {
		REQUIRE(o, read(p[0], &b, 1) == 1);
		same += b == (char)pattern(9, (unsigned long long)i);
	}
	SEE(o, same == got); /* every byte as sent */
	close(p[0]);
	close(p[1]);
	close(c);
	close(s);
	return 0;
}

/* One direction of both_directions: a stream of messages of 1 B..4 MiB. */
struct way {
	int from, to;
	unsigned seed;
	unsigned long long total, sent, recvd, msg_at, msg_len;
	unsigned long long rng;
	unsigned char *msg; /* the message from msg_at, msg_len bytes */
	int eof;
};

#define BOTH_BYTES (64ull << 20)
#define BOTH_MAX_MSG (4u << 20)

/* Log-uniform in [1, BOTH_MAX_MSG]: many small sends and some huge ones. */
static unsigned long long msg_size(unsigned long long *x)
{
	unsigned long long bits, r;

	*x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
	bits = *x % 23; /* 2^22 = BOTH_MAX_MSG */
	*x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
	r = 1 + *x % (1ull << bits);
	return r;
}

/* Send what the socket takes now: 0, or -errno. */
static int way_send(struct way *w)
{
	while (w->sent < w->total) {
		ssize_t n;

		if (w->sent == w->msg_at + w->msg_len) {
			w->msg_at = w->sent;
			w->msg_len = msg_size(&w->rng);
			if (w->msg_len > w->total - w->sent)
				w->msg_len = w->total - w->sent;
			pattern_fill(w->seed, w->msg_at, w->msg, w->msg_len);
		}
		n = send(w->from, w->msg + (w->sent - w->msg_at), w->msg_at + w->msg_len - w->sent,
			 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0)
			return errno == EAGAIN ? 0 : -errno;
		w->sent += (unsigned long long)n;
	}
	return shutdown(w->from, SHUT_WR) ? -errno : 0;
}

/* Read what is there now, checked: 0, -errno, -EILSEQ. */
static int way_recv(struct way *w, unsigned char *buf, size_t len)
{
	for (;;) {
		ssize_t n = recv(w->to, buf, len, MSG_DONTWAIT);

		if (n < 0)
			return errno == EAGAIN ? 0 : -errno;
		if (n == 0) {
			w->eof = 1;
			return 0;
		}
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] != pattern(w->seed, w->recvd + (unsigned long long)i))
				return -EILSEQ;
		w->recvd += (unsigned long long)n;
	}
}

/* 64 MiB each way at once, in sends of 1 B..4 MiB, by an event loop; then EOF each way. */
static int both_directions(int c, int s, struct sem_obs *o)
{
	static unsigned char buf[1 << 20];
	struct way w[2] = {
		{ .from = c, .to = s, .seed = 11, .total = BOTH_BYTES, .rng = 0x1234567 },
		{ .from = s, .to = c, .seed = 12, .total = BOTH_BYTES, .rng = 0x7654321 },
	};
	long deadline = now_ms() + scaled_ms(60000);
	int err[2] = { 0, 0 };

	for (int i = 0; i < 2; i++) {
		w[i].msg = malloc(BOTH_MAX_MSG);
		REQUIRE(o, w[i].msg);
	}
	while ((!w[0].eof || !w[1].eof) && !err[0] && !err[1] && now_ms() < deadline) {
		struct pollfd p[2] = { { .fd = c, .events = POLLIN }, { .fd = s, .events = POLLIN } };

		for (int i = 0; i < 2; i++)
			if (w[i].sent < w[i].total)
				p[i].events |= POLLOUT; /* w[i] writes on p[i]'s socket */
		poll(p, 2, 100);
		for (int i = 0; i < 2 && !err[0] && !err[1]; i++) {
			if (p[i].revents & POLLOUT)
				err[i] = way_send(&w[i]);
			if (p[i].revents & (POLLIN | POLLHUP | POLLERR))
				err[1 - i] = way_recv(&w[1 - i], buf, sizeof(buf)); /* p[i]'s socket reads the other way */
		}
	}
	for (int i = 0; i < 2; i++) {
		SEE(o, (long)w[i].recvd);
		SEE(o, err[i]);
		SEE(o, w[i].eof);
		free(w[i].msg);
	}
	close(c);
	close(s);
	return 0;
}

const struct sem_scenario *sem_find(const char *name)
{
	static const struct sem_scenario all[] = {
		{ "half_close", 1, half_close },
		{ "close_after_send", 1, close_after_send },
		{ "reset", 1, reset },
		{ "fionread_and_peek", 1, fionread_and_peek },
		{ "epoll_readiness", 1, epoll_readiness },
		{ "epoll_ctl_sequence", 1, epoll_ctl_sequence },
		{ "sendfile", 1, sendfile_case },
		{ "splice_read", 1, splice_read },
		{ "both_directions", 1, both_directions },
	};

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (!strcmp(all[i].name, name))
			return &all[i];
	return NULL;
}

int sem_pair(int nonblock, int *c, int *s)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int type = SOCK_STREAM | (nonblock ? SOCK_NONBLOCK : 0), l, err = 0;
	struct pollfd p;

	*c = *s = -1;
	l = socket(AF_INET, type, 0);
	if (l < 0)
		return -errno;
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 16) || getsockname(l, (struct sockaddr *)&a, &len))
		goto fail;
	*c = socket(AF_INET, type, 0);
	if (*c < 0)
		goto fail;
	if (connect(*c, (struct sockaddr *)&a, sizeof(a))) {
		if (errno != EINPROGRESS)
			goto fail;
		p = (struct pollfd){ .fd = *c, .events = POLLOUT };
		len = sizeof(err);
		if (poll(&p, 1, scaled_ms(5000)) != 1 || getsockopt(*c, SOL_SOCKET, SO_ERROR, &err, &len))
			err = ETIMEDOUT;
		if (err)
			goto fail_err;
	}
	p = (struct pollfd){ .fd = l, .events = POLLIN };
	if (poll(&p, 1, scaled_ms(5000)) != 1) {
		err = ETIMEDOUT;
		goto fail_err;
	}
	*s = accept4(l, NULL, NULL, nonblock ? SOCK_NONBLOCK : 0);
	if (*s < 0)
		goto fail;
	close(l);
	return 0;
fail:
	err = errno;
fail_err:
	if (*c >= 0)
		close(*c);
	close(l);
	*c = -1;
	return -err;
}
