/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The daemon's periodic log line: what moved since the last one, from two
 * snapshots of the counters.  One line a minute says more in a node's log
 * than a line per connection, and costs nothing per connection.
 */
#ifndef LISM_SUMMARY_H
#define LISM_SUMMARY_H

#include <json-c/json.h>

#include "device.h"

/* What moved between @prev and @cur (a counter reset in between counts from zero). */
struct lism_summary {
	unsigned int seconds;
	__u64 confirms, fallbacks, closes, reaped, short_conns, shortcut_bytes, tcp_bytes, events_lost;
	__u64 reasons[LISM_R_MAX];
	__u32 confirmed_now;
	__s64 dmbs_in_use;
};

/* 0 when nothing moved (the daemon then says nothing), 1 otherwise. */
int lism_summary_diff(const struct lism_snapshot *prev, const struct lism_snapshot *cur,
		      unsigned int seconds, struct lism_summary *out);
/* "lism: last 60 s: 12 connections confirmed, 3 fallbacks (blocking-socket 2, policy 1), ..." */
void lism_summary_format(const struct lism_summary *s, char *buf, size_t len);
struct json_object *lism_summary_json(const struct lism_summary *s);

#endif
