/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The lism handshake option (the CLC proposal/accept analog), carried in
 * SYN and SYN-ACK as an RFC 6994 experimental TCP option:
 *
 *   0      1      2      3      4 ............ 11  12 ........... 19
 *   kind   len    ExID (2, BE)  GID (first 64 bits) token (64, BE)
 *   254    20     0x6C69
 *
 * 20 bytes is what is left in a SYN after MSS, SACK-permitted, timestamps
 * and window scale (40 - 20), so nothing else fits next to it.  The second
 * half of the 128-bit GID never leaves the host; locality is proven by the
 * token cross-reference in this kernel's table, not by the GID.
 *
 * Used by BPF (bpf_load_hdr_opt fills the buffer) and by unit tests, so it
 * only touches the bytes it is given.
 */
#ifndef LISM_OPTION_H
#define LISM_OPTION_H

#include "types.h"

#define LISM_OPT_KIND 254
#define LISM_OPT_LEN 20
#define LISM_OPT_EXID 0x6C69 /* "li"; not IANA-registered, see docs/architecture.md */

struct lism_opt {
	__u64 gid;   /* first 64 bits of the sender's device GID */
	__u64 token; /* sender's DMB token; never 0 in a valid option */
};

enum lism_opt_err {
	LISM_OPT_OK = 0,
	LISM_OPT_ETRUNC = -1,  /* fewer bytes than the option claims or needs */
	LISM_OPT_EKIND = -2,   /* not an experimental option */
	LISM_OPT_ELEN = -3,    /* length byte is not ours */
	LISM_OPT_EEXID = -4,   /* another experiment's ExID */
	LISM_OPT_ETOKEN = -5,  /* token 0 is reserved */
};

static inline __u64 lism_be64_load(const __u8 *p)
{
	return ((__u64)p[0] << 56) | ((__u64)p[1] << 48) | ((__u64)p[2] << 40) |
	       ((__u64)p[3] << 32) | ((__u64)p[4] << 24) | ((__u64)p[5] << 16) |
	       ((__u64)p[6] << 8) | (__u64)p[7];
}

static inline void lism_be64_store(__u8 *p, __u64 v)
{
	p[0] = v >> 56; p[1] = v >> 48; p[2] = v >> 40; p[3] = v >> 32;
	p[4] = v >> 24; p[5] = v >> 16; p[6] = v >> 8;  p[7] = v;
}

/* Writes exactly LISM_OPT_LEN bytes. */
static inline void lism_opt_encode(__u8 *buf, const struct lism_opt *o)
{
	buf[0] = LISM_OPT_KIND;
	buf[1] = LISM_OPT_LEN;
	buf[2] = LISM_OPT_EXID >> 8;
	buf[3] = LISM_OPT_EXID & 0xff;
	lism_be64_store(buf + 4, o->gid);
	lism_be64_store(buf + 12, o->token);
}

/* @avail: bytes readable at @buf.  Returns LISM_OPT_OK or an lism_opt_err. */
static inline int lism_opt_parse(const __u8 *buf, __u32 avail, struct lism_opt *o)
{
	if (avail < 4)
		return LISM_OPT_ETRUNC;
	if (buf[0] != LISM_OPT_KIND)
		return LISM_OPT_EKIND;
	if (buf[1] != LISM_OPT_LEN)
		return LISM_OPT_ELEN;
	if ((((__u32)buf[2] << 8) | buf[3]) != LISM_OPT_EXID)
		return LISM_OPT_EEXID;
	if (avail < LISM_OPT_LEN)
		return LISM_OPT_ETRUNC;
	o->gid = lism_be64_load(buf + 4);
	o->token = lism_be64_load(buf + 12);
	if (!o->token)
		return LISM_OPT_ETOKEN;
	return LISM_OPT_OK;
}

#endif
