/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A socket's BPF storages, walked the way the kernel's
 * bpf_local_storage_lookup() does (its cache, then its list), with CO-RE
 * probe reads only: they need no trusted pointer, so the verifier accepts
 * them on every kernel build, and they never fault.  A storage is
 * recognised by its map: the "socks" map of this instance (by id), or the
 * "socks" map of another lism instance (by name, type and value size).
 */
#ifndef LISM_STORAGE_BPF_H
#define LISM_STORAGE_BPF_H

#include "lism.bpf.h"

/* bpf_local_storage's cache (BPF_LOCAL_STORAGE_CACHE_SIZE), and how far a socket's list is walked */
#define STORAGE_CACHE_MAX 16
#define STORAGE_LIST_MAX 32

enum storage_match {
	STORAGE_THIS_MAP,   /* the map whose id is given */
	STORAGE_OTHER_LISM, /* a lism "socks" map whose id is not the one given */
};

/* Whether this kernel lays socket storage out as storage_find() reads it (CO-RE: a constant). */
#define STORAGE_READABLE()                                                                      \
	(bpf_core_field_exists(((struct sock *)0)->sk_bpf_storage) &&                            \
	 bpf_core_type_exists(struct bpf_local_storage) &&                                       \
	 bpf_core_type_exists(struct bpf_local_storage_elem) &&                                  \
	 bpf_core_type_exists(struct bpf_local_storage_data) &&                                  \
	 bpf_core_type_exists(struct bpf_local_storage_map))

static __always_inline int storage_is(const struct bpf_local_storage_data *sdata, __u32 map_id,
				      enum storage_match how)
{
	struct bpf_local_storage_map *smap;
	__u32 id;
	char name[8];

	if (!sdata)
		return 0;
	smap = BPF_CORE_READ(sdata, smap);
	if (!smap)
		return 0;
	id = BPF_CORE_READ(smap, map.id);
	if (how == STORAGE_THIS_MAP)
		return id == map_id;
	if (id == map_id || BPF_CORE_READ(smap, map.map_type) != BPF_MAP_TYPE_SK_STORAGE ||
	    BPF_CORE_READ(smap, map.value_size) != sizeof(struct lism_sk) ||
	    bpf_probe_read_kernel(name, sizeof(name), &smap->map.name))
		return 0;
	return name[0] == 's' && name[1] == 'o' && name[2] == 'c' && name[3] == 'k' && name[4] == 's' &&
	       name[5] == '\0';
}

/*
 * Kernel address of the data of the socket at @sk's storage that matches,
 * or 0.  Another instance's is looked for on the list only: it is the usual
 * "none", and every storage is on the list (the cache only speeds up hits).
 * A socket with more than STORAGE_LIST_MAX storages is not fully walked.
 */
static __always_inline __u64 storage_find(const struct sock *sk, __u32 map_id, enum storage_match how)
{
	struct bpf_local_storage *ls = BPF_CORE_READ(sk, sk_bpf_storage);
	__u32 cache_n = bpf_core_field_size(ls->cache) / sizeof(ls->cache[0]);
	__u64 data_off = bpf_core_field_offset(struct bpf_local_storage_data, data);
	__u64 snode_off = bpf_core_field_offset(struct bpf_local_storage_elem, snode);
	__u64 sdata_off = bpf_core_field_offset(struct bpf_local_storage_elem, sdata);
	struct bpf_local_storage_data *sdata;
	struct hlist_node *n;

	if (!ls)
		return 0;
	for (__u32 i = 0; how == STORAGE_THIS_MAP && i < STORAGE_CACHE_MAX && i < cache_n; i++) {
		sdata = BPF_CORE_READ(ls, cache[i]);
		if (storage_is(sdata, map_id, how))
			return (__u64)sdata + data_off;
	}
	n = BPF_CORE_READ(ls, list.first);
	for (int i = 0; i < STORAGE_LIST_MAX && n; i++) {
		sdata = (void *)((__u64)n - snode_off + sdata_off);
		if (storage_is(sdata, map_id, how))
			return (__u64)sdata + data_off;
		n = BPF_CORE_READ(n, next);
	}
	return 0;
}

#endif
