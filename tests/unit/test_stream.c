// SPDX-License-Identifier: GPL-2.0-only
#include <criterion/criterion.h>

#include "lism/stream.h"

/* Feed @n sends of @size bytes that all find @unread bytes waiting; count the holds started. */
static int feed(struct lism_stream *s, int n, __u32 unread, __u32 size, __u64 *now)
{
	int holds = 0;

	for (int i = 0; i < n; i++)
		if (lism_stream_note(s, unread, size)) {
			lism_stream_start_hold(s, *now);
			holds++;
		}
	return holds;
}

Test(stream, a_streak_of_sends_behind_the_reader_starts_a_hold)
{
	struct lism_stream s = { 0 };

	for (int i = 1; i < LISM_STREAM_STREAK; i++)
		cr_assert_eq(lism_stream_note(&s, 100, 100), 0, "send %d", i);
	cr_assert_eq(lism_stream_note(&s, 100, 100), 1);
	cr_assert_eq(s.streak, 0, "the streak starts over after a detection");
}

Test(stream, a_reader_that_keeps_up_is_never_a_stream)
{
	struct lism_stream s = { 0 };
	__u64 now = 1;

	/* ping-pong: every send finds nothing of ours unread */
	cr_assert_eq(feed(&s, 10000, 0, 100, &now), 0);
	/* alternating behind / caught up never builds a streak */
	for (int i = 0; i < 1000; i++) {
		cr_assert_eq(lism_stream_note(&s, 100, 100), 0);
		cr_assert_eq(lism_stream_note(&s, 0, 100), 0);
	}
}

Test(stream, big_sends_do_not_count)
{
	struct lism_stream s = { 0 };
	__u64 now = 1;

	cr_assert_eq(feed(&s, 1000, 1 << 20, LISM_STREAM_BIG, &now), 0);
	cr_assert_eq(feed(&s, 1000, 1 << 20, 1 << 20, &now), 0);
	/* one byte below the limit counts */
	cr_assert_eq(feed(&s, LISM_STREAM_STREAK, 1 << 20, LISM_STREAM_BIG - 1, &now), 1);
}

Test(stream, hold_runs_for_its_time_then_ends)
{
	struct lism_stream s = { 0 };
	__u64 t0 = 5000000000ull;

	cr_assert_eq(lism_stream_held(&s, t0), 0, "no hold before any stream");
	lism_stream_start_hold(&s, t0);
	cr_assert_eq(lism_stream_held(&s, t0), 1);
	cr_assert_eq(lism_stream_held(&s, t0 + LISM_STREAM_HOLD_MIN_NS - 1), 1);
	cr_assert_eq(lism_stream_held(&s, t0 + LISM_STREAM_HOLD_MIN_NS), 0);
	cr_assert_eq(s.hold_until, 0, "an ended hold is forgotten");
	cr_assert_eq(lism_stream_held(&s, t0), 0);
}

Test(stream, each_detection_doubles_the_hold_up_to_the_cap)
{
	struct lism_stream s = { 0 };
	__u64 now = 1000;

	for (int i = 0; i <= LISM_STREAM_HOLD_MAX_SHIFT + 3; i++) {
		int shift = i < LISM_STREAM_HOLD_MAX_SHIFT ? i : LISM_STREAM_HOLD_MAX_SHIFT;

		cr_assert_eq(feed(&s, LISM_STREAM_STREAK, 1, 1, &now), 1);
		cr_assert_eq(s.hold_until - now, LISM_STREAM_HOLD_MIN_NS << shift, "detection %d", i);
		now = s.hold_until;
		cr_assert_eq(lism_stream_held(&s, now), 0);
	}
}

Test(stream, a_calm_run_resets_the_hold_time)
{
	struct lism_stream s = { 0 };
	__u64 now = 1000;

	feed(&s, 3 * LISM_STREAM_STREAK, 1, 1, &now);
	cr_assert_eq(s.hold_shift, 3);
	/* fewer calm sends than needed keep the longer hold */
	feed(&s, LISM_STREAM_CALM - 1, 0, 1, &now);
	cr_assert_eq(s.hold_shift, 3);
	feed(&s, 1, 1, 1, &now); /* behind again: the calm run is broken */
	feed(&s, LISM_STREAM_CALM - 1, 0, 1, &now);
	cr_assert_eq(s.hold_shift, 3);
	feed(&s, 1, 0, 1, &now);
	cr_assert_eq(s.hold_shift, 0, "a full calm run starts over at the shortest hold");
	lism_stream_start_hold(&s, now);
	cr_assert_eq(s.hold_until - now, LISM_STREAM_HOLD_MIN_NS);
}

Test(stream, a_caught_up_send_breaks_the_streak)
{
	struct lism_stream s = { 0 };
	__u64 now = 1;

	for (int i = 0; i < 100; i++) {
		cr_assert_eq(feed(&s, LISM_STREAM_STREAK - 1, 10, 10, &now), 0);
		cr_assert_eq(lism_stream_note(&s, 0, 10), 0);
	}
}

Test(stream, a_verdict_passes_ahead_whole_sends_within_64k)
{
	struct lism_stream s = { 0 };

	/* the budget includes the granting send: the program runs once per 16 sends */
	cr_assert_eq(lism_stream_pass_ahead(&s, 0, 100), 100 * LISM_STREAM_PASS_SENDS);
	cr_assert(s.passing);
	cr_assert_eq(lism_stream_pass_ahead(&s, 0, 1), LISM_STREAM_PASS_SENDS);
	cr_assert_eq(lism_stream_pass_ahead(&s, 0, 4096), LISM_STREAM_BIG);
	cr_assert_eq(lism_stream_pass_ahead(&s, 0, 16384), LISM_STREAM_BIG, "4 sends of 16 KiB");
	cr_assert_eq(lism_stream_pass_ahead(&s, 0, 5000), 13 * 5000, "whole sends, at most 64 KiB");
	cr_assert_eq(lism_stream_pass_ahead(&s, 0, 64000), 64000, "only the send itself");
	s.passing = 0;
	cr_assert_eq(lism_stream_pass_ahead(&s, 0, LISM_STREAM_BIG), 0, "big sends never stream");
	cr_assert_eq(s.passing, 0);
	cr_assert_eq(lism_stream_pass_ahead(&s, 0, 0xffffffffu), 0);
	cr_assert_eq(lism_stream_pass_ahead(&s, 0, 0), 0);
	cr_assert_eq(s.passing, 0);
}

Test(stream, bytes_passed_unseen_come_from_write_seq)
{
	struct lism_stream s = { 0 };

	cr_assert_eq(lism_stream_passed(&s, 12345), 0, "nothing passed ahead yet");
	lism_stream_pass_ahead(&s, 1000, 100); /* the granting send: 1000..1100, accounted by its caller */
	cr_assert(s.passing);
	cr_assert_eq(lism_stream_passed(&s, 1100 + 1500), 1500);
	cr_assert_eq(s.passing, 0);
	cr_assert_eq(lism_stream_passed(&s, 99999), 0, "counted once");

	/* write_seq wraps around 2^32 */
	lism_stream_pass_ahead(&s, 0xffffff00u, 0x80);
	cr_assert_eq(lism_stream_passed(&s, 0x00000100u), 0x180);

	/* the kernel pushed only part of the granting send: no negative count */
	lism_stream_pass_ahead(&s, 5000, 100);
	cr_assert_eq(lism_stream_passed(&s, 5040), 0);
}
