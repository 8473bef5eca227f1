/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The loopback-ism device as the control plane sees it: an instance's
 * pinned maps, its identity (GID, CHID) and a consistent-enough snapshot of
 * its counters for views.
 */
#ifndef LISM_DEVICE_H
#define LISM_DEVICE_H

#include <limits.h>

#include "bpf_time.h"
#include "lism/abi.h"
#include "lism/exec.h"
#include "lism/feature.h"
#include "lism/hist.h"
#include "lism/reason.h"

struct lism_instance {
	char pin_path[PATH_MAX];
	int device_fd;
	int usage_fd;
	int dmbs_fd;
	int stats_fd;
	int reasons_fd;
	int sizes_fd;
	int shortcut_fd;
};

struct lism_snapshot {
	struct lism_device dev;
	struct lism_usage usage;
	__u64 stats[LISM_S_MAX];
	__u64 reasons[LISM_R_MAX];
	__u64 sizes[LISM_HIST_BUCKETS]; /* shortcut sends per size bucket */
	__u32 confirmed;        /* connections with both ends CONFIRMED */
	__u32 shortcut_sockets; /* ends that joined the shortcut map (READY or CONFIRMED entries, paired
				   without a data path not counted) */
	__u32 sender_sockets;   /* of those, ends whose sends run the data path (the senders map) */
	__u32 pair_only;        /* entries paired without a data path (LISM_CONN_NO_DATA_PATH): nothing to drain */
	int attached;           /* the cgroup link is pinned */
	__u32 events_followed;  /* LISM_EV_TYPE() mask of the event types a reader holds a lease on */
	struct lism_exec_lease exec_lease; /* lism exec's device: its lease (lism/exec.h) */
	int exec_serving;       /* the lease is live: new pairs of marked ends may take a ring */
	int backstop;           /* the tcp_destroy_sock backstop's link is pinned */
	int backstop_misses_known; /* its program's pin was readable */
	__u64 backstop_misses;  /* destroys it did not see since its program loaded (recursion_misses) */
	struct lism_bpf_time bpf_time; /* what BPF stats counted of lism's programs */
	struct lism_feature_state features[LISM_F_MAX]; /* what runs and why not (the features map) */
};

/* Open an instance's pins; -ENOENT if nothing is loaded at @pin_path, -EPROTO if another layout. */
int lism_instance_open(struct lism_instance *in, const char *pin_path);
void lism_instance_close(struct lism_instance *in);

int lism_device_read(const struct lism_instance *in, struct lism_device *d);
/* LISM_EXIT_OK if the instance is of this build's layout; else says why and returns the exit code. */
int lism_layout_check(const struct lism_instance *in);
int lism_device_write(const struct lism_instance *in, const struct lism_device *d);
int lism_snapshot_read(const struct lism_instance *in, struct lism_snapshot *s);
/* Sockets really in the shortcut map, counting at most @limit (for unload's drain). */
int lism_shortcut_map_count(const struct lism_instance *in, __u32 limit, __u32 *out);

/* Sum of a per-CPU u64 array map's @n first entries into @out (0 where the map is shorter). */
int lism_percpu_sum(int fd, __u64 *out, unsigned int n);
/* Zero every entry of a per-CPU u64 array map. */
int lism_percpu_zero(int fd);

int lism_gid_generate(__u8 gid[16]);
/* 32 hex digits, high half then low half, separated by '-' (34 bytes with NUL). */
void lism_gid_format(const __u8 gid[16], char out[34]);

#endif
