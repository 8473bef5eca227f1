// SPDX-License-Identifier: GPL-2.0-only
/*
 * The bench's ablations (LISM_ABLATE, include/lism/ablate.h) switch their
 * rule off, each on the workload the rule is for: an ablation that changed
 * nothing would make its bench row measure the default (as every ablation
 * before 2026-12-03 did, through the daemon's options).  The rules' own
 * effect is tested in test_shortcut.c; here each is off.
 */
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "lism/sender.h"
#include "traffic.h"

static struct env e;

static void down(void)
{
	env_down(&e);
	unsetenv("LISM_ABLATE");
}

static void gate(void)
{
	require_root();
	needs(LISM_F_DATA_PATH);
}

TestSuite(ablate, .init = gate, .fini = down, .timeout = 120);

/* An instance whose programs have @what switched off; a pair of it. */
static void up_ablated(const char *what, int *c, int *s)
{
	struct lism_snapshot st;

	cr_assert_eq(setenv("LISM_ABLATE", what, 1), 0);
	env_up(&e, NULL);
	env_enter(&e);
	tcp_pair(AF_INET, "127.0.0.1", 1, c, s);
	snap(&e, &st);
	cr_assert_eq(st.confirmed, 1, "the pair is not confirmed");
}

/* Without the one-way stop, a writer nobody answers stays watched: never put on TCP for good. */
Test(ablate, one_way_stop)
{
	enum { SEND = 100, SENDS = 3 * LISM_SENDER_WATCH_SEGS, BATCH = 64 };
	struct lism_snapshot st;
	int c, s, one = 1;

	up_ablated("one-way-stop", &c, &s);
	cr_assert_eq(setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)), 0);
	one_way_stream(c, s, SENDS, SEND, BATCH, 51);
	snap(&e, &st);
	cr_assert_eq(st.stats[LISM_S_SENDERS_ONE_WAY], 0, "the stop ran: the ablation did nothing");
	cr_assert_eq(st.stats[LISM_S_SENDERS_JOINED], 0);
	close(c);
	close(s);
}

/* Without bulk joins, one-way bulk sends are not measured and make no sender. */
Test(ablate, bulk_join)
{
	enum { SEND = 128 << 10, SENDS = 2 * LISM_SENDER_SIZE_SENDS };
	struct lism_snapshot st;
	int c, s;

	needs(LISM_F_SEND_SIZES); /* bulk joins by send sizes (6.15) */
	up_ablated("bulk-join", &c, &s);
	for (int i = 0; i < SENDS; i++) {
		cr_assert_eq(send_all(c, 52, (__u64)i * SEND, SEND), 0);
		cr_assert_eq(recv_check(s, 52, (__u64)i * SEND, SEND, 5000), 0, "send %d", i);
	}
	usleep(200 * 1000); /* a join is a timer's: give one the time to run */
	snap(&e, &st);
	cr_assert_eq(st.stats[LISM_S_SEND_SIZE_CALLS], 0, "sends were measured: the ablation did nothing");
	cr_assert_eq(st.stats[LISM_S_SENDERS_JOINED], 0, "a bulk writer joined");
	close(c);
	close(s);
}

/* Without the send-limit check, a writer with a small SO_SNDBUF joins once data went both ways. */
Test(ablate, send_limits)
{
	enum { SMALL = 100, ROUNDS = 40 };
	struct lism_snapshot st;
	int c, s, sndbuf = 64 << 10;

	up_ablated("send-limits", &c, &s);
	cr_assert_eq(setsockopt(c, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)), 0);
	round_trips(c, s, ROUNDS, SMALL, 53);
	cr_assert_eq(wait_senders(&e, 2, 3000), 0, "both ends did not join");
	snap(&e, &st);
	cr_assert_eq(st.stats[LISM_S_SENDERS_SEND_LIMITS], 0, "the check ran: the ablation did nothing");
	cr_assert_eq(st.stats[LISM_S_SENDERS_JOINED], 2);
	close(c);
	close(s);
}
