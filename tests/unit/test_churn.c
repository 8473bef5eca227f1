// SPDX-License-Identifier: GPL-2.0-only
#include <criterion/criterion.h>

#include "lism/churn.h"

#define MS 1000000ull
#define W (LISM_CHURN_WINDOW_MS * MS)

/* @n short closes, @gap_ns apart, starting at *now. */
static void short_closes(struct lism_churn *c, int n, __u64 gap_ns, __u64 *now)
{
	for (int i = 0; i < n; i++) {
		*now += gap_ns;
		lism_churn_closed(c, 1, *now, W);
	}
}

/* Of @n connections at @now, how many skip. */
static int skips(struct lism_churn *c, int n, __u64 now)
{
	int k = 0;

	for (int i = 0; i < n; i++)
		k += lism_churn_skip(c, now, W);
	return k;
}

Test(churn, sends_count_one_unit_each_plus_one_per_16k_and_saturate)
{
	__u8 sent = 0;

	lism_churn_count_send(&sent, 100);
	cr_assert_eq(sent, 1);
	lism_churn_count_send(&sent, LISM_CHURN_UNIT_BYTES - 1);
	cr_assert_eq(sent, 2);
	lism_churn_count_send(&sent, 3 * LISM_CHURN_UNIT_BYTES);
	cr_assert_eq(sent, 6);
	lism_churn_count_send(&sent, 64u << 20); /* 4097 units: must not wrap a __u8 */
	cr_assert_eq(sent, LISM_CHURN_UNITS + 1);
	for (int i = 0; i < 1000; i++)
		lism_churn_count_send(&sent, 1);
	cr_assert_eq(sent, LISM_CHURN_UNITS + 1, "saturated, not wrapped");
}

Test(churn, a_request_and_response_is_short_a_chat_or_a_transfer_is_not)
{
	/* HTTP with Connection: close: one request out, header and body back */
	cr_assert(lism_churn_is_short(lism_churn_units(1, 2, 800), MS));
	/* exactly the limit is still short */
	cr_assert(lism_churn_is_short(lism_churn_units(4, 4, 0), MS));
	/* nine small messages are not */
	cr_assert_not(lism_churn_is_short(lism_churn_units(4, 5, 900), MS));
	/* one big download in few messages is not (bytes count too) */
	cr_assert_not(lism_churn_is_short(lism_churn_units(1, 2, 1u << 20), MS));
	/* a saturated sender is never short */
	cr_assert_not(lism_churn_is_short(lism_churn_units(LISM_CHURN_UNITS + 1, 0, 0), MS));
}

Test(churn, an_idle_connection_closed_after_a_while_is_not_short)
{
	/* a pooled connection that moved nothing, evicted after its idle timeout */
	cr_assert_not(lism_churn_is_short(lism_churn_units(0, 0, 0), LISM_CHURN_LIFE_NS + 1));
	cr_assert(lism_churn_is_short(lism_churn_units(0, 0, 0), LISM_CHURN_LIFE_NS));
}

Test(churn, the_last_close_time_never_goes_back)
{
	struct lism_churn c = { 0 };
	__u64 now = 1000 * MS;

	short_closes(&c, LISM_CHURN_STREAK, MS, &now);
	lism_churn_closed(&c, 1, now - 5 * MS, W); /* read its clock before the last store */
	cr_assert_eq(c.last_ns, now);
	cr_assert_eq(lism_churn_skip(&c, now - 5 * MS, W), 0, "the first is a probe");
	cr_assert_eq(c.last_ns, now);
}

Test(churn, skipping_starts_after_a_streak_of_short_closes)
{
	struct lism_churn c = { 0 };
	__u64 now = 1000 * MS;

	short_closes(&c, LISM_CHURN_STREAK - 1, MS, &now);
	cr_assert_eq(skips(&c, 100, now), 0, "fewer than the streak: every connection engages");
	short_closes(&c, 1, MS, &now);
	cr_assert_eq(c.streak, LISM_CHURN_STREAK);
	/* of each LISM_CHURN_PROBE_EVERY connections exactly one engages (a probe) */
	cr_assert_eq(skips(&c, 10 * LISM_CHURN_PROBE_EVERY, now), 10 * (LISM_CHURN_PROBE_EVERY - 1));
}

Test(churn, the_first_connection_after_the_streak_is_a_probe)
{
	struct lism_churn c = { 0 };
	__u64 now = 1000 * MS;

	short_closes(&c, LISM_CHURN_STREAK, MS, &now);
	cr_assert_eq(lism_churn_skip(&c, now, W), 0);
	cr_assert_eq(lism_churn_skip(&c, now, W), 1);
}

Test(churn, one_long_connection_ends_the_skipping)
{
	struct lism_churn c = { 0 };
	__u64 now = 1000 * MS;

	short_closes(&c, LISM_CHURN_STREAK + 10, MS, &now);
	lism_churn_closed(&c, 0, now + MS, W);
	cr_assert_eq(c.streak, 0);
	cr_assert_eq(skips(&c, 100, now + MS), 0);
	/* and it takes a whole new streak to start again, with a probe first */
	short_closes(&c, LISM_CHURN_STREAK - 1, MS, &now);
	cr_assert_eq(skips(&c, 100, now), 0);
	short_closes(&c, 1, MS, &now);
	cr_assert_eq(lism_churn_skip(&c, now, W), 0);
	cr_assert_eq(lism_churn_skip(&c, now, W), 1);
}

Test(churn, short_closes_far_apart_never_build_a_streak)
{
	struct lism_churn c = { 0 };
	__u64 now = 1000 * MS;

	short_closes(&c, 100, W + 1, &now);
	cr_assert_eq(c.streak, 1, "each one starts over");
	cr_assert_eq(skips(&c, 100, now), 0);
}

Test(churn, skipping_follows_the_churn_and_ends_after_a_pause)
{
	struct lism_churn c = { 0 };
	__u64 now = 1000 * MS;

	short_closes(&c, LISM_CHURN_STREAK, MS, &now);
	/* connections arriving, each within the window of the one before, keep it going */
	for (int i = 1; i <= 10; i++)
		cr_assert_gt(skips(&c, 10, now + i * W), 0, "arrival %d", i);
	now += 10 * W;
	/* a pause longer than the window: the next connection engages */
	cr_assert_eq(skips(&c, 100, now + W + 1), 0);
	/* and the streak starts from scratch */
	lism_churn_closed(&c, 1, now + W + 2, W);
	cr_assert_eq(c.streak, 1);
	cr_assert_eq(skips(&c, 100, now + W + 2), 0);
}

Test(churn, a_later_close_seen_first_on_another_cpu_is_not_expiry)
{
	struct lism_churn c = { 0 };
	__u64 now = 1000 * MS;

	short_closes(&c, LISM_CHURN_STREAK, MS, &now);
	/* this CPU read its clock before the other one stored a later close */
	cr_assert_gt(skips(&c, 100, now - MS), 0);
	lism_churn_closed(&c, 1, now - MS, W);
	cr_assert_eq(c.streak, LISM_CHURN_STREAK, "not reset");
}
