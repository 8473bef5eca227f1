/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The optional features' programs (the data path, the conns iterator, the
 * backstop, the sweep), each loaded from its own object over an instance's
 * pinned maps once the core is loaded.  Rule: whatever happens here, the core keeps
 * running; a feature the probe finds unsupported, or the verifier refuses,
 * or that cannot attach, is recorded off with the reason (the refusal's
 * whole log saved, its path in the reason) and lism goes on without it.
 */
#ifndef LISM_OPTIONAL_H
#define LISM_OPTIONAL_H

#include <linux/types.h>

#include "lism/feature.h"

struct lism_probe;

/*
 * Load, attach and pin every optional program at @pin_path and record the
 * outcome in @st (the caller writes the features map).  At an upgrade each
 * replaces the program of the instance already there; one that cannot is
 * removed with what it set up (an instance runs one build's programs or
 * none, and a feature recorded off is off).  @entries: the instance's
 * capacity and @ablate the bench's ablations (lism_object_configure()).
 */
void lism_optional_load(const char *pin_path, __u32 entries, __u32 ablate, const struct lism_probe *probe,
			struct lism_feature_state st[LISM_F_MAX]);

/* The features only the probe decides (send sizes, BPF stats). */
void lism_probed_features(const struct lism_probe *probe, struct lism_feature_state st[LISM_F_MAX]);

#endif
