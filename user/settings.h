/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * An adopted instance and the settings of the lism run adopting it (a pod
 * restarted after a ConfigMap edit).  Rule: what the running instance can
 * change live is applied -- max-dmbs up to the table's size, churn
 * detection, senders, the scope's prefixes, the excluded and included
 * ports -- and each change is said; what it cannot (the table's size, the
 * DMB size, blocking sockets, the cgroup) is said and
 * named in @not_applied, for the lism_settings_not_applied metric.  It
 * never reloads: connections on the instance keep working.
 */
#ifndef LISM_SETTINGS_H
#define LISM_SETTINGS_H

#include <stddef.h>

#include "load.h"

/* "dmb_size,cgroup" (empty: all applied) into @not_applied; 0 or -errno. */
int lism_settings_reconcile(const char *pin_path, const struct lism_load_cfg *cfg, char *not_applied,
			    size_t len);

/* The names lism_settings_reconcile() may put in @not_applied (the metric's label values). */
extern const char *const lism_settings_names[];
extern const size_t lism_n_settings_names;

#endif
