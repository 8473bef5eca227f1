// SPDX-License-Identifier: GPL-2.0-only
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "conns.h"
#include "events.h"
#include "log.h"
#include "pins.h"
#include "reason.h"
#include "signals.h"

struct lism_events {
	struct ring_buffer *rb;
	int map_fd;
	int json;
	int discard;
	FILE *out;
	__s64 mono_to_real;
};

const char *lism_event_name(unsigned int type)
{
	static const char *const names[] = { "?", "confirm", "fallback", "close", "limit", "abort", "reaped" };

	return type < sizeof(names) / sizeof(names[0]) ? names[type] : "?";
}

__s64 lism_mono_to_real_ns(void)
{
	struct timespec r, m;

	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_MONOTONIC, &m);
	return ((__s64)r.tv_sec - m.tv_sec) * 1000000000ll + (r.tv_nsec - m.tv_nsec);
}

void lism_event_time(__u64 mono_ns, __s64 mono_to_real_ns, char *buf, size_t len)
{
	__s64 real = (__s64)mono_ns + mono_to_real_ns;
	time_t sec = real / 1000000000ll;
	struct tm tm;
	char day[32];

	gmtime_r(&sec, &tm);
	strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03dZ", day, (int)((real % 1000000000ll) / 1000000));
}

static const char *role_name(__u8 role)
{
	return role == LISM_ROLE_ACTIVE ? "active" : role == LISM_ROLE_PASSIVE ? "passive" : "-";
}

void lism_event_format(const struct lism_event *ev, __s64 mono_to_real_ns, char *buf, size_t len)
{
	char when[40], local[64], peer[64];
	int n;

	lism_event_time(ev->ts_ns, mono_to_real_ns, when, sizeof(when));
	lism_fmt_endpoint(ev->laddr, ev->lport, local, sizeof(local));
	lism_fmt_endpoint(ev->raddr, ev->rport, peer, sizeof(peer));
	n = snprintf(buf, len, "%s %-8s %-7s %s -> %s token %016llx peer %016llx", when,
		     lism_event_name(ev->type), role_name(ev->role), local, peer,
		     (unsigned long long)ev->token, (unsigned long long)ev->peer_token);
	if (n < 0 || (size_t)n >= len)
		return;
	if (ev->type == LISM_EV_FALLBACK || ev->type == LISM_EV_LIMIT)
		snprintf(buf + n, len - n, " reason %s", lism_reason_name(ev->reason));
	else if (ev->type == LISM_EV_CLOSE || ev->type == LISM_EV_ABORT)
		snprintf(buf + n, len - n, " rx_bytes %llu", (unsigned long long)ev->rx_bytes);
	else if (ev->type == LISM_EV_REAPED)
		snprintf(buf + n, len - n, " rx_bytes %llu tcp_state %u", (unsigned long long)ev->rx_bytes,
			 ev->tcp_state);
}

struct json_object *lism_event_json(const struct lism_event *ev, __s64 mono_to_real_ns)
{
	struct json_object *o = json_object_new_object();
	char when[40];

	lism_event_time(ev->ts_ns, mono_to_real_ns, when, sizeof(when));
	json_object_object_add(o, "time", json_object_new_string(when));
	json_object_object_add(o, "type", json_object_new_string(lism_event_name(ev->type)));
	json_object_object_add(o, "role", json_object_new_string(role_name(ev->role)));
	json_object_object_add(o, "reason", json_object_new_string(lism_reason_name(ev->reason)));
	json_object_object_add(o, "reason_code", json_object_new_int(ev->reason));
	json_object_object_add(o, "local", lism_json_endpoint(ev->laddr, ev->lport));
	json_object_object_add(o, "peer", lism_json_endpoint(ev->raddr, ev->rport));
	json_object_object_add(o, "token", lism_json_token(ev->token));
	json_object_object_add(o, "peer_token", lism_json_token(ev->peer_token));
	json_object_object_add(o, "rx_bytes", json_object_new_uint64(ev->rx_bytes));
	if (ev->type == LISM_EV_REAPED)
		json_object_object_add(o, "tcp_state", json_object_new_int(ev->tcp_state));
	return o;
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct lism_events *ev = ctx;
	char line[512];

	if (ev->discard || size < sizeof(struct lism_event))
		return 0;
	if (ev->json) {
		struct json_object *j = lism_event_json(data, ev->mono_to_real);

		fprintf(ev->out, "%s\n", json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN));
		json_object_put(j);
	} else {
		lism_event_format(data, ev->mono_to_real, line, sizeof(line));
		fprintf(ev->out, "%s\n", line);
	}
	fflush(ev->out);
	return 0;
}

int lism_events_open(const char *pin_path, int json, int backlog, FILE *out, struct lism_events **evp)
{
	char path[PATH_MAX];
	struct lism_events *ev;
	int err;

	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	ev->json = json;
	ev->out = out;
	ev->mono_to_real = lism_mono_to_real_ns();
	if (lism_pin_join(path, sizeof(path), pin_path, "events")) {
		free(ev);
		return -ENAMETOOLONG;
	}
	ev->map_fd = bpf_obj_get(path);
	if (ev->map_fd < 0) {
		err = -errno;
		free(ev);
		return err;
	}
	ev->rb = ring_buffer__new(ev->map_fd, on_event, ev, NULL);
	if (!ev->rb) {
		err = -errno;
		close(ev->map_fd);
		free(ev);
		return err;
	}
	if (!backlog) { /* what piled up while nobody listened is old news */
		ev->discard = 1;
		ring_buffer__consume(ev->rb);
		ev->discard = 0;
	}
	*evp = ev;
	return 0;
}

int lism_events_fd(const struct lism_events *ev)
{
	return ring_buffer__epoll_fd(ev->rb);
}

int lism_events_consume(struct lism_events *ev)
{
	return ring_buffer__consume(ev->rb);
}

void lism_events_close(struct lism_events *ev)
{
	if (!ev)
		return;
	ring_buffer__free(ev->rb);
	close(ev->map_fd);
	free(ev);
}

int lism_cmd_events(const struct lism_opts *o)
{
	struct lism_events *ev;
	struct pollfd p[2];
	int err = 0, sfd;

	sfd = lism_stop_signals_fd();
	if (sfd < 0) {
		lism_err("signalfd failed: %s", strerror(-sfd));
		return LISM_EXIT_FAIL;
	}
	err = lism_events_open(o->pin_path, o->json, o->all_events, stdout, &ev);
	if (err) {
		lism_err("opening the events of %s failed: %s", o->pin_path, strerror(-err));
		if (err == -ENOENT)
			lism_hint("is lism loaded there? see 'lism status --pin-path %s'", o->pin_path);
		close(sfd);
		return LISM_EXIT_STATE;
	}
	p[0] = (struct pollfd){ .fd = sfd, .events = POLLIN };
	p[1] = (struct pollfd){ .fd = lism_events_fd(ev), .events = POLLIN };
	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (p[1].revents && lism_events_consume(ev) < 0) {
			err = -errno;
			break;
		}
		if (p[0].revents)
			break;
	}
	lism_events_consume(ev);
	lism_events_close(ev);
	close(sfd);
	if (err) {
		lism_err("reading events failed: %s", strerror(-err));
		return LISM_EXIT_FAIL;
	}
	return LISM_EXIT_OK;
}
