/* SPDX-License-Identifier: GPL-2.0-only */
/* LISM_ABLATE, the bench's switch for heuristics without a setting (include/lism/ablate.h). */
#ifndef LISM_USER_ABLATE_H
#define LISM_USER_ABLATE_H

#include <linux/types.h>
#include <stddef.h>

/* "bulk-sndbuf" (NULL or "": none) into LISM_ABLATE_* bits: 0, or -EINVAL for a name it lacks. */
int lism_ablate_parse(const char *list, __u32 *mask);
/* The names of @mask, comma-separated, into @buf. */
void lism_ablate_format(__u32 mask, char *buf, size_t len);

#endif
