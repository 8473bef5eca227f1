// SPDX-License-Identifier: GPL-2.0-only
#include <criterion/criterion.h>
#include <stdlib.h>

#include "lism/token.h"

Test(token, carries_its_slot)
{
	for (__u32 slot = 0; slot < 100000; slot += 7)
		cr_assert_eq(lism_token_slot(lism_token_make(slot, (__u32)rand(), 0x1234)), slot);
}

Test(token, is_never_zero_and_always_valid)
{
	cr_assert_neq(lism_token_make(0, 0, 0), 0);
	for (__u32 i = 0; i < 1000; i++) {
		__u64 t = lism_token_make(i, (__u32)rand(), (__u32)rand());

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

Test(token, every_use_of_a_slot_gets_its_own_token)
{
	/* The generation is what tells a reused slot from a stale token: never equal. */
	const __u32 salt = 0x9e3779b9;
	__u64 prev = lism_token_make(5, 0, salt);

	for (__u32 gen = 1; gen < 1000000; gen++) {
		__u64 t = lism_token_make(5, gen, salt);

		cr_assert_neq(t, prev, "generation %u repeats a token", gen);
		cr_assert_eq(lism_token_slot(t), 5);
		prev = t;
	}
	/* unique for 2^31 generations: only gen and gen + 2^31 share a token */
	cr_assert_neq(lism_token_make(5, 1, salt), lism_token_make(5, 0x7fffffff, salt));
	cr_assert_eq(lism_token_make(5, 1, salt), lism_token_make(5, 0x80000001u, salt));
}
