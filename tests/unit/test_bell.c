// SPDX-License-Identifier: GPL-2.0-only
/*
 * The doorbell rule (exec/bell.h) over every interleaving: an exhaustive
 * search of the states of one writer and two readers of a ring direction,
 * each atomic operation of the protocol one step, with the rule's own
 * functions deciding each step.  It checks, in every reachable state, the
 * invariant bell.h states (doorbells on the socket plus those in flight
 * equal those owed plus one per rung stretch), that no state leaves bytes
 * unread with every reader asleep in the kernel and no doorbell coming (a
 * lost wakeup), and that every state with no step left is the clean end:
 * everything read, no doorbell on the socket or owed, no flag left set.
 *
 * The readers, per configuration: a spinner (POLLING set, spin, POLLING
 * cleared, then read or sleep in the kernel) and a plain waiter (clears
 * POLLING, then reads or sleeps: a blocking recv, a wait with no spin),
 * threads of one process (no process that holds the ring with another
 * spins: exec/conn.c).  They read under one lock (the rx lock), taking one
 * byte or all there is.
 * The search is of sequentially consistent interleavings: the code's full
 * fences and acquire/release pairs are what make x86 and arm64 behave so
 * for these operations (ring.c, "Ordering"), but for the one store a
 * writer makes with no fence after it (its cursor, when it may carry:
 * bell.h, carried counts).  That store is modelled as its store buffer
 * holds it: bytes published are hidden from the readers until the
 * writer's next locked operation (its add), the buffer's own drain (a
 * step at any time), or a sleeper's fence (membarrier, exec/fence.h).
 *
 * The spin mirror (bell.h): with one reader (a process with one thread),
 * the reader copies POLLING with CARRY into a word of its own after each
 * change of the doorbell word (a step of its own, the writer's steps in
 * between), and a new generation with each spin; the writer carries with
 * no look at the doorbell word while the mirror says so and its
 * generation is the one the writer's last CAS of CARRIED was made in.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "exec/bell.h"

/*
 * Reader kinds (0: absent).  SLEEPER is a plain waiter that counts itself
 * asleep in the word as it ends every spin (lism_bell_sleep_begin);
 * REPORTER a spinner that tells an application of what it found and never
 * reads it (POLLING is never set while a wait is counted).  LOOKER is a
 * sleeper whose take leaves POLLING set (lism_bell_take_look): between its
 * take and its next wait the application runs, for any number of steps.
 * BLIND is a looker whose next wait sleeps in the kernel without the
 * library (a wait it does not see): the search must find its lost wakeup.
 * LSPIN is a looker whose wait spins first and, when the spin finds
 * bytes, reads them with POLLING still set (exec/poll.c); else it sleeps
 * as a sleeper does.  SREPORTER is a wait that sleeps as a sleeper does
 * (counted, fenced) and tells an application that never reads: what its
 * fence found must stay said for the other reader's waits.
 */
enum { SPINNER = 1, PLAIN, SLEEPER, REPORTER, LOOKER, BLIND, LSPIN, SREPORTER };
enum { R_BEGIN, R_END, R_CHECK, R_SLEEP, R_LOCK, R_CONSUME, R_TAKE, R_EAT, R_DEAD, R_COUNT, R_UNCOUNT, R_LCHECK,
       R_FENCE };

#define CARRY_MAX 2 /* the writer carries up to this many bytes (half the DMB in ring.c) */

struct state {
	__u64 word;        /* prod.bell */
	__u8 prod, cons;   /* bytes published, consumed */
	__u8 sock;         /* doorbells on the reader's socket */
	__u8 owed;         /* doorbells the readers owe (shared, under the lock) */
	__u8 wpc, wsent;   /* writer: 0 publish, 1 add, 2 ring; messages done */
	__u8 wlen;         /* the message in hand's length */
	__u8 carry;        /* bytes published and not counted (carried) */
	__u8 hidden;       /* bytes published the readers may not see yet (the writer's store buffer) */
	__u8 said;         /* bit i: reader i's sleep_begin (and fence) said bytes: it reads, not sleeps */
	__u8 lock;         /* 0, or 1 + the holder */
	__u8 mpol;         /* the spin mirror says POLLING with CARRY */
	__u8 wfresh;       /* the writer set CARRIED in the mirror's generation */
	__u8 mpend;        /* the reader's mirror step is due */
	__u8 pc[2], take[2];
};

struct model {
	int kind[2];
	int msgs;          /* the writer's messages, each 1 or 2 bytes */
	bool no_count;     /* a mutation: a sleeper ends spins but is not counted */
	bool carry;        /* the readers set CARRY with POLLING: the writer may carry */
	bool no_fence;     /* a mutation: a sleeper's fence shows nothing hidden */
	bool mirror;       /* one reader, which keeps the spin mirror */
	bool late_clear;   /* a mutation: a sleeper clears the mirror after its fence */
	bool no_gen;       /* a mutation: the writer carries on the mirror alone, no generation */
	bool no_reset;     /* a mutation: an add that saw the spin over keeps the writer's generation */
	bool expected;     /* the search must find errors: said as information (an error fails the run) */
	/* the search */
	struct state *stack;
	size_t depth, cap;
	__u64 *seen;       /* open addressing, key 0 unused */
	size_t seen_cap, states;
	int errors, lost; /* lost: of them, states that lose a wakeup */
};

static __u64 key_of(const struct state *s)
{
	__u64 k = (__u64)(lism_bell_unread(s->word) + 16) |
		  (s->word & (LISM_BELL_FLAGS | LISM_BELL_CARRY | LISM_BELL_CARRIED)) >> 53;

	k = k << 4 | s->prod;
	k = k << 4 | s->cons;
	k = k << 4 | s->sock;
	k = k << 4 | s->owed;
	k = k << 2 | s->wpc;
	k = k << 3 | s->wsent;
	k = k << 2 | s->wlen;
	k = k << 2 | s->lock;
	k = k << 2 | s->carry;
	k = k << 3 | s->hidden;
	k = k << 2 | s->said;
	k = k << 2 | (s->word >> 48 & 3); /* the sleepers */
	k = k << 3 | (__u64)(s->mpol | s->wfresh << 1 | s->mpend << 2);
	for (int i = 0; i < 2; i++)
		k = (k << 4 | s->pc[i]) << 4 | s->take[i];
	return k + 1;
}

static int seen_add(struct model *m, const struct state *s)
{
	__u64 k = key_of(s), h = k * 0x9e3779b97f4a7c15ull;

	for (size_t i = (size_t)(h >> 20) & (m->seen_cap - 1);; i = (i + 1) & (m->seen_cap - 1)) {
		if (m->seen[i] == k)
			return 0;
		if (!m->seen[i]) {
			m->seen[i] = k;
			cr_assert_lt(++m->states, m->seen_cap / 2, "the state space outgrew the table");
			return 1;
		}
	}
}

static void push(struct model *m, const struct state *s)
{
	if (!seen_add(m, s))
		return;
	if (m->depth == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 4096;
		m->stack = realloc(m->stack, m->cap * sizeof(*m->stack));
		cr_assert_not_null(m->stack);
	}
	m->stack[m->depth++] = *s;
}

static void fail(struct model *m, const struct state *s, const char *what)
{
	m->lost += !strncmp(what, "lost wakeup", 11);
	if (m->errors++ >= 3)
		return;
	if (m->expected)
		cr_log_info("found, as it must be: %s", what);
	else
		cr_log_error("%s: word unread %lld flags %#llx prod %u cons %u sock %u owed %u writer %u/%u "
			     "carry %u hidden %u readers %u %u lock %u", what, (long long)lism_bell_unread(s->word),
			     (unsigned long long)(s->word & (LISM_BELL_FLAGS | LISM_BELL_CARRY | LISM_BELL_CARRIED)) >> 59, s->prod, s->cons,
			     s->sock, s->owed, s->wpc, s->wsent, s->carry, s->hidden, s->pc[0], s->pc[1], s->lock);
}

/* The bytes the readers see published. */
static int visible(const struct state *s)
{
	return s->prod - s->hidden;
}

/* Where reader @i's next wait starts. */
static __u8 next_wait(const struct model *m, int i)
{
	switch (m->kind[i]) {
	case PLAIN:
		return R_END;
	case SLEEPER:
	case LOOKER:
	case SREPORTER:
		return R_COUNT;
	case LSPIN:
		return R_BEGIN;
	case BLIND:
		return R_CHECK;
	default:
		return R_BEGIN;
	}
}

static bool counts(const struct model *m, int i)
{
	return m->kind[i] == SLEEPER || m->kind[i] == LOOKER || m->kind[i] == LSPIN || m->kind[i] == SREPORTER;
}

static int alive(const struct model *m, const struct state *s, int i)
{
	return m->kind[i] && s->pc[i] != R_DEAD;
}

static void check(struct model *m, const struct state *s)
{
	int inflight = s->wpc == 2, asleep = 1;

	if (s->sock + inflight != s->owed + lism_bell_rung(s->word))
		fail(m, s, "doorbells out of step with the rule");
	if (!lism_bell_valid(s->word, 16))
		fail(m, s, "a word the rule cannot make");
	for (int i = 0; i < 2; i++)
		if (alive(m, s, i) && s->pc[i] != R_SLEEP)
			asleep = 0;
	/* the writer may stop here for good (it waits for an answer): bytes
	 * unread need a reader awake or a doorbell on the socket */
	if (asleep && !s->sock && s->wpc == 0 && s->prod != s->cons)
		fail(m, s, "lost wakeup: bytes unread, every reader asleep, no doorbell");
	/* a reporter never reads: the sleeper must be woken for what it hid */
	for (int i = 0; i < 2; i++)
		if (counts(m, i) && s->pc[i] == R_SLEEP && (m->kind[!i] == REPORTER || m->kind[!i] == SREPORTER) &&
		    m->kind[i] != SREPORTER && !s->sock && s->wpc == 0 &&
		    s->prod != s->cons)
			fail(m, s, "lost wakeup: a sleeper without its doorbell, bytes a spin hid");
}

/* The reader @i's steps from @s; returns how many it pushed. */
static int reader_steps(struct model *m, const struct state *s, int i)
{
	struct state n = *s;
	bool owes;

	if (s->mpend) { /* the mirror follows the word (ring.c, mirror_sync): a new generation per spin */
		bool pol = lism_bell_carries(s->word);

		n.mpend = 0;
		if (pol && !s->mpol)
			n.wfresh = 0;
		n.mpol = pol;
		push(m, &n);
		return 1;
	}
	switch (s->pc[i]) {
	case R_BEGIN: /* a spinner: POLLING while the count is 0 or below */
		n.word = lism_bell_poll_begin(s->word, m->carry ? LISM_BELL_CARRY : 0);
		n.mpend = m->mirror;
		n.pc[i] = m->kind[i] == LSPIN ? R_LCHECK : R_END;
		break;
	case R_LCHECK: /* found bytes: read them, POLLING kept; else sleep */
		n.pc[i] = visible(s) != s->cons || lism_bell_unread(s->word) > 0 ? R_LOCK : R_COUNT;
		break;
	case R_COUNT: /* a sleeper counts itself and ends every spin, one operation */
		n.word = m->no_count ? lism_bell_poll_end(s->word) : lism_bell_sleep_begin(s->word);
		n.mpend = m->mirror && !m->late_clear; /* before its fence */
		/* what it says is the word's alone (conn.c, tcp_look; poll.c) */
		n.said = (__u8)((s->said & ~(1u << i)) | (unsigned)lism_bell_silent(n.word) << i);
		n.pc[i] = n.word & LISM_BELL_CARRIED ? R_FENCE : R_CHECK;
		break;
	case R_FENCE: { /* membarrier: every writer's store is seen; the cursors say (ring.c, rx_fenced) */
		bool unsaid;

		if (!m->no_fence)
			n.hidden = 0;
		unsaid = visible(&n) != s->cons && !lism_bell_rung(s->word);
		n.word = lism_bell_fenced(s->word, unsaid);
		if (lism_bell_silent(n.word) || (unsaid && !lism_bell_rung(n.word)))
			n.said |= (__u8)(1u << i);
		n.mpend = m->mirror && m->late_clear;
		n.pc[i] = R_CHECK;
		break;
	}
	case R_UNCOUNT:
		n.word = m->no_count ? s->word : lism_bell_sleep_end(s->word);
		n.pc[i] = m->kind[i] == SREPORTER ? R_COUNT : R_LOCK; /* it says, and waits again */
		break;
	case R_END: /* the spin ends (whatever it saw; the interleavings are its time) */
		n.word = lism_bell_poll_end(s->word);
		n.mpend = m->mirror;
		n.pc[i] = R_CHECK;
		break;
	case R_CHECK: {
		/* a counted sleeper knows what its sleep_begin and fence said, no more */
		bool ready = counts(m, i) && !m->no_count ? (s->said >> i & 1)
							  : visible(s) != s->cons || lism_bell_unread(s->word) > 0;

		if (m->kind[i] == REPORTER) { /* says it, or finds nothing, and spins again */
			n.pc[i] = R_BEGIN;
			break;
		}
		n.pc[i] = ready ? (counts(m, i) ? R_UNCOUNT : R_LOCK) : R_SLEEP;
		break;
	}
	case R_SLEEP: /* in the kernel: woken by a byte on the socket */
		if (!s->sock)
			return 0;
		n.pc[i] = counts(m, i) ? R_UNCOUNT : R_LOCK;
		break;
	case R_LOCK:
		if (s->lock)
			return 0;
		n.lock = (__u8)(1 + i);
		n.pc[i] = R_CONSUME;
		break;
	case R_CONSUME: {
		int avail = visible(s) - s->cons;

		if (!avail) {
			n.pc[i] = R_EAT;
			break;
		}
		n.pc[i] = R_TAKE;
		n.cons = (__u8)(s->cons + 1);
		n.take[i] = 1;
		push(m, &n);
		if (avail == 1)
			return 1;
		n.cons = (__u8)visible(s);
		n.take[i] = (__u8)avail;
		break;
	}
	case R_TAKE:
		n.word = m->kind[i] >= LOOKER ? lism_bell_take_look(s->word, s->take[i], &owes,
								    m->carry ? LISM_BELL_CARRY : 0)
					      : lism_bell_take(s->word, s->take[i], &owes);
		n.owed = (__u8)(s->owed + owes);
		n.mpend = m->mirror && m->kind[i] >= LOOKER;
		n.take[i] = 0;
		n.pc[i] = R_EAT;
		break;
	case R_EAT: { /* the owed ones that are there, never more; the lock goes */
		int e = s->owed < s->sock ? s->owed : s->sock;

		n.owed = (__u8)(s->owed - e);
		n.sock = (__u8)(s->sock - e);
		n.lock = 0;
		n.pc[i] = next_wait(m, i);
		break;
	}
	default:
		return 0;
	}
	push(m, &n);
	return 1;
}

static int writer_steps(struct model *m, const struct state *s)
{
	struct state n = *s;

	int pushed = 0;

	if (s->hidden) { /* the store buffer drains, at any time */
		n.hidden = 0;
		push(m, &n);
		n = *s;
		pushed = 1;
	}
	switch (s->wpc) {
	case 0: /* publish a message of 1 or 2 bytes (into the store buffer) */
		if (s->wsent == m->msgs)
			return pushed;
		n.wpc = 1;
		for (int len = 1; len <= 2; len++) {
			n.prod = (__u8)(s->prod + len);
			n.hidden = (__u8)(s->hidden + len);
			n.wlen = (__u8)len;
			push(m, &n);
		}
		return pushed + 2;
	case 1: /* carry it (no fence: its look at the word is SC, its store still hidden), or count it
		   and what it carried (a locked add: the buffer drains) and ring if the rule says so */
		if (m->mirror && m->carry && s->mpol && (s->wfresh || m->no_gen) && s->carry + s->wlen <= CARRY_MAX) {
			/* the mirror says so in the generation of its last CAS: no look at the word */
			n.carry = (__u8)(s->carry + s->wlen);
			n.wpc = 0;
			n.wsent = (__u8)(s->wsent + 1);
			n.wlen = 0;
			break;
		}
		if (m->carry && lism_bell_carries(s->word) && s->carry + s->wlen <= CARRY_MAX) {
			if (!(s->word & LISM_BELL_CARRIED)) { /* the spin's first: a CAS, which drains */
				n.word = s->word | LISM_BELL_CARRIED;
				n.hidden = 0;
			}
			n.wfresh = s->mpol; /* the mirror's generation is the CAS's (none while it is off) */
			n.carry = (__u8)(s->carry + s->wlen);
			n.wpc = 0;
			n.wsent = (__u8)(s->wsent + 1);
			n.wlen = 0;
			break;
		}
		n.word = s->word + s->wlen + s->carry;
		n.hidden = 0;
		n.carry = 0;
		if (m->mirror && !m->no_reset && !lism_bell_carries(s->word))
			n.wfresh = 0; /* its add saw the spin over: carries look at the word again */
		n.wpc = lism_bell_rings(s->word, s->wlen + s->carry) ? 2 : 0;
		n.wsent = (__u8)(s->wsent + (n.wpc == 0));
		n.wlen = n.wpc ? s->wlen : 0;
		break;
	default: /* the doorbell's byte */
		n.sock = (__u8)(s->sock + 1);
		n.wpc = 0;
		n.wsent = (__u8)(s->wsent + 1);
		n.wlen = 0;
		break;
	}
	push(m, &n);
	return pushed + 1;
}

/* The states that break the rule; *@lost: of them, those that lose a wakeup. */
static int explore_run(struct model *mp, size_t min_states, int *lost);
static int explore_carry(int kind0, int kind1, int msgs, bool no_count, bool carry, bool no_fence, bool expected,
			 size_t min_states, int *lost);

static int explore_model(int kind0, int kind1, int msgs, bool no_count, bool expected, size_t min_states, int *lost)
{
	return explore_carry(kind0, kind1, msgs, no_count, false, false, expected, min_states, lost);
}

static int explore_carry(int kind0, int kind1, int msgs, bool no_count, bool carry, bool no_fence, bool expected,
			 size_t min_states, int *lost)
{
	return explore_run(&(struct model){ .kind = { kind0, kind1 }, .msgs = msgs, .no_count = no_count,
					    .carry = carry, .no_fence = no_fence, .expected = expected },
			   min_states, lost);
}

static int explore_run(struct model *mp, size_t min_states, int *lost)
{
	struct model m = *mp;
	int kind0 = m.kind[0], kind1 = m.kind[1], msgs = m.msgs;
	struct state s0 = { .word = LISM_BELL_INIT };

	m.seen_cap = 1u << 22;
	m.seen = calloc(m.seen_cap, sizeof(*m.seen));
	cr_assert_not_null(m.seen);
	for (int i = 0; i < 2; i++)
		s0.pc[i] = m.kind[i] ? next_wait(&m, i) : R_DEAD;
	push(&m, &s0);
	while (m.depth) {
		struct state s = m.stack[--m.depth];
		int steps;

		check(&m, &s);
		steps = writer_steps(&m, &s);
		for (int i = 0; i < 2; i++)
			if (alive(&m, &s, i))
				steps += reader_steps(&m, &s, i);
		/* a carry may stay (the writer's next add has it): the count lags by it */
		if (!steps && kind0 != REPORTER && kind1 != REPORTER && kind0 != SREPORTER && kind1 != SREPORTER &&
		    (s.prod != s.cons || s.wsent != msgs || s.sock || s.owed || (s.word & LISM_BELL_FLAGS) || s.mpol ||
		     lism_bell_unread(s.word) + s.carry))
			fail(&m, &s, "stuck, not at the clean end");
	}
	cr_log_info("readers %d %d, %d messages%s%s: %zu states", kind0, kind1, msgs, m.carry ? ", carried" : "",
		    m.mirror ? ", mirrored" : "", m.states);
	cr_assert_geq(m.states, min_states, "the search reached only %zu states", m.states);
	free(m.seen);
	free(m.stack);
	if (lost)
		*lost = m.lost;
	return m.errors;
}

static void explore(int kind0, int kind1, int msgs, size_t min_states)
{
	int errors = explore_model(kind0, kind1, msgs, false, false, min_states, NULL);

	cr_assert_eq(errors, 0, "%d states break the rule (readers %d %d)", errors, kind0, kind1);
}

Test(bell, one_spinner_every_interleaving)
{
	explore(SPINNER, 0, 4, 100);
}

Test(bell, a_spinner_and_a_plain_waiter_every_interleaving)
{
	explore(SPINNER, PLAIN, 3, 1000);
}

Test(bell, two_spinners_every_interleaving)
{
	explore(SPINNER, SPINNER, 3, 1000);
}

/*
 * A spinner that tells its application of bytes it hid and never reads
 * them, beside a waiter asleep in the kernel: only the sleepers count
 * keeps that waiter's doorbell (without it the search finds the lost
 * wakeup: the second test).
 */
Test(bell, a_spinner_that_does_not_read_never_hides_bytes_from_a_sleeper)
{
	explore(REPORTER, SLEEPER, 3, 1000);
}

Test(bell, without_the_sleepers_count_a_sleeper_loses_its_doorbell)
{
	int lost;

	explore_model(REPORTER, SLEEPER, 3, true, true, 1000, &lost);
	cr_assert_gt(lost, 0, "the search found no lost wakeup");
}

/*
 * A reader that leaves POLLING set in its take, while its application
 * runs, beside each other reader: every wait of its own ends the look
 * (sleep_begin), so no byte is lost.  One whose wait the library does not
 * see loses its wakeup: why a socket with such a wait never looks.
 */
Test(bell, a_reader_that_looks_before_it_sleeps_every_interleaving)
{
	explore(LOOKER, 0, 4, 100);
	explore(LOOKER, LOOKER, 3, 1000);
	explore(LOOKER, SPINNER, 3, 1000);
	explore(LOOKER, PLAIN, 3, 1000);
	explore(LOOKER, SLEEPER, 3, 1000);
	explore(REPORTER, LOOKER, 3, 1000);
	explore(LSPIN, 0, 4, 100);
	explore(LSPIN, LSPIN, 3, 1000);
	explore(LSPIN, SLEEPER, 3, 1000);
	explore(LSPIN, PLAIN, 3, 1000);
	explore(REPORTER, LSPIN, 3, 1000);
}

Test(bell, a_looker_whose_wait_the_library_does_not_see_loses_its_doorbell)
{
	int lost;

	explore_model(BLIND, 0, 3, false, true, 50, &lost);
	cr_assert_gt(lost, 0, "the search found no lost wakeup");
}

Test(bell, a_plain_waiter_alone_is_the_old_rule)
{
	explore(PLAIN, 0, 4, 50);
}

/* The search can fail: a rule that rings while POLLING is set breaks the invariant ... */
Test(bell, the_rule_is_what_the_search_checks)
{
	bool owes;
	__u64 w = lism_bell_poll_begin(LISM_BELL_INIT, 0);

	cr_assert(w & LISM_BELL_POLLING, "an empty ring may be polled");
	cr_assert_not(lism_bell_rings(w, 3), "no doorbell while polled");
	w = lism_bell_poll_end(w + 3);
	cr_assert(lism_bell_silent(w), "bytes counted while polled stay silent after");
	cr_assert_eq(lism_bell_poll_begin(w, 0), w, "no polling while bytes are counted");
	w = lism_bell_take(w, 3, &owes);
	cr_assert_not(owes, "the silent stretch's end owes nothing");
	cr_assert_eq(w, LISM_BELL_INIT, "and clears SILENT");
	cr_assert(lism_bell_rings(w, 1), "the next stretch rings");
	w = lism_bell_take(w + 1, 1, &owes);
	cr_assert(owes, "and its end owes its doorbell");
	cr_assert_not(lism_bell_valid(LISM_BELL_INIT | LISM_BELL_SILENT, 16), "SILENT with nothing counted");
	cr_assert_not(lism_bell_valid(LISM_BELL_INIT + 40, 16), "more than two rings counted");
	cr_assert_not(lism_bell_valid(LISM_BELL_INIT | 1ull << 58, 16), "a bit the rule never sets");
	w = lism_bell_sleep_begin(lism_bell_poll_begin(LISM_BELL_INIT, 0));
	cr_assert_not(w & LISM_BELL_POLLING, "a sleeper ends the spin");
	cr_assert_eq(lism_bell_poll_begin(w, 0), w, "and no spin begins while it sleeps");
	cr_assert_eq(lism_bell_sleep_end(w), LISM_BELL_INIT, "until it wakes");
}

/*
 * Carried counts (bell.h): the readers set CARRY with POLLING, and the
 * writer then carries its bytes with no add and no fence, its cursor's
 * store still in its store buffer.  Every reader kind whose sleeps go
 * through sleep_begin (every wait liblism makes) loses nothing, the count
 * and the doorbells stay in step, and every run ends clean but for a
 * carry left to the writer's next add.
 */
static void explore_carried(int kind0, int kind1, int msgs, size_t min_states)
{
	int errors = explore_carry(kind0, kind1, msgs, false, true, false, false, min_states, NULL);

	cr_assert_eq(errors, 0, "%d states break the rule with carried counts (readers %d %d)", errors, kind0, kind1);
}

Test(bell, carried_counts_every_interleaving)
{
	static const struct {
		int kind0, kind1, msgs;
		size_t min_states;
	} configs[] = {
		{ SLEEPER, 0, 4, 100 },      { LOOKER, 0, 4, 100 },         { LSPIN, 0, 4, 100 },
		{ LOOKER, LOOKER, 3, 1000 }, { LOOKER, SLEEPER, 3, 1000 },  { LSPIN, LSPIN, 3, 1000 },
		{ LSPIN, SLEEPER, 3, 1000 }, { LSPIN, LOOKER, 3, 1000 },    { REPORTER, SLEEPER, 3, 1000 },
		{ REPORTER, LOOKER, 3, 1000 }, { REPORTER, LSPIN, 3, 1000 }, { SREPORTER, SLEEPER, 3, 1000 },
		{ SREPORTER, LSPIN, 3, 1000 }, { SREPORTER, LOOKER, 3, 1000 },
	};

	for (size_t i = 0; i < sizeof(configs) / sizeof(configs[0]); i++)
		explore_carried(configs[i].kind0, configs[i].kind1, configs[i].msgs, configs[i].min_states);
}

/* Without the sleeper's fence, a byte the writer carried stays in its
 * store buffer while every reader sleeps: the search finds it. */
Test(bell, carried_counts_without_the_fence_lose_a_wakeup)
{
	int lost;

	explore_carry(LSPIN, 0, 3, false, true, true, true, 50, &lost);
	cr_assert_gt(lost, 0, "the search found no lost wakeup");
}

/* A spinner that sleeps without sleep_begin (no fence) loses one too: why
 * every sleep of liblism's goes through it. */
Test(bell, carried_counts_need_every_sleep_to_fence)
{
	int lost;

	explore_carry(SPINNER, 0, 3, false, true, false, true, 50, &lost);
	cr_assert_gt(lost, 0, "the search found no lost wakeup");
}

Test(bell, the_carry_rule)
{
	__u64 w = lism_bell_poll_begin(LISM_BELL_INIT, LISM_BELL_CARRY);

	cr_assert(lism_bell_carries(w), "POLLING and CARRY: the writer carries");
	cr_assert_not(lism_bell_carries(lism_bell_poll_begin(LISM_BELL_INIT, 0)), "POLLING alone: it adds");
	cr_assert_eq(lism_bell_poll_end(w), LISM_BELL_INIT, "a spin in which nothing was carried ends clean");
	w = lism_bell_poll_end(w | LISM_BELL_CARRIED);
	cr_assert_not(lism_bell_carries(w), "a spin ended: it adds");
	cr_assert(w & LISM_BELL_CARRIED, "and the fence is still due");
	cr_assert_eq(lism_bell_fenced(w, false), LISM_BELL_INIT, "fenced: CARRY and CARRIED go");
	cr_assert_eq(lism_bell_fenced(w, true), w, "not while bytes are there unsaid");
	w = lism_bell_poll_begin(lism_bell_fenced(w, false), LISM_BELL_CARRY);
	cr_assert_eq(lism_bell_fenced(w, false), w, "a fence does not end the spin that began since");
	cr_assert(lism_bell_valid(LISM_BELL_INIT - 30, 16), "a count that lags by a carry and a send");
	cr_assert_not(lism_bell_valid(LISM_BELL_INIT - 33, 16), "by more than the DMB twice");
}

/* The mirror's mutations (explore_mirror). */
enum { MIRROR = 0, LATE_CLEAR, NO_GEN, NO_RESET };

static int explore_mirror(int kind0, int msgs, int mutation, bool expected, size_t min_states, int *lost)
{
	return explore_run(&(struct model){ .kind = { kind0, 0 }, .msgs = msgs, .carry = true, .mirror = true,
					    .late_clear = mutation == LATE_CLEAR, .no_gen = mutation == NO_GEN,
					    .no_reset = mutation == NO_RESET,
					    .expected = expected },
			   min_states, lost);
}

/*
 * The spin mirror (bell.h): a reader alone in its process, whose every
 * sleep goes through sleep_begin, loses nothing while its writer carries
 * on the mirror's word alone, and ends clean.
 */
Test(bell, the_spin_mirror_every_interleaving)
{
	static const int kinds[] = { SLEEPER, LOOKER, LSPIN, SREPORTER };

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		int errors = explore_mirror(kinds[i], 7, MIRROR, false, 100, NULL);

		cr_assert_eq(errors, 0, "%d states break the rule with the spin mirror (reader %d)", errors, kinds[i]);
	}
}

/* A sleeper that clears the mirror after its fence, a writer that carries
 * on the mirror with no generation, and one that keeps its generation
 * past an add that saw the spin over (its doorbell then seems to cover
 * what it carries after), each lose a wakeup. */
Test(bell, the_spin_mirror_cleared_after_the_fence_loses_a_wakeup)
{
	int lost;

	explore_mirror(LSPIN, 3, LATE_CLEAR, true, 50, &lost);
	cr_assert_gt(lost, 0, "the search found no lost wakeup");
}

Test(bell, the_spin_mirror_without_generations_loses_a_wakeup)
{
	int lost;

	explore_mirror(LSPIN, 3, NO_GEN, true, 50, &lost);
	cr_assert_gt(lost, 0, "the search found no lost wakeup");
}

Test(bell, the_spin_mirror_kept_past_an_add_loses_a_wakeup)
{
	int lost;

	explore_mirror(LOOKER, 5, NO_RESET, true, 50, &lost);
	cr_assert_gt(lost, 0, "the search found no lost wakeup");
}
