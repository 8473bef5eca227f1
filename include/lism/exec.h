/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * lism exec's contract between a preloaded process, the BPF programs and
 * the lism device (docs/exec.md):
 *
 * - A process says, before connect() or listen(), that a socket runs
 *   liblism: setsockopt(fd, LISM_SOL, LISM_SO_EXEC).  A cgroup/setsockopt
 *   program keeps the mark in the socket's storage, which accept() clones
 *   into the listener's children.
 * - When the pair is confirmed, the handshake decides its transport once,
 *   for both ends: RING if both ends are marked and a device holds a live
 *   lease, else KERNEL (the sk_msg path or TCP, as without lism exec), with
 *   a reason.  Nobody else writes the decision.
 * - Each end reads the decision with getsockopt(LISM_SOL, LISM_SO_INFO)
 *   before its first byte; an active end that finds none after a while
 *   settles it with LISM_SO_KERNEL (the passive end's decision and this
 *   claim are compare-and-swaps of one word: whichever comes first holds).
 *   For RING it passes the socket to the device (SCM_RIGHTS), which checks
 *   it is an end of that pair and answers with the pair's ring DMB memory
 *   (lism/ring.h).  An end that cannot get it resets the connection: its
 *   peer may already write into the ring.
 *
 * Invariant: both ends of a pair see the same decision, and it never
 * changes; a process gets a ring DMB only by handing the device a socket
 * of its pair, decided under that device's epoch.
 */
#ifndef LISM_EXEC_H
#define LISM_EXEC_H

#include "types.h"

/* setsockopt/getsockopt level: "li", the option's ExID; no kernel level uses it. */
#define LISM_SOL 0x6c69

enum {
	LISM_SO_EXEC = 1,   /* set, int 1: this socket runs liblism (before connect/listen) */
	LISM_SO_INFO = 2,   /* get, struct lism_exec_info */
	LISM_SO_KERNEL = 3, /* set, int 1: an active end that waited long enough takes KERNEL, if
			       nothing was decided yet (the decision is a compare-and-swap either way) */
};

/* A pair's transport. */
enum lism_exec_mode {
	LISM_EXEC_UNDECIDED = 0, /* not confirmed yet */
	LISM_EXEC_RING = 1,      /* both ends run liblism and a device serves: ring DMBs */
	LISM_EXEC_KERNEL = 2,    /* TCP, as without lism exec (reason in the word) */
};

/* lism_dmb.exec: the mode and, for KERNEL, its reason in one word, so one compare-and-swap sets both. */
#define LISM_EXEC_WORD(mode, reason) ((__u32)(mode) | (__u32)(reason) << 8)
#define LISM_EXEC_MODE(w) ((w) & 0xff)
#define LISM_EXEC_REASON(w) (((w) >> 8) & 0xff)

/* lism_exec_info.flags */
#define LISM_EXEC_I_MARKED (1u << 0) /* this socket carries LISM_SO_EXEC (its own, or its listener's) */
#define LISM_EXEC_I_PAIRED (1u << 1) /* it has a DMB entry: token is valid */

struct lism_exec_info {
	__u32 layout;      /* LISM_LAYOUT_VERSION of the programs that answered */
	__u32 flags;       /* LISM_EXEC_I_* */
	__u32 mode;        /* enum lism_exec_mode; KERNEL for a socket that is no pair */
	__u8 state;        /* enum lism_state of this end */
	__u8 reason;       /* enum lism_reason: why KERNEL, when known */
	__u8 role;         /* enum lism_role: the active end is end 0 of the ring */
	__u8 pad0;
	__u64 token;       /* this end's DMB token */
	__u64 peer_token;
};

/*
 * The device's lease (the "exec_lease" map): a device serves ring pairs while
 * bpf_ktime_get_ns() < until_ns.  It renews the lease every
 * LISM_BROKER_TICK_MS; a device that dies lets it lapse within
 * LISM_BROKER_LEASE_NS, and new pairs stay on the kernel path.
 */
#define LISM_BROKER_TICK_MS 200
#define LISM_BROKER_LEASE_NS (2000ull * 1000 * 1000)

struct lism_exec_lease {
	__u64 until_ns;  /* CLOCK_MONOTONIC */
	__u32 tgid;      /* the device's process, for views */
	__u32 dmb_size;  /* bytes of each ring DMB it makes */
	__u32 epoch;     /* random per device start: a pair decided under another device's lease has no
			    memory at this one (its ends reset) */
	__u32 pad0;
};

/*
 * The device protocol, on a unix seqpacket socket (LISM_DEVICE_SOCKET, or
 * $LISM_DEVICE): a request with the socket in SCM_RIGHTS, an answer with
 * the ring DMB memory in SCM_RIGHTS when err is 0.
 */
#define LISM_DEVICE_SOCKET "/run/lism/device.sock"
#define LISM_DEVICE_PATH_MAX 108 /* sockaddr_un.sun_path */

#ifndef __bpf__
#include <string.h>

/* The device's socket for a $LISM_DEVICE of @env: liblism and lism run follow this one rule, so they meet. */
static inline const char *lism_device_path(const char *env)
{
	return env && env[0] == '/' && strlen(env) < LISM_DEVICE_PATH_MAX ? env : LISM_DEVICE_SOCKET;
}
#endif
#define LISM_DEVICE_MAGIC 0x6c69736d /* "lism" */
#define LISM_DEVICE_ATTACH 1 /* with the caller's socket: the pair's ring DMB memory */
#define LISM_DEVICE_REPORT 2 /* no fd: a sealed memfd holding a struct lism_device_report (views) */

struct lism_device_req {
	__u32 magic;
	__u32 op;        /* LISM_DEVICE_ATTACH */
};

struct lism_device_ans {
	__u32 magic;
	__s32 err;       /* 0, or -errno: why the device refused */
	__u32 end;       /* this socket's end of the ring (0: the active end) */
	__u32 dmb_size;
	__u64 size;      /* bytes of the memory passed: lism_ring_region_size(dmb_size) */
};

/*
 * LISM_DEVICE_REPORT's answer (lism conns, lism stats): the device's
 * counters and each pair it holds, as the pair's ring header says.  The
 * header is written by the pair's processes: the figures are theirs, not
 * checked.  Answered only to root with CAP_BPF or CAP_SYS_ADMIN (who could
 * read the maps): the socket reaches every pod that opts in.
 */
struct lism_device_ring_dir {  /* the ring into one end */
	__u64 prod;            /* lism_cursor_pack(): bytes written (ring.h) */
	__u64 cons;            /* bytes read */
	__u64 bells;           /* doorbells its writer sent */
	__u64 eaten;           /* doorbells its reader ate */
	__u64 runs;            /* stretches its writer sent through TCP */
	__u32 state;           /* LISM_RING_DONE_WRITING, _CLOSED, _ABORT */
	__u32 reader_state;    /* LISM_RING_READER_CLOSED */
};

struct lism_device_ring {
	__u64 token[2];        /* end 0's (active) and end 1's DMB token */
	struct lism_device_ring_dir dir[2]; /* dir[i]: into end i */
};

struct lism_device_totals {
	__u64 attaches;        /* memories handed out */
	__u64 refusals;        /* requests refused: not a socket of a ring pair of this device, a malformed
				  request, a report asked by another user, no memory */
	__u64 rings;           /* ring memories made (one per pair) */
	__u64 bytes;           /* bytes written into ring DMBs, both directions */
	__u64 doorbells;       /* doorbells sent */
	__u64 runs;            /* runs: stretches sent through TCP (a full ring, sendfile) */
	__u64 aborts;          /* pairs given back with a direction reset (LISM_RING_ABORT) */
	__u32 held;            /* pairs whose memory the device holds: until both their entries are gone */
	__u32 pad0;
};

struct lism_device_report {
	__u32 magic;           /* LISM_DEVICE_MAGIC */
	__u32 dmb_size;
	__u64 n;               /* entries in ring[] */
	struct lism_device_totals totals;
	struct lism_device_ring ring[];
};

#endif
