// SPDX-License-Identifier: GPL-2.0-only
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "feature.h"
#include "log.h"
#include "objects.h"
#include "pins.h"
#include "backstop.skel.h"
#include "exec.skel.h"
#include "shortcut.skel.h"
#include "sweep.skel.h"
#include "views.skel.h"

static const void *shortcut_elf(size_t *size)
{
	return lism_shortcut_bpf__elf_bytes(size);
}

static const void *views_elf(size_t *size)
{
	return lism_views_bpf__elf_bytes(size);
}

static const void *backstop_elf(size_t *size)
{
	return lism_backstop_bpf__elf_bytes(size);
}

static const void *sweep_elf(size_t *size)
{
	return lism_sweep_bpf__elf_bytes(size);
}

static const void *exec_elf(size_t *size)
{
	return lism_exec_bpf__elf_bytes(size);
}

const struct lism_object lism_objects[] = {
	{ "core", lism_core_elf, 1 },
	{ "shortcut", shortcut_elf, 0 },
	{ "views", views_elf, 0 },
	{ "backstop", backstop_elf, 0 },
	{ "sweep", sweep_elf, 0 },
	{ "exec", exec_elf, 0 },
};
const size_t lism_n_objects = sizeof(lism_objects) / sizeof(lism_objects[0]);

const struct lism_object *lism_object_find(const char *name)
{
	for (size_t i = 0; i < lism_n_objects; i++)
		if (!strcmp(lism_objects[i].name, name))
			return &lism_objects[i];
	return NULL;
}

int lism_feature_of_program(const char *prog)
{
	size_t n = strlen(prog);

	for (int f = 0; f < LISM_F_MAX; f++)
		for (const char *p = lism_feature_info(f)->programs; *p;) {
			size_t len = strcspn(p, ", ");

			if (len == n && !strncmp(p, prog, n))
				return f;
			p += len;
			p += strspn(p, ", ");
		}
	return -1;
}

struct bpf_object *lism_object_open(const struct lism_object *o, const char *pin_path)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .object_name = o->name, .pin_root_path = pin_path);
	size_t size = 0;
	const void *elf = o->elf(&size);
	struct bpf_object *obj = bpf_object__open_mem(elf, size, &opts);
	struct bpf_map *map;
	int err;

	if (!obj || pin_path)
		return obj;
	/* no instance: maps of its own, never pinned (libbpf's default root is the host's /sys/fs/bpf) */
	bpf_object__for_each_map(map, obj) {
		err = bpf_map__set_pin_path(map, NULL);
		if (err) {
			bpf_object__close(obj);
			errno = -err;
			return NULL;
		}
	}
	return obj;
}

int lism_object_configure(struct bpf_object *obj, __u32 entries, __u32 ablate)
{
	static const char *const per_dmb[] = {
		"dmbs", "dmb_owner", "dmb_free", "shortcut", "senders", "sender_queue", "sender_leaves",
	};
	struct bpf_map *map;
	int err;

	for (size_t i = 0; i < sizeof(per_dmb) / sizeof(per_dmb[0]); i++) {
		map = bpf_object__find_map_by_name(obj, per_dmb[i]);
		if (map)
			bpf_map__set_max_entries(map, entries);
	}
	err = lism_object_set_rodata(obj, "lism_ablate", &ablate, sizeof(ablate));
	return err == -ENOENT && !ablate ? 0 : err;
}

int lism_object_set_rodata(struct bpf_object *obj, const char *var, const void *val, size_t size)
{
	const struct btf *btf = bpf_object__btf(obj);
	struct bpf_map *map, *rodata = NULL;
	const struct btf_var_secinfo *vs;
	const struct btf_type *sec;
	size_t data_size;
	const char *data;
	char *copy;
	int id, err;

	bpf_object__for_each_map(map, obj) {
		const char *name = bpf_map__name(map);
		size_t n = strlen(name);

		/* "<object>.rodata", not ".rodata.str1.1" and the like */
		if (bpf_map__is_internal(map) && n >= 7 && !strcmp(name + n - 7, ".rodata"))
			rodata = map;
	}
	id = btf ? btf__find_by_name_kind(btf, ".rodata", BTF_KIND_DATASEC) : -ENOENT;
	if (!rodata || id < 0)
		return -ENOENT;
	data = bpf_map__initial_value(rodata, &data_size);
	if (!data)
		return -ENOENT;
	sec = btf__type_by_id(btf, id);
	vs = btf_var_secinfos(sec);
	for (int i = 0; i < btf_vlen(sec); i++, vs++) {
		const struct btf_type *v = btf__type_by_id(btf, vs->type);

		if (strcmp(btf__name_by_offset(btf, v->name_off), var))
			continue;
		if (vs->size != size || vs->offset + size > data_size)
			return -EINVAL;
		copy = malloc(data_size);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, data, data_size);
		memcpy(copy + vs->offset, val, size);
		err = bpf_map__set_initial_value(rodata, copy, data_size);
		free(copy);
		return err;
	}
	return -ENOENT;
}

int lism_prog_run_once(int prog_fd, __u32 *retval)
{
	char frame[14] = { 0 }; /* BPF_PROG_RUN of a tc program wants an Ethernet header; unread */
	LIBBPF_OPTS(bpf_test_run_opts, run, .data_in = frame, .data_size_in = sizeof(frame));
	int err = bpf_prog_test_run_opts(prog_fd, &run);

	*retval = run.retval;
	return err ? -errno : 0;
}
