// SPDX-License-Identifier: GPL-2.0-only
/*
 * Socket semantics stay TCP's.  Each scenario (tests/programs/semantics.c)
 * runs on plain TCP (sockets made outside lism's cgroup), on a confirmed
 * pair through the sk_msg path, and on a ring pair (semantics-peer under
 * `lism exec`), and what the application observes must be the same.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "broker.h"
#include "harness.h"
#include "semantics.h"
#include "traffic.h"

static struct env e;
static struct lism_broker *dev;

static void down(void)
{
	lism_broker_stop(dev);
	dev = NULL;
	env_down(&e);
}

/* What this suite tests: where the kernel lacks it, the matrix skips the suite (harness.h). */
static void gate(void)
{
	require_root();
	needs(LISM_F_DATA_PATH);
}

TestSuite(semantics, .init = gate, .fini = down, .timeout = 120);

static int wait_readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms);
}

static void compare(const struct sem_obs *plain, const struct sem_obs *l, const char *how)
{
	cr_assert_eq(l->n, plain->n, "%d observations under lism (%s), %d with TCP", l->n, how, plain->n);
	for (int i = 0; i < plain->n; i++)
		cr_assert_eq(l->v[i], plain->v[i], "observation %d: lism (%s) %ld, TCP %ld", i, how,
			     l->v[i], plain->v[i]);
}

enum {
	AS_MEMBERS = 1, /* a confirmed pair before any reply: sends over TCP, reads through tcp_bpf */
	AS_SENDERS = 2, /* after a round trip: both ends' sends run the data path */
	ON_A_RING = 4,  /* both ends under lism exec: ring DMBs, the TCP connection their doorbells */
	ALL_WAYS = AS_MEMBERS | AS_SENDERS | ON_A_RING,
};

/* Shortcut bytes of the last three_ways() run's members and senders pairs. */
static __u64 sc_members, sc_senders;
/* Whether its ways reached the kernel's epoll set lazily (sem_obs.lazy): plain, ring. */
static int lazy_plain, lazy_ring;

static void pair(const struct sem_scenario *sc, int *c, int *s)
{
	int err = sem_pair(sc->nonblock, c, s);

	cr_assert_eq(err, 0, "the pair: %s", strerror(-err));
}

static void run_here(const struct sem_scenario *sc, int c, int s, struct sem_obs *o)
{
	cr_assert_eq(sc->run(c, s, o), 0, "%s: %s", sc->name, o->why);
}

/*
 * @sc in semantics-peer under `lism exec` with a device of this test's
 * instance, in its cgroup: its observations in @o.  The instance counts
 * one ring pair more and the device two attaches (both ends took the
 * ring), so a pair that stayed on TCP cannot pass for a ring.
 */
static void on_a_ring(const struct sem_scenario *sc, struct sem_obs *o)
{
	char bin[PATH_MAX], dir[PATH_MAX], peer[PATH_MAX + 32], cmd[3 * PATH_MAX], line[256];
	struct lism_device_totals t0, t1;
	struct lism_snapshot st;
	const char *b = getenv("LISM_BIN");
	__u64 rings0;
	int st_peer, end = -1;
	FILE *f;

	needs(LISM_F_EXEC);
	cr_assert(b && realpath(b, bin), "LISM_BIN names the lism under test");
	snprintf(dir, sizeof(dir), "%s", bin);
	snprintf(peer, sizeof(peer), "%s/tests/semantics-peer", dirname(dir));
	cr_assert_eq(access(peer, X_OK), 0, "%s: build it (make integration)", peer);
	if (!dev)
		cr_assert_eq(lism_broker_start(e.pin, e.device, &dev), 0, "the device did not start");
	snap(&e, &st);
	rings0 = st.stats[LISM_S_RING_PAIRS];
	lism_broker_stats(dev, &t0);
	/* stderr stays the test's: with LISM_EXEC_DEBUG=1 set, liblism says there why a ring connection failed */
	snprintf(cmd, sizeof(cmd), "exec %s exec --device-socket %s -- %s %s", bin, e.device, peer, sc->name);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		char *rest;
		long v = strtol(line, &rest, 10);

		if (!strncmp(line, "end ", 4)) {
			end = atoi(line + 4);
			continue;
		}
		if (!strncmp(line, "lazy ", 5) && end >= 0) {
			o->lazy = atoi(line + 5);
			continue;
		}
		cr_assert(rest != line && *rest == '\n' && end < 0, "semantics-peer %s said: %s", sc->name, line);
		cr_assert_lt(o->n, SEM_OBS_MAX);
		o->v[o->n++] = v;
	}
	st_peer = pclose(f);
	cr_assert(WIFEXITED(st_peer) && WEXITSTATUS(st_peer) == 0, "semantics-peer %s: status %#x", sc->name,
		  st_peer);
	cr_assert_eq(end, o->n, "semantics-peer %s: %d observations, its end line says %d", sc->name, o->n, end);
	snap(&e, &st);
	lism_broker_stats(dev, &t1);
	cr_assert_eq(st.stats[LISM_S_RING_PAIRS] - rings0, 1, "the pair did not take a ring");
	cr_assert_eq(t1.attaches - t0.attaches, 2, "both ends take the ring's memory from the device");
}

/*
 * Run the scenario called @name on plain TCP, then on a lism pair as
 * members and as senders (include/lism/sender.h) and on a ring pair, as
 * @ways says; compare observations.  Scenarios close both sockets.
 */
static void three_ways(const char *name, int ways)
{
	const struct sem_scenario *sc = sem_find(name);
	struct lism_snapshot st;
	struct sem_obs plain = { 0 }, members = { 0 }, senders = { 0 }, ring = { 0 };
	__u64 sc0 = 0;
	int c, s;

	cr_assert_not_null(sc, "no scenario %s", name);
	require_root();
	env_up(&e, NULL);

	env_plain(&e);
	pair(sc, &c, &s); /* where no lism is: plain TCP */
	env_leave(&e);
	snap(&e, &st);
	cr_assert_eq(st.stats[LISM_S_PROPOSALS_SENT], 0, "the plain pair is not under lism");
	run_here(sc, c, s, &plain);
	lazy_plain = plain.lazy;

	env_enter(&e);
	if (ways & AS_MEMBERS) {
		pair(sc, &c, &s);
		snap(&e, &st);
		cr_assert_eq(st.confirmed, 1, "the lism pair is not confirmed");
		cr_assert_eq(st.sender_sockets, 0, "senders before any reply");
		sc0 = st.stats[LISM_S_SC_BYTES];
		run_here(sc, c, s, &members);
		compare(&plain, &members, "members");
		cr_assert_eq(wait_drained(&e, 3000), 0);
		snap(&e, &st);
		sc_members = st.stats[LISM_S_SC_BYTES] - sc0;
	}
	if (ways & AS_SENDERS) {
		pair(sc, &c, &s);
		snap(&e, &st);
		cr_assert_eq(st.confirmed, 1, "the lism pair is not confirmed");
		make_senders(&e, c, s);
		sc0 = st.stats[LISM_S_SC_BYTES];
		run_here(sc, c, s, &senders);
		compare(&plain, &senders, "senders");
	}
	cr_assert_eq(wait_drained(&e, 3000), 0);
	snap(&e, &st);
	if (ways & AS_SENDERS)
		sc_senders = st.stats[LISM_S_SC_BYTES] - sc0;
	if (ways & ON_A_RING) {
		on_a_ring(sc, &ring);
		compare(&plain, &ring, "ring");
		lazy_ring = ring.lazy;
	}
}

Test(semantics, half_close_gives_eof_after_the_data)
{
	three_ways("half_close", ALL_WAYS);
}

Test(semantics, close_after_send_delivers_everything_then_eof)
{
	three_ways("close_after_send", ALL_WAYS);
}

Test(semantics, reset_reports_econnreset)
{
	three_ways("reset", ALL_WAYS);
}

/*
 * An event loop's epoll_ctl round (ae's DEL and ADD per request): what the
 * application sees is TCP's, and on a ring the kernel's set followed the
 * application's lazily (exec/poll.c), which plain TCP never does.
 */
Test(semantics, epoll_ctl_rounds_of_an_event_loop)
{
	three_ways("epoll_ctl_sequence", ALL_WAYS);
	cr_assert_eq(lazy_plain, 0, "no liblism here: the kernel's set is the application's at once");
	cr_assert_eq(lazy_ring, 1, "liblism applied the DEL and the ADD before the wait: no lazy registration");
}

/* Members read TCP bytes through tcp_bpf, whose FIONREAD does not count them: see below. */
Test(semantics, fionread_and_msg_peek)
{
	three_ways("fionread_and_peek", AS_SENDERS | ON_A_RING);
}

/*
 * This kernel's FIONREAD on a socket in a sockmap (tcp_bpf_ioctl) counts
 * only its shortcut queue, not bytes that arrived over TCP: a member that
 * is sent to over TCP (before its peer is a sender, during an order sync,
 * with a full DMB) reads 0 while those bytes wait.  Canary for a kernel fix.
 * The sk_msg path's own: a ring's FIONREAD counts its ring and its runs
 * (fionread_and_msg_peek runs on a ring too).
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

Test(semantics, epoll_readiness)
{
	three_ways("epoll_readiness", ALL_WAYS);
}

Test(semantics, sendfile_delivers_the_file)
{
	three_ways("sendfile", ALL_WAYS);
	/* each run's bytes pass the verdict once (the members run may join mid-file: bulk sends) */
	cr_assert_leq(sc_members, 5u << 20);
	cr_assert_leq(sc_senders, 5u << 20);
	cr_assert_gt(sc_senders, 1u << 20, "sendfile did not use the shortcut");
}

/*
 * The table's first row at a smaller size (shortcut/gigabyte_* has the
 * gigabyte and the shortcut's counters): both directions at once, sends
 * of 1 B..4 MiB by an event loop, so a ring's writers fill it and go on
 * in runs.
 */
Test(semantics, both_directions_at_once_all_sizes)
{
	three_ways("both_directions", ALL_WAYS);
}

/*
 * splice(2) from a ring socket: liblism copies the ring's bytes into the
 * pipe (docs/exec.md), so a splicing reader gets them as on TCP.  Not on
 * the sk_msg path: the kernel's splice never sees a sender's shortcut
 * bytes (the canary below), which is why such readers are excluded by port.
 */
Test(semantics, splice_reader_gets_every_byte_on_tcp_and_on_a_ring)
{
	three_ways("splice_read", ON_A_RING);
}

/* splice_read's observations: @got bytes spliced, every one as sent. */
static void splice_saw(int c, int s, long got, const char *why)
{
	struct sem_obs o = { 0 };

	run_here(sem_find("splice_read"), c, s, &o);
	cr_assert_eq(o.n, 2);
	cr_assert_eq(o.v[0], got, "splice read %ld bytes: %s", o.v[0], why);
	cr_assert_eq(o.v[1], 1, "the bytes spliced are not those sent");
}

/*
 * This kernel's splice read path (tcp_splice_read) only looks at the TCP
 * receive queue, so it never sees shortcut bytes.  Receivers that splice
 * must be excluded by port; then they behave exactly as with TCP.  A
 * policy of the sk_msg path: an excluded port pairs no ring either.
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
	splice_saw(c, s, 3000, "the port is plain TCP");
	close(l);
}

/* The sk_msg path's own (a ring's splice reader: splice_reader_gets_every_byte_*). */
Test(semantics, kernel_splice_does_not_see_shortcut_bytes)
{
	int c, s;

	require_root();
	env_up(&e, NULL);
	env_enter(&e);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c, &s);
	make_senders(&e, c, s);
	splice_saw(c, s, 0, "splice saw shortcut bytes: the kernel was fixed, update docs/semantics.md");
}
