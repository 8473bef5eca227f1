/* SPDX-License-Identifier: GPL-2.0-only */
/* Real TCP for the tests: sockets and byte-exact streams. */
#ifndef LISM_TEST_TRAFFIC_H
#define LISM_TEST_TRAFFIC_H

#include <linux/types.h>
#include <stddef.h>

/* Listening socket on @addr (port 0: any; the port chosen is returned in *port). */
int tcp_listen(int family, const char *addr, int *port, int nonblock);
/* Connect and wait until established; the socket keeps the requested mode. */
int tcp_connect(int family, const char *addr, int port, int nonblock);
/* Accept one connection within @timeout_ms; the socket gets the requested mode. */
int tcp_accept(int lfd, int nonblock, int timeout_ms);
/* The same without asserting (threads and forked children must not): fd or -errno. */
int tcp_connect_try(int family, const char *addr, int port, int nonblock);
int tcp_accept_try(int lfd, int nonblock, int timeout_ms);
void set_nonblock(int fd, int on);
/* Connected, established pair over @addr: *c client, *s server end. */
void tcp_pair(int family, const char *addr, int nonblock, int *c, int *s);

/*
 * The pattern a stream of @seed carries at @pos: what every receiver checks.
 * Built on first use, which is not thread-safe: call once before threads.
 */
__u8 pattern_at(__u32 seed, __u64 pos);
/* Pattern bytes from @pos, at most @want of them; *len says how many. */
const __u8 *pattern_span_public(__u32 seed, __u64 pos, __u64 want, __u64 *len);

struct pump_result {
	__u64 moved[2];      /* bytes a->b, b->a that arrived and matched */
	__u64 msgs[2];       /* send calls that moved data */
	int ok;
	char why[256];       /* first mismatch, error or timeout */
};

/*
 * Send @ab bytes from @a to @b and @ba from @b to @a at the same time, in
 * sends of log-uniform size 1..@max_msg, on non-blocking sockets with poll.
 * Every byte received is compared with the pattern at its position.
 */
void pump(int a, int b, __u64 ab, __u64 ba, __u32 max_msg, __u32 seed, int timeout_ms,
	  struct pump_result *r);

/* The same, continuing streams of which @ab_off / @ba_off bytes were already sent (unread). */
void pump_from(int a, int b, __u64 ab_off, __u64 ab, __u64 ba_off, __u64 ba, __u32 max_msg,
	       __u32 seed, int timeout_ms, struct pump_result *r);

/* Send @n pattern bytes (blocking or not), and receive + check @n bytes. */
int send_all(int fd, __u32 seed, __u64 off, __u64 n);
int recv_check(int fd, __u32 seed, __u64 off, __u64 n, int timeout_ms);

#endif
