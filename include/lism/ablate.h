/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Ablations, for `make bench` only: LISM_ABLATE=pass-ahead,... in the
 * environment of the lism that loads switches those heuristics off in the
 * programs it loads (the objects' read-only lism_ablate, so a heuristic
 * left on costs nothing: the verifier drops the dead branch).  Each one's
 * ablation row in docs/benchmarks.md is why it stays.  The heuristics with
 * a setting of their own (stream and churn detection, the sender rules)
 * are ablated through it instead.
 */
#ifndef LISM_ABLATE_H
#define LISM_ABLATE_H

#define LISM_ABLATE_PASS_AHEAD (1u << 0)  /* a streaming send lets the next bytes pass (stream.h) */
#define LISM_ABLATE_SYNC_STUCK (1u << 1)  /* a sender mostly on TCP leaves (sender.h's window) */
#define LISM_ABLATE_BULK_SNDBUF (1u << 2) /* a bulk joiner's SO_SNDBUF (sender.h) */

#define LISM_ABLATE_NAMES "pass-ahead, sync-stuck, bulk-sndbuf"

#endif
