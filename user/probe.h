/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef LISM_PROBE_H
#define LISM_PROBE_H

#include <stddef.h>

/*
 * Check every program type, map type, helper and kfunc lism needs.
 * Returns the number missing and writes their names, comma separated, to
 * @missing.  Needs the privileges of a load.
 */
int lism_probe_kernel(char *missing, size_t len);

#endif
