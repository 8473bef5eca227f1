// SPDX-License-Identifier: GPL-2.0-only
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "traffic.h"
#include "slow.h"

/* An odd length, so a loss or duplicate of any "round" size still mismatches. */
#define PAT_LEN ((16u << 20) + 13)
static __u8 *pat;

static void pattern_init(void)
{
	__u64 x = 0x9e3779b97f4a7c15ull;

	if (pat)
		return;
	pat = malloc(PAT_LEN);
	cr_assert_not_null(pat);
	for (__u32 i = 0; i < PAT_LEN; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		pat[i] = (__u8)(x >> 32);
	}
}

static __u32 pat_off(__u32 seed, __u64 pos)
{
	return (__u32)((pos + (__u64)seed * 7919u) % PAT_LEN);
}

__u8 pattern_at(__u32 seed, __u64 pos)
{
	pattern_init();
	return pat[pat_off(seed, pos)];
}

/* Pointer to pattern bytes at @pos, valid for the returned length (>= 1). */
static const __u8 *pattern_span(__u32 seed, __u64 pos, __u64 want, __u64 *len)
{
	__u32 off = pat_off(seed, pos);

	*len = PAT_LEN - off < want ? PAT_LEN - off : want;
	return pat + off;
}

const __u8 *pattern_span_public(__u32 seed, __u64 pos, __u64 want, __u64 *len)
{
	pattern_init();
	return pattern_span(seed, pos, want, len);
}

void set_nonblock(int fd, int on)
{
	int fl = fcntl(fd, F_GETFL);

	cr_assert_geq(fl, 0);
	cr_assert_eq(fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK), 0);
}

static socklen_t make_addr(int family, const char *addr, int port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;

		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		cr_assert_eq(inet_pton(AF_INET, addr, &a->sin_addr), 1, "bad address %s", addr);
		return sizeof(*a);
	}
	struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

	a->sin6_family = AF_INET6;
	a->sin6_port = htons(port);
	cr_assert_eq(inet_pton(AF_INET6, addr, &a->sin6_addr), 1, "bad address %s", addr);
	return sizeof(*a);
}

int tcp_listen(int family, const char *addr, int *port, int nonblock)
{
	struct sockaddr_storage ss;
	socklen_t len = make_addr(family, addr, *port, &ss);
	int fd, one = 1, zero = 0;

	fd = socket(family, SOCK_STREAM | (nonblock ? SOCK_NONBLOCK : 0), 0);
	cr_assert_geq(fd, 0, "socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	cr_assert_eq(bind(fd, (struct sockaddr *)&ss, len), 0, "bind %s: %s", addr, strerror(errno));
	cr_assert_eq(listen(fd, 4096), 0);
	len = sizeof(ss);
	getsockname(fd, (struct sockaddr *)&ss, &len);
	*port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

int tcp_connect_try(int family, const char *addr, int port, int nonblock)
{
	struct sockaddr_storage ss;
	socklen_t len = make_addr(family, addr, port, &ss);
	struct pollfd p;
	int fd, err = 0;

	fd = socket(family, SOCK_STREAM | (nonblock ? SOCK_NONBLOCK : 0), 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&ss, len)) {
		err = errno;
		if (err == EINPROGRESS) {
			p.fd = fd;
			p.events = POLLOUT;
			len = sizeof(err);
			err = poll(&p, 1, 5000) == 1 ? 0 : ETIMEDOUT;
			if (!err)
				getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
		}
	}
	if (err) {
		close(fd);
		return -err;
	}
	return fd;
}

int tcp_connect(int family, const char *addr, int port, int nonblock)
{
	int fd = tcp_connect_try(family, addr, port, nonblock);

	cr_assert_geq(fd, 0, "connect %s:%d: %s", addr, port, strerror(-fd));
	return fd;
}

int tcp_accept_try(int lfd, int nonblock, int timeout_ms)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	int fd;

	if (poll(&p, 1, scaled_ms(timeout_ms)) != 1)
		return -ETIMEDOUT;
	fd = accept4(lfd, NULL, NULL, nonblock ? SOCK_NONBLOCK : 0);
	return fd < 0 ? -errno : fd;
}

int tcp_accept(int lfd, int nonblock, int timeout_ms)
{
	int fd = tcp_accept_try(lfd, nonblock, timeout_ms);

	cr_assert_geq(fd, 0, "accept: %s", strerror(-fd));
	return fd;
}

void tcp_pair(int family, const char *addr, int nonblock, int *c, int *s)
{
	int port = 0, l = tcp_listen(family, addr, &port, nonblock);

	*c = tcp_connect(family, addr, port, nonblock);
	*s = tcp_accept(l, nonblock, 5000);
	close(l);
}

static __u64 rng_next(__u64 *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Log-uniform in [1, max]: many small sends and some huge ones. */
static __u32 msg_size(__u64 *rng, __u32 max)
{
	__u32 bits = 0, r;

	while ((1u << bits) < max && bits < 31)
		bits++;
	r = (__u32)rng_next(rng);
	__u32 b = r % (bits + 1);
	__u32 sz = 1 + (__u32)(rng_next(rng) % (1ull << b));

	return sz > max ? max : sz;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

struct dir {
	int from, to;
	__u64 total, sent, recvd, next;
	__u64 rng;
	__u32 seed;
};

/*
 * Like an event loop: write up to a budget, then go back to poll (and read).
 * Writing until EAGAIN would only ever stop on a full DMB with the shortcut.
 */
#define SEND_BUDGET (1u << 20)

static int dir_send(struct dir *d, __u32 max_msg, struct pump_result *r, int idx)
{
	__u64 budget_end = d->sent + SEND_BUDGET;

	while (d->sent < d->total && d->sent < budget_end) {
		__u64 want, len;
		const __u8 *p;
		ssize_t n;

		if (!d->next)
			d->next = msg_size(&d->rng, max_msg);
		want = d->next < d->total - d->sent ? d->next : d->total - d->sent;
		p = pattern_span(d->seed, d->sent, want, &len);
		n = send(d->from, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN)
				return 0;
			snprintf(r->why, sizeof(r->why), "send dir %d at %llu: %s", idx,
				 (unsigned long long)d->sent, strerror(errno));
			return -1;
		}
		d->sent += n;
		d->next -= (__u64)n < d->next ? (__u64)n : d->next;
		r->msgs[idx]++;
	}
	return 0;
}

static int dir_recv(struct dir *d, __u8 *buf, size_t buflen, struct pump_result *r, int idx)
{
	for (;;) {
		ssize_t n = recv(d->to, buf, buflen, MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EAGAIN)
				return 0;
			snprintf(r->why, sizeof(r->why), "recv dir %d at %llu: %s", idx,
				 (unsigned long long)d->recvd, strerror(errno));
			return -1;
		}
		if (n == 0) {
			snprintf(r->why, sizeof(r->why), "dir %d: EOF after %llu of %llu bytes", idx,
				 (unsigned long long)d->recvd, (unsigned long long)d->total);
			return -1;
		}
		if (d->recvd + n > d->total) {
			snprintf(r->why, sizeof(r->why), "dir %d: %llu bytes more than were sent", idx,
				 (unsigned long long)(d->recvd + n - d->total));
			return -1;
		}
		for (__u64 done = 0; done < (__u64)n;) {
			__u64 len;
			const __u8 *p = pattern_span(d->seed, d->recvd + done, n - done, &len);

			if (memcmp(buf + done, p, len)) {
				__u64 i = 0;

				while (buf[done + i] == p[i])
					i++;
				snprintf(r->why, sizeof(r->why),
					 "dir %d: byte %llu is 0x%02x, expected 0x%02x", idx,
					 (unsigned long long)(d->recvd + done + i), buf[done + i], p[i]);
				return -1;
			}
			done += len;
		}
		d->recvd += n;
		r->moved[idx] = d->recvd;
	}
}

void pump_from(int a, int b, __u64 ab_off, __u64 ab, __u64 ba_off, __u64 ba, __u32 max_msg,
	       __u32 seed, int timeout_ms, struct pump_result *r)
{
	struct dir dirs[2] = {
		{ .from = a, .to = b, .total = ab_off + ab, .sent = ab_off,
		  .rng = 0x1234567ull + seed, .seed = seed },
		{ .from = b, .to = a, .total = ba_off + ba, .sent = ba_off,
		  .rng = 0x7654321ull + seed, .seed = seed + 1 },
	};
	ab += ab_off;
	ba += ba_off;
	size_t buflen = 4u << 20;
	__u8 *buf = malloc(buflen);
	double deadline = now_ms() + scaled_ms(timeout_ms);

	pattern_init();
	memset(r, 0, sizeof(*r));
	cr_assert_not_null(buf);
	while (dirs[0].recvd < ab || dirs[1].recvd < ba) {
		struct pollfd p[2] = { { .fd = a }, { .fd = b } };

		for (int i = 0; i < 2; i++) {
			p[i].events = POLLIN;
			if (dirs[i].sent < dirs[i].total)
				p[i].events |= POLLOUT;
		}
		if (now_ms() > deadline) {
			snprintf(r->why, sizeof(r->why),
				 "timeout: a->b %llu/%llu, b->a %llu/%llu received",
				 (unsigned long long)dirs[0].recvd, (unsigned long long)ab,
				 (unsigned long long)dirs[1].recvd, (unsigned long long)ba);
			goto out;
		}
		if (poll(p, 2, 100) < 0 && errno != EINTR) {
			snprintf(r->why, sizeof(r->why), "poll: %s", strerror(errno));
			goto out;
		}
		for (int i = 0; i < 2; i++) {
			/* dirs[0] sends on a and receives on b; dirs[1] the other way */
			if ((p[i].revents & POLLOUT) && dir_send(&dirs[i], max_msg, r, i))
				goto out;
			if ((p[i].revents & (POLLIN | POLLHUP | POLLERR)) &&
			    dir_recv(&dirs[1 - i], buf, buflen, r, 1 - i))
				goto out;
		}
	}
	r->ok = 1;
out:
	free(buf);
}

void pump(int a, int b, __u64 ab, __u64 ba, __u32 max_msg, __u32 seed, int timeout_ms,
	  struct pump_result *r)
{
	pump_from(a, b, 0, ab, 0, ba, max_msg, seed, timeout_ms, r);
}

int send_all(int fd, __u32 seed, __u64 off, __u64 n)
{
	pattern_init();
	for (__u64 done = 0; done < n;) {
		__u64 len;
		const __u8 *p = pattern_span(seed, off + done, n - done, &len);
		ssize_t w = send(fd, p, len, MSG_NOSIGNAL);

		if (w < 0) {
			if (errno == EAGAIN) {
				struct pollfd pf = { .fd = fd, .events = POLLOUT };

				poll(&pf, 1, 1000);
				continue;
			}
			return -errno;
		}
		done += w;
	}
	return 0;
}

int recv_check(int fd, __u32 seed, __u64 off, __u64 n, int timeout_ms)
{
	__u8 buf[65536];
	double deadline = now_ms() + scaled_ms(timeout_ms);

	pattern_init();
	for (__u64 done = 0; done < n;) {
		size_t want = n - done < sizeof(buf) ? n - done : sizeof(buf);
		ssize_t r = recv(fd, buf, want, 0);

		if (r < 0 && errno == EAGAIN) {
			struct pollfd pf = { .fd = fd, .events = POLLIN };

			if (now_ms() > deadline)
				return -ETIMEDOUT;
			poll(&pf, 1, 100);
			continue;
		}
		if (r < 0)
			return -errno;
		if (r == 0)
			return -EPIPE; /* EOF too early */
		for (ssize_t i = 0; i < r; i++)
			if (buf[i] != pattern_at(seed, off + done + i))
				return -EILSEQ;
		done += r;
	}
	return 0;
}
