/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Which members' sends run the data path.
 *
 * A socket in a sockmap whose map has an sk_msg program sends through
 * tcp_bpf: every send is copied into an sk_msg, the verdict runs, and a
 * send kept on TCP is then spliced into TCP page by page.  On a one-way
 * stream of small sends, which the shortcut cannot win (docs/performance.md),
 * that alone cost 14-23 % against plain TCP, while a socket in a sockmap
 * without an sk_msg program (a redirect target: a psock and tcp_bpf's read
 * path) ran at TCP's speed (measured: 0.98-1.0).
 *
 * So lism keeps two maps: every paired end is a member of the shortcut map
 * (the peer may redirect into it), and becomes a sender (the senders map,
 * which carries the sk_msg program) only once data went both ways, several
 * times: when it sends a data segment after LISM_SENDER_MIN_SEGS went each
 * way.  Request/response traffic, where the shortcut wins, joins after its
 * first few exchanges; the bytes before went over TCP, and the direction
 * starts in SYNC as always.  A join costs ~10 us (a timer run, a sockmap
 * link, measured: connect, one exchange, close went from 73 to 89 us when
 * the server joined after its reply), which a connection of one or two
 * exchanges never earns back, so those never join.
 *
 * One-way transfers differ by their sends: a stream of small sends is
 * faster on TCP, bulk sends (iperf3's 128 KiB: 2.5-3.8x TCP) are faster
 * through the shortcut.  Segments do not tell them apart (a 1 KiB stream
 * whose reader lags makes runs of 55 full 64 KiB segments on loopback, and
 * over a veth every segment is an MSS), so a member's first
 * LISM_SENDER_SIZE_SENDS sends are measured one by one (the sockops
 * callback at each sendmsg, BPF_SOCK_OPS_TSTAMP_SENDMSG_CB, kernel 6.15 and
 * later: the growth of write_seq is the send's size): if their sends of
 * LISM_STREAM_BIG (64 KiB) or more carry LISM_SENDER_BULK_BYTES per send on
 * average, the member joins.  Only those count because only those gain: a
 * one-way stream of 32 KiB..64000-byte sends ran at 0.52-0.77 of TCP
 * through the shortcut (non-blocking, docs/performance.md), since TCP on
 * loopback sends each such write in one segment, while from 64 KiB on it
 * splits every write into a full segment and a small tail and the
 * shortcut runs at 2-2.5x.  A sendfile() arrives as sends of 64 KiB, after
 * the headers' small one, but not all of them: while the send buffer is
 * small (69 KB at first over a veth) it cuts a chunk short, and the next
 * call sends the rest of it (47784 + 17752, 64784 + 752), two sends below
 * 64 KiB.  Over 8 sends a download with two such cuts had too few bulk
 * sends and stayed on TCP (traced: 5 of 8 were 64 KiB in 6 of 10 veth
 * downloads, so one cut more would have kept them off); the buffer grows
 * within the first few round trips, and over 16 sends the same downloads
 * had 13-15 of 16.  The callback can only be switched off from a
 * callback that holds the socket lock (op <= WRITE_HDR_OPT_CB, not the
 * sendmsg one), so the member's next packet does it.
 *
 * A member that sent or received LISM_SENDER_WATCH_SEGS data segments
 * without joining (a one-way stream of small sends, one long answer to a
 * request) stays plain TCP for its life,
 * like a stream: the watch costs one sockops callback per packet, which is
 * not paid forever.
 *
 * A sender can also leave again.  After a DMB overflow its direction is in
 * SYNC: sends go to TCP until the reader has read every TCP byte.  A
 * writer on its reader's CPU is woken by the reader's window updates
 * before the reader has drained TCP's queue, so it gets there only now and
 * then, and TCP through the data path (each send copied into an sk_msg,
 * then pushed page by page) is slower than plain TCP: msgrate -s 65536 on
 * one CPU ran at 0.66-0.75 of TCP in 5 runs of 8 (docs/performance.md).
 * So a sender that moved less than half of a window of
 * LISM_SENDER_WINDOW_BYTES through the shortcut, while its last
 * LISM_SENDER_TCP_RUN_BYTES all went to TCP, leaves both maps if nobody
 * redirects to it (its peer is no sender: a one-way writer).  Its socket
 * is plain TCP again, the pair falls back (sync-stuck), and its reader
 * reads what its DMB still holds before the TCP bytes, as always.  A
 * window and not a run of TCP sends: on one CPU the first SYNC after the
 * join took 64 to 512 MiB to end, after which 128 KiB writers ran at
 * 1.5-3.8x TCP.  A stalled reader does not get there: TCP's own buffer
 * stops the writer.  A sender whose peer is gone (its entry released: the
 * peer closed, or left the maps as a blocking reader) leaves the same way
 * at its next send, without a new fallback.
 *
 * What keeps a bulk writer on its reader's CPU in SYNC is the size of its
 * TCP backlog: TCP's autotuned send buffer (MBs) lets it refill the
 * reader's queue each time the reader's window updates wake it, before the
 * reader has drained.  With a send buffer of 416 KiB the reader drains it
 * within its time slice: an nginx sendfile download on one CPU put 143-178
 * of 256 MiB through the shortcut instead of 8-24, and ran at TCP's speed
 * instead of 0.70; plain TCP ran alike with either buffer, and across CPUs
 * nothing changed (docs/performance.md, "DMB size").  The redirect itself
 * is never charged to the send buffer.  So a member that joins by its bulk
 * sends gets SO_SNDBUF LISM_SENDER_BULK_SNDBUF at its next packet (sockops
 * may set it there, the socket locked), unless its application set
 * SO_SNDBUF itself or the buffer is that small already.  The application
 * sees it: getsockopt(SO_SNDBUF) returns the new size, and TCP no longer
 * autotunes that socket's send buffer.
 *
 * A send buffer its application sized below LISM_SENDER_MIN_SNDBUF_SEGS
 * segments of 64 KiB keeps its member off the data path.  Through the data
 * path a send kept on TCP is pushed by tcp_bpf_sendmsg, which, unlike
 * tcp_sendmsg, waits for send-buffer space without first pushing what TCP
 * holds back for MSG_MORE (every chunk of a sendfile() but its last,
 * TCP_CORK).  With room for two segments the buffer fills with one
 * segment in flight and one held back; one segment does not make the
 * reader ACK at once, so the writer waits for the delayed ACK (40 ms on
 * loopback): nginx with `sndbuf=64k` (sk_sndbuf 128 KiB, two 64 KiB
 * segments) served a download on one CPU at 0.15-0.2 of TCP, its CPU 90 %
 * idle, `ss` showing one segment unacked and 64 KB "notsent"; with
 * `sndbuf=128k` it ran at 0.95 (docs/performance.md, "Small send
 * limits").  The same wait, without even a delayed ACK to end it, comes
 * from an unsent-bytes limit (TCP_NOTSENT_LOWAT, or the
 * net.ipv4.tcp_notsent_lowat sysctl) below what TCP may hold back: a
 * sendfile() writer with a 16 KiB limit ran at 16-19 MB/s against TCP's
 * 1100-1400, waiting 200 ms at a time.  So a member joins only with an
 * effective limit of LISM_SENDER_MIN_SNDBUF_SEGS segments or more (the
 * default is none).  64 KiB because TCP builds segments that large (GSO)
 * on loopback and on a veth alike, whatever the MSS; on a path without GSO
 * this keeps a few buffers on TCP that could have used the shortcut, which
 * costs nothing against TCP.  An autotuned buffer starts at twice the
 * initial window, twenty segments, and grows when it fills, up to the
 * namespace's net.ipv4.tcp_wmem maximum: a maximum below the same
 * LISM_SENDER_MIN_SEND_LIMIT keeps the member off as well.  The limits are
 * read when the member would join: limits shrunk later, on a sender, are
 * not seen.
 *
 * A cork (TCP_CORK, nginx's tcp_nopush) holds bytes back until the
 * application uncorks: a join then would wait in SYNC behind them to the
 * end of the response (a 256 MiB download across CPUs: all of it on TCP,
 * 0.82 of plain TCP), so a corked member's join waits for a send or packet
 * while uncorked.
 *
 * sockops may update a sockmap only in the ESTABLISHED callbacks, so the
 * join itself is done by a BPF timer whose callback belongs to a tc program
 * (bpf/sender.bpf.h): tc programs may update sockmaps.
 */
#ifndef LISM_SENDER_H
#define LISM_SENDER_H

#include "types.h"
#include "stream.h"

#define LISM_SENDER_MIN_SEGS 4
#define LISM_SENDER_SIZE_SENDS 16
#define LISM_SENDER_BULK_BYTES (32u << 10)
#define LISM_SENDER_WATCH_SEGS 1024
#define LISM_SENDER_JOINS_PER_TICK 128
#define LISM_SENDER_LEAVES_PER_TICK 16
#define LISM_SENDER_WINDOW_BYTES (1u << 30)
#define LISM_SENDER_TCP_RUN_BYTES (64u << 20)
#define LISM_SENDER_BULK_SNDBUF (208u << 10) /* SO_SNDBUF: sk_sndbuf 416 KiB (at most 2 x net.core.wmem_max) */
#define LISM_SENDER_MIN_SNDBUF_SEGS 4 /* segments of 64 KiB */
#define LISM_SENDER_MIN_SEND_LIMIT (LISM_SENDER_MIN_SNDBUF_SEGS * (64u << 10)) /* sk_sndbuf, TCP_NOTSENT_LOWAT */

enum lism_sender_verdict {
	LISM_SENDER_WAIT = 0, /* keep watching */
	LISM_SENDER_JOIN = 1, /* data went both ways, or bulk sends: join the senders */
	LISM_SENDER_STOP = 2, /* one-way so far, for long enough: stay on TCP */
};

/*
 * Decide at an outgoing packet of @skb_len payload bytes (0: a pure ACK),
 * given the socket's data segment counts so far (tcp_sock data_segs_in/out).
 */
static inline int lism_sender_decide(__u32 skb_len, __u32 data_segs_in, __u32 data_segs_out)
{
	if (skb_len && data_segs_in >= LISM_SENDER_MIN_SEGS && data_segs_out >= LISM_SENDER_MIN_SEGS)
		return LISM_SENDER_JOIN;
	/*
	 * Long, and never a data send after data went both ways: a writer
	 * nobody answers, one long answer to a request, a reader that stopped
	 * asking.  The watch ends; its sends stay plain TCP.
	 */
	if (data_segs_out > LISM_SENDER_WATCH_SEGS || data_segs_in > LISM_SENDER_WATCH_SEGS)
		return LISM_SENDER_STOP;
	return LISM_SENDER_WAIT;
}

/* What a measured send of @size bytes adds to the bulk bytes: only a send the shortcut wins. */
static inline __u32 lism_sender_bulk_part(__u32 size)
{
	return size >= LISM_STREAM_BIG ? size : 0;
}

/*
 * A member's first @sends, measured, whose sends of LISM_STREAM_BIG or
 * more carried @bulk bytes: LISM_SENDER_WAIT until it made
 * LISM_SENDER_SIZE_SENDS of them, then JOIN if they were bulk sends, else
 * STOP (the size watch ends; the segment watch above goes on).
 */
static inline int lism_sender_sizes(__u32 sends, __u64 bulk)
{
	if (sends < LISM_SENDER_SIZE_SENDS)
		return LISM_SENDER_WAIT;
	return bulk >= (__u64)sends * LISM_SENDER_BULK_BYTES ? LISM_SENDER_JOIN : LISM_SENDER_STOP;
}

enum lism_sender_window {
	LISM_SENDER_WINDOW_OPEN = 0,  /* fewer than LISM_SENDER_WINDOW_BYTES sent since it began */
	LISM_SENDER_WINDOW_NEXT = 1,  /* full, and the sender stays: begin the next */
	LISM_SENDER_WINDOW_LEAVE = 2, /* full, mostly TCP, and TCP has it now: leave */
};

/*
 * A sender's sends are judged by windows of LISM_SENDER_WINDOW_BYTES:
 * @tcp_bytes went to TCP and @sc_bytes through the shortcut since the
 * window began, and its last @tcp_run bytes all went to TCP.
 */
static inline int lism_sender_window(__u32 tcp_bytes, __u32 sc_bytes, __u32 tcp_run)
{
	__u64 total = (__u64)tcp_bytes + sc_bytes;

	if (total < LISM_SENDER_WINDOW_BYTES)
		return LISM_SENDER_WINDOW_OPEN;
	if ((__u64)sc_bytes * 2 < total && tcp_run >= LISM_SENDER_TCP_RUN_BYTES)
		return LISM_SENDER_WINDOW_LEAVE;
	return LISM_SENDER_WINDOW_NEXT;
}

/*
 * Whether a member's send limits suit the data path: @sndbuf bytes of send
 * buffer (sk_sndbuf) now, @locked if its application set SO_SNDBUF, else
 * TCP may grow it up to @wmem_max (net.ipv4.tcp_wmem[2]); and
 * @notsent_lowat, its effective TCP_NOTSENT_LOWAT (UINT_MAX: none).
 */
static inline int lism_sender_limits_fit(int locked, __u32 sndbuf, __u32 wmem_max, __u32 notsent_lowat)
{
	__u32 most = (locked || sndbuf > wmem_max) ? sndbuf : wmem_max;

	return most >= LISM_SENDER_MIN_SEND_LIMIT && notsent_lowat >= LISM_SENDER_MIN_SEND_LIMIT;
}

/*
 * The bytes a socket has written, up to a 64-bit base, from TCP's own
 * counters: bytes_acked (64 bits) plus what is sent but unacknowledged
 * (write_seq - snd_una, which never exceeds the send buffer).  Taking it
 * once when its sends stop being seen and once when they are seen again
 * gives the bytes that went to TCP unseen, however many GiB.
 */
static inline __u64 lism_sender_written(__u64 bytes_acked, __u32 snd_una, __u32 write_seq)
{
	return bytes_acked + (__u32)(write_seq - snd_una);
}

#endif
