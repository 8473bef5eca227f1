// SPDX-License-Identifier: GPL-2.0-only
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "conns.h"
#include "broker.h"
#include "feature.h"
#include "format.h"
#include "log.h"
#include "pins.h"
#include "reason.h"

enum lism_conn_mode lism_conn_mode(const struct lism_conn *c, unsigned int *reason)
{
	const struct lism_sk *st = &c->row.st;

	*reason = LISM_R_NONE;
	if (c->has_me && c->me.state == LISM_ST_CONFIRMED && LISM_EXEC_MODE(c->me.exec) == LISM_EXEC_RING)
		return LISM_VIEW_RING; /* lism exec: its bytes go through a ring DMB in shared memory */
	if (c->has_me && c->me.state == LISM_ST_CONFIRMED && LISM_EXEC_MODE(c->me.exec) == LISM_EXEC_KERNEL) {
		*reason = LISM_EXEC_REASON(c->me.exec); /* lism exec's, decided with the pair */
		return LISM_VIEW_TCP;
	}
	if (c->has_me && c->me.state == LISM_ST_CONFIRMED && (c->me.conn_flags & LISM_CONN_NO_DATA_PATH)) {
		*reason = LISM_R_NO_DATA_PATH; /* paired, and no data path to carry it */
		return LISM_VIEW_TCP;
	}
	if (c->has_me && c->me.state == LISM_ST_CONFIRMED)
		return LISM_VIEW_SHORTCUT;
	if (c->has_me && c->me.state == LISM_ST_FALLBACK) { /* its peer left the shortcut */
		*reason = c->me.reason;
		return LISM_VIEW_TCP;
	}
	if (st->state == LISM_ST_FALLBACK) {
		*reason = st->reason;
		return LISM_VIEW_TCP;
	}
	if (st->state == LISM_ST_CLOSED)
		return LISM_VIEW_CLOSED;
	if (st->token && !c->has_me) {
		/* joined, then the peer declined and released our entry */
		*reason = LISM_R_PEER_DECLINED;
		return LISM_VIEW_TCP;
	}
	return LISM_VIEW_PENDING;
}

void lism_conn_mode_str(const struct lism_conn *c, char *buf, size_t len)
{
	static const char *const names[] = { "shortcut", "tcp", "pending", "closed", "ring" };
	unsigned int reason;
	enum lism_conn_mode m = lism_conn_mode(c, &reason);

	if (m == LISM_VIEW_TCP)
		snprintf(buf, len, "tcp:%s", lism_reason_name(reason));
	else
		snprintf(buf, len, "%s", names[m]);
}

/* Decimal digits of @v at @p; returns the end.  (printf is most of an event line's cost.) */
static char *put_u(char *p, unsigned int v)
{
	char d[10];
	int n = 0;

	do
		d[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (n)
		*p++ = d[--n];
	return p;
}

static int is_v6(const __u8 addr[16])
{
	static const __u8 v4prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return memcmp(addr, v4prefix, 12) != 0;
}

void lism_fmt_addr(const __u8 addr[16], char *buf, size_t len)
{
	char full[INET6_ADDRSTRLEN], *p = full;
	size_t n;

	if (!len)
		return;
	if (!is_v6(addr)) {
		/* by hand: inet_ntop + snprintf were 44 % of an event line's 12.7 k instructions */
		for (int i = 12; i < 16; i++) {
			p = put_u(p, addr[i]);
			*p++ = '.';
		}
		p[-1] = '\0';
	} else {
		inet_ntop(AF_INET6, addr, full, sizeof(full));
	}
	n = strnlen(full, len - 1); /* cut to fit, like snprintf */
	memcpy(buf, full, n);
	buf[n] = '\0';
}

void lism_fmt_endpoint(const __u8 addr[16], __u16 port, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN], full[INET6_ADDRSTRLEN + 8], *p = full;
	int v6 = is_v6(addr);
	size_t n;

	if (!len)
		return;
	lism_fmt_addr(addr, a, sizeof(a));
	if (v6)
		*p++ = '[';
	n = strlen(a);
	memcpy(p, a, n);
	p += n;
	if (v6)
		*p++ = ']';
	*p++ = ':';
	*put_u(p, port) = '\0';
	n = strnlen(full, len - 1);
	memcpy(buf, full, n);
	buf[n] = '\0';
}

/* How its sends travel: a member that is not a sender yet sends over TCP unseen (sender.h). */
static const char *tx_name(const struct lism_sk *st)
{
	if (st->sender != LISM_SND_NONE && st->sender != LISM_SND_JOINED)
		return "tcp";
	return st->tx == LISM_TX_SHORTCUT ? "shortcut" : st->tx == LISM_TX_SYNC ? "sync" : "tcp";
}

const char *lism_sender_name(__u8 sender)
{
	static const char *const names[] = { "none", "watch", "queued", "joined", "tcp", "leaving" };

	return sender < sizeof(names) / sizeof(names[0]) ? names[sender] : "?";
}

/* The cursor @bytes into this end's DMB. */
static struct lism_cursor dmb_cursor(const struct lism_conn *c, __u64 bytes)
{
	return lism_cursor_at(bytes, c->me.dmb_size ? c->me.dmb_size : 1);
}

/*
 * This end's DMB as the views show it: the sk_msg path counts the bytes
 * received in the entry and derives the cursors from the socket's unread
 * bytes (cursor.h); a ring pair's are its header's, from the device.
 */
struct dmb_view {
	__u32 size;
	struct lism_cursor prod, cons;
	__u64 unread, rx_bytes;
};

static __u64 ring_bytes(const struct lism_conn *c, __u64 packed)
{
	return lism_cursor_bytes(packed, c->ring_dmb);
}

static void dmb_view(const struct lism_conn *c, struct dmb_view *v)
{
	if (c->has_ring) {
		const struct lism_device_ring_dir *d = &c->ring.dir[c->ring_end];
		__u64 p = ring_bytes(c, d->prod), q = ring_bytes(c, d->cons);

		v->size = c->ring_dmb;
		v->prod = lism_cursor_unpack(d->prod);
		v->cons = lism_cursor_unpack(d->cons);
		v->unread = p > q ? p - q : 0;
		v->rx_bytes = p;
		return;
	}
	v->size = c->me.dmb_size;
	v->prod = dmb_cursor(c, c->me.rx_bytes);
	v->cons = dmb_cursor(c, c->me.rx_bytes > c->row.unread ? c->me.rx_bytes - c->row.unread : 0);
	v->unread = c->row.unread;
	v->rx_bytes = c->me.rx_bytes;
}

/* Bytes this end sent: what its peer's DMB received, if known. */
static int tx_bytes(const struct lism_conn *c, __u64 *out)
{
	if (c->has_ring)
		*out = ring_bytes(c, c->ring.dir[!c->ring_end].prod);
	else if (c->has_peer)
		*out = c->peer.rx_bytes;
	else
		return 0;
	return 1;
}

#define NARROW "%-10s %-21s %-21s %-17s %s"
#define WIDE "%-10s %-23s %-23s %-22s %-8s %-16s %-16s %-8s %-14s %-14s %-10s %-12s %-12s %s"

void lism_conn_header(int wide, char *buf, size_t len)
{
	if (wide)
		snprintf(buf, len, WIDE, "State", "Local", "Peer", "Mode", "Tx", "Token", "PeerToken",
			 "DMB", "Prod", "Cons", "Unread", "RxBytes", "TxBytes", "Process");
	else
		snprintf(buf, len, NARROW, "State", "Local", "Peer", "Mode/Reason", "PID");
}

void lism_conn_format(const struct lism_conn *c, int wide, char *buf, size_t len)
{
	char local[64], peer[64], mode[40], pid[32];

	lism_fmt_endpoint(c->row.laddr, c->row.lport, local, sizeof(local));
	lism_fmt_endpoint(c->row.raddr, c->row.rport, peer, sizeof(peer));
	lism_conn_mode_str(c, mode, sizeof(mode));
	if (!wide) {
		/* a TCP row shows just its reason: no reason is named like a mode */
		const char *m = strncmp(mode, "tcp:", 4) ? mode : mode + 4;

		snprintf(pid, sizeof(pid), "%u", c->row.pid);
		snprintf(buf, len, NARROW, lism_tcp_state_name(c->row.tcp_state), local, peer, m, pid);
		return;
	}
	char tok[24] = "-", ptok[24] = "-", dmb[16] = "-", prod[32] = "-", cons[32] = "-";
	char unread[24] = "-", rx[24] = "-", tx[24] = "-", proc[40];

	if (c->row.st.token)
		snprintf(tok, sizeof(tok), "%016llx", (unsigned long long)c->row.st.token);
	if (c->row.st.peer_token)
		snprintf(ptok, sizeof(ptok), "%016llx", (unsigned long long)c->row.st.peer_token);
	__u64 sent;

	if (c->has_me) {
		struct dmb_view v;

		dmb_view(c, &v);
		lism_fmt_bytes(v.size, dmb, sizeof(dmb));
		snprintf(prod, sizeof(prod), "%u:%u", v.prod.wrap, v.prod.count);
		snprintf(cons, sizeof(cons), "%u:%u", v.cons.wrap, v.cons.count);
		snprintf(unread, sizeof(unread), "%llu", (unsigned long long)v.unread);
		snprintf(rx, sizeof(rx), "%llu", (unsigned long long)v.rx_bytes);
	}
	if (tx_bytes(c, &sent))
		snprintf(tx, sizeof(tx), "%llu", (unsigned long long)sent);
	snprintf(proc, sizeof(proc), "%u/%s", c->row.pid, c->row.comm);
	snprintf(buf, len, WIDE, lism_tcp_state_name(c->row.tcp_state), local, peer, mode,
		 c->has_ring ? "ring" : tx_name(&c->row.st), tok, ptok, dmb, prod, cons, unread, rx, tx, proc);
}

static struct json_object *jcursor(struct lism_cursor cur)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "wrap", json_object_new_uint64(cur.wrap));
	json_object_object_add(o, "count", json_object_new_uint64(cur.count));
	return o;
}

struct json_object *lism_json_endpoint(const __u8 addr[16], __u16 port)
{
	char buf[INET6_ADDRSTRLEN];
	struct json_object *o = json_object_new_object();

	lism_fmt_addr(addr, buf, sizeof(buf));
	json_object_object_add(o, "addr", json_object_new_string(buf));
	json_object_object_add(o, "port", json_object_new_int(port));
	return o;
}

struct json_object *lism_json_token(__u64 t)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%016llx", (unsigned long long)t);
	return json_object_new_string(buf);
}

/* This end's CDC-like connection flags by name (LISM_CONN_*), like smc's conn_state_flags. */
static struct json_object *jconn_flags(__u32 flags)
{
	static const struct {
		__u32 bit;
		const char *name;
	} names[] = {
		{ LISM_CONN_DONE_WRITING, "done_writing" },
		{ LISM_CONN_CLOSED, "closed" },
		{ LISM_CONN_ABORT, "abort" },
		{ LISM_CONN_SEEN_BLOCKING, "seen_blocking" },
		{ LISM_CONN_NO_DATA_PATH, "no_data_path" },
		{ LISM_CONN_EXEC, "exec" },
	};
	struct json_object *a = json_object_new_array();

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (flags & names[i].bit)
			json_object_array_add(a, json_object_new_string(names[i].name));
	return a;
}

/* One direction of a ring pair: {"prod", "cons", "doorbells", "eaten", "runs", "state"}. */
static struct json_object *jring_dir(const struct lism_device_ring_dir *d)
{
	struct json_object *o = json_object_new_object(), *st = json_object_new_array();

	json_object_object_add(o, "prod", jcursor(lism_cursor_unpack(d->prod)));
	json_object_object_add(o, "cons", jcursor(lism_cursor_unpack(d->cons)));
	json_object_object_add(o, "doorbells", json_object_new_uint64(d->bells));
	json_object_object_add(o, "eaten", json_object_new_uint64(d->eaten));
	json_object_object_add(o, "runs", json_object_new_uint64(d->runs));
	if (d->state & LISM_RING_DONE_WRITING)
		json_object_array_add(st, json_object_new_string("done_writing"));
	if (d->state & LISM_RING_CLOSED)
		json_object_array_add(st, json_object_new_string("closed"));
	if (d->state & LISM_RING_ABORT)
		json_object_array_add(st, json_object_new_string("abort"));
	if (d->reader_state & LISM_RING_READER_CLOSED)
		json_object_array_add(st, json_object_new_string("reader_closed"));
	json_object_object_add(o, "state", st);
	return o;
}

/* A ring pair's two directions, as this end sees them: "rx" into it, "tx" out of it. */
static struct json_object *jring(const struct lism_conn *c)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "end", json_object_new_int(c->ring_end));
	json_object_object_add(o, "rx", jring_dir(&c->ring.dir[c->ring_end]));
	json_object_object_add(o, "tx", jring_dir(&c->ring.dir[!c->ring_end]));
	return o;
}

struct json_object *lism_conn_json(const struct lism_conn *c)
{
	struct json_object *o = json_object_new_object();
	__u64 sent;
	unsigned int reason;
	enum lism_conn_mode m = lism_conn_mode(c, &reason);
	static const char *const modes[] = { "shortcut", "tcp", "pending", "closed", "ring" };
	static const char *const roles[] = { "none", "active", "passive", "?" };

	json_object_object_add(o, "state", json_object_new_string(lism_tcp_state_name(c->row.tcp_state)));
	json_object_object_add(o, "local", lism_json_endpoint(c->row.laddr, c->row.lport));
	json_object_object_add(o, "peer", lism_json_endpoint(c->row.raddr, c->row.rport));
	json_object_object_add(o, "mode", json_object_new_string(modes[m]));
	json_object_object_add(o, "reason", json_object_new_string(lism_reason_name(reason)));
	json_object_object_add(o, "reason_code", json_object_new_int((int)reason));
	json_object_object_add(o, "role", json_object_new_string(roles[c->row.st.role & 3]));
	json_object_object_add(o, "tx", json_object_new_string(tx_name(&c->row.st)));
	json_object_object_add(o, "sender", json_object_new_string(lism_sender_name(c->row.st.sender)));
	json_object_object_add(o, "token", lism_json_token(c->row.st.token));
	json_object_object_add(o, "peer_token", lism_json_token(c->row.st.peer_token));
	if (c->has_me) {
		struct dmb_view v;

		dmb_view(c, &v);
		json_object_object_add(o, "unread", json_object_new_uint64(v.unread));
		json_object_object_add(o, "dmb_size", json_object_new_uint64(v.size));
		json_object_object_add(o, "prod", jcursor(v.prod));
		json_object_object_add(o, "cons", jcursor(v.cons));
		json_object_object_add(o, "rx_bytes", json_object_new_uint64(v.rx_bytes));
		json_object_object_add(o, "rx_msgs", json_object_new_uint64(c->me.rx_msgs));
		json_object_object_add(o, "tx_tcp_bytes", json_object_new_uint64(c->me.tx_tcp_bytes));
		json_object_object_add(o, "conn_flags", jconn_flags(c->me.conn_flags));
	} else {
		json_object_object_add(o, "unread", json_object_new_uint64(c->row.unread));
	}
	if (tx_bytes(c, &sent))
		json_object_object_add(o, "tx_bytes", json_object_new_uint64(sent));
	if (c->has_ring)
		json_object_object_add(o, "ring", jring(c));
	json_object_object_add(o, "pid", json_object_new_uint64(c->row.pid));
	json_object_object_add(o, "comm", json_object_new_string(c->row.comm));
	json_object_object_add(o, "fd", json_object_new_uint64(c->row.fd));
	json_object_object_add(o, "cookie", json_object_new_uint64(c->row.cookie));
	return o;
}

int lism_conn_matches(const struct lism_conn *c, const struct lism_conns_opts *o)
{
	unsigned int reason;
	enum lism_conn_mode m = lism_conn_mode(c, &reason);

	if (o->port && c->row.lport != o->port && c->row.rport != o->port)
		return 0;
	if (o->state && c->row.tcp_state != o->state - 1)
		return 0;
	switch (o->mode) {
	case LISM_MODE_ANY:
		return 1;
	case LISM_MODE_SHORTCUT:
		return m == LISM_VIEW_SHORTCUT;
	case LISM_MODE_TCP:
		return m == LISM_VIEW_TCP;
	case LISM_MODE_PENDING:
		return m == LISM_VIEW_PENDING;
	case LISM_MODE_RING:
		return m == LISM_VIEW_RING;
	}
	return 1;
}

static int by_ports(const void *a, const void *b)
{
	const struct lism_conn *x = a, *y = b;

	if (x->row.lport != y->row.lport)
		return x->row.lport - y->row.lport;
	if (x->row.rport != y->row.rport)
		return x->row.rport - y->row.rport;
	return x->row.cookie < y->row.cookie ? -1 : x->row.cookie > y->row.cookie;
}

static int by_cookie(const void *a, const void *b)
{
	const struct lism_sock_row *x = a, *y = b;

	return x->cookie < y->cookie ? -1 : x->cookie > y->cookie;
}

static int read_entry(int fd, __u64 token, struct lism_dmb *e)
{
	__u32 slot = (__u32)token;

	return token && !bpf_map_lookup_elem(fd, &slot, e) && e->token == token;
}

/* Run the sockets iterator once: every row, possibly several per socket. */
static int run_iterator(const char *pin_path, struct lism_sock_row **rows, size_t *n)
{
	char path[PATH_MAX];
	size_t cap = 256;
	int prog = -1, link = -1, it = -1, err = 0;
	ssize_t r;

	*n = 0;
	*rows = malloc(cap * sizeof(**rows));
	if (!*rows)
		return -ENOMEM;
	if (lism_pin_join(path, sizeof(path), pin_path, LISM_PIN_PROG_ITER))
		return -ENAMETOOLONG;
	prog = bpf_obj_get(path);
	if (prog < 0) {
		err = -errno;
		goto out;
	}
	link = bpf_link_create(prog, 0, BPF_TRACE_ITER, NULL);
	if (link < 0) {
		err = -errno;
		goto out;
	}
	it = bpf_iter_create(link);
	if (it < 0) {
		err = -errno;
		goto out;
	}
	for (;;) {
		if (*n == cap) {
			struct lism_sock_row *bigger = realloc(*rows, 2 * cap * sizeof(**rows));

			if (!bigger) {
				err = -ENOMEM;
				goto out;
			}
			*rows = bigger;
			cap *= 2;
		}
		r = read(it, &(*rows)[*n], sizeof(**rows));
		if (r == 0)
			break;
		if (r != sizeof(**rows)) {
			err = r < 0 ? -errno : -EIO;
			goto out;
		}
		(*n)++;
	}
out:
	if (it >= 0)
		close(it);
	if (link >= 0)
		close(link);
	if (prog >= 0)
		close(prog);
	return err;
}

/*
 * A task name is whatever bytes PR_SET_NAME was given, cut at 15: control
 * bytes would reach the terminal, and a cut multi-byte character (or any
 * non-UTF-8) would make `conns -j` invalid JSON.  Printable ASCII stays.
 */
void lism_comm_printable(char *comm, size_t len)
{
	for (size_t i = 0; i < len && comm[i]; i++)
		if ((unsigned char)comm[i] < 0x20 || (unsigned char)comm[i] > 0x7e)
			comm[i] = '?';
	if (len)
		comm[len - 1] = '\0';
}

int lism_conns_collect(const struct lism_instance *in, struct lism_conn **out, size_t *n)
{
	struct lism_sock_row *rows;
	struct lism_conn *conns;
	size_t nrows, k = 0;
	int err;

	*out = NULL;
	*n = 0;
	err = run_iterator(in->pin_path, &rows, &nrows);
	if (err) {
		free(rows);
		return err;
	}
	conns = calloc(nrows ? nrows : 1, sizeof(*conns));
	if (!conns) {
		free(rows);
		return -ENOMEM;
	}
	qsort(rows, nrows, sizeof(*rows), by_cookie);
	for (size_t i = 0; i < nrows; i++) {
		if (i && rows[i].cookie == rows[i - 1].cookie)
			continue; /* the same socket in another fd or process */
		conns[k].row = rows[i];
		lism_comm_printable(conns[k].row.comm, sizeof(conns[k].row.comm));
		conns[k].has_me = read_entry(in->dmbs_fd, rows[i].st.token, &conns[k].me);
		conns[k].has_peer = read_entry(in->dmbs_fd, rows[i].st.peer_token, &conns[k].peer);
		k++;
	}
	free(rows);
	qsort(conns, k, sizeof(*conns), by_ports);
	*out = conns;
	*n = k;
	return 0;
}

void lism_conns_ring(struct lism_conn *conns, size_t n, const struct lism_device_report *report)
{
	for (size_t i = 0; i < n; i++) {
		struct lism_conn *c = &conns[i];
		unsigned int reason;

		if (lism_conn_mode(c, &reason) != LISM_VIEW_RING)
			continue;
		for (__u64 k = 0; k < report->n; k++) {
			const struct lism_device_ring *r = &report->ring[k];
			int end = r->token[1] == c->row.st.token;

			if (r->token[end] != c->row.st.token || !report->dmb_size)
				continue;
			c->ring = *r;
			c->ring_end = end;
			c->ring_dmb = report->dmb_size;
			c->has_ring = 1;
			break;
		}
	}
}

/*
 * Whether this process's pid namespace is nested (1), the host's (0), or
 * unknown (-1): /proc/self/status's NSpid has one pid per level.  The
 * sockets iterator walks only the tasks of the namespace that runs it.
 */
int lism_pidns_nested(const char *status_path)
{
	char line[256];
	int nested = -1;
	FILE *f = fopen(status_path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "NSpid:", 6)) {
			int fields = 0;

			for (char *t = strtok(line + 6, " \t\n"); t; t = strtok(NULL, " \t\n"))
				fields++;
			nested = fields > 1;
			break;
		}
	fclose(f);
	return nested;
}

/* Ring pairs' figures from the device, if there are ring pairs; a device that cannot answer is said. */
static void ring_figures(const struct lism_instance *in, struct lism_conn *conns, size_t n, const char *socket_path)
{
	struct lism_device_report *r;
	struct lism_snapshot s;
	unsigned int reason;
	size_t rings = 0;
	int err;

	for (size_t i = 0; i < n; i++)
		rings += lism_conn_mode(&conns[i], &reason) == LISM_VIEW_RING;
	if (!rings)
		return;
	err = lism_device_report(socket_path, &r);
	if (err) {
		if (!lism_snapshot_read(in, &s) && !s.exec_serving)
			fprintf(stderr, "lism: note: no device serves now: ring pairs' cursors are unknown\n");
		else
			fprintf(stderr, "lism: note: ring pairs' cursors are unknown: the device at %s did not answer "
					"(%s)%s\n", socket_path, strerror(-err),
				err == -EACCES ? ": ask as root" : "; --device-socket names another");
		return;
	}
	lism_conns_ring(conns, n, r);
	free(r);
}

int lism_cmd_conns(const struct lism_common_opts *co, const struct lism_conns_opts *o)
{
	struct lism_instance in;
	struct lism_conn *conns;
	char line[512];
	size_t n;
	int err;

	err = lism_instance_open(&in, co->pin_path);
	if (err) {
		lism_err("no lism instance at %s: %s", co->pin_path, strerror(-err));
		return LISM_EXIT_STATE;
	}
	err = lism_layout_check(&in);
	if (!err)
		err = lism_feature_require(co->pin_path, LISM_F_CONNS);
	if (err) {
		lism_instance_close(&in);
		return err;
	}
	if (lism_pidns_nested("/proc/self/status") == 1)
		fprintf(stderr, "lism: note: this is not the host's pid namespace: only the connections of "
				"its own processes are listed (run lism conns on the node, or in a pod with "
				"hostPID)\n");
	err = lism_conns_collect(&in, &conns, &n);
	if (!err)
		ring_figures(&in, conns, n, o->device_socket);
	lism_instance_close(&in);
	if (err) {
		lism_err("reading the connections failed: %s", strerror(-err));
		if (err == -ENOENT)
			lism_hint("the instance predates 'lism conns'; reload it");
		return LISM_EXIT_FAIL;
	}
	if (co->json) {
		struct json_object *arr = json_object_new_array();

		for (size_t i = 0; i < n; i++)
			if (lism_conn_matches(&conns[i], o))
				json_object_array_add(arr, lism_conn_json(&conns[i]));
		puts(json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PLAIN));
		json_object_put(arr);
	} else {
		lism_conn_header(o->wide, line, sizeof(line));
		puts(line);
		for (size_t i = 0; i < n; i++) {
			if (!lism_conn_matches(&conns[i], o))
				continue;
			lism_conn_format(&conns[i], o->wide, line, sizeof(line));
			puts(line);
		}
	}
	free(conns);
	return LISM_EXIT_OK;
}
