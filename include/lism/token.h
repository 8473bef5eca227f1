/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * DMB tokens.  A token names one connection end's DMB entry, like SMC's
 * 64-bit DMB token.  Its low 32 bits are the entry's slot in the DMB table
 * (an array, so resolving a token costs no hashing); its high 32 bits are the
 * slot's generation (how often it was taken) mixed with a device-private
 * salt, top bit set: a stale token never matches the entry that reuses its
 * slot (until a slot is taken 2^31 times), and tokens are not guessable from
 * outside.  Free slots live in a FIFO queue map: taking and returning one is
 * O(1) whatever the table size, and FIFO order delays reuse of a slot as
 * long as possible.
 */
#ifndef LISM_TOKEN_H
#define LISM_TOKEN_H

#include "types.h"

static inline __u64 lism_token_make(__u32 slot, __u32 gen, __u32 salt)
{
	return ((__u64)((gen ^ salt) | 0x80000000u) << 32) | slot;
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
