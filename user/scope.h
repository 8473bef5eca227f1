/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Which peers may be on this host, so only they ever see the option (and
 * the GID in it): loopback, this network namespace's own addresses at load
 * time, and --local-cidr prefixes (e.g. the node's pod CIDR), minus
 * --exclude-cidr prefixes.
 */
#ifndef LISM_SCOPE_H
#define LISM_SCOPE_H

#include "cli.h"

/*
 * Fill the pinned scope map @fd; @n_out gets the number of entries.  The
 * longest matching prefix decides, so an --exclude-cidr inside a local
 * prefix (or covering loopback or a host address) wins there.
 */
int lism_scope_fill(int fd, const struct lism_cidr *local, int n_local,
		    const struct lism_cidr *exclude, int n_exclude, int *n_out);

#endif
