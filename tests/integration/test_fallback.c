// SPDX-License-Identifier: GPL-2.0-only
/* Connections that cannot take the shortcut stay on TCP, exact, with the right reason. */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
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

TestSuite(fallback, .fini = down, .timeout = 120);

/* A stream that must be exact whatever path it took. */
static void exact_stream(int c, int s)
{
	struct pump_result r;

	pump(c, s, 2u << 20, 2u << 20, 64u << 10, 9, 30000, &r);
	cr_assert(r.ok, "%s", r.why);
}

static void assert_fell_back(enum lism_reason reason, __u64 count)
{
	struct lism_snapshot s;

	snap(&e, &s);
	cr_assert_eq(s.reasons[reason], count, "reason %d counted %llu times, want %llu", reason,
		     (unsigned long long)s.reasons[reason], (unsigned long long)count);
	cr_assert_eq(s.confirmed, 0);
	cr_assert_eq(s.shortcut_sockets, 0, "a fallen-back socket is still in the shortcut map");
	cr_assert_eq(s.usage.dmbs_in_use, 0, "a fallen-back connection holds a DMB");
}

static void assert_no_shortcut_bytes(void)
{
	struct lism_snapshot s;

	snap(&e, &s);
	cr_assert_eq(s.stats[LISM_S_SC_BYTES], 0);
}

Test(fallback, peer_without_lism)
{
	int port = 0, l, c, s;

	require_root();
	env_up(&e, NULL);
	l = tcp_listen(AF_INET, "127.0.0.1", &port, 1); /* the server is not under lism */
	env_enter(&e);
	c = tcp_connect(AF_INET, "127.0.0.1", port, 1);
	s = tcp_accept(l, 1, 5000);
	assert_fell_back(LISM_R_PEER_NO_LISM, 1);
	exact_stream(c, s);
	assert_no_shortcut_bytes();
	close(c);
	close(s);
	close(l);
}

Test(fallback, client_without_lism_never_pairs)
{
	struct lism_snapshot st;
	int port = 0, l, c, s;

	require_root();
	env_up(&e, NULL);
	env_enter(&e);
	l = tcp_listen(AF_INET, "127.0.0.1", &port, 1); /* server under lism */
	env_plain(&e);
	c = tcp_connect(AF_INET, "127.0.0.1", port, 1); /* client is not */
	env_leave(&e);
	s = tcp_accept(l, 1, 5000);
	snap(&e, &st);
	cr_assert_eq(st.stats[LISM_S_PROPOSALS_RECV], 0);
	cr_assert_eq(st.usage.dmbs_in_use, 0);
	cr_assert_eq(st.shortcut_sockets, 0);
	exact_stream(c, s);
	assert_no_shortcut_bytes();
	close(c);
	close(s);
	close(l);
}

/* One end in blocking mode: the whole connection stays on TCP, exact. */
static void one_end_blocking(int listener_nonblock, int client_nonblock, enum lism_reason reason)
{
	int port = 0, l, c, s;

	require_root();
	env_up(&e, NULL);
	env_enter(&e);
	l = tcp_listen(AF_INET, "127.0.0.1", &port, listener_nonblock);
	c = tcp_connect(AF_INET, "127.0.0.1", port, client_nonblock);
	s = tcp_accept(l, 1, 5000);
	assert_fell_back(reason, 1);
	set_nonblock(c, 1);
	set_nonblock(s, 1);
	exact_stream(c, s);
	assert_no_shortcut_bytes();
	close(c);
	close(s);
	close(l);
}

Test(fallback, blocking_client_stays_on_tcp)
{
	one_end_blocking(1, 0, LISM_R_BLOCKING);
}

Test(fallback, blocking_listener_declines)
{
	one_end_blocking(0, 1, LISM_R_PEER_DECLINED);
}

static void on_alarm(int sig)
{
	(void)sig;
}

/*
 * The case in the issue: a blocking client sends, shuts down its write side
 * and blocks in recv() for the reply, while a signal arrives.  With TCP the
 * reply arrives; lism must not turn it into EAGAIN.
 */
Test(fallback, blocking_half_close_client_gets_its_reply)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	struct itimerval it = { .it_value = { .tv_usec = 100000 } };
	int port = 0, l, c, s;
	char buf[64];
	pid_t pid;

	require_root();
	env_up(&e, NULL);
	env_enter(&e);
	l = tcp_listen(AF_INET, "127.0.0.1", &port, 1);
	pid = fork();
	if (pid == 0) { /* the server: read the request to EOF, answer late */
		int fd = tcp_accept_try(l, 0, 5000); /* a child must not cr_assert: its fini would run here */

		if (fd < 0)
			_exit(1);
		if (recv_check(fd, 21, 0, 100, 5000))
			_exit(2);
		if (recv(fd, buf, sizeof(buf), 0) != 0)
			_exit(3);
		usleep(300000);
		_exit(send_all(fd, 22, 0, 1000) ? 4 : 0);
	}
	sigaction(SIGALRM, &sa, NULL);
	c = tcp_connect(AF_INET, "127.0.0.1", port, 0);
	cr_assert_eq(send_all(c, 21, 0, 100), 0);
	cr_assert_eq(shutdown(c, SHUT_WR), 0);
	setitimer(ITIMER_REAL, &it, NULL); /* fires while recv() blocks */
	cr_assert_eq(recv_check(c, 22, 0, 1000, 5000), 0, "blocking recv failed: %s", strerror(errno));
	int st;

	waitpid(pid, &st, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "server exit %d", WEXITSTATUS(st));
	(void)s;
	close(c);
	close(l);
}

/*
 * Why blocking sockets stay on TCP, checked on the running kernel: with
 * --allow-blocking a signal during a blocking recv() on a shortcut socket
 * surfaces as EAGAIN (tcp_bpf_recvmsg returns -EAGAIN after any wakeup
 * that finds both queues empty).  If this ever passes without EAGAIN, the
 * kernel was fixed and the BLOCKING policy can be revisited.
 */
Test(fallback, kernel_turns_a_signal_into_eagain_on_blocking_shortcut_sockets)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	struct itimerval it = { .it_value = { .tv_usec = 100000 } };
	struct lism_snapshot st;
	int c, s, eagain = 0;
	char buf[16];

	require_root();
	needs(LISM_F_DATA_PATH);
	env_up(&e, "--allow-blocking");
	env_enter(&e);
	tcp_pair(AF_INET, "127.0.0.1", 0, &c, &s);
	snap(&e, &st);
	cr_assert_eq(st.confirmed, 1, "--allow-blocking did not pair blocking sockets");
	sigaction(SIGALRM, &sa, NULL);
	for (int i = 0; i < 3 && !eagain; i++) {
		setitimer(ITIMER_REAL, &it, NULL);
		ssize_t n = recv(c, buf, sizeof(buf), 0); /* nothing is sent: only the signal wakes us */

		eagain = n < 0 && errno == EAGAIN;
		cr_assert(n < 0, "recv returned data");
	}
	cr_assert(eagain, "no EAGAIN: the kernel may have fixed tcp_bpf_recvmsg");
	close(c);
	close(s);
}

/* At --max-dmbs new connections fall back; when DMBs free, they pair again. */
Test(fallback, dmb_limit_then_reuse)
{
	int port = 0, l, c[4], s[4];
	struct lism_snapshot st;

	require_root();
	env_up(&e, "--max-dmbs 4");
	env_enter(&e);
	l = tcp_listen(AF_INET, "127.0.0.1", &port, 1);
	for (int i = 0; i < 3; i++) {
		c[i] = tcp_connect(AF_INET, "127.0.0.1", port, 1);
		s[i] = tcp_accept(l, 1, 5000);
	}
	snap(&e, &st);
	cr_assert_eq(st.confirmed, 2);
	cr_assert_eq(st.usage.dmbs_in_use, 4);
	cr_assert_eq(st.reasons[LISM_R_MAX_DMB], 1, "third connection: client found no DMB");
	for (int i = 0; i < 3; i++)
		exact_stream(c[i], s[i]);
	close(c[0]);
	close(s[0]);
	for (int i = 0; i < 200; i++) { /* both ends of #0 release their DMBs */
		snap(&e, &st);
		if (st.usage.dmbs_in_use == 2)
			break;
		usleep(10000);
	}
	cr_assert_eq(st.usage.dmbs_in_use, 2);
	c[3] = tcp_connect(AF_INET, "127.0.0.1", port, 1);
	s[3] = tcp_accept(l, 1, 5000);
	snap(&e, &st);
	cr_assert_eq(st.confirmed, 2, "a freed DMB was not reused");
	exact_stream(c[3], s[3]);
	for (int i = 1; i < 4; i++) {
		close(c[i]);
		close(s[i]);
	}
	close(l);
	cr_assert_eq(wait_drained(&e, 3000), 0);
}

/* The passive side finds the table full: the client learns why. */
Test(fallback, dmb_limit_on_the_passive_side)
{
	int port = 0, l, c[2], s[2];
	struct lism_snapshot st;

	require_root();
	env_up(&e, "--max-dmbs 3");
	env_enter(&e);
	l = tcp_listen(AF_INET, "127.0.0.1", &port, 1);
	for (int i = 0; i < 2; i++) {
		c[i] = tcp_connect(AF_INET, "127.0.0.1", port, 1);
		s[i] = tcp_accept(l, 1, 5000);
	}
	snap(&e, &st);
	cr_assert_eq(st.confirmed, 1);
	cr_assert_eq(st.reasons[LISM_R_PEER_DECLINED], 1);
	cr_assert_eq(st.usage.dmbs_in_use, 2, "the declined client kept its DMB");
	for (int i = 0; i < 2; i++) {
		exact_stream(c[i], s[i]);
		close(c[i]);
		close(s[i]);
	}
	close(l);
	cr_assert_eq(wait_drained(&e, 3000), 0);
}

/* Destinations outside the scope never see the option (nor the GID). */
Test(fallback, out_of_scope_destination_gets_no_option)
{
	struct lism_snapshot st;
	const char *ns;
	int port = 0, l, c, s;

	require_root();
	env_up(&e, NULL); /* no --local-cidr: 10.78.0.0/24 is not local */
	ns = env_netns(&e, "scope");
	cr_assert_eq(sh("ip -n %s addr add 10.78.0.1/24 dev lo", ns), 0);
	env_enter(&e);
	netns_switch(ns);
	l = tcp_listen(AF_INET, "10.78.0.1", &port, 1);
	c = tcp_connect(AF_INET, "10.78.0.1", port, 1);
	netns_switch(NULL);
	s = tcp_accept(l, 1, 5000);
	snap(&e, &st);
	cr_assert_eq(st.stats[LISM_S_PROPOSALS_SENT], 0);
	cr_assert_eq(st.stats[LISM_S_PROPOSALS_RECV], 0);
	cr_assert_eq(st.usage.dmbs_in_use, 0);
	exact_stream(c, s);
	close(c);
	close(s);
	close(l);
}

/*
 * A non-blocking listener whose accept() returns a blocking socket (accept
 * does not inherit O_NONBLOCK) and a reader that waits for a whole message
 * with MSG_WAITALL: tcp_recvmsg never looks at the shortcut queue while it
 * waits, so bytes redirected meanwhile would hang the reader or be
 * overtaken by later TCP bytes.
 */
static void blocking_accepted_waitall(int send_before_accept, const char *load_args)
{
	int port = 0, l, c, s;
	pid_t pid;
	char buf[100];

	require_root();
	needs(LISM_F_DATA_PATH); /* the blocking end leaves the data path's maps */
	env_up(&e, load_args);
	env_enter(&e);
	l = tcp_listen(AF_INET, "127.0.0.1", &port, 1);
	c = tcp_connect(AF_INET, "127.0.0.1", port, 1);
	if (send_before_accept) /* the server socket exists but has no file yet */
		cr_assert_eq(send_all(c, 31, 0, 50), 0);
	s = tcp_accept(l, 0, 5000); /* blocking */
	pid = fork();
	if (pid == 0) { /* the client: half a message now, the rest once the reader waits */
		if (!send_before_accept && send_all(c, 31, 0, 50))
			_exit(2);
		usleep(200000);
		if (send_all(c, 31, 50, 50))
			_exit(3);
		usleep(200000);
		_exit(send_all(c, 31, 100, 100) ? 4 : 0);
	}
	alarm(10); /* a hang fails the test instead of timing it out */
	ssize_t n = recv(s, buf, 100, MSG_WAITALL);

	cr_assert_eq(n, 100, "MSG_WAITALL read returned %zd (%s)", n, n < 0 ? strerror(errno) : "short");
	for (int i = 0; i < 100; i++)
		cr_assert_eq((__u8)buf[i], pattern_at(31, i), "byte %d", i);
	cr_assert_eq(recv_check(s, 31, 100, 100, 5000), 0, "later bytes");
	alarm(0);
	struct lism_snapshot st_;

	snap(&e, &st_);
	cr_assert_eq(st_.reasons[LISM_R_BLOCKING], 1, "the blocking end did not leave the shortcut");
	cr_assert_eq(st_.stats[LISM_S_SC_BYTES], 0, "bytes were redirected to a blocking reader");
	cr_assert_eq(st_.confirmed, 0, "the client still counts as on the shortcut");
	int st;

	waitpid(pid, &st, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/*
	 * A member client stays in the map until it closes; a sender client
	 * (eager) leaves at its first send after its peer left (sender.h): its
	 * sends 200 and 400 ms later.
	 */
	int eager = load_args && strstr(load_args, "eager");
	__u32 members = shortcut_members(&e);

	snap(&e, &st_);
	cr_assert_eq(members, eager ? 0 : 1, "%u in the map: the client %s", members,
		     eager ? "(a sender whose peer left) should have left too" : "should stay, a member");
	cr_assert_eq(st_.stats[LISM_S_SENDERS_LEFT], eager ? 1 : 0);
	close(c);
	close(s);
	close(l);
}

/* Its peer never became a sender (too few bytes): it leaves at once. */
Test(fallback, blocking_accepted_socket_waitall_reader)
{
	blocking_accepted_waitall(0, NULL);
}

Test(fallback, blocking_accepted_socket_bytes_sent_before_accept)
{
	blocking_accepted_waitall(1, NULL);
}

/* Its peer is a sender from the start: it leaves once that sender saw it blocking. */
Test(fallback, blocking_accepted_socket_waitall_reader_eager_peer)
{
	blocking_accepted_waitall(0, "--eager-senders");
}

/* --exclude-cidr carves out of the scope, here out of loopback itself. */
Test(fallback, excluded_cidr_gets_no_option)
{
	struct lism_snapshot st;
	int port = 0, l, c, s;

	require_root();
	env_up(&e, "--exclude-cidr 127.0.0.2/32");
	env_enter(&e);
	l = tcp_listen(AF_INET, "0.0.0.0", &port, 1);
	c = tcp_connect(AF_INET, "127.0.0.2", port, 1);
	s = tcp_accept(l, 1, 5000);
	snap(&e, &st);
	cr_assert_eq(st.stats[LISM_S_PROPOSALS_SENT], 0, "an excluded destination got the option");
	cr_assert_eq(st.usage.dmbs_in_use, 0);
	exact_stream(c, s);
	close(c);
	close(s);
	c = tcp_connect(AF_INET, "127.0.0.1", port, 1);
	s = tcp_accept(l, 1, 5000);
	snap(&e, &st);
	cr_assert_eq(st.confirmed, 1, "the rest of loopback must still pair");
	close(c);
	close(s);
	close(l);
}
