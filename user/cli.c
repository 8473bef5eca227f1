// SPDX-License-Identifier: GPL-2.0-only
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "lism/exec.h"
#include "event_types.h"
#include "lism/abi.h"
#include "lism/churn.h"

/* BPF_TCP_* order */
static const char *const tcp_states[] = {
	"UNKNOWN", "ESTAB", "SYN-SENT", "SYN-RECV", "FIN-WAIT-1", "FIN-WAIT-2", "TIME-WAIT",
	"UNCONN", "CLOSE-WAIT", "LAST-ACK", "LISTEN", "CLOSING", "NEW-SYN-RECV",
};

const char *lism_tcp_state_name(int state)
{
	if (state < 0 || (size_t)state >= sizeof(tcp_states) / sizeof(tcp_states[0]))
		return "UNKNOWN";
	return tcp_states[state];
}

int lism_tcp_state_code(const char *name)
{
	for (size_t i = 1; i < sizeof(tcp_states) / sizeof(tcp_states[0]); i++)
		if (!strcasecmp(name, tcp_states[i]))
			return (int)i;
	if (!strcasecmp(name, "ESTABLISHED"))
		return 1;
	return -1;
}

void lism_usage(FILE *f)
{
	fprintf(f,
		"Usage: lism <command> [options]      (every command takes --pin-path DIR)\n"
		"\n"
		"Commands:\n"
		"  load     attach lism to a cgroup and pin its state\n"
		"           [--cgroup PATH] [--max-dmbs N] [--dmb-size BYTES] [--local-cidr CIDR]...\n"
		"           [--exclude-cidr CIDR]... [--exclude-port PORT]... [--include-port PORT]...\n"
		"           [--local-routes on|off]  (on: also this node's pods, from its routes)\n"
		"           [--allow-blocking] [--no-churn-detect]\n"
		"           [--churn-window MS] [--senders adaptive|eager] [--upgrade] [--mount-bpffs]\n"
		"  unload   stop new shortcuts, wait for existing ones to end, remove lism\n"
		"           [--timeout SECONDS] [--force] [--stay]  (--stay: then wait for SIGTERM)\n"
		"  status   the loopback-ism device, like smcd device   [-j]\n"
		"           [--gone]  (exit 0 only when nothing is pinned: a cleanup pod's readiness)\n"
		"  conns    one row per connection end, like smcss -D\n"
		"           [-w] [-j] [--port PORT] [--state STATE] [--mode shortcut|ring|tcp|pending]\n"
		"           [--device-socket PATH]  (where ring pairs' cursors are asked)\n"
		"  stats    counters, fallback reasons, message sizes, like smcd stats\n"
		"           [-j] [--device-socket PATH]  (lism exec's device: ring bytes, doorbells)\n"
		"  stats reset   zero the counters\n"
		"  events   follow lifecycle events (" LISM_EV_NAMES ")\n"
		"           [-j] [--all] [--type TYPE,...]\n"
		"  run      foreground daemon: load (or adopt, or retry until it can), serve /metrics,\n"
		"           /healthz and /livez; log a summary every --log-interval and the\n"
		"           --log-events types one by one\n"
		"           [load options] [--metrics-addr ADDR:PORT] [--unload-on-exit] [-j]\n"
		"           [--device-socket PATH|none]  (lism exec's device, default " LISM_DEVICE_SOCKET ")\n"
		"           [--log-events all|none|TYPE,...] [--log-interval SECONDS]\n"
		"  device   lism exec's device alone, for a loaded instance, until it is unloaded\n"
		"           [--device-socket PATH]  (make run starts it; lism run is a device too)\n"
		"  exec     run a command with liblism preloaded: its connections to other programs\n"
		"           under lism exec move their bytes through shared-memory rings\n"
		"           [--device-socket PATH] [--busy-poll US] [--] CMD [ARG]...\n"
		"           (--busy-poll: how long a wait spins on its rings before it sleeps, 0 never;\n"
		"           default $LISM_BUSY_POLL_US, else 200, adapting to what spinning finds)\n"
		"  set active on|off   let new connections use the shortcut, or keep them on TCP\n"
		"  set active drain    keep them on TCP until a lism run adopts the instance\n"
		"  set max-dmbs N      change the DMB limit (up to the table size given at load)\n"
		"  set churn-detect on|off   let destinations of short connections skip the shortcut\n"
		"  set senders adaptive|eager   when new connections' sends start to run the data path\n"
		"  probe    every kernel feature lism uses, whether this kernel has it, and which part\n"
		"           of lism it enables; as root, whether the verifier takes each program   [-j]\n"
		"  mount-bpffs  mount bpffs at /sys/fs/bpf unless the pin path is on one (init containers)\n"
		"           [--soft]  (a failure is said, exit 0: the lism container reports it)\n"
		"  help     this text\n"
		"  version  print the version\n"
		"\n"
		"Defaults: --pin-path %s, --cgroup <cgroup2 mount>, --max-dmbs %u,\n"
		"--dmb-size %u (%u KiB..%u MiB), --churn-window %u, --timeout %u,\n"
		"--metrics-addr %s, --log-events none, --log-interval %u, --local-routes off.\n"
		"See lism(8).\n",
		LISM_DEFAULT_PIN_PATH, LISM_DEFAULT_MAX_DMBS, LISM_DEFAULT_DMB_SIZE,
		LISM_MIN_DMB_SIZE >> 10, LISM_MAX_DMB_SIZE >> 20, LISM_CHURN_WINDOW_MS,
		LISM_DEFAULT_UNLOAD_TIMEOUT,
		LISM_DEFAULT_METRICS_ADDR, LISM_DEFAULT_LOG_INTERVAL);
}

int lism_parse_u32(const char *s, __u32 min, __u32 max, __u32 *out)
{
	unsigned long long v;
	char *end;

	if (!s || !*s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*out = (__u32)v;
	return 0;
}

/* "adaptive": 0 (include/lism/sender.h decides), "eager": 1 (senders from the handshake). */
int lism_parse_senders(const char *s)
{
	if (s && !strcmp(s, "adaptive"))
		return 0;
	if (s && !strcmp(s, "eager"))
		return 1;
	return -EINVAL;
}

int lism_parse_size(const char *s, __u64 *out)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	if (!s || !*s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	switch (*end) {
	case '\0':
		break;
	case 'k': case 'K':
		shift = 10;
		break;
	case 'm': case 'M':
		shift = 20;
		break;
	case 'g': case 'G':
		shift = 30;
		break;
	default:
		return -EINVAL;
	}
	if (shift) {
		end++;
		if (!strcmp(end, "iB") || !strcmp(end, "ib"))
			end += 2;
		else if (*end == 'B' || *end == 'b')
			end++;
		if (*end)
			return -EINVAL;
		if (v > (~0ULL >> shift))
			return -ERANGE;
		v <<= shift;
	}
	*out = v;
	return 0;
}

int lism_parse_cidr(const char *s, struct lism_cidr *out)
{
	char buf[INET6_ADDRSTRLEN + 8];
	const char *slash;
	__u32 len, max;
	struct in6_addr a6;
	struct in_addr a4;

	if (!s || strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	slash = strchr(s, '/');
	if (slash)
		buf[slash - s] = '\0';
	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, buf, &a4) == 1) {
		out->addr[10] = 0xff;
		out->addr[11] = 0xff;
		memcpy(out->addr + 12, &a4, 4);
		max = 32;
	} else if (inet_pton(AF_INET6, buf, &a6) == 1) {
		memcpy(out->addr, &a6, 16);
		max = 128;
	} else {
		return -EINVAL;
	}
	len = max;
	if (slash && lism_parse_u32(slash + 1, 0, max, &len))
		return -EINVAL;
	out->prefixlen = len + (max == 32 ? 96 : 0);
	/* Host bits must be zero: "10.0.0.1/8" is almost certainly a typo. */
	for (__u32 bit = out->prefixlen; bit < 128; bit++)
		if (out->addr[bit / 8] & (0x80 >> (bit % 8)))
			return -EINVAL;
	return 0;
}

/* "ADDR:PORT" with an IPv4 address or "[IPv6]:PORT". */
static int valid_listen_addr(const char *s)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon = strrchr(s, ':');
	unsigned char a[16];
	size_t hl;
	__u32 port;

	if (!colon || lism_parse_u32(colon + 1, 1, 65535, &port))
		return 0;
	hl = (size_t)(colon - s);
	if (!hl || hl >= sizeof(host))
		return 0;
	memcpy(host, s, hl);
	host[hl] = '\0';
	if (host[0] == '[' && host[hl - 1] == ']') {
		host[hl - 1] = '\0';
		return inet_pton(AF_INET6, host + 1, a) == 1;
	}
	return inet_pton(AF_INET, host, a) == 1;
}

/*
 * Next item of a comma-separated list at *@p into @out (non-empty, fits);
 * *@p moves past it and its comma.  An empty list has no items.
 */
static int list_item(const char **p, char *out, size_t outlen)
{
	size_t len = strcspn(*p, ",");

	if (!len || len >= outlen)
		return -1;
	memcpy(out, *p, len);
	out[len] = 0;
	*p += len;
	if (**p == ',' && !*++*p)
		return -1; /* trailing comma */
	return 0;
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return LISM_EXIT_USAGE;
}

enum {
	OPT_CGROUP = 256,
	OPT_PIN_PATH,
	OPT_MAX_DMBS,
	OPT_DMB_SIZE,
	OPT_LOCAL_CIDR,
	OPT_ALLOW_BLOCKING,
	OPT_MOUNT_BPFFS,
	OPT_TIMEOUT,
	OPT_FORCE,
	OPT_EXCLUDE_PORT,
	OPT_INCLUDE_PORT,
	OPT_PORT,
	OPT_STATE,
	OPT_MODE,
	OPT_ALL,
	OPT_METRICS_ADDR,
	OPT_UNLOAD_ON_EXIT,
	OPT_STAY,
	OPT_GONE,
	OPT_SOFT,
	OPT_EXCLUDE_CIDR,
	OPT_UPGRADE,
	OPT_NO_CHURN_DETECT,
	OPT_EAGER_SENDERS,
	OPT_SENDERS,
	OPT_CHURN_WINDOW,
	OPT_TYPE,
	OPT_LOG_EVENTS,
	OPT_LOG_INTERVAL,
	OPT_LOCAL_ROUTES,
	OPT_DEVICE_SOCKET,
	OPT_BUSY_POLL,
};

/* Every option of every command: getopt knows them all, so one of another command is named as such. */
static const struct option longopts[] = {
	{ "cgroup", required_argument, NULL, OPT_CGROUP },
	{ "pin-path", required_argument, NULL, OPT_PIN_PATH },
	{ "max-dmbs", required_argument, NULL, OPT_MAX_DMBS },
	{ "dmb-size", required_argument, NULL, OPT_DMB_SIZE },
	{ "local-cidr", required_argument, NULL, OPT_LOCAL_CIDR },
	{ "exclude-cidr", required_argument, NULL, OPT_EXCLUDE_CIDR },
	{ "local-routes", required_argument, NULL, OPT_LOCAL_ROUTES },
	{ "upgrade", no_argument, NULL, OPT_UPGRADE },
	{ "allow-blocking", no_argument, NULL, OPT_ALLOW_BLOCKING },
	{ "no-churn-detect", no_argument, NULL, OPT_NO_CHURN_DETECT },
	{ "eager-senders", no_argument, NULL, OPT_EAGER_SENDERS },
	{ "senders", required_argument, NULL, OPT_SENDERS },
	{ "churn-window", required_argument, NULL, OPT_CHURN_WINDOW },
	{ "mount-bpffs", no_argument, NULL, OPT_MOUNT_BPFFS },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "force", no_argument, NULL, OPT_FORCE },
	{ "exclude-port", required_argument, NULL, OPT_EXCLUDE_PORT },
	{ "include-port", required_argument, NULL, OPT_INCLUDE_PORT },
	{ "port", required_argument, NULL, OPT_PORT },
	{ "state", required_argument, NULL, OPT_STATE },
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "all", no_argument, NULL, OPT_ALL },
	{ "metrics-addr", required_argument, NULL, OPT_METRICS_ADDR },
	{ "unload-on-exit", no_argument, NULL, OPT_UNLOAD_ON_EXIT },
	{ "device-socket", required_argument, NULL, OPT_DEVICE_SOCKET },
	{ "busy-poll", required_argument, NULL, OPT_BUSY_POLL },
	{ "stay", no_argument, NULL, OPT_STAY },
	{ "gone", no_argument, NULL, OPT_GONE },
	{ "soft", no_argument, NULL, OPT_SOFT },
	{ "type", required_argument, NULL, OPT_TYPE },
	{ "log-events", required_argument, NULL, OPT_LOG_EVENTS },
	{ "log-interval", required_argument, NULL, OPT_LOG_INTERVAL },
	{ "json", no_argument, NULL, 'j' },
	{ "wide", no_argument, NULL, 'w' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* An option of the load configuration (load and run): 0 or LISM_EXIT_USAGE. */
static int load_option(struct lism_load_cfg *cfg, int c, const char *arg, char *err, size_t errlen)
{
	__u64 size;

	switch (c) {
	case OPT_CGROUP:
		if (!*arg || strlen(arg) >= sizeof(cfg->cgroup))
			return fail(err, errlen, "--cgroup: invalid path");
		strcpy(cfg->cgroup, arg);
		return 0;
	case OPT_MAX_DMBS:
		if (lism_parse_u32(arg, 1, LISM_MAX_DMBS_LIMIT, &cfg->max_dmbs))
			return fail(err, errlen, "--max-dmbs: '%s' is not a number in 1..%u", arg,
				    LISM_MAX_DMBS_LIMIT);
		return 0;
	case OPT_DMB_SIZE:
		if (lism_parse_size(arg, &size) || size < LISM_MIN_DMB_SIZE || size > LISM_MAX_DMB_SIZE)
			return fail(err, errlen, "--dmb-size: '%s' is not a size in %uK..%uM (e.g. 256K, 1M)",
				    arg, LISM_MIN_DMB_SIZE >> 10, LISM_MAX_DMB_SIZE >> 20);
		cfg->dmb_size = (__u32)size;
		return 0;
	case OPT_LOCAL_CIDR:
	case OPT_EXCLUDE_CIDR: {
		int *n = c == OPT_LOCAL_CIDR ? &cfg->n_local_cidrs : &cfg->n_exclude_cidrs;
		struct lism_cidr *list = c == OPT_LOCAL_CIDR ? cfg->local_cidrs : cfg->exclude_cidrs;
		const char *name = c == OPT_LOCAL_CIDR ? "--local-cidr" : "--exclude-cidr";
		char item[64];

		/* a comma-separated list, so one ConfigMap value can carry several */
		for (const char *p = arg; *p;) {
			if (list_item(&p, item, sizeof(item)))
				return fail(err, errlen, "%s: '%s' is not a list of prefixes", name, arg);
			if (*n >= LISM_MAX_CIDRS)
				return fail(err, errlen, "%s: at most %d", name, LISM_MAX_CIDRS);
			if (lism_parse_cidr(item, &list[*n]))
				return fail(err, errlen, "%s: '%s' is not an address or prefix with zero host bits",
					    name, item);
			(*n)++;
		}
		return 0;
	}
	case OPT_EXCLUDE_PORT:
	case OPT_INCLUDE_PORT: {
		int *n = c == OPT_EXCLUDE_PORT ? &cfg->n_exclude_ports : &cfg->n_include_ports;
		__u16 *ports = c == OPT_EXCLUDE_PORT ? cfg->exclude_ports : cfg->include_ports;
		const char *name = c == OPT_EXCLUDE_PORT ? "--exclude-port" : "--include-port";
		char item[64];
		__u32 port;

		for (const char *p = arg; *p;) {
			if (list_item(&p, item, sizeof(item)))
				return fail(err, errlen, "%s: '%s' is not a list of ports", name, arg);
			if (*n >= LISM_MAX_PORTS)
				return fail(err, errlen, "%s: at most %d", name, LISM_MAX_PORTS);
			if (lism_parse_u32(item, 1, 65535, &port))
				return fail(err, errlen, "%s: '%s' is not a port in 1..65535", name, item);
			ports[(*n)++] = (__u16)port;
		}
		return 0;
	}
	case OPT_LOCAL_ROUTES: /* a value, not a flag: a ConfigMap can carry it */
		if (strcmp(arg, "on") && strcmp(arg, "off"))
			return fail(err, errlen, "--local-routes: '%s' is not on or off", arg);
		cfg->local_routes = !strcmp(arg, "on");
		return 0;
	case OPT_ALLOW_BLOCKING:
		cfg->allow_blocking = 1;
		return 0;
	case OPT_NO_CHURN_DETECT:
		cfg->no_churn_detect = 1;
		return 0;
	case OPT_EAGER_SENDERS:
		cfg->eager_senders = 1;
		return 0;
	case OPT_SENDERS: /* the same as --eager-senders, with a value a ConfigMap can carry */
		cfg->eager_senders = lism_parse_senders(arg);
		if (cfg->eager_senders < 0)
			return fail(err, errlen, "--senders: '%s' is not adaptive or eager", arg);
		return 0;
	case OPT_CHURN_WINDOW:
		if (lism_parse_u32(arg, 0, LISM_CHURN_WINDOW_MAX_MS, &cfg->churn_window_ms))
			return fail(err, errlen, "--churn-window: '%s' is not a number of ms in 0..%u (0: off)",
				    arg, LISM_CHURN_WINDOW_MAX_MS);
		if (!cfg->churn_window_ms) { /* one ConfigMap value can switch it off */
			cfg->no_churn_detect = 1;
			cfg->churn_window_ms = LISM_CHURN_WINDOW_MS;
		}
		return 0;
	case OPT_MOUNT_BPFFS:
		cfg->mount_bpffs = 1;
		return 0;
	}
	return fail(err, errlen, "option %d has no parser (a bug: report it)", c);
}

static int parse_timeout(const char *arg, unsigned int *out, char *err, size_t errlen)
{
	__u32 t;

	if (lism_parse_u32(arg, 0, 86400, &t))
		return fail(err, errlen, "--timeout: '%s' is not a number of seconds in 0..86400", arg);
	*out = t;
	return 0;
}

static int parse_event_types(int c, const char *arg, __u32 *types, char *err, size_t errlen)
{
	if (lism_event_types_parse(arg, types))
		return fail(err, errlen, "%s: '%s' is not all, none or a list of %s",
			    c == OPT_TYPE ? "--type" : "--log-events", arg, LISM_EV_NAMES);
	if (c == OPT_TYPE && !*types)
		return fail(err, errlen, "--type none: nothing to follow");
	return 0;
}

/* Each command's own options, into its own struct (the table below says which it takes). */

static int load_opt(struct lism_opts *o, int c, const char *arg, char *err, size_t errlen)
{
	if (c == OPT_UPGRADE) {
		o->load.upgrade = 1;
		return 0;
	}
	return load_option(&o->load.cfg, c, arg, err, errlen);
}

static int unload_opt(struct lism_opts *o, int c, const char *arg, char *err, size_t errlen)
{
	if (c == OPT_TIMEOUT)
		return parse_timeout(arg, &o->unload.timeout_s, err, errlen);
	if (c == OPT_FORCE)
		o->unload.force = 1;
	else if (c == OPT_STAY)
		o->unload.stay = 1;
	return 0;
}

static int status_opt(struct lism_opts *o, int c, const char *arg, char *err, size_t errlen)
{
	(void)c, (void)arg, (void)err, (void)errlen;
	o->status.gone = 1; /* --gone, its one option */
	return 0;
}

/* --device-socket of exec, device, conns and stats: an absolute path that fits a sockaddr_un. */
static int device_socket_opt(char *dst, size_t len, const char *arg, char *err, size_t errlen)
{
	if (arg[0] != '/' || strlen(arg) >= len)
		return fail(err, errlen, "--device-socket: '%s' is not an absolute path of at most %zu bytes", arg,
			    len - 1);
	strcpy(dst, arg);
	return 0;
}

static int conns_opt(struct lism_opts *o, int c, const char *arg, char *err, size_t errlen)
{
	struct lism_conns_opts *co = &o->conns;
	__u32 port;
	int st;

	switch (c) {
	case 'w':
		co->wide = 1;
		return 0;
	case OPT_PORT:
		if (lism_parse_u32(arg, 1, 65535, &port))
			return fail(err, errlen, "--port: '%s' is not a port in 1..65535", arg);
		co->port = (int)port;
		return 0;
	case OPT_STATE:
		st = lism_tcp_state_code(arg);
		if (st < 0)
			return fail(err, errlen, "--state: '%s' is not a TCP state (ESTAB, CLOSE-WAIT, ...)", arg);
		co->state = st + 1;
		return 0;
	case OPT_MODE:
		if (!strcmp(arg, "shortcut"))
			co->mode = LISM_MODE_SHORTCUT;
		else if (!strcmp(arg, "tcp"))
			co->mode = LISM_MODE_TCP;
		else if (!strcmp(arg, "pending"))
			co->mode = LISM_MODE_PENDING;
		else if (!strcmp(arg, "ring"))
			co->mode = LISM_MODE_RING;
		else
			return fail(err, errlen, "--mode: '%s' is not shortcut, ring, tcp or pending", arg);
		return 0;
	case OPT_DEVICE_SOCKET:
		return device_socket_opt(co->device_socket, sizeof(co->device_socket), arg, err, errlen);
	}
	return 0;
}

static int stats_opt(struct lism_opts *o, int c, const char *arg, char *err, size_t errlen)
{
	(void)c; /* --device-socket, its only one */
	return device_socket_opt(o->stats.device_socket, sizeof(o->stats.device_socket), arg, err, errlen);
}

static int events_opt(struct lism_opts *o, int c, const char *arg, char *err, size_t errlen)
{
	if (c == OPT_ALL) {
		o->events.all = 1;
		return 0;
	}
	return parse_event_types(c, arg, &o->events.types, err, errlen);
}

static int run_opt(struct lism_opts *o, int c, const char *arg, char *err, size_t errlen)
{
	struct lism_run_opts *r = &o->run;

	switch (c) {
	case OPT_TIMEOUT:
		return parse_timeout(arg, &r->timeout_s, err, errlen);
	case OPT_METRICS_ADDR:
		if (strlen(arg) >= sizeof(r->metrics_addr) || !valid_listen_addr(arg))
			return fail(err, errlen,
				    "--metrics-addr: '%s' is not ADDR:PORT (e.g. 127.0.0.1:19435, [::1]:19435)", arg);
		strcpy(r->metrics_addr, arg);
		return 0;
	case OPT_UNLOAD_ON_EXIT:
		r->unload_on_exit = 1;
		return 0;
	case OPT_DEVICE_SOCKET:
		if (!strcmp(arg, "none")) {
			r->device_socket[0] = '\0';
			return 0;
		}
		if (arg[0] != '/' || strlen(arg) >= sizeof(r->device_socket))
			return fail(err, errlen, "--device-socket: '%s' is not an absolute path of at most %zu bytes, "
				    "or none", arg, sizeof(r->device_socket) - 1);
		strcpy(r->device_socket, arg);
		return 0;
	case OPT_LOG_EVENTS:
		return parse_event_types(c, arg, &r->event_types, err, errlen);
	case OPT_LOG_INTERVAL:
		if (lism_parse_u32(arg, 0, LISM_MAX_LOG_INTERVAL, &r->log_interval_s))
			return fail(err, errlen, "--log-interval: '%s' is not a number of seconds in 0..%u", arg,
				    LISM_MAX_LOG_INTERVAL);
		return 0;
	}
	return load_option(&r->cfg, c, arg, err, errlen);
}

static int mount_opt(struct lism_opts *o, int c, const char *arg, char *err, size_t errlen)
{
	(void)c, (void)arg, (void)err, (void)errlen;
	o->mount.soft = 1; /* --soft, its one option */
	return 0;
}

/* Arguments after the options. */

static int stats_args(struct lism_opts *o, int n, char **args, char *err, size_t errlen)
{
	if (n == 0)
		return 0;
	if (n == 1 && !strcmp(args[0], "reset")) {
		o->stats.reset = 1;
		return 0;
	}
	return fail(err, errlen, "stats: unexpected argument '%s' (only 'reset')", args[0]);
}

static int set_args(struct lism_opts *o, int n, char **args, char *err, size_t errlen)
{
	struct lism_set_opts *so = &o->set;
	int active, eager;

	if (n != 2)
		return fail(err, errlen, "set: expected 'active on|off|drain', 'max-dmbs N', 'churn-detect on|off' "
			    "or 'senders adaptive|eager'");
	active = !strcmp(args[0], "active");
	if (active || !strcmp(args[0], "churn-detect")) {
		so->key = active ? LISM_SET_ACTIVE : LISM_SET_CHURN_DETECT;
		if (!strcmp(args[1], "on"))
			so->value = 1;
		else if (!strcmp(args[1], "off"))
			so->value = 0;
		else if (active && !strcmp(args[1], "drain"))
			so->value = LISM_ACTIVE_DRAIN;
		else if (active)
			return fail(err, errlen, "set active: '%s' is not on, off or drain", args[1]);
		else
			return fail(err, errlen, "set %s: '%s' is not on or off", args[0], args[1]);
		return 0;
	}
	if (!strcmp(args[0], "senders")) {
		eager = lism_parse_senders(args[1]);
		if (eager < 0)
			return fail(err, errlen, "set senders: '%s' is not adaptive or eager", args[1]);
		so->key = LISM_SET_SENDERS;
		so->value = (__u32)eager;
		return 0;
	}
	if (!strcmp(args[0], "max-dmbs")) {
		so->key = LISM_SET_MAX_DMBS;
		if (lism_parse_u32(args[1], 1, LISM_MAX_DMBS_LIMIT, &so->value))
			return fail(err, errlen, "set max-dmbs: '%s' is not a number in 1..%u", args[1],
				    LISM_MAX_DMBS_LIMIT);
		return 0;
	}
	return fail(err, errlen, "set: unknown setting '%s' (active, max-dmbs, churn-detect, senders)", args[0]);
}

/* Defaults. */

static void load_init(struct lism_opts *o)
{
	lism_load_cfg_init(&o->load.cfg);
}

static void unload_init(struct lism_opts *o)
{
	o->unload.timeout_s = LISM_DEFAULT_UNLOAD_TIMEOUT;
}

static void events_init(struct lism_opts *o)
{
	o->events.types = LISM_EV_ALL;
}

/* $LISM_DEVICE, as liblism reads it: the device's commands and views meet its programs by default. */
static void device_default(char *dst, size_t len)
{
	snprintf(dst, len, "%s", lism_device_path(getenv("LISM_DEVICE")));
}

static void run_init(struct lism_opts *o)
{
	lism_load_cfg_init(&o->run.cfg);
	o->run.timeout_s = LISM_DEFAULT_UNLOAD_TIMEOUT;
	o->run.log_interval_s = LISM_DEFAULT_LOG_INTERVAL;
	o->run.event_types = LISM_EV_DAEMON_DEFAULT;
	strcpy(o->run.metrics_addr, LISM_DEFAULT_METRICS_ADDR);
	device_default(o->run.device_socket, sizeof(o->run.device_socket));
}

static int exec_opt(struct lism_opts *o, int c, const char *arg, char *err, size_t errlen)
{
	if (c == OPT_BUSY_POLL) {
		/* exec/spin.h's LISM_SPIN_MAX_US */
		if (lism_parse_u32(arg, 0, 100000, &o->exec.busy_poll_us))
			return fail(err, errlen, "exec: --busy-poll '%s': microseconds, 0 to 100000", arg);
		o->exec.busy_poll_set = 1;
		return 0;
	}
	return device_socket_opt(o->exec.device_socket, sizeof(o->exec.device_socket), arg, err, errlen);
}

static int device_opt(struct lism_opts *o, int c, const char *arg, char *err, size_t errlen)
{
	(void)c; /* --device-socket, its only one */
	return device_socket_opt(o->device.device_socket, sizeof(o->device.device_socket), arg, err, errlen);
}

static void conns_init(struct lism_opts *o)
{
	device_default(o->conns.device_socket, sizeof(o->conns.device_socket));
}

static void stats_init(struct lism_opts *o)
{
	device_default(o->stats.device_socket, sizeof(o->stats.device_socket));
}

static void device_init(struct lism_opts *o)
{
	device_default(o->device.device_socket, sizeof(o->device.device_socket));
}

/* lism exec's command: everything after the options (getopt stops at the first non-option). */
static int exec_args(struct lism_opts *o, int n, char **args, char *err, size_t errlen)
{
	if (n < 1)
		return fail(err, errlen, "exec: missing the command to run (lism exec [--device-socket PATH] [--busy-poll US] -- CMD...)");
	o->exec.argv = args;
	return 0;
}

#define LOAD_OPTIONS                                                                                  \
	OPT_CGROUP, OPT_MAX_DMBS, OPT_DMB_SIZE, OPT_LOCAL_CIDR, OPT_EXCLUDE_CIDR, OPT_LOCAL_ROUTES,    \
		OPT_ALLOW_BLOCKING, OPT_NO_CHURN_DETECT, OPT_EAGER_SENDERS,                            \
		OPT_SENDERS, OPT_CHURN_WINDOW, OPT_MOUNT_BPFFS, OPT_EXCLUDE_PORT, OPT_INCLUDE_PORT

/*
 * The command table: each command's name, the options it takes besides
 * --pin-path, -v and -h (0-terminated), the function that reads them into
 * its struct, the one that reads its arguments (NULL: it takes none), and
 * its defaults.
 */
static const struct command {
	const char *name;
	enum lism_cmd cmd;
	const int *options;
	int (*option)(struct lism_opts *o, int c, const char *arg, char *err, size_t errlen);
	int (*args)(struct lism_opts *o, int n, char **args, char *err, size_t errlen);
	void (*init)(struct lism_opts *o);
} commands[] = {
	{ "load", LISM_CMD_LOAD, (const int[]){ LOAD_OPTIONS, OPT_UPGRADE, 0 }, load_opt, NULL, load_init },
	{ "unload", LISM_CMD_UNLOAD, (const int[]){ OPT_TIMEOUT, OPT_FORCE, OPT_STAY, 0 }, unload_opt, NULL,
	  unload_init },
	{ "status", LISM_CMD_STATUS, (const int[]){ 'j', OPT_GONE, 0 }, status_opt, NULL, NULL },
	{ "conns", LISM_CMD_CONNS, (const int[]){ 'j', 'w', OPT_PORT, OPT_STATE, OPT_MODE, OPT_DEVICE_SOCKET, 0 },
	  conns_opt, NULL, conns_init },
	{ "stats", LISM_CMD_STATS, (const int[]){ 'j', OPT_DEVICE_SOCKET, 0 }, stats_opt, stats_args, stats_init },
	{ "events", LISM_CMD_EVENTS, (const int[]){ 'j', OPT_ALL, OPT_TYPE, 0 }, events_opt, NULL, events_init },
	{ "run", LISM_CMD_RUN,
	  (const int[]){ LOAD_OPTIONS, 'j', OPT_TIMEOUT, OPT_METRICS_ADDR, OPT_UNLOAD_ON_EXIT, OPT_LOG_EVENTS,
			 OPT_LOG_INTERVAL, OPT_DEVICE_SOCKET, 0 },
	  run_opt, NULL, run_init },
	{ "set", LISM_CMD_SET, (const int[]){ 0 }, NULL, set_args, NULL },
	{ "mount-bpffs", LISM_CMD_MOUNT_BPFFS, (const int[]){ OPT_SOFT, 0 }, mount_opt, NULL, NULL },
	{ "probe", LISM_CMD_PROBE, (const int[]){ 'j', 0 }, NULL, NULL, NULL },
	{ "exec", LISM_CMD_EXEC, (const int[]){ OPT_DEVICE_SOCKET, OPT_BUSY_POLL, 0 }, exec_opt, exec_args, NULL },
	{ "device", LISM_CMD_DEVICE, (const int[]){ OPT_DEVICE_SOCKET, 0 }, device_opt, NULL, device_init },
	{ "help", LISM_CMD_HELP, (const int[]){ 0 }, NULL, NULL, NULL },
	{ "version", LISM_CMD_VERSION, (const int[]){ 0 }, NULL, NULL, NULL },
};

const char *lism_cmd_name(enum lism_cmd cmd)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (commands[i].cmd == cmd)
			return commands[i].name;
	return "?";
}

static int takes(const struct command *cmd, int c)
{
	if (c == OPT_PIN_PATH || c == 'v' || c == 'h')
		return 1;
	for (const int *p = cmd->options; *p; p++)
		if (*p == c)
			return 1;
	return 0;
}

int lism_parse_args(int argc, char **argv, struct lism_opts *o, char *err, size_t errlen)
{
	const struct command *cmd = NULL;
	const char *cmdname;
	char **av;
	int c, ac, ret;

	memset(o, 0, sizeof(*o));
	strcpy(o->c.pin_path, LISM_DEFAULT_PIN_PATH);
	err[0] = '\0';

	if (argc < 2)
		return fail(err, errlen, "missing command (try 'lism help')");
	cmdname = argv[1];
	if (!strcmp(cmdname, "-h") || !strcmp(cmdname, "--help"))
		cmdname = "help";
	if (!strcmp(cmdname, "--version"))
		cmdname = "version";
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(cmdname, commands[i].name))
			cmd = &commands[i];
	if (!cmd)
		return fail(err, errlen, "unknown command '%s' (try 'lism help')", cmdname);
	o->cmd = cmd->cmd;
	if (cmd->init)
		cmd->init(o);

	/* getopt sees the command as argv[0]; av[optind - 1] is the option just read */
	av = argv + 1;
	ac = argc - 1;
	optind = 0; /* full getopt reset (GNU), also for repeated calls */
	opterr = 0;
	/* exec: the command's own options are its own ("+": stop at the first non-option) */
	while ((c = getopt_long(ac, av, cmd->cmd == LISM_CMD_EXEC ? "+:jwvh" : ":jwvh", longopts, NULL)) != -1) {
		const char *arg = optarg, *optname = av[optind - 1];

		/* a long option given a value it takes none of (--force=1): optopt is its code */
		if (c == '?' && optopt && !strncmp(optname, "--", 2) && strchr(optname, '='))
			return fail(err, errlen, "%s: option '%.*s' takes no value", cmdname,
				    (int)(strchr(optname, '=') - optname), optname);
		if (c == '?' && optopt > 0 && optopt < 128)
			return fail(err, errlen, "%s: unknown option '-%c'", cmdname, optopt);
		if (c == '?')
			return fail(err, errlen, "%s: unknown option '%s'", cmdname, optname);
		if (c == ':')
			return fail(err, errlen, "%s: option '%s' needs a value", cmdname, optname);
		if (!takes(cmd, c)) {
			for (const struct option *lo = longopts; lo->name; lo++)
				if (lo->val == c)
					optname = lo->name;
			return fail(err, errlen, "%s: option '--%s' does not apply to this command", cmdname,
				    optname);
		}
		switch (c) {
		case OPT_PIN_PATH:
			if (arg[0] != '/' || strlen(arg) >= sizeof(o->c.pin_path) - 64)
				return fail(err, errlen, "--pin-path: '%s' must be an absolute path", arg);
			strcpy(o->c.pin_path, arg);
			continue;
		case 'v':
			o->c.verbose = 1;
			continue;
		case 'j':
			o->c.json = 1;
			continue;
		case 'h':
			o->cmd = LISM_CMD_HELP;
			return LISM_EXIT_OK;
		}
		ret = cmd->option(o, c, arg, err, errlen);
		if (ret)
			return ret;
	}
	if (cmd->args)
		return cmd->args(o, ac - optind, av + optind, err, errlen);
	if (ac - optind)
		return fail(err, errlen, "%s: unexpected argument '%s'", cmdname, av[optind]);
	return 0;
}
