/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Which peers may be on this host, so only they ever see the option (and
 * the GID in it): loopback, this network namespace's own addresses at load
 * time, and --local-cidr prefixes (e.g. the node's pod CIDR).
 */
#ifndef LISM_SCOPE_H
#define LISM_SCOPE_H

#include "cli.h"

/* Fill the pinned scope map @fd; @n_out gets the number of entries. */
int lism_scope_fill(int fd, const struct lism_cidr *extra, int n_extra, int *n_out);

#endif
