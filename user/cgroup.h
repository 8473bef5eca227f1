/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef LISM_CGROUP_H
#define LISM_CGROUP_H

#include <stddef.h>

/*
 * First cgroup2 mount in @mounts (normally "/proc/mounts"), e.g.
 * /sys/fs/cgroup on unified hosts, /sys/fs/cgroup/unified on hybrid ones.
 * 0, or -ENOENT if there is none.
 */
int lism_cgroup2_mount(const char *mounts, char *out, size_t outlen);

/* Whether @path is a directory on cgroup2 (1), not (0), or -errno. */
int lism_is_cgroup2(const char *path);

#endif
