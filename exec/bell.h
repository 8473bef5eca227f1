/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The doorbell rule of a ring direction (include/lism/ring.h, "Readiness"):
 * one 64-bit word, prod.bell, holds the ring's unread count (biased, so
 * that it stays positive) and two flags of the reader's, so that one
 * atomic operation sees all three.
 *
 * - The writer adds after it publishes bytes.  A crossing of the count
 *   above 0 rings one doorbell byte on the TCP socket, unless POLLING is
 *   set: a reader spins on the ring and sees the bytes there.
 * - The reader takes after it consumes.  A crossing back to 0 or below owes
 *   one doorbell (it eats it), unless the crossing up rang none: POLLING or
 *   SILENT set.
 * - A waiter sets POLLING only while the count is 0 or below, so every
 *   crossing up while it is set is silent.  Clearing it while the count is
 *   above 0 leaves SILENT set until the take that crosses back: those bytes
 *   have no doorbell, and whoever cleared POLLING says so (recv reads them,
 *   a poll wrapper reports the socket readable).
 * - A reader that looks at the ring before any wait of its own sleeps (a
 *   process whose every wait on the socket is this library's) may set
 *   POLLING in the take that empties the ring (lism_bell_take_look), and
 *   leave it set while the application runs: the writer's next crossing
 *   is silent too, and the reader's next wait finds the bytes there (its
 *   sleep_begin ends POLLING).  Request/response then rings no doorbell
 *   while both ends are busy.
 * - Every wait in the kernel for a ring socket's input counts itself in the
 *   word (SLEEPERS) and clears POLLING in the same operation, and reads the
 *   ring if bytes are there (lism_bell_sleep_begin); POLLING is never set
 *   while a wait is counted.  So a spinner on another thread, even one
 *   that never reads what it found, never leaves a sleeper without its
 *   doorbell.
 * - Carried counts: a reader whose process can fence its peers (exec/fence.h)
 *   sets CARRY with POLLING.  While both are set the writer does not add at
 *   all: it publishes its cursor, loads the word with no fence, and carries
 *   its bytes to its next add (a locked operation on a line the reader
 *   spins on was 77 % of a 14-byte sender's time).  Its first carry of a
 *   spin sets CARRIED, by a compare-and-swap against the word it saw (so
 *   never once POLLING is clear); sends of LISM_BELL_CARRY_SEND or more
 *   never carry (an add is little beside their copy, and a fence is not).
 *   The count then lags the cursors by the carry, so a spinning reader
 *   looks at the cursors, and a spin's end leaves CARRIED set: the next
 *   wait to sleep fences every writer's CPU (membarrier), then reads the
 *   cursors (the
 *   writer's stale look at POLLING was before its fence, so its cursor is
 *   seen; one after it sees POLLING clear and adds the carry with its
 *   bytes) and clears CARRY and CARRIED (lism_bell_fenced) unless bytes
 *   are there with no doorbell: until they are read or counted, every
 *   sleeper fences and says them.  A spin's end with nothing carried
 *   clears CARRY at once: no writer can carry with POLLING clear.  A carry stays below half the DMB, so the count stays
 *   in [-2 * size, 2 * size].
 * - The spin mirror: the reader's take writes the word on every recv, so
 *   a writer's load of it missed the cache on every send (30 % of a
 *   14-byte sender's time).  A reader in a process with one thread copies
 *   POLLING-with-CARRY into a word of its own (cons.spin, on the line the
 *   writer loads anyway) after every change of the word that sets or
 *   clears it, a new generation each time it turns on, and always before a
 *   sleeper's fence.  A writer whose last carry's CAS (or look at the
 *   word, CARRIED already set) was made while the mirror showed the
 *   generation it shows now carries with no look at the word; any other
 *   carry looks at the word as above.  An add that finds POLLING or CARRY
 *   clear forgets the generation: its doorbell would otherwise seem to
 *   cover bytes carried after it (the fence's look trusts a rung count).
 *   Threads of one process would race each other's mirror stores, so a
 *   process with more threads only turns it off.
 *
 * Invariant (tests/unit/test_bell.c checks it over every interleaving of a
 * writer and two readers): doorbells on the socket plus those decided and
 * not yet sent equal those owed plus 1 while a rung stretch is open (count
 * above 0, neither flag set).
 */
#ifndef LISM_EXEC_BELL_H
#define LISM_EXEC_BELL_H

#include <stdbool.h>

#include "lism/types.h"

#define LISM_BELL_BIAS    (1ull << 40)
#define LISM_BELL_COUNT   ((1ull << 48) - 1)
#define LISM_BELL_SLEEPER  (1ull << 48)  /* one wait asleep in the kernel for the ring's input */
#define LISM_BELL_SLEEPERS (0xffull << 48) /* their count; all ones: saturated, for good */
#define LISM_BELL_CARRIED (1ull << 59) /* the writer carried since the last fence: a sleeper fences first */
#define LISM_BELL_CARRY   (1ull << 60) /* with POLLING: the writer may carry */
#define LISM_BELL_CARRY_SEND 4096      /* the smallest send that never carries */
#define LISM_BELL_SILENT  (1ull << 61) /* bytes counted while POLLING, after it ended: no doorbell */
#define LISM_BELL_POLLING (1ull << 62) /* a reader spins on the ring: crossings up ring nothing */
#define LISM_BELL_FLAGS   (LISM_BELL_SILENT | LISM_BELL_POLLING)
#define LISM_BELL_INIT    LISM_BELL_BIAS /* a fresh ring: nothing unread */

/* The unread count the word holds. */
static inline __s64 lism_bell_unread(__u64 w)
{
	return (__s64)(w & LISM_BELL_COUNT) - (__s64)LISM_BELL_BIAS;
}

/* Whether a word read from the shared header is one this rule can make. */
static inline bool lism_bell_valid(__u64 w, __u32 size)
{
	__s64 u = lism_bell_unread(w);

	return !(w & ~(LISM_BELL_COUNT | LISM_BELL_SLEEPERS | LISM_BELL_FLAGS | LISM_BELL_CARRY | LISM_BELL_CARRIED)) &&
	       u >= -2 * (__s64)size &&
	       u <= 2 * (__s64)size &&
	       (!(w & LISM_BELL_SILENT) || u > 0);
}

/* The writer added @n to the word, which was @old: whether it rings a doorbell. */
static inline bool lism_bell_rings(__u64 old, __u64 n)
{
	__s64 u = lism_bell_unread(old);

	return !(old & LISM_BELL_POLLING) && u <= 0 && u + (__s64)n > 0;
}

/* The reader takes @n from @old: the new word; *@owes says whether it owes a doorbell. */
static inline __u64 lism_bell_take(__u64 old, __u64 n, bool *owes)
{
	__s64 u = lism_bell_unread(old);
	__u64 w = old - n;

	*owes = false;
	if (u > 0 && u - (__s64)n <= 0) {
		*owes = !(old & LISM_BELL_FLAGS);
		w &= ~LISM_BELL_SILENT;
	}
	return w;
}

/* A waiter starts spinning: the new word, with @carry (0 or LISM_BELL_CARRY);
 * @old itself when bytes are counted (read them first) or a wait sleeps
 * (no spin then). */
static inline __u64 lism_bell_poll_begin(__u64 old, __u64 carry)
{
	return lism_bell_unread(old) > 0 || (old & LISM_BELL_SLEEPERS) ? old : old | LISM_BELL_POLLING | carry;
}

/* The take of a reader that looks before it sleeps: POLLING set as
 * poll_begin would, in the same operation. */
static inline __u64 lism_bell_take_look(__u64 old, __u64 n, bool *owes, __u64 carry)
{
	return lism_bell_poll_begin(lism_bell_take(old, n, owes), carry);
}

/* The writer, which published its bytes and loaded @w with no fence:
 * whether it may carry them instead of adding (both flags set; the first
 * carry sets CARRIED by a compare-and-swap from @w). */
static inline bool lism_bell_carries(__u64 w)
{
	return (w & (LISM_BELL_POLLING | LISM_BELL_CARRY)) == (LISM_BELL_POLLING | LISM_BELL_CARRY);
}

/* Every writer's CPU was fenced after POLLING was cleared: CARRY and
 * CARRIED go, unless a spin began again since (they are that spin's
 * then), or @unsaid: bytes are published with no doorbell (the next
 * sleeper fences and says them too: the word alone does not). */
static inline __u64 lism_bell_fenced(__u64 old, bool unsaid)
{
	return (old & LISM_BELL_POLLING) || unsaid ? old : old & ~(LISM_BELL_CARRY | LISM_BELL_CARRIED);
}

/* Spinning ends: the new word (CARRIED stays: the fence is the next
 * sleeper's; CARRY alone goes, nothing was carried). */
static inline __u64 lism_bell_poll_end(__u64 old)
{
	if (!(old & LISM_BELL_POLLING))
		return old;
	old &= ~LISM_BELL_POLLING;
	if (!(old & LISM_BELL_CARRIED))
		old &= ~LISM_BELL_CARRY;
	return lism_bell_unread(old) > 0 ? old | LISM_BELL_SILENT : old;
}

/* A wait goes to sleep in the kernel: counted, and any spin ended, in one operation. */
static inline __u64 lism_bell_sleep_begin(__u64 old)
{
	__u64 w = lism_bell_poll_end(old);

	return (w & LISM_BELL_SLEEPERS) == LISM_BELL_SLEEPERS ? w : w + LISM_BELL_SLEEPER;
}

/* It woke (a saturated count stays: no spin on that ring again). */
static inline __u64 lism_bell_sleep_end(__u64 old)
{
	__u64 n = old & LISM_BELL_SLEEPERS;

	return n && n != LISM_BELL_SLEEPERS ? old - LISM_BELL_SLEEPER : old;
}

/* Bytes counted with no doorbell for them: the kernel will not say the socket is readable. */
static inline bool lism_bell_silent(__u64 w)
{
	return lism_bell_unread(w) > 0 && (w & LISM_BELL_FLAGS);
}

/* Bytes counted whose doorbell was rung (or is on its way): not silent. */
static inline bool lism_bell_rung(__u64 w)
{
	return lism_bell_unread(w) > 0 && !(w & LISM_BELL_FLAGS);
}

#endif
