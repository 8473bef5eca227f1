/* SPDX-License-Identifier: GPL-2.0-only */
/* Human-readable formatting shared by the views (unit-tested). */
#ifndef LISM_FORMAT_H
#define LISM_FORMAT_H

#include <stddef.h>
#include <linux/types.h>

/* 0 -> "0 B", 1536 -> "1.5 KiB", 1048576 -> "1.0 MiB". */
void lism_fmt_bytes(__u64 bytes, char *out, size_t len);

#endif
