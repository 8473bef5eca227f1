/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The parts of lism, core or optional (docs/architecture.md, "Core and
 * optional").  Rule: a core feature that cannot run refuses the load; an
 * optional one never does -- lism loads without it and says so.  The
 * loader records, per feature, whether it runs on this instance and why
 * not, in the pinned "features" map; status, -j and /metrics read it.
 */
#ifndef LISM_FEATURE_H
#define LISM_FEATURE_H

#include "types.h"

enum lism_feature {
	LISM_F_HANDSHAKE,  /* core: sockops, the TCP option, pairing by token */
	LISM_F_DATA_PATH,  /* optional: the sk_msg redirect and the sender join timer */
	LISM_F_CONNS,      /* optional: the sockets iterator behind lism conns */
	LISM_F_BACKSTOP,   /* optional: tp_btf/tcp_destroy_sock gives back entries of unseen closes */
	LISM_F_SWEEP,      /* optional: a timer gives back entries of sockets freed unseen */
	LISM_F_SEND_SIZES, /* optional: per-sendmsg callback, so bulk one-way writers join */
	LISM_F_BPF_STATS,  /* optional: run time per program, as the kernel counts it */
	LISM_F_EXEC,       /* optional: lism exec's socket options (cgroup sockopt programs) */
	LISM_F_MAX
};

enum lism_feature_status {
	LISM_FS_UNKNOWN = 0, /* not recorded (map entry never written) */
	LISM_FS_ON = 1,
	LISM_FS_OFF = 2,
};

/* Why an optional feature is off. */
enum lism_feature_cause {
	LISM_FC_NONE = 0,
	LISM_FC_KERNEL = 1,   /* the probe: the kernel lacks something it needs */
	LISM_FC_VERIFIER = 2, /* the verifier refused its program */
	LISM_FC_ATTACH = 3,   /* loading or attaching it failed otherwise */
};

#define LISM_FEATURE_WHY_LEN 248

/* Value of the "features" map, indexed by enum lism_feature. */
struct lism_feature_state {
	__u8 status; /* enum lism_feature_status */
	__u8 cause;  /* enum lism_feature_cause */
	__u8 pad[6];
	char why[LISM_FEATURE_WHY_LEN]; /* for a person: what failed, "" when on */
};

#endif
