/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What the BPF programs and the lism control plane share: the layout of
 * every pinned map's values.  docs/maps.md explains each field; bump
 * LISM_LAYOUT_VERSION on any incompatible change so a newer lism refuses
 * to adopt pins of an older layout instead of misreading them.
 */
#ifndef LISM_ABI_H
#define LISM_ABI_H

#include "types.h"
#include "cursor.h"

#define LISM_LAYOUT_VERSION 15
#define LISM_DEVICE_NAME "loopback-ism"
#define LISM_CHID 0xFFFF /* reserved for loopback-ism in SMC-D */

#define LISM_DEFAULT_MAX_DMBS 5000 /* SMC_LO_MAX_DMBS */
#define LISM_MAX_DMBS_LIMIT (1u << 20)
#define LISM_DEFAULT_DMB_SIZE (4u << 20) /* within TCP's autotuned rcvbuf range (tcp_rmem max 6 MiB) */
#define LISM_MIN_DMB_SIZE (16u << 10)
#define LISM_MAX_DMB_SIZE (64u << 20)

/* device.flags */
#define LISM_DEV_F_ALLOW_BLOCKING (1u << 0) /* accept blocking sockets (see BLOCKING reason) */
#define LISM_DEV_F_INCLUDE_PORTS (1u << 1)  /* only server ports marked LISM_PORT_INCLUDE */
/* (1u << 2): retired, --no-stream-detect (layout 14 removed stream detection) */
#define LISM_DEV_F_NO_CHURN_DETECT (1u << 3) /* every connection may engage (churn.h off) */
#define LISM_DEV_F_EAGER_SENDERS (1u << 4) /* members become senders at the handshake (sender.h off) */
/*
 * Switched off for a drain (unload, or `set active drain`),
 * not by choice: a daemon that adopts the instance switches it on again.
 * Without it, an unload that timed out (connections outlived a pod's
 * grace period) left the node's instance off for good under the next pod.
 * Only the control plane reads it.
 */
#define LISM_DEV_F_DRAINING (1u << 5)
/*
 * The data path runs (set by the loader once lism_msg is attached and the
 * sender join timer has its callback): only then do members join the maps.
 * Without it pairs are confirmed and stay on TCP (reason no-data-path).
 */
#define LISM_DEV_F_DATA_PATH (1u << 6)

/* The "ports" map: per server port (the listener's port), LISM_PORT_* flags. */
#define LISM_PORT_INCLUDE (1u << 0)
#define LISM_PORT_EXCLUDE (1u << 1)

/* The "device" map's only value: written by the control plane only. */
struct lism_device {
	__u8 gid[16];      /* 128-bit device GID, random, generated at load */
	__u32 layout;      /* LISM_LAYOUT_VERSION of the instance that created the pins */
	__u16 chid;        /* LISM_CHID */
	__u8 active;       /* 0: new connections stay on TCP (reason inactive) */
	__u8 pad0;
	__u32 capacity;    /* DMB table size, fixed at load */
	__u32 max_dmbs;    /* limit on DMBs in use, <= capacity */
	__u32 dmb_size;    /* bytes one end may hold unread in the shortcut */
	__u32 flags;       /* LISM_DEV_F_* */
	__u32 churn_window_ms; /* churn detection's window (churn.h) */
	__u32 socks_id;    /* id of this instance's "socks" map: tells its sockets from a nested instance's */
	__u64 loaded_ns;   /* CLOCK_REALTIME of the load, ns */
	char cgroup[256];  /* cgroup2 directory the programs are attached to (for views) */
};

/* The "usage" map's only value: written by the BPF programs only. */
struct lism_usage {
	__s64 dmbs_in_use;
	__s64 dmbs_hwm;    /* high-water mark of dmbs_in_use */
	__u32 sender_timer; /* 1 once lism_sender_start set the sender join timer's callback */
	__u32 pad0;
};

enum lism_role {
	LISM_ROLE_NONE = 0,
	LISM_ROLE_ACTIVE = 1,   /* connect() side: writes the proposal in its SYN */
	LISM_ROLE_PASSIVE = 2,  /* accept() side: answers in its SYN-ACK */
};

/*
 * A connection end's state machine (docs/architecture.md, "The per-socket
 * state machine", who moves what): state says whether it is paired
 * (PROPOSED/ACCEPTED at the SYN and SYN-ACK, READY once joined, CONFIRMED
 * once both ends are, FALLBACK with a reason, CLOSED); tx how its next send
 * travels (TCP, SYNC until the peer read its TCP bytes, SHORTCUT); sender
 * whether its sends run the data path (lism_sender below).  Invariants: a
 * send is redirected only in SHORTCUT; a slot has one releaser (a CAS of
 * its token); nobody leaves the shortcut map while a redirect may be in
 * flight to it.
 */
enum lism_state {
	LISM_ST_FREE = 0,
	LISM_ST_PROPOSED = 1,  /* active: SYN with our option sent */
	LISM_ST_ACCEPTED = 2,  /* passive: SYN-ACK with our option sent, not yet established */
	LISM_ST_READY = 3,     /* established and in the shortcut map, peer not yet */
	LISM_ST_CONFIRMED = 4, /* both ends ready and naming each other */
	LISM_ST_FALLBACK = 5,  /* stays on TCP, see reason */
	LISM_ST_CLOSED = 6,
};

/* How a socket's sends travel (lism_sk.tx). */
enum lism_tx {
	LISM_TX_TCP = 0,      /* not paired: plain TCP */
	LISM_TX_SYNC = 1,     /* paired, but bytes this end sent over TCP are still unread
				 by the peer: keep using TCP so nothing is overtaken */
	LISM_TX_SHORTCUT = 2, /* redirect into the peer's receive queue */
};

/* conn_flags: CDC conn_state_flags analog */
#define LISM_CONN_DONE_WRITING (1u << 0) /* this end shut down its write side */
#define LISM_CONN_CLOSED (1u << 1)       /* this end is closed */
#define LISM_CONN_ABORT (1u << 2)        /* this end was reset */
#define LISM_CONN_SEEN_BLOCKING (1u << 3) /* the peer's sender found this end's reader blocking
					     and sent over TCP: nothing of its is in flight to it */
#define LISM_CONN_PEER_SENDS (1u << 4)    /* the peer became a sender (sender.h): it may redirect
					     to this end; until then nothing of its can be in flight */
#define LISM_CONN_NO_DATA_PATH (1u << 5) /* this end never joined the maps (no data path on this
					     instance, or lism exec): its bytes stay off the sk_msg path */
#define LISM_CONN_EXEC (1u << 6)         /* this end runs liblism (lism/exec.h) */

/* The "dmbs" map (token table), indexed by the token's slot. */
struct lism_dmb {
	__u64 token;         /* 0 when the slot is free */
	__u64 peer_token;    /* the other end's token (active: set by the passive side's claim) */
	__u32 state;         /* enum lism_state (a word, so it can be compare-and-swapped) */
	__u32 conn_flags;    /* LISM_CONN_* (a word: both ends set bits atomically) */
	__u8 role;           /* enum lism_role */
	__u8 reason;         /* enum lism_reason, when state is FALLBACK */
	__u8 peer_reason;    /* the peer's reason, when reason is PEER_DECLINED */
	__u8 pad0;
	__u16 lport;         /* local port, host order */
	__u16 rport;         /* remote port as the socket sees it (after NAT), host order */
	__u32 dmb_size;
	__u32 isn;           /* this end's initial sequence number: the pairing is bound to it */
	__u32 gen;           /* times this slot was taken: makes every token of the slot unique */
	__u32 exec;          /* the pair's transport and why (LISM_EXEC_WORD, lism/exec.h), decided at confirm */
	__u32 exec_epoch;    /* RING: the epoch of the device whose lease decided it (lism/exec.h) */
	__u32 pad1;
	__u8 laddr[16];      /* IPv6, or IPv4 as ::ffff:a.b.c.d */
	__u8 raddr[16];
	__u64 rx_bytes;      /* bytes received through the shortcut: the producer cursor (cursor.h) */
	__u64 rx_msgs;
	__u64 tx_tcp_bytes;  /* bytes this end sent over TCP after pairing (order sync / DMB full) */
	__u64 created_ns;    /* bpf_ktime_get_ns() at allocation */
	__u64 cookie;        /* owner socket's cookie: active end from connect(), passive end from its join; else 0 */
};

/* Per-socket state (sk_storage "socks"), reached without hashing. */
struct lism_sk {
	__u64 token;         /* own DMB token, 0 if none */
	__u64 peer_token;
	__u32 slot;
	__u32 peer_slot;
	__u8 role;           /* enum lism_role */
	__u8 state;          /* enum lism_state */
	__u8 reason;         /* enum lism_reason */
	__u8 tx;             /* enum lism_tx */
	__u8 flags;          /* LISM_SKF_* */
	__u8 sent;           /* sends made, in churn units, saturating (churn.h) */
	__u8 sender;         /* enum lism_sender: whether our sends run the data path yet */
	__u8 pad0;
	__u64 unseen_base;   /* bytes it had written when its sends stopped being seen (sender.h) */
	__u64 sizes_bytes;   /* bytes of its first sends as a member that were bulk (sender.h) */
	__u32 sizes_seq;     /* write_seq after the last of them */
	__u32 sizes_sends;   /* how many */
};

/* lism_sk.flags */
#define LISM_SKF_ALLOW_BLOCKING (1u << 0) /* --allow-blocking was in force when it joined */
#define LISM_SKF_EAGER_WATCH (1u << 1) /* an eager sender not yet found both-ways or one-way (sender.h) */
#define LISM_SKF_MODE_KNOWN (1u << 2) /* its blocking mode no longer needs watching (check_member_mode) */
#define LISM_SKF_UNSEEN (1u << 3)     /* it sent bytes no program saw: counted at its next send or close */
#define LISM_SKF_SIZES_ON (1u << 4)   /* lism switched its per-sendmsg callback on (sender.h) */
#define LISM_SKF_SIZES_DONE (1u << 5) /* its first sends were measured: the callback has nothing to do */
#define LISM_SKF_BULK (1u << 6)       /* joins by its bulk sends: its send buffer is clamped at its next packet */
#define LISM_SKF_LEAVE_SENDERS (1u << 7) /* found one-way: leaves the senders map at its next packet */

/*
 * A member (in the shortcut map: others may redirect to it) becomes a
 * sender (in the senders map: its own sends run the data path) once data
 * went both ways (sender.h), or at once with --eager-senders.
 */
enum lism_sender {
	LISM_SND_NONE = 0,   /* not a member */
	LISM_SND_WATCH = 1,  /* member; its outgoing packets are watched for a reply pattern */
	LISM_SND_QUEUED = 2, /* waits for the join timer (bpf/sender.bpf.h) */
	LISM_SND_JOINED = 3, /* in the senders map */
	LISM_SND_TCP = 4,    /* its sends stay plain TCP: one-way for long, or the join was refused */
	LISM_SND_LEAVING = 5, /* its peer is gone: waits for the timer to take it out of the maps */
};

/*
 * One row of the sockets iterator (bpf_iter over every process's files): a
 * socket lism knows, what lism keeps about it, what the kernel says about it
 * now, and a process holding it.  A socket held by several processes (or
 * fds) gives several rows with the same cookie.
 */
struct lism_sock_row {
	struct lism_sk st;
	__u64 cookie;        /* socket cookie */
	__u32 pid;           /* tgid of a process holding it */
	__u32 fd;
	char comm[16];
	__u8 laddr[16];      /* IPv6, or IPv4 as ::ffff:a.b.c.d */
	__u8 raddr[16];
	__u16 lport;         /* host order */
	__u16 rport;
	__u8 family;         /* AF_INET / AF_INET6 */
	__u8 tcp_state;      /* BPF_TCP_* */
	__u16 pad0;
	__u32 unread;        /* bytes waiting in its shortcut receive queue */
	__u32 pad1;
};

/* Scope map (LPM trie): which destinations may be local. */
struct lism_scope_key {
	__u32 prefixlen;     /* over the 128-bit address below */
	__u8 addr[16];       /* IPv6, or IPv4 as ::ffff:a.b.c.d */
};
#define LISM_SCOPE_LOCAL 1
#define LISM_SCOPE_EXCLUDE 2
/*
 * Local because the node's routes say so (user/routes.h): written and
 * removed by the control plane following the routing table, never over an
 * entry of another value.  The programs test the LOCAL bit, so it counts as
 * local; a program older than it compares "== LISM_SCOPE_LOCAL" and simply
 * does not propose to these destinations (safe: TCP as without lism), so
 * the pin layout is unchanged.
 */
#define LISM_SCOPE_ROUTE (LISM_SCOPE_LOCAL | 4)

enum lism_event_type {
	LISM_EV_CONFIRM = 1,
	LISM_EV_FALLBACK = 2,
	LISM_EV_CLOSE = 3,
	LISM_EV_LIMIT = 4, /* DMB limit hit */
	LISM_EV_ABORT = 5, /* a shortcut connection end was reset or aborted */
	LISM_EV_REAPED = 6, /* a socket was destroyed still owning a DMB (its close went unseen) */
	LISM_EV_MAX,        /* entries of the "event_readers" map */
};
#define LISM_EV_TYPE(t) (1u << (t)) /* sets of event types (lism events --type) */
#define LISM_EV_ALL (((1u << LISM_EV_MAX) - 1) & ~1u)

/*
 * Events cost only while somebody reads them.  The "event_readers" map holds,
 * per event type, the CLOCK_MONOTONIC time (ns) until which a reader follows
 * that type; readers renew it every LISM_EVENTS_TICK_MS, so a reader that
 * dies stops the events within LISM_EVENTS_LEASE_NS.  Readers are not woken
 * per event (a wakeup per connection doubled connection setup): they drain
 * the ring on their tick, or when LISM_EVENTS_WAKE_BYTES are waiting.
 */
#define LISM_EVENTS_RING_BYTES (256u << 10)
#define LISM_EVENTS_WAKE_BYTES (LISM_EVENTS_RING_BYTES / 4)
#define LISM_EVENTS_TICK_MS 200
#define LISM_EVENTS_LEASE_NS (2000ull * 1000 * 1000)

/*
 * The sweep (bpf/sweep.bpf.c): a BPF timer visits LISM_SWEEP_SLOTS_PER_TICK
 * slots of the DMB table every LISM_SWEEP_TICK_MS while any DMB is in use,
 * and gives back the entries whose socket no longer exists.
 */
#define LISM_SWEEP_TICK_MS 200
#define LISM_SWEEP_SLOTS_PER_TICK 4096

struct lism_event {
	__u64 ts_ns;
	__u64 token;
	__u64 peer_token;
	__u64 rx_bytes;
	__u8 type;           /* enum lism_event_type */
	__u8 reason;
	__u8 role;
	__u8 tcp_state;      /* REAPED: the socket's BPF_TCP_* state when destroyed; else 0 */
	__u16 lport;
	__u16 rport;
	__u8 laddr[16];
	__u8 raddr[16];
};

/* Indices of the per-CPU "stats" map. */
enum lism_stat {
	LISM_S_PROPOSALS_SENT,  /* SYNs carrying our option */
	LISM_S_PROPOSALS_RECV,  /* SYNs with our option seen by a listener */
	LISM_S_ACCEPTS_SENT,    /* SYN-ACKs carrying our option */
	LISM_S_ACCEPTS_RECV,    /* SYN-ACKs with our option seen by the active side */
	LISM_S_CONFIRMS,        /* connections confirmed (both ends) */
	LISM_S_FALLBACKS,       /* connection ends that fell back (see reasons map) */
	LISM_S_CLOSES,          /* DMBs released */
	LISM_S_SC_MSGS,         /* sends redirected through the shortcut: never written, the sum of "sizes" */
	LISM_S_SC_BYTES,
	LISM_S_TCP_MSGS,        /* sends of paired sockets that went over TCP */
	LISM_S_TCP_BYTES,
	LISM_S_SYNC_HOLDS,      /* sends kept on TCP because the peer had TCP bytes unread */
	LISM_S_DMB_FULL,        /* sends kept on TCP because the peer's DMB was full */
	LISM_S_REDIRECT_MISS,   /* peer not in the shortcut map at send time */
	LISM_S_EVENTS_LOST,     /* ring buffer full */
	LISM_S_REAPED,          /* DMBs released when their socket was destroyed (close unseen) */
	LISM_S_REAPED_ORPHANS,  /* of those, entries whose socket had forgotten their token */
	LISM_S_TOKEN_LOST,      /* closing state changes (FIN_WAIT1, LAST_ACK, CLOSE) whose token named no entry */
	LISM_S_SHORT_CONNS,     /* confirmed connections whose active end closed having moved little (churn.h) */
	LISM_S_REAPED_GONE,     /* DMBs the sweep released: their socket was freed and nothing saw it close */
	LISM_S_SWEEPS,          /* full passes of the sweep over the DMB table */
	LISM_S_SENDERS_JOINED,  /* members that became senders: data went both ways, or bulk sends */
	LISM_S_SENDERS_ONE_WAY, /* members whose traffic stayed one-way for LISM_SENDER_WATCH_SEGS segments */
	LISM_S_SENDER_JOIN_FAILS, /* joins the kernel refused (socket no longer established) or lost (queue full) */
	LISM_S_SEND_SIZE_CALLS, /* per-sendmsg callbacks run (sender.h: at most LISM_SENDER_SIZE_SENDS per member) */
	LISM_S_SENDERS_LEFT,    /* senders that left both maps: their peer was gone */
	LISM_S_SENDER_LEAVES_REFUSED, /* leaves refused: its pair was still on, or its shortcut queue held bytes */
	LISM_S_SENDERS_SEND_LIMITS, /* joins skipped: a send buffer (SO_SNDBUF, tcp_wmem max) or TCP_NOTSENT_LOWAT below LISM_SENDER_MIN_SEND_LIMIT */
	LISM_S_PEER_MEM_TIGHT,  /* sends kept on TCP because the peer's socket memory could refuse them (rmem.h) */
	LISM_S_RING_PAIRS,      /* pairs confirmed with both ends under lism exec and a device: ring DMBs */
	LISM_S_MAX
};

#endif
