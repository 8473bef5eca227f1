/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The fence of carried counts (exec/bell.h): while its reader spins with
 * CARRY, a writer publishes its cursor and looks at the doorbell word with
 * no fence between them, so its look may be older than its store is
 * visible.  A reader about to sleep has ended the spin; it then fences
 * every CPU that runs a registered process (membarrier
 * MEMBARRIER_CMD_GLOBAL_EXPEDITED: an IPI puts a full barrier into the
 * program each runs, and a CPU that runs none has switched since), so a
 * writer's look before that barrier comes after its cursor's store, which
 * the reader then sees; a look after it sees POLLING clear.
 *
 * Rules:
 * - A process takes part (lism_ring_carry) once the kernel registered it
 *   (MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, Linux 4.16; at start, and
 *   again in a fork's child), and unless $LISM_CARRY was 0 at start (the
 *   ablation).
 * - One fence serves every ring of a wait: poll, select and epoll fence
 *   once for all the rings whose sleep_begin said CARRY.
 * - A fence the kernel refuses (a seccomp filter set later by seccomp(2),
 *   which liblism does not see) ends carrying in this process for good,
 *   and waits LISM_FENCE_SETTLE_US instead, for the writer's store to
 *   drain (a store buffer drains in far less; not a proof: docs/exec.md).
 */
#ifndef LISM_EXEC_FENCE_H
#define LISM_EXEC_FENCE_H

#define LISM_FENCE_SETTLE_US 1000

/* At start; in a fork's child, registered again if the start said yes. */
void lism_fence_init(void);
void lism_fence_forked(void);

/* Fence every CPU that runs a registered process (every writer's). */
void lism_fence_peers(void);

#endif
