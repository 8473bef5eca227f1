// SPDX-License-Identifier: GPL-2.0-only
/*
 * lism run: the foreground daemon for systemd or a Kubernetes DaemonSet.
 * Serves Prometheus metrics, /healthz (readiness) and /livez (liveness)
 * over HTTP (libmicrohttpd, its own thread) from the start, then loads lism
 * (or adopts the instance already pinned, applying its own settings where
 * the instance can take them).  Where lism cannot load, the daemon stays
 * up, not ready, says why, and tries again later: an optional accelerator
 * must not crash-loop on nodes it cannot accelerate.  With --local-routes
 * it keeps the scope on this node's pods as they come and go (routes.h);
 * it logs summaries and lifecycle events, and exits cleanly on
 * SIGTERM/SIGINT.  lism keeps working while the daemon is gone; it is only
 * unloaded with --unload-on-exit.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "broker.h"
#include "clock.h"
#include "device.h"
#include "events.h"
#include "feature.h"
#include "commands.h"
#include "library.h"
#include "load.h"
#include "unload.h"
#include "log.h"
#include "metrics.h"
#include "pins.h"
#include "probe.h"
#include "routes.h"
#include "settings.h"
#include "signals.h"
#include "summary.h"

#define LOG_EVENTS_PER_S 100 /* a busy node's log stays readable; lism events shows everything */

/* Where the daemon stands with the instance: what /healthz and /metrics tell. */
enum run_state {
	RUN_LOADING, /* the first load or adoption is under way */
	RUN_READY,   /* loaded or adopted: lism runs on this node */
	RUN_IDLE,    /* it could not: the reason is kept, a new attempt is due at next_attempt */
};

static const char *const run_state_names[] = { "loading", "ready", "idle" };

struct http_ctx {
	const char *pin_path;
	/* shared with the main thread: under lock */
	pthread_mutex_t lock;
	enum run_state state;
	char reason[512];          /* RUN_IDLE: why (the load's first error) */
	struct lism_feature_state probed[LISM_F_MAX]; /* RUN_IDLE: the probe's verdicts */
	double next_attempt;       /* RUN_IDLE: mono s */
	unsigned long long attempts, failures;
	char not_applied[128];     /* settings the adopted instance kept (settings.h) */
	int route_entries;         /* --local-routes: the scope's entries from routes; -1: off */
	double heartbeat;          /* mono s: the main loop's last turn */
	double attempt_since;      /* mono s: when the load or adoption under way began; 0: none */
	int first_done;            /* the first attempt has ended (the startup probe's signal) */
	struct lism_broker *broker; /* lism exec's device, while it serves */
	/* the HTTP thread's own: /metrics reads at most once a second */
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

#define LIVEZ_STALE_S 60.0 /* the main loop turns at least every HEARTBEAT_S */
#define HEARTBEAT_S 10.0
#define ATTEMPT_MAX_S 300.0 /* a load (the verifier, the probe) that takes longer is stuck */

/* The daemon's own figures, whatever the instance's state. */
static void daemon_metrics(FILE *f, struct http_ctx *ctx)
{
	fprintf(f, "# HELP lism_up 1 if lism is loaded and attached on this node (the pod is ready); 0 if "
		   "not: lism_not_running_info says why.\n# TYPE lism_up gauge\nlism_up %d\n",
		ctx->state == RUN_READY);
	fprintf(f, "# HELP lism_daemon_state The daemon's state: loading, ready, or idle (lism could not "
		   "load; it tries again).\n# TYPE lism_daemon_state gauge\n");
	for (int i = 0; i <= RUN_IDLE; i++)
		fprintf(f, "lism_daemon_state{state=\"%s\"} %d\n", run_state_names[i], (int)ctx->state == i);
	fprintf(f, "# HELP lism_load_attempts_total Loads or adoptions the daemon tried.\n"
		   "# TYPE lism_load_attempts_total counter\nlism_load_attempts_total %llu\n",
		ctx->attempts);
	fprintf(f, "# HELP lism_load_failures_total Of those, the ones that failed.\n"
		   "# TYPE lism_load_failures_total counter\nlism_load_failures_total %llu\n",
		ctx->failures);
	if (ctx->state != RUN_READY) /* while ready, the instance's metrics have it */
		fprintf(f, "# HELP lism_build_info Build of the lism control plane serving these metrics.\n"
			   "# TYPE lism_build_info gauge\nlism_build_info{version=\"%s\",layout=\"%u\"} 1\n",
			LISM_VERSION, LISM_LAYOUT_VERSION);
	if (ctx->state == RUN_IDLE) {
		fprintf(f, "# HELP lism_not_running_info Why lism does not run on this node.\n"
			   "# TYPE lism_not_running_info gauge\nlism_not_running_info{reason=\"");
		for (const char *p = ctx->reason; *p; p++) /* label value escapes */
			fprintf(f, *p == '"' ? "\\\"" : *p == '\\' ? "\\\\" : *p == '\n' ? "\\n" : "%c", *p);
		fprintf(f, "\"} 1\n");
	}
	if (ctx->broker) {
		struct lism_device_totals bs;
		static const struct {
			const char *name, *type, *help;
		} m[] = {
			{ "attaches_total", "counter", "Ring DMB memories the device handed to a process that passed it "
			  "a socket of a ring pair (lism exec)." },
			{ "refusals_total", "counter", "Requests the device refused: not a socket of a confirmed ring "
			  "pair, a malformed request, a report for a caller without CAP_BPF, or no memory." },
			{ "rings_total", "counter", "Ring DMB memories the device made (one per pair)." },
			{ "rings_held", "gauge", "Ring pairs whose memory the device holds (until their connection "
			  "ends)." },
			{ "ring_bytes_total", "counter", "Bytes written into ring DMBs, both directions (as the pairs' "
			  "headers count them)." },
			{ "ring_doorbells_total", "counter", "Doorbells ring writers sent through TCP (one each time a "
			  "ring's unread bytes rise above 0)." },
			{ "ring_runs_total", "counter", "Stretches ring writers sent through TCP instead (a full ring "
			  "under a non-blocking writer, sendfile, splice)." },
			{ "ring_aborts_total", "counter", "Ring pairs given back that liblism reset (a broken invariant, "
			  "a process killed holding its lock); a kernel reset, kill -9, is not one." },
		};

		lism_broker_stats(ctx->broker, &bs);
		{
			const __u64 v[] = { bs.attaches, bs.refusals, bs.rings, bs.held,
					    bs.bytes, bs.doorbells, bs.runs, bs.aborts }; /* in m's order */

			_Static_assert(sizeof(v) / sizeof(v[0]) == sizeof(m) / sizeof(m[0]), "a value per metric");
			for (size_t k = 0; k < sizeof(m) / sizeof(m[0]); k++)
				fprintf(f, "# HELP lism_device_%s %s\n# TYPE lism_device_%s %s\nlism_device_%s %llu\n",
					m[k].name, m[k].help, m[k].name, m[k].type, m[k].name, (unsigned long long)v[k]);
		}
	}
	if (ctx->route_entries >= 0)
		fprintf(f, "# HELP lism_scope_route_entries Prefixes in scope because this node routes them to a "
			   "local veth or its own address (--local-routes).\n# TYPE lism_scope_route_entries gauge\n"
			   "lism_scope_route_entries %d\n", ctx->route_entries);
	fprintf(f, "# HELP lism_settings_not_applied 1 for each setting of this daemon the adopted instance "
		   "kept its own value of (fixed at load): the log says which values.\n"
		   "# TYPE lism_settings_not_applied gauge\n");
	for (size_t i = 0; i < lism_n_settings_names; i++) {
		const char *n = lism_settings_names[i], *hit = strstr(ctx->not_applied, n);
		size_t l = strlen(n);
		int on = hit && (hit == ctx->not_applied || hit[-1] == ',') && (hit[l] == ',' || !hit[l]);

		fprintf(f, "lism_settings_not_applied{setting=\"%s\"} %d\n", n, on);
	}
}

/* /healthz while lism does not run: the state, the reason, what the probe found. */
static char *not_ready_text(struct http_ctx *ctx, double now)
{
	char *body = NULL, line[512];
	size_t len = 0;
	FILE *f = open_memstream(&body, &len);

	if (!f)
		return NULL;
	if (ctx->state == RUN_LOADING) {
		fprintf(f, "loading: lism is being loaded (or adopted) on this node\n");
	} else {
		fprintf(f, "not running: %s\n", ctx->reason);
		fprintf(f, "next attempt in %.0f s (%llu of %llu attempts failed)\n",
			ctx->next_attempt > now ? ctx->next_attempt - now : 0, ctx->failures, ctx->attempts);
		for (int i = 0; i < LISM_F_MAX; i++) {
			if (ctx->probed[i].cause != LISM_FC_KERNEL)
				continue;
			lism_feature_off_line(i, &ctx->probed[i], line, sizeof(line));
			fprintf(f, "probe: %s\n", line);
		}
	}
	fclose(f);
	return body;
}

/* /healthz while it runs: "ok", and the optional parts that are off. */
static char *ready_text(const char *pin_path)
{
	struct lism_feature_state st[LISM_F_MAX];
	char *body = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&body, &len);
	int off = 0;

	if (!f)
		return NULL;
	fprintf(f, "ok\n");
	if (!lism_features_read(pin_path, st)) {
		for (int i = 0; i < LISM_F_MAX; i++) {
			if (lism_feature_enabled(&st[i]))
				continue;
			fprintf(f, "%s %s", off++ ? "," : "off (optional; lism status says why):",
				lism_feature_info(i)->name);
		}
		if (off)
			fprintf(f, "\n");
	}
	fclose(f);
	return body;
}

/*
 * Requests are served by MHD's single internal thread, one at a time: the
 * cache is only ever touched there; the state is shared, under ctx->lock.
 * /livez: the daemon lives (its loop turns).  /healthz (or /readyz): lism
 * runs on this node, or why not.  /metrics: both, and the instance's.
 */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct http_ctx *ctx = cls;
	const char *why;
	char *body = NULL;
	size_t len = 0;
	double now = lism_mono_s();
	int running;
	FILE *f;

	(void)version;
	(void)upload;
	(void)upload_size;
	(void)con_cls;
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET\n");
	if (!strcmp(url, "/livez")) {
		const char *stuck = NULL;

		/* starting until the first attempt ends (the startup probe's budget covers it) */
		pthread_mutex_lock(&ctx->lock);
		if (!ctx->first_done)
			stuck = "starting: the first load is under way\n";
		else if (ctx->attempt_since ? now - ctx->attempt_since > ATTEMPT_MAX_S :
					      now - ctx->heartbeat > LIVEZ_STALE_S)
			stuck = ctx->attempt_since ? "a load has been running for over 5 minutes\n" :
						     "the daemon's loop has stopped turning\n";
		pthread_mutex_unlock(&ctx->lock);
		return stuck ? reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, stuck) : reply_text(c, MHD_HTTP_OK, "ok\n");
	}
	if (!strcmp(url, "/healthz") || !strcmp(url, "/readyz")) {
		pthread_mutex_lock(&ctx->lock);
		if (ctx->state != RUN_READY) {
			body = not_ready_text(ctx, now);
			pthread_mutex_unlock(&ctx->lock);
			return body ? reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain; charset=utf-8", body,
					    strlen(body)) : MHD_NO;
		}
		pthread_mutex_unlock(&ctx->lock);
		if (!healthy(ctx->pin_path, &why))
			return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, why);
		body = ready_text(ctx->pin_path);
		return body ? reply(c, MHD_HTTP_OK, "text/plain; charset=utf-8", body, strlen(body)) : MHD_NO;
	}
	if (strcmp(url, "/metrics"))
		return reply_text(c, MHD_HTTP_NOT_FOUND, "try /metrics, /healthz or /livez\n");
	f = open_memstream(&body, &len);
	if (!f)
		return MHD_NO;
	pthread_mutex_lock(&ctx->lock);
	daemon_metrics(f, ctx);
	if (ctx->state != RUN_READY) {
		struct lism_feature_state none[LISM_F_MAX] = { 0 };

		/* nothing runs: every part 0 (the probe's verdicts are on /healthz) */
		for (int i = 0; i < LISM_F_MAX; i++)
			none[i].status = LISM_FS_OFF;
		lism_features_metrics(f, none);
	}
	running = ctx->state == RUN_READY;
	pthread_mutex_unlock(&ctx->lock);
	if (running) {
		if (!ctx->cached_ok || now - ctx->cached_at >= 1.0) {
			ctx->cached_ok = !snapshot(ctx->pin_path, &ctx->cached);
			ctx->cached_at = now;
		}
		if (ctx->cached_ok)
			lism_metrics_write(f, &ctx->cached, LISM_VERSION);
	}
	fclose(f);
	return reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", body, len);
}

static int load_fresh(const char *pin_path, const struct lism_run_opts *o, int *loaded, struct lism_error *e)
{
	struct lism_load_info info;
	int err = lism_load(pin_path, &o->cfg, &info, e);

	*loaded = !err;
	lism_say_aside(&info, "load");
	if (!err)
		lism_say_loaded(pin_path, &o->cfg, &info);
	return err;
}

/*
 * This build's programs over the adopted state (a new image on a node
 * whose connections outlived the old pod).  If that fails, the instance's
 * own programs keep working: said, not a failure.
 */
static void upgrade_adopted(const char *pin_path)
{
	struct lism_error e = { 0 };
	struct lism_load_info info;
	int err = lism_upgrade(pin_path, &info, &e);

	lism_say_aside(&info, "upgrade");
	if (!err) {
		lism_say_upgraded(pin_path, &info);
		return;
	}
	lism_error_print(&e);
	lism_err("the adopted instance keeps the programs it had");
}

/*
 * An instance already pinned there: adopt it (after a crash or an upgrade
 * of the daemon).  Looked at under the pin lock: an unload (a pod on its
 * way out) must not see the device change, nor remove what is adopted.
 */
static int adopt_or_load(const char *pin_path, const struct lism_run_opts *o, int *loaded, struct lism_error *e)
{
	struct lism_unload_cfg leftovers = { .timeout_s = o->timeout_s };
	struct lism_unload_info gone;
	struct lism_instance in;
	struct lism_device d;
	int err, lockfd, unfinished = 0;

	*loaded = 0;
	lockfd = lism_pin_lock(pin_path);
	if (lockfd == -ENOENT)
		return load_fresh(pin_path, o, loaded, e);
	if (lockfd < 0) {
		lism_fail(e, LISM_EXIT_STATE, lockfd, "locking %s failed: %s", pin_path, strerror(-lockfd));
		if (lockfd == -EWOULDBLOCK)
			lism_fail_hint(e, "another lism is loading or unloading there (a pod still draining?): "
				       "start again once it is done");
		return lockfd;
	}
	err = lism_instance_open(&in, pin_path);
	if (err == -ENOENT) { /* the directory without an instance (a load's leftover) */
		close(lockfd);
		return load_fresh(pin_path, o, loaded, e);
	}
	if (err) {
		close(lockfd);
		return lism_fail(e, LISM_EXIT_STATE, err, "opening the pins at %s failed: %s", pin_path,
				 strerror(-err));
	}
	err = lism_device_read(&in, &d);
	if (!err && d.layout == 0) {
		unfinished = 1; /* a load killed midway (the OOM killer during the verifier) */
		goto out;
	}
	if (err) {
		lism_fail(e, LISM_EXIT_STATE, err, "reading the device pinned at %s failed: %s", pin_path,
			  strerror(-err));
		goto out;
	}
	if (d.layout != LISM_LAYOUT_VERSION) {
		err = lism_fail(e, LISM_EXIT_STATE, -EPROTO,
				"the instance pinned at %s has pin layout %u, this lism %u: remove it with the "
				"release that loaded it ('lism unload'; on Kubernetes its cleanup DaemonSet)",
				pin_path, d.layout, LISM_LAYOUT_VERSION);
		goto out;
	}
	printf("lism: adopting the instance pinned at %s (attached to %s)\n", pin_path, d.cgroup);
	if (!d.active && (d.flags & LISM_DEV_F_DRAINING)) {
		/* left draining by an unload that timed out (or a drain by hand): this daemon takes over */
		d.active = 1;
		d.flags &= ~LISM_DEV_F_DRAINING;
		err = lism_device_write(&in, &d);
		if (err) {
			lism_fail(e, LISM_EXIT_FAIL, err, "switching the adopted device on failed: %s", strerror(-err));
			goto out;
		}
		printf("lism: it was left draining (an unload that timed out, or set active drain): switched on "
		       "again\n");
	} else if (!d.active) {
		printf("lism: it is switched off ('lism set active off'): new connections stay on TCP "
		       "until 'lism set active on'\n");
	}
out:
	close(lockfd);
	lism_instance_close(&in);
	if (unfinished) {
		err = lism_unload(pin_path, &leftovers, &gone, e);
		if (err)
			return err;
		printf("lism: %s held the pins of a load that did not finish: removed them\n", pin_path);
		return load_fresh(pin_path, o, loaded, e);
	}
	if (!err)
		upgrade_adopted(pin_path);
	return err;
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

/* The first wait after a failed attempt, doubled each time up to the last. */
#define RETRY_FIRST_S 10.0
#define RETRY_MAX_S 300.0

static void beat(struct http_ctx *ctx)
{
	pthread_mutex_lock(&ctx->lock);
	ctx->heartbeat = lism_mono_s();
	pthread_mutex_unlock(&ctx->lock);
}

/*
 * One attempt to load or adopt.  On success RUN_READY (and an adopted
 * instance takes this daemon's settings where it can); on failure
 * RUN_IDLE with the first error as the reason, the probe's verdicts, and
 * the next attempt after a doubling wait: a node lism cannot run on keeps
 * a running, not ready pod that says why, instead of a crash loop.
 */
static int attempt(const char *pin_path, const struct lism_run_opts *o, struct http_ctx *ctx, int *loaded)
{
	static struct lism_feature_state probed[LISM_F_MAX];
	struct lism_probe probe = { 0 };
	struct lism_error e = { 0 };
	char na[sizeof(ctx->not_applied)] = "", missing[LISM_FEATURE_WHY_LEN], reason[sizeof(ctx->reason)];
	double wait;
	int ret, err;

	pthread_mutex_lock(&ctx->lock);
	ctx->attempt_since = lism_mono_s();
	pthread_mutex_unlock(&ctx->lock);
	ret = adopt_or_load(pin_path, o, loaded, &e);
	if (ret)
		lism_error_print(&e);
	if (!ret && !*loaded) {
		err = lism_settings_reconcile(pin_path, &o->cfg, na, sizeof(na));
		if (err)
			lism_err("applying this daemon's settings to the adopted instance failed: %s; applied "
				 "in part (lism_settings_not_applied)", strerror(-err));
		if (na[0])
			printf("lism: settings the adopted instance keeps (lism_settings_not_applied): %s\n", na);
	}
	fflush(stdout);
	pthread_mutex_lock(&ctx->lock);
	ctx->attempts++;
	pthread_mutex_unlock(&ctx->lock);
	if (!ret) {
		pthread_mutex_lock(&ctx->lock);
		snprintf(ctx->not_applied, sizeof(ctx->not_applied), "%s", na);
		ctx->state = RUN_READY;
		ctx->attempt_since = 0;
		ctx->first_done = 1;
		pthread_mutex_unlock(&ctx->lock);
		return 0;
	}
	snprintf(reason, sizeof(reason), "%s", e.msg[0] ? e.msg : "the load failed");
	memset(probed, 0, sizeof(probed));
	if (!lism_probe_run(&probe)) {
		for (int f = 0; f < LISM_F_MAX; f++)
			if (lism_probe_missing(&probe, f, missing, sizeof(missing)))
				lism_feature_off(&probed[f], LISM_FC_KERNEL, "the kernel lacks %s", missing);
		lism_probe_free(&probe);
	}
	pthread_mutex_lock(&ctx->lock);
	wait = RETRY_FIRST_S;
	for (unsigned long long i = 0; i < ctx->failures && wait < RETRY_MAX_S; i++)
		wait *= 2;
	if (wait > RETRY_MAX_S)
		wait = RETRY_MAX_S;
	ctx->failures++;
	ctx->next_attempt = lism_mono_s() + wait;
	memcpy(ctx->probed, probed, sizeof(probed));
	/* said once per reason: a node that cannot run lism logs it once, not every few minutes */
	err = strcmp(ctx->reason, reason);
	snprintf(ctx->reason, sizeof(ctx->reason), "%s", reason);
	ctx->state = RUN_IDLE;
	ctx->attempt_since = 0;
	ctx->first_done = 1;
	pthread_mutex_unlock(&ctx->lock);
	if (err)
		printf("lism: not running on this node: %s; the daemon stays up (not ready) and tries "
		       "again, first in %.0f s\n", reason, wait);
	fflush(stdout);
	return ret;
}

/*
 * --local-routes on: the scope follows the node's routes (routes.h) from
 * now on; off: an adopted instance drops the entries an earlier daemon
 * added.  0, or -errno: said, and the caller tries again at a heartbeat;
 * the scope meanwhile stays as it was.
 */
static int routes_start(const char *pin_path, int local_routes, struct http_ctx *ctx, struct lism_routes **r,
			int *scope_fd)
{
	struct lism_routes_stats st = { 0 };
	int err;

	if (*scope_fd < 0)
		*scope_fd = lism_pin_open(pin_path, "scope");
	if (*scope_fd < 0) {
		lism_err("opening the scope map failed: %s; trying again", strerror(-*scope_fd));
		return *scope_fd;
	}
	if (!local_routes) {
		err = lism_routes_forget(*scope_fd);
		if (err > 0)
			printf("lism: scope: %d entries from routes removed (--local-routes off)\n", err);
		close(*scope_fd);
		*scope_fd = -1;
		return err < 0 ? err : 0;
	}
	if (!*r) {
		err = lism_routes_open(r);
		if (err) {
			lism_err("following the routes failed: %s; trying again", strerror(-err));
			return err;
		}
	}
	err = lism_routes_sync(*r, *scope_fd, &st);
	if (err < 0 && err != -ENOSPC) {
		lism_err("reading the routes failed: %s; trying again", strerror(-err));
		return err;
	}
	printf("lism: scope: %d prefixes of this node from its routes (followed as they change)%s\n", st.entries,
	       err == -ENOSPC ? "; the scope map is full: the rest stay out of scope" : "");
	pthread_mutex_lock(&ctx->lock);
	ctx->route_entries = st.entries;
	pthread_mutex_unlock(&ctx->lock);
	return err < 0 ? err : 0;
}

/* What a running daemon lets go of when its instance is gone: routes, scope, events. */
static void let_go(struct lism_routes **routes, int *scope_fd, struct lism_events **ev)
{
	lism_routes_close(*routes);
	*routes = NULL;
	if (*scope_fd >= 0)
		close(*scope_fd);
	*scope_fd = -1;
	lism_events_close(*ev);
	*ev = NULL;
}

/*
 * The instance of a ready daemon gone (unloaded, its link removed, bpffs
 * remounted): back to idle, reason said, a new load after the first wait.
 * A DaemonSet's desired state is lism running on the node.
 */
static void lost(struct http_ctx *ctx, const char *pin_path, const char *why)
{
	char reason[sizeof(ctx->reason)];
	size_t n;

	snprintf(reason, sizeof(reason), "the instance at %.200s went away (%.200s", pin_path, why);
	n = strlen(reason);
	if (n && reason[n - 1] == '\n')
		reason[--n] = '\0';
	snprintf(reason + n, sizeof(reason) - n, ")");
	pthread_mutex_lock(&ctx->lock);
	snprintf(ctx->reason, sizeof(ctx->reason), "%s", reason);
	ctx->state = RUN_IDLE;
	ctx->next_attempt = lism_mono_s() + RETRY_FIRST_S;
	ctx->route_entries = ctx->route_entries >= 0 ? 0 : -1;
	memset(ctx->probed, 0, sizeof(ctx->probed));
	pthread_mutex_unlock(&ctx->lock);
	printf("lism: %s: loading it again in %.0f s\n", reason, RETRY_FIRST_S);
	fflush(stdout);
}

/*
 * liblism.so beside the device socket: a pod reaches the device by mounting
 * the socket's directory, and so takes the library of the lism that serves
 * it from there, whatever its image (docs/kubernetes.md).  Not fatal: a pod
 * that finds no library runs without it.
 */
static void library_publish(const char *socket_path)
{
	char lib[PATH_MAX], dir[PATH_MAX], out[PATH_MAX], *slash;
	int err;

	snprintf(dir, sizeof(dir), "%s", socket_path);
	slash = strrchr(dir, '/');
	if (!slash)
		return;
	*slash = '\0';
	err = lism_library_find(lib, sizeof(lib));
	if (err) {
		lism_err("%s not found ($LISM_LIBRARY, beside lism, ../lib/lism, %s), so not published in %s: "
			 "programs that preload it from there run without it", LISM_LIBRARY_NAME, LISM_LIBDIR, dir);
		return;
	}
	err = lism_library_publish(lib, dir, out, sizeof(out));
	if (err) {
		lism_err("publishing %s in %s failed: %s; programs that preload it from there run without it", lib,
			 dir, strerror(-err));
		return;
	}
	printf("lism: liblism.so published at %s, for pods (LD_PRELOAD=%s, LISM_DEVICE=%s)\n", out, out,
	       socket_path);
	fflush(stdout);
}

/* lism exec's device, once the instance runs (a failure: said, tried again at the next heartbeat). */
static void device_start(struct http_ctx *ctx, const char *pin_path, const char *socket_path, int *said)
{
	struct lism_broker *b;
	int err;

	if (!socket_path[0] || ctx->broker)
		return;
	err = lism_broker_start(pin_path, socket_path, &b);
	if (err) {
		if (!*said)
			lism_err("lism exec's device cannot serve at %s: %s; pairs under lism exec stay on TCP "
				 "(exec-no-device) until it can (--device-socket)", socket_path, strerror(-err));
		*said = 1;
		return;
	}
	pthread_mutex_lock(&ctx->lock);
	ctx->broker = b;
	pthread_mutex_unlock(&ctx->lock);
	printf("lism: lism exec's device serves at %s\n", socket_path);
	fflush(stdout);
	*said = 0;
	library_publish(socket_path);
}

static void device_stop(struct http_ctx *ctx)
{
	struct lism_broker *b;

	pthread_mutex_lock(&ctx->lock);
	b = ctx->broker;
	ctx->broker = NULL;
	pthread_mutex_unlock(&ctx->lock);
	lism_broker_stop(b);
}

int lism_cmd_run(const struct lism_common_opts *co, const struct lism_run_opts *o)
{
	static struct http_ctx ctx; /* large (a snapshot); lives as long as the HTTP thread */
	static struct lism_snapshot prev;
	struct lism_events_opts eo = { .json = co->json, .types = o->event_types, .max_per_s = LOG_EVENTS_PER_S };
	struct lism_events *ev = NULL;
	struct lism_routes *routes = NULL;
	struct MHD_Daemon *http = NULL;
	struct sockaddr_storage sa;
	struct pollfd p[3];
	int ret, sfd = -1, scope_fd = -1, routes_ok = 0, stop = 0, loaded = 0, started = 0, have_prev = 0, ready = 0;
	int device_said = 0;
	enum follow follow = FOLLOWING;
	double now, last_summary = 0, last_check = 0, routes_retry = 0;
	char types[128];

	log_out = stdout;
	if (co->json && (ret = json_log_setup())) {
		lism_err("setting up the JSON log failed: %s", strerror(-ret));
		return LISM_EXIT_FAIL;
	}
	if (parse_addr(o->metrics_addr, &sa)) {
		lism_err("--metrics-addr %s is not ADDR:PORT", o->metrics_addr);
		return LISM_EXIT_USAGE;
	}
	/* blocked before anything else: a SIGTERM during the load waits until it is whole */
	sfd = lism_stop_signals_fd();
	if (sfd < 0) {
		lism_err("signalfd failed: %s", strerror(-sfd));
		return LISM_EXIT_FAIL;
	}
	memset(&ctx, 0, sizeof(ctx));
	pthread_mutex_init(&ctx.lock, NULL);
	ctx.pin_path = co->pin_path;
	ctx.state = RUN_LOADING;
	ctx.heartbeat = lism_mono_s();
	ctx.route_entries = -1;
	/* served from the start: /livez answers while the verifier works, /healthz says "loading" */
	http = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG |
					(sa.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
				0, NULL, NULL, on_request, &ctx, MHD_OPTION_SOCK_ADDR, &sa,
				MHD_OPTION_CONNECTION_LIMIT, 32u, MHD_OPTION_CONNECTION_TIMEOUT, 10u,
				MHD_OPTION_END);
	if (!http) {
		lism_err("serving metrics on %s failed (address in use, or not local?)", o->metrics_addr);
		lism_hint("choose another --metrics-addr");
		close(sfd);
		return LISM_EXIT_FAIL;
	}
	lism_event_types_format(o->event_types, types, sizeof(types));
	printf("lism: serving metrics at http://%s/metrics, readiness at /healthz, liveness at /livez\n",
	       o->metrics_addr);
	fflush(stdout);
	p[0] = (struct pollfd){ .fd = sfd, .events = POLLIN };
	p[1] = (struct pollfd){ .fd = -1, .events = POLLIN };
	p[2] = (struct pollfd){ .fd = -1, .events = POLLIN };
	while (!stop) {
		/* until the next of: a heartbeat, a load attempt, the events' tick, the summary */
		double next;
		int n, have = 1;

		now = lism_mono_s();
		beat(&ctx);
		if (!ready && (ctx.state == RUN_LOADING || now >= ctx.next_attempt)) {
			if (attempt(co->pin_path, o, &ctx, &loaded))
				continue; /* idle until ctx.next_attempt */
			ready = 1;
			routes_ok = !routes_start(co->pin_path, o->cfg.local_routes, &ctx, &routes, &scope_fd);
			routes_retry = lism_mono_s() + HEARTBEAT_S;
			/* the summaries' baseline before the events: an event logged is in the next summary */
			if (o->log_interval_s)
				log_summary(co->pin_path, co->json, &prev, &have_prev, &last_summary);
			/* the BPF programs emit only the events somebody follows (abi.h) */
			if (o->event_types)
				follow_events(co->pin_path, &eo, &ev, &follow, 0);
			printf("lism: running; logging events: %s", types);
			if (o->log_interval_s)
				printf(", a summary every %u s\n", o->log_interval_s);
			else
				printf("\n");
			fflush(stdout);
			started = 1;
			device_start(&ctx, co->pin_path, o->device_socket, &device_said);
			last_check = last_summary = now = lism_mono_s();
		}
		if (ready && now - last_check >= HEARTBEAT_S) {
			const char *why;

			last_check = now;
			if (!healthy(co->pin_path, &why)) {
				let_go(&routes, &scope_fd, &ev);
				device_stop(&ctx);
				ready = 0;
				lost(&ctx, co->pin_path, why);
				continue;
			}
			device_start(&ctx, co->pin_path, o->device_socket, &device_said);
		}
		next = now + HEARTBEAT_S;
		if (ready)
			earliest(&next, &have, last_check + HEARTBEAT_S);
		if (!ready)
			earliest(&next, &have, ctx.next_attempt);
		if (ready && o->event_types)
			earliest(&next, &have, now + LISM_EVENTS_TICK_MS / 1000.0);
		if (ready && o->log_interval_s)
			earliest(&next, &have, last_summary + o->log_interval_s);
		p[1].fd = ev ? lism_events_fd(ev) : -1;
		p[2].fd = routes ? lism_routes_fd(routes) : -1;
		n = poll(p, 3, next <= now ? 0 : (int)((next - now) * 1000) + 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			lism_err("poll failed: %s", strerror(errno));
			ret = LISM_EXIT_FAIL;
			goto out;
		}
		now = lism_mono_s();
		if (ready && o->event_types && !ev)
			follow_events(co->pin_path, &eo, &ev, &follow, 0);
		if (ev && (n = lism_events_consume(ev)) < 0) {
			lism_err("reading the events failed: %s; following them anew", strerror(-n));
			lism_events_close(ev);
			ev = NULL;
			follow = FAILING;
		}
		/* pods come and go: their routes widen or narrow the scope (a failure: at the next heartbeat) */
		if (ready && !routes_ok && now >= routes_retry) {
			routes_ok = !routes_start(co->pin_path, o->cfg.local_routes, &ctx, &routes, &scope_fd);
			routes_retry = now + HEARTBEAT_S;
		} else if (routes_ok && routes && p[2].revents) {
			struct lism_routes_stats st = { 0 };

			n = lism_routes_sync(routes, scope_fd, &st);
			if (n < 0 && n != -ENOSPC) {
				lism_err("following the routes failed: %s; trying again", strerror(-n));
				routes_ok = 0;
				routes_retry = now + HEARTBEAT_S;
			} else {
				pthread_mutex_lock(&ctx.lock);
				ctx.route_entries = st.entries;
				pthread_mutex_unlock(&ctx.lock);
			}
		}
		if (ready && o->log_interval_s && now - last_summary >= o->log_interval_s)
			log_summary(co->pin_path, co->json, &prev, &have_prev, &last_summary);
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
	device_stop(&ctx);
	lism_routes_close(routes);
	if (scope_fd >= 0)
		close(scope_fd);
	lism_events_close(ev);
	if (sfd >= 0)
		close(sfd);
	fflush(stdout);
	if (ret == LISM_EXIT_OK && ready && o->unload_on_exit) {
		struct lism_unload_cfg u = { .timeout_s = o->timeout_s };

		ret = lism_unload_said(co->pin_path, &u);
	} else if (!started && loaded) {
		/* it never ran: do not leave behind what this failed start loaded */
		struct lism_unload_cfg u = { .timeout_s = 0, .force = 1 };

		lism_unload_said(co->pin_path, &u);
	} else if (ret == LISM_EXIT_OK && ready) {
		printf("lism: left loaded at %s (the data path keeps working)\n", co->pin_path);
	} else if (ret == LISM_EXIT_OK) {
		printf("lism: stopped; lism was not running on this node\n");
	}
	return ret;
}
