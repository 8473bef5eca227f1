// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ablate.h"
#include "lism/ablate.h"

static const struct {
	const char *name;
	__u32 bit;
} ablations[] = {
	{ "bulk-sndbuf", LISM_ABLATE_BULK_SNDBUF },
	{ "one-way-stop", LISM_ABLATE_ONE_WAY_STOP },
	{ "bulk-join", LISM_ABLATE_BULK_JOIN },
	{ "send-limits", LISM_ABLATE_SEND_LIMITS },
	{ "ring-dmb-cache", LISM_ABLATE_RING_DMB_CACHE },
};

int lism_ablate_parse(const char *list, __u32 *mask)
{
	*mask = 0;
	for (const char *p = list; p && *p;) {
		size_t len = strcspn(p, ","), i;

		for (i = 0; i < sizeof(ablations) / sizeof(ablations[0]); i++)
			if (strlen(ablations[i].name) == len && !strncmp(p, ablations[i].name, len))
				break;
		if (i == sizeof(ablations) / sizeof(ablations[0]))
			return -EINVAL;
		*mask |= ablations[i].bit;
		p += len;
		p += *p == ',';
	}
	return 0;
}

void lism_ablate_format(__u32 mask, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(ablations) / sizeof(ablations[0]); i++)
		if ((mask & ablations[i].bit) && n < len)
			n += snprintf(buf + n, len - n, "%s%s", n ? "," : "", ablations[i].name);
}
