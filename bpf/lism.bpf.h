/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Maps and small helpers shared by every lism object.  The core object is
 * handshake.bpf.c (sockops) and shortcut.bpf.c (sk_msg), linked into one
 * (bpftool gen object): maps are __weak so it holds a single instance of
 * each.  The optional objects (views, backstop, sweep) declare the same
 * maps and the loader points them at the core's pins, so every object
 * works on one set of maps.  A kfunc may be declared in only one of the
 * two core objects: Debian's libbpf 1.1 linker cannot merge the same
 * extern function from two objects.
 */
#ifndef LISM_BPF_H
#define LISM_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

#include "lism/abi.h"
#include "lism/ablate.h"
#include "lism/churn.h"
#include "lism/exec.h"
#include "lism/feature.h"
#include "lism/hist.h"
#include "lism/option.h"
#include "lism/reason.h"
#include "lism/sender.h"
#include "lism/token.h"

#include "reject.bpf.h"

#define AF_INET 2
#define EBUSY 16
#define ENOMSG 42
#define CLOCK_MONOTONIC 1
#define AF_INET6 10
#define O_NONBLOCK 04000
#define TCPHDR_SYN 0x02
#define TCPHDR_ACK 0x10
#define SOL_TCP 6
#define TCP_SAVE_SYN 27
/* low bits of sk_user_data are flags (include/net/sock.h) */
#define SK_USER_DATA_FLAGS 7UL

/* LISM_ABLATE_* the loader switched off (lism/ablate.h): bench only, zero otherwise. */
const volatile __u32 lism_ablate = 0;

/*
 * Every map is an instance's state, pinned by name in its pin directory
 * (the loader opens each object with that directory as pin_root_path, so
 * a load creates the pins and an upgrade and the optional objects reuse
 * them).  Sizes here are placeholders: the loader sets them from
 * --max-dmbs (lism_object_configure()).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lism_device);
} device SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lism_usage);
} usage SEC(".maps") __weak;

/* The token table: one DMB entry per connection end, indexed by slot. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__uint(max_entries, LISM_DEFAULT_MAX_DMBS);
	__type(key, __u32);
	__type(value, struct lism_dmb);
} dmbs SEC(".maps") __weak;

/*
 * Kernel address of the socket owning each slot.  Only ever read through
 * bpf_rdonly_cast() (probe reads, so a stale address reads garbage, never
 * crashes) and only after the slot's token was checked.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__uint(max_entries, LISM_DEFAULT_MAX_DMBS);
	__type(key, __u32);
	__type(value, __u64);
} dmb_owner SEC(".maps") __weak;

/* Free slots; the loader fills it with 0..capacity-1. */
struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__uint(max_entries, LISM_DEFAULT_MAX_DMBS);
	__type(value, __u32);
} dmb_free SEC(".maps") __weak;

/* Sockets in the shortcut, keyed by their own DMB token. */
struct {
	__uint(type, BPF_MAP_TYPE_SOCKHASH);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__uint(max_entries, LISM_DEFAULT_MAX_DMBS);
	__type(key, __u64);
	__type(value, __u64);
} shortcut SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct lism_sk);
} socks SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__uint(max_entries, LISM_S_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__uint(max_entries, LISM_R_MAX);
	__type(key, __u32);
	__type(value, __u64);
} reasons SEC(".maps") __weak;

/* Shortcut sends by size, see lism/hist.h. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__uint(max_entries, LISM_HIST_BUCKETS);
	__type(key, __u32);
	__type(value, __u64);
} sizes SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1024);
	__type(key, struct lism_scope_key);
	__type(value, __u8);
} scope SEC(".maps") __weak;

/* Port policy, indexed by the server's port (host order). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} ports SEC(".maps") __weak;

/* Destinations whose recent connections were short (churn.h); LRU: only a hint. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__uint(max_entries, 4096);
	__type(key, struct lism_churn_key);
	__type(value, struct lism_churn);
} churn SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__uint(max_entries, LISM_EVENTS_RING_BYTES);
} events SEC(".maps") __weak;

/* Per event type: until when (bpf_ktime_get_ns) a reader follows it (abi.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__uint(max_entries, LISM_EV_MAX);
	__type(key, __u32);
	__type(value, __u64);
} event_readers SEC(".maps") __weak;

/*
 * The sender timer's work (bpf/sender.bpf.h): tokens of members to join
 * the senders map (each queues once), and of senders to take out of both
 * maps again (sender.h), which the sk_msg program queues.
 */
struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__uint(max_entries, LISM_DEFAULT_MAX_DMBS);
	__type(value, __u64);
} sender_queue SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__uint(max_entries, LISM_DEFAULT_MAX_DMBS);
	__type(value, __u64);
} sender_leaves SEC(".maps") __weak;

struct lism_sender_join {
	struct bpf_timer timer;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lism_sender_join);
} sender_join SEC(".maps") __weak;

/*
 * The sweep's timer (bpf/sweep.bpf.c).  Only lism_sweep_start, in the
 * sweep's own object, sets it up and names its callback; the handshake only
 * starts it again (sweep_kick), so it works without that object (sweep off).
 */
struct lism_sweep {
	struct bpf_timer timer;
	__u32 armed;     /* 1 while the timer runs; the next connect() that takes an entry starts it */
	__u32 next_slot; /* where the next tick goes on */
	__u32 ready;     /* 1 once lism_sweep_start set the callback */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lism_sweep);
} sweep SEC(".maps") __weak;

/*
 * lism exec (lism/exec.h): a socket's mark, made by the setsockopt program
 * (bpf/exec.bpf.c) and cloned into a listener's children by accept(); the
 * mere storage is the mark.
 */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__uint(map_flags, BPF_F_NO_PREALLOC | BPF_F_CLONE);
	__type(key, int);
	__type(value, __u32);
} exec_marks SEC(".maps") __weak;

/*
 * Marked listeners, by kernel address, with their cookie (a freed
 * listener's address may come back as another socket's): LRU, a hint the
 * cookie confirms.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, __u64);
} exec_listeners SEC(".maps") __weak;

/* The device's lease: ring pairs are decided only while one serves. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lism_exec_lease);
} exec_lease SEC(".maps") __weak;

/* What runs on this instance and why not (include/lism/feature.h); written by the loader only. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__uint(max_entries, LISM_F_MAX);
	__type(key, __u32);
	__type(value, struct lism_feature_state);
} features SEC(".maps") __weak;

/*
 * An active end took an entry: make sure the sweep runs (one lookup when it
 * does).  Starting a timer needs no callback of our own; one that was never
 * set up (the sweep is off) is left alone.
 */
static __always_inline void sweep_kick(void)
{
	struct lism_sweep *sw;
	__u32 zero = 0;

	sw = bpf_map_lookup_elem(&sweep, &zero);
	if (!sw || !sw->ready || sw->armed || __sync_val_compare_and_swap(&sw->armed, 0, 1) != 0)
		return;
	if (bpf_timer_start(&sw->timer, LISM_SWEEP_TICK_MS * 1000000ull, 0))
		__sync_lock_test_and_set(&sw->armed, 0); /* cancelled meanwhile (an upgrade): the next one tries */
}

/* Run the sender timer now (it fails only before lism_sender_start set it up). */
static __always_inline void sender_timer_kick(void)
{
	struct lism_sender_join *sj;
	__u32 zero = 0;

	sj = bpf_map_lookup_elem(&sender_join, &zero);
	if (sj)
		bpf_timer_start(&sj->timer, 0, 0);
}

static __always_inline struct lism_device *lism_dev(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&device, &zero);
}

static __always_inline void stat_add(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		*v += n;
}

static __always_inline void reason_count(__u32 reason)
{
	__u64 *v = bpf_map_lookup_elem(&reasons, &reason);

	if (v)
		*v += 1;
}

static __always_inline struct lism_dmb *dmb_get(__u32 slot)
{
	return bpf_map_lookup_elem(&dmbs, &slot);
}

/* The entry @token names, or NULL if the slot holds another (or no) token. */
static __always_inline struct lism_dmb *dmb_by_token(__u64 token)
{
	struct lism_dmb *e;

	if (!(token >> 63))
		return NULL;
	e = dmb_get(lism_token_slot(token));
	if (!e || e->token != token)
		return NULL;
	return e;
}

static __always_inline __u64 gid_tag(const struct lism_device *d)
{
	return lism_be64_load(d->gid);
}

/* @n bytes of a paired socket went over TCP: its entry's count and the total. */
static __always_inline void count_tcp_bytes(const struct lism_sk *st, __u64 n)
{
	struct lism_dmb *me = dmb_get(st->slot);

	if (me && me->token == st->token)
		me->tx_tcp_bytes += n;
	stat_add(LISM_S_TCP_BYTES, n);
}

/*
 * Account what a member sent before its sends ran the sk_msg program
 * (sender.h): at its first send as a sender, or when it stops sending.
 */
static __always_inline void account_unseen(struct lism_sk *st, const struct tcp_sock *tp)
{
	__u64 unseen;

	if (!(st->flags & LISM_SKF_UNSEEN) || !tp)
		return;
	st->flags &= ~LISM_SKF_UNSEEN;
	unseen = lism_sender_written(tp->bytes_acked, tp->snd_una, tp->write_seq) - st->unseen_base;
	if (unseen && (__s64)unseen > 0)
		count_tcp_bytes(st, unseen);
}

/* A sender's peer may receive redirects from now on (LISM_CONN_PEER_SENDS); its entry. */
static __always_inline struct lism_dmb *mark_peer_receives(const struct lism_sk *st)
{
	struct lism_dmb *pe = dmb_by_token(st->peer_token);
	__u32 old;

	if (!pe || (pe->conn_flags & LISM_CONN_PEER_SENDS))
		return pe;
	old = __sync_fetch_and_or(&pe->conn_flags, LISM_CONN_PEER_SENDS);
	/* the slot was released and taken by a new pair between the two: not its mark */
	if (pe->token != st->peer_token && !(old & LISM_CONN_PEER_SENDS))
		__sync_fetch_and_and(&pe->conn_flags, ~LISM_CONN_PEER_SENDS);
	return pe;
}

/* From now on its sends go to TCP unseen until it joins the senders (sender.h). */
static __always_inline void start_unseen(struct lism_sk *st, const struct tcp_sock *tp)
{
	if (!tp)
		return;
	st->unseen_base = lism_sender_written(tp->bytes_acked, tp->snd_una, tp->write_seq);
	st->flags |= LISM_SKF_UNSEEN;
}

static __always_inline void emit_event_at(__u8 type, __u8 reason, const struct lism_dmb *e,
					  __u8 tcp_state)
{
	__u64 now = bpf_ktime_get_ns(), *until;
	__u32 key = type;
	struct lism_event *ev;

	until = bpf_map_lookup_elem(&event_readers, &key);
	if (!until || *until < now)
		return; /* nobody follows this type: no event, no cost */
	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		stat_add(LISM_S_EVENTS_LOST, 1); /* a reader fell behind */
		return;
	}
	ev->ts_ns = now;
	ev->type = type;
	ev->reason = reason;
	ev->tcp_state = tcp_state;
	ev->token = e->token;
	ev->peer_token = e->peer_token;
	ev->rx_bytes = e->rx_bytes;
	ev->role = e->role;
	ev->lport = e->lport;
	ev->rport = e->rport;
	__builtin_memcpy(ev->laddr, e->laddr, 16);
	__builtin_memcpy(ev->raddr, e->raddr, 16);
	bpf_ringbuf_submit(ev, bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= LISM_EVENTS_WAKE_BYTES ?
				       BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
}

static __always_inline void emit_event(__u8 type, __u8 reason, const struct lism_dmb *e)
{
	emit_event_at(type, reason, e, 0);
}

#endif
