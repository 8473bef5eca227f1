/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Loading an instance, the library call under `lism load` and `lism run`:
 * probe -> open -> configure -> load -> attach the core, then each optional
 * feature on its own (optional.h).  Every map is pinned by name under the
 * pin directory (LIBBPF_PIN_BY_NAME), so a load creates the pins and an
 * upgrade opens the same object over them: one pin path for both.
 *
 * Rule: these calls print nothing and return 0 or -errno, with what failed
 * in a struct lism_error (error.h).  A load that fails leaves nothing
 * behind; one that succeeds leaves everything pinned and attached.
 */
#ifndef LISM_LOAD_H
#define LISM_LOAD_H

#include <limits.h>
#include <linux/types.h>
#include <string.h>

#include "error.h"
#include "lism/abi.h"
#include "lism/churn.h"
#include "lism/feature.h"

#define LISM_DEFAULT_PIN_PATH "/sys/fs/bpf/lism"
#define LISM_MAX_CIDRS 64
#define LISM_MAX_PORTS 64

struct lism_cidr {
	__u8 addr[16];       /* IPv6, or IPv4 as ::ffff:a.b.c.d */
	__u32 prefixlen;     /* over the 128-bit form */
};

/* What an instance is loaded with (lism load's and lism run's options). */
struct lism_load_cfg {
	char cgroup[PATH_MAX];  /* empty: the cgroup2 mount root */
	__u32 max_dmbs;
	__u32 dmb_size;
	__u32 churn_window_ms;
	int allow_blocking;
	int no_churn_detect;  /* every connection may engage (include/lism/churn.h) */
	int eager_senders;    /* sends run the data path from the handshake on (include/lism/sender.h) */
	int mount_bpffs;      /* mount bpffs at /sys/fs/bpf if the pin path needs it */
	int local_routes;     /* this node's pods and addresses from its routes (routes.h) */
	int n_local_cidrs;
	struct lism_cidr local_cidrs[LISM_MAX_CIDRS];
	int n_exclude_cidrs;
	struct lism_cidr exclude_cidrs[LISM_MAX_CIDRS];
	int n_exclude_ports;
	__u16 exclude_ports[LISM_MAX_PORTS];
	int n_include_ports;
	__u16 include_ports[LISM_MAX_PORTS];
};

/* The defaults `lism load` documents. */
static inline void lism_load_cfg_init(struct lism_load_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->max_dmbs = LISM_DEFAULT_MAX_DMBS;
	cfg->dmb_size = LISM_DEFAULT_DMB_SIZE;
	cfg->churn_window_ms = LISM_CHURN_WINDOW_MS;
}

/* What a load or an upgrade did, for the caller to say. */
struct lism_load_info {
	char cgroup[PATH_MAX];      /* where the handshake is attached */
	int mounted_bpffs;          /* it mounted bpffs at /sys/fs/bpf */
	int scope_entries;
	int scope_full;             /* some of the node's routes did not fit the scope map */
	int features_unrecorded;    /* the features map could not be written: status will not say */
	struct lism_feature_state features[LISM_F_MAX];
	int stop_signal;            /* a SIGINT/SIGTERM/SIGHUP/SIGQUIT held off until it was whole, or 0 */
	__u32 ablated;              /* LISM_ABLATE_* the bench switched off (LISM_ABLATE; lism/ablate.h) */
};

/* Load a new instance at @pin_path, which must be empty or missing. */
int lism_load(const char *pin_path, const struct lism_load_cfg *cfg, struct lism_load_info *info,
	      struct lism_error *e);

/*
 * This build's programs over the instance at @pin_path, of the same
 * layout: state, GID, settings and connections stay (the cgroup link
 * switches atomically).  @info->cgroup is left empty.
 */
int lism_upgrade(const char *pin_path, struct lism_load_info *info, struct lism_error *e);

/* Mount bpffs at /sys/fs/bpf unless @pin_path already is on bpffs; @mounted: it did. */
int lism_mount_bpffs(const char *pin_path, int *mounted, struct lism_error *e);

/* Only root may load (CAP_BPF, CAP_NET_ADMIN and CAP_PERFMON). */
int lism_require_root(struct lism_error *e);

#endif
