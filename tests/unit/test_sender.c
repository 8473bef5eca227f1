// SPDX-License-Identifier: GPL-2.0-only
#include <criterion/criterion.h>

#include "lism/sender.h"

#define W LISM_SENDER_WATCH_SEGS

#define M LISM_SENDER_MIN_SEGS

Test(sender, joins_once_data_went_both_ways_a_few_times)
{
	cr_assert_eq(lism_sender_decide(100, M, M), LISM_SENDER_JOIN, "the client's next request");
	cr_assert_eq(lism_sender_decide(100, M + 1, M), LISM_SENDER_JOIN, "the server's next reply");
	cr_assert_eq(lism_sender_decide(1, W * 4, W * 4), LISM_SENDER_JOIN, "late, but both ways");
}

Test(sender, a_connection_of_one_or_two_exchanges_never_joins)
{
	cr_assert_eq(lism_sender_decide(100, 1, 0), LISM_SENDER_WAIT, "the first reply");
	cr_assert_eq(lism_sender_decide(100, 1, 1), LISM_SENDER_WAIT, "the second request");
	cr_assert_eq(lism_sender_decide(100, M, M - 1), LISM_SENDER_WAIT, "one reply short");
	cr_assert_eq(lism_sender_decide(100, M - 1, W), LISM_SENDER_WAIT, "mostly one way");
}

Test(sender, waits_while_data_went_one_way_only)
{
	cr_assert_eq(lism_sender_decide(100, 0, 0), LISM_SENDER_WAIT, "the first request");
	cr_assert_eq(lism_sender_decide(65536, 0, W), LISM_SENDER_WAIT, "a large segment decides nothing: sends are measured apart");
	cr_assert_eq(lism_sender_decide(0, 5, 0), LISM_SENDER_WAIT, "a pure ACK is not a reply");
	cr_assert_eq(lism_sender_decide(0, 0, 0), LISM_SENDER_WAIT, "no packet (tcp_current_mss)");
}

Test(sender, stops_watching_a_one_way_connection)
{
	cr_assert_eq(lism_sender_decide(100, 0, W + 1), LISM_SENDER_STOP, "a writer nobody answers");
	cr_assert_eq(lism_sender_decide(0, W + 1, 0), LISM_SENDER_STOP, "a reader that never answers");
	cr_assert_eq(lism_sender_decide(0, W + 1, 1), LISM_SENDER_STOP, "one request, one long answer");
	cr_assert_eq(lism_sender_decide(100, 1, W + 1), LISM_SENDER_STOP, "the long answer's writer");
	cr_assert_eq(lism_sender_decide(0, W + 1, M), LISM_SENDER_STOP, "a reader that stopped asking");
	cr_assert_eq(lism_sender_decide(100, W + 1, M), LISM_SENDER_JOIN, "unless it sends again");
	cr_assert_eq(lism_sender_decide(100, 0, W), LISM_SENDER_WAIT, "at the bound, still watched");
}

Test(sender, an_eager_sender_stops_unless_its_one_way_sends_are_bulk)
{
	const __u64 B = LISM_SENDER_BULK_BYTES;

	cr_assert_eq(lism_sender_eager_decide(M, M, M, 0), LISM_SENDER_JOIN, "both ways: it stays");
	cr_assert_eq(lism_sender_eager_decide(0, W, W, 0), LISM_SENDER_WAIT, "at the bound, still watched");
	cr_assert_eq(lism_sender_eager_decide(0, W + 1, W + 1, 0), LISM_SENDER_STOP, "small one-way sends");
	cr_assert_eq(lism_sender_eager_decide(0, W + 1, W + 1, (W + 1) * B), LISM_SENDER_JOIN, "bulk one-way sends stay");
	cr_assert_eq(lism_sender_eager_decide(0, W + 1, W + 1, (W + 1) * B - 1), LISM_SENDER_STOP, "just short of bulk");
	cr_assert_eq(lism_sender_eager_decide(W + 1, 1, 1, 0), LISM_SENDER_STOP, "one request, one long answer");
}

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

Test(sender, bulk_sends_join_small_ones_stop_the_size_watch)
{
	const __u32 n = LISM_SENDER_SIZE_SENDS;

	cr_assert_eq(lism_sender_sizes(n - 1, (__u64)(n - 1) << 20), LISM_SENDER_WAIT, "too few to tell");
	cr_assert_eq(lism_sender_sizes(n, (__u64)n * (128 << 10)), LISM_SENDER_JOIN, "iperf3's 128 KiB");
	cr_assert_eq(lism_sender_sizes(n, 200 + (__u64)(n - 1) * (64 << 10)), LISM_SENDER_JOIN,
		     "headers, then sendfile's 64 KiB");
	cr_assert_eq(lism_sender_sizes(n, (__u64)n * LISM_SENDER_BULK_BYTES - 1), LISM_SENDER_STOP,
		     "just below the average");
	cr_assert_eq(lism_sender_sizes(n, (__u64)n * 100), LISM_SENDER_STOP, "a small-message stream");
}

/*
 * sendfile() over a veth: the headers, then 64 KiB chunks, two of them cut
 * while the send buffer was still small, with cut sizes as traced -- one
 * cut more than the worst traced download had in its first 8 sends
 * (include/lism/sender.h).
 */
Test(sender, a_sendfile_download_whose_buffer_cuts_chunks_still_joins)
{
	static const __u32 sizes[] = { 248,   65536, 47784, 17752, 65536, 29112, 36424, 65536,
				       65536, 65536, 65536, 65536, 65536, 65536, 65536, 65536 };
	__u64 bulk = 0;
	__u32 n = 0;
	int d = LISM_SENDER_WAIT;

	for (; n < sizeof(sizes) / sizeof(sizes[0]) && d == LISM_SENDER_WAIT; n++) {
		bulk += lism_sender_bulk_part(sizes[n]);
		d = lism_sender_sizes(n + 1, bulk);
	}
	cr_assert_eq(d, LISM_SENDER_JOIN, "after %u sends: %s", n, d == LISM_SENDER_STOP ? "stopped" : "waits");
	/* the first 8 alone: 3 of them 64 KiB */
	bulk = 0;
	for (n = 0; n < 8; n++)
		bulk += lism_sender_bulk_part(sizes[n]);
	cr_assert_lt(bulk, 8ull * LISM_SENDER_BULK_BYTES, "8 sends would not have told");
}

/* Only sends the shortcut wins count as bulk: 64 KiB and more (include/lism/sender.h). */
Test(sender, only_sends_of_64_kib_or_more_are_bulk)
{
	const __u32 n = LISM_SENDER_SIZE_SENDS;
	__u64 bulk = 0;

	cr_assert_eq(lism_sender_bulk_part(64000), 0, "TCP's best write size on loopback");
	cr_assert_eq(lism_sender_bulk_part(LISM_SENDER_BIG - 1), 0);
	cr_assert_eq(lism_sender_bulk_part(LISM_SENDER_BIG), LISM_SENDER_BIG);
	cr_assert_eq(lism_sender_bulk_part(1u << 20), 1u << 20);
	for (__u32 i = 0; i < n; i++)
		bulk += lism_sender_bulk_part(64000);
	cr_assert_eq(lism_sender_sizes(n, bulk), LISM_SENDER_STOP, "a stream of 64000-byte sends");
	bulk = lism_sender_bulk_part(300); /* nginx: the headers, then sendfile() */
	for (__u32 i = 1; i < n; i++)
		bulk += lism_sender_bulk_part(64 << 10);
	cr_assert_eq(lism_sender_sizes(n, bulk), LISM_SENDER_JOIN, "headers, then sendfile's 64 KiB");
	bulk = 0; /* half small, half 64 KiB: just enough */
	for (__u32 i = 0; i < n; i++)
		bulk += lism_sender_bulk_part(i % 2 ? 64 << 10 : 1000);
	cr_assert_eq(lism_sender_sizes(n, bulk), LISM_SENDER_JOIN, "half of them bulk");
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
	cr_assert(lism_sender_limits_fit(1, 2 * LISM_SENDER_BULK_SNDBUF, wmem, none), "lism's own clamp fits");
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
