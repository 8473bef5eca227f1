// SPDX-License-Identifier: GPL-2.0-only
/*
 * The sweep: gives back DMB entries whose socket is gone although nothing
 * saw it close.  The state callbacks and the tcp_destroy_sock backstop
 * release an entry when its socket closes; the soak showed, about once per
 * 2-4 M connections, a socket freed with neither having run for it (the
 * tracing backstop counts recursion misses under load; docs/reliability.md).
 * An entry leaked that way would stay in use forever.
 *
 * A BPF timer visits LISM_SWEEP_SLOTS_PER_TICK slots every
 * LISM_SWEEP_TICK_MS while any DMB is in use (an idle table costs nothing).
 * An entry is reaped only when the socket it recorded (set_owner()) is certainly
 * gone: the kernel address it published no longer holds a socket with its
 * cookie (cookies are never reused), or that socket's refcount is zero
 * (it is being freed: destroy has run).  A live socket keeps both, so it
 * is never reaped.  The release is the usual compare-and-swap on the token,
 * so a close or a backstop racing the sweep, or a slot reused meanwhile,
 * leaves exactly one winner.
 *
 * An optional feature in its own object: the handshake only starts the
 * timer again (sweep_kick in lism.bpf.h), and only lism_sweep_start here
 * sets it up, so a kernel that refuses this object runs lism without it.
 */
#include "dmb.bpf.h"

char LICENSE[] SEC("license") = "GPL";

const volatile bool lism_test_reject = false; /* LISM_TEST_REJECT_POINT */

struct sweep_walk {
	__u32 slot;
	__u32 capacity;
	__u32 wrapped;
};

/* Whether the socket at kernel address @addr that recorded @cookie is gone. */
static __always_inline int owner_gone(__u64 addr, __u64 cookie)
{
	const struct sock *sk = (const struct sock *)addr;
	__s64 now_cookie;
	int refs;

	/* probe reads: freed memory reads as whatever is there, never faults */
	if (bpf_core_read(&now_cookie, sizeof(now_cookie), &sk->__sk_common.skc_cookie.counter) ||
	    bpf_core_read(&refs, sizeof(refs), &sk->__sk_common.skc_refcnt.refs.counter))
		return 1;
	return (__u64)now_cookie != cookie || refs == 0;
}

static long sweep_slot(__u64 i, struct sweep_walk *w)
{
	__u32 slot = w->slot;
	__u64 token, cookie, *owner;
	struct lism_dmb *e, snap;

	(void)i;
	/* modulo, not a compare: the verifier must not follow each slot number */
	w->slot = (slot + 1) % w->capacity;
	if (!w->slot)
		w->wrapped = 1;
	e = dmb_get(slot);
	if (!e)
		return 0;
	token = __sync_fetch_and_add(&e->token, 0);
	cookie = e->cookie; /* set with its owner: an answer not yet accepted has none */
	owner = bpf_map_lookup_elem(&dmb_owner, &slot);
	if (!token || !cookie || !owner || !*owner || !owner_gone(*owner, cookie))
		return 0;
	snap = *e; /* for the event: the release clears the token */
	if (!release_own(e, token))
		return 0; /* released meanwhile by its close or the backstop */
	snap.conn_flags |= LISM_CONN_CLOSED;
	emit_event(LISM_EV_REAPED, LISM_R_NONE, &snap);
	stat_add(LISM_S_REAPED_GONE, 1);
	stat_add(LISM_S_CLOSES, 1);
	return 0;
}

static int sweep_tick(void *map, __u32 *key, struct lism_sweep *sw)
{
	struct lism_device *d = lism_dev();
	struct sweep_walk w = {};
	struct lism_usage *u;
	__u32 zero = 0;

	(void)map;
	(void)key;
	u = bpf_map_lookup_elem(&usage, &zero);
	if (!u || u->dmbs_in_use <= 0) {
		/* nothing to sweep: stop; the next socket to take an entry arms it again */
		__sync_lock_test_and_set(&sw->armed, 0);
		if (!u || u->dmbs_in_use <= 0 ||
		    __sync_val_compare_and_swap(&sw->armed, 0, 1) != 0)
			return 0;
		/* an entry was taken while we stopped: go on */
	}
	w.capacity = d ? d->capacity : 0;
	if (w.capacity) {
		w.slot = sw->next_slot % w.capacity;
		bpf_loop(LISM_SWEEP_SLOTS_PER_TICK < w.capacity ? LISM_SWEEP_SLOTS_PER_TICK : w.capacity,
			 sweep_slot, &w, 0);
	}
	sw->next_slot = w.slot;
	if (w.wrapped)
		stat_add(LISM_S_SWEEPS, 1);
	/* fails only if the timer was cancelled meanwhile (load --upgrade): let the next socket arm it */
	if (bpf_timer_start(&sw->timer, LISM_SWEEP_TICK_MS * 1000000ull, 0))
		__sync_lock_test_and_set(&sw->armed, 0);
	return 0;
}

/*
 * Sets the sweep's timer up and starts it, run by the loader through
 * BPF_PROG_RUN at load and at load --upgrade (which cancels the old
 * program's timer: entries already in use must not wait for the next
 * connect() to be swept again).  An empty table stops it at the first
 * tick, as usual.  A tc program, never attached: unlike a syscall program
 * it is not sleepable, so the callback's maps (a queue among them) load on
 * every kernel lism supports.  Returns 1 when the sweep runs.
 */
SEC("tc")
int lism_sweep_start(struct __sk_buff *skb)
{
	struct lism_sweep *sw;
	__u32 zero = 0;
	long err;

	(void)skb;
	LISM_TEST_REJECT_POINT(lism_test_reject);
	sw = bpf_map_lookup_elem(&sweep, &zero);
	if (!sw)
		return 0;
	err = bpf_timer_init(&sw->timer, &sweep, CLOCK_MONOTONIC); /* -EBUSY after the first time */
	if ((err && err != -EBUSY) || bpf_timer_set_callback(&sw->timer, sweep_tick))
		return 0;
	if (!sw->armed && __sync_val_compare_and_swap(&sw->armed, 0, 1) == 0 &&
	    bpf_timer_start(&sw->timer, LISM_SWEEP_TICK_MS * 1000000ull, 0)) {
		__sync_lock_test_and_set(&sw->armed, 0);
		return 0; /* not ready: the loader records the sweep off and cancels the timer */
	}
	sw->ready = 1; /* from now on the handshake starts it again when it stopped */
	return 1;
}
