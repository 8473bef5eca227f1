// SPDX-License-Identifier: GPL-2.0-only
#include <stdio.h>

#include "format.h"

void lism_fmt_bytes(__u64 bytes, char *out, size_t len)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)bytes;
	int u = -1;

	if (bytes < 1024) {
		snprintf(out, len, "%llu B", (unsigned long long)bytes);
		return;
	}
	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	snprintf(out, len, "%.1f %s", v, units[u]);
}
