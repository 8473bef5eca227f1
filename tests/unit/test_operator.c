// SPDX-License-Identifier: GPL-2.0-only
/* Operator views, without a kernel: rows, JSON, histogram, events, metrics text. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpf_time.h"
#include "cli.h"
#include "conns.h"
#include "events.h"
#include "lism/hist.h"
#include "metrics.h"
#include "reason.h"
#include "stats.h"
#include "summary.h"

static void v4(__u8 out[16], unsigned a, unsigned b, unsigned c, unsigned d)
{
	memset(out, 0, 16);
	out[10] = out[11] = 0xff;
	out[12] = a;
	out[13] = b;
	out[14] = c;
	out[15] = d;
}

static struct lism_conn shortcut_conn(void)
{
	struct lism_conn c = { 0 };

	v4(c.row.laddr, 10, 0, 0, 1);
	v4(c.row.raddr, 10, 0, 0, 2);
	c.row.lport = 43210;
	c.row.rport = 8080;
	c.row.tcp_state = 1; /* ESTAB */
	c.row.pid = 4242;
	strcpy(c.row.comm, "nginx");
	c.row.unread = 100;
	c.row.st.token = 0x8000beef00000007ull;
	c.row.st.peer_token = 0x8000cafe00000008ull;
	c.row.st.state = LISM_ST_CONFIRMED;
	c.row.st.tx = LISM_TX_SHORTCUT;
	c.row.st.role = LISM_ROLE_ACTIVE;
	c.has_me = c.has_peer = 1;
	c.me.token = c.row.st.token;
	c.me.state = LISM_ST_CONFIRMED;
	c.me.dmb_size = 1000;
	c.me.rx_bytes = 2500;
	c.peer.rx_bytes = 777;
	return c;
}

Test(conns, narrow_rows_fit_in_80_columns)
{
	struct lism_conn c = shortcut_conn();
	char line[512];

	lism_conn_header(0, line, sizeof(line));
	cr_assert_lt(strlen(line), 80, "header: %s", line);
	lism_conn_format(&c, 0, line, sizeof(line));
	cr_assert_lt(strlen(line), 80, "row: %s", line);
	cr_assert(strstr(line, "ESTAB") && strstr(line, "10.0.0.1:43210") &&
		  strstr(line, "10.0.0.2:8080") && strstr(line, "shortcut") && strstr(line, "4242"),
		  "%s", line);
	/* the longest IPv4 endpoints and reason still fit */
	v4(c.row.laddr, 255, 255, 255, 255);
	v4(c.row.raddr, 255, 255, 255, 254);
	c.row.lport = c.row.rport = 65535;
	c.row.tcp_state = 8; /* CLOSE-WAIT */
	c.row.pid = 419430;
	c.has_me = 0;
	c.row.st.state = LISM_ST_FALLBACK;
	for (unsigned int r = 1; r < LISM_R_MAX; r++) { /* every reason, in full */
		if (!lism_reason_known(r))
			continue;
		c.row.st.reason = r;
		lism_conn_format(&c, 0, line, sizeof(line));
		cr_assert_lt(strlen(line), 80, "row: %s", line);
		cr_assert(strstr(line, lism_reason_name(r)), "reason cut: %s", line);
		cr_assert_str_neq(lism_reason_name(r), "shortcut");
		cr_assert_str_neq(lism_reason_name(r), "pending");
		cr_assert_str_neq(lism_reason_name(r), "closed");
	}
}

Test(conns, wide_rows_show_tokens_cursors_and_bytes)
{
	struct lism_conn c = shortcut_conn();
	char line[512];

	lism_conn_format(&c, 1, line, sizeof(line));
	cr_assert(strstr(line, "8000beef00000007") && strstr(line, "8000cafe00000008"), "%s", line);
	cr_assert(strstr(line, "2:500"), "producer cursor: %s", line);  /* 2500 over 1000 */
	cr_assert(strstr(line, "2:400"), "consumer cursor: %s", line);  /* 2500 - 100 unread */
	cr_assert(strstr(line, "4242/nginx"), "%s", line);
}

Test(conns, modes_and_reasons)
{
	struct lism_conn c = shortcut_conn();
	char mode[64];

	lism_conn_mode_str(&c, mode, sizeof(mode));
	cr_assert_str_eq(mode, "shortcut");
	c.has_me = 0;
	c.row.st.state = LISM_ST_FALLBACK;
	c.row.st.reason = LISM_R_PEER_NO_LISM;
	lism_conn_mode_str(&c, mode, sizeof(mode));
	cr_assert_str_eq(mode, "tcp:peer-no-lism");
	c.row.st.state = LISM_ST_READY; /* joined, then the peer declined and freed our entry */
	lism_conn_mode_str(&c, mode, sizeof(mode));
	cr_assert_str_eq(mode, "tcp:peer-declined");
	c = shortcut_conn();
	c.me.state = LISM_ST_PROPOSED;
	c.row.st.state = LISM_ST_PROPOSED;
	lism_conn_mode_str(&c, mode, sizeof(mode));
	cr_assert_str_eq(mode, "pending");
	c = shortcut_conn(); /* confirmed, on an instance without a data path */
	c.row.st.tx = LISM_TX_TCP;
	c.row.st.reason = LISM_R_NO_DATA_PATH;
	c.me.conn_flags |= LISM_CONN_NO_DATA_PATH;
	lism_conn_mode_str(&c, mode, sizeof(mode));
	cr_assert_str_eq(mode, "tcp:no-data-path");
}

Test(conns, json_parses_back)
{
	struct lism_conn c = shortcut_conn();
	struct json_object *o = lism_conn_json(&c), *back, *v, *w;
	const char *text = json_object_to_json_string(o);

	back = json_tokener_parse(text);
	cr_assert_not_null(back, "%s", text);
	cr_assert(json_object_object_get_ex(back, "mode", &v));
	cr_assert_str_eq(json_object_get_string(v), "shortcut");
	cr_assert(json_object_object_get_ex(back, "token", &v));
	cr_assert_str_eq(json_object_get_string(v), "0x8000beef00000007");
	cr_assert(json_object_object_get_ex(back, "local", &v));
	cr_assert(json_object_object_get_ex(v, "addr", &w));
	cr_assert_str_eq(json_object_get_string(w), "10.0.0.1");
	cr_assert(json_object_object_get_ex(back, "cons", &v));
	cr_assert(json_object_object_get_ex(v, "count", &w));
	cr_assert_eq(json_object_get_int(w), 400);
	cr_assert(json_object_object_get_ex(back, "tx_bytes", &v));
	cr_assert_eq(json_object_get_int(v), 777);
	json_object_put(back);
	json_object_put(o);
}

/*
 * A ring pair's ends take their figures from the device's report, matched
 * by token, each seeing its own direction as rx: the passive end is end 1.
 */
Test(conns, ring_rows_take_their_figures_from_the_device)
{
	struct lism_conn c[3] = { shortcut_conn(), shortcut_conn(), shortcut_conn() };
	struct {
		struct lism_device_report r;
		struct lism_device_ring ring[2];
	} rep = { .r = { .magic = LISM_DEVICE_MAGIC, .dmb_size = 1000, .n = 2 } };
	struct json_object *o, *ring, *v, *w;
	char line[512];

	for (int i = 0; i < 2; i++) {
		c[i].me.exec = LISM_EXEC_WORD(LISM_EXEC_RING, 0);
		c[i].row.st.role = i ? LISM_ROLE_PASSIVE : LISM_ROLE_ACTIVE;
	}
	c[1].row.st.token = c[1].me.token = 0x8000cafe00000008ull; /* the other end of the pair */
	c[1].row.st.peer_token = 0x8000beef00000007ull;
	rep.ring[0].token[0] = 0x1111; /* another pair */
	rep.ring[0].token[1] = 0x2222;
	rep.ring[1].token[0] = 0x8000beef00000007ull;
	rep.ring[1].token[1] = 0x8000cafe00000008ull;
	rep.ring[1].dir[0].prod = lism_cursor_pack(lism_cursor_at(5300, 1000)); /* into end 0 */
	rep.ring[1].dir[0].cons = lism_cursor_pack(lism_cursor_at(5000, 1000));
	rep.ring[1].dir[1].prod = lism_cursor_pack(lism_cursor_at(1234, 1000)); /* into end 1 */
	rep.ring[1].dir[1].cons = lism_cursor_pack(lism_cursor_at(1234, 1000));
	rep.ring[1].dir[1].bells = 9;
	rep.ring[1].dir[1].state = LISM_RING_DONE_WRITING;
	lism_conns_ring(c, 3, &rep.r);
	cr_assert(c[0].has_ring && c[1].has_ring && !c[2].has_ring, "a shortcut row has no ring");
	cr_assert_eq(c[0].ring_end, 0);
	cr_assert_eq(c[1].ring_end, 1);
	lism_conn_format(&c[0], 1, line, sizeof(line));
	cr_assert(strstr(line, " 5:300 ") && strstr(line, " 5:0 ") && strstr(line, " 300 "), "%s", line);
	cr_assert(strstr(line, " 5300 ") && strstr(line, " 1234 "), "rx and tx bytes: %s", line);
	lism_conn_format(&c[1], 1, line, sizeof(line));
	cr_assert(strstr(line, " 1:234 ") && strstr(line, " 1234 ") && strstr(line, " 5300 "), "%s", line);
	o = lism_conn_json(&c[1]);
	cr_assert(json_object_object_get_ex(o, "mode", &v));
	cr_assert_str_eq(json_object_get_string(v), "ring");
	cr_assert(json_object_object_get_ex(o, "rx_bytes", &v));
	cr_assert_eq(json_object_get_int64(v), 1234);
	cr_assert(json_object_object_get_ex(o, "tx_bytes", &v));
	cr_assert_eq(json_object_get_int64(v), 5300);
	cr_assert(json_object_object_get_ex(o, "ring", &ring));
	cr_assert(json_object_object_get_ex(ring, "rx", &v));
	cr_assert(json_object_object_get_ex(v, "doorbells", &w));
	cr_assert_eq(json_object_get_int(w), 9);
	cr_assert(json_object_object_get_ex(v, "state", &w));
	cr_assert_str_eq(json_object_to_json_string_ext(w, JSON_C_TO_STRING_PLAIN), "[\"done_writing\"]");
	json_object_put(o);
}

Test(conns, endpoints)
{
	__u8 a[16] = { 0 };
	char buf[64];

	v4(a, 127, 0, 0, 1);
	lism_fmt_endpoint(a, 80, buf, sizeof(buf));
	cr_assert_str_eq(buf, "127.0.0.1:80");
	memset(a, 0, 16);
	a[15] = 1;
	lism_fmt_endpoint(a, 443, buf, sizeof(buf));
	cr_assert_str_eq(buf, "[::1]:443");
	v4(a, 0, 0, 0, 0);
	lism_fmt_endpoint(a, 0, buf, sizeof(buf));
	cr_assert_str_eq(buf, "0.0.0.0:0");
	v4(a, 255, 255, 255, 255);
	lism_fmt_endpoint(a, 65535, buf, sizeof(buf));
	cr_assert_str_eq(buf, "255.255.255.255:65535");
	v4(a, 10, 200, 9, 100);
	lism_fmt_endpoint(a, 8080, buf, 12); /* too short for the longest: cut, never overrun */
	cr_assert_str_eq(buf, "10.200.9.10");
	memset(buf, 'x', sizeof(buf));
	lism_fmt_endpoint(a, 8080, buf, 22);
	cr_assert_str_eq(buf, "10.200.9.100:8080");
	/* cut like snprintf: len 0 writes nothing, 1 an empty string; never a byte at buf[len] */
	static const struct { size_t len; const char *want; } cuts[] = {
		{ 1, "" }, { 2, "1" }, { 17, "10.200.9.100:808" }, { 18, "10.200.9.100:8080" },
	};
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		memset(buf, 'x', sizeof(buf));
		lism_fmt_endpoint(a, 8080, buf, cuts[i].len);
		cr_assert_str_eq(buf, cuts[i].want, "len %zu", cuts[i].len);
		cr_assert_eq(buf[cuts[i].len], 'x', "len %zu: wrote past it", cuts[i].len);
	}
	memset(buf, 'x', sizeof(buf));
	lism_fmt_endpoint(a, 8080, buf, 0);
	cr_assert_eq(buf[0], 'x');
	memset(buf, 'x', sizeof(buf));
	lism_fmt_addr(a, buf, 5);
	cr_assert_str_eq(buf, "10.2");
	cr_assert_eq(buf[5], 'x');
	/* the longest: a full IPv6 address and port; an IPv4-compatible one stays IPv6 */
	memset(a, 0xff, 16);
	lism_fmt_endpoint(a, 65535, buf, sizeof(buf));
	cr_assert_str_eq(buf, "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535");
	memset(a, 0, 16);
	a[12] = 10;
	a[15] = 1;
	lism_fmt_endpoint(a, 1, buf, sizeof(buf));
	cr_assert_str_eq(buf, "[::10.0.0.1]:1");
}

Test(events, the_longest_line_fits)
{
	struct lism_event ev = { .ts_ns = ~0ull >> 2, .type = LISM_EV_REAPED, .role = LISM_ROLE_PASSIVE,
				 .tcp_state = 255, .lport = 65535, .rport = 65535, .token = ~0ull,
				 .peer_token = ~0ull, .rx_bytes = ~0ull };
	char line[LISM_EVENT_LINE_MAX];
	unsigned int longest = 0;
	struct json_object *o;

	memset(ev.laddr, 0xff, 16);
	memset(ev.raddr, 0xff, 16);
	for (unsigned int r = 0; r < LISM_R_MAX; r++)
		if (strlen(lism_reason_name(r)) > strlen(lism_reason_name(longest)))
			longest = r;
	ev.reason = (__u8)longest;
	for (unsigned int t = 1; t < LISM_EV_MAX; t++) {
		ev.type = (__u8)t;
		lism_event_json_line(&ev, 0, line, sizeof(line));
		cr_assert_lt(strlen(line), sizeof(line) - 1, "cut: %s", line);
		o = json_tokener_parse(line);
		cr_assert_not_null(o, "%s", line);
		json_object_put(o);
		lism_event_format(&ev, 0, line, sizeof(line));
		cr_assert_lt(strlen(line), sizeof(line) - 1, "cut: %s", line);
	}
}

Test(events, time_of_day_per_event)
{
	char buf[40];
	__s64 off = 1795910400ll * 1000000000ll; /* mono 0 = 2026-11-29T00:00:00Z */

	lism_event_time(1999000000ull, off, buf, sizeof(buf));
	cr_assert_str_eq(buf, "2026-11-29T00:00:01.999Z");
	lism_event_time(2000000000ull, off, buf, sizeof(buf));
	cr_assert_str_eq(buf, "2026-11-29T00:00:02.000Z", "the next second");
	lism_event_time(2500000000ull, off, buf, sizeof(buf));
	cr_assert_str_eq(buf, "2026-11-29T00:00:02.500Z", "the same second");
	lism_event_time(86400ull * 1000000000ull + 1000000ull, off, buf, sizeof(buf));
	cr_assert_str_eq(buf, "2026-11-30T00:00:00.001Z", "the next day");
	lism_event_time(1000000000ull, off, buf, sizeof(buf));
	cr_assert_str_eq(buf, "2026-11-29T00:00:01.000Z", "back in time (another reader's clock)");
	/* before 1970 (a clock set wrong): seconds round down, milliseconds stay positive */
	lism_event_time(500000000ull, -2000000000ll, buf, sizeof(buf));
	cr_assert_str_eq(buf, "1969-12-31T23:59:58.500Z");
	lism_event_time(500000000ull, -1000000000ll, buf, sizeof(buf));
	cr_assert_str_eq(buf, "1969-12-31T23:59:59.500Z");
}

Test(conns, filters)
{
	struct lism_conn c = shortcut_conn();
	struct lism_conns_opts o = { 0 };

	cr_assert(lism_conn_matches(&c, &o));
	o.port = 8080;
	cr_assert(lism_conn_matches(&c, &o), "peer port matches");
	o.port = 43210;
	cr_assert(lism_conn_matches(&c, &o), "local port matches");
	o.port = 9;
	cr_assert_not(lism_conn_matches(&c, &o));
	o.port = 0;
	o.mode = LISM_MODE_TCP;
	cr_assert_not(lism_conn_matches(&c, &o));
	o.mode = LISM_MODE_SHORTCUT;
	cr_assert(lism_conn_matches(&c, &o));
	o.state = lism_tcp_state_code("close-wait") + 1;
	cr_assert_not(lism_conn_matches(&c, &o));
	o.state = lism_tcp_state_code("ESTAB") + 1;
	cr_assert(lism_conn_matches(&c, &o));
}

Test(hist, buckets)
{
	cr_assert_eq(lism_hist_bucket(0), 0);
	cr_assert_eq(lism_hist_bucket(1), 0);
	cr_assert_eq(lism_hist_bucket(64), 0);
	cr_assert_eq(lism_hist_bucket(65), 1);
	cr_assert_eq(lism_hist_bucket(128), 1);
	cr_assert_eq(lism_hist_bucket(129), 2);
	for (__u32 b = 0; b < LISM_HIST_BUCKETS - 1; b++) {
		cr_assert_eq(lism_hist_bucket(lism_hist_bound(b)), b, "bound of %u", b);
		cr_assert_eq(lism_hist_bucket(lism_hist_bound(b) + 1), b + 1, "bound+1 of %u", b);
	}
	cr_assert_eq(lism_hist_bucket(1ull << 40), LISM_HIST_BUCKETS - 1);
	cr_assert_eq(lism_hist_bound(LISM_HIST_BUCKETS - 2), 1u << 20, "last closed bucket is 1 MiB");
}

Test(hist, labels)
{
	char buf[32];

	lism_hist_label(0, buf, sizeof(buf));
	cr_assert_str_eq(buf, "<= 64 B");
	lism_hist_label(4, buf, sizeof(buf));
	cr_assert_str_eq(buf, "<= 1.0 KiB");
	lism_hist_label(LISM_HIST_BUCKETS - 1, buf, sizeof(buf));
	cr_assert_str_eq(buf, "> 1.0 MiB");
}

Test(stats, reasons_most_frequent_first)
{
	struct lism_snapshot s = { 0 };
	struct lism_reason_count top[LISM_R_MAX];

	s.reasons[LISM_R_BLOCKING] = 5;
	s.reasons[LISM_R_PEER_NO_LISM] = 9;
	s.reasons[LISM_R_MAX_DMB] = 5;
	cr_assert_eq(lism_top_reasons(s.reasons, top), 3);
	cr_assert_eq(top[0].code, LISM_R_PEER_NO_LISM);
	cr_assert_eq(top[1].code, LISM_R_MAX_DMB, "ties by code");
	cr_assert_eq(top[2].code, LISM_R_BLOCKING);
}

Test(events, format_and_json)
{
	struct lism_event ev = { .ts_ns = 1000000000ull, .type = LISM_EV_FALLBACK,
				 .reason = LISM_R_BLOCKING, .role = LISM_ROLE_ACTIVE,
				 .lport = 5000, .rport = 80, .token = 0 };
	struct json_object *o, *v;
	char line[512];

	v4(ev.laddr, 127, 0, 0, 1);
	v4(ev.raddr, 127, 0, 0, 2);
	/* mono 1 s + offset = 2026-11-29T00:00:01Z */
	lism_event_format(&ev, 1795910400ll * 1000000000ll, line, sizeof(line));
	cr_assert(strstr(line, "2026-11-29T00:00:01.000Z fallback active  127.0.0.1:5000 -> "
				"127.0.0.2:80"),
		  "%s", line);
	cr_assert(strstr(line, "reason blocking-socket"), "%s", line);
	lism_event_json_line(&ev, 0, line, sizeof(line));
	o = json_tokener_parse(line);
	cr_assert_not_null(o, "%s", line);
	cr_assert(json_object_object_get_ex(o, "type", &v));
	cr_assert_str_eq(json_object_get_string(v), "fallback");
	cr_assert(json_object_object_get_ex(o, "reason_code", &v));
	cr_assert_eq(json_object_get_int(v), LISM_R_BLOCKING);
	json_object_put(o);
	cr_assert_str_eq(line, "{\"time\":\"1970-01-01T00:00:01.000Z\",\"type\":\"fallback\",\"role\":\"active\","
			       "\"reason\":\"blocking-socket\",\"reason_code\":6,"
			       "\"local\":{\"addr\":\"127.0.0.1\",\"port\":5000},"
			       "\"peer\":{\"addr\":\"127.0.0.2\",\"port\":80},"
			       "\"token\":\"0x0000000000000000\",\"peer_token\":\"0x0000000000000000\",\"rx_bytes\":0}");
	/* IPv6, a reaped end (its TCP state), big numbers: still JSON that says the same */
	memset(ev.laddr, 0, 16);
	ev.laddr[15] = 1;
	memset(ev.raddr, 0xfe, 16);
	ev.type = LISM_EV_REAPED;
	ev.tcp_state = 7;
	ev.token = 0x8000000000000001ull;
	ev.rx_bytes = ~0ull;
	lism_event_json_line(&ev, 0, line, sizeof(line));
	o = json_tokener_parse(line);
	cr_assert_not_null(o, "%s", line);
	cr_assert(json_object_object_get_ex(o, "local", &v));
	cr_assert_str_eq(json_object_get_string(json_object_object_get(v, "addr")), "::1");
	cr_assert(json_object_object_get_ex(o, "peer", &v));
	cr_assert_str_eq(json_object_get_string(json_object_object_get(v, "addr")),
			 "fefe:fefe:fefe:fefe:fefe:fefe:fefe:fefe");
	cr_assert_eq(json_object_get_int(json_object_object_get(v, "port")), 80);
	cr_assert_str_eq(json_object_get_string(json_object_object_get(o, "token")), "0x8000000000000001");
	cr_assert_eq(json_object_get_uint64(json_object_object_get(o, "rx_bytes")), ~0ull);
	cr_assert_eq(json_object_get_int(json_object_object_get(o, "tcp_state")), 7);
	cr_assert_str_eq(json_object_get_string(json_object_object_get(o, "type")), "reaped");
	json_object_put(o);
	for (unsigned int t = LISM_EV_CONFIRM; t <= LISM_EV_ABORT; t++)
		cr_assert_str_neq(lism_event_name(t), "?");
}

Test(events, type_sets)
{
	__u32 m = 123;
	char buf[128];

	cr_assert_eq(lism_event_types_parse("all", &m), 0);
	cr_assert_eq(m, LISM_EV_ALL);
	for (unsigned int t = 1; t < LISM_EV_MAX; t++)
		cr_assert(m & LISM_EV_TYPE(t), "all includes %s", lism_event_name(t));
	cr_assert_eq(m & LISM_EV_TYPE(0), 0u);
	cr_assert_eq(lism_event_types_parse("none", &m), 0);
	cr_assert_eq(m, 0u);
	cr_assert_eq(lism_event_types_parse("reaped,limit", &m), 0);
	cr_assert_eq(m, LISM_EV_TYPE(LISM_EV_LIMIT) | LISM_EV_TYPE(LISM_EV_REAPED));
	lism_event_types_format(m, buf, sizeof(buf));
	cr_assert_str_eq(buf, "limit,reaped", "in type order");
	cr_assert_eq(lism_event_types_parse("confirm", &m), 0);
	cr_assert_eq(m, LISM_EV_TYPE(LISM_EV_CONFIRM));
	lism_event_types_format(LISM_EV_ALL, buf, sizeof(buf));
	cr_assert_str_eq(buf, "all");
	lism_event_types_format(0, buf, sizeof(buf));
	cr_assert_str_eq(buf, "none");
	lism_event_types_format(LISM_EV_TYPE(0), buf, sizeof(buf));
	cr_assert_str_eq(buf, "none", "type 0 is no type");
	buf[0] = 'x';
	lism_event_types_format(LISM_EV_ALL, buf, 0);
	cr_assert_eq(buf[0], 'x', "nothing written into no room");
	/* the names of messages and help are the names parsed, in order */
	char names[128] = "";

	for (unsigned int t = 1; t < LISM_EV_MAX; t++)
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", t > 1 ? ", " : "",
			 lism_event_name(t));
	cr_assert_str_eq(names, LISM_EV_NAMES);
	m = 7;
	cr_assert_neq(lism_event_types_parse("", &m), 0);
	cr_assert_neq(lism_event_types_parse(",", &m), 0);
	cr_assert_neq(lism_event_types_parse("limit,bogus", &m), 0);
	cr_assert_neq(lism_event_types_parse("?", &m), 0, "the placeholder name of type 0");
	cr_assert_neq(lism_event_types_parse("Limit", &m), 0);
	cr_assert_eq(m, 7u, "untouched on error");
}

Test(summary, only_what_moved)
{
	static struct lism_snapshot a, b;
	struct lism_summary s;
	struct json_object *j, *v, *r;
	char line[1024];

	a.stats[LISM_S_CONFIRMS] = 100;
	a.stats[LISM_S_FALLBACKS] = 7;
	a.reasons[LISM_R_BLOCKING] = 7;
	a.stats[LISM_S_SC_BYTES] = 1 << 20;
	b = a;
	b.confirmed = 3;
	b.usage.dmbs_in_use = 6;
	cr_assert_eq(lism_summary_diff(&a, &b, 60, &s), 0, "nothing moved: no line");
	b.stats[LISM_S_CONFIRMS] = 112;
	b.stats[LISM_S_FALLBACKS] = 7 + 5;
	b.reasons[LISM_R_BLOCKING] = 7 + 1;
	b.reasons[LISM_R_PEER_NO_LISM] = 4;
	b.stats[LISM_S_CLOSES] = 9;
	b.stats[LISM_S_SC_BYTES] = (1 << 20) + (3 << 20);
	b.stats[LISM_S_SHORT_CONNS] = 2;
	b.stats[LISM_S_REAPED] = 1;      /* by the destroy backstop */
	b.stats[LISM_S_REAPED_GONE] = 2; /* by the sweep: reaped too */
	cr_assert_eq(lism_summary_diff(&a, &b, 60, &s), 1);
	cr_assert_eq(s.short_conns, 2u);
	cr_assert_eq(s.reaped, 3u);
	cr_assert_eq(s.confirms, 12u);
	cr_assert_eq(s.fallbacks, 5u);
	cr_assert_eq(s.reasons[LISM_R_BLOCKING], 1u);
	cr_assert_eq(s.shortcut_bytes, 3u << 20);
	lism_summary_format(&s, line, sizeof(line));
	cr_assert(strstr(line, "lism: last 60 s: 12 connections confirmed, 5 fallbacks "
			       "(peer-no-lism 4, blocking-socket 1), 9 closed, 3 reaped; 3.0 MiB through "
			       "the shortcut"),
		  "%s", line);
	cr_assert(strstr(line, "now 3 confirmed, 6 DMBs in use"), "%s", line);
	cr_assert_null(strstr(line, "events lost"), "%s", line);
	j = json_tokener_parse(json_object_to_json_string(r = lism_summary_json(&s)));
	json_object_put(r);
	cr_assert_not_null(j);
	cr_assert(json_object_object_get_ex(j, "type", &v));
	cr_assert_str_eq(json_object_get_string(v), "summary");
	cr_assert(json_object_object_get_ex(j, "confirms", &v));
	cr_assert_eq(json_object_get_int64(v), 12);
	cr_assert(json_object_object_get_ex(j, "reasons", &r));
	cr_assert(json_object_object_get_ex(r, "peer-no-lism", &v));
	cr_assert_eq(json_object_get_int64(v), 4);
	cr_assert(json_object_object_get_ex(j, "short_conns", &v));
	cr_assert_eq(json_object_get_int64(v), 2);
	json_object_put(j);

	/* a `lism stats reset` in between: what moved counts from zero */
	b = a;
	memset(b.stats, 0, sizeof(b.stats));
	memset(b.reasons, 0, sizeof(b.reasons));
	b.stats[LISM_S_CONFIRMS] = 2;
	b.stats[LISM_S_EVENTS_LOST] = 5;
	cr_assert_eq(lism_summary_diff(&a, &b, 60, &s), 1);
	cr_assert_eq(s.confirms, 2u);
	cr_assert_eq(s.shortcut_bytes, 0u);
	lism_summary_format(&s, line, sizeof(line));
	cr_assert(strstr(line, "0 fallbacks, 0 closed"), "no reasons, no parentheses: %s", line);
	cr_assert(strstr(line, "; 5 events lost"), "%s", line);
	/* every counter from zero after a reset, also one that has grown past its old value since */
	b = a;
	memset(b.stats, 0, sizeof(b.stats));
	memset(b.reasons, 0, sizeof(b.reasons));
	b.stats[LISM_S_CONFIRMS] = 150;
	b.stats[LISM_S_FALLBACKS] = 2;
	b.reasons[LISM_R_BLOCKING] = 2;
	cr_assert_eq(lism_summary_diff(&a, &b, 60, &s), 1);
	cr_assert_eq(s.confirms, 150u, "not 150 - 100");
	cr_assert_eq(s.fallbacks, 2u);
	cr_assert_eq(s.reasons[LISM_R_BLOCKING], 2u);
	/* a line that does not fit is cut, not overrun */
	lism_summary_format(&s, line, 40);
	cr_assert_eq(strlen(line), 39u);
}

/* A strict reader of the Prometheus text format, enough to catch what a scraper rejects. */
struct family {
	char name[96], type[16];
	int help, samples;
};

static int valid_name(const char *s, size_t n)
{
	if (!n || !(isalpha((unsigned char)s[0]) || s[0] == '_' || s[0] == ':'))
		return 0;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == ':'))
			return 0;
	return 1;
}

static struct family *find(struct family *f, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(f[i].name, name))
			return &f[i];
	return NULL;
}

/* The family a sample belongs to (histograms: _bucket/_sum/_count). */
static struct family *family_of(struct family *f, int n, const char *sample)
{
	static const char *const suffixes[] = { "_bucket", "_sum", "_count" };
	char base[96];
	struct family *fam = find(f, n, sample);

	if (fam)
		return fam;
	for (size_t i = 0; i < 3; i++) {
		size_t l = strlen(sample), sl = strlen(suffixes[i]);

		if (l > sl && !strcmp(sample + l - sl, suffixes[i]) && l - sl < sizeof(base)) {
			memcpy(base, sample, l - sl);
			base[l - sl] = '\0';
			fam = find(f, n, base);
			if (fam && !strcmp(fam->type, "histogram"))
				return fam;
		}
	}
	return NULL;
}

static double sample_value(const char *text, const char *series)
{
	char needle[256];
	const char *p;

	snprintf(needle, sizeof(needle), "\n%s", series); /* a sample line, not its HELP */
	p = strstr(text, needle);
	cr_assert_not_null(p, "no series %s", series);
	return strtod(p + strlen(needle), NULL);
}

Test(metrics, text_format_is_valid_and_complete)
{
	struct lism_snapshot s = { 0 };
	struct family fams[128];
	int nf = 0;
	char *text = NULL, *line, *save;
	size_t len = 0;
	double prev_bucket = -1;
	FILE *f;

	s.dev.max_dmbs = 5000;
	s.dev.dmb_size = 1 << 20;
	s.dev.chid = 0xffff;
	s.dev.active = 1;
	s.usage.dmbs_in_use = 50;
	s.stats[LISM_S_SC_BYTES] = 123456;
	s.stats[LISM_S_SC_MSGS] = 12;
	s.reasons[LISM_R_PEER_NO_LISM] = 3;
	s.sizes[0] = 2;
	s.sizes[5] = 10;
	s.bpf_time.stats_sysctl = 1;
	for (int p = 0; p < LISM_PROG_MAX; p++)
		s.bpf_time.prog[p].known = 1;
	s.bpf_time.prog[LISM_PROG_DATA_PATH].runs = 40;
	s.bpf_time.prog[LISM_PROG_DATA_PATH].run_ns = 12000;

	f = open_memstream(&text, &len);
	lism_metrics_write(f, &s, "1.2.3");
	fclose(f);

	char *copy = strdup(text);

	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[96], rest[512];

		if (!strncmp(line, "# HELP ", 7) || !strncmp(line, "# TYPE ", 7)) {
			char kind[8], type[16] = "";

			cr_assert_geq(sscanf(line, "# %7s %95s %15s", kind, name, type), 2, "%s", line);
			cr_assert(valid_name(name, strlen(name)), "bad name in %s", line);
			struct family *fam = find(fams, nf, name);

			if (!fam) {
				cr_assert_lt(nf, 128);
				fam = &fams[nf++];
				memset(fam, 0, sizeof(*fam));
				strcpy(fam->name, name);
			}
			cr_assert_eq(fam->samples, 0, "%s: HELP/TYPE after samples", name);
			if (kind[0] == 'H')
				fam->help = 1;
			else
				strcpy(fam->type, type);
			continue;
		}
		cr_assert_neq(line[0], '#', "unknown comment: %s", line);
		size_t n = strcspn(line, "{ ");

		cr_assert(valid_name(line, n), "bad sample name: %s", line);
		memcpy(name, line, n);
		name[n] = '\0';
		struct family *fam = family_of(fams, nf, name);

		cr_assert_not_null(fam, "sample %s has no HELP/TYPE", name);
		cr_assert(fam->help && fam->type[0], "%s: missing HELP or TYPE", name);
		if (!strcmp(fam->type, "counter"))
			cr_assert(strlen(name) > 6 && !strcmp(name + strlen(name) - 6, "_total"),
				  "counter %s does not end in _total", name);
		fam->samples++;
		if (line[n] == '{') { /* labels: name="value" pairs */
			char *end = strchr(line + n, '}');

			cr_assert_not_null(end, "%s", line);
			for (char *p = line + n + 1; p < end;) {
				size_t ln = strcspn(p, "=");

				cr_assert(valid_name(p, ln), "bad label in %s", line);
				cr_assert_eq(p[ln + 1], '"', "%s", line);
				p = strchr(p + ln + 2, '"');
				cr_assert_not_null(p, "%s", line);
				p++;
				if (*p == ',')
					p++;
			}
			strcpy(rest, end + 1);
		} else {
			strcpy(rest, line + n);
		}
		char *endp;
		double v = strtod(rest, &endp);

		cr_assert(endp != rest && *endp == '\0', "bad value in: %s", line);
		if (!strcmp(name, "lism_shortcut_send_size_bytes_bucket")) {
			cr_assert_geq(v, prev_bucket, "buckets not cumulative: %s", line);
			prev_bucket = v;
		}
	}
	free(copy);
	for (int i = 0; i < nf; i++)
		cr_assert_gt(fams[i].samples, 0, "%s has no samples", fams[i].name);
	/* present from the first scrape, with the values of the snapshot */
	cr_assert_eq(sample_value(text, "lism_shortcut_bytes_total "), 123456);
	cr_assert_eq(sample_value(text, "lism_fallbacks_total{reason=\"peer-no-lism\",code=\"2\"} "), 3);
	cr_assert_eq(sample_value(text, "lism_fallbacks_total{reason=\"max-dmb\",code=\"4\"} "), 0);
	cr_assert_null(strstr(text, "code=\"8\""), "a retired reason has a series");
	cr_assert_eq(sample_value(text, "lism_dmb_pressure_ratio "), 0.01);
	cr_assert_eq(sample_value(text, "lism_shortcut_send_size_bytes_bucket{le=\"+Inf\"} "), 12);
	cr_assert_eq(sample_value(text, "lism_shortcut_send_size_bytes_count "), 12);
	cr_assert_eq(sample_value(text, "lism_shortcut_send_size_bytes_bucket{le=\"1024\"} "), 2);
	cr_assert_eq(sample_value(text, "lism_shortcut_send_size_bytes_bucket{le=\"2048\"} "), 12);
	cr_assert(strstr(text, "lism_build_info{version=\"1.2.3\""), "no build info");
	cr_assert_eq(sample_value(text, "lism_bpf_stats_enabled "), 1);
	cr_assert_eq(sample_value(text, "lism_bpf_program_runs_total{program=\"data_path\"} "), 40);
	cr_assert_eq(sample_value(text, "lism_bpf_program_run_seconds_total{program=\"data_path\"} "), 12e-6);
	cr_assert_eq(sample_value(text, "lism_bpf_program_runs_total{program=\"backstop\"} "), 0);
	free(text);
}

static int starts_with(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

Test(bpf_time, says_what_bpf_stats_counted_and_what_they_cost)
{
	struct lism_bpf_time t = { .stats_sysctl = 0 };
	char out[512], small[40];

	lism_bpf_time_format(&t, out, sizeof(out));
	cr_assert(starts_with(out, "not readable"), "%s", out);
	for (int p = 0; p < LISM_PROG_MAX; p++)
		t.prog[p].known = 1;
	lism_bpf_time_format(&t, out, sizeof(out));
	cr_assert(starts_with(out, "not counted (BPF stats are off; 'sysctl kernel.bpf_stats_enabled=1'"), "%s", out);

	t.stats_sysctl = 1;
	t.prog[LISM_PROG_HANDSHAKE].runs = 10;
	t.prog[LISM_PROG_HANDSHAKE].run_ns = 4005;
	t.prog[LISM_PROG_BACKSTOP].known = 0;
	lism_bpf_time_format(&t, out, sizeof(out));
	cr_assert_str_eq(out, "kernel.bpf_stats_enabled=1, so every BPF program run on this host pays two clock "
			      "reads: handshake 400 ns x 10 runs, data path 0 runs");
	t.stats_sysctl = 0;
	lism_bpf_time_format(&t, out, sizeof(out));
	cr_assert(starts_with(out, "counted while BPF stats were on (kernel.bpf_stats_enabled=0; "), "%s", out);
	cr_assert(strstr(out, "): handshake 400 ns x 10 runs, data path 0 runs"), "%s", out);
	t.stats_sysctl = -1;
	lism_bpf_time_format(&t, out, sizeof(out));
	cr_assert_str_eq(out, "counted while BPF stats were on: handshake 400 ns x 10 runs, data path 0 runs");
	lism_bpf_time_format(&t, small, sizeof(small));
	cr_assert_eq(strlen(small), sizeof(small) - 1);
	cr_assert_str_eq(small + sizeof(small) - 4, "...");

	cr_assert_str_eq(lism_prog_name(LISM_PROG_HANDSHAKE), "handshake");
	cr_assert_str_eq(lism_prog_name(LISM_PROG_DATA_PATH), "data_path");
	cr_assert_str_eq(lism_prog_name(LISM_PROG_BACKSTOP), "backstop");
	cr_assert_str_eq(lism_prog_name(LISM_PROG_MAX), "?");
}

/* lism conns says when it runs in a nested pid namespace (a pod without hostPID). */
Test(conns, nested_pid_namespace_from_nspid)
{
	static const struct {
		const char *status;
		int nested;
	} cases[] = {
		{ "Name:\tlism\nNSpid:\t4242\nNSsid:\t1\n", 0 },
		{ "Name:\tlism\nNSpid:\t4242\t17\n", 1 },
		{ "Name:\tlism\nNSpid:\t4242 17 3\n", 1 },
		{ "Name:\tlism\nPid:\t4242\n", -1 }, /* a kernel without NSpid */
	};
	char path[] = "/tmp/lism-unit-status-XXXXXX";

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int fd = mkstemp(path);

		cr_assert_geq(fd, 0);
		cr_assert_eq(write(fd, cases[i].status, strlen(cases[i].status)), (ssize_t)strlen(cases[i].status));
		close(fd);
		cr_assert_eq(lism_pidns_nested(path), cases[i].nested, "%s", cases[i].status);
		unlink(path);
		strcpy(path, "/tmp/lism-unit-status-XXXXXX");
	}
	cr_assert_eq(lism_pidns_nested("/nonexistent/status"), -1);
}

/* Task names are the application's bytes: what is not printable ASCII becomes '?' (JSON stays valid). */
Test(conns, task_names_are_printable)
{
	char comm[16] = "nginx: w\x1b[2J";
	char utf8[16] = "caf\xc3\xa9-\xe2\x82";
	char full[16];

	lism_comm_printable(comm, sizeof(comm));
	cr_assert_str_eq(comm, "nginx: w?[2J");
	lism_comm_printable(utf8, sizeof(utf8));
	cr_assert_str_eq(utf8, "caf?" "?-?" "?");
	memset(full, 'a', sizeof(full)); /* no NUL: cut at the buffer */
	lism_comm_printable(full, sizeof(full));
	cr_assert_eq(strlen(full), sizeof(full) - 1);
}
