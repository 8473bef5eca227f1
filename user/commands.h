/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The lism tool's commands, one function each over its own options
 * (cli.h), dispatched by main.c.  Rule: a command prints and returns an
 * exit code (enum lism_exit); what it changes, it changes through the
 * library calls (load.h, unload.h), which print nothing.
 */
#ifndef LISM_COMMANDS_H
#define LISM_COMMANDS_H

#include <stdio.h>

#include "cli.h"

int lism_cmd_load(const struct lism_common_opts *co, const struct lism_load_opts *o);
int lism_cmd_unload(const struct lism_common_opts *co, const struct lism_unload_opts *o);
int lism_cmd_status(const struct lism_common_opts *co, const struct lism_status_opts *o);
int lism_cmd_conns(const struct lism_common_opts *co, const struct lism_conns_opts *o);
int lism_cmd_stats(const struct lism_common_opts *co, const struct lism_stats_opts *o);
int lism_cmd_events(const struct lism_common_opts *co, const struct lism_follow_opts *o);
int lism_cmd_run(const struct lism_common_opts *co, const struct lism_run_opts *o);
int lism_cmd_set(const struct lism_common_opts *co, const struct lism_set_opts *o);
int lism_cmd_mount_bpffs(const struct lism_common_opts *co, const struct lism_mount_opts *o);
int lism_cmd_probe(const struct lism_common_opts *co);
int lism_cmd_exec(const struct lism_common_opts *co, const struct lism_exec_opts *o);
int lism_cmd_device(const struct lism_common_opts *co, const struct lism_device_opts *o);

/*
 * What a load or an upgrade did, said the way lism load says it (lism run
 * says the same): the instance, then one line per feature that does not run.
 */
void lism_say_loaded(const char *pin_path, const struct lism_load_cfg *cfg, const struct lism_load_info *info);
void lism_say_upgraded(const char *pin_path, const struct lism_load_info *info);
/* What it did on its way, also when it failed: a bpffs it mounted, a stop signal it held off. */
void lism_say_aside(const struct lism_load_info *info, const char *what);
/* lism unload's progress and outcome, on standard output and standard error. */
int lism_unload_said(const char *pin_path, const struct lism_unload_cfg *cfg);

#endif
