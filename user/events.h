/* SPDX-License-Identifier: GPL-2.0-only */
/* Lifecycle events from the BPF ring buffer: lism events, and the daemon's log. */
#ifndef LISM_EVENTS_H
#define LISM_EVENTS_H

#include <json-c/json.h>
#include <stdio.h>

#include "cli.h"
#include "lism/abi.h"

const char *lism_event_name(unsigned int type);
/* Event time (bpf_ktime_get_ns, CLOCK_MONOTONIC) as wall clock: ISO 8601 UTC with ms. */
void lism_event_time(__u64 mono_ns, __s64 mono_to_real_ns, char *buf, size_t len);
void lism_event_format(const struct lism_event *ev, __s64 mono_to_real_ns, char *buf, size_t len);
struct json_object *lism_event_json(const struct lism_event *ev, __s64 mono_to_real_ns);
/* CLOCK_REALTIME - CLOCK_MONOTONIC, now. */
__s64 lism_mono_to_real_ns(void);

struct lism_events;

/*
 * Follow the ring buffer pinned under @pin_path, writing one line per event
 * to @out.  Events already waiting are skipped unless @backlog.
 */
int lism_events_open(const char *pin_path, int json, int backlog, FILE *out, struct lism_events **ev);
/* An fd that becomes readable when events arrive (epoll). */
int lism_events_fd(const struct lism_events *ev);
/* Write what has arrived; returns the number of events or -errno. */
int lism_events_consume(struct lism_events *ev);
void lism_events_close(struct lism_events *ev);

int lism_cmd_events(const struct lism_opts *o);

#endif
