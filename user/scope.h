/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Which peers may be on this host, so only they ever see the option (and
 * the GID in it): loopback, this network namespace's own addresses at load
 * time, and --local-cidr prefixes (e.g. the node's pod CIDR), minus
 * --exclude-cidr prefixes.
 */
#ifndef LISM_SCOPE_H
#define LISM_SCOPE_H

#include "load.h"
#include "lism/abi.h"

struct lism_scope_entry {
	struct lism_scope_key key;
	__u8 value; /* LISM_SCOPE_* */
};

/*
 * The configured entries, as lism_scope_fill() writes them (a malloc'd
 * array into @out): loopback, with @with_addrs this namespace's addresses
 * now (not link-local ones; without it, --local-routes brings them, kept
 * current), @local, then @exclude (an exclusion of a local entry's prefix
 * replaces it).  0 or -errno.
 */
int lism_scope_entries(const struct lism_cidr *local, int n_local, const struct lism_cidr *exclude,
		       int n_exclude, int with_addrs, struct lism_scope_entry **out, int *n_out);
/* Every entry of the scope map @fd (a malloc'd array into @out).  0 or -errno. */
int lism_scope_read(int fd, struct lism_scope_entry **out, int *n_out);
/* An IPv4 prefix in its IPv4-mapped form. */
int lism_scope_key_is_v4(const struct lism_scope_key *k);
/*
 * Inside fe80::/10 or 169.254/16: the same address may be on every link,
 * and a scope key names no device, so such prefixes are never in scope.
 */
int lism_cidr_link_local(const struct lism_cidr *c);

/*
 * Fill the pinned scope map @fd; @n_out gets the number of entries.  The
 * longest matching prefix decides, so an --exclude-cidr inside a local
 * prefix (or covering loopback or a host address) wins there.
 */
int lism_scope_fill(int fd, const struct lism_cidr *local, int n_local,
		    const struct lism_cidr *exclude, int n_exclude, int with_addrs, int *n_out);

#endif
