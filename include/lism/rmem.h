/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Receive memory: whether the reader's socket can take a redirect.
 *
 * A redirect is queued on the reader by bpf_tcp_ingress(), which charges
 * the reader's socket memory only then (__sk_rmem_schedule), after the
 * verdict.  When the charge fails, the kernel frees the message and the
 * writer's send() returns what it moved before, or ENOMEM: an error TCP
 * never gives for the peer's lack of memory (TCP queues the segment, or
 * drops it and sends it again).  Measured: a reader in a memory cgroup
 * (v1) with a 512 KiB kmem.tcp limit, a writer through the shortcut got
 * ENOMEM from 2 of its sends (docs/semantics.md).
 *
 * So the data path reads what the charge would read and sends to TCP when
 * it would fail, as it does when the DMB is full:
 *  - bytes the reader's socket has charged already (sk_forward_alloc) need
 *    nothing more;
 *  - a memory cgroup under socket pressure: v1 sets tcpmem_pressure at its
 *    first failed charge; v2 sets socket_pressure (a time, in jiffies) when
 *    reclaim struggles, and under it, once TCP as a whole holds more than
 *    net.ipv4.tcp_mem[0], the kernel refuses receive charges beyond the
 *    socket's minimum (and TCP itself shrinks its windows);
 *  - a cgroup v1 kmem.tcp limit, of its cgroup or an ancestor, that the
 *    pages would exceed;
 *  - TCP's own memory pressure (net.ipv4.tcp_mem[1] exceeded), under
 *    which the kernel refuses charges to sockets above their share.
 * The charge itself comes later, and other sockets charge meanwhile: a
 * race the verdict cannot close, which leaves such failures rare instead
 * of impossible.
 *
 * The reads cost ~150-250 ns per send (the reader's lines, a helper call):
 * as much again as the rest of the data path on a ping-pong.  So a send
 * below LISM_RMEM_CHECK_SIZE into an empty queue is not checked.  Pressure
 * never refuses it (the kernel lets a socket holding less than tcp_rmem[0]
 * charge in any case); only a memory cgroup that other sockets filled to
 * its limit, or TCP's hard limit (tcp_mem[2]) reached, could, and there
 * TCP itself drops segments.  Request/response pays nothing.
 */
#ifndef LISM_RMEM_H
#define LISM_RMEM_H

#include "types.h"

#define LISM_RMEM_PAGE_SHIFT 12 /* sk_mem_pages(): the kernel charges whole pages */
#define LISM_RMEM_CHECK_SIZE (64u << 10)

struct lism_rmem {
	__s32 forward_alloc;   /* the reader's sk_forward_alloc: charged, not used yet */
	__u8 memcg_pressure;   /* its memory cgroup (or an ancestor) is under socket pressure */
	__u8 global_pressure;  /* TCP's memory pressure (tcp_memory_pressure) */
	__u16 pad;
	__u64 memcg_room;      /* v1: pages left under the tightest kmem.tcp limit on its way up */
};

#define LISM_RMEM_NO_LIMIT (~0ull)

/* Pages left under a kmem.tcp counter with @usage pages charged and a limit of @max. */
static inline __u64 lism_rmem_room(__u64 usage, __u64 max)
{
	return usage < max ? max - usage : 0;
}

/* Whether a send of @size bytes, @unread bytes of ours queued before it, is checked at all. */
static inline int lism_rmem_worth_checking(__u32 unread, __u32 size)
{
	return unread || size >= LISM_RMEM_CHECK_SIZE;
}

/* Pages a charge of @size bytes adds beyond what the socket holds already (sk_mem_pages). */
static inline __u32 lism_rmem_pages(__u32 size, __s32 forward_alloc)
{
	__s64 delta = (__s64)size - forward_alloc;

	if (delta <= 0)
		return 0;
	return (__u32)((delta + (1 << LISM_RMEM_PAGE_SHIFT) - 1) >> LISM_RMEM_PAGE_SHIFT);
}

/* Whether charging @size more bytes to the reader could fail: 1 sends it to TCP. */
static inline int lism_rmem_tight(const struct lism_rmem *r, __u32 size)
{
	__u32 pages = lism_rmem_pages(size, r->forward_alloc);

	if (!pages)
		return 0;
	if (r->memcg_pressure || r->global_pressure)
		return 1;
	return pages > r->memcg_room;
}

#endif
