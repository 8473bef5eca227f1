// SPDX-License-Identifier: GPL-2.0-only
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "clock.h"
#include "conns.h"
#include "device.h"
#include "events.h"
#include "log.h"
#include "pins.h"
#include "reason.h"
#include "signals.h"

struct lism_events {
	struct ring_buffer *rb;
	int map_fd;
	int readers_fd;
	int lock_fd;          /* flock on the event_readers pin: one reader at a time */
	/* the lease is renewed by a thread of its own, whatever the output does */
	pthread_t renewer;
	int renewing;         /* the thread runs */
	int stop;             /* under mu: the thread's end */
	int renew_err;        /* under mu: its failure, -errno */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int json;
	int discard;
	__u32 types;          /* LISM_EV_TYPE() mask this reader follows */
	unsigned int max_per_s; /* lines per second, 0: no limit */
	__u64 window_ns;      /* start of the current second of the line limit */
	unsigned int lines;   /* written in that second */
	__u64 suppressed;     /* not written in that second */
	FILE *out;
	__s64 mono_to_real;
};

__s64 lism_mono_to_real_ns(void)
{
	struct timespec r, m;

	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_MONOTONIC, &m);
	return ((__s64)r.tv_sec - m.tv_sec) * 1000000000ll + (r.tv_nsec - m.tv_nsec);
}

void lism_event_time(__u64 mono_ns, __s64 mono_to_real_ns, char *buf, size_t len)
{
	/* the date and time of the last second asked for: events come thousands a second */
	static __thread time_t last_sec;
	static __thread int have;
	static __thread char day[32];
	__s64 real = (__s64)mono_ns + mono_to_real_ns, ms = real % 1000000000ll;
	time_t sec = real / 1000000000ll;

	if (ms < 0) { /* before 1970: round down, not toward zero */
		sec--;
		ms += 1000000000ll;
	}
	if (!have || sec != last_sec) {
		struct tm tm;

		gmtime_r(&sec, &tm);
		strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
		last_sec = sec;
		have = 1;
	}
	snprintf(buf, len, "%s.%03dZ", day, (int)(ms / 1000000));
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

/*
 * Written by hand, not built with json-c: at thousands of events a second
 * json-c's objects made a line cost 32 k instructions, this 8 k.  Every
 * string here is lism's own vocabulary or an address: nothing to escape.
 */
void lism_event_json_line(const struct lism_event *ev, __s64 mono_to_real_ns, char *buf, size_t len)
{
	char when[40], local[INET6_ADDRSTRLEN], peer[INET6_ADDRSTRLEN], state[24] = "";

	lism_event_time(ev->ts_ns, mono_to_real_ns, when, sizeof(when));
	lism_fmt_addr(ev->laddr, local, sizeof(local));
	lism_fmt_addr(ev->raddr, peer, sizeof(peer));
	if (ev->type == LISM_EV_REAPED)
		snprintf(state, sizeof(state), ",\"tcp_state\":%u", ev->tcp_state);
	snprintf(buf, len,
		 "{\"time\":\"%s\",\"type\":\"%s\",\"role\":\"%s\",\"reason\":\"%s\",\"reason_code\":%u,"
		 "\"local\":{\"addr\":\"%s\",\"port\":%u},\"peer\":{\"addr\":\"%s\",\"port\":%u},"
		 "\"token\":\"0x%016llx\",\"peer_token\":\"0x%016llx\",\"rx_bytes\":%llu%s}",
		 when, lism_event_name(ev->type), role_name(ev->role), lism_reason_name(ev->reason), ev->reason,
		 local, ev->lport, peer, ev->rport, (unsigned long long)ev->token,
		 (unsigned long long)ev->peer_token, (unsigned long long)ev->rx_bytes, state);
}

/* Say how many lines the limit held back since the window began, if any. */
static void say_suppressed(struct lism_events *ev)
{
	if (ev->suppressed && ev->json)
		fprintf(ev->out, "{\"type\":\"not-logged\",\"count\":%llu,\"limit_per_s\":%u}\n",
			(unsigned long long)ev->suppressed, ev->max_per_s);
	else if (ev->suppressed)
		fprintf(ev->out, "lism: %llu more events in the last second not logged (at most %u a second; "
			"'lism events' shows every event)\n", (unsigned long long)ev->suppressed, ev->max_per_s);
	ev->suppressed = 0;
}

/* Say how many lines the last second's limit held back, once that second is over. */
static void close_window(struct lism_events *ev, __u64 now)
{
	if (now - ev->window_ns < 1000000000ull)
		return;
	say_suppressed(ev);
	ev->window_ns = now;
	ev->lines = 0;
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct lism_events *ev = ctx;
	const struct lism_event *e = data;
	char line[LISM_EVENT_LINE_MAX];

	if (ev->discard || size < sizeof(struct lism_event))
		return 0;
	/* another reader may follow types this one does not */
	if (e->type >= LISM_EV_MAX || !(ev->types & LISM_EV_TYPE(e->type)))
		return 0;
	if (ev->max_per_s) {
		close_window(ev, lism_mono_ns());
		if (ev->lines >= ev->max_per_s) {
			ev->suppressed++;
			return 0;
		}
		ev->lines++;
	}
	if (ev->json) {
		lism_event_json_line(data, ev->mono_to_real, line, sizeof(line));
		fprintf(ev->out, "%s\n", line);
	} else {
		lism_event_format(data, ev->mono_to_real, line, sizeof(line));
		fprintf(ev->out, "%s\n", line);
	}
	return 0;
}

/* Tell the BPF programs which types this reader follows (abi.h): @types until now + the lease, the rest not. */
static int renew(const struct lism_events *ev, __u32 types)
{
	__u64 until, now = lism_mono_ns();

	for (__u32 t = 1; t < LISM_EV_MAX; t++) {
		until = types & LISM_EV_TYPE(t) ? now + LISM_EVENTS_LEASE_NS : 0;
		if (bpf_map_update_elem(ev->readers_fd, &t, &until, BPF_ANY))
			return -errno;
	}
	return 0;
}

/*
 * Renew every tick, apart from the reader: a reader whose output blocks
 * (a paused pager, a full log pipe) still holds its lease, so what it
 * cannot take is counted as lost rather than silently not emitted.
 */
static void *renew_loop(void *arg)
{
	struct lism_events *ev = arg;
	struct timespec at;
	int err = 0;

	pthread_mutex_lock(&ev->mu);
	while (!ev->stop && !err) {
		clock_gettime(CLOCK_MONOTONIC, &at);
		at.tv_nsec += LISM_EVENTS_TICK_MS * 1000000l;
		at.tv_sec += at.tv_nsec / 1000000000l;
		at.tv_nsec %= 1000000000l;
		pthread_cond_timedwait(&ev->cv, &ev->mu, &at);
		if (!ev->stop) {
			pthread_mutex_unlock(&ev->mu);
			err = renew(ev, ev->types);
			pthread_mutex_lock(&ev->mu);
			ev->renew_err = err;
		}
	}
	pthread_mutex_unlock(&ev->mu);
	return NULL;
}

void lism_events_close(struct lism_events *ev)
{
	if (!ev)
		return;
	if (ev->renewing) {
		pthread_mutex_lock(&ev->mu);
		ev->stop = 1;
		pthread_cond_signal(&ev->cv);
		pthread_mutex_unlock(&ev->mu);
		pthread_join(ev->renewer, NULL);
	}
	/* a stop before the second is over: its count is said, not lost */
	say_suppressed(ev);
	/* the only reader leaves: no more events (a crash leaves that to the lease) */
	if (ev->readers_fd >= 0 && ev->lock_fd >= 0)
		renew(ev, 0);
	ring_buffer__free(ev->rb);
	if (ev->readers_fd >= 0)
		close(ev->readers_fd);
	if (ev->map_fd >= 0)
		close(ev->map_fd);
	if (ev->lock_fd >= 0)
		close(ev->lock_fd); /* releases the flock */
	pthread_cond_destroy(&ev->cv);
	pthread_mutex_destroy(&ev->mu);
	free(ev);
}

int lism_events_open(const char *pin_path, const struct lism_events_opts *o, FILE *out,
		     struct lism_events **evp)
{
	char path[PATH_MAX];
	struct lism_events *ev;
	int err;

	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	ev->map_fd = ev->readers_fd = ev->lock_fd = -1;
	pthread_mutex_init(&ev->mu, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&ev->cv, &ca);
		pthread_condattr_destroy(&ca);
	}
	ev->json = o->json;
	ev->types = o->types & LISM_EV_ALL;
	ev->max_per_s = o->max_per_s;
	ev->out = out;
	ev->mono_to_real = lism_mono_to_real_ns();
	ev->window_ns = lism_mono_ns();
	ev->map_fd = err = lism_pin_open(pin_path, "events");
	if (err < 0)
		goto fail;
	ev->readers_fd = err = lism_pin_open(pin_path, "event_readers");
	if (err < 0)
		goto fail;
	err = -ENAMETOOLONG;
	if (lism_pin_join(path, sizeof(path), pin_path, "event_readers"))
		goto fail;
	/*
	 * A ring buffer has one consumer position: two readers would split the
	 * events between them (and race on it).  The pin's flock (bpffs opens
	 * a map pin that has BTF, as this one does) goes with the process,
	 * however it ends.
	 */
	err = lism_flock(path, 0);
	if (err < 0) {
		err = err == -EWOULDBLOCK ? -EBUSY : err;
		goto fail;
	}
	ev->lock_fd = err;
	ev->rb = ring_buffer__new(ev->map_fd, on_event, ev, NULL);
	err = -errno;
	if (!ev->rb)
		goto fail;
	if (!o->backlog) { /* what was there before is old news */
		ev->discard = 1;
		ring_buffer__consume(ev->rb);
		ev->discard = 0;
	}
	err = renew(ev, ev->types);
	if (err)
		goto fail;
	err = -pthread_create(&ev->renewer, NULL, renew_loop, ev);
	if (err)
		goto fail;
	ev->renewing = 1;
	*evp = ev;
	return 0;
fail:
	lism_events_close(ev);
	return err;
}

int lism_events_fd(const struct lism_events *ev)
{
	return ring_buffer__epoll_fd(ev->rb);
}

int lism_events_consume(struct lism_events *ev)
{
	int err, n;

	pthread_mutex_lock(&ev->mu);
	err = ev->renew_err;
	pthread_mutex_unlock(&ev->mu);
	if (err)
		return err;
	n = ring_buffer__consume(ev->rb);
	if (ev->max_per_s)
		close_window(ev, lism_mono_ns());
	fflush(ev->out);
	return n;
}

int lism_cmd_events(const struct lism_common_opts *co, const struct lism_follow_opts *o)
{
	struct lism_events *ev;
	struct pollfd p[2];
	int err = 0, sfd;

	sfd = lism_stop_signals_fd();
	if (sfd < 0) {
		lism_err("signalfd failed: %s", strerror(-sfd));
		return LISM_EXIT_FAIL;
	}
	struct lism_events_opts eo = { .json = co->json, .backlog = o->all, .types = o->types };
	struct lism_instance in;

	/* the events' layout is this build's only if the instance's is */
	if (!lism_instance_open(&in, co->pin_path)) {
		err = lism_layout_check(&in);
		lism_instance_close(&in);
		if (err) {
			close(sfd);
			return err;
		}
	}
	err = lism_events_open(co->pin_path, &eo, stdout, &ev);
	if (err) {
		lism_err("opening the events of %s failed: %s", co->pin_path, strerror(-err));
		if (err == -EBUSY)
			lism_hint("another reader follows them (lism run --log-events, or another lism events); "
				  "events go to one reader at a time");
		if (err == -ENOENT)
			lism_hint("is lism loaded there? see 'lism status --pin-path %s'", co->pin_path);
		close(sfd);
		if (err == -EPERM || err == -EACCES)
			return LISM_EXIT_ENV; /* privileges */
		return err == -EBUSY || err == -ENOENT ? LISM_EXIT_STATE : LISM_EXIT_FAIL;
	}
	p[0] = (struct pollfd){ .fd = sfd, .events = POLLIN };
	p[1] = (struct pollfd){ .fd = lism_events_fd(ev), .events = POLLIN };
	for (;;) {
		/* events wake us only in bulk: drain on a tick as well */
		int n = poll(p, 2, LISM_EVENTS_TICK_MS);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		n = lism_events_consume(ev);
		if (n < 0) {
			err = n;
			break;
		}
		if (p[0].revents)
			break;
	}
	lism_events_close(ev);
	close(sfd);
	if (err) {
		lism_err("reading events failed: %s", strerror(-err));
		return LISM_EXIT_FAIL;
	}
	return LISM_EXIT_OK;
}
