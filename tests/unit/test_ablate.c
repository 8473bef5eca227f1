// SPDX-License-Identifier: GPL-2.0-only
#include <criterion/criterion.h>
#include <errno.h>

#include "ablate.h"
#include "lism/ablate.h"

Test(ablate, names_and_bits)
{
	char buf[128];
	__u32 m;

	cr_assert_eq(lism_ablate_parse(NULL, &m), 0);
	cr_assert_eq(m, 0u, "unset: nothing ablated");
	cr_assert_eq(lism_ablate_parse("", &m), 0);
	cr_assert_eq(m, 0u);
	cr_assert_eq(lism_ablate_parse("bulk-sndbuf", &m), 0);
	cr_assert_eq(m, LISM_ABLATE_BULK_SNDBUF);
	lism_ablate_format(m, buf, sizeof(buf));
	cr_assert_str_eq(buf, "bulk-sndbuf");
	cr_assert_eq(lism_ablate_parse("bulk-sndbuf,bulk-sndbuf", &m), 0);
	cr_assert_eq(m, LISM_ABLATE_BULK_SNDBUF);
	cr_assert_eq(lism_ablate_parse("bulk-sndbuf,sndbuf", &m), -EINVAL, "a typo must not bench the default");
	cr_assert_eq(lism_ablate_parse("bulk-sndbuf,pass-ahead", &m), -EINVAL,
		     "a removed heuristic's name must not bench the default either");
	cr_assert_eq(lism_ablate_parse("bulk", &m), -EINVAL, "no prefixes");
	cr_assert_eq(lism_ablate_parse("one-way-stop,bulk-join,send-limits", &m), 0);
	cr_assert_eq(m, LISM_ABLATE_ONE_WAY_STOP | LISM_ABLATE_BULK_JOIN | LISM_ABLATE_SEND_LIMITS);
	lism_ablate_format(m, buf, sizeof(buf));
	cr_assert_str_eq(buf, "one-way-stop,bulk-join,send-limits");
}
