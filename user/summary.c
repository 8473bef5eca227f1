// SPDX-License-Identifier: GPL-2.0-only
#include <stdio.h>
#include <string.h>

#include "format.h"
#include "reason.h"
#include "summary.h"

static __u64 moved(__u64 prev, __u64 cur)
{
	return cur >= prev ? cur - prev : cur; /* `lism stats reset` in between */
}

int lism_summary_diff(const struct lism_snapshot *prev, const struct lism_snapshot *cur,
		      unsigned int seconds, struct lism_summary *out)
{
	const __u64 *a = prev->stats, *b = cur->stats;

	memset(out, 0, sizeof(*out));
	out->seconds = seconds;
	out->confirms = moved(a[LISM_S_CONFIRMS], b[LISM_S_CONFIRMS]);
	out->fallbacks = moved(a[LISM_S_FALLBACKS], b[LISM_S_FALLBACKS]);
	out->closes = moved(a[LISM_S_CLOSES], b[LISM_S_CLOSES]);
	out->reaped = moved(a[LISM_S_REAPED], b[LISM_S_REAPED]);
	out->short_conns = moved(a[LISM_S_SHORT_CONNS], b[LISM_S_SHORT_CONNS]);
	out->shortcut_bytes = moved(a[LISM_S_SC_BYTES], b[LISM_S_SC_BYTES]);
	out->tcp_bytes = moved(a[LISM_S_TCP_BYTES], b[LISM_S_TCP_BYTES]);
	out->events_lost = moved(a[LISM_S_EVENTS_LOST], b[LISM_S_EVENTS_LOST]);
	for (unsigned int r = 1; r < LISM_R_MAX; r++)
		out->reasons[r] = moved(prev->reasons[r], cur->reasons[r]);
	out->confirmed_now = cur->confirmed;
	out->dmbs_in_use = cur->usage.dmbs_in_use;
	return out->confirms || out->fallbacks || out->closes || out->reaped || out->shortcut_bytes ||
	       out->tcp_bytes || out->events_lost;
}

/* Reasons that moved, most first (ties by code), like lism stats. */
static int top_reasons(const struct lism_summary *s, unsigned int order[LISM_R_MAX])
{
	int n = 0;

	for (unsigned int r = 1; r < LISM_R_MAX; r++) {
		int i = n;

		if (!s->reasons[r])
			continue;
		n++;
		while (i > 0 && s->reasons[order[i - 1]] < s->reasons[r]) {
			order[i] = order[i - 1];
			i--;
		}
		order[i] = r;
	}
	return n;
}

#define APPEND(...)                                                          \
	do {                                                                 \
		if (n < len)                                                 \
			n += (size_t)snprintf(buf + n, len - n, __VA_ARGS__); \
	} while (0)

void lism_summary_format(const struct lism_summary *s, char *buf, size_t len)
{
	unsigned int order[LISM_R_MAX];
	char sc[32], tcp[32];
	int k = top_reasons(s, order);
	size_t n = 0;

	lism_fmt_bytes(s->shortcut_bytes, sc, sizeof(sc));
	lism_fmt_bytes(s->tcp_bytes, tcp, sizeof(tcp));
	APPEND("lism: last %u s: %llu connections confirmed, %llu fallbacks", s->seconds,
	       (unsigned long long)s->confirms, (unsigned long long)s->fallbacks);
	for (int i = 0; i < k; i++)
		APPEND("%s%s %llu", i ? ", " : " (", lism_reason_name(order[i]),
		       (unsigned long long)s->reasons[order[i]]);
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
	unsigned int order[LISM_R_MAX];
	int k = top_reasons(s, order);

	json_object_object_add(o, "type", json_object_new_string("summary"));
	json_object_object_add(o, "seconds", json_object_new_int((int)s->seconds));
	json_object_object_add(o, "confirms", json_object_new_uint64(s->confirms));
	json_object_object_add(o, "fallbacks", json_object_new_uint64(s->fallbacks));
	for (int i = 0; i < k; i++)
		json_object_object_add(r, lism_reason_name(order[i]), json_object_new_uint64(s->reasons[order[i]]));
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
