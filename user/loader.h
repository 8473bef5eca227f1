/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef LISM_LOADER_H
#define LISM_LOADER_H

#include "cli.h"

/* Both return an enum lism_exit code and print their own errors. */
int lism_cmd_load(const struct lism_opts *o);
/* Mount bpffs at the default place unless --pin-path already is on bpffs (init containers). */
int lism_cmd_mount_bpffs(const struct lism_opts *o);
int lism_cmd_unload(const struct lism_opts *o);
/* unload --stay: unload (nothing pinned: done), then wait for SIGTERM. */
int lism_cmd_unload_stay(const struct lism_opts *o);
/* load --upgrade of the instance at o->pin_path: this build's programs over its pinned state. */
int lism_upgrade(const struct lism_opts *o);

#endif
