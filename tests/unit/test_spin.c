// SPDX-License-Identifier: GPL-2.0-only
/*
 * The spin bound's adaptation (exec/spin.c): the whole bound while spins
 * find something, halved by each one that does not, and below the floor no
 * spin for a number of waits that doubles with each miss there.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "exec/spin.h"

Test(spin, a_spin_that_pays_keeps_its_bound_and_one_that_does_not_halves_it)
{
	__u32 max = 40; /* us */

	cr_assert_eq(lism_spin_budget_ns(0), 0, "a bound of 0 never spins");
	cr_assert_eq(lism_spin_budget_ns(max), 40000);
	lism_spin_result(true, max);
	cr_assert_eq(lism_spin_budget_ns(max), 40000, "found: the whole bound again");
	lism_spin_result(false, max);
	cr_assert_eq(lism_spin_budget_ns(max), 20000, "a miss halves it");
	lism_spin_result(false, max);
	cr_assert_eq(lism_spin_budget_ns(max), 10000);
	lism_spin_result(true, max);
	cr_assert_eq(lism_spin_budget_ns(max), 40000, "a find restores it");
}

Test(spin, an_idle_thread_stops_spinning_for_longer_and_longer)
{
	__u32 max = 8; /* us: 8, 4, 2, then below the floor */
	int spins = 0, waits = 0;

	for (int miss = 0; miss < 3; miss++)
		lism_spin_result(false, max);
	/* below the floor: 1 wait without a spin, then the bound; then 2 ... */
	for (waits = 0; waits < 20000; waits++) {
		__u64 b = lism_spin_budget_ns(max);

		if (b) {
			spins++;
			lism_spin_result(false, max);
		}
	}
	cr_assert_lt(spins, 20000 / 50, "an idle thread spun on %d of %d waits", spins, waits);
	cr_assert_gt(spins, 10, "it still tries the bound now and then (%d)", spins);
	lism_spin_result(true, max);
	cr_assert_eq(lism_spin_budget_ns(max), 8000, "once a spin pays, the whole bound");
}

Test(spin, the_bound_comes_from_the_environment_once)
{
	setenv("LISM_BUSY_POLL_US", "7", 1);
	cr_assert_eq(lism_spin_default_us(), 7);
	setenv("LISM_BUSY_POLL_US", "9", 1);
	cr_assert_eq(lism_spin_default_us(), 7, "read once");
}
