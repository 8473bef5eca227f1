/* SPDX-License-Identifier: GPL-2.0-only */
/* lism conns: one row per connection end, like smcss -D. */
#ifndef LISM_CONNS_H
#define LISM_CONNS_H

#include <json-c/json.h>
#include <stddef.h>

#include "cli.h"
#include "device.h"
#include "lism/exec.h"
#include "lism/ring.h"

enum lism_conn_mode {
	LISM_VIEW_SHORTCUT, /* confirmed: sends take the shortcut (or wait in SYNC) */
	LISM_VIEW_TCP,      /* fell back, with a reason */
	LISM_VIEW_PENDING,  /* handshake not finished */
	LISM_VIEW_CLOSED,
	LISM_VIEW_RING,     /* lism exec: confirmed, its bytes through a ring DMB (docs/exec.md) */
};

struct lism_conn {
	struct lism_sock_row row; /* from the sockets iterator */
	struct lism_dmb me;       /* own DMB entry, if has_me */
	struct lism_dmb peer;     /* the peer's, if has_peer */
	int has_me, has_peer;
	/* a ring pair's figures, from the device (lism_conns_ring): dir[ring_end] is this end's DMB */
	struct lism_device_ring ring;
	__u32 ring_dmb;
	int has_ring, ring_end;
};

enum lism_conn_mode lism_conn_mode(const struct lism_conn *c, unsigned int *reason);
/* "shortcut", "tcp:peer-no-lism", "pending", "closed", "ring" */
void lism_conn_mode_str(const struct lism_conn *c, char *buf, size_t len);
/* "127.0.0.1:80" or "[::1]:80" */
void lism_fmt_endpoint(const __u8 addr[16], __u16 port, char *buf, size_t len);
/* The address alone: "127.0.0.1", "::1" (v4-mapped shown as IPv4). */
void lism_fmt_addr(const __u8 addr[16], char *buf, size_t len);
/* {"addr": "127.0.0.1", "port": 80} */
struct json_object *lism_json_endpoint(const __u8 addr[16], __u16 port);
/* "0x8000beef00000007": tokens as strings, JSON numbers lose 64-bit precision */
struct json_object *lism_json_token(__u64 token);
/* header and row, under 80 columns unless @wide */
void lism_conn_header(int wide, char *buf, size_t len);
void lism_conn_format(const struct lism_conn *c, int wide, char *buf, size_t len);
struct json_object *lism_conn_json(const struct lism_conn *c);
/* lism_sk.sender as conns -j shows it: none, watch, queued, joined, tcp */
const char *lism_sender_name(__u8 sender);
int lism_conn_matches(const struct lism_conn *c, const struct lism_conns_opts *o);

/* Every socket lism knows, once each (sorted by ports).  Caller frees *out. */
int lism_conns_collect(const struct lism_instance *in, struct lism_conn **out, size_t *n);

/* Give the ring pairs among @conns their figures from the device's @report. */
void lism_conns_ring(struct lism_conn *conns, size_t n, const struct lism_device_report *report);

/* Replace what is not printable ASCII in a task name with '?' (NUL-terminated within @len). */
void lism_comm_printable(char *comm, size_t len);

/* 1 if the pid namespace of the process whose status is at @status_path is nested, 0 if not, -1 unknown. */
int lism_pidns_nested(const char *status_path);

#endif
