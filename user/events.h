/* SPDX-License-Identifier: GPL-2.0-only */
/* Lifecycle events from the BPF ring buffer: lism events, and the daemon's log. */
#ifndef LISM_EVENTS_H
#define LISM_EVENTS_H

#include <json-c/json.h>
#include <stdio.h>

#include "cli.h"
#include "event_types.h"
#include "lism/abi.h"


/* Event time (bpf_ktime_get_ns, CLOCK_MONOTONIC) as wall clock: ISO 8601 UTC with ms. */
void lism_event_time(__u64 mono_ns, __s64 mono_to_real_ns, char *buf, size_t len);
void lism_event_format(const struct lism_event *ev, __s64 mono_to_real_ns, char *buf, size_t len);
/* Room for the longest event line, text or JSON (tested), with its NUL */
#define LISM_EVENT_LINE_MAX 512

/* One event as a line of JSON (no newline). */
void lism_event_json_line(const struct lism_event *ev, __s64 mono_to_real_ns, char *buf, size_t len);
/* CLOCK_REALTIME - CLOCK_MONOTONIC, now. */
__s64 lism_mono_to_real_ns(void);

struct lism_events;

struct lism_events_opts {
	int json;
	int backlog;            /* also write the events already waiting */
	__u32 types;            /* LISM_EV_TYPE() mask: only these are emitted for this reader */
	unsigned int max_per_s; /* lines a second, the rest counted and said (0: no limit) */
};

/*
 * Follow the ring buffer pinned under @pin_path, writing one line per event
 * of @o->types to @out.  Opening it asks the BPF programs for those events
 * (they emit none while nobody reads) and keeps asking from a thread until
 * lism_events_close(); -EBUSY while another reader holds them.
 */
int lism_events_open(const char *pin_path, const struct lism_events_opts *o, FILE *out,
		     struct lism_events **ev);
/* An fd that becomes readable when many events wait (epoll); poll it with LISM_EVENTS_TICK_MS. */
int lism_events_fd(const struct lism_events *ev);
/* Write what has arrived; call it every LISM_EVENTS_TICK_MS.  The number of events, or -errno (also a failed lease renewal). */
int lism_events_consume(struct lism_events *ev);
void lism_events_close(struct lism_events *ev);

#endif
