/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The veth fast path (bpf/fastpath.bpf.c): attached through libxdp's
 * dispatcher in SKB mode to the interfaces that match --iface globs, its
 * maps pinned beside the instance's (include/lism/fastpath.h).
 */
#ifndef LISM_FASTPATH_USER_H
#define LISM_FASTPATH_USER_H

#include <stdio.h>

#include "cli.h"
#include "lism/fastpath.h"

/* `lism xdp attach|detach|status`; an enum lism_exit code. */
int lism_cmd_xdp(const struct lism_opts *o);

/*
 * Attach to every interface of this network namespace whose name matches
 * one of the comma-separated globs in @ifaces and is not attached yet, and
 * refresh the configuration (conntrack's TCP mode).  Returns how many were
 * newly attached, or -errno of the first failure (reported on stderr; the
 * other interfaces are still tried).  @log: print one line per attach.
 */
int lism_fastpath_sync(const char *pin_path, const char *ifaces, int log);

/* Detach from every interface of this network namespace and unpin the maps. */
int lism_fastpath_remove(const char *pin_path);

/* Per-counter sums over CPUs (enum lism_xdp_stat); -ENOENT when not attached. */
int lism_fastpath_stats(const char *pin_path, __u64 out[LISM_XDP_STAT_MAX]);

/* The counter's name in views and metrics ("forwarded", "no_ct", ...). */
const char *lism_xdp_stat_name(int stat);

#endif
