// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "event_types.h"

static const char *const event_names[LISM_EV_MAX] = {
	"?", "confirm", "fallback", "close", "limit", "abort", "reaped",
};

const char *lism_event_name(unsigned int type)
{
	return type && type < LISM_EV_MAX ? event_names[type] : "?";
}

int lism_event_types_parse(const char *s, __u32 *mask)
{
	char buf[128], *save = NULL;
	__u32 m = 0;

	if (!strcmp(s, "all")) {
		*mask = LISM_EV_ALL;
		return 0;
	}
	if (!strcmp(s, "none")) {
		*mask = 0;
		return 0;
	}
	if (!*s || strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		unsigned int type = 1;

		while (type < LISM_EV_MAX && strcmp(t, event_names[type]))
			type++;
		if (type == LISM_EV_MAX)
			return -EINVAL;
		m |= LISM_EV_TYPE(type);
	}
	if (!m) /* "," alone */
		return -EINVAL;
	*mask = m;
	return 0;
}

void lism_event_types_format(__u32 mask, char *buf, size_t len)
{
	size_t n = 0;

	mask &= LISM_EV_ALL;
	if (!len)
		return;
	if (mask == LISM_EV_ALL || !mask) {
		snprintf(buf, len, "%s", mask ? "all" : "none");
		return;
	}
	buf[0] = '\0';
	for (unsigned int t = 1; t < LISM_EV_MAX && n < len; t++)
		if (mask & LISM_EV_TYPE(t))
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "," : "", event_names[t]);
}
