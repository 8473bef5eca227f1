/* SPDX-License-Identifier: GPL-2.0-only */
/* Command line of the lism tool: parsing only, no side effects (unit-tested). */
#ifndef LISM_CLI_H
#define LISM_CLI_H

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>

#include "error.h"
#include "lism/exec.h"
#include "load.h"
#include "unload.h"

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
	LISM_CMD_EXEC,
	LISM_CMD_DEVICE,
};

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
	LISM_MODE_RING,
};

/*
 * Each command's options, in a struct of its own (the command table in
 * cli.c says which options a command takes); every command takes these.
 */
struct lism_common_opts {
	char pin_path[PATH_MAX];
	int json;
	int verbose;
};

struct lism_load_opts {
	struct lism_load_cfg cfg;
	int upgrade;
};

struct lism_unload_opts {
	unsigned int timeout_s;
	int force;
	int stay; /* once done (or nothing was loaded), wait for SIGTERM (a cleanup DaemonSet's pod) */
};

struct lism_status_opts {
	int gone; /* exit 0 only when nothing is pinned at the pin path */
};

struct lism_conns_opts {
	int wide;
	int port;                 /* 0: any */
	int state;                /* BPF_TCP_* + 1, 0: any */
	enum lism_mode_filter mode;
	char device_socket[LISM_DEVICE_PATH_MAX]; /* lism exec's device: ring pairs' figures */
};

struct lism_stats_opts {
	int reset;
	char device_socket[LISM_DEVICE_PATH_MAX]; /* lism exec's device: its counters */
};

struct lism_follow_opts { /* lism events */
	int all;
	__u32 types; /* LISM_EV_TYPE() mask */
};

struct lism_run_opts {
	struct lism_load_cfg cfg;
	unsigned int timeout_s;      /* --unload-on-exit's wait */
	unsigned int log_interval_s; /* the summary line; 0: none */
	__u32 event_types;           /* --log-events */
	char metrics_addr[64];
	char device_socket[LISM_DEVICE_PATH_MAX]; /* lism exec's device (lism/exec.h); "" with --device-socket none */
	int unload_on_exit;
};

struct lism_set_opts {
	enum lism_set_key key;
	__u32 value; /* for LISM_SET_ACTIVE: 1 on, 0 off, LISM_ACTIVE_DRAIN */
};

struct lism_exec_opts {
	char device_socket[LISM_DEVICE_PATH_MAX]; /* "": $LISM_DEVICE's rule (lism_device_path) */
	char **argv;                              /* the command, NULL-terminated (main's argv) */
	__u32 busy_poll_us;                       /* --busy-poll: $LISM_BUSY_POLL_US for the command */
	int busy_poll_set;
};

struct lism_device_opts {
	char device_socket[LISM_DEVICE_PATH_MAX]; /* default: $LISM_DEVICE's rule (lism_device_path) */
};

struct lism_mount_opts {
	int soft; /* a failure is said and exits 0 */
};

struct lism_opts {
	enum lism_cmd cmd;
	struct lism_common_opts c;
	union {
		struct lism_load_opts load;
		struct lism_unload_opts unload;
		struct lism_status_opts status;
		struct lism_conns_opts conns;
		struct lism_stats_opts stats;
		struct lism_follow_opts events;
		struct lism_run_opts run;
		struct lism_set_opts set;
		struct lism_mount_opts mount;
		struct lism_exec_opts exec;
		struct lism_device_opts device;
	};
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
