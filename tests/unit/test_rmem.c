// SPDX-License-Identifier: GPL-2.0-only
#include <criterion/criterion.h>

#include "lism/rmem.h"

#define PAGE (1u << LISM_RMEM_PAGE_SHIFT)

static struct lism_rmem roomy(void)
{
	return (struct lism_rmem){ .memcg_room = LISM_RMEM_NO_LIMIT };
}

Test(rmem, a_charge_counts_whole_pages_beyond_what_the_socket_holds)
{
	cr_assert_eq(lism_rmem_pages(100, 4096), 0, "charged already");
	cr_assert_eq(lism_rmem_pages(4096, 4096), 0);
	cr_assert_eq(lism_rmem_pages(4097, 4096), 1, "one byte more is a page");
	cr_assert_eq(lism_rmem_pages(65536, 0), 16);
	cr_assert_eq(lism_rmem_pages(65536, 1), 16);
	cr_assert_eq(lism_rmem_pages(1, -4096), 2, "a socket in debt pays it first");
}

Test(rmem, without_pressure_or_limit_nothing_is_tight)
{
	struct lism_rmem r = roomy();

	cr_assert(!lism_rmem_tight(&r, 64u << 20));
}

Test(rmem, tcp_memory_pressure_refuses_a_socket_holding_its_minimum_or_more)
{
	struct lism_rmem r = roomy();

	r.global_pressure = 1;
	cr_assert(lism_rmem_tight(&r, PAGE + 1), "not read yet: the tight side");
	r.rmem_min = 4096;
	r.rmem_alloc = 4095;
	cr_assert(!lism_rmem_tight(&r, 64u << 10), "below tcp_rmem[0] the kernel lets it charge");
	r.rmem_alloc = 4096;
	cr_assert(lism_rmem_tight(&r, PAGE + 1));
	r.forward_alloc = 2 * PAGE;
	cr_assert(!lism_rmem_tight(&r, PAGE + 1), "what the socket holds cannot be refused");
	r = roomy();
	r.rmem_alloc = 1 << 20;
	cr_assert(!lism_rmem_tight(&r, 1 << 20), "without pressure a full socket still charges");
}

Test(rmem, a_kmem_tcp_limit_is_tight_once_the_pages_exceed_its_room)
{
	struct lism_rmem r = roomy();

	r.memcg_room = lism_rmem_room(100, 128);
	cr_assert_eq(r.memcg_room, 28);
	cr_assert(!lism_rmem_tight(&r, 28 * PAGE), "exactly the room");
	cr_assert(lism_rmem_tight(&r, 28 * PAGE + 1));
	cr_assert_eq(lism_rmem_room(130, 128), 0, "charged past the limit (a forced charge)");
	r.memcg_room = 0;
	cr_assert(lism_rmem_tight(&r, 1));
	r.forward_alloc = 1;
	cr_assert(!lism_rmem_tight(&r, 1));
}

Test(rmem, only_a_queue_or_a_large_send_is_checked)
{
	cr_assert(!lism_rmem_worth_checking(0, 100), "a request into an empty queue");
	cr_assert(!lism_rmem_worth_checking(0, LISM_RMEM_CHECK_SIZE - 1));
	cr_assert(lism_rmem_worth_checking(0, LISM_RMEM_CHECK_SIZE), "a bulk send");
	cr_assert(lism_rmem_worth_checking(1, 1), "bytes of ours wait already");
}
