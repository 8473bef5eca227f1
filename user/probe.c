// SPDX-License-Identifier: GPL-2.0-only
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <stdio.h>
#include <string.h>

#include "probe.h"

static void note(char *missing, size_t len, int *n, const char *what)
{
	size_t used = strlen(missing);

	snprintf(missing + used, len - used, "%s%s", *n ? ", " : "", what);
	(*n)++;
}

static int struct_has_member(const struct btf *btf, const char *type, const char *member)
{
	int id = btf__find_by_name_kind(btf, type, BTF_KIND_STRUCT);
	const struct btf_type *t;
	const struct btf_member *m;

	if (id < 0)
		return 0;
	t = btf__type_by_id(btf, id);
	m = btf_members(t);
	for (int i = 0; i < btf_vlen(t); i++, m++)
		if (!strcmp(btf__name_by_offset(btf, m->name_off), member))
			return 1;
	return 0;
}

int lism_probe_kernel(char *missing, size_t len)
{
	static const struct {
		enum bpf_map_type type;
		const char *name;
	} maps[] = {
		{ BPF_MAP_TYPE_SOCKHASH, "map sockhash" },
		{ BPF_MAP_TYPE_SK_STORAGE, "map sk_storage" },
		{ BPF_MAP_TYPE_QUEUE, "map queue" },
		{ BPF_MAP_TYPE_LPM_TRIE, "map lpm_trie" },
		{ BPF_MAP_TYPE_RINGBUF, "map ringbuf" },
		{ BPF_MAP_TYPE_PERCPU_ARRAY, "map percpu_array" },
	};
	static const struct {
		enum bpf_prog_type type;
		enum bpf_func_id id;
		const char *name;
	} helpers[] = {
		{ BPF_PROG_TYPE_SOCK_OPS, BPF_FUNC_sock_hash_update, "bpf_sock_hash_update" },
		{ BPF_PROG_TYPE_SOCK_OPS, BPF_FUNC_load_hdr_opt, "bpf_load_hdr_opt" },
		{ BPF_PROG_TYPE_SOCK_OPS, BPF_FUNC_store_hdr_opt, "bpf_store_hdr_opt" },
		{ BPF_PROG_TYPE_SOCK_OPS, BPF_FUNC_reserve_hdr_opt, "bpf_reserve_hdr_opt" },
		{ BPF_PROG_TYPE_SOCK_OPS, BPF_FUNC_sk_storage_get, "bpf_sk_storage_get (sockops)" },
		{ BPF_PROG_TYPE_SOCK_OPS, BPF_FUNC_setsockopt, "bpf_setsockopt (sockops)" },
		{ BPF_PROG_TYPE_SOCK_OPS, BPF_FUNC_ringbuf_reserve, "bpf_ringbuf_reserve" },
		{ BPF_PROG_TYPE_SOCK_OPS, BPF_FUNC_probe_read_kernel, "bpf_probe_read_kernel (sockops)" },
		{ BPF_PROG_TYPE_SOCK_OPS, BPF_FUNC_skc_to_tcp_sock, "bpf_skc_to_tcp_sock (sockops)" },
		{ BPF_PROG_TYPE_SK_MSG, BPF_FUNC_msg_redirect_hash, "bpf_msg_redirect_hash" },
		{ BPF_PROG_TYPE_SK_MSG, BPF_FUNC_sk_storage_get, "bpf_sk_storage_get (sk_msg)" },
		{ BPF_PROG_TYPE_SK_MSG, BPF_FUNC_skc_to_tcp_sock, "bpf_skc_to_tcp_sock (sk_msg)" },
	};
	static const char *const kfuncs[] = { "bpf_rdonly_cast", "bpf_cast_to_kern_ctx" };
	struct btf *vmlinux;
	int n = 0;

	missing[0] = '\0';
	if (libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_SOCK_OPS, NULL) != 1)
		note(missing, len, &n, "program type sockops");
	if (libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_SK_MSG, NULL) != 1)
		note(missing, len, &n, "program type sk_msg");
	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
		if (libbpf_probe_bpf_map_type(maps[i].type, NULL) != 1)
			note(missing, len, &n, maps[i].name);
	for (size_t i = 0; i < sizeof(helpers) / sizeof(helpers[0]); i++)
		if (libbpf_probe_bpf_helper(helpers[i].type, helpers[i].id, NULL) != 1)
			note(missing, len, &n, helpers[i].name);
	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux) {
		note(missing, len, &n, "kernel BTF (/sys/kernel/btf/vmlinux)");
		return n;
	}
	for (size_t i = 0; i < sizeof(kfuncs) / sizeof(kfuncs[0]); i++)
		if (btf__find_by_name_kind(vmlinux, kfuncs[i], BTF_KIND_FUNC) < 0)
			note(missing, len, &n, kfuncs[i]);
	/*
	 * The 2026 sockmap FIONREAD fix: without it FIONREAD ignores shortcut
	 * bytes and lism cannot see how full a DMB is.
	 */
	if (!struct_has_member(vmlinux, "sk_psock", "msg_tot_len"))
		note(missing, len, &n, "sk_psock.msg_tot_len (sockmap FIONREAD fix, 2026)");
	btf__free(vmlinux);
	return n;
}
