// SPDX-License-Identifier: GPL-2.0-only
/*
 * lism run: the foreground daemon for systemd or a Kubernetes DaemonSet.
 * Loads lism (or adopts the instance already pinned), serves Prometheus
 * metrics and /healthz over HTTP (libmicrohttpd, its own thread), logs
 * lifecycle events, and exits cleanly on SIGTERM/SIGINT.  lism keeps
 * working while the daemon is gone; it is only unloaded with
 * --unload-on-exit.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "daemon.h"
#include "device.h"
#include "events.h"
#include "fastpath.h"
#include "loader.h"
#include "log.h"
#include "metrics.h"
#include "pins.h"
#include "signals.h"
#include "summary.h"

#define XDP_RESCAN_S 2
#define LOG_EVENTS_PER_S 100 /* a busy node's log stays readable; lism events shows everything */

struct http_ctx {
	const char *pin_path;
	/* /metrics reads at most once a second, whatever scrapes and probes do */
	struct lism_snapshot cached;
	double cached_at;
	int cached_ok;
};

static int parse_addr(const char *s, struct sockaddr_storage *ss)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon = strrchr(s, ':');
	size_t hl = (size_t)(colon - s);
	int port = atoi(colon + 1);

	memcpy(host, s, hl);
	host[hl] = '\0';
	memset(ss, 0, sizeof(*ss));
	if (host[0] == '[') {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		host[hl - 1] = '\0';
		a->sin6_family = AF_INET6;
		a->sin6_port = htons(port);
		return inet_pton(AF_INET6, host + 1, &a->sin6_addr) == 1 ? 0 : -EINVAL;
	}
	struct sockaddr_in *a = (struct sockaddr_in *)ss;

	a->sin_family = AF_INET;
	a->sin_port = htons(port);
	return inet_pton(AF_INET, host, &a->sin_addr) == 1 ? 0 : -EINVAL;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned int status, const char *type,
			     char *body, size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;

	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned int status, const char *text)
{
	return reply(c, status, "text/plain; charset=utf-8", strdup(text), strlen(text));
}

/* Read the instance fresh for every request: nothing cached, nothing stale. */
static int snapshot(const char *pin_path, struct lism_snapshot *s)
{
	struct lism_instance in;
	int err = lism_instance_open(&in, pin_path);

	if (err)
		return err;
	err = lism_snapshot_read(&in, s);
	lism_instance_close(&in);
	return err;
}

/* Cheap enough for a liveness probe: the device record and the link pin. */
static int healthy(const char *pin_path, const char **why)
{
	struct lism_instance in;
	struct lism_device d;
	char link[PATH_MAX];
	int err = lism_instance_open(&in, pin_path);

	if (!err) {
		err = lism_device_read(&in, &d);
		lism_instance_close(&in);
	}
	if (err) {
		*why = "lism instance unreadable\n";
		return 0;
	}
	if (lism_pin_join(link, sizeof(link), pin_path, LISM_PIN_LINK_SOCKOPS) || access(link, F_OK)) {
		*why = "lism is not attached\n";
		return 0;
	}
	return 1;
}

/*
 * Requests are served by MHD's single internal thread, one at a time: the
 * cache is only ever touched there.
 */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct http_ctx *ctx = cls;
	const char *why;
	char *body = NULL;
	__u64 xdp[LISM_XDP_STAT_MAX];
	size_t len = 0;
	FILE *f;

	(void)version;
	(void)upload;
	(void)upload_size;
	(void)con_cls;
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET\n");
	if (!strcmp(url, "/healthz")) {
		if (!healthy(ctx->pin_path, &why))
			return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, why);
		return reply_text(c, MHD_HTTP_OK, "ok\n");
	}
	if (strcmp(url, "/metrics"))
		return reply_text(c, MHD_HTTP_NOT_FOUND, "try /metrics or /healthz\n");
	if (!ctx->cached_ok || lism_mono_s() - ctx->cached_at >= 1.0) {
		ctx->cached_ok = !snapshot(ctx->pin_path, &ctx->cached);
		ctx->cached_at = lism_mono_s();
	}
	if (!ctx->cached_ok)
		return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "lism instance unreadable\n");
	f = open_memstream(&body, &len);
	if (!f)
		return MHD_NO;
	lism_metrics_write(f, &ctx->cached, LISM_VERSION);
	if (!lism_fastpath_stats(ctx->pin_path, xdp))
		lism_metrics_write_xdp(f, xdp);
	fclose(f);
	return reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", body, len);
}

static int load_fresh(const struct lism_opts *o, int *loaded)
{
	int err = lism_cmd_load(o);

	*loaded = !err;
	return err;
}

/*
 * The fast path on new veths, under the pin lock: an unload detaches the
 * fast path and then unlinks its pins, and a rescan in between would
 * attach programs nothing removes any more.  While a load or an unload
 * holds the lock (or the directory is gone) it waits for the next rescan.
 * lism_fastpath_sync()'s result otherwise (-EPERM: no CAP_SYS_ADMIN).
 */
static int fastpath_rescan(const struct lism_opts *o)
{
	int lockfd = lism_pin_trylock(o->pin_path), err;

	if (lockfd == -EWOULDBLOCK || lockfd == -ENOENT)
		return 0;
	if (lockfd < 0)
		return lockfd;
	err = lism_fastpath_sync(o->pin_path, o->xdp_ifaces, 1);
	close(lockfd);
	return err;
}

/*
 * An instance already pinned there: adopt it (after a crash or an upgrade
 * of the daemon).  Looked at under the pin lock: an unload (a pod on its
 * way out) must not see the device change, nor remove what is adopted.
 */
static int adopt_or_load(const struct lism_opts *o, int *loaded)
{
	struct lism_instance in;
	struct lism_device d;
	int err, lockfd, ret, unfinished = 0;

	*loaded = 0;
	lockfd = lism_pin_lock(o->pin_path);
	if (lockfd == -ENOENT)
		return load_fresh(o, loaded);
	if (lockfd < 0) {
		lism_err("locking %s failed: %s", o->pin_path, strerror(-lockfd));
		if (lockfd == -EWOULDBLOCK)
			lism_hint("another lism is loading or unloading there (a pod still draining?): "
				  "start again once it is done");
		return LISM_EXIT_STATE;
	}
	err = lism_instance_open(&in, o->pin_path);
	if (err == -ENOENT) { /* the directory without an instance (a fast path's pins alone) */
		close(lockfd);
		return load_fresh(o, loaded);
	}
	if (err) {
		close(lockfd);
		lism_err("opening the pins at %s failed: %s", o->pin_path, strerror(-err));
		return LISM_EXIT_STATE;
	}
	err = lism_device_read(&in, &d);
	if (!err && d.layout == 0) {
		unfinished = 1; /* a load killed midway (the OOM killer during the verifier) */
		ret = LISM_EXIT_OK;
		goto out;
	}
	if (err || d.layout != LISM_LAYOUT_VERSION) {
		lism_err("the pins at %s are not of this lism's layout", o->pin_path);
		ret = LISM_EXIT_STATE;
		goto out;
	}
	printf("lism: adopting the instance pinned at %s (attached to %s)\n", o->pin_path, d.cgroup);
	if (!d.active && (d.flags & LISM_DEV_F_DRAINING)) {
		/* left draining by an unload that timed out, or by a preStop: this daemon takes over */
		d.active = 1;
		d.flags &= ~LISM_DEV_F_DRAINING;
		err = lism_device_write(&in, &d);
		if (err) {
			lism_err("switching the adopted device on failed: %s", strerror(-err));
			ret = LISM_EXIT_FAIL;
			goto out;
		}
		printf("lism: it was left draining (an unload that timed out, or a preStop): switched on again\n");
	} else if (!d.active) {
		printf("lism: it is switched off ('lism set active off'): new connections stay on TCP "
		       "until 'lism set active on'\n");
	}
	ret = LISM_EXIT_OK;
out:
	close(lockfd);
	lism_instance_close(&in);
	if (unfinished) {
		ret = lism_cmd_unload(o); /* says what it removes */
		if (!ret)
			ret = load_fresh(o, loaded);
	} else if (!ret && lism_upgrade(o)) {
		/*
		 * This build's programs over the adopted state (a new image on a
		 * node whose connections outlived the old pod).  If that fails,
		 * the instance's own programs keep working.
		 */
		lism_err("the adopted instance keeps the programs it had");
	}
	return ret;
}

/*
 * Where summaries and events go: standard output.  With -j only they do:
 * standard output then carries nothing but JSON lines, and every other
 * message of the daemon (and of the load it runs) goes to standard error.
 */
static FILE *log_out;

/* -j: the log keeps standard output's file; stdout itself writes to standard error from now on. */
static int json_log_setup(void)
{
	int fd;

	fflush(stdout);
	fd = dup(STDOUT_FILENO);
	if (fd < 0)
		return -errno;
	log_out = fdopen(fd, "w");
	if (!log_out) {
		close(fd);
		return -errno;
	}
	setvbuf(log_out, NULL, _IOLBF, 0);
	if (dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
		return -errno;
	return 0;
}

/* The periodic summary: what moved since the last one, only if something did. */
static void log_summary(const char *pin_path, int json, struct lism_snapshot *prev, int *have_prev,
			double *last_s)
{
	static struct lism_snapshot cur; /* large; only the main thread logs */
	struct lism_summary sum;
	double now = lism_mono_s();
	char line[1024];

	if (snapshot(pin_path, &cur)) {
		*have_prev = 0; /* unreadable for now (an unload in progress): start over */
		*last_s = now;  /* and try at the next interval, not at once */
		return;
	}
	if (*have_prev && lism_summary_diff(prev, &cur, (unsigned int)(now - *last_s + 0.5), &sum)) {
		if (json) {
			struct json_object *j = lism_summary_json(&sum);

			lism_event_time((__u64)(now * 1e9), lism_mono_to_real_ns(), line, sizeof(line));
			json_object_object_add(j, "time", json_object_new_string(line));
			fprintf(log_out, "%s\n", json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN));
			json_object_put(j);
		} else {
			lism_summary_format(&sum, line, sizeof(line));
			fprintf(log_out, "%s\n", line);
		}
		fflush(log_out);
	}
	*prev = cur;
	*have_prev = 1;
	*last_s = now;
}

enum follow { FOLLOWING, HELD, FAILING }; /* the events the daemon logs: how it stands with them */

/*
 * Follow the events to log.  At the start a failure is fatal (a wrong
 * setup); later, another reader holding them (lism events) or an instance
 * being replaced is said once and tried again on every tick: a daemon must
 * not die of it.
 */
static int follow_events(const char *pin_path, const struct lism_events_opts *eo, struct lism_events **ev,
			 enum follow *st, int starting)
{
	int err = lism_events_open(pin_path, eo, log_out, ev);

	if (!err) {
		if (*st != FOLLOWING)
			printf("lism: following the events again\n");
		*st = FOLLOWING;
		fflush(stdout);
		return 0;
	}
	if (err == -EBUSY) {
		if (*st != HELD)
			printf("lism: another reader follows the events (lism events?); logging them once it "
			       "has gone\n");
		*st = HELD;
		fflush(stdout);
		return 0;
	}
	if (starting) {
		lism_err("following the events failed: %s", strerror(-err));
		return LISM_EXIT_FAIL;
	}
	if (*st != FAILING)
		lism_err("following the events failed: %s; trying again", strerror(-err));
	*st = FAILING;
	fflush(stdout);
	return 0;
}

/* @next: the earliest of the deadlines seen so far (@have: any yet). */
static void earliest(double *next, int *have, double t)
{
	if (!*have || t < *next)
		*next = t;
	*have = 1;
}

int lism_cmd_run(const struct lism_opts *o)
{
	static struct http_ctx ctx; /* large (a snapshot); lives as long as the HTTP thread */
	static struct lism_snapshot prev;
	struct lism_events_opts eo = { .json = o->json, .types = o->event_types, .max_per_s = LOG_EVENTS_PER_S };
	struct lism_events *ev = NULL;
	struct MHD_Daemon *http = NULL;
	struct sockaddr_storage sa;
	struct pollfd p[2];
	int ret, sfd = -1, stop = 0, loaded = 0, started = 0, have_prev = 0;
	enum follow follow = FOLLOWING;
	int xdp_on = !!o->xdp_ifaces[0];
	double now, last_summary, last_xdp;
	char types[128];

	log_out = stdout;
	if (o->json && (ret = json_log_setup())) {
		lism_err("setting up the JSON log failed: %s", strerror(-ret));
		return LISM_EXIT_FAIL;
	}
	/* blocked before anything else: a SIGTERM during the load waits until it is whole */
	sfd = lism_stop_signals_fd();
	if (sfd < 0) {
		lism_err("signalfd failed: %s", strerror(-sfd));
		return LISM_EXIT_FAIL;
	}
	memset(&ctx, 0, sizeof(ctx));
	ctx.pin_path = o->pin_path;
	ret = adopt_or_load(o, &loaded);
	if (ret) {
		close(sfd);
		return ret;
	}
	if (parse_addr(o->metrics_addr, &sa)) {
		lism_err("--metrics-addr %s is not ADDR:PORT", o->metrics_addr);
		ret = LISM_EXIT_USAGE;
		goto out;
	}
	http = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG |
					(sa.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
				0, NULL, NULL, on_request, &ctx, MHD_OPTION_SOCK_ADDR, &sa,
				MHD_OPTION_CONNECTION_LIMIT, 32u, MHD_OPTION_CONNECTION_TIMEOUT, 10u,
				MHD_OPTION_END);
	if (!http) {
		lism_err("serving metrics on %s failed (address in use, or not local?)", o->metrics_addr);
		lism_hint("choose another --metrics-addr");
		ret = LISM_EXIT_FAIL;
		goto out;
	}
	/* the BPF programs emit only the events somebody follows (abi.h) */
	ret = o->event_types ? follow_events(o->pin_path, &eo, &ev, &follow, 1) : 0;
	if (ret)
		goto out;
	if (xdp_on && fastpath_rescan(o) == -EPERM)
		xdp_on = 0; /* said why (CAP_SYS_ADMIN); retrying would only repeat it */
	if (o->log_interval_s)
		log_summary(o->pin_path, o->json, &prev, &have_prev, &last_summary);
	lism_event_types_format(o->event_types, types, sizeof(types));
	printf("lism: running; metrics at http://%s/metrics, health at /healthz; logging events: %s",
	       o->metrics_addr, types);
	if (o->log_interval_s)
		printf(", a summary every %u s\n", o->log_interval_s);
	else
		printf("\n");
	fflush(stdout);
	started = 1;
	last_xdp = last_summary = lism_mono_s();
	p[0] = (struct pollfd){ .fd = sfd, .events = POLLIN };
	p[1] = (struct pollfd){ .fd = -1, .events = POLLIN };
	while (!stop) {
		/* until the next of: the events' tick, the XDP rescan, the summary (overdue: 0) */
		double next = 0;
		int n, have = 0;

		now = lism_mono_s();
		if (o->event_types)
			earliest(&next, &have, now + LISM_EVENTS_TICK_MS / 1000.0);
		if (xdp_on)
			earliest(&next, &have, last_xdp + XDP_RESCAN_S);
		if (o->log_interval_s)
			earliest(&next, &have, last_summary + o->log_interval_s);
		p[1].fd = ev ? lism_events_fd(ev) : -1;
		n = poll(p, 2, !have ? -1 : next <= now ? 0 : (int)((next - now) * 1000) + 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			lism_err("poll failed: %s", strerror(errno));
			ret = LISM_EXIT_FAIL;
			goto out;
		}
		now = lism_mono_s();
		if (o->event_types && !ev)
			follow_events(o->pin_path, &eo, &ev, &follow, 0);
		if (ev && (n = lism_events_consume(ev)) < 0) {
			lism_err("reading the events failed: %s; following them anew", strerror(-n));
			lism_events_close(ev);
			ev = NULL;
			follow = FAILING;
		}
		/* pods come and go: new veths matching --iface get the fast path */
		if (xdp_on && now - last_xdp >= XDP_RESCAN_S) {
			if (fastpath_rescan(o) == -EPERM)
				xdp_on = 0;
			last_xdp = now;
			fflush(stdout);
		}
		if (o->log_interval_s && now - last_summary >= o->log_interval_s)
			log_summary(o->pin_path, o->json, &prev, &have_prev, &last_summary);
		if (p[0].revents) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				printf("lism: %s, stopping\n", strsignal((int)si.ssi_signo));
				stop = 1;
			}
		}
	}
	if (ev)
		lism_events_consume(ev);
	ret = LISM_EXIT_OK;
out:
	if (http)
		MHD_stop_daemon(http);
	lism_events_close(ev);
	if (sfd >= 0)
		close(sfd);
	fflush(stdout);
	if (ret == LISM_EXIT_OK && o->unload_on_exit) {
		ret = lism_cmd_unload(o);
	} else if (!started && loaded) {
		/* it never ran: do not leave behind what this failed start loaded */
		struct lism_opts u = *o;

		u.timeout_s = 0;
		u.force = 1;
		lism_cmd_unload(&u);
	} else if (ret == LISM_EXIT_OK) {
		printf("lism: left loaded at %s (the data path keeps working)\n", o->pin_path);
	}
	return ret;
}
