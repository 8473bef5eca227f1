// SPDX-License-Identifier: GPL-2.0-only
#include <criterion/criterion.h>

#include "lism/sender.h"

Test(sender, written_bytes_span_any_size_and_sequence_wrap)
{
	/* at the start: everything acked */
	__u64 base = lism_sender_written(1, 1000, 1000);

	cr_assert_eq(lism_sender_written(1, 1000, 1500) - base, 500, "unacked bytes count");
	cr_assert_eq(lism_sender_written(1 + 500, 1500, 1500) - base, 500, "once acked, the same");
	/* 6 GiB later, sequence numbers wrapped, 100 bytes in flight across the wrap */
	cr_assert_eq(lism_sender_written(1 + (6ull << 30), 0xffffffb0u, 0x14u) - base,
		     (6ull << 30) + 100, "64-bit, whatever write_seq did");
}

/* Small send limits keep a member off the data path (include/lism/sender.h). */
Test(sender, a_socket_with_small_send_limits_stays_on_tcp)
{
	const __u32 none = ~0u, wmem = 4 << 20; /* net.ipv4.tcp_wmem[2]'s default */

	/* sk_sndbuf is twice what the application asked for */
	cr_assert(!lism_sender_limits_fit(1, 2 * (64 << 10), wmem, none), "nginx sndbuf=64k: two segments");
	cr_assert(!lism_sender_limits_fit(1, 2 * (128 << 10) - 1, wmem, none));
	cr_assert(lism_sender_limits_fit(1, 2 * (128 << 10), wmem, none), "sndbuf=128k ran at TCP's speed");
	cr_assert(lism_sender_limits_fit(0, 16 << 10, wmem, none), "TCP's own buffer grows as it needs");
	cr_assert(!lism_sender_limits_fit(0, 4 << 20, wmem, 16 << 10), "TCP_NOTSENT_LOWAT 16 KiB");
	cr_assert(!lism_sender_limits_fit(0, 4 << 20, wmem, (256 << 10) - 1));
	cr_assert(lism_sender_limits_fit(0, 4 << 20, wmem, 256 << 10));
	/* TCP's own buffer grows only up to the namespace's tcp_wmem maximum */
	cr_assert(!lism_sender_limits_fit(0, 16 << 10, 128 << 10, none), "tcp_wmem max 128 KiB");
	cr_assert(!lism_sender_limits_fit(0, 16 << 10, 0, none), "a failed read: the safe side");
	cr_assert(lism_sender_limits_fit(0, 16 << 10, 256 << 10, none));
	cr_assert(lism_sender_limits_fit(0, 1 << 20, 128 << 10, none), "grown before the sysctl was lowered");
	cr_assert(lism_sender_limits_fit(1, 1 << 20, 128 << 10, none), "the application's own size decides");
}
