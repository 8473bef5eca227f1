// SPDX-License-Identifier: GPL-2.0-only
#include <string.h>

#include "reason.h"

static const struct {
	const char *name;
	const char *text;
} reasons[LISM_R_MAX] = {
#define LISM_REASON_ENTRY(code, sym, name, text) [code] = { name, text },
	LISM_REASONS(LISM_REASON_ENTRY)
#undef LISM_REASON_ENTRY
};

const char *lism_reason_name(unsigned int code)
{
	return code < LISM_R_MAX && reasons[code].name ? reasons[code].name : "unknown";
}

int lism_reason_known(unsigned int code)
{
	return code < LISM_R_MAX && reasons[code].name;
}

const char *lism_reason_text(unsigned int code)
{
	return code < LISM_R_MAX && reasons[code].text ? reasons[code].text : "unknown reason code";
}

int lism_reason_code(const char *name)
{
	for (unsigned int i = 0; i < LISM_R_MAX; i++)
		if (reasons[i].name && !strcmp(reasons[i].name, name))
			return (int)i;
	return -1;
}
