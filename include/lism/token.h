/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * DMB tokens.  A token names one connection end's DMB entry, like SMC's
 * 64-bit DMB token.  Its low 32 bits are the entry's slot in the DMB table
 * (an array, so resolving a token costs no hashing) and its high 32 bits are
 * random and never zero, so a stale or guessed token does not match the
 * entry that reuses the slot.  Free slots live in a FIFO queue map: taking
 * and returning one is O(1) whatever the table size, and FIFO order delays
 * reuse of a slot as long as possible.
 */
#ifndef LISM_TOKEN_H
#define LISM_TOKEN_H

#include "types.h"

static inline __u64 lism_token_make(__u32 slot, __u32 rnd)
{
	return ((__u64)(rnd | 0x80000000u) << 32) | slot;
}

static inline __u32 lism_token_slot(__u64 token)
{
	return (__u32)token;
}

/* A token is well formed if it could have come from lism_token_make(). */
static inline int lism_token_valid(__u64 token, __u32 capacity)
{
	return (token >> 63) && lism_token_slot(token) < capacity;
}

#endif
