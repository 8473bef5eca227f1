/* SPDX-License-Identifier: GPL-2.0-only */
/* Command line of the lism tool: parsing only, no side effects (unit-tested). */
#ifndef LISM_CLI_H
#define LISM_CLI_H

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>

/* Exit codes, documented in docs/lism.8 */
enum lism_exit {
	LISM_EXIT_OK = 0,
	LISM_EXIT_FAIL = 1,    /* the operation failed (kernel or BPF error) */
	LISM_EXIT_USAGE = 2,   /* invalid command line */
	LISM_EXIT_ENV = 3,     /* environment not ready: privileges, BTF, bpffs, cgroup2, kernel features */
	LISM_EXIT_STATE = 4,   /* already loaded / not loaded / foreign pins */
	LISM_EXIT_BUSY = 5,    /* unload timed out: connections still use the shortcut */
};

enum lism_cmd {
	LISM_CMD_NONE = 0,
	LISM_CMD_LOAD,
	LISM_CMD_UNLOAD,
	LISM_CMD_STATUS,
	LISM_CMD_CONNS,
	LISM_CMD_STATS,
	LISM_CMD_EVENTS,
	LISM_CMD_RUN,
	LISM_CMD_SET,
	LISM_CMD_MOUNT_BPFFS,
	LISM_CMD_PROBE,
	LISM_CMD_HELP,
	LISM_CMD_VERSION,
};

#define LISM_DEFAULT_PIN_PATH "/sys/fs/bpf/lism"
#define LISM_MAX_CIDRS 64
#define LISM_MAX_PORTS 64
#define LISM_DEFAULT_UNLOAD_TIMEOUT 30
#define LISM_DEFAULT_METRICS_ADDR "127.0.0.1:19435"
#define LISM_DEFAULT_LOG_INTERVAL 60 /* seconds: lism run's summary line */
#define LISM_MAX_LOG_INTERVAL 86400
/* lism run logs no event unless told (its summary counts them), so that lism events can follow them */
#define LISM_EV_DAEMON_DEFAULT 0u

#define LISM_ACTIVE_DRAIN 2 /* set active drain */

enum lism_set_key {
	LISM_SET_NONE = 0,
	LISM_SET_ACTIVE, /* on, off, or off for a drain (LISM_DEV_F_DRAINING) */
	LISM_SET_MAX_DMBS,
	LISM_SET_CHURN_DETECT,
	LISM_SET_SENDERS,
};

/* lism conns --mode */
enum lism_mode_filter {
	LISM_MODE_ANY = 0,
	LISM_MODE_SHORTCUT,
	LISM_MODE_TCP,
	LISM_MODE_PENDING,
};

struct lism_cidr {
	__u8 addr[16];       /* IPv6, or IPv4 as ::ffff:a.b.c.d */
	__u32 prefixlen;     /* over the 128-bit form */
};

struct lism_opts {
	enum lism_cmd cmd;
	char pin_path[PATH_MAX];
	char cgroup[PATH_MAX];  /* empty: the cgroup2 mount root */
	__u32 max_dmbs;
	__u32 dmb_size;
	int json;
	int verbose;
	int allow_blocking;
	int no_stream_detect; /* every send may take the shortcut (see include/lism/stream.h) */
	int no_churn_detect;  /* every connection may engage (see include/lism/churn.h) */
	int eager_senders;    /* sends run the data path from the handshake on (include/lism/sender.h) */
	__u32 churn_window_ms;
	int mount_bpffs;
	int upgrade;
	int force;
	unsigned int timeout_s;
	int n_local_cidrs;
	struct lism_cidr local_cidrs[LISM_MAX_CIDRS];
	int n_exclude_cidrs;
	struct lism_cidr exclude_cidrs[LISM_MAX_CIDRS];
	int local_routes; /* --local-routes on: this node's pods and addresses from its routes (routes.h) */
	int n_exclude_ports;
	__u16 exclude_ports[LISM_MAX_PORTS];
	int n_include_ports;
	__u16 include_ports[LISM_MAX_PORTS];
	/* conns */
	int wide;
	int filter_port;                 /* 0: any */
	int filter_state;                /* BPF_TCP_* + 1, 0: any */
	enum lism_mode_filter filter_mode;
	/* stats */
	int stats_reset;
	/* events */
	int all_events;
	__u32 event_types;       /* LISM_EV_TYPE() mask: events --type, run --log-events */
	/* run */
	unsigned int log_interval_s; /* the summary line; 0: none */
	char metrics_addr[64];
	int unload_on_exit;
	/* unload: once done (or nothing was loaded), wait for SIGTERM (a cleanup DaemonSet's pod) */
	int stay;
	/* status --gone: exit 0 only when nothing is pinned at the pin path */
	int gone;
	/* mount-bpffs --soft: a failure is said and exits 0 */
	int soft;
	/* set */
	enum lism_set_key set_key;
	__u32 set_value; /* for LISM_SET_ACTIVE: 1 on, 0 off, LISM_ACTIVE_DRAIN */
};

/* "ESTAB", "SYN-SENT", ... (ss names) of a BPF_TCP_* state, and back (-1 unknown). */
const char *lism_tcp_state_name(int state);
int lism_tcp_state_code(const char *name);

/*
 * Parse argv ("lism <command> [options]").  On error returns
 * LISM_EXIT_USAGE and writes a one-line message (without the program name)
 * to @err.  Resets getopt, so it can be called repeatedly.
 */
int lism_parse_args(int argc, char **argv, struct lism_opts *o, char *err, size_t errlen);

/* "4096", "64k", "64KiB", "1M", "1MiB" (binary multiples).  0 or -EINVAL/-ERANGE. */
int lism_parse_size(const char *s, __u64 *out);

/* Decimal only, within [min, max].  0 or -EINVAL/-ERANGE. */
int lism_parse_u32(const char *s, __u32 min, __u32 max, __u32 *out);
int lism_parse_senders(const char *s);

/* "10.0.0.0/8", "fd00::/64", "192.0.2.1" (host route).  0 or -EINVAL. */
int lism_parse_cidr(const char *s, struct lism_cidr *out);

const char *lism_cmd_name(enum lism_cmd cmd);
void lism_usage(FILE *f);

#endif
