// SPDX-License-Identifier: GPL-2.0-only
#include <criterion/criterion.h>
#include <string.h>

#include "lism/option.h"

static const struct lism_opt sample = { .gid = 0x0123456789abcdefull, .token = 0x8000beef00000007ull };

Test(option, encodes_the_documented_wire_format)
{
	__u8 buf[LISM_OPT_LEN];
	static const __u8 want[LISM_OPT_LEN] = { 254, 20, 0x6c, 0x69, 0x01, 0x23, 0x45,
						 0x67, 0x89, 0xab, 0xcd, 0xef, 0x80, 0x00,
						 0xbe, 0xef, 0x00, 0x00, 0x00, 0x07 };

	lism_opt_encode(buf, &sample);
	cr_assert_arr_eq(buf, want, sizeof(want));
}

Test(option, round_trips)
{
	__u8 buf[LISM_OPT_LEN];
	struct lism_opt o;

	lism_opt_encode(buf, &sample);
	cr_assert_eq(lism_opt_parse(buf, sizeof(buf), &o), LISM_OPT_OK);
	cr_assert_eq(o.gid, sample.gid);
	cr_assert_eq(o.token, sample.token);
}

Test(option, rejects_truncated_input_at_every_length)
{
	__u8 buf[LISM_OPT_LEN];
	struct lism_opt o;

	lism_opt_encode(buf, &sample);
	for (__u32 n = 0; n < LISM_OPT_LEN; n++)
		cr_assert_eq(lism_opt_parse(buf, n, &o), LISM_OPT_ETRUNC, "length %u", n);
}

Test(option, rejects_another_kind)
{
	__u8 buf[LISM_OPT_LEN];
	struct lism_opt o;

	lism_opt_encode(buf, &sample);
	buf[0] = 253; /* the other experimental kind */
	cr_assert_eq(lism_opt_parse(buf, sizeof(buf), &o), LISM_OPT_EKIND);
	buf[0] = 2; /* MSS */
	cr_assert_eq(lism_opt_parse(buf, sizeof(buf), &o), LISM_OPT_EKIND);
}

Test(option, rejects_a_foreign_exid)
{
	__u8 buf[LISM_OPT_LEN];
	struct lism_opt o;

	lism_opt_encode(buf, &sample);
	buf[2] = 0xf9; /* TCP Fast Open's 0xF989 */
	buf[3] = 0x89;
	cr_assert_eq(lism_opt_parse(buf, sizeof(buf), &o), LISM_OPT_EEXID);
	lism_opt_encode(buf, &sample);
	buf[3] ^= 1;
	cr_assert_eq(lism_opt_parse(buf, sizeof(buf), &o), LISM_OPT_EEXID);
}

Test(option, rejects_wrong_length_bytes)
{
	__u8 buf[LISM_OPT_LEN + 8];
	struct lism_opt o;

	memset(buf, 0, sizeof(buf));
	lism_opt_encode(buf, &sample);
	for (int len = 0; len < 256; len++) {
		if (len == LISM_OPT_LEN)
			continue;
		buf[1] = (__u8)len;
		cr_assert_eq(lism_opt_parse(buf, sizeof(buf), &o), LISM_OPT_ELEN, "len byte %d", len);
	}
}

Test(option, rejects_token_zero)
{
	struct lism_opt zero = { .gid = sample.gid, .token = 0 };
	__u8 buf[LISM_OPT_LEN];
	struct lism_opt o;

	lism_opt_encode(buf, &zero);
	cr_assert_eq(lism_opt_parse(buf, sizeof(buf), &o), LISM_OPT_ETOKEN);
}

Test(option, parses_only_its_own_bytes)
{
	/* Trailing bytes (the next option) must not matter. */
	__u8 buf[LISM_OPT_LEN + 4];
	struct lism_opt o;

	memset(buf, 0xff, sizeof(buf));
	lism_opt_encode(buf, &sample);
	cr_assert_eq(lism_opt_parse(buf, sizeof(buf), &o), LISM_OPT_OK);
	cr_assert_eq(o.token, sample.token);
}

Test(option, fits_next_to_the_standard_syn_options)
{
	/* MSS 4 + SACK-permitted 2 + timestamps 10 + window scale 3 (+1 NOP) = 20 of 40. */
	cr_assert_leq(4 + 2 + 10 + 3 + 1 + LISM_OPT_LEN, 40);
	cr_assert_eq(LISM_OPT_LEN % 4, 0, "keeps the header 32-bit aligned");
}
