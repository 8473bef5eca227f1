// SPDX-License-Identifier: GPL-2.0-only
/* Real TCP through the loaded programs: pairing, byte-exact streams, counters. */
#include <bpf/bpf.h>
#include <criterion/criterion.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <errno.h>
#include <stdlib.h>

#include "conns.h"
#include "lism/sender.h"
#include "harness.h"
#include "traffic.h"

static struct env e;
/*
 * Whether this kernel has a data path.  Without one (6.1) the tests of
 * pairing, the table and its reapers still run: pairs are confirmed, join no
 * map and carry nothing through the shortcut (the helpers below say so);
 * the tests of the data path itself need it (needs()).
 */
static int dp;

#define MEASURE LISM_TEST_MEASURE

static void up(const char *load_args)
{
	require_root();
	dp = kernel_has(LISM_F_DATA_PATH);
	env_up(&e, load_args);
	env_enter(&e);
}

static void down(void)
{
	env_down(&e);
}

TestSuite(shortcut, .fini = down, .timeout = 240);

static void assert_confirmed(int n)
{
	struct lism_snapshot s;

	snap(&e, &s);
	cr_assert_eq(s.confirmed, (__u32)n, "%u confirmed, want %d (fallbacks %llu)", s.confirmed, n,
		     (unsigned long long)s.stats[LISM_S_FALLBACKS]);
	cr_assert_eq(s.shortcut_sockets, dp ? (__u32)(2 * n) : 0);
}

/*
 * Most of what the paired sockets sent took the shortcut.  The sum is not
 * exact: after a failed (EAGAIN) TCP push the kernel reuses the PASS
 * verdict for the next send without running the program, so some TCP bytes
 * are never seen; shortcut bytes are always seen.
 */
static void assert_shortcut_carried(__u64 total, unsigned int min_percent)
{
	struct lism_snapshot s;
	__u64 sc;

	snap(&e, &s);
	sc = s.stats[LISM_S_SC_BYTES];
	if (!dp) { /* paired, and said why its bytes stay on TCP */
		cr_assert_eq(sc, 0, "%llu bytes took a shortcut this kernel has not", (unsigned long long)sc);
		cr_assert_gt(s.reasons[LISM_R_NO_DATA_PATH], 0);
		return;
	}
	cr_assert_leq(sc, total, "%llu shortcut bytes, only %llu were sent", (unsigned long long)sc,
		      (unsigned long long)total);
	cr_assert_geq(sc * 100, total * min_percent, "only %llu of %llu bytes took the shortcut",
		      (unsigned long long)sc, (unsigned long long)total);
}

static void assert_drained(void)
{
	cr_assert_eq(wait_drained(&e, 3000), 0, "DMB table / shortcut map not back to zero");
}

/* One connection, both directions, then close: the whole lifecycle. */
static void one_connection(int family, const char *listen_addr, int cfamily, const char *caddr)
{
	struct lism_snapshot s;
	struct pump_result r;
	int port = 0, l, c, sv;
	const __u64 n = 8u << 20;

	up(MEASURE);
	l = tcp_listen(family, listen_addr, &port, 1);
	c = tcp_connect(cfamily, caddr, port, 1);
	sv = tcp_accept(l, 1, 5000);
	assert_confirmed(1);
	snap(&e, &s);
	cr_assert_eq(s.usage.dmbs_in_use, 2);

	pump(c, sv, n, n, 256 << 10, 1, 30000, &r);
	cr_assert(r.ok, "%s", r.why);
	assert_shortcut_carried(2 * n, 90);

	close(c);
	close(sv);
	close(l);
	assert_drained();
	snap(&e, &s);
	cr_assert_eq(s.stats[LISM_S_CONFIRMS], 1);
	cr_assert_eq(s.stats[LISM_S_FALLBACKS], 0);
	cr_assert_eq(s.stats[LISM_S_CLOSES], 2);
}

Test(shortcut, ipv4_loopback)
{
	one_connection(AF_INET, "127.0.0.1", AF_INET, "127.0.0.1");
}

Test(shortcut, ipv6_loopback)
{
	one_connection(AF_INET6, "::1", AF_INET6, "::1");
}

Test(shortcut, v4_mapped_dual_stack_listener)
{
	one_connection(AF_INET6, "::", AF_INET, "127.0.0.1");
}

/*
 * lism saves the SYN on listeners (the option is read from it), but an
 * application's own TCP_SAVE_SYN stays: 2 keeps the MAC header too, and the
 * handshake still reads the option behind it.
 */
Test(shortcut, an_applications_save_syn_stays)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int two = 2, v = 0, l, c, sv;

	up(MEASURE);
	l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	cr_assert_geq(l, 0);
	cr_assert_eq(setsockopt(l, SOL_TCP, TCP_SAVE_SYN, &two, sizeof(two)), 0, "%s", strerror(errno));
	cr_assert_eq(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(l, 16), 0);
	cr_assert_eq(getsockname(l, (struct sockaddr *)&a, &len), 0);
	len = sizeof(v);
	cr_assert_eq(getsockopt(l, SOL_TCP, TCP_SAVE_SYN, &v, &len), 0);
	cr_assert_eq(v, 2, "the listener's TCP_SAVE_SYN is %d after lism saw it listen", v);
	c = tcp_connect(AF_INET, "127.0.0.1", ntohs(a.sin_port), 1);
	sv = tcp_accept(l, 1, 5000);
	assert_confirmed(1);
	cr_assert_eq(send_all(c, 9, 0, 4096), 0);
	cr_assert_eq(recv_check(sv, 9, 0, 4096, 5000), 0);
	close(c);
	close(sv);
	close(l);
	assert_drained();
}

/* >= 1 GiB, both directions at once, sends of 1 B to 4 MiB. */
Test(shortcut, gigabyte_both_directions_all_sizes)
{
	const __u64 each = 512ull << 20;
	struct pump_result r;
	int c, sv;

	needs(LISM_F_DATA_PATH);
	up(MEASURE);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c, &sv);
	assert_confirmed(1);
	pump(c, sv, each, each, 4u << 20, 7, 200000, &r);
	cr_assert(r.ok, "%s", r.why);
	cr_assert_eq(r.moved[0] + r.moved[1], 2 * each);
	/* Single sends of up to 4 MiB overflow a 4 MiB DMB by design: 90-92% measured. */
	assert_shortcut_carried(2 * each, 80);
	close(c);
	close(sv);
	assert_drained();
}

/*
 * A DMB smaller than one send still takes it when empty; with a 16K DMB the
 * stream keeps switching between the shortcut and TCP and must stay exact.
 */
Test(shortcut, small_dmb_carries_large_sends)
{
	struct lism_snapshot s;
	struct pump_result r;
	int c, sv;

	needs(LISM_F_DATA_PATH);
	up(MEASURE " --dmb-size 16K");
	tcp_pair(AF_INET, "127.0.0.1", 1, &c, &sv);
	assert_confirmed(1);
	cr_assert_eq(send_all(c, 5, 0, 100000), 0);
	snap(&e, &s);
	cr_assert_gt(s.stats[LISM_S_SC_BYTES], 16u << 10, "an empty 16K DMB refused a 100K send");
	pump_from(c, sv, 100000, 64u << 20, 0, 64u << 20, 256u << 10, 5, 60000, &r);
	cr_assert(r.ok, "%s", r.why);
	snap(&e, &s);
	cr_assert_gt(s.stats[LISM_S_DMB_FULL], 0, "the bound never applied");
	cr_assert_gt(s.stats[LISM_S_SYNC_HOLDS], 0);
	assert_shortcut_carried((128u << 20) + 100000, 1);
	close(c);
	close(sv);
	assert_drained();
}

/*
 * A stream of small sends that the reader falls behind takes the shortcut,
 * as a reader that keeps up (ping-pong) does: only the DMB bound and order
 * send it to TCP.  (Stream detection, which moved such streams to TCP for
 * a while, was removed with layout 14: its ablation, docs/benchmarks.md.)
 */
Test(shortcut, a_small_send_stream_the_reader_falls_behind_keeps_the_shortcut)
{
	enum { SEND = 100, SENDS = 100, ROUNDS = 500 };
	static __u8 buf[SEND * SENDS];
	struct lism_snapshot s0, s1, s2;
	int c, sv;

	needs(LISM_F_DATA_PATH);
	up(NULL);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c, &sv);
	assert_confirmed(1);
	make_senders(&e, c, sv); /* a one-way stream alone would never make c a sender */
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = pattern_at(11, i);
	snap(&e, &s0);
	/* nobody reads: from the second send on, each finds the reader behind */
	for (int i = 0; i < SENDS; i++)
		cr_assert_eq(send(c, buf + i * SEND, SEND, MSG_NOSIGNAL), SEND, "send %d: %s", i,
			     strerror(errno));
	snap(&e, &s1);
	cr_assert_eq(s1.stats[LISM_S_SC_BYTES] - s0.stats[LISM_S_SC_BYTES], (__u64)SENDS * SEND,
		     "%llu of %d stream bytes took the shortcut",
		     (unsigned long long)(s1.stats[LISM_S_SC_BYTES] - s0.stats[LISM_S_SC_BYTES]), SENDS * SEND);
	cr_assert_eq(s1.stats[LISM_S_TCP_MSGS], s0.stats[LISM_S_TCP_MSGS], "a send went to TCP");
	cr_assert_eq(recv_check(sv, 11, 0, sizeof(buf), 5000), 0, "stream bytes out of order");

	/* request/response: every send finds the reader caught up */
	for (int i = 0; i < ROUNDS; i++) {
		cr_assert_eq(send_all(c, 12, (__u64)i * SEND, SEND), 0);
		cr_assert_eq(recv_check(sv, 12, (__u64)i * SEND, SEND, 5000), 0, "round %d", i);
		cr_assert_eq(send_all(sv, 13, (__u64)i * SEND, SEND), 0);
		cr_assert_eq(recv_check(c, 13, (__u64)i * SEND, SEND, 5000), 0, "round %d", i);
	}
	snap(&e, &s2);
	cr_assert_eq(s2.stats[LISM_S_SC_BYTES] - s1.stats[LISM_S_SC_BYTES], (__u64)2 * ROUNDS * SEND,
		     "%llu of %u ping-pong bytes took the shortcut",
		     (unsigned long long)(s2.stats[LISM_S_SC_BYTES] - s1.stats[LISM_S_SC_BYTES]),
		     2 * ROUNDS * SEND);
	close(c);
	close(sv);
	assert_drained();
	/* every byte is accounted, also the warm-up's, sent before the ends were senders (at the close) */
	snap(&e, &s2);
	cr_assert_eq(s2.stats[LISM_S_SC_BYTES] - s0.stats[LISM_S_SC_BYTES] +
			     s2.stats[LISM_S_TCP_BYTES] - s0.stats[LISM_S_TCP_BYTES],
		     (__u64)(SENDS + 2 * ROUNDS) * SEND + MAKE_SENDERS_BYTES, "shortcut %llu + TCP %llu bytes",
		     (unsigned long long)(s2.stats[LISM_S_SC_BYTES] - s0.stats[LISM_S_SC_BYTES]),
		     (unsigned long long)(s2.stats[LISM_S_TCP_BYTES] - s0.stats[LISM_S_TCP_BYTES]));
}

/*
 * By default a member's sends join the data path only once data went both
 * ways (include/lism/sender.h).  A one-way stream of small sends stays plain
 * TCP for good -- no sk_msg program on its path -- and every one of its
 * bytes is still accounted, at its close, as TCP bytes of a paired socket.
 */
Test(shortcut, one_way_stream_never_makes_its_writer_a_sender)
{
	enum { SEND = 100, SENDS = 3 * LISM_SENDER_WATCH_SEGS, BATCH = 64 };
	struct lism_snapshot s;
	int c, sv, one = 1;

	needs(LISM_F_DATA_PATH);
	needs(LISM_F_SEND_SIZES); /* bulk one-way writers join by their send sizes */
	up(NULL);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c, &sv);
	assert_confirmed(1);
	/* one segment per send, so the writer passes the watch's bound */
	cr_assert_eq(setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)), 0);
	one_way_stream(c, sv, SENDS, SEND, BATCH, 21);
	snap(&e, &s);
	cr_assert_eq(s.sender_sockets, 0, "a one-way stream made a sender");
	cr_assert_eq(s.stats[LISM_S_SENDERS_JOINED], 0);
	cr_assert_geq(s.stats[LISM_S_SENDERS_ONE_WAY], 1, "the writer was never found one-way");
	cr_assert_eq(s.stats[LISM_S_SEND_SIZE_CALLS], LISM_SENDER_SIZE_SENDS,
		     "%llu sendmsg callbacks: the size watch did not switch off after %d sends",
		     (unsigned long long)s.stats[LISM_S_SEND_SIZE_CALLS], LISM_SENDER_SIZE_SENDS);
	cr_assert_eq(s.stats[LISM_S_SC_BYTES], 0);
	cr_assert_eq(s.stats[LISM_S_TCP_MSGS], 0, "the sk_msg program ran for a member's send");
	assert_confirmed(1); /* still a pair: its peer may be sent to through the shortcut */
	close(c);
	close(sv);
	assert_drained();
	snap(&e, &s);
	cr_assert_eq(s.stats[LISM_S_TCP_BYTES], (__u64)SENDS * SEND,
		     "%llu TCP bytes accounted at the close, %llu sent",
		     (unsigned long long)s.stats[LISM_S_TCP_BYTES], (unsigned long long)SENDS * SEND);
}

/*
 * One-way bulk sends (here 128 KiB, like iperf3's) are measured at their
 * first LISM_SENDER_SIZE_SENDS sendmsg() calls and make their writer a
 * sender: the rest of the transfer takes the shortcut, in order.
 */
static int sndbuf_of(int fd)
{
	socklen_t len = sizeof(int);
	int v = -1;

	cr_assert_eq(getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, &len), 0, "getsockopt: %s", strerror(errno));
	return v;
}

/* What SO_SNDBUF @v gives: the kernel caps it at net.core.wmem_max and doubles it. */
static int sndbuf_for(int v)
{
	FILE *f = fopen("/proc/sys/net/core/wmem_max", "r");
	int max = INT_MAX;

	cr_assert(f, "net.core.wmem_max: %s", strerror(errno));
	cr_assert_eq(fscanf(f, "%d", &max), 1);
	fclose(f);
	return 2 * (v < max ? v : max);
}

/*
 * One-way bulk sends (here 128 KiB, like iperf3's) are measured at their
 * first LISM_SENDER_SIZE_SENDS sendmsg() calls and make their writer a
 * sender: the rest of the transfer takes the shortcut, in order.  Its send
 * buffer is clamped (sender.h), so that on one CPU its TCP bytes do not
 * hold it in SYNC; its reader's is not.  @app_sndbuf: the writer sets
 * SO_SNDBUF itself first (0: not), which lism then leaves alone.
 */
static void bulk_writer(int app_sndbuf)
{
	enum { SEND = 128 << 10, SENDS = 64 };
	struct lism_snapshot s;
	int c, sv, reader_buf;

	up(NULL);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c, &sv);
	if (app_sndbuf)
		cr_assert_eq(setsockopt(c, SOL_SOCKET, SO_SNDBUF, &app_sndbuf, sizeof(app_sndbuf)), 0);
	assert_confirmed(1);
	reader_buf = sndbuf_of(sv);
	for (int i = 0; i < SENDS; i++) {
		cr_assert_eq(send_all(c, 24, (__u64)i * SEND, SEND), 0);
		cr_assert_eq(recv_check(sv, 24, (__u64)i * SEND, SEND, 5000), 0, "send %d", i);
		if (i == LISM_SENDER_SIZE_SENDS)
			cr_assert_eq(wait_senders(&e, 1, 3000), 0, "bulk sends did not make a sender");
	}
	snap(&e, &s);
	cr_assert_eq(s.stats[LISM_S_SENDERS_JOINED], 1, "the writer, not its reader");
	cr_assert_geq(s.stats[LISM_S_SC_BYTES], (__u64)(SENDS - 2 * LISM_SENDER_SIZE_SENDS) * SEND,
		      "only %llu bytes took the shortcut", (unsigned long long)s.stats[LISM_S_SC_BYTES]);
	if (app_sndbuf)
		cr_assert_eq(sndbuf_of(c), sndbuf_for(app_sndbuf), "lism changed the send buffer the application set");
	else
		cr_assert_eq(sndbuf_of(c), sndbuf_for(LISM_SENDER_BULK_SNDBUF), "the bulk sender's send buffer: %d",
			     sndbuf_of(c));
	cr_assert_eq(sndbuf_of(sv), reader_buf, "the reader's send buffer changed");
	close(c);
	close(sv);
	assert_drained();
}

Test(shortcut, one_way_bulk_sends_make_their_writer_a_sender)
{
	needs(LISM_F_DATA_PATH);
	needs(LISM_F_SEND_SIZES); /* bulk one-way writers join by their send sizes */
	bulk_writer(0);
}

Test(shortcut, a_bulk_sender_keeps_the_send_buffer_its_application_set)
{
	needs(LISM_F_DATA_PATH);
	needs(LISM_F_SEND_SIZES); /* bulk one-way writers join by their send sizes */
	bulk_writer(1 << 20);
}

/* One-way bulk sends that would make @c a sender (sender.h), every byte checked. */
static void bulk_sends(int c, int sv, int seed)
{
	enum { BULK = 128 << 10, BULKS = 2 * LISM_SENDER_SIZE_SENDS };

	for (int i = 0; i < BULKS; i++) {
		cr_assert_eq(send_all(c, seed, (__u64)i * BULK, BULK), 0);
		cr_assert_eq(recv_check(sv, seed, (__u64)i * BULK, BULK, 5000), 0, "send %d", i);
	}
}

/*
 * A member whose send buffer holds fewer than LISM_SENDER_MIN_SNDBUF_SEGS
 * segments (SO_SNDBUF, or its namespace's tcp_wmem maximum), or whose
 * unsent-bytes limit (TCP_NOTSENT_LOWAT, or its namespace's sysctl) is
 * below that, never runs the data path (sender.h:
 * through it such a writer waits for ACKs that may not come soon), whether
 * it would join by bulk sends or because data went both ways; its peer
 * still joins.
 */
Test(shortcut, a_writer_with_small_send_limits_stays_on_tcp)
{
	enum { SMALL = 100, ROUNDS = 40 };
	int c1, s1, c2, s2, c3, s3, c4, s4, c5, s5, sndbuf = 64 << 10, lowat = 16 << 10;
	struct lism_snapshot s;

	needs(LISM_F_DATA_PATH);
	needs(LISM_F_SEND_SIZES); /* bulk one-way writers join by their send sizes */
	up(NULL);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c1, &s1);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c2, &s2);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c3, &s3);
	cr_assert_eq(setsockopt(c1, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)), 0);
	cr_assert_eq(setsockopt(c2, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)), 0);
	cr_assert_eq(setsockopt(c3, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat, sizeof(lowat)), 0);
	/* a namespace whose sysctl sets the limit for every socket */
	netns_switch(env_netns(&e, "lowat"));
	write_file("/proc/sys/net/ipv4/tcp_notsent_lowat", "16384"); /* the namespace goes with the test */
	tcp_pair(AF_INET, "127.0.0.1", 1, &c4, &s4);
	/* and one whose sysctl caps what TCP's autotuning may grow a send buffer to */
	netns_switch(env_netns(&e, "wmem"));
	write_file("/proc/sys/net/ipv4/tcp_wmem", "4096 16384 131072");
	tcp_pair(AF_INET, "127.0.0.1", 1, &c5, &s5);
	netns_switch(NULL);
	assert_confirmed(5);
	cr_assert_lt(sndbuf_of(c1), (int)LISM_SENDER_MIN_SEND_LIMIT, "the test's buffer is not small");

	bulk_sends(c1, s1, 41);
	bulk_sends(c3, s3, 44);
	bulk_sends(c4, s4, 45);
	bulk_sends(c5, s5, 46);
	/* request/response: data goes both ways, s2 joins, c2 would too */
	round_trips(c2, s2, ROUNDS, SMALL, 42);
	cr_assert_eq(wait_senders(&e, 1, 3000), 0, "the peer with TCP's own limits did not join");
	snap(&e, &s);
	cr_assert_eq(s.stats[LISM_S_SENDERS_SEND_LIMITS], 5, "joins skipped for small send limits: %llu of 5",
		     (unsigned long long)s.stats[LISM_S_SENDERS_SEND_LIMITS]);
	cr_assert_eq(s.stats[LISM_S_SENDERS_JOINED], 1, "a writer with small send limits joined");
	cr_assert_eq(stats_json_u64(&e, "senders_send_limits"), 5, "lism stats -j");
	cr_assert_eq(s.sender_sockets, 1);
	cr_assert_eq(sndbuf_of(c1), sndbuf_for(sndbuf), "lism changed the send buffer the application set");
	assert_confirmed(5); /* still pairs: their peers may be sent to through the shortcut */
	int fds[] = { c1, s1, c2, s2, c3, s3, c4, s4, c5, s5 };

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		close(fds[i]);
	assert_drained();
}

/*
 * A writer that corks (TCP_CORK, as nginx's tcp_nopush around a
 * sendfile() response) holds its last partial segment back until it
 * uncorks, so a join meanwhile would wait in SYNC behind it for the whole
 * response: its bulk sends join only once it sends uncorked (sender.h).
 */
Test(shortcut, a_corked_bulk_writer_joins_only_once_it_uncorks)
{
	enum { BULK = 128 << 10, BULKS = 2 * LISM_SENDER_SIZE_SENDS };
	int c, sv, on = 1, off = 0;
	struct lism_snapshot s;

	needs(LISM_F_DATA_PATH);
	needs(LISM_F_SEND_SIZES); /* bulk one-way writers join by their send sizes */
	up(NULL);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c, &sv);
	assert_confirmed(1);
	cr_assert_eq(setsockopt(c, IPPROTO_TCP, TCP_CORK, &on, sizeof(on)), 0);
	/* the reader reads each send after the next: the cork holds back less than a segment */
	for (int i = 0; i < BULKS; i++) {
		cr_assert_eq(send_all(c, 46, (__u64)i * BULK, BULK), 0, "send %d", i);
		if (i)
			cr_assert_eq(recv_check(sv, 46, (__u64)(i - 1) * BULK, BULK, 5000), 0, "send %d", i - 1);
	}
	usleep(100000); /* time for a join the timer would have made */
	snap(&e, &s);
	cr_assert_eq(s.stats[LISM_S_SENDERS_JOINED], 0, "a corked writer joined");
	cr_assert_eq(s.sender_sockets, 0);
	cr_assert_eq(setsockopt(c, IPPROTO_TCP, TCP_CORK, &off, sizeof(off)), 0);
	cr_assert_eq(recv_check(sv, 46, (__u64)(BULKS - 1) * BULK, BULK, 5000), 0, "the last corked send");
	bulk_sends(c, sv, 47);
	cr_assert_eq(wait_senders(&e, 1, 3000), 0, "uncorked bulk sends did not make a sender");
	snap(&e, &s);
	cr_assert_eq(s.stats[LISM_S_SENDERS_JOINED], 1);
	close(c);
	close(sv);
	assert_drained();
}

enum { LAG = 128 << 10 };

/*
 * Writer @c sends, reader @sv keeps its last LAG bytes unread at each of
 * its sends (bytes [*off - LAG, *off) are unread on entry and on return):
 * the peer never has read every TCP byte, so a direction in SYNC stays
 * there and every send goes to TCP.  Checks every byte, in order.
 */
static void lagging_reader(int c, int sv, __u64 *off, __u64 n)
{
	for (__u64 end = *off + n; *off < end; *off += LAG) {
		cr_assert_eq(send_all(c, 31, *off, LAG), 0);
		cr_assert_eq(recv_check(sv, 31, *off - LAG, LAG, 5000), 0, "at %llu",
			     (unsigned long long)*off);
	}
}


/*
 * A one-way sender whose reader never catches up (it keeps TCP bytes
 * unread, as on one CPU after a DMB overflow) sends over TCP through the
 * data path for as long as that lasts, and takes the shortcut again once
 * the reader has read everything: the pair stays, and no byte is lost or
 * reordered.  (It used to leave the maps after a GiB mostly on TCP, reason
 * sync-stuck; removed with layout 14, its ablation showed no gain.)
 */
Test(shortcut, a_one_way_sender_whose_reader_lags_keeps_its_pair)
{
	struct lism_snapshot s;
	__u64 off = LAG;
	int c, sv;

	needs(LISM_F_DATA_PATH);
	needs(LISM_F_SEND_SIZES); /* bulk one-way writers join by their send sizes */
	up(NULL);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c, &sv);
	assert_confirmed(1);
	cr_assert_eq(send_all(c, 31, 0, LAG), 0);
	lagging_reader(c, sv, &off, (__u64)LISM_SENDER_SIZE_SENDS * LAG); /* bulk sends: it joins */
	cr_assert_eq(wait_senders(&e, 1, 3000), 0, "bulk sends did not make a sender");
	/* past the removed rule's 1 GiB window and 64 MiB run on TCP: a comeback of it fails here */
	lagging_reader(c, sv, &off, (1u << 30) + (8u << 20));
	snap(&e, &s);
	cr_assert_eq(s.stats[LISM_S_SC_BYTES], 0, "the reader never caught up: nothing could take the shortcut");
	cr_assert_gt(s.stats[LISM_S_SYNC_HOLDS], 0, "the sender's sends did not run the data path");
	cr_assert_eq(s.stats[LISM_S_SENDERS_LEFT], 0);
	cr_assert_eq(s.sender_sockets, 1, "the sender is no longer in the senders map");
	assert_confirmed(1);
	cr_assert_eq(recv_check(sv, 31, off - LAG, LAG, 5000), 0); /* caught up */
	cr_assert_eq(send_all(c, 31, off, 1000), 0);
	cr_assert_eq(recv_check(sv, 31, off, 1000, 5000), 0);
	snap(&e, &s);
	cr_assert_eq(s.stats[LISM_S_SC_BYTES], 1000, "the direction did not get the shortcut back");
	close(c);
	close(sv);
	assert_drained();
}

static void wait_left(__u64 n, struct lism_snapshot *s)
{
	for (int i = 0; i < 300; i++) {
		snap(&e, s);
		if (s->stats[LISM_S_SENDERS_LEFT] >= n)
			return;
		usleep(10000);
	}
	cr_assert_fail("%llu senders left, want %llu", (unsigned long long)s->stats[LISM_S_SENDERS_LEFT],
		       (unsigned long long)n);
}

/* An eager pair whose accepted end is blocking before its first packet (its mode check finds it so). */
static void eager_pair_blocking_server(int *c, int *sv)
{
	up("--eager-senders");
	tcp_pair(AF_INET, "127.0.0.1", 1, c, sv);
	set_nonblock(*sv, 0);
	assert_confirmed(1);
}

/*
 * A sender whose peer left (here: an eager pair whose accepted end turned
 * out blocking, so it fell back once the sender had seen it blocking)
 * leaves both maps at its next send: nothing can be redirected to it any
 * more, and its sends would otherwise go to TCP through the data path for
 * the socket's life.  No new fallback: the pair was over already.
 */
Test(shortcut, a_sender_whose_peer_left_leaves_the_maps)
{
	struct lism_snapshot s;
	__u64 off = 0;
	int c, sv;

	needs(LISM_F_DATA_PATH);
	eager_pair_blocking_server(&c, &sv);
	for (int i = 0; i < 50; i++, off += 1000) {
		cr_assert_eq(send_all(c, 26, off, 1000), 0);
		cr_assert_eq(recv_check(sv, 26, off, 1000, 5000), 0, "send %d", i);
		snap(&e, &s);
		if (s.stats[LISM_S_SENDERS_LEFT])
			break;
	}
	wait_left(1, &s);
	cr_assert_eq(s.reasons[LISM_R_BLOCKING], 1, "the blocking end fell back");
	cr_assert_eq(s.stats[LISM_S_FALLBACKS], 1, "no new fallback: the pair was over");
	cr_assert_eq(s.stats[LISM_S_SC_BYTES], 0, "nothing was redirected to a blocking reader");
	cr_assert_eq(s.sender_sockets, 0, "the sender left the senders map");
	cr_assert_eq(shortcut_members(&e), 0, "both ends left the shortcut map");
	cr_assert_eq(send_all(c, 26, off, 100000), 0);
	cr_assert_eq(recv_check(sv, 26, off, 100000, 5000), 0);
	close(c);
	close(sv);
	assert_drained();
}

/*
 * The same, while its own shortcut queue still holds what the peer sent
 * before it left: the leave is refused (it would drop those bytes), and
 * asked again at a later send once they are read; it used to stay in both
 * maps for the socket's life.
 */
Test(shortcut, a_sender_whose_peer_left_leaves_once_it_read_its_queue)
{
	struct lism_snapshot s;
	__u64 off = 0;
	int c, sv;

	needs(LISM_F_DATA_PATH);
	eager_pair_blocking_server(&c, &sv);
	/* the accepted end sends first: through the shortcut, into c's queue, unread */
	cr_assert_eq(send_all(sv, 27, 0, 1000), 0);
	snap(&e, &s);
	cr_assert_eq(s.stats[LISM_S_SC_BYTES], 1000, "the first send did not take the shortcut");
	/* c's sends find sv blocking, go to TCP, and sv leaves at its ACK */
	for (int i = 0; i < 50; i++, off += 1000) {
		cr_assert_eq(send_all(c, 26, off, 1000), 0);
		cr_assert_eq(recv_check(sv, 26, off, 1000, 5000), 0, "send %d", i);
		snap(&e, &s);
		if (s.reasons[LISM_R_BLOCKING] && s.stats[LISM_S_SENDER_LEAVES_REFUSED])
			break;
	}
	cr_assert_eq(s.reasons[LISM_R_BLOCKING], 1, "the blocking end did not fall back");
	cr_assert_geq(s.stats[LISM_S_SENDER_LEAVES_REFUSED], 1, "c's leave was not refused for its unread queue");
	cr_assert_eq(s.stats[LISM_S_SENDERS_LEFT], 0, "c left over unread bytes");
	/* it reads them; its next sends ask again and it leaves */
	cr_assert_eq(recv_check(c, 27, 0, 1000, 5000), 0);
	for (int i = 0; i < 50 && !s.stats[LISM_S_SENDERS_LEFT]; i++, off += 1000) {
		cr_assert_eq(send_all(c, 26, off, 1000), 0);
		cr_assert_eq(recv_check(sv, 26, off, 1000, 5000), 0);
		usleep(10000);
		snap(&e, &s);
	}
	wait_left(1, &s);
	cr_assert_eq(shortcut_members(&e), 0, "both ends left the shortcut map");
	close(c);
	close(sv);
	assert_drained();
}

/*
 * Under the default policy both directions at once from the first byte:
 * the ends become senders mid-transfer, while their earlier bytes are still
 * in TCP, and nothing may overtake them (SYNC).
 */
Test(shortcut, senders_join_mid_transfer_without_reordering)
{
	struct lism_snapshot s;
	struct pump_result r;
	int c, sv;
	const __u64 n = 256u << 20;

	needs(LISM_F_DATA_PATH);
	up(NULL);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c, &sv);
	assert_confirmed(1);
	pump(c, sv, n, n, 256 << 10, 22, 60000, &r);
	cr_assert(r.ok, "%s", r.why);
	snap(&e, &s);
	cr_assert_eq(s.stats[LISM_S_SENDERS_JOINED], 2, "both ends joined");
	cr_assert_eq(s.sender_sockets, 2);
	cr_assert_gt(s.stats[LISM_S_SC_BYTES], 0, "nothing took the shortcut after the join");
	close(c);
	close(sv);
	assert_drained();
}

/* --eager-senders: every member is a sender from the handshake on (the data path measured). */
Test(shortcut, eager_senders_join_at_the_handshake)
{
	struct lism_snapshot s;
	int c, sv;

	needs(LISM_F_DATA_PATH);
	up("--eager-senders");
	tcp_pair(AF_INET, "127.0.0.1", 1, &c, &sv);
	assert_confirmed(1);
	snap(&e, &s);
	cr_assert_eq(s.sender_sockets, 2, "not senders at the handshake");
	cr_assert_eq(s.stats[LISM_S_SENDERS_JOINED], 0, "eager joins are not late joins");
	cr_assert_eq(send_all(c, 23, 0, 10000), 0);
	cr_assert_eq(recv_check(sv, 23, 0, 10000, 5000), 0);
	snap(&e, &s);
	cr_assert_eq(s.stats[LISM_S_SC_BYTES], 10000, "a one-way send did not take the shortcut");
	close(c);
	close(sv);
	assert_drained();
}

/*
 * An eager sender is watched from its sends (include/lism/sender.h): a
 * one-way stream of small sends goes to TCP after LISM_SENDER_WATCH_SEGS of
 * them and its writer leaves the senders map, staying a member.  Its last
 * shortcut bytes wait in the reader's psock queue while the next ones go to
 * TCP: the reader must get them all, in order.
 */
Test(shortcut, an_eager_one_way_writer_leaves_the_senders)
{
	enum { SEND = 100, SENDS = 3 * LISM_SENDER_WATCH_SEGS + 64, BATCH = 64 };
	struct lism_snapshot s;
	int c, sv, one = 1;

	needs(LISM_F_DATA_PATH);
	up("--eager-senders");
	tcp_pair(AF_INET, "127.0.0.1", 1, &c, &sv);
	assert_confirmed(1);
	snap(&e, &s);
	cr_assert_eq(s.sender_sockets, 2, "not senders at the handshake");
	cr_assert_eq(setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)), 0);
	one_way_stream(c, sv, SENDS, SEND, BATCH, 51);
	snap(&e, &s);
	cr_assert_geq(s.stats[LISM_S_SENDERS_ONE_WAY], 1, "the eager writer was never found one-way");
	cr_assert_eq(s.sender_sockets, 1, "%u senders: the one-way writer is still one", s.sender_sockets);
	cr_assert_gt(s.stats[LISM_S_SC_BYTES], 0);
	cr_assert_leq(s.stats[LISM_S_SC_BYTES], (__u64)(LISM_SENDER_WATCH_SEGS + 1) * SEND,
		      "%llu bytes took the shortcut after the writer was found one-way",
		      (unsigned long long)s.stats[LISM_S_SC_BYTES]);
	assert_confirmed(1); /* still a pair: its peer may be sent to through the shortcut */
	/* the reader may still send through the shortcut, to the writer that left */
	cr_assert_eq(send_all(sv, 52, 0, 10000), 0);
	cr_assert_eq(recv_check(c, 52, 0, 10000, 5000), 0);
	snap(&e, &s);
	cr_assert_geq(s.stats[LISM_S_SC_BYTES], 10000);
	close(c);
	close(sv);
	assert_drained();
	snap(&e, &s);
	cr_assert_eq(s.stats[LISM_S_SC_BYTES] + s.stats[LISM_S_TCP_BYTES], (__u64)SENDS * SEND + 10000,
		     "%llu shortcut + %llu TCP bytes accounted, %llu sent",
		     (unsigned long long)s.stats[LISM_S_SC_BYTES], (unsigned long long)s.stats[LISM_S_TCP_BYTES],
		     (unsigned long long)SENDS * SEND + 10000);
}

/* An eager writer of one-way bulk sends (iperf3's 128 KiB) stays a sender past the watch (sender.h). */
Test(shortcut, an_eager_bulk_writer_stays_a_sender)
{
	enum { BULK = 128 << 10, BULKS = LISM_SENDER_WATCH_SEGS + 64 };
	struct lism_snapshot s;
	int c, sv;

	needs(LISM_F_DATA_PATH);
	up("--eager-senders");
	tcp_pair(AF_INET, "127.0.0.1", 1, &c, &sv);
	assert_confirmed(1);
	for (int i = 0; i < BULKS; i++) {
		cr_assert_eq(send_all(c, 54, (__u64)i * BULK, BULK), 0);
		cr_assert_eq(recv_check(sv, 54, (__u64)i * BULK, BULK, 5000), 0, "send %d", i);
	}
	snap(&e, &s);
	cr_assert_eq(s.stats[LISM_S_SENDERS_ONE_WAY], 0, "a bulk writer was found one-way");
	cr_assert_eq(s.sender_sockets, 2);
	close(c);
	close(sv);
	assert_drained();
}

/* An eager pair's request/response exchanges go both ways: both stay senders, past the watch. */
Test(shortcut, an_eager_request_response_pair_stays_senders)
{
	struct lism_snapshot s;
	int c, sv;

	needs(LISM_F_DATA_PATH);
	up("--eager-senders");
	tcp_pair(AF_INET, "127.0.0.1", 1, &c, &sv);
	assert_confirmed(1);
	round_trips(c, sv, 2 * LISM_SENDER_WATCH_SEGS, 100, 53);
	snap(&e, &s);
	cr_assert_eq(s.sender_sockets, 2, "%u senders after request/response", s.sender_sockets);
	cr_assert_eq(s.stats[LISM_S_SENDERS_ONE_WAY], 0);
	cr_assert_geq(s.stats[LISM_S_SC_BYTES], (__u64)2 * LISM_SENDER_WATCH_SEGS * 100,
		      "request/response left the shortcut");
	close(c);
	close(sv);
	assert_drained();
}

/*
 * --eager-senders still keeps off a socket with small send limits
 * (sender.h), here a send buffer an accepted socket inherits from its
 * listener; its peer is a sender from the handshake as always.
 */
Test(shortcut, eager_senders_keep_a_socket_with_small_send_limits_off)
{
	int port = 0, l, c, sv, small = 64 << 10;
	struct lism_snapshot s;

	needs(LISM_F_DATA_PATH);
	up("--eager-senders");
	l = tcp_listen(AF_INET, "127.0.0.1", &port, 1);
	cr_assert_eq(setsockopt(l, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
	c = tcp_connect(AF_INET, "127.0.0.1", port, 1);
	sv = tcp_accept(l, 1, 5000);
	close(l);
	assert_confirmed(1);
	snap(&e, &s);
	cr_assert_eq(s.sender_sockets, 1, "%u senders: the small buffer's socket joined, or its peer did not",
		     s.sender_sockets);
	cr_assert_eq(s.stats[LISM_S_SENDERS_SEND_LIMITS], 1);
	cr_assert_eq(send_all(sv, 48, 0, 10000), 0);
	cr_assert_eq(recv_check(c, 48, 0, 10000, 5000), 0);
	cr_assert_eq(send_all(c, 49, 0, 10000), 0);
	cr_assert_eq(recv_check(sv, 49, 0, 10000, 5000), 0);
	snap(&e, &s);
	cr_assert_eq(s.stats[LISM_S_SC_BYTES], 10000, "%llu bytes took the shortcut: only the client's may",
		     (unsigned long long)s.stats[LISM_S_SC_BYTES]);
	close(c);
	close(sv);
	assert_drained();
}

/* `lism set senders` switches new connections, and leaves paired ones as they are. */
Test(shortcut, set_senders_switches_new_connections)
{
	struct lism_snapshot s;
	int c1, s1, c2, s2, c3, s3;

	needs(LISM_F_DATA_PATH);
	up(NULL);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c1, &s1);
	assert_confirmed(1);
	snap(&e, &s);
	cr_assert_eq(s.sender_sockets, 0, "adaptive: members only at the handshake");
	cr_assert_eq(lism(&e, "set senders eager"), 0);
	snap(&e, &s);
	cr_assert(s.dev.flags & LISM_DEV_F_EAGER_SENDERS);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c2, &s2);
	assert_confirmed(2);
	snap(&e, &s);
	cr_assert_eq(s.sender_sockets, 2, "eager: the new pair's ends are senders at the handshake");
	cr_assert_eq(send_all(c2, 24, 0, 5000), 0);
	cr_assert_eq(recv_check(s2, 24, 0, 5000, 5000), 0);
	cr_assert_eq(send_all(c1, 25, 0, 3000), 0);
	cr_assert_eq(recv_check(s1, 25, 0, 3000, 5000), 0);
	snap(&e, &s);
	cr_assert_eq(s.stats[LISM_S_SC_BYTES], 5000, "only the eager pair's one-way send takes the shortcut");
	cr_assert_eq(lism(&e, "set senders adaptive"), 0);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c3, &s3);
	assert_confirmed(3);
	snap(&e, &s);
	cr_assert_not(s.dev.flags & LISM_DEV_F_EAGER_SENDERS);
	cr_assert_eq(s.sender_sockets, 2, "adaptive again: the third pair joined at its handshake");
	cr_assert_neq(lism(&e, "set senders sometimes"), 0);
	close(c1);
	close(s1);
	close(c2);
	close(s2);
	close(c3);
	close(s3);
	assert_drained();
}

/*
 * Bytes a member sent over TCP before it became a sender, which no sk_msg
 * run saw, are accounted when it shuts down (it may never send again), in
 * the counters and in its own entry.
 */
Test(shortcut, bytes_a_member_sent_unseen_are_accounted_at_shutdown)
{
	enum { SEND = 1000, SENDS = 3 };
	char path[PATH_MAX + 32];
	struct lism_snapshot s0, s1;
	struct lism_dmb me;
	struct lism_sk st;
	int c, sv, socks;

	needs(LISM_F_DATA_PATH);
	up(NULL);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c, &sv);
	assert_confirmed(1);
	snap(&e, &s0);
	for (int i = 0; i < SENDS; i++)
		cr_assert_eq(send_all(c, 21, (__u64)i * SEND, SEND), 0, "send %d", i);
	cr_assert_eq(recv_check(sv, 21, 0, SENDS * SEND, 5000), 0);
	snap(&e, &s1);
	cr_assert_eq(s1.sender_sockets, 0, "one way: the writer is no sender");
	cr_assert_eq(s1.stats[LISM_S_TCP_BYTES], s0.stats[LISM_S_TCP_BYTES], "a member's send was seen");
	cr_assert_eq(shutdown(c, SHUT_WR), 0);
	snap(&e, &s1);
	/* mutation: without the flush in on_state they stay uncounted until the close */
	cr_assert_eq(s1.stats[LISM_S_TCP_BYTES] - s0.stats[LISM_S_TCP_BYTES], (__u64)SENDS * SEND);
	/* and the client's own entry (lism conns' view) counts the same TCP bytes */
	snprintf(path, sizeof(path), "%s/socks", e.pin);
	socks = bpf_obj_get(path);
	cr_assert_geq(socks, 0, "open %s: %s", path, strerror(errno));
	cr_assert_eq(bpf_map_lookup_elem(socks, &c, &st), 0, "client storage: %s", strerror(errno));
	close(socks);
	cr_assert(dmb_lookup(&e, st.token, &me), "the client's entry is gone");
	cr_assert_eq(me.tx_tcp_bytes, (__u64)SENDS * SEND, "the client's entry and the counters disagree");
	close(c);
	close(sv);
	assert_drained();
}

/* A confirmed pair that moved a few bytes, and an fd of the instance's pin @name. */
static int pair_and_pin(__u32 seed, int *c, int *sv, const char *name)
{
	char path[PATH_MAX + 32];
	int fd;

	up(NULL);
	tcp_pair(AF_INET, "127.0.0.1", 1, c, sv);
	assert_confirmed(1);
	cr_assert_eq(send_all(*c, seed, 0, 4096), 0);
	cr_assert_eq(recv_check(*sv, seed, 0, 4096, 5000), 0);
	snprintf(path, sizeof(path), "%s/%s", e.pin, name);
	fd = bpf_obj_get(path);
	cr_assert_geq(fd, 0, "open %s: %s", path, strerror(errno));
	return fd;
}

/*
 * The backstop: sockets that close while the handshake program cannot see it
 * (here: its cgroup link detached under a confirmed pair) still give their
 * DMBs back when the kernel destroys them, counted as reaped.
 */
Test(shortcut, closes_the_handshake_missed_are_reaped_at_destroy)
{
	struct lism_snapshot s;
	int c, sv, link = pair_and_pin(21, &c, &sv, "link_sockops");

	cr_assert_eq(bpf_link_detach(link), 0, "detach the cgroup link: %s", strerror(errno));
	close(link);
	close(c);
	close(sv);
	assert_drained();
	snap(&e, &s);
	cr_assert_eq(s.stats[LISM_S_REAPED], 2, "%llu reaped, want both ends",
		     (unsigned long long)s.stats[LISM_S_REAPED]);
	cr_assert_eq(s.stats[LISM_S_CLOSES], 2);
}

/*
 * The sweep: sockets freed while neither the handshake program nor the
 * destroy backstop could see it (both links gone under a confirmed pair)
 * leave entries whose recorded socket no longer exists; the sweep finds
 * them and gives them back, counted apart from the backstop's.
 */
Test(shortcut, entries_whose_socket_vanished_unseen_are_swept)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);
	char path[PATH_MAX + 32];
	struct lism_snapshot s, s0;
	int c, sv, link = pair_and_pin(23, &c, &sv, "link_sockops"), l, lport = 0, c1, c2;

	/* first: live sockets survive whole passes of the sweep */
	snap(&e, &s0);
	for (int waited = 0;; waited += 50) {
		snap(&e, &s);
		cr_assert_eq(s.stats[LISM_S_REAPED_GONE], 0, "the sweep took the entry of a live socket");
		if (s.stats[LISM_S_SWEEPS] >= s0.stats[LISM_S_SWEEPS] + 2)
			break;
		cr_assert_lt(waited, 5000, "the sweep does not run");
		usleep(50 * 1000);
	}
	cr_assert_eq(s.confirmed, 1);
	cr_assert(s.backstop, "lism status does not see the backstop");
	/*
	 * An end that never got an answer: a listener whose accept queue is
	 * full drops the SYN, so c2 stays in SYN_SENT with a proposal nobody
	 * claimed (c1 fills the queue: a pair whose server end is never accepted).
	 */
	l = tcp_listen(AF_INET, "127.0.0.1", &lport, 1);
	cr_assert_eq(listen(l, 0), 0);
	c1 = tcp_connect(AF_INET, "127.0.0.1", lport, 1);
	for (int waited = 0; snap(&e, &s), s.confirmed < 2; waited += 10) {
		cr_assert_lt(waited, 3000, "c1 did not pair");
		usleep(10 * 1000);
	}
	c2 = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	cr_assert_geq(c2, 0);
	cr_assert(connect(c2, (struct sockaddr *)&(struct sockaddr_in){ .sin_family = AF_INET,
		.sin_port = htons(lport), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) },
		sizeof(struct sockaddr_in)) && errno == EINPROGRESS, "connect: %s", strerror(errno));
	usleep(100 * 1000);
	snap(&e, &s);
	cr_assert_eq(s.usage.dmbs_in_use, 5, "two pairs and an unanswered proposal");

	cr_assert_eq(bpf_link_detach(link), 0, "detach the cgroup link: %s", strerror(errno));
	close(link);
	/*
	 * A tracing link cannot be detached; it goes with its last reference,
	 * the pin, in a deferred work item that frees the link's id, then
	 * detaches the program, then drops it: wait until the program (held
	 * by nothing else) is gone, not only the link's id.
	 */
	snprintf(path, sizeof(path), "%s/link_destroy", e.pin);
	link = bpf_obj_get(path);
	cr_assert_geq(link, 0, "open %s: %s", path, strerror(errno));
	cr_assert_eq(bpf_obj_get_info_by_fd(link, &info, &len), 0, "%s", strerror(errno));
	close(link);
	cr_assert_eq(unlink(path), 0, "unpin %s: %s", path, strerror(errno));
	snprintf(path, sizeof(path), "%s/prog_destroy", e.pin); /* pinned for the views: goes too */
	cr_assert_eq(unlink(path), 0, "unpin %s: %s", path, strerror(errno));
	cr_assert_neq(info.prog_id, 0);
	for (int waited = 0; (link = bpf_prog_get_fd_by_id(info.prog_id)) >= 0; waited += 10) {
		close(link);
		cr_assert_lt(waited, 5000, "the backstop outlived its link's pin");
		usleep(10 * 1000);
	}
	close(c);
	close(sv);
	close(c1);
	close(c2);
	close(l); /* and with it the server end c1 was never accepted from */
	assert_drained();
	snap(&e, &s);
	cr_assert(!s.backstop, "lism status reports a backstop whose link is gone");
	cr_assert_eq(s.stats[LISM_S_REAPED_GONE], 5, "%llu swept, want all five ends (reaped %llu, closes %llu)",
		     (unsigned long long)s.stats[LISM_S_REAPED_GONE], (unsigned long long)s.stats[LISM_S_REAPED],
		     (unsigned long long)s.stats[LISM_S_CLOSES]);
	cr_assert_eq(s.stats[LISM_S_REAPED], 0, "the backstop was detached, yet reaped %llu",
		     (unsigned long long)s.stats[LISM_S_REAPED]);
	cr_assert_eq(s.stats[LISM_S_CLOSES], 5);
}

/*
 * The backstop also finds an entry whose socket no longer names it (the
 * client's token rewritten by @forget in its socket storage, from
 * userspace): by the slot and the socket cookie the entry recorded when it
 * joined.  *@s: the snapshot after both ends closed.
 */
static void forgotten_entry_is_reaped(__u32 seed, __u64 (*forget)(__u64 token),
				      struct lism_snapshot *s)
{
	struct lism_sk st;
	int c, sv, socks = pair_and_pin(seed, &c, &sv, "socks");

	cr_assert_eq(bpf_map_lookup_elem(socks, &c, &st), 0, "client storage: %s", strerror(errno));
	cr_assert_neq(st.token, 0);
	st.token = forget(st.token);
	cr_assert_eq(bpf_map_update_elem(socks, &c, &st, BPF_EXIST), 0, "%s", strerror(errno));
	close(socks);
	close(c);
	close(sv);
	assert_drained();
	snap(&e, s);
	cr_assert_eq(s->stats[LISM_S_REAPED_ORPHANS], 1, "%llu orphans reaped",
		     (unsigned long long)s->stats[LISM_S_REAPED_ORPHANS]);
	cr_assert_eq(s->stats[LISM_S_REAPED], 1);
}

static __u64 cleared(__u64 token)
{
	(void)token;
	return 0;
}

/* The same slot, another generation: a token that names no live entry. */
static __u64 stale(__u64 token)
{
	return token ^ (1ull << 32);
}

Test(shortcut, entries_their_socket_forgot_are_reaped_by_cookie)
{
	struct lism_snapshot s;

	forgotten_entry_is_reaped(22, cleared, &s);
}

Test(shortcut, entries_behind_a_stale_token_are_reaped_and_counted)
{
	struct lism_snapshot s;

	forgotten_entry_is_reaped(23, stale, &s);
	cr_assert_geq(s.stats[LISM_S_TOKEN_LOST], 1, "a state change met the stale token unseen");
}

/* Two namespaces joined by veth pairs on a bridge, like pods on a node. */
static void bridge_pods(const char **a, const char **b)
{
	const char *br = env_netns(&e, "br");

	*a = env_netns(&e, "a");
	*b = env_netns(&e, "b");
	cr_assert_eq(sh("ip -n %s link add br0 type bridge && ip -n %s link set br0 up", br, br), 0);
	cr_assert_eq(sh("ip link add eth0 netns %s type veth peer name va netns %s && "
			"ip link add eth0 netns %s type veth peer name vb netns %s",
			*a, br, *b, br),
		     0);
	cr_assert_eq(sh("ip -n %s link set va master br0 && ip -n %s link set va up && "
			"ip -n %s link set vb master br0 && ip -n %s link set vb up",
			br, br, br, br),
		     0);
	cr_assert_eq(sh("ip -n %s addr add 10.77.0.1/24 dev eth0 && ip -n %s link set eth0 up && "
			"ip -n %s addr add 10.77.0.2/24 dev eth0 && ip -n %s link set eth0 up",
			*a, *a, *b, *b),
		     0);
}

static void pods_stream(const char *a, const char *b, const char *dst, int dport, int lport)
{
	struct pump_result r;
	int l, c, sv, port = lport;

	netns_switch(b);
	l = tcp_listen(AF_INET, "10.77.0.2", &port, 1);
	netns_switch(a);
	c = tcp_connect(AF_INET, dst, dport ? dport : port, 1);
	netns_switch(NULL);
	sv = tcp_accept(l, 1, 5000);
	assert_confirmed(1);
	pump(c, sv, 16u << 20, 16u << 20, 1u << 20, 3, 60000, &r);
	cr_assert(r.ok, "%s", r.why);
	assert_shortcut_carried(32u << 20, 90);
	close(c);
	close(sv);
	close(l);
	assert_drained();
}

Test(shortcut, across_namespaces_on_a_bridge)
{
	const char *a, *b;

	up(MEASURE " --local-cidr 10.77.0.0/24");
	bridge_pods(&a, &b);
	pods_stream(a, b, "10.77.0.2", 0, 0);
}

/* A Service VIP rewritten kube-proxy style: the pair is found by token, not 4-tuple. */
Test(shortcut, through_dnat_service_vip)
{
	const char *a, *b;

	up(MEASURE " --local-cidr 10.77.0.0/24 --local-cidr 10.96.0.0/16");
	bridge_pods(&a, &b);
	cr_assert_eq(sh("ip -n %s route add 10.96.0.0/16 dev eth0", a), 0);
	cr_assert_eq(sh("ip netns exec %s iptables -t nat -A OUTPUT -p tcp -d 10.96.0.10 --dport 80 "
			"-j DNAT --to-destination 10.77.0.2:8080",
			a),
		     0, "iptables DNAT rule");
	pods_stream(a, b, "10.96.0.10", 80, 8080);
}

/*
 * The handshake race: the client's final ACK is dropped, so the server only
 * establishes (and joins the map) when data arrives, while the client has
 * been writing since connect() returned.  Those bytes travel by TCP and
 * must not be overtaken by shortcut bytes sent later.
 */
static void handshake_race(int delay_ms)
{
	const char *ns;
	struct lism_snapshot s;
	struct pump_result r;
	int l, c, sv, port = 5000;
	const __u64 early = 256u << 10;

	up(MEASURE);
	ns = env_netns(&e, "race");
	/* 2nd packet from the client is the handshake's pure ACK; with a delay, drop everything. */
	cr_assert_eq(sh("ip netns exec %s iptables -A OUTPUT -o lo -p tcp --dport %d "
			"-m connbytes --connbytes-dir original --connbytes-mode packets "
			"--connbytes %s -j DROP",
			ns, port, delay_ms ? "2" : "2:2"),
		     0, "iptables connbytes rule");
	netns_switch(ns);
	l = tcp_listen(AF_INET, "127.0.0.1", &port, 1);
	c = tcp_connect(AF_INET, "127.0.0.1", port, 1);
	netns_switch(NULL);
	/* the client is established, the server is not */
	cr_assert_eq(send_all(c, 11, 0, early), 0);
	if (delay_ms) {
		usleep(delay_ms * 1000);
		cr_assert_eq(sh("ip netns exec %s iptables -F OUTPUT", ns), 0);
	}
	sv = tcp_accept(l, 1, 10000);
	snap(&e, &s);
	cr_assert_geq(s.stats[LISM_S_TCP_BYTES], early, "early bytes did not go over TCP");
	cr_assert_eq(s.stats[LISM_S_SC_BYTES], 0);
	pump_from(c, sv, early, 32u << 20, 0, 32u << 20, 64u << 10, 11, 60000, &r);
	cr_assert(r.ok, "%s", r.why);
	snap(&e, &s);
	cr_assert_gt(s.stats[LISM_S_SYNC_HOLDS] + (s.stats[LISM_S_TCP_BYTES] > early), 0,
		     "nothing waited for the TCP bytes to be read");
	cr_assert_gt(s.stats[LISM_S_SC_BYTES], 32u << 20, "the shortcut never engaged");
	close(c);
	close(sv);
	close(l);
	assert_drained();
}

Test(shortcut, handshake_race_final_ack_dropped)
{
	needs(LISM_F_DATA_PATH);
	handshake_race(0);
}

Test(shortcut, handshake_race_server_established_late)
{
	needs(LISM_F_DATA_PATH);
	handshake_race(300);
}

/*
 * Many connections at once: each pairs with its own peer, and after a round
 * trip each end becomes a sender (2000 joins through the timer's queue, 128
 * per run).
 */
Test(shortcut, thousand_concurrent_connections)
{
	enum { N = 1000 };
	static int c[N], sv[N];
	struct rlimit rl = { 8192, 8192 };
	struct lism_snapshot s;
	int port = 0, l;

	needs(LISM_F_DATA_PATH);
	up(NULL);
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	l = tcp_listen(AF_INET, "127.0.0.1", &port, 1);
	for (int i = 0; i < N; i++) {
		c[i] = tcp_connect(AF_INET, "127.0.0.1", port, 1);
		sv[i] = tcp_accept(l, 1, 5000);
	}
	assert_confirmed(N);
	snap(&e, &s);
	cr_assert_eq(s.sender_sockets, 0, "senders before any reply");
	/* one-byte messages both ways, one segment each, until both ends of every pair join */
	for (int k = 0; k <= LISM_SENDER_MIN_SEGS; k++) {
		for (int i = 0; i < N; i++) {
			cr_assert_eq(send_all(c[i], 7, k, 1), 0);
			cr_assert_eq(send_all(sv[i], 8, k, 1), 0);
		}
		for (int i = 0; i < N; i++) {
			cr_assert_eq(recv_check(sv[i], 7, k, 1, 5000), 0);
			cr_assert_eq(recv_check(c[i], 8, k, 1, 5000), 0);
		}
	}
	cr_assert_eq(wait_senders(&e, 2 * N, 5000), 0, "not every end became a sender");
	snap(&e, &s);
	cr_assert_eq(s.stats[LISM_S_SENDERS_JOINED], 2 * N);
	cr_assert_eq(s.stats[LISM_S_SENDER_JOIN_FAILS], 0);
	cr_assert_eq(s.stats[LISM_S_SC_BYTES], 0, "the bytes that decided went over TCP");
	for (int i = 0; i < N; i++) {
		cr_assert_eq(send_all(c[i], i, 0, 1000 + i), 0);
		cr_assert_eq(send_all(sv[i], i + N, 0, 700), 0);
	}
	/* each server reads exactly its own client's bytes, and vice versa */
	for (int i = 0; i < N; i++) {
		cr_assert_eq(recv_check(sv[i], i, 0, 1000 + i, 5000), 0, "connection %d", i);
		cr_assert_eq(recv_check(c[i], i + N, 0, 700, 5000), 0, "connection %d", i);
	}
	snap(&e, &s);
	cr_assert_eq(s.stats[LISM_S_SC_BYTES], (__u64)N * 1700 + (__u64)N * (N - 1) / 2,
		     "not every byte after the round trips took the shortcut");
	for (int i = 0; i < N; i++) {
		close(c[i]);
		close(sv[i]);
	}
	close(l);
	assert_drained();
}

/* Connection churn: request/response, close; the table must end at zero. */
Test(shortcut, twenty_thousand_short_connections)
{
	enum { N = 20000 };
	struct lism_snapshot s;
	const char *ns;
	int port = 0, l;

	/* every connection must engage, senders included: this recycles DMB slots */
	up("--no-churn-detect --eager-senders");
	ns = env_netns(&e, "churn");
	cr_assert_eq(sh("ip netns exec %s sysctl -qw net.ipv4.ip_local_port_range='1024 65000'", ns),
		     0);
	netns_switch(ns);
	l = tcp_listen(AF_INET, "127.0.0.1", &port, 1);
	for (int i = 0; i < N; i++) {
		int c = tcp_connect(AF_INET, "127.0.0.1", port, 1);
		int sv = tcp_accept(l, 1, 5000);

		cr_assert_eq(send_all(c, i, 0, 200), 0);
		cr_assert_eq(recv_check(sv, i, 0, 200, 5000), 0, "connection %d", i);
		cr_assert_eq(send_all(sv, i + 1, 0, 1000), 0);
		cr_assert_eq(recv_check(c, i + 1, 0, 1000, 5000), 0, "connection %d", i);
		close(c);
		close(sv);
	}
	netns_switch(NULL);
	close(l);
	assert_drained();
	snap(&e, &s);
	cr_assert_eq(s.stats[LISM_S_CONFIRMS], N);
	cr_assert_eq(s.stats[LISM_S_CLOSES], 2 * N);
	cr_assert_eq(s.stats[LISM_S_FALLBACKS], 0);
	assert_shortcut_carried((__u64)N * 1200, 100);
}

/* TCP's "sockstat" memory, in bytes, for this network namespace. */
static long tcp_mem_bytes(void)
{
	char line[256];
	long pages = -1;
	FILE *f = fopen("/proc/net/sockstat", "r");

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "TCP: inuse %*d orphan %*d tw %*d alloc %*d mem %ld", &pages) == 1)
			break;
	fclose(f);
	return pages * sysconf(_SC_PAGESIZE);
}

/*
 * Non-blocking sends of @chunk-byte spans of pattern @seed into a reader
 * that does not read, until the first EAGAIN (any other error fails the
 * test) or @most bytes; returns the bytes sent.
 */
static __u64 send_until_eagain(int c, __u32 seed, __u64 chunk, __u64 most)
{
	__u64 sent = 0;

	while (sent < most) {
		__u64 len;
		const __u8 *p = pattern_span_public(seed, sent, chunk, &len); /* sets len: before send() reads it */
		ssize_t w = send(c, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (w < 0) {
			cr_assert_eq(errno, EAGAIN, "send after %llu bytes: %s", (unsigned long long)sent,
				     strerror(errno));
			break;
		}
		sent += w;
	}
	return sent;
}

/*
 * A reader that stops reading: the writer must be stopped (EAGAIN), not
 * fill kernel memory, and every byte must arrive once reading resumes.
 */
Test(shortcut, stalled_reader_bounds_memory)
{
	const __u64 limit = 1ull << 30, chunk = 64u << 10;
	struct lism_instance in;
	struct lism_conn *conns;
	__u64 sent;
	long mem_before, mem_stalled;
	size_t n;
	int c, sv;

	needs(LISM_F_DATA_PATH);
	struct lism_snapshot s;

	up(NULL);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c, &sv);
	assert_confirmed(1);
	make_senders(&e, c, sv); /* the writer's bytes go to the DMB first */
	mem_before = tcp_mem_bytes();
	sent = send_until_eagain(c, 5, chunk, limit);
	cr_assert_lt(sent, limit, "1 GiB went into a reader that never reads");
	mem_stalled = tcp_mem_bytes();
	cr_assert_eq(lism_instance_open(&in, e.pin), 0);
	cr_assert_eq(lism_conns_collect(&in, &conns, &n), 0);
	lism_instance_close(&in);
	for (size_t i = 0; i < n; i++)
		cr_assert_leq(conns[i].row.unread, LISM_DEFAULT_DMB_SIZE + (1u << 20),
				      "the DMB bound was exceeded: %u unread", conns[i].row.unread);
	free(conns);
	fprintf(stderr, "stalled reader: writer stopped after %llu bytes; TCP memory %+ld KiB\n",
		(unsigned long long)sent, (mem_stalled - mem_before) / 1024);
	cr_assert_lt(sent, 64ull << 20, "more than 64 MiB accepted for a stalled reader");
	snap(&e, &s);
	cr_assert_gt(s.stats[LISM_S_SC_BYTES], 0, "nothing went into the DMB");
	cr_assert_gt(s.stats[LISM_S_DMB_FULL], 0, "the DMB bound was never hit");
	cr_assert_eq(recv_check(sv, 5, 0, sent, 30000), 0, "bytes lost or reordered");
	close(c);
	close(sv);
	assert_drained();
}

/*
 * A reader whose socket memory would refuse a redirect gets those bytes
 * over TCP: the writer never sees the ENOMEM of a refused redirect, which
 * TCP never returns (include/lism/rmem.h).  The reader's end is accepted
 * inside a memory cgroup whose TCP memory is limited to 512 KiB, far below
 * the 4 MiB DMB, and it reads nothing until the writer has to wait.
 */
Test(shortcut, a_reader_short_of_socket_memory_gets_tcp_not_enomem)
{
	const __u64 chunk = 64u << 10, most = 64ull << 20;
	struct lism_snapshot s;
	int port = 0, l, c, sv;
	__u64 sent;

	needs(LISM_F_DATA_PATH);
	up(NULL);
	memcg_up(&e, 512u << 10);
	l = tcp_listen(AF_INET, "127.0.0.1", &port, 1);
	c = tcp_connect(AF_INET, "127.0.0.1", port, 1);
	memcg_enter(&e); /* only the reader's end is charged to it */
	sv = tcp_accept(l, 1, 5000);
	memcg_leave(&e);
	assert_confirmed(1);
	make_senders(&e, c, sv);
	sent = send_until_eagain(c, 6, chunk, most); /* an ENOMEM fails here */
	snap(&e, &s);
	fprintf(stderr, "reader short of memory: %llu bytes until EAGAIN, %llu through the shortcut, "
		"%llu sends kept on TCP for it, kmem.tcp failcnt %llu\n", (unsigned long long)sent,
		(unsigned long long)s.stats[LISM_S_SC_BYTES], (unsigned long long)s.stats[LISM_S_PEER_MEM_TIGHT],
		memcg_read(&e, "memory.kmem.tcp.failcnt"));
	cr_assert_lt(sent, most, "the writer never had to wait");
	/* 448 KiB fit under the 512 KiB limit: a page size counted wrong keeps them off it */
	cr_assert_geq(s.stats[LISM_S_SC_BYTES], 256u << 10, "only %llu bytes went through the shortcut",
		      (unsigned long long)s.stats[LISM_S_SC_BYTES]);
	cr_assert_gt(s.stats[LISM_S_PEER_MEM_TIGHT], 0, "the reader's memory limit was never seen");
	cr_assert_eq(stats_json_u64(&e, "peer_mem_tight"), s.stats[LISM_S_PEER_MEM_TIGHT], "lism stats -j");
	cr_assert_eq(recv_check(sv, 6, 0, sent, 30000), 0, "bytes lost or reordered");
	close(c);
	close(sv);
	close(l);
	assert_drained();
}
