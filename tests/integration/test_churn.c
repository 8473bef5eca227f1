// SPDX-License-Identifier: GPL-2.0-only
/*
 * Churn detection (include/lism/churn.h): destinations whose connections
 * move too little to pay for the shortcut skip it, probe it, and get it
 * back when a connection is long or the churn stops.  Every exchange is
 * checked byte for byte whichever path it took.
 */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "lism/churn.h"
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

TestSuite(churn, .init = gate, .fini = down, .timeout = 120);

/*
 * A window far above any stall of a loaded CI machine between two
 * connections of these loops, so that the counts below are exact.
 */
#define WINDOW_MS 2000
#define CHURN_ARGS "--churn-window 2000"

/*
 * Wait until both ends released their entries: the client scores its
 * connection before it releases its own, at a CLOSE that may come from
 * softirq after close() returned.
 */
static void wait_released(void)
{
	cr_assert_eq(wait_drained(&e, 5000), 0, "entries still in use");
}

/* Every short close is scored exactly once (by the active end only). */
static void assert_short_conns(__u64 want)
{
	struct lism_snapshot s;

	snap(&e, &s);
	cr_assert_eq(s.stats[LISM_S_SHORT_CONNS], want, "short connections %llu, want %llu",
		     (unsigned long long)s.stats[LISM_S_SHORT_CONNS], (unsigned long long)want);
}

/* Which end closes first, and how. */
enum closing { SERVER_FIRST, CLIENT_FIRST, CLIENT_RESETS };

/*
 * One connection to @port: @ups sends of 100 bytes from the client, then
 * @downs of 300 from the server, closed as @how says (the server first is
 * what HTTP with Connection: close does; a reset is SO_LINGER 0).  Returns
 * whether the connection was confirmed, once its ends have let go of their
 * entries.
 */
static int transfer_closing(int l, int port, int ups, int downs, __u32 seed, enum closing how)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	struct lism_snapshot before, after;
	int c, s;

	snap(&e, &before);
	c = tcp_connect(AF_INET, "127.0.0.1", port, 1);
	s = tcp_accept(l, 1, 5000);
	cr_assert(c >= 0 && s >= 0);
	snap(&e, &after);
	for (int i = 0; i < ups; i++) {
		cr_assert_eq(send_all(c, seed, (__u64)i * 100, 100), 0);
		cr_assert_eq(recv_check(s, seed, (__u64)i * 100, 100, 5000), 0, "send %d up", i);
	}
	for (int i = 0; i < downs; i++) {
		cr_assert_eq(send_all(s, seed + 1, (__u64)i * 300, 300), 0);
		cr_assert_eq(recv_check(c, seed + 1, (__u64)i * 300, 300, 5000), 0, "send %d down", i);
	}
	if (how == CLIENT_RESETS)
		cr_assert_eq(setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
	if (how != SERVER_FIRST) {
		close(c);
		close(s);
	} else {
		close(s);
		close(c);
	}
	wait_released();
	return after.stats[LISM_S_CONFIRMS] > before.stats[LISM_S_CONFIRMS];
}

static int transfer(int l, int port, int ups, int downs, __u32 seed)
{
	return transfer_closing(l, port, ups, downs, seed, SERVER_FIRST);
}

/* A request and its response: a short connection. */
static int exchange(int l, int port, __u32 seed)
{
	return transfer(l, port, 1, 1, seed);
}

/* What `lism status -j` says of churn detection: whether it is on, and its window. */
static void assert_status(int on, __u64 window_ms)
{
	struct json_object *j, *v;
	char out[8192];

	cr_assert_eq(lism_out(&e, "status -j", out, sizeof(out)), 0, "%s", out);
	j = json_tokener_parse(out);
	cr_assert(j, "%s", out);
	cr_assert(json_object_object_get_ex(j, "churn_detect", &v), "%s", out);
	cr_assert_eq(json_object_get_boolean(v), on);
	cr_assert(json_object_object_get_ex(j, "churn_window_ms", &v), "%s", out);
	cr_assert_eq((__u64)json_object_get_uint64(v), window_ms);
	json_object_put(j);
}

/* `lism stats -j` shows the short closes and the skipped connections. */
static void assert_stats_json(__u64 shorts, __u64 skipped)
{
	struct json_object *j, *v, *r, *name, *count;
	char out[16384];
	__u64 found = 0;

	cr_assert_eq(lism_out(&e, "stats -j", out, sizeof(out)), 0, "%s", out);
	j = json_tokener_parse(out);
	cr_assert(j, "%s", out);
	cr_assert(json_object_object_get_ex(j, "short_conns", &v), "%s", out);
	cr_assert_eq((__u64)json_object_get_uint64(v), shorts);
	cr_assert(json_object_object_get_ex(j, "fallback_reasons", &v), "%s", out);
	for (size_t i = 0; i < json_object_array_length(v); i++) {
		r = json_object_array_get_idx(v, i);
		if (json_object_object_get_ex(r, "name", &name) &&
		    !strcmp(json_object_get_string(name), "short-lived") &&
		    json_object_object_get_ex(r, "count", &count))
			found = json_object_get_uint64(count);
	}
	cr_assert_eq(found, skipped, "%s", out);
	json_object_put(j);
}

static void assert_tables_empty(void)
{
	struct lism_snapshot s;

	wait_released();
	snap(&e, &s);
	cr_assert_eq(s.stats[LISM_S_REAPED], 0, "every close was seen");
}

/* Short connections to one destination until it skips: LISM_CHURN_STREAK of them. */
static void make_it_churn(int l, int port, __u64 *shorts)
{
	/* either end may close first: the client scores in LAST_ACK's or TIME_WAIT's CLOSE */
	for (int i = 0; i < LISM_CHURN_STREAK; i++)
		cr_assert(transfer_closing(l, port, 1, 1, 100 + i, i % 2 ? CLIENT_FIRST : SERVER_FIRST),
			  "connection %d before the streak engages", i);
	*shorts += LISM_CHURN_STREAK;
	assert_short_conns(*shorts);
}

Test(churn, short_connections_skip_the_shortcut_and_probe_it)
{
	int port = 0, other = 0, l, l2, confirmed = 0, n = 2 * LISM_CHURN_PROBE_EVERY;
	struct lism_snapshot s;
	__u64 shorts = 0;

	require_root();
	env_up(&e, CHURN_ARGS);
	env_enter(&e);
	l = tcp_listen(AF_INET, "127.0.0.1", &port, 1);
	l2 = tcp_listen(AF_INET, "127.0.0.1", &other, 1);
	make_it_churn(l, port, &shorts);
	for (int i = 0; i < n; i++)
		confirmed += exchange(l, port, 200 + i);
	/* the first after the streak and every LISM_CHURN_PROBE_EVERY-th one probe */
	cr_assert_eq(confirmed, 2, "probes among %d connections: %d", n, confirmed);
	assert_short_conns(shorts + 2);
	snap(&e, &s);
	cr_assert_eq(s.reasons[LISM_R_SHORT_LIVED], n - 2);
	cr_assert_eq(s.stats[LISM_S_PROPOSALS_SENT], LISM_CHURN_STREAK + 2, "a skipped SYN carries no option");
	/* the views say the same: `lism stats -j` */
	assert_stats_json(shorts + 2, n - 2);
	/* another destination of the same client is not affected */
	cr_assert(exchange(l2, other, 900), "another port engages");
	assert_tables_empty();
	close(l2);
	close(l);
}

/* After a long probe it takes a whole new streak, which starts with a probe. */
static void churn_again(int l, int port, __u64 *shorts, __u32 seed)
{
	for (int i = 0; i < LISM_CHURN_STREAK; i++)
		cr_assert(exchange(l, port, seed + i), "connection %d after a long probe engages", i);
	*shorts += LISM_CHURN_STREAK;
	assert_short_conns(*shorts);
}

Test(churn, a_long_probe_or_a_pause_brings_the_shortcut_back)
{
	int port = 0, l;
	__u64 shorts = 0;

	require_root();
	env_up(&e, CHURN_ARGS);
	env_enter(&e);
	l = tcp_listen(AF_INET, "127.0.0.1", &port, 1);
	make_it_churn(l, port, &shorts);
	/* the probe is long by what the client sent: 10 sends up, one answer */
	cr_assert(transfer(l, port, 10, 1, 300), "the probe engages");
	churn_again(l, port, &shorts, 310);
	/* this probe is long by what the client received: one request, 10 answers */
	cr_assert(transfer(l, port, 1, 10, 320), "the probe engages");
	churn_again(l, port, &shorts, 330);
	/* a probe that is short again: skipping goes on */
	cr_assert(exchange(l, port, 340), "a probe");
	assert_short_conns(++shorts);
	cr_assert_not(exchange(l, port, 341), "skipped");
	/* no short close for longer than the window: every connection engages again */
	usleep((WINDOW_MS + 300) * 1000);
	cr_assert(exchange(l, port, 350), "after a pause the shortcut is back");
	assert_tables_empty();
	close(l);
}

Test(churn, switched_off_every_connection_engages)
{
	int port = 0, l;
	struct lism_snapshot s;

	require_root();
	env_up(&e, "--no-churn-detect " CHURN_ARGS);
	env_enter(&e);
	l = tcp_listen(AF_INET, "127.0.0.1", &port, 1);
	for (int i = 0; i < 3 * LISM_CHURN_STREAK; i++)
		cr_assert(exchange(l, port, 400 + i), "connection %d", i);
	snap(&e, &s);
	cr_assert_eq(s.reasons[LISM_R_SHORT_LIVED], 0);
	cr_assert_eq(s.stats[LISM_S_SHORT_CONNS], 0, "nothing is scored while it is off");
	assert_status(0, WINDOW_MS);
	/* switched on at run time, without a reload */
	cr_assert_eq(lism(&e, "set churn-detect on"), 0);
	assert_status(1, WINDOW_MS);
	for (int i = 0; i < LISM_CHURN_STREAK; i++)
		cr_assert(exchange(l, port, 500 + i));
	assert_short_conns(LISM_CHURN_STREAK);
	cr_assert(exchange(l, port, 510), "a probe");
	cr_assert_not(exchange(l, port, 511), "skipped once on");
	cr_assert_eq(lism(&e, "set churn-detect off"), 0);
	cr_assert(exchange(l, port, 520), "off again: engages");
	assert_tables_empty();
	close(l);
}

Test(churn, reset_connections_count_and_the_key_is_per_namespace)
{
	int port = 0, l, lb;
	const char *other;
	__u64 shorts = 0;

	require_root();
	env_up(&e, CHURN_ARGS);
	env_enter(&e);
	l = tcp_listen(AF_INET, "127.0.0.1", &port, 1);
	/* a client that resets its connections is scored at that CLOSE too */
	for (int i = 0; i < LISM_CHURN_STREAK; i++)
		cr_assert(transfer_closing(l, port, 1, 1, 600 + i, CLIENT_RESETS), "connection %d before the streak engages", i);
	shorts += LISM_CHURN_STREAK;
	assert_short_conns(shorts);
	cr_assert(exchange(l, port, 610), "the probe");
	assert_short_conns(++shorts);
	cr_assert_not(exchange(l, port, 611), "skipped");
	/* the same address and port in another network namespace is another destination */
	other = env_netns(&e, "c");
	netns_switch(other);
	lb = tcp_listen(AF_INET, "127.0.0.1", &port, 1);
	cr_assert(exchange(lb, port, 620), "a client in another namespace engages");
	cr_assert(exchange(lb, port, 621), "and keeps engaging");
	close(lb);
	netns_switch(NULL);
	cr_assert_not(exchange(l, port, 630), "this namespace still skips");
	assert_tables_empty();
	close(l);
}

enum { THREADS = 4, PER_THREAD = 1000 };

struct crr {
	int port;
	int errors;
};

/* A client thread: connect, 100 bytes up, 300 down, close, PER_THREAD times. */
static void *crr_client(void *arg)
{
	struct crr *r = arg;

	for (int i = 0; i < PER_THREAD; i++) {
		int c = tcp_connect_try(AF_INET, "127.0.0.1", r->port, 1); /* no cr_assert off the test's thread */

		if (c < 0 || send_all(c, 7, 0, 100) || recv_check(c, 8, 0, 300, 5000))
			__sync_fetch_and_add(&r->errors, 1);
		if (c >= 0)
			close(c);
	}
	return NULL;
}

/* The default policy with several clients churning one destination at once. */
Test(churn, many_threads_churning_at_once)
{
	struct crr r = { 0 };
	pthread_t t[THREADS];
	struct lism_snapshot s;
	int l, served = 0;

	require_root();
	(void)pattern_at(0, 0); /* built lazily: not while threads race for it */
	env_up(&e, NULL);
	env_enter(&e);
	l = tcp_listen(AF_INET, "127.0.0.1", &r.port, 1);
	for (int i = 0; i < THREADS; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, crr_client, &r), 0);
	while (served < THREADS * PER_THREAD) {
		int sv = tcp_accept(l, 1, 5000);

		if (sv < 0)
			break;
		if (recv_check(sv, 7, 0, 100, 5000) || send_all(sv, 8, 0, 300))
			r.errors++;
		close(sv);
		served++;
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	close(l);
	cr_assert_eq(served, THREADS * PER_THREAD);
	cr_assert_eq(r.errors, 0, "every exchange arrives exact, whichever path it took");
	wait_released();
	snap(&e, &s);
	cr_assert_geq(s.reasons[LISM_R_SHORT_LIVED], THREADS * PER_THREAD / 2, "most skipped: %llu",
		      (unsigned long long)s.reasons[LISM_R_SHORT_LIVED]);
	cr_assert_eq(s.stats[LISM_S_CONFIRMS] + s.reasons[LISM_R_SHORT_LIVED], THREADS * PER_THREAD,
		     "each connection engaged or skipped");
	cr_assert_eq(s.stats[LISM_S_FALLBACKS], s.reasons[LISM_R_SHORT_LIVED], "no other fallback");
	cr_assert_eq(s.stats[LISM_S_SHORT_CONNS], s.stats[LISM_S_CONFIRMS],
		     "every engaged connection scored short, once");
	assert_tables_empty();
}
