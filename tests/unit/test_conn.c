// SPDX-License-Identifier: GPL-2.0-only
/*
 * A ring connection end's socket calls (exec/conn.c) over a real loopback
 * TCP connection as the doorbell channel and a ring pair in shared memory,
 * without BPF or a device: checksummed streams blocking and through epoll
 * (level- and edge-triggered), runs through TCP keeping the stream in
 * order, the TCP bytes showing only doorbells, half-close, close, reset,
 * MSG_PEEK, MSG_WAITALL, FIONREAD, a blocking writer whose reader went, and
 * an end under a seccomp filter as sshd's pre-auth child's.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exec/conn.h"

struct cpair {
	void *mem;
	__u64 len;
	int fd[2];               /* fd[0]: end 0 (the active end) */
	struct lism_conn *c[2];
};

static void tcp_pair(int fd[2])
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	cr_assert_geq(l, 0);
	cr_assert_eq(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(l, 1), 0);
	cr_assert_eq(getsockname(l, (struct sockaddr *)&sa, &len), 0);
	fd[0] = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_eq(connect(fd[0], (struct sockaddr *)&sa, sizeof(sa)), 0);
	fd[1] = accept(l, NULL, NULL);
	cr_assert_geq(fd[1], 0);
	close(l);
	setsockopt(fd[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void cpair_open(struct cpair *p, __u32 dmb_size)
{
	p->len = lism_ring_region_size(dmb_size);
	p->mem = mmap(NULL, p->len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(p->mem, MAP_FAILED);
	cr_assert_eq(lism_ring_init(p->mem, p->len, dmb_size, 1, 11, 22), 0);
	tcp_pair(p->fd);
	for (int end = 0; end < 2; end++) {
		struct lism_exec_map m = { .len = p->len, .end = end };

		/* each end a mapping of its own, as each process has */
		m.base = mremap(p->mem, 0, p->len, MREMAP_MAYMOVE);
		cr_assert_neq(m.base, MAP_FAILED);
		cr_assert_eq(lism_ring_attach(m.base, m.len, end, &m.rx, &m.tx), 0);
		cr_assert_eq(lism_conn_open(&m, &p->c[end]), 0);
	}
}

static void cpair_close(struct cpair *p)
{
	for (int end = 0; end < 2; end++) {
		if (p->c[end])
			lism_conn_release(p->c[end], p->fd[end]);
		if (p->fd[end] >= 0)
			close(p->fd[end]);
	}
	munmap(p->mem, p->len);
}

static ssize_t csend(struct cpair *p, int end, const void *buf, size_t n, int flags)
{
	struct iovec v = { (void *)buf, n };

	return lism_conn_send(p->c[end], p->fd[end], &v, 1, flags);
}

static ssize_t crecv(struct cpair *p, int end, void *buf, size_t n, int flags)
{
	struct iovec v = { buf, n };

	return lism_conn_recv(p->c[end], p->fd[end], &v, 1, flags);
}

/* Bytes the kernel's TCP carried into @fd (payload). */
static __u64 tcp_bytes_in(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	cr_assert_eq(getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len), 0);
	return ti.tcpi_bytes_received;
}

static __u64 mix(__u64 h, const unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

/* ---- streams ---- */

struct stream {
	struct cpair *p;
	__u64 bytes, sum;
	int nonblock, edge; /* epoll; edge-triggered */
	int echo;           /* the reader reads end 0: the stream echoed back */
	unsigned seed;
	int err;
};

#define STREAM_BYTES (64ull << 20)

static void wait_fd(int fd, __u32 events)
{
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = events }, out;

	epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	cr_assert_eq(epoll_wait(ep, &out, 1, 10000), 1, "10 s without readiness: a lost doorbell");
	close(ep);
}

static void *stream_writer(void *arg)
{
	struct stream *s = arg;
	unsigned char buf[70000];
	__u64 x = 88172645463325252ull;

	while (s->bytes < STREAM_BYTES) {
		size_t n = 1 + rand_r(&s->seed) % (rand_r(&s->seed) % 4 ? 3000 : sizeof(buf));

		if (n > STREAM_BYTES - s->bytes)
			n = STREAM_BYTES - s->bytes;
		for (size_t i = 0; i < n; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			buf[i] = (unsigned char)x;
		}
		for (size_t off = 0; off < n;) {
			ssize_t k = csend(s->p, 0, buf + off, n - off, s->nonblock ? MSG_DONTWAIT : 0);

			if (k > 0) {
				s->sum = mix(s->sum, buf + off, k);
				off += k;
			} else if (k == -EAGAIN && s->nonblock) {
				wait_fd(s->p->fd[0], EPOLLOUT);
			} else {
				s->err = (int)k;
				return NULL;
			}
		}
		s->bytes += n;
	}
	cr_assert_eq(lism_conn_shutdown(s->p->c[0], s->p->fd[0], SHUT_WR), 0);
	return NULL;
}

static void *stream_reader(void *arg)
{
	struct stream *s = arg;
	unsigned char buf[100000];
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN | (s->edge ? EPOLLET : 0) }, out;

	epoll_ctl(ep, EPOLL_CTL_ADD, s->p->fd[!s->echo], &ev);
	for (;;) {
		ssize_t k = crecv(s->p, !s->echo, buf, 1 + rand_r(&s->seed) % sizeof(buf), s->nonblock ? MSG_DONTWAIT : 0);

		if (k > 0) {
			s->sum = mix(s->sum, buf, k);
			s->bytes += k;
		} else if (k == 0) {
			break;
		} else if (k == -EAGAIN && s->nonblock) {
			/* edge-triggered: read until EAGAIN, as epoll(7) says, then wait for an edge */
			if (epoll_wait(ep, &out, 1, 10000) != 1) {
				s->err = -ETIMEDOUT;
				break;
			}
		} else {
			s->err = (int)k;
			break;
		}
	}
	close(ep);
	return NULL;
}

static void stream(__u32 dmb_size, int nonblock, int edge, __u64 *tcp_bytes, __u64 *runs)
{
	struct cpair p;
	struct stream w = { .p = &p, .nonblock = nonblock, .seed = 7 };
	struct stream r = { .p = &p, .nonblock = nonblock, .edge = edge, .seed = 9 };
	pthread_t tw, tr;

	cpair_open(&p, dmb_size);
	pthread_create(&tr, NULL, stream_reader, &r);
	pthread_create(&tw, NULL, stream_writer, &w);
	pthread_join(tw, NULL);
	pthread_join(tr, NULL);
	cr_assert_eq(w.err, 0, "writer: %s", strerror(-w.err));
	cr_assert_eq(r.err, 0, "reader: %s", strerror(-r.err));
	cr_assert_eq(r.bytes, STREAM_BYTES);
	cr_assert_eq(r.sum, w.sum, "the stream arrived changed");
	*tcp_bytes = tcp_bytes_in(p.fd[1]);
	*runs = p.c[0]->map.tx.runs;
	cpair_close(&p);
}

Test(conn, blocking_stream_goes_through_the_ring_checksummed, .timeout = 120)
{
	__u64 tcp, runs;

	stream(256 << 10, 0, 0, &tcp, &runs);
	cr_assert_eq(runs, 0, "a blocking writer waits for room, never takes TCP");
	cr_assert_lt(tcp, STREAM_BYTES / 1000, "TCP carried %llu bytes: more than doorbells", (unsigned long long)tcp);
}

Test(conn, nonblocking_level_triggered_stream_checksummed_with_runs, .timeout = 120)
{
	__u64 tcp, runs;

	stream(64 << 10, 1, 0, &tcp, &runs);
	cr_assert_gt(runs, 0, "a small ring and a writer that does not wait: some bytes went in runs");
	cr_assert_lt(tcp, STREAM_BYTES, "not everything went through TCP");
}

Test(conn, nonblocking_edge_triggered_reader_misses_no_edge, .timeout = 120)
{
	__u64 tcp, runs;

	stream(64 << 10, 1, 1, &tcp, &runs);
	cr_assert_gt(runs, 0);
}

/* ---- the calls, one by one ---- */

Test(conn, peek_waitall_and_fionread)
{
	struct cpair p;
	char buf[16] = { 0 };

	cpair_open(&p, 4096);
	cr_assert_eq(lism_conn_unread(p.c[1], p.fd[1]), 0);
	cr_assert_eq(crecv(&p, 1, buf, sizeof(buf), MSG_DONTWAIT), -EAGAIN);
	cr_assert_eq(csend(&p, 0, "hello", 5, 0), 5);
	cr_assert_eq(lism_conn_unread(p.c[1], p.fd[1]), 5);
	cr_assert_eq(crecv(&p, 1, buf, 3, MSG_PEEK), 3);
	cr_assert_eq(memcmp(buf, "hel", 3), 0);
	cr_assert_eq(lism_conn_unread(p.c[1], p.fd[1]), 5, "a peek consumes nothing");
	cr_assert_eq(crecv(&p, 1, buf, 2, 0), 2);
	cr_assert_eq(memcmp(buf, "he", 2), 0);
	cr_assert_eq(csend(&p, 0, "world", 5, 0), 5);
	cr_assert_eq(crecv(&p, 1, buf, 8, MSG_WAITALL), 8);
	cr_assert_eq(memcmp(buf, "lloworld", 8), 0);
	cr_assert_eq(crecv(&p, 1, buf, 1, MSG_DONTWAIT), -EAGAIN);
	cr_assert_eq(tcp_bytes_in(p.fd[1]), 1, "one crossing above 0 (the second send found bytes unread): one doorbell");
	cpair_close(&p);
}

Test(conn, half_close_gives_eof_after_the_data_and_the_other_way_goes_on)
{
	struct cpair p;
	char buf[16];

	cpair_open(&p, 4096);
	cr_assert_eq(csend(&p, 0, "abc", 3, 0), 3);
	cr_assert_eq(lism_conn_shutdown(p.c[0], p.fd[0], SHUT_WR), 0);
	cr_assert_eq(crecv(&p, 1, buf, sizeof(buf), 0), 3);
	cr_assert_eq(crecv(&p, 1, buf, sizeof(buf), 0), 0, "EOF after the data");
	cr_assert_eq(crecv(&p, 1, buf, sizeof(buf), 0), 0, "and again");
	cr_assert_eq(csend(&p, 1, "reply", 5, 0), 5);
	cr_assert_eq(crecv(&p, 0, buf, sizeof(buf), 0), 5, "the half-closed end still reads");
	cr_assert_eq(csend(&p, 0, "x", 1, MSG_NOSIGNAL), -EPIPE, "no sends after SHUT_WR");
	cpair_close(&p);
}

Test(conn, a_close_without_a_word_is_eof_after_every_byte)
{
	struct cpair p;
	char buf[64];

	cpair_open(&p, 4096);
	cr_assert_eq(csend(&p, 0, "last words", 10, 0), 10);
	/* the process went: no shutdown, only the kernel's FIN */
	lism_conn_release(p.c[0], -1);
	p.c[0] = NULL;
	close(p.fd[0]);
	p.fd[0] = -1;
	cr_assert_eq(crecv(&p, 1, buf, sizeof(buf), 0), 10);
	cr_assert_eq(memcmp(buf, "last words", 10), 0);
	cr_assert_eq(crecv(&p, 1, buf, sizeof(buf), 0), 0);
	cpair_close(&p);
}

Test(conn, a_reset_is_econnreset_after_the_bytes)
{
	struct cpair p;
	struct linger lg = { 1, 0 };
	char buf[64];

	cpair_open(&p, 4096);
	cr_assert_eq(csend(&p, 0, "before", 6, 0), 6);
	setsockopt(p.fd[0], SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	lism_conn_release(p.c[0], -1);
	p.c[0] = NULL;
	close(p.fd[0]); /* a reset (kill -9 with unread doorbells gives the same) */
	p.fd[0] = -1;
	usleep(20000);
	cr_assert_eq(crecv(&p, 1, buf, sizeof(buf), 0), 6, "what was written is read first");
	cr_assert_eq(crecv(&p, 1, buf, sizeof(buf), 0), -ECONNRESET);
	cpair_close(&p);
}

/* As TCP: the reset said once, then the end of the stream, and a send after it fails (semantics/reset_*). */
Test(conn, a_reset_is_said_once_then_eof_and_sends_fail)
{
	struct cpair p;
	struct linger lg = { 1, 0 };
	char buf[64];

	cpair_open(&p, 4096);
	cr_assert_eq(csend(&p, 0, "read", 4, 0), 4);
	cr_assert_eq(crecv(&p, 1, buf, sizeof(buf), 0), 4);
	setsockopt(p.fd[1], SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	lism_conn_release(p.c[1], p.fd[1]);
	p.c[1] = NULL;
	close(p.fd[1]); /* the reader's abortive close */
	p.fd[1] = -1;
	cr_assert_eq(crecv(&p, 0, buf, sizeof(buf), 0), -ECONNRESET);
	cr_assert_eq(crecv(&p, 0, buf, sizeof(buf), 0), 0, "said once, then the end of the stream");
	cr_assert_eq(csend(&p, 0, "x", 1, MSG_NOSIGNAL), -EPIPE, "nothing into a ring nobody reads");
	cpair_close(&p);
}

static void *close_later(void *arg)
{
	struct cpair *p = arg;

	usleep(200000);
	lism_conn_release(p->c[1], -1);
	p->c[1] = NULL;
	close(p->fd[1]);
	p->fd[1] = -1;
	return NULL;
}

Test(conn, a_blocking_writer_whose_reader_went_gets_epipe)
{
	struct cpair p;
	char buf[4096] = { 0 };
	pthread_t t;
	ssize_t r;

	cpair_open(&p, 4096);
	cr_assert_eq(csend(&p, 0, buf, sizeof(buf), 0), 4096, "the ring is full");
	pthread_create(&t, NULL, close_later, &p);
	r = csend(&p, 0, buf, 10, MSG_NOSIGNAL);
	pthread_join(t, NULL);
	cr_assert_eq(r, -EPIPE, "the blocked send ends when the reader's socket goes (%zd)", r);
	cpair_close(&p);
}

Test(conn, sndtimeo_ends_a_blocked_send)
{
	struct cpair p;
	struct timeval tv = { 0, 100000 };
	char buf[4096] = { 0 };

	cpair_open(&p, 4096);
	setsockopt(p.fd[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	cr_assert_eq(csend(&p, 0, buf, sizeof(buf), 0), 4096);
	cr_assert_eq(csend(&p, 0, buf, 1, 0), -EAGAIN, "the ring stays full past SO_SNDTIMEO");
	cpair_close(&p);
}

Test(conn, rcvtimeo_ends_a_blocked_recv)
{
	struct cpair p;
	struct timeval tv = { 0, 100000 };
	char buf[16];

	cpair_open(&p, 4096);
	setsockopt(p.fd[1], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	cr_assert_eq(crecv(&p, 1, buf, sizeof(buf), 0), -EAGAIN);
	cpair_close(&p);
}

/* A read that fills part of its buffer from the ring goes on into a run
 * whose bytes are there: an edge-triggered reader takes a short read as
 * "drained" and waits for an edge that would never come. */
Test(conn, one_read_goes_from_the_ring_into_a_run)
{
	struct cpair p;
	char buf[64] = { 0 };

	cpair_open(&p, 8);
	cr_assert_eq(csend(&p, 0, "0123456789", 10, MSG_DONTWAIT), 10, "a full ring goes on in a run, no short count");
	cr_assert(p.c[0]->map.tx.in_run);
	cr_assert_eq(crecv(&p, 1, buf, 64, 0), 10);
	cr_assert_eq(memcmp(buf, "0123456789", 10), 0);
	cpair_close(&p);
}

/* A shutdown in a run ends it: the reader gets the run's bytes, then EOF at once. */
Test(conn, shutdown_in_a_run_is_eof_after_its_bytes)
{
	struct cpair p;
	char buf[64] = { 0 };

	cpair_open(&p, 8);
	cr_assert_eq(csend(&p, 0, "0123456789", 10, MSG_DONTWAIT), 10);
	cr_assert(p.c[0]->map.tx.in_run);
	cr_assert_eq(lism_conn_shutdown(p.c[0], p.fd[0], SHUT_WR), 0);
	cr_assert_not(p.c[0]->map.tx.in_run);
	cr_assert_eq(crecv(&p, 1, buf, 64, MSG_WAITALL), 10);
	cr_assert_eq(memcmp(buf, "0123456789", 10), 0);
	cr_assert_eq(crecv(&p, 1, buf, 64, 0), 0, "EOF");
	cr_assert_eq(p.c[1]->map.rx.in_run, false, "the run was read to its end, not given up on");
	cpair_close(&p);
}

/* A run through TCP between ring bytes: the stream keeps its order, and a peek at a run sees its bytes. */
Test(conn, a_run_keeps_the_stream_in_order)
{
	struct cpair p;
	char buf[64] = { 0 };

	cpair_open(&p, 8);
	cr_assert_eq(csend(&p, 0, "01234567", 8, 0), 8, "the ring is full");
	cr_assert_eq(csend(&p, 0, "abc", 3, MSG_DONTWAIT), 3, "a non-blocking send takes TCP");
	cr_assert(p.c[0]->map.tx.in_run);
	cr_assert_eq(crecv(&p, 1, buf, 4, 0), 4);
	cr_assert_eq(memcmp(buf, "0123", 4), 0);
	cr_assert_eq(csend(&p, 0, "def", 3, MSG_DONTWAIT), 3, "still in the run: the reader has not reached it");
	cr_assert_eq(crecv(&p, 1, buf, 4, 0), 4, "the ring up to the run");
	cr_assert_eq(memcmp(buf, "4567", 4), 0);
	cr_assert_eq(crecv(&p, 1, buf, 2, MSG_PEEK), 2, "a peek at the run");
	cr_assert_eq(memcmp(buf, "ab", 2), 0);
	cr_assert_eq(crecv(&p, 1, buf, 64, 0), 6, "the run, as far as it went");
	cr_assert_eq(memcmp(buf, "abcdef", 6), 0);
	cr_assert_eq(csend(&p, 0, "XY", 2, 0), 2, "the reader read up to the run: back to the ring");
	cr_assert_not(p.c[0]->map.tx.in_run);
	cr_assert_eq(csend(&p, 0, "Z", 1, MSG_DONTWAIT), 1);
	cr_assert_eq(crecv(&p, 1, buf, 64, 0), 3, "one read takes the ring's bytes after the run's end");
	cr_assert_eq(memcmp(buf, "XYZ", 3), 0);
	cr_assert_eq(crecv(&p, 1, buf, 64, MSG_DONTWAIT), -EAGAIN);
	cpair_close(&p);
}

static void *blocked_reader(void *arg)
{
	struct cpair *p = arg;
	char buf[16];

	return (void *)(long)crecv(p, 1, buf, sizeof(buf), 0);
}

/* A thread blocked in recv does not hold the connection: a shutdown on another thread ends its wait. */
Test(conn, shutdown_on_another_thread_ends_a_blocked_recv, .timeout = 120)
{
	struct cpair p;
	pthread_t t;
	void *r;

	cpair_open(&p, 4096);
	pthread_create(&t, NULL, blocked_reader, &p);
	usleep(100000);
	cr_assert_eq(lism_conn_unread(p.c[1], p.fd[1]), 0, "FIONREAD while a recv sleeps");
	cr_assert_eq(lism_conn_shutdown(p.c[1], p.fd[1], SHUT_RDWR), 0);
	pthread_join(t, &r);
	cr_assert_eq((long)r, 0, "the blocked recv says the end (%ld)", (long)r);
	cpair_close(&p);
}

struct sink {
	char got[64];
	size_t n, take; /* bytes it holds; bytes it takes per call (0: says -EAGAIN) */
};

static ssize_t part_sink(void *arg, const void *buf, size_t n)
{
	struct sink *s = arg;

	if (!s->take)
		return -EAGAIN;
	if (n > s->take)
		n = s->take;
	memcpy(s->got + s->n, buf, n);
	s->n += n;
	return (ssize_t)n;
}

/*
 * A splice into a pipe that takes part (a pipe counts slots, not bytes):
 * only what it took leaves the stream, from the ring and from a run, and a
 * pipe that takes nothing leaves everything.
 */
Test(conn, a_sink_that_takes_part_leaves_the_rest_in_the_stream)
{
	struct sink s = { .take = 3 };
	struct cpair p;
	char scratch[64], buf[64] = { 0 };

	cpair_open(&p, 8);
	cr_assert_eq(csend(&p, 0, "01234567", 8, 0), 8, "the ring is full");
	cr_assert_eq(csend(&p, 0, "abc", 3, MSG_DONTWAIT), 3, "then a run");
	cr_assert_eq(lism_conn_recv_into(p.c[1], p.fd[1], scratch, 64, 0, part_sink, &s), 3);
	cr_assert_eq(memcmp(s.got, "012", 3), 0);
	s.take = 0;
	cr_assert_eq(lism_conn_recv_into(p.c[1], p.fd[1], scratch, 64, 0, part_sink, &s), -EAGAIN,
		     "the sink's error is the call's");
	cr_assert_eq(crecv(&p, 1, buf, 4, MSG_PEEK), 4, "nothing left the stream");
	cr_assert_eq(memcmp(buf, "3456", 4), 0);
	s.take = 5;
	cr_assert_eq(lism_conn_recv_into(p.c[1], p.fd[1], scratch, 64, 0, part_sink, &s), 5);
	s.take = 2;
	cr_assert_eq(lism_conn_recv_into(p.c[1], p.fd[1], scratch, 64, 0, part_sink, &s), 2, "into the run");
	cr_assert_eq(memcmp(s.got, "01234567ab", 10), 0);
	cr_assert_eq(crecv(&p, 1, buf, 64, 0), 1);
	cr_assert_eq(buf[0], 'c');
	cr_assert_eq(crecv(&p, 1, buf, 64, MSG_DONTWAIT), -EAGAIN);
	cpair_close(&p);
}

/*
 * A non-blocking writer whose send buffer is full of a run's bytes stays
 * in the run (TCP's EAGAIN) even once its reader has read the ring up to
 * it: back on the ring, it would owe a doorbell it could not send, and a
 * reader that reads once per wakeup (poll, then one recv) would never
 * learn of the ring's bytes.  Once TCP has room it goes back to the ring,
 * and its doorbell wakes that reader.
 */
Test(conn, a_writer_stays_in_its_run_while_tcp_is_full_and_a_poll_reader_sees_every_byte)
{
	static char big[65536], got[1 << 20];
	int small = 4096;
	__u64 run = 0, off = 0;
	struct pollfd pr = { .events = POLLIN };
	struct cpair p;
	ssize_t r;

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)(i * 7 + 1);
	cpair_open(&p, 4096);
	pr.fd = p.fd[1];
	setsockopt(p.fd[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	setsockopt(p.fd[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	cr_assert_eq(csend(&p, 0, big, 4096, 0), 4096, "the ring is full");
	while ((r = csend(&p, 0, big, sizeof(big), MSG_DONTWAIT)) > 0)
		run += (__u64)r;
	cr_assert_eq(r, -EAGAIN);
	cr_assert(p.c[0]->map.tx.in_run && run > 0);
	cr_assert_eq(crecv(&p, 1, got, 4096, MSG_WAITALL), 4096, "the ring up to the run");
	cr_assert_eq(csend(&p, 0, "0123456789", 10, MSG_DONTWAIT), -EAGAIN, "TCP is full: still in the run");
	cr_assert(p.c[0]->map.tx.in_run);
	while (off < run) { /* as an event loop reads: one recv per wakeup */
		cr_assert_eq(poll(&pr, 1, 1000), 1, "no wakeup at %llu of the run's %llu", (unsigned long long)off,
			     (unsigned long long)run);
		r = crecv(&p, 1, got + off, 16384, MSG_DONTWAIT);
		cr_assert_gt(r, 0, "at %llu: %zd", (unsigned long long)off, r);
		off += (__u64)r;
	}
	cr_assert_eq(off, run);
	for (__u64 i = 0; i < run; i++)
		cr_assert_eq(got[i], big[i % sizeof(big)], "run byte %llu", (unsigned long long)i);
	cr_assert_eq(csend(&p, 0, "0123456789", 10, MSG_DONTWAIT), 10, "room again: back to the ring");
	cr_assert_not(p.c[0]->map.tx.in_run);
	cr_assert_eq(poll(&pr, 1, 1000), 1, "the ring's bytes woke no reader");
	cr_assert_eq(crecv(&p, 1, got, 64, MSG_DONTWAIT), 10);
	cr_assert_eq(memcmp(got, "0123456789", 10), 0);
	cr_assert_eq(poll(&pr, 1, 0), 0, "read, and its doorbell eaten");
	cpair_close(&p);
}

/* ---- an end under a seccomp filter ---- */

#define ALLOW(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

/* What sshd's pre-auth sandbox leaves a process (no recvfrom, sendmsg,
 * fcntl, getsockopt, sigaction); anything else kills it. */
static int sshd_sandbox(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		ALLOW(SYS_read), ALLOW(SYS_write), ALLOW(SYS_poll), ALLOW(SYS_ppoll), ALLOW(SYS_futex),
		ALLOW(SYS_nanosleep), ALLOW(SYS_clock_nanosleep), ALLOW(SYS_clock_gettime), ALLOW(SYS_gettimeofday),
		ALLOW(SYS_getpid), ALLOW(SYS_gettid), ALLOW(SYS_exit), ALLOW(SYS_exit_group), ALLOW(SYS_rt_sigprocmask),
		ALLOW(SYS_munmap), ALLOW(SYS_madvise), ALLOW(SYS_brk), ALLOW(SYS_shutdown), ALLOW(SYS_close),
		ALLOW(SYS_sigaltstack), /* the sanitizers' runtime (unit-asan), not liblism */
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

/* End 1 in a child under the filter: echo everything, blocking and not, then shut down. */
static int sandboxed_echo(struct cpair *p)
{
	static char buf[100000];

	lism_conn_sandbox(p->c[1], p->fd[1]);
	lism_conn_sandbox(NULL, -1);
	if (sshd_sandbox())
		return 2;
	for (int i = 0;; i++) {
		ssize_t k = crecv(p, 1, buf, 1 + (size_t)i * 7919 % sizeof(buf), i % 2 ? MSG_DONTWAIT : 0);
		struct pollfd pf = { .fd = p->fd[1], .events = POLLIN };

		if (k == -EAGAIN && i % 2) {
			if (poll(&pf, 1, 10000) != 1)
				return 3;
			continue;
		}
		if (k == 0)
			break;
		if (k < 0)
			return 4;
		for (ssize_t off = 0; off < k;) {
			ssize_t w = csend(p, 1, buf + off, (size_t)(k - off), 0);

			if (w <= 0)
				return 5;
			off += w;
		}
	}
	return lism_conn_shutdown(p->c[1], p->fd[1], SHUT_WR) ? 6 : 0;
}

/* sshd's pre-auth child reads and writes its socket under a seccomp filter
 * that kills it at a recvfrom or a sendmsg: liblism's calls must be ones
 * it allows (the stream in runs too: its writer does not wait). */
Test(conn, an_end_under_sshds_seccomp_filter_reaches_tcp_by_read_write_and_poll, .timeout = 120)
{
	struct cpair p;
	struct stream w = { .p = &p, .nonblock = 1, .seed = 7 };
	struct stream r = { .p = &p, .nonblock = 1, .echo = 1, .seed = 9 };
	pthread_t tw, tr;
	pid_t pid;
	int st;

	cpair_open(&p, 64 << 10);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid)
		_exit(sandboxed_echo(&p));
	pthread_create(&tr, NULL, stream_reader, &r);
	pthread_create(&tw, NULL, stream_writer, &w);
	pthread_join(tw, NULL);
	pthread_join(tr, NULL);
	waitpid(pid, &st, 0);
	cr_assert(WIFEXITED(st) && !WEXITSTATUS(st), "the sandboxed end %s %d", WIFEXITED(st) ? "exited" : "died of",
		  WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	cr_assert_eq(w.err, 0, "writer: %s", strerror(-w.err));
	cr_assert_eq(r.err, 0, "reader: %s", strerror(-r.err));
	cr_assert_eq(r.bytes, STREAM_BYTES);
	cr_assert_eq(r.sum, w.sum, "the echo arrived changed");
	cr_assert_gt(p.c[0]->map.tx.runs, 0, "the sandboxed end read runs");
	cpair_close(&p);
}
