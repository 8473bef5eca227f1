/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * CDC-style cursors (net/smc/smc_cdc.h): a position in a DMB of @size bytes
 * as {wrap, count}.  The producer cursor of a DMB moves when the peer's
 * sender puts bytes into it, the consumer cursor when the owner's reader
 * takes them out; the distance between the two is what sits unread.  The
 * sk_msg data path moves neither at its sends: a DMB entry counts the bytes
 * received, and the views derive both cursors from that count and the
 * socket's unread bytes (lism_cursor_at).
 */
#ifndef LISM_CURSOR_H
#define LISM_CURSOR_H

#include "types.h"

struct lism_cursor {
	__u32 wrap;
	__u32 count; /* 0 <= count < DMB size */
};

/* Advance by @n bytes in a ring of @size bytes (size > 0). */
static inline void lism_cursor_add(struct lism_cursor *c, __u64 n, __u32 size)
{
	__u64 pos = (__u64)c->count + n;

	c->wrap += (__u32)(pos / size);
	c->count = (__u32)(pos % size);
}

/* Cursor reached after @total bytes from the start of a ring of @size. */
static inline struct lism_cursor lism_cursor_at(__u64 total, __u32 size)
{
	struct lism_cursor c = { .wrap = (__u32)(total / size), .count = (__u32)(total % size) };

	return c;
}

/*
 * Bytes from @old to @new (smc_curs_diff): 0 if @new is not ahead.  Valid
 * while the two are less than 2^32 wraps apart, which the DMB bound keeps.
 */
static inline __u64 lism_cursor_diff(struct lism_cursor old, struct lism_cursor new_, __u32 size)
{
	__s64 d = ((__s64)(__s32)(new_.wrap - old.wrap)) * size +
		  (__s64)new_.count - (__s64)old.count;

	return d > 0 ? (__u64)d : 0;
}

#endif
