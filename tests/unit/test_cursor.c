// SPDX-License-Identifier: GPL-2.0-only
#include <criterion/criterion.h>

#include "lism/cursor.h"

Test(cursor, advances_within_a_ring)
{
	struct lism_cursor c = { 0, 0 };

	lism_cursor_add(&c, 100, 1024);
	cr_assert_eq(c.wrap, 0);
	cr_assert_eq(c.count, 100);
}

Test(cursor, wraps_exactly_at_the_size)
{
	struct lism_cursor c = { 0, 1000 };

	lism_cursor_add(&c, 24, 1024);
	cr_assert_eq(c.wrap, 1);
	cr_assert_eq(c.count, 0);
}

Test(cursor, wraps_several_times_in_one_step)
{
	struct lism_cursor c = { 3, 1000 };

	lism_cursor_add(&c, 5 * 1024 + 30, 1024);
	cr_assert_eq(c.wrap, 3 + 5 + 1);
	cr_assert_eq(c.count, (1000 + 30) - 1024);
}

Test(cursor, at_matches_repeated_adds)
{
	struct lism_cursor c = { 0, 0 };
	__u64 total = 0;

	for (__u32 step = 1; step < 5000; step += 97) {
		lism_cursor_add(&c, step, 4096);
		total += step;
		struct lism_cursor at = lism_cursor_at(total, 4096);

		cr_assert_eq(at.wrap, c.wrap);
		cr_assert_eq(at.count, c.count);
	}
}

Test(cursor, diff_is_the_bytes_between)
{
	const __u32 size = 1 << 20;

	for (__u64 a = 0; a < 5ull * size; a += 333331) {
		for (__u64 d = 0; d < 2ull * size; d += 77777) {
			struct lism_cursor old = lism_cursor_at(a, size);
			struct lism_cursor new_ = lism_cursor_at(a + d, size);

			cr_assert_eq(lism_cursor_diff(old, new_, size), d, "a=%llu d=%llu",
				     (unsigned long long)a, (unsigned long long)d);
		}
	}
}

Test(cursor, diff_is_zero_when_not_ahead)
{
	struct lism_cursor a = { 2, 10 }, b = { 1, 900 };

	cr_assert_eq(lism_cursor_diff(a, b, 1024), 0);
	cr_assert_eq(lism_cursor_diff(a, a, 1024), 0);
}

Test(cursor, diff_survives_the_wrap_counter_overflowing)
{
	struct lism_cursor old = { 0xffffffffu, 1000 }, new_ = { 0, 24 };

	cr_assert_eq(lism_cursor_diff(old, new_, 1024), 48);
}
