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
#include <unistd.h>

#include "daemon.h"
#include "device.h"
#include "events.h"
#include "loader.h"
#include "log.h"
#include "metrics.h"
#include "pins.h"

struct http_ctx {
	const char *pin_path;
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

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct http_ctx *ctx = cls;
	struct lism_snapshot s;
	char *body = NULL;
	size_t len = 0;
	FILE *f;
	int err;

	(void)version;
	(void)upload;
	(void)upload_size;
	(void)con_cls;
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET\n");
	if (!strcmp(url, "/healthz")) {
		err = snapshot(ctx->pin_path, &s);
		if (err)
			return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "lism instance unreadable\n");
		if (!s.attached)
			return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "lism is not attached\n");
		return reply_text(c, MHD_HTTP_OK, "ok\n");
	}
	if (strcmp(url, "/metrics"))
		return reply_text(c, MHD_HTTP_NOT_FOUND, "try /metrics or /healthz\n");
	err = snapshot(ctx->pin_path, &s);
	if (err)
		return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "lism instance unreadable\n");
	f = open_memstream(&body, &len);
	if (!f)
		return MHD_NO;
	lism_metrics_write(f, &s, LISM_VERSION);
	fclose(f);
	return reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", body, len);
}

/* An instance already pinned there: adopt it (after a crash or an upgrade of the daemon). */
static int adopt_or_load(const struct lism_opts *o)
{
	struct lism_instance in;
	struct lism_device d;
	int err = lism_instance_open(&in, o->pin_path);

	if (err == -ENOENT)
		return lism_cmd_load(o);
	if (err) {
		lism_err("opening the pins at %s failed: %s", o->pin_path, strerror(-err));
		return LISM_EXIT_STATE;
	}
	err = lism_device_read(&in, &d);
	lism_instance_close(&in);
	if (err || d.layout != LISM_LAYOUT_VERSION) {
		lism_err("the pins at %s are not of this lism's layout", o->pin_path);
		return LISM_EXIT_STATE;
	}
	printf("lism: adopting the instance pinned at %s (attached to %s)\n", o->pin_path, d.cgroup);
	return LISM_EXIT_OK;
}

int lism_cmd_run(const struct lism_opts *o)
{
	struct http_ctx ctx = { .pin_path = o->pin_path };
	struct lism_events *ev = NULL;
	struct MHD_Daemon *http = NULL;
	struct sockaddr_storage sa;
	struct pollfd p[2];
	sigset_t mask;
	int ret, sfd = -1, stop = 0;

	ret = adopt_or_load(o);
	if (ret)
		return ret;
	/* Signals arrive through an fd: no handler races, no busy loop. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0) {
		lism_err("signalfd failed: %s", strerror(errno));
		ret = LISM_EXIT_FAIL;
		goto out;
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
	ret = lism_events_open(o->pin_path, o->json, 0, stdout, &ev);
	if (ret) {
		lism_err("following the events failed: %s", strerror(-ret));
		ret = LISM_EXIT_FAIL;
		goto out;
	}
	printf("lism: running; metrics at http://%s/metrics, health at /healthz\n", o->metrics_addr);
	fflush(stdout);
	p[0] = (struct pollfd){ .fd = sfd, .events = POLLIN };
	p[1] = (struct pollfd){ .fd = lism_events_fd(ev), .events = POLLIN };
	while (!stop) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			lism_err("poll failed: %s", strerror(errno));
			ret = LISM_EXIT_FAIL;
			goto out;
		}
		if (p[1].revents)
			lism_events_consume(ev);
		if (p[0].revents) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				printf("lism: %s, stopping\n", strsignal((int)si.ssi_signo));
				stop = 1;
			}
		}
	}
	lism_events_consume(ev);
	ret = LISM_EXIT_OK;
out:
	if (http)
		MHD_stop_daemon(http);
	lism_events_close(ev);
	if (sfd >= 0)
		close(sfd);
	fflush(stdout);
	if (ret == LISM_EXIT_OK && o->unload_on_exit)
		ret = lism_cmd_unload(o);
	else if (ret == LISM_EXIT_OK)
		printf("lism: left loaded at %s (the data path keeps working)\n", o->pin_path);
	return ret;
}
