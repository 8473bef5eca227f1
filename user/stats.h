/* SPDX-License-Identifier: GPL-2.0-only */
/* lism stats: counters, fallback reasons, message sizes, like smcd stats. */
#ifndef LISM_STATS_H
#define LISM_STATS_H

#include <json-c/json.h>
#include <stdio.h>

#include "cli.h"
#include "device.h"
#include "lism/exec.h"

struct lism_reason_count {
	unsigned int code;
	__u64 count;
};

/* Reasons with a non-zero count, most frequent first (ties by code); returns how many. */
int lism_top_reasons(const __u64 reasons[LISM_R_MAX], struct lism_reason_count out[LISM_R_MAX]);
/* "<= 64 B", "<= 1.0 KiB", "> 1.0 MiB" */
void lism_hist_label(unsigned int bucket, char *buf, size_t len);

void lism_stats_print(FILE *f, const struct lism_snapshot *s);
struct json_object *lism_stats_json(const struct lism_snapshot *s);

/* lism exec's device: its counters (lism/exec.h), or why they are unknown (@err: -errno of the ask). */
void lism_device_totals_print(FILE *f, const struct lism_device_totals *t, int err);
struct json_object *lism_device_totals_json(const struct lism_device_totals *t);

#endif
