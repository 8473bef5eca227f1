// SPDX-License-Identifier: GPL-2.0-only
/*
 * Socket semantics stay TCP's.  Each scenario runs twice: on a confirmed
 * shortcut connection and on plain TCP (sockets made outside lism's cgroup),
 * and what the application observes must be the same.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "traffic.h"

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

TestSuite(semantics, .init = gate, .fini = down, .timeout = 120);

#define OBS_MAX 32

/* What an application saw: a list of results, compared between the two runs. */
struct obs {
	long v[OBS_MAX];
	int n;
};

static void see(struct obs *o, long v)
{
	cr_assert_lt(o->n, OBS_MAX);
	o->v[o->n++] = v;
}

/* recv result as "bytes" or "-errno" */
static long recv_result(int fd, void *buf, size_t len, int flags)
{
	ssize_t n = recv(fd, buf, len, flags);

	return n < 0 ? -errno : n;
}

static int wait_readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms);
}

static void compare(const struct obs *plain, const struct obs *l, const char *how)
{
	cr_assert_eq(l->n, plain->n, "%d observations under lism (%s), %d with TCP", l->n, how, plain->n);
	for (int i = 0; i < plain->n; i++)
		cr_assert_eq(l->v[i], plain->v[i], "observation %d: lism (%s) %ld, TCP %ld", i, how,
			     l->v[i], plain->v[i]);
}

enum {
	AS_MEMBERS = 1, /* a confirmed pair before any reply: sends over TCP, reads through tcp_bpf */
	AS_SENDERS = 2, /* after a round trip: both ends' sends run the data path */
};

/* Shortcut bytes of the last both_ways_as() run's members and senders pairs. */
static __u64 sc_members, sc_senders;

/*
 * Run @scenario on plain TCP, then on a lism pair as members and as senders
 * (include/lism/sender.h); compare observations.  Scenarios close both sockets.
 */
static void both_ways_as(void (*scenario)(int c, int s, struct obs *o), int nonblock, int as)
{
	struct lism_snapshot st;
	struct obs plain = { 0 }, members = { 0 }, senders = { 0 };
	__u64 sc0;
	int c, s;

	require_root();
	env_up(&e, NULL);

	env_plain(&e);
	tcp_pair(AF_INET, "127.0.0.1", nonblock, &c, &s); /* where no lism is: plain TCP */
	env_leave(&e);
	snap(&e, &st);
	cr_assert_eq(st.stats[LISM_S_PROPOSALS_SENT], 0, "the plain pair is not under lism");
	scenario(c, s, &plain);

	env_enter(&e);
	if (as & AS_MEMBERS) {
		tcp_pair(AF_INET, "127.0.0.1", nonblock, &c, &s);
		snap(&e, &st);
		cr_assert_eq(st.confirmed, 1, "the lism pair is not confirmed");
		cr_assert_eq(st.sender_sockets, 0, "senders before any reply");
		sc0 = st.stats[LISM_S_SC_BYTES];
		scenario(c, s, &members);
		compare(&plain, &members, "members");
		cr_assert_eq(wait_drained(&e, 3000), 0);
		snap(&e, &st);
		sc_members = st.stats[LISM_S_SC_BYTES] - sc0;
	}
	if (as & AS_SENDERS) {
		tcp_pair(AF_INET, "127.0.0.1", nonblock, &c, &s);
		snap(&e, &st);
		cr_assert_eq(st.confirmed, 1, "the lism pair is not confirmed");
		make_senders(&e, c, s);
		sc0 = st.stats[LISM_S_SC_BYTES];
		scenario(c, s, &senders);
		compare(&plain, &senders, "senders");
	}
	cr_assert_eq(wait_drained(&e, 3000), 0);
	snap(&e, &st);
	if (as & AS_SENDERS)
		sc_senders = st.stats[LISM_S_SC_BYTES] - sc0;
}

static void both_ways(void (*scenario)(int c, int s, struct obs *o), int nonblock)
{
	both_ways_as(scenario, nonblock, AS_MEMBERS | AS_SENDERS);
}

static void half_close(int c, int s, struct obs *o)
{
	char buf[4096];

	cr_assert_eq(send_all(c, 1, 0, 100000), 0);
	see(o, shutdown(c, SHUT_WR));
	see(o, recv_check(s, 1, 0, 100000, 5000));
	see(o, wait_readable(s, 2000));
	see(o, recv_result(s, buf, sizeof(buf), 0)); /* EOF after exactly the data */
	see(o, recv_result(s, buf, sizeof(buf), 0)); /* and again */
	see(o, send(c, "x", 1, MSG_NOSIGNAL) < 0 ? -errno : 1); /* EPIPE after SHUT_WR */
	/* the other direction still works */
	cr_assert_eq(send_all(s, 2, 0, 50000), 0);
	see(o, recv_check(c, 2, 0, 50000, 5000));
	see(o, shutdown(s, SHUT_WR));
	see(o, wait_readable(c, 2000));
	see(o, recv_result(c, buf, sizeof(buf), 0));
	close(c);
	close(s);
}

Test(semantics, half_close_gives_eof_after_the_data)
{
	both_ways(half_close, 1);
}

static void close_after_send(int c, int s, struct obs *o)
{
	char buf[4096];

	cr_assert_eq(send_all(s, 3, 0, 1 << 20), 0);
	see(o, close(s));
	see(o, recv_check(c, 3, 0, 1 << 20, 5000));
	see(o, wait_readable(c, 2000));
	see(o, recv_result(c, buf, sizeof(buf), 0));
	close(c);
}

Test(semantics, close_after_send_delivers_everything_then_eof)
{
	both_ways(close_after_send, 1);
}

static void reset(int c, int s, struct obs *o)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	char buf[64];

	cr_assert_eq(send_all(c, 4, 0, 1000), 0);
	see(o, recv_check(s, 4, 0, 1000, 5000));
	see(o, setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)));
	see(o, close(s)); /* abortive close: RST */
	see(o, wait_readable(c, 2000));
	see(o, recv_result(c, buf, sizeof(buf), 0)); /* ECONNRESET */
	see(o, recv_result(c, buf, sizeof(buf), 0)); /* then EOF */
	see(o, send(c, "x", 1, MSG_NOSIGNAL) < 0 ? -errno : 1);
	close(c);
}

Test(semantics, reset_reports_econnreset)
{
	both_ways(reset, 1);
}

static void fionread_and_peek(int c, int s, struct obs *o)
{
	char peek[100], buf[100];
	int avail = -1;

	cr_assert_eq(send_all(c, 5, 0, 12345), 0);
	cr_assert_eq(wait_readable(s, 2000), 1);
	for (int i = 0; i < 100 && avail != 12345; i++) {
		ioctl(s, FIONREAD, &avail);
		if (avail != 12345)
			usleep(1000);
	}
	see(o, avail);
	see(o, recv_result(s, peek, sizeof(peek), MSG_PEEK));
	see(o, recv_result(s, peek, sizeof(peek), MSG_PEEK)); /* peeking again: same bytes */
	see(o, recv_result(s, buf, sizeof(buf), 0));
	see(o, memcmp(peek, buf, sizeof(buf)) == 0);
	see(o, buf[0] == (char)pattern_at(5, 0) && buf[99] == (char)pattern_at(5, 99));
	ioctl(s, FIONREAD, &avail);
	see(o, avail);
	see(o, recv_check(s, 5, 100, 12245, 5000));
	ioctl(s, FIONREAD, &avail);
	see(o, avail);
	see(o, recv_result(s, buf, sizeof(buf), MSG_DONTWAIT)); /* empty: EAGAIN */
	close(c);
	close(s);
}

/* Members read TCP bytes through tcp_bpf, whose FIONREAD does not count them: see below. */
Test(semantics, fionread_and_msg_peek)
{
	both_ways_as(fionread_and_peek, 1, AS_SENDERS);
}

/*
 * This kernel's FIONREAD on a socket in a sockmap (tcp_bpf_ioctl) counts
 * only its shortcut queue, not bytes that arrived over TCP: a member that
 * is sent to over TCP (before its peer is a sender, during an order sync,
 * with a full DMB) reads 0 while those bytes wait.  Canary for a kernel fix.
 */
Test(semantics, kernel_fionread_ignores_tcp_bytes_of_a_member)
{
	int c, s, avail = -1;

	require_root();
	env_up(&e, NULL);
	env_enter(&e);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c, &s);
	cr_assert_eq(send_all(c, 14, 0, 1000), 0);
	cr_assert_eq(wait_readable(s, 2000), 1);
	usleep(20 * 1000);
	cr_assert_eq(ioctl(s, FIONREAD, &avail), 0);
	if (getenv("LISM_KERNEL_MATRIX")) /* Debian's 6.12.117 counts them (docs/kernels.md) */
		cr_assert(avail == 0 || avail == 1000, "FIONREAD said %d", avail);
	else
		cr_assert_eq(avail, 0, "FIONREAD counted TCP bytes of a sockmap socket (%d): the kernel was "
			     "fixed, update docs/semantics.md", avail);
	cr_assert_eq(recv_check(s, 14, 0, 1000, 5000), 0, "the bytes are there all the same");
	close(c);
	close(s);
}

static void epoll_readiness(int c, int s, struct obs *o)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP }, out[4];
	int ep = epoll_create1(0), n;
	char buf[1000];

	ev.data.fd = s;
	epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev);
	n = epoll_wait(ep, out, 4, 100);
	see(o, n);
	see(o, n == 1 ? (long)(out[0].events & (EPOLLIN | EPOLLOUT | EPOLLRDHUP)) : -1); /* OUT only */
	cr_assert_eq(send_all(c, 6, 0, 1000), 0);
	n = epoll_wait(ep, out, 4, 1000);
	see(o, n == 1 ? (long)(out[0].events & (EPOLLIN | EPOLLRDHUP)) : -1); /* IN */
	see(o, recv_check(s, 6, 0, 1000, 1000));
	n = epoll_wait(ep, out, 4, 100);
	see(o, n == 1 ? (long)(out[0].events & (EPOLLIN | EPOLLRDHUP)) : -1); /* nothing to read */
	shutdown(c, SHUT_WR);
	n = epoll_wait(ep, out, 4, 1000);
	see(o, n == 1 ? (long)(out[0].events & (EPOLLIN | EPOLLRDHUP)) : -1); /* IN|RDHUP */
	see(o, recv_result(s, buf, sizeof(buf), 0));
	close(ep);
	close(c);
	close(s);
}

Test(semantics, epoll_readiness)
{
	both_ways(epoll_readiness, 1);
}

static void write_pattern_file(int fd, __u32 seed, __u64 size)
{
	char buf[65536];

	for (__u64 off = 0; off < size; off += sizeof(buf)) {
		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = (char)pattern_at(seed, off + i);
		cr_assert_eq(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	}
}

static void sendfile_case(int c, int s, struct obs *o)
{
	char path[] = "/tmp/lism-sendfile-XXXXXX";
	const __u64 size = 5u << 20;
	int fd = mkstemp(path);
	off_t off = 0;
	__u64 sent = 0;

	cr_assert_geq(fd, 0);
	unlink(path);
	write_pattern_file(fd, 8, size);
	set_nonblock(c, 0);
	/* the receiver reads in a child so a blocking sendfile cannot stall it */
	pid_t pid = fork();

	if (pid == 0)
		_exit(recv_check(s, 8, 0, size, 10000) == 0 ? 0 : 1);
	while (sent < size) {
		ssize_t n = sendfile(c, fd, &off, size - sent);

		if (n <= 0)
			break;
		sent += n;
	}
	see(o, (long)sent);
	int st;

	waitpid(pid, &st, 0);
	see(o, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	close(fd);
	close(c);
	close(s);
}

Test(semantics, sendfile_delivers_the_file)
{
	both_ways(sendfile_case, 1);
	/* each run's bytes pass the verdict once (the members run may join mid-file: bulk sends) */
	cr_assert_leq(sc_members, 5u << 20);
	cr_assert_leq(sc_senders, 5u << 20);
	cr_assert_gt(sc_senders, 1u << 20, "sendfile did not use the shortcut");
}

/* splice(2) from the socket into a pipe: what proxies that splice do. */
static long splice_in(int c, int s, __u32 seed)
{
	long got = 0;
	int p[2];

	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(send_all(c, seed, 0, 3000), 0);
	cr_assert_eq(wait_readable(s, 2000), 1);
	for (int i = 0; i < 50 && got < 3000; i++) {
		ssize_t n = splice(s, NULL, p[1], NULL, 3000 - got, SPLICE_F_NONBLOCK);

		if (n > 0)
			got += n;
		else
			usleep(10000);
	}
	for (long i = 0; i < got; i++) {
		char b;

		cr_assert_eq(read(p[0], &b, 1), 1);
		cr_assert_eq(b, (char)pattern_at(seed, i));
	}
	close(p[0]);
	close(p[1]);
	return got;
}

/*
 * This kernel's splice read path (tcp_splice_read) only looks at the TCP
 * receive queue, so it never sees shortcut bytes.  Receivers that splice
 * must be excluded by port; then they behave exactly as with TCP.
 */
Test(semantics, splice_reader_on_an_excluded_port_is_plain_tcp)
{
	struct lism_snapshot st;
	int port = 4431, l, c, s;

	require_root();
	env_up(&e, "--exclude-port 4431");
	env_enter(&e);
	l = tcp_listen(AF_INET, "127.0.0.1", &port, 1);
	c = tcp_connect(AF_INET, "127.0.0.1", port, 1);
	s = tcp_accept(l, 1, 5000);
	snap(&e, &st);
	cr_assert_eq(st.reasons[LISM_R_POLICY], 1);
	cr_assert_eq(st.usage.dmbs_in_use, 0);
	cr_assert_eq(splice_in(c, s, 9), 3000);
	close(c);
	close(s);
	close(l);
}

Test(semantics, kernel_splice_does_not_see_shortcut_bytes)
{
	int c, s;

	require_root();
	env_up(&e, NULL);
	env_enter(&e);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c, &s);
	make_senders(&e, c, s);
	cr_assert_eq(splice_in(c, s, 10), 0,
		     "splice saw shortcut bytes: the kernel was fixed, update docs/semantics.md");
	close(c);
	close(s);
}
