// SPDX-License-Identifier: GPL-2.0-only
#include <criterion/criterion.h>
#include <stdlib.h>

#include "lism/token.h"

Test(token, carries_its_slot)
{
	for (__u32 slot = 0; slot < 100000; slot += 7)
		cr_assert_eq(lism_token_slot(lism_token_make(slot, (__u32)rand())), slot);
}

Test(token, is_never_zero_and_always_valid)
{
	cr_assert_neq(lism_token_make(0, 0), 0);
	for (__u32 i = 0; i < 1000; i++) {
		__u64 t = lism_token_make(i, (__u32)rand());

		cr_assert(lism_token_valid(t, 1000));
		cr_assert_not(lism_token_valid(t, i), "slot %u is beyond a table of %u", i, i);
	}
}

Test(token, rejects_what_make_cannot_produce)
{
	cr_assert_not(lism_token_valid(0, 5000));
	cr_assert_not(lism_token_valid(42, 5000), "high bit clear");
	cr_assert_not(lism_token_valid(0x8000000000001388ull, 5000), "slot 5000 of 5000");
}

Test(token, same_slot_differs_across_uses)
{
	/* The random half is what tells a reused slot from a stale token. */
	__u64 a = lism_token_make(5, 0x1234), b = lism_token_make(5, 0x4321);

	cr_assert_neq(a, b);
	cr_assert_eq(lism_token_slot(a), lism_token_slot(b));
}
