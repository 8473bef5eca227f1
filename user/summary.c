// SPDX-License-Identifier: GPL-2.0-only
#include <stdio.h>
#include <string.h>

#include "format.h"
#include "reason.h"
#include "stats.h"
#include "summary.h"

/* A `lism stats reset` in between: some counter went back. */
static int was_reset(const struct lism_snapshot *prev, const struct lism_snapshot *cur)
{
	for (unsigned int i = 0; i < LISM_S_MAX; i++)
		if (cur->stats[i] < prev->stats[i])
			return 1;
	for (unsigned int r = 0; r < LISM_R_MAX; r++)
		if (cur->reasons[r] < prev->reasons[r])
			return 1;
	return 0;
}

int lism_summary_diff(const struct lism_snapshot *prev, const struct lism_snapshot *cur,
		      unsigned int seconds, struct lism_summary *out)
{
	static const struct lism_snapshot zero;
	const __u64 *a, *b = cur->stats;

	/* after a reset everything counts from zero, so that the numbers agree with each other */
	if (was_reset(prev, cur))
		prev = &zero;
	a = prev->stats;
	memset(out, 0, sizeof(*out));
	out->seconds = seconds;
	out->confirms = b[LISM_S_CONFIRMS] - a[LISM_S_CONFIRMS];
	out->fallbacks = b[LISM_S_FALLBACKS] - a[LISM_S_FALLBACKS];
	out->closes = b[LISM_S_CLOSES] - a[LISM_S_CLOSES];
	out->reaped = b[LISM_S_REAPED] + b[LISM_S_REAPED_GONE] - a[LISM_S_REAPED] - a[LISM_S_REAPED_GONE];
	out->short_conns = b[LISM_S_SHORT_CONNS] - a[LISM_S_SHORT_CONNS];
	out->shortcut_bytes = b[LISM_S_SC_BYTES] - a[LISM_S_SC_BYTES];
	out->tcp_bytes = b[LISM_S_TCP_BYTES] - a[LISM_S_TCP_BYTES];
	out->events_lost = b[LISM_S_EVENTS_LOST] - a[LISM_S_EVENTS_LOST];
	for (unsigned int r = 1; r < LISM_R_MAX; r++)
		out->reasons[r] = cur->reasons[r] - prev->reasons[r];
	out->confirmed_now = cur->confirmed;
	out->dmbs_in_use = cur->usage.dmbs_in_use;
	return out->confirms || out->fallbacks || out->closes || out->reaped || out->shortcut_bytes ||
	       out->tcp_bytes || out->events_lost;
}


#define APPEND(...)                                                          \
	do {                                                                 \
		if (n < len)                                                 \
			n += (size_t)snprintf(buf + n, len - n, __VA_ARGS__); \
	} while (0)

void lism_summary_format(const struct lism_summary *s, char *buf, size_t len)
{
	struct lism_reason_count top[LISM_R_MAX];
	char sc[32], tcp[32];
	int k = lism_top_reasons(s->reasons, top);
	size_t n = 0;

	lism_fmt_bytes(s->shortcut_bytes, sc, sizeof(sc));
	lism_fmt_bytes(s->tcp_bytes, tcp, sizeof(tcp));
	APPEND("lism: last %u s: %llu connections confirmed, %llu fallbacks", s->seconds,
	       (unsigned long long)s->confirms, (unsigned long long)s->fallbacks);
	for (int i = 0; i < k; i++)
		APPEND("%s%s %llu", i ? ", " : " (", lism_reason_name(top[i].code),
		       (unsigned long long)top[i].count);
	APPEND("%s, %llu closed, %llu reaped; %s through the shortcut, %s of paired sends over TCP; "
	       "now %u confirmed, %lld DMBs in use",
	       k ? ")" : "", (unsigned long long)s->closes, (unsigned long long)s->reaped, sc, tcp,
	       s->confirmed_now, (long long)s->dmbs_in_use);
	if (s->events_lost)
		APPEND("; %llu events lost", (unsigned long long)s->events_lost);
}

struct json_object *lism_summary_json(const struct lism_summary *s)
{
	struct json_object *o = json_object_new_object(), *r = json_object_new_object();
	struct lism_reason_count top[LISM_R_MAX];
	int k = lism_top_reasons(s->reasons, top);

	json_object_object_add(o, "type", json_object_new_string("summary"));
	json_object_object_add(o, "seconds", json_object_new_int((int)s->seconds));
	json_object_object_add(o, "confirms", json_object_new_uint64(s->confirms));
	json_object_object_add(o, "fallbacks", json_object_new_uint64(s->fallbacks));
	for (int i = 0; i < k; i++)
		json_object_object_add(r, lism_reason_name(top[i].code), json_object_new_uint64(top[i].count));
	json_object_object_add(o, "reasons", r);
	json_object_object_add(o, "closes", json_object_new_uint64(s->closes));
	json_object_object_add(o, "reaped", json_object_new_uint64(s->reaped));
	json_object_object_add(o, "short_conns", json_object_new_uint64(s->short_conns));
	json_object_object_add(o, "shortcut_bytes", json_object_new_uint64(s->shortcut_bytes));
	json_object_object_add(o, "tcp_bytes", json_object_new_uint64(s->tcp_bytes));
	json_object_object_add(o, "events_lost", json_object_new_uint64(s->events_lost));
	json_object_object_add(o, "confirmed_now", json_object_new_uint64(s->confirmed_now));
	json_object_object_add(o, "dmbs_in_use", json_object_new_int64(s->dmbs_in_use));
	return o;
}
