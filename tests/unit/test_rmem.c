// SPDX-License-Identifier: GPL-2.0-only
#include <criterion/criterion.h>

#include "lism/rmem.h"

#define PAGE 4096u

static struct lism_rmem roomy(void)
{
	return (struct lism_rmem){ .memcg_room = LISM_RMEM_NO_LIMIT, .page_shift = 12 };
}

Test(rmem, a_charge_counts_whole_pages_beyond_what_the_socket_holds)
{
	cr_assert_eq(lism_rmem_pages(100, 4096, 12), 0, "charged already");
	cr_assert_eq(lism_rmem_pages(4096, 4096, 12), 0);
	cr_assert_eq(lism_rmem_pages(4097, 4096, 12), 1, "one byte more is a page");
	cr_assert_eq(lism_rmem_pages(65536, 0, 12), 16);
	cr_assert_eq(lism_rmem_pages(65536, 1, 12), 16);
	cr_assert_eq(lism_rmem_pages(1, -4096, 12), 2, "a socket in debt pays it first");
}

Test(rmem, pages_are_the_kernels_own_size)
{
	struct lism_rmem r = roomy();

	cr_assert_eq(lism_rmem_page_shift(4096), 12);
	cr_assert_eq(lism_rmem_page_shift(16384), 14);
	cr_assert_eq(lism_rmem_page_shift(65536), 16);
	cr_assert_eq(lism_rmem_page_shift((unsigned long)-1), 12, "sysconf failed");
	cr_assert_eq(lism_rmem_page_shift(0), 12);
	cr_assert_eq(lism_rmem_page_shift(12288), 12, "not a power of two");
	cr_assert_eq(lism_rmem_pages(65536, 0, 16), 1, "a 64 KiB page");
	cr_assert_eq(lism_rmem_pages(65537, 0, 16), 2);
	r.page_shift = 16;
	r.memcg_room = 1;
	cr_assert(!lism_rmem_tight(&r, 65536), "one 64 KiB page fits a room of one");
	r.page_shift = 12;
	cr_assert(lism_rmem_tight(&r, 65536), "sixteen 4 KiB pages do not");
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
