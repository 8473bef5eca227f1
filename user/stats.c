// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "broker.h"
#include "format.h"
#include "log.h"
#include "reason.h"
#include "stats.h"

static int by_count(const void *a, const void *b)
{
	const struct lism_reason_count *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return (int)x->code - (int)y->code;
}

int lism_top_reasons(const __u64 reasons[LISM_R_MAX], struct lism_reason_count out[LISM_R_MAX])
{
	int n = 0;

	for (unsigned int r = 1; r < LISM_R_MAX; r++)
		if (reasons[r])
			out[n++] = (struct lism_reason_count){ .code = r, .count = reasons[r] };
	qsort(out, n, sizeof(*out), by_count);
	return n;
}

void lism_hist_label(unsigned int bucket, char *buf, size_t len)
{
	char b[32];

	if (bucket >= LISM_HIST_BUCKETS - 1) {
		lism_fmt_bytes(lism_hist_bound(LISM_HIST_BUCKETS - 2), b, sizeof(b));
		snprintf(buf, len, "> %s", b);
	} else {
		lism_fmt_bytes(lism_hist_bound(bucket), b, sizeof(b));
		snprintf(buf, len, "<= %s", b);
	}
}

#define ROW "  %-34s %llu\n"

void lism_stats_print(FILE *f, const struct lism_snapshot *s)
{
	struct lism_reason_count top[LISM_R_MAX];
	char label[64], bytes[32];
	int n = lism_top_reasons(s->reasons, top);
	const __u64 *st = s->stats;

	fprintf(f, "Connections\n");
	fprintf(f, ROW, "confirmed now", (unsigned long long)s->confirmed);
	fprintf(f, ROW, "confirmed (total)", (unsigned long long)st[LISM_S_CONFIRMS]);
	fprintf(f, ROW, "fell back (connection ends)", (unsigned long long)st[LISM_S_FALLBACKS]);
	fprintf(f, ROW, "DMBs released by close", (unsigned long long)st[LISM_S_CLOSES]);
	fprintf(f, ROW, "  reaped at socket destroy", (unsigned long long)st[LISM_S_REAPED]);
	fprintf(f, ROW, "    whose socket lost its token", (unsigned long long)st[LISM_S_REAPED_ORPHANS]);
	fprintf(f, ROW, "  reaped by the sweep (socket gone)", (unsigned long long)st[LISM_S_REAPED_GONE]);
	fprintf(f, ROW, "closes with a lost token", (unsigned long long)st[LISM_S_TOKEN_LOST]);
	fprintf(f, ROW, "short (churn detection)", (unsigned long long)st[LISM_S_SHORT_CONNS]);
	fprintf(f, "  %-34s %lld / %u (high-water %lld, %.1f%% in use)\n", "DMBs in use / max",
		(long long)s->usage.dmbs_in_use, s->dev.max_dmbs, (long long)s->usage.dmbs_hwm,
		s->dev.max_dmbs ? 100.0 * (double)s->usage.dmbs_in_use / s->dev.max_dmbs : 0.0);
	fprintf(f, "Handshakes\n");
	fprintf(f, "  %-34s %llu / %llu\n", "proposals sent / received",
		(unsigned long long)st[LISM_S_PROPOSALS_SENT], (unsigned long long)st[LISM_S_PROPOSALS_RECV]);
	fprintf(f, "  %-34s %llu / %llu\n", "accepts sent / received",
		(unsigned long long)st[LISM_S_ACCEPTS_SENT], (unsigned long long)st[LISM_S_ACCEPTS_RECV]);
	fprintf(f, "Fallback reasons (most frequent first)\n");
	if (!n)
		fprintf(f, "  none\n");
	for (int i = 0; i < n; i++) {
		snprintf(label, sizeof(label), "%s (%u)", lism_reason_name(top[i].code), top[i].code);
		fprintf(f, ROW, label, (unsigned long long)top[i].count);
	}
	lism_fmt_bytes(st[LISM_S_SC_BYTES], bytes, sizeof(bytes));
	fprintf(f, "Data\n");
	fprintf(f, "  %-34s %llu (%s)\n", "shortcut bytes", (unsigned long long)st[LISM_S_SC_BYTES], bytes);
	fprintf(f, ROW, "shortcut sends", (unsigned long long)st[LISM_S_SC_MSGS]);
	fprintf(f, ROW, "paired sends over TCP", (unsigned long long)st[LISM_S_TCP_MSGS]);
	fprintf(f, ROW, "  held for order (sync)", (unsigned long long)st[LISM_S_SYNC_HOLDS]);
	fprintf(f, ROW, "  peer's DMB full", (unsigned long long)st[LISM_S_DMB_FULL]);
	fprintf(f, ROW, "  peer's socket memory tight", (unsigned long long)st[LISM_S_PEER_MEM_TIGHT]);
	fprintf(f, ROW, "  peer not in the map", (unsigned long long)st[LISM_S_REDIRECT_MISS]);
	fprintf(f, ROW, "ring pairs (lism exec)", (unsigned long long)st[LISM_S_RING_PAIRS]);
	fprintf(f, "Senders (sends through the data path)\n");
	fprintf(f, ROW, "joined (both ways, or bulk)", (unsigned long long)st[LISM_S_SENDERS_JOINED]);
	fprintf(f, ROW, "one-way, stay on TCP", (unsigned long long)st[LISM_S_SENDERS_ONE_WAY]);
	fprintf(f, ROW, "small send limits, stay on TCP", (unsigned long long)st[LISM_S_SENDERS_SEND_LIMITS]);
	fprintf(f, ROW, "joins refused or lost", (unsigned long long)st[LISM_S_SENDER_JOIN_FAILS]);
	fprintf(f, ROW, "left (peer gone)", (unsigned long long)st[LISM_S_SENDERS_LEFT]);
	fprintf(f, ROW, "  leaves refused (pair on, or queue)", (unsigned long long)st[LISM_S_SENDER_LEAVES_REFUSED]);
	fprintf(f, ROW, "sends measured (bulk or not)", (unsigned long long)st[LISM_S_SEND_SIZE_CALLS]);
	fprintf(f, "Shortcut send sizes\n");
	for (unsigned int b = 0; b < LISM_HIST_BUCKETS; b++) {
		lism_hist_label(b, label, sizeof(label));
		fprintf(f, ROW, label, (unsigned long long)s->sizes[b]);
	}
	fprintf(f, ROW, "Events lost", (unsigned long long)st[LISM_S_EVENTS_LOST]);
}

void lism_device_totals_print(FILE *f, const struct lism_device_totals *t, int err)
{
	char bytes[32];

	fprintf(f, "lism exec's device\n");
	if (err == -ENODEV) {
		fprintf(f, "  none serves\n");
		return;
	}
	if (err) {
		fprintf(f, "  %-34s %s\n", "its figures unknown", strerror(-err));
		return;
	}
	lism_fmt_bytes(t->bytes, bytes, sizeof(bytes));
	fprintf(f, ROW, "ring pairs held", (unsigned long long)t->held);
	fprintf(f, ROW, "ring memories made", (unsigned long long)t->rings);
	fprintf(f, ROW, "attaches (ends given their ring)", (unsigned long long)t->attaches);
	fprintf(f, ROW, "requests refused", (unsigned long long)t->refusals);
	fprintf(f, "  %-34s %llu (%s)\n", "ring bytes", (unsigned long long)t->bytes, bytes);
	fprintf(f, ROW, "doorbells", (unsigned long long)t->doorbells);
	fprintf(f, ROW, "runs (stretches through TCP)", (unsigned long long)t->runs);
	fprintf(f, ROW, "pairs ended by a reset", (unsigned long long)t->aborts);
}

static void add_u64(struct json_object *o, const char *k, __u64 v)
{
	json_object_object_add(o, k, json_object_new_uint64(v));
}

struct json_object *lism_device_totals_json(const struct lism_device_totals *t)
{
	struct json_object *o = json_object_new_object();

	add_u64(o, "rings_held", t->held);
	add_u64(o, "rings", t->rings);
	add_u64(o, "attaches", t->attaches);
	add_u64(o, "refusals", t->refusals);
	add_u64(o, "ring_bytes", t->bytes);
	add_u64(o, "doorbells", t->doorbells);
	add_u64(o, "runs", t->runs);
	add_u64(o, "aborts", t->aborts);
	return o;
}

struct json_object *lism_stats_json(const struct lism_snapshot *s)
{
	struct json_object *o = json_object_new_object(), *reasons = json_object_new_array(),
			   *sizes = json_object_new_array();
	struct lism_reason_count top[LISM_R_MAX];
	int n = lism_top_reasons(s->reasons, top);
	const __u64 *st = s->stats;

	add_u64(o, "confirmed_now", s->confirmed);
	add_u64(o, "confirms", st[LISM_S_CONFIRMS]);
	add_u64(o, "fallbacks", st[LISM_S_FALLBACKS]);
	add_u64(o, "closes", st[LISM_S_CLOSES]);
	add_u64(o, "reaped", st[LISM_S_REAPED]);
	add_u64(o, "reaped_orphans", st[LISM_S_REAPED_ORPHANS]);
	add_u64(o, "reaped_gone", st[LISM_S_REAPED_GONE]);
	add_u64(o, "sweeps", st[LISM_S_SWEEPS]);
	add_u64(o, "senders_joined", st[LISM_S_SENDERS_JOINED]);
	add_u64(o, "senders_one_way", st[LISM_S_SENDERS_ONE_WAY]);
	add_u64(o, "senders_send_limits", st[LISM_S_SENDERS_SEND_LIMITS]);
	add_u64(o, "sender_join_fails", st[LISM_S_SENDER_JOIN_FAILS]);
	add_u64(o, "senders_left", st[LISM_S_SENDERS_LEFT]);
	add_u64(o, "sender_leaves_refused", st[LISM_S_SENDER_LEAVES_REFUSED]);
	add_u64(o, "send_size_calls", st[LISM_S_SEND_SIZE_CALLS]);
	add_u64(o, "token_lost", st[LISM_S_TOKEN_LOST]);
	add_u64(o, "short_conns", st[LISM_S_SHORT_CONNS]);
	add_u64(o, "dmbs_in_use", s->usage.dmbs_in_use > 0 ? (__u64)s->usage.dmbs_in_use : 0);
	add_u64(o, "dmbs_hwm", s->usage.dmbs_hwm > 0 ? (__u64)s->usage.dmbs_hwm : 0);
	add_u64(o, "max_dmbs", s->dev.max_dmbs);
	add_u64(o, "proposals_sent", st[LISM_S_PROPOSALS_SENT]);
	add_u64(o, "proposals_received", st[LISM_S_PROPOSALS_RECV]);
	add_u64(o, "accepts_sent", st[LISM_S_ACCEPTS_SENT]);
	add_u64(o, "accepts_received", st[LISM_S_ACCEPTS_RECV]);
	add_u64(o, "shortcut_bytes", st[LISM_S_SC_BYTES]);
	add_u64(o, "shortcut_msgs", st[LISM_S_SC_MSGS]);
	add_u64(o, "tcp_msgs", st[LISM_S_TCP_MSGS]);
	add_u64(o, "tcp_bytes", st[LISM_S_TCP_BYTES]);
	add_u64(o, "sync_holds", st[LISM_S_SYNC_HOLDS]);
	add_u64(o, "dmb_full", st[LISM_S_DMB_FULL]);
	add_u64(o, "peer_mem_tight", st[LISM_S_PEER_MEM_TIGHT]);
	add_u64(o, "ring_pairs", st[LISM_S_RING_PAIRS]);
	add_u64(o, "redirect_miss", st[LISM_S_REDIRECT_MISS]);
	add_u64(o, "events_lost", st[LISM_S_EVENTS_LOST]);
	for (int i = 0; i < n; i++) {
		struct json_object *r = json_object_new_object();

		json_object_object_add(r, "name", json_object_new_string(lism_reason_name(top[i].code)));
		json_object_object_add(r, "code", json_object_new_int((int)top[i].code));
		add_u64(r, "count", top[i].count);
		json_object_array_add(reasons, r);
	}
	json_object_object_add(o, "fallback_reasons", reasons);
	for (unsigned int b = 0; b < LISM_HIST_BUCKETS; b++) {
		struct json_object *h = json_object_new_object();

		if (b < LISM_HIST_BUCKETS - 1)
			add_u64(h, "le", lism_hist_bound(b));
		else
			json_object_object_add(h, "le", NULL);
		add_u64(h, "count", s->sizes[b]);
		json_object_array_add(sizes, h);
	}
	json_object_object_add(o, "message_sizes", sizes);
	return o;
}

int lism_cmd_stats(const struct lism_common_opts *co, const struct lism_stats_opts *o)
{
	struct lism_device_report *r = NULL;
	struct lism_instance in;
	struct lism_snapshot s;
	int err;

	err = lism_instance_open(&in, co->pin_path);
	if (err) {
		lism_err("no lism instance at %s: %s", co->pin_path, strerror(-err));
		return LISM_EXIT_STATE;
	}
	err = lism_layout_check(&in);
	if (err) {
		lism_instance_close(&in);
		return err;
	}
	if (o->reset) {
		err = lism_percpu_zero(in.stats_fd);
		if (!err)
			err = lism_percpu_zero(in.reasons_fd);
		if (!err && in.sizes_fd >= 0) /* absent from older instances */
			err = lism_percpu_zero(in.sizes_fd);
		lism_instance_close(&in);
		if (err) {
			lism_err("resetting the counters failed: %s", strerror(-err));
			return LISM_EXIT_FAIL;
		}
		printf("lism: counters reset (DMB usage and its high-water mark are kept)\n");
		return LISM_EXIT_OK;
	}
	err = lism_snapshot_read(&in, &s);
	lism_instance_close(&in);
	if (err) {
		lism_err("reading the counters failed: %s", strerror(-err));
		return LISM_EXIT_FAIL;
	}
	/* the device's figures, when one serves: -ENODEV when none does */
	err = s.exec_serving ? lism_device_report(o->device_socket, &r) : -ENODEV;
	if (co->json) {
		struct json_object *j = lism_stats_json(&s);

		json_object_object_add(j, "device", err ? NULL : lism_device_totals_json(&r->totals));
		puts(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN));
		json_object_put(j);
	} else {
		lism_stats_print(stdout, &s);
		lism_device_totals_print(stdout, err ? NULL : &r->totals, err);
	}
	if (err && err != -ENODEV)
		fprintf(stderr, "lism: note: the device at %s did not answer (%s)%s\n", o->device_socket,
			strerror(-err), err == -EACCES ? ": ask as root" : "; --device-socket names another");
	free(r);
	return LISM_EXIT_OK;
}
