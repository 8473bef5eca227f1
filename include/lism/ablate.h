/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Ablations, for `make bench` only: LISM_ABLATE=bulk-sndbuf,... in the
 * environment of the lism that loads switches those heuristics off in the
 * programs it loads (the objects' read-only lism_ablate, so a heuristic
 * left on costs nothing: the verifier drops the dead branch).  Each one's
 * ablation row in docs/benchmarks.md is why it stays.  The heuristics with
 * a setting of their own (churn detection, the sender rules)
 * are ablated through it instead.
 */
#ifndef LISM_ABLATE_H
#define LISM_ABLATE_H

#define LISM_ABLATE_BULK_SNDBUF  (1u << 0) /* a bulk joiner's SO_SNDBUF (sender.h) */
#define LISM_ABLATE_ONE_WAY_STOP (1u << 1) /* a one-way member stays watched instead of on TCP */
#define LISM_ABLATE_BULK_JOIN    (1u << 2) /* no join by send sizes: members join only both ways */
#define LISM_ABLATE_SEND_LIMITS  (1u << 3) /* members with small send limits join too */
#define LISM_ABLATE_RING_DMB_CACHE (1u << 4) /* ring DMBs of the whole --dmb-size (ring.h, the device's) */

#define LISM_ABLATE_NAMES "bulk-sndbuf, one-way-stop, bulk-join, send-limits, ring-dmb-cache"

#endif
