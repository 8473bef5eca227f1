// SPDX-License-Identifier: GPL-2.0-only
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "cli.h"
#include "core_fields.h"
#include "feature.h"
#include "load_log.h"
#include "log.h"
#include "objects.h"
#include "probe.h"

#define H(type, fn, feat) { BPF_PROG_TYPE_##type, BPF_FUNC_##fn, "bpf_" #fn, LISM_F_##feat }

/*
 * The helpers each program calls, by program type (read off the objects:
 * tests/unit/test_probe.c fails when an object calls one not listed for it).
 * Tracing programs (the iterator, the backstop) cannot be probed by loading a
 * test program: for them the kernel's BTF tells whether it knows the helper.
 */
const struct lism_helper_req lism_helper_reqs[] = {
	/* lism_sockops: the handshake and the members' watch */
	H(SOCK_OPS, map_lookup_elem, HANDSHAKE), H(SOCK_OPS, map_update_elem, HANDSHAKE),
	H(SOCK_OPS, map_delete_elem, HANDSHAKE), H(SOCK_OPS, map_push_elem, HANDSHAKE),
	H(SOCK_OPS, map_pop_elem, HANDSHAKE), H(SOCK_OPS, sk_storage_get, HANDSHAKE),
	H(SOCK_OPS, probe_read_kernel, HANDSHAKE), H(SOCK_OPS, get_netns_cookie, HANDSHAKE),
	H(SOCK_OPS, ringbuf_reserve, HANDSHAKE), H(SOCK_OPS, ringbuf_submit, HANDSHAKE),
	H(SOCK_OPS, ringbuf_query, HANDSHAKE), H(SOCK_OPS, skc_to_tcp_sock, HANDSHAKE),
	H(SOCK_OPS, load_hdr_opt, HANDSHAKE), H(SOCK_OPS, store_hdr_opt, HANDSHAKE),
	H(SOCK_OPS, reserve_hdr_opt, HANDSHAKE), H(SOCK_OPS, timer_start, HANDSHAKE),
	H(SOCK_OPS, get_socket_cookie, HANDSHAKE), H(SOCK_OPS, setsockopt, HANDSHAKE),
	H(SOCK_OPS, getsockopt, HANDSHAKE), H(SOCK_OPS, ktime_get_ns, HANDSHAKE),
	H(SOCK_OPS, sock_ops_cb_flags_set, HANDSHAKE), H(SOCK_OPS, sock_hash_update, HANDSHAKE),
	/* lism_msg: the per-message redirect */
	H(SK_MSG, map_lookup_elem, DATA_PATH), H(SK_MSG, map_push_elem, DATA_PATH),
	H(SK_MSG, sk_storage_get, DATA_PATH), H(SK_MSG, skc_to_tcp_sock, DATA_PATH),
	H(SK_MSG, probe_read_kernel, DATA_PATH), H(SK_MSG, timer_start, DATA_PATH),
	H(SK_MSG, msg_redirect_hash, DATA_PATH),
	/* lism_sender_start and its timer callback: members join the senders map */
	H(SCHED_CLS, map_lookup_elem, DATA_PATH), H(SCHED_CLS, map_update_elem, DATA_PATH),
	H(SCHED_CLS, map_delete_elem, DATA_PATH), H(SCHED_CLS, map_pop_elem, DATA_PATH),
	H(SCHED_CLS, timer_init, DATA_PATH),
	H(SCHED_CLS, timer_set_callback, DATA_PATH), H(SCHED_CLS, timer_start, DATA_PATH),
	H(SCHED_CLS, sk_storage_get, DATA_PATH), H(SCHED_CLS, sk_release, DATA_PATH),
	H(SCHED_CLS, skc_to_tcp_sock, DATA_PATH), H(SCHED_CLS, probe_read_kernel, DATA_PATH),
	/* lism_iter_socks */
	H(TRACING, sock_from_file, CONNS), H(TRACING, probe_read_kernel, CONNS),
	H(TRACING, probe_read_kernel_str, CONNS), H(TRACING, seq_write, CONNS),
	/* lism_destroy */
	H(TRACING, map_lookup_elem, BACKSTOP), H(TRACING, map_update_elem, BACKSTOP),
	H(TRACING, map_push_elem, BACKSTOP), H(TRACING, sk_storage_get, BACKSTOP),
	H(TRACING, get_socket_cookie, BACKSTOP), H(TRACING, ktime_get_ns, BACKSTOP),
	H(TRACING, ringbuf_reserve, BACKSTOP), H(TRACING, ringbuf_submit, BACKSTOP),
	H(TRACING, ringbuf_query, BACKSTOP),
	/* lism_sweep_start and its timer callback */
	H(SCHED_CLS, map_lookup_elem, SWEEP), H(SCHED_CLS, map_update_elem, SWEEP),
	H(SCHED_CLS, map_push_elem, SWEEP), H(SCHED_CLS, timer_init, SWEEP),
	H(SCHED_CLS, timer_set_callback, SWEEP), H(SCHED_CLS, timer_start, SWEEP),
	H(SCHED_CLS, loop, SWEEP), H(SCHED_CLS, probe_read_kernel, SWEEP),
	H(SCHED_CLS, ktime_get_ns, SWEEP), H(SCHED_CLS, ringbuf_reserve, SWEEP),
	H(SCHED_CLS, ringbuf_submit, SWEEP), H(SCHED_CLS, ringbuf_query, SWEEP),
	/* lism_exec_set, lism_exec_get */
	H(CGROUP_SOCKOPT, sk_storage_get, EXEC), H(CGROUP_SOCKOPT, sk_storage_delete, EXEC),
	H(CGROUP_SOCKOPT, map_lookup_elem, EXEC),
};
const size_t lism_n_helper_reqs = sizeof(lism_helper_reqs) / sizeof(lism_helper_reqs[0]);

/* How the loader attaches each program that it attaches (tc programs only run through BPF_PROG_RUN). */
static const struct {
	const char *prog;
	enum bpf_attach_type type;
} attaches[] = {
	{ "lism_sockops", BPF_CGROUP_SOCK_OPS },   /* a cgroup link */
	{ "lism_msg", BPF_SK_MSG_VERDICT },        /* on the senders map */
	{ "lism_iter_socks", BPF_TRACE_ITER },     /* an iterator link per lism conns */
	{ "lism_destroy", BPF_TRACE_RAW_TP },      /* a tracing link (tp_btf) */
	{ "lism_exec_set", BPF_CGROUP_SETSOCKOPT }, /* cgroup links */
	{ "lism_exec_get", BPF_CGROUP_GETSOCKOPT },
};

/* What a requirement means beyond its name. */
static const struct {
	const char *name;
	const char *note;
} notes[] = {
	{ "sk_psock.msg_tot_len", "the sockmap FIONREAD fix: how full a peer's DMB is" },
	{ "enum value BPF_SOCK_OPS_TSTAMP_SENDMSG_CB", "a sockops callback at each sendmsg (Linux 6.15)" },
	{ "sock.sk_bpf_storage", "where lism conns finds a socket's lism state" },
	{ "kernel.bpf_stats_enabled", "the kernel counts BPF run time while it is 1" },
	{ "kernel BTF", "CO-RE, iterators, the backstop, kfuncs" },
};

static const char *note_of(const char *name)
{
	for (size_t i = 0; i < sizeof(notes) / sizeof(notes[0]); i++)
		if (!strncmp(name, notes[i].name, strlen(notes[i].name)))
			return notes[i].note;
	return NULL;
}

/* Add @r's features to the same requirement, or append it. */
static int add(struct lism_probe *p, const struct lism_kreq *r)
{
	/* one row per requirement; a field one object checks first and another reads outright is two */
	for (size_t i = 0; i < p->n; i++)
		if (p->req[i].kind == r->kind && p->req[i].type == r->type && p->req[i].id == r->id &&
		    p->req[i].checked == r->checked && !strcmp(p->req[i].name, r->name)) {
			p->req[i].features |= r->features;
			return 0;
		}
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 64;
		struct lism_kreq *bigger = realloc(p->req, cap * sizeof(*bigger));

		if (!bigger)
			return -ENOMEM;
		p->req = bigger;
		p->cap = cap;
	}
	p->req[p->n] = *r;
	p->req[p->n].note = note_of(r->name);
	p->n++;
	return 0;
}

static int add_simple(struct lism_probe *p, enum lism_kreq_kind kind, __u32 type, __u32 id, __u32 features,
		      const char *fmt, const char *arg)
{
	struct lism_kreq r = { .kind = kind, .type = type, .id = id, .features = features, .have = -1 };

	snprintf(r.name, sizeof(r.name), fmt, arg);
	return add(p, &r);
}

struct kfunc_ctx {
	struct lism_probe *p;
	__u32 features;
	int err;
};

static void add_kfunc(const char *name, void *ctx)
{
	struct kfunc_ctx *kf = ctx;

	if (!kf->err)
		kf->err = add_simple(kf->p, LISM_KR_KFUNC, 0, 0, kf->features, "kfunc %s", name);
}

/* Program and map types, iterators, tracepoints, kfuncs and CO-RE references of one object. */
static int collect_object(struct lism_probe *p, const struct lism_object *o)
{
	struct bpf_object *obj = lism_object_open(o, NULL);
	struct lism_core_ref *refs = NULL;
	struct bpf_program *prog;
	struct bpf_map *map;
	__u32 features = 0;
	size_t size = 0, nrefs = 0;
	struct kfunc_ctx kf = { 0 };
	const void *elf;
	int err = 0;

	if (!obj)
		return -errno;
	bpf_object__for_each_program(prog, obj) {
		int f = lism_feature_of_program(bpf_program__name(prog));
		const char *sec = bpf_program__section_name(prog);
		__u32 bit = f < 0 ? 0 : 1u << f;
		enum bpf_prog_type type = bpf_program__type(prog);

		features |= bit;
		if (!strncmp(sec, "iter/", 5))
			err = add_simple(p, LISM_KR_ITER, 0, 0, bit, "iterator %s", sec + 5);
		else if (!strncmp(sec, "tp_btf/", 7))
			err = add_simple(p, LISM_KR_TRACEPOINT, 0, 0, bit, "tracepoint %s (BTF-typed)", sec + 7);
		else
			err = add_simple(p, LISM_KR_PROG, type, 0, bit, "program type %s",
					 libbpf_bpf_prog_type_str(type));
		for (size_t i = 0; !err && i < sizeof(attaches) / sizeof(attaches[0]); i++)
			if (!strcmp(attaches[i].prog, bpf_program__name(prog)))
				err = add_simple(p, LISM_KR_ATTACH, attaches[i].type, 0, bit, "attach type %s",
						 libbpf_bpf_attach_type_str(attaches[i].type));
		if (err)
			goto out;
	}
	bpf_object__for_each_map(map, obj) {
		enum bpf_map_type type = bpf_map__type(map);

		if (bpf_map__is_internal(map) || !o->own_maps)
			continue;
		err = add_simple(p, LISM_KR_MAP, type, 0, features, "map type %s", libbpf_bpf_map_type_str(type));
		if (err)
			goto out;
	}
	elf = o->elf(&size);
	kf.p = p;
	kf.features = features;
	err = lism_elf_kfuncs(elf, size, add_kfunc, &kf);
	if (!err)
		err = kf.err;
	if (!err)
		err = lism_core_refs(elf, size, &refs, &nrefs);
	for (size_t i = 0; !err && i < nrefs; i++) {
		struct lism_kreq r = { .kind = LISM_KR_CORE, .features = features, .have = -1,
				       .checked = refs[i].checked, .core = refs[i] };

		lism_core_ref_format(&refs[i], r.name, sizeof(r.name));
		err = add(p, &r);
	}
out:
	free(refs);
	bpf_object__close(obj);
	return err;
}

/* Whether the kernel knows helper @id at all: its BTF's enum bpf_func_id has the value. */
static int helper_known(const struct btf *vmlinux, __u32 id)
{
	int tid = vmlinux ? btf__find_by_name_kind(vmlinux, "bpf_func_id", BTF_KIND_ENUM) : -1;
	const struct btf_type *t;

	if (tid < 0)
		return -1;
	t = btf__type_by_id(vmlinux, tid);
	for (int i = 0; i < btf_vlen(t); i++)
		if ((__u32)btf_enum(t)[i].val == id)
			return 1;
	return 0;
}

/* Whether the kernel knows attach type @type: its BTF's enum bpf_attach_type has the value. */
static int attach_known(const struct btf *vmlinux, __u32 type)
{
	int tid = vmlinux ? btf__find_by_name_kind(vmlinux, "bpf_attach_type", BTF_KIND_ENUM) : -1;
	const struct btf_type *t;

	if (tid < 0)
		return -1;
	t = btf__type_by_id(vmlinux, tid);
	for (int i = 0; i < btf_vlen(t); i++)
		if ((__u32)btf_enum(t)[i].val == type && !strstr(btf__name_by_offset(vmlinux, btf_enum(t)[i].name_off),
								 "MAX"))
			return 1;
	return 0;
}

/* Kernel modules' BTF (split on vmlinux): kfuncs and types that live in a module. */
static int load_modules(struct btf *vmlinux, struct btf ***out)
{
	struct btf **btfs = NULL;
	struct dirent *de;
	int n = 0;
	DIR *d = opendir("/sys/kernel/btf");

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char path[512];
		struct btf *b, **bigger;

		if (de->d_name[0] == '.' || !strcmp(de->d_name, "vmlinux"))
			continue;
		snprintf(path, sizeof(path), "/sys/kernel/btf/%s", de->d_name);
		b = btf__parse_split(path, vmlinux);
		if (!b)
			continue;
		bigger = realloc(btfs, (n + 1) * sizeof(*btfs));
		if (!bigger) {
			btf__free(b);
			break;
		}
		btfs = bigger;
		btfs[n++] = b;
	}
	closedir(d);
	*out = btfs;
	return n;
}

/* Whether a type by @kind and @name exists in vmlinux or a module. */
static int btf_has(struct btf *const *btfs, int n, const char *name, int kind)
{
	for (int i = 0; i < n; i++)
		if (btf__find_by_name_kind(btfs[i], name, kind) >= 0)
			return 1;
	return 0;
}

static int check(struct lism_probe *p, struct lism_kreq *r, struct btf *const *btfs, int nbtf)
{
	struct btf *vmlinux = nbtf ? btfs[0] : NULL;
	const char *arg = strchr(r->name, ' ');

	arg = arg ? arg + 1 : r->name;
	switch (r->kind) {
	case LISM_KR_BTF:
		return vmlinux != NULL;
	case LISM_KR_PROG:
		if (r->type == BPF_PROG_TYPE_TRACING) /* not loadable without a target: BTF says */
			return vmlinux != NULL;
		return p->root ? libbpf_probe_bpf_prog_type(r->type, NULL) == 1 : -1;
	case LISM_KR_MAP:
		return p->root ? libbpf_probe_bpf_map_type(r->type, NULL) == 1 : -1;
	case LISM_KR_HELPER:
		if (r->type == BPF_PROG_TYPE_TRACING)
			return helper_known(vmlinux, r->id);
		return p->root ? libbpf_probe_bpf_helper(r->type, r->id, NULL) == 1 : -1;
	case LISM_KR_KFUNC:
		return btf_has(btfs, nbtf, arg, BTF_KIND_FUNC);
	case LISM_KR_ATTACH:
		return attach_known(vmlinux, r->type);
	case LISM_KR_ITER: {
		char fn[96];
		size_t n = strcspn(arg, " ");

		snprintf(fn, sizeof(fn), "bpf_iter_%.*s", (int)n, arg);
		return btf_has(btfs, nbtf, fn, BTF_KIND_FUNC);
	}
	case LISM_KR_TRACEPOINT: {
		char td[96];
		size_t n = strcspn(arg, " ");

		snprintf(td, sizeof(td), "btf_trace_%.*s", (int)n, arg);
		return btf_has(btfs, nbtf, td, BTF_KIND_TYPEDEF);
	}
	case LISM_KR_CORE:
		return vmlinux ? lism_core_ref_resolve(&r->core, btfs, nbtf) : 0;
	case LISM_KR_SYSCTL: {
		char path[192];

		snprintf(path, sizeof(path), "/proc/sys/%s", r->name);
		for (char *c = path + 10; *c; c++)
			if (*c == '.')
				*c = '/';
		return access(path, F_OK) == 0;
	}
	case LISM_KR_MAX:
		break;
	}
	return -1;
}

int lism_probe_run(struct lism_probe *p)
{
	struct btf **btfs = NULL, **mods = NULL, *vmlinux;
	int err = 0, nbtf = 0, nmods = 0;

	memset(p, 0, sizeof(*p));
	lism_kernel_release(p->kernel, sizeof(p->kernel));
	p->root = geteuid() == 0;
	/* the requirements: what the objects tell, then the table and the rest */
	err = add_simple(p, LISM_KR_BTF, 0, 0, ~0u, "%s", "kernel BTF (/sys/kernel/btf/vmlinux)");
	for (size_t i = 0; !err && i < lism_n_objects; i++)
		err = collect_object(p, &lism_objects[i]);
	for (size_t i = 0; !err && i < lism_n_helper_reqs; i++) {
		const struct lism_helper_req *h = &lism_helper_reqs[i];
		struct lism_kreq r = { .kind = LISM_KR_HELPER, .type = h->prog_type, .id = h->helper,
				       .features = 1u << h->feature, .have = -1 };

		snprintf(r.name, sizeof(r.name), "helper %s (%s)", h->name, libbpf_bpf_prog_type_str(h->prog_type));
		err = add(p, &r);
	}
	if (!err) { /* a constant the handshake compares s->op with: no relocation tells */
		struct lism_kreq r = { .kind = LISM_KR_CORE, .features = 1u << LISM_F_SEND_SIZES, .have = -1,
				       .core = { .kind = LISM_CORE_ENUMVAL,
						 .enumval = "BPF_SOCK_OPS_TSTAMP_SENDMSG_CB" } };

		lism_core_ref_format(&r.core, r.name, sizeof(r.name));
		err = add(p, &r);
	}
	if (!err)
		err = add_simple(p, LISM_KR_SYSCTL, 0, 0, 1u << LISM_F_BPF_STATS, "%s", "kernel.bpf_stats_enabled");
	if (err) {
		lism_probe_free(p);
		return err;
	}

	/* the checks: libbpf's probes for what loads, the kernel's BTF for the rest */
	vmlinux = btf__load_vmlinux_btf();
	if (vmlinux) {
		nmods = load_modules(vmlinux, &mods);
		btfs = calloc(1 + nmods, sizeof(*btfs));
		if (!btfs) {
			err = -ENOMEM;
			goto out;
		}
		btfs[nbtf++] = vmlinux;
		for (int i = 0; i < nmods; i++)
			btfs[nbtf++] = mods[i];
	}
	lism_log_quiet(1); /* a probe that fails says "missing" below, not a libbpf warning */
	for (size_t i = 0; i < p->n; i++) {
		struct lism_kreq *r = &p->req[i];

		r->have = check(p, r, btfs, nbtf);
		if (r->have == 0 && !r->checked)
			p->missing |= r->features;
	}
	lism_log_quiet(0);
out:
	for (int i = 1; i < nbtf; i++)
		btf__free(btfs[i]);
	for (int i = 0; !btfs && i < nmods; i++) /* not handed to btfs[] */
		btf__free(mods[i]);
	btf__free(vmlinux);
	free(mods);
	free(btfs);
	if (err)
		lism_probe_free(p);
	return err;
}

void lism_probe_free(struct lism_probe *p)
{
	free(p->req);
	memset(p, 0, sizeof(*p));
}

int lism_probe_missing(const struct lism_probe *p, enum lism_feature f, char *buf, size_t len)
{
	int n = 0;

	if (len)
		buf[0] = '\0';
	for (size_t i = 0; i < p->n; i++) {
		const struct lism_kreq *r = &p->req[i];
		size_t used = strlen(buf);

		if (!(r->features & (1u << f)) || r->have != 0 || r->checked)
			continue;
		if (used < len)
			snprintf(buf + used, len - used, "%s%s", n ? ", " : "", r->name);
		n++;
	}
	return n;
}

/*
 * Trial load of one object with maps of its own (nothing pinned, nothing
 * attached): 0 or -errno, *@r why not, *@features the features of its
 * programs; 1 (not tried) when the kernel lacks what each of them needs
 * (@lacking): its verifier has nothing to say about them.
 */
static int verify_object(const struct lism_object *o, __u32 lacking, struct lism_refusal *r, __u32 *features)
{
	struct lism_load_log log;
	struct bpf_program *prog;
	struct bpf_object *obj;
	int err;

	memset(r, 0, sizeof(*r));
	*features = 0;
	obj = lism_object_open(o, NULL);
	if (!obj)
		return -errno;
	bpf_object__for_each_program(prog, obj) {
		int f = lism_feature_of_program(bpf_program__name(prog));

		*features |= f < 0 ? 0 : 1u << f;
	}
	if (*features && !(*features & ~lacking)) {
		bpf_object__close(obj);
		return 1;
	}
	err = lism_load_log_begin(&log);
	if (!err) {
		err = bpf_object__load(obj);
		lism_load_log_end(&log);
		if (err)
			lism_refusal_parse(log.text, r);
		lism_load_log_free(&log);
	}
	bpf_object__close(obj);
	return err;
}

static const char *yes_no(int have)
{
	return have > 0 ? "yes" : have == 0 ? "NO" : "?";
}

static void features_of(__u32 bits, char *buf, size_t len)
{
	buf[0] = '\0';
	if (bits == ~0u) {
		snprintf(buf, len, "all");
		return;
	}
	for (int f = 0; f < LISM_F_MAX; f++)
		if (bits & (1u << f)) {
			size_t used = strlen(buf);

			snprintf(buf + used, len - used, "%s%s", used ? "," : "", lism_feature_info(f)->name);
		}
}

static const char *kind_names[LISM_KR_MAX] = {
	[LISM_KR_BTF] = "btf",         [LISM_KR_PROG] = "program_type", [LISM_KR_MAP] = "map_type",
	[LISM_KR_HELPER] = "helper",   [LISM_KR_KFUNC] = "kfunc",       [LISM_KR_ITER] = "iterator",
	[LISM_KR_TRACEPOINT] = "tracepoint", [LISM_KR_CORE] = "core",   [LISM_KR_SYSCTL] = "sysctl",
	[LISM_KR_ATTACH] = "attach_type",
};

int lism_cmd_probe(const struct lism_common_opts *co)
{
	struct lism_refusal verdict[LISM_F_MAX];
	int verified[LISM_F_MAX]; /* 1 verified, 0 refused, -1 not tried */
	struct lism_probe p;
	char used[160], missing[1024];
	int err, core_ok = 1;

	err = lism_probe_run(&p);
	if (err) {
		lism_err("probing the kernel failed: %s", strerror(-err));
		return LISM_EXIT_FAIL;
	}
	/* the verifier's own answer, object by object (it loads them: root only) */
	for (int f = 0; f < LISM_F_MAX; f++)
		verified[f] = -1;
	for (size_t i = 0; p.root && i < lism_n_objects; i++) {
		struct lism_refusal r;
		__u32 features;
		int err = verify_object(&lism_objects[i], p.missing, &r, &features), ok = err == 0;

		for (int f = 0; err != 1 && f < LISM_F_MAX; f++)
			if (features & (1u << f)) {
				verified[f] = ok;
				verdict[f] = r;
			}
	}
	for (int f = 0; f < LISM_F_MAX; f++)
		if (lism_feature_info(f)->core && ((p.missing & (1u << f)) || verified[f] == 0))
			core_ok = 0;

	if (co->json) {
		struct json_object *j = json_object_new_object(), *feats = json_object_new_object(),
				   *reqs = json_object_new_array();

		json_object_object_add(j, "kernel", json_object_new_string(p.kernel));
		json_object_object_add(j, "probed_as_root", json_object_new_boolean(p.root));
		json_object_object_add(j, "loadable", json_object_new_boolean(core_ok));
		for (int f = 0; f < LISM_F_MAX; f++) {
			struct json_object *one = json_object_new_object();

			lism_probe_missing(&p, f, missing, sizeof(missing));
			json_object_object_add(one, "core", json_object_new_boolean(lism_feature_info(f)->core));
			json_object_object_add(one, "kernel", json_object_new_boolean(!(p.missing & (1u << f))));
			json_object_object_add(one, "missing", json_object_new_string(missing));
			json_object_object_add(one, "verifier",
					       verified[f] < 0 ? NULL : json_object_new_boolean(verified[f]));
			if (verified[f] == 0) {
				char why[512];

				lism_refusal_summary(&verdict[f], why, sizeof(why));
				json_object_object_add(one, "refused", json_object_new_string(why));
			}
			json_object_object_add(feats, lism_feature_info(f)->name, one);
		}
		json_object_object_add(j, "features", feats);
		for (size_t i = 0; i < p.n; i++) {
			struct json_object *one = json_object_new_object(), *by = json_object_new_array();

			json_object_object_add(one, "what", json_object_new_string(p.req[i].name));
			json_object_object_add(one, "kind", json_object_new_string(kind_names[p.req[i].kind]));
			json_object_object_add(one, "here",
					       p.req[i].have < 0 ? NULL : json_object_new_boolean(p.req[i].have));
			json_object_object_add(one, "checked", json_object_new_boolean(p.req[i].checked));
			for (int f = 0; f < LISM_F_MAX; f++)
				if (p.req[i].features & (1u << f))
					json_object_array_add(by, json_object_new_string(lism_feature_info(f)->name));
			json_object_object_add(one, "used_by", by);
			if (p.req[i].note)
				json_object_object_add(one, "note", json_object_new_string(p.req[i].note));
			json_object_array_add(reqs, one);
		}
		json_object_object_add(j, "requirements", reqs);
		puts(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN));
		json_object_put(j);
	} else {
		printf("kernel %s\n", p.kernel);
		if (!p.root)
			printf("(not root: program, map and helper probes and the verifier's answers skipped: '?')\n");
		printf("\n%-11s %-9s %-7s %-9s %s\n", "Feature", "Class", "Kernel", "Verifier", "Missing or refused");
		for (int f = 0; f < LISM_F_MAX; f++) {
			const struct lism_feature_info *fi = lism_feature_info(f);
			int n = lism_probe_missing(&p, f, missing, sizeof(missing));

			if (!n && verified[f] == 0)
				lism_refusal_summary(&verdict[f], missing, sizeof(missing));
			printf("%-11s %-9s %-7s %-9s %s\n", fi->name, fi->core ? "core" : "optional", n ? "NO" : "yes",
			       verified[f] < 0 ? "-" : verified[f] ? "yes" : "REFUSED", missing);
		}
		printf("\n%-60s %-5s %s\n", "Kernel feature", "Here", "Used by");
		for (size_t i = 0; i < p.n; i++) {
			const struct lism_kreq *r = &p.req[i];

			features_of(r->features, used, sizeof(used));
			printf("%-60s %-5s %s%s%s%s\n", r->name, yes_no(r->have), used,
			       r->checked ? " (checked first: optional)" : "", r->note ? "  -- " : "",
			       r->note ? r->note : "");
		}
		printf("\nlism %s load on this kernel%s\n", core_ok ? "can" : "CANNOT",
		       core_ok ? "" : ": a core feature is missing or refused (above)");
	}
	lism_probe_free(&p);
	return core_ok ? LISM_EXIT_OK : LISM_EXIT_ENV;
}
