/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Receive memory: whether the reader's socket can take a redirect.
 *
 * A redirect is queued on the reader by bpf_tcp_ingress(), which charges
 * the reader's socket memory only then (__sk_rmem_schedule), after the
 * verdict.  When the charge fails, the kernel frees the message and the
 * writer's send() returns what it moved before, or ENOMEM: an error TCP
 * never gives for the peer's lack of memory (TCP closes the window, or
 * drops the segment and sends it again).  Measured: a reader in a memory
 * cgroup (v1) with a 512 KiB kmem.tcp limit, a writer through the shortcut
 * got ENOMEM from 2 of its sends (docs/semantics.md).
 *
 * So the data path reads what could refuse the charge, and sends to TCP
 * when it could, as it does when the DMB is full
 * (__sk_mem_raise_allocated()):
 *  - the memory cgroup's charge: under cgroup v1 the kmem.tcp limit of the
 *    reader's cgroup or an ancestor, in pages.  Under v2 the charge goes
 *    against memory.max, where it reclaims and OOM-kills before it fails:
 *    not read.  Memory-cgroup socket pressure refuses nothing (it shrinks
 *    TCP's windows): not read either;
 *  - TCP's own memory pressure (net.ipv4.tcp_mem[1] exceeded): then the
 *    kernel refuses a socket holding tcp_rmem[0] or more that is above its
 *    share (the share is not modelled: any such socket counts as refused).
 * Bytes the socket has charged already (sk_forward_alloc) need nothing.
 * Not modelled: TCP's hard limit (tcp_mem[2]), where TCP itself drops; and
 * the charge comes after the verdict, so other sockets charging in between
 * can still make it fail -- rare instead of impossible.
 *
 * The reads cost 150-250 ns per send (the reader's lines, a helper call),
 * a third to a half again of the data path on a ping-pong.  So a send below
 * LISM_RMEM_CHECK_SIZE into an empty queue is not checked: its first bytes
 * are below tcp_rmem[0], which pressure never refuses; if a later part of
 * it is refused, the verdict runs again on the rest, with bytes queued, and
 * is checked then.  Only a memory cgroup that other sockets filled to its
 * limit, or TCP's hard limit (tcp_mem[2]), could refuse the first part.
 * Request/response pays nothing.
 */
#ifndef LISM_RMEM_H
#define LISM_RMEM_H

#include "types.h"

#define LISM_RMEM_CHECK_SIZE (64u << 10)

struct lism_rmem {
	__s32 forward_alloc;   /* the reader's sk_forward_alloc: charged, not used yet */
	__s32 rmem_alloc;      /* the reader's sk_rmem_alloc: bytes it holds */
	__s32 rmem_min;        /* its namespace's tcp_rmem[0]: pressure lets a socket holding less charge */
	__u16 global_pressure; /* TCP's memory pressure (tcp_memory_pressure) */
	__u16 page_shift;      /* the kernel's PAGE_SHIFT: it charges whole pages (sk_mem_pages()) */
	__u64 memcg_room;      /* v1: pages left under the tightest kmem.tcp limit on its way up */
};

/* The running kernel's page shift from its page size (a power of two); 12 for anything else. */
static inline __u16 lism_rmem_page_shift(unsigned long page_size)
{
	if (!page_size || (page_size & (page_size - 1)))
		return 12;
	return (__u16)__builtin_ctzl(page_size);
}

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

/* Pages of 1 << @page_shift bytes a charge of @size adds beyond what the socket holds (sk_mem_pages). */
static inline __u32 lism_rmem_pages(__u32 size, __s32 forward_alloc, __u16 page_shift)
{
	__s64 delta = (__s64)size - forward_alloc;

	if (delta <= 0)
		return 0;
	page_shift &= 31; /* bounded for the verifier; the loader sets 12..16 */
	return (__u32)((delta + (1ll << page_shift) - 1) >> page_shift);
}

/*
 * Whether charging @size more bytes to the reader could fail: 1 sends it to
 * TCP.  With rmem_alloc and rmem_min left 0 (not read yet) the answer errs
 * on the tight side; so does forward_alloc left 0 without a kmem.tcp limit
 * (pages then only matter for being none, and a send's are never none at
 * 0).  Under a limit it must be the real one: a negative value needs more
 * pages.
 */
static inline int lism_rmem_tight(const struct lism_rmem *r, __u32 size)
{
	__u32 pages = lism_rmem_pages(size, r->forward_alloc, r->page_shift);

	if (!pages)
		return 0;
	if (pages > r->memcg_room)
		return 1;
	return r->global_pressure && r->rmem_alloc >= r->rmem_min;
}

#endif
