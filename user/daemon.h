/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef LISM_DAEMON_H
#define LISM_DAEMON_H

#include "cli.h"

int lism_cmd_run(const struct lism_opts *o);

#endif
