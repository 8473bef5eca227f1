// SPDX-License-Identifier: GPL-2.0-only
#include <bpf/btf.h>
#include <errno.h>
#include <gelf.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_fields.h"

/* .BTF.ext's header (libbpf's libbpf_internal.h; the layout is the ELF format's). */
struct ext_header {
	__u16 magic;
	__u8 version;
	__u8 flags;
	__u32 hdr_len;
	__u32 func_info_off;
	__u32 func_info_len;
	__u32 line_info_off;
	__u32 line_info_len;
	__u32 core_relo_off;
	__u32 core_relo_len;
};

struct elf_view {
	char *copy; /* libelf reads a writable image */
	Elf *elf;
	size_t shstrndx;
};

static int elf_open(struct elf_view *v, const void *bytes, size_t size)
{
	memset(v, 0, sizeof(*v));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	v->copy = malloc(size);
	if (!v->copy)
		return -ENOMEM;
	memcpy(v->copy, bytes, size);
	v->elf = elf_memory(v->copy, size);
	if (!v->elf || elf_getshdrstrndx(v->elf, &v->shstrndx)) {
		if (v->elf)
			elf_end(v->elf);
		free(v->copy);
		return -EINVAL;
	}
	return 0;
}

static void elf_close(struct elf_view *v)
{
	if (v->elf)
		elf_end(v->elf);
	free(v->copy);
}

/* The data of the section called @name, or NULL. */
static Elf_Data *elf_section(struct elf_view *v, const char *name)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(v->elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, &sh))
			continue;
		n = elf_strptr(v->elf, v->shstrndx, sh.sh_name);
		if (n && !strcmp(n, name))
			return elf_getdata(scn, NULL);
	}
	return NULL;
}

int lism_elf_helper_calls(const void *elf, size_t size,
			  void (*cb)(const char *section, unsigned int helper, void *ctx), void *ctx)
{
	struct elf_view v;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	int err = elf_open(&v, elf, size);

	if (err)
		return err;
	while ((scn = elf_nextscn(v.elf, scn))) {
		const struct bpf_insn *insn;
		Elf_Data *d;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR))
			continue;
		name = elf_strptr(v.elf, v.shstrndx, sh.sh_name);
		d = elf_getdata(scn, NULL);
		if (!name || !d || !d->d_buf)
			continue;
		insn = d->d_buf;
		for (size_t i = 0; i < d->d_size / sizeof(*insn); i++)
			if (insn[i].code == (BPF_JMP | BPF_CALL) && insn[i].src_reg == 0 && insn[i].imm > 0)
				cb(name, (unsigned int)insn[i].imm, ctx);
	}
	elf_close(&v);
	return 0;
}

/* "sock___x" -> "sock": CO-RE matches a local type by its name without the flavour. */
static void base_name(const char *name, char *out, size_t len)
{
	const char *flavour = strstr(name, "___");
	size_t n = flavour ? (size_t)(flavour - name) : strlen(name);

	if (n >= len)
		n = len - 1;
	memcpy(out, name, n);
	out[n] = '\0';
}

static int parse_access(const char *s, int *acc, int max)
{
	int n = 0;

	if (!s)
		return -1;
	while (*s && n < max) {
		char *end;
		long v = strtol(s, &end, 10);

		if (end == s || v < 0 || v > 65535)
			return -1;
		acc[n++] = (int)v;
		s = *end == ':' ? end + 1 : end;
	}
	return n;
}

/* The name of enumerator @i of enum (or enum64) @t. */
static const char *enumerator(const struct btf *btf, const struct btf_type *t, int i)
{
	return btf__name_by_offset(btf, btf_is_enum64(t) ? btf_enum64(t)[i].name_off : btf_enum(t)[i].name_off);
}

static int is_enum(const struct btf_type *t)
{
	return btf_is_enum(t) || btf_is_enum64(t);
}

/* One relocation as a reference; 0 if it names nothing in the kernel (a local type id). */
static int relo_ref(const struct btf *btf, const struct bpf_core_relo *rl, struct lism_core_ref *r)
{
	const struct btf_type *t;
	int acc[32], n, id;

	memset(r, 0, sizeof(*r));
	if (rl->kind == BPF_CORE_TYPE_ID_LOCAL)
		return 0;
	n = parse_access(btf__str_by_offset(btf, rl->access_str_off), acc, 32);
	id = btf__resolve_type(btf, rl->type_id);
	if (n < 1 || id < 0)
		return 0;
	t = btf__type_by_id(btf, id);
	base_name(btf__name_by_offset(btf, t->name_off), r->type, sizeof(r->type));
	switch (rl->kind) {
	case BPF_CORE_FIELD_BYTE_OFFSET:
	case BPF_CORE_FIELD_BYTE_SIZE:
	case BPF_CORE_FIELD_EXISTS:
	case BPF_CORE_FIELD_SIGNED:
	case BPF_CORE_FIELD_LSHIFT_U64:
	case BPF_CORE_FIELD_RSHIFT_U64:
		r->kind = LISM_CORE_FIELD;
		r->checked = rl->kind == BPF_CORE_FIELD_EXISTS;
		for (int i = 1; i < n; i++) {
			if (btf_is_composite(t)) {
				const struct btf_member *m;
				const char *name;

				if (acc[i] >= btf_vlen(t))
					return 0;
				m = btf_members(t) + acc[i];
				name = btf__name_by_offset(btf, m->name_off);
				if (name && *name && r->n < LISM_CORE_PATH_MAX)
					snprintf(r->member[r->n++], sizeof(r->member[0]), "%s", name);
				id = btf__resolve_type(btf, m->type);
			} else if (btf_is_array(t)) {
				id = btf__resolve_type(btf, btf_array(t)->type);
			} else {
				return 0;
			}
			if (id < 0)
				return 0;
			t = btf__type_by_id(btf, id);
		}
		return r->type[0] != '\0';
	case BPF_CORE_ENUMVAL_EXISTS:
	case BPF_CORE_ENUMVAL_VALUE:
		if (!is_enum(t) || acc[0] >= btf_vlen(t))
			return 0;
		r->kind = LISM_CORE_ENUMVAL;
		r->checked = rl->kind == BPF_CORE_ENUMVAL_EXISTS;
		snprintf(r->enumval, sizeof(r->enumval), "%s", enumerator(btf, t, acc[0]));
		return 1;
	default: /* the type itself: TYPE_ID_TARGET, TYPE_EXISTS, TYPE_SIZE, TYPE_MATCHES */
		r->kind = LISM_CORE_TYPE;
		r->checked = rl->kind == BPF_CORE_TYPE_EXISTS;
		return r->type[0] != '\0';
	}
}

static int same_ref(const struct lism_core_ref *a, const struct lism_core_ref *b)
{
	if (a->kind != b->kind || strcmp(a->type, b->type) || a->n != b->n || strcmp(a->enumval, b->enumval))
		return 0;
	for (int i = 0; i < a->n; i++)
		if (strcmp(a->member[i], b->member[i]))
			return 0;
	return 1;
}

/* Whether field reference @a is @b itself or under it: the same type, @b's members first. */
static int under(const struct lism_core_ref *a, const struct lism_core_ref *b)
{
	if (a->kind != LISM_CORE_FIELD || strcmp(a->type, b->type))
		return 0;
	if (b->kind == LISM_CORE_TYPE)
		return 1;
	if (b->kind != LISM_CORE_FIELD || b->n > a->n)
		return 0;
	for (int i = 0; i < b->n; i++)
		if (strcmp(a->member[i], b->member[i]))
			return 0;
	return 1;
}

/*
 * A field of a type, or under a field, that the object checks exists
 * before it reads (memcg->tcpmem, then tcpmem.usage) is read only where
 * that holds: dead code elsewhere, so optional like its guard.
 * (An approximation: lism's code only reads such fields under the guard.)
 */
static void inherit_checks(struct lism_core_ref *refs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < n && !refs[i].checked; k++)
			if (k != i && refs[k].checked && under(&refs[i], &refs[k]))
				refs[i].checked = 1;
}

int lism_core_refs(const void *elf, size_t size, struct lism_core_ref **out, size_t *n)
{
	const struct ext_header *h;
	struct lism_core_ref *refs = NULL;
	size_t cap = 0, cnt = 0;
	struct elf_view v;
	Elf_Data *bd, *ed;
	struct btf *btf = NULL;
	const char *p, *end;
	__u32 rec_size;
	int err = elf_open(&v, elf, size);

	*out = NULL;
	*n = 0;
	if (err)
		return err;
	bd = elf_section(&v, ".BTF");
	ed = elf_section(&v, ".BTF.ext");
	err = 0;
	if (!bd || !ed)
		goto out; /* no CO-RE at all */
	btf = btf__new(bd->d_buf, bd->d_size);
	if (!btf) {
		err = -errno;
		goto out;
	}
	h = ed->d_buf;
	if (ed->d_size < sizeof(*h) || h->magic != 0xeB9F || h->version != 1 || h->hdr_len < sizeof(*h)) {
		err = -EINVAL;
		goto out;
	}
	if (!h->core_relo_len)
		goto out;
	/* offsets checked as numbers before any pointer is made from them */
	if ((size_t)h->hdr_len + h->core_relo_off > ed->d_size ||
	    ed->d_size - ((size_t)h->hdr_len + h->core_relo_off) < h->core_relo_len || h->core_relo_len < 4) {
		err = -EINVAL;
		goto out;
	}
	p = (const char *)ed->d_buf + h->hdr_len + h->core_relo_off;
	end = p + h->core_relo_len;
	memcpy(&rec_size, p, 4);
	p += 4;
	if (rec_size < sizeof(struct bpf_core_relo)) {
		err = -EINVAL;
		goto out;
	}
	while (end - p >= 8) {
		__u32 sec[2];

		memcpy(sec, p, 8);
		p += 8;
		if ((size_t)(end - p) < (size_t)sec[1] * rec_size) {
			err = -EINVAL;
			goto out;
		}
		for (__u32 i = 0; i < sec[1]; i++, p += rec_size) {
			struct bpf_core_relo rl;
			struct lism_core_ref r;
			size_t k;

			memcpy(&rl, p, sizeof(rl));
			if (!relo_ref(btf, &rl, &r))
				continue;
			for (k = 0; k < cnt && !same_ref(&refs[k], &r); k++)
				;
			if (k < cnt) {
				refs[k].checked |= r.checked;
				continue;
			}
			if (cnt == cap) {
				struct lism_core_ref *bigger = realloc(refs, (cap ? 2 * cap : 32) * sizeof(*refs));

				if (!bigger) {
					err = -ENOMEM;
					goto out;
				}
				refs = bigger;
				cap = cap ? 2 * cap : 32;
			}
			refs[cnt++] = r;
		}
	}
out:
	btf__free(btf);
	elf_close(&v);
	if (err) {
		free(refs);
		return err;
	}
	inherit_checks(refs, cnt);
	*out = refs;
	*n = cnt;
	return 0;
}

void lism_core_ref_format(const struct lism_core_ref *r, char *buf, size_t len)
{
	size_t used;

	switch (r->kind) {
	case LISM_CORE_TYPE:
		snprintf(buf, len, "type %s", r->type);
		return;
	case LISM_CORE_ENUMVAL:
		snprintf(buf, len, "enum value %s", r->enumval);
		return;
	case LISM_CORE_FIELD:
		snprintf(buf, len, "%s", r->type);
		for (int i = 0; i < r->n; i++) {
			used = strlen(buf);
			snprintf(buf + used, len - used, ".%s", r->member[i]);
		}
		return;
	}
}

/* The member called @name of composite @id, looked for through anonymous members as CO-RE does. */
static int find_member(const struct btf *btf, int id, const char *name, int depth)
{
	const struct btf_type *t = btf__type_by_id(btf, id);
	const struct btf_member *m;

	if (!t || !btf_is_composite(t) || depth > 8)
		return -1;
	m = btf_members(t);
	for (int i = 0; i < btf_vlen(t); i++, m++) {
		const char *n = btf__name_by_offset(btf, m->name_off);
		int sub = btf__resolve_type(btf, m->type);

		if (n && !strcmp(n, name))
			return m->type;
		if ((!n || !*n) && sub >= 0) {
			int found = find_member(btf, sub, name, depth + 1);

			if (found >= 0)
				return found;
		}
	}
	return -1;
}

static int field_in(const struct btf *btf, const struct lism_core_ref *r)
{
	int id, kinds[] = { BTF_KIND_STRUCT, BTF_KIND_UNION };

	for (size_t k = 0; k < 2; k++) {
		id = btf__find_by_name_kind(btf, r->type, kinds[k]);
		if (id < 0)
			continue;
		for (int i = 0; i < r->n && id >= 0; i++) {
			const struct btf_type *t;

			id = btf__resolve_type(btf, id);
			t = id >= 0 ? btf__type_by_id(btf, id) : NULL;
			while (t && btf_is_array(t)) {
				id = btf__resolve_type(btf, btf_array(t)->type);
				t = id >= 0 ? btf__type_by_id(btf, id) : NULL;
			}
			id = t ? find_member(btf, id, r->member[i], 0) : -1;
		}
		if (id >= 0)
			return 1;
	}
	return 0;
}

static int enumval_in(const struct btf *btf, __u32 first, const struct lism_core_ref *r)
{
	__u32 cnt = btf__type_cnt(btf);

	for (__u32 id = first; id < cnt; id++) {
		const struct btf_type *t = btf__type_by_id(btf, id);
		char name[64];

		if (!is_enum(t))
			continue;
		base_name(btf__name_by_offset(btf, t->name_off), name, sizeof(name));
		if (r->type[0] && strcmp(name, r->type))
			continue;
		for (int i = 0; i < btf_vlen(t); i++)
			if (!strcmp(enumerator(btf, t, i), r->enumval))
				return 1;
	}
	return 0;
}

static int type_in(const struct btf *btf, __u32 first, const struct lism_core_ref *r)
{
	__u32 cnt = btf__type_cnt(btf);

	for (__u32 id = first; id < cnt; id++) {
		const struct btf_type *t = btf__type_by_id(btf, id);

		if (t->name_off && !strcmp(btf__name_by_offset(btf, t->name_off), r->type))
			return 1;
	}
	return 0;
}

int lism_core_ref_resolve(const struct lism_core_ref *r, struct btf *const *btfs, int nbtf)
{
	for (int i = 0; i < nbtf; i++) {
		/* a module's BTF is split on vmlinux's: scan only its own types */
		__u32 first = i ? btf__type_cnt(btfs[0]) : 1;
		int found = r->kind == LISM_CORE_FIELD ? field_in(btfs[i], r) :
			    r->kind == LISM_CORE_ENUMVAL ? enumval_in(btfs[i], first, r) : type_in(btfs[i], first, r);

		if (found)
			return 1;
	}
	return 0;
}

int lism_elf_kfuncs(const void *elf, size_t size, void (*cb)(const char *name, void *ctx), void *ctx)
{
	struct elf_view v;
	struct btf *btf = NULL;
	Elf_Data *bd;
	int err = elf_open(&v, elf, size), sec;

	if (err)
		return err;
	bd = elf_section(&v, ".BTF");
	btf = bd ? btf__new(bd->d_buf, bd->d_size) : NULL;
	sec = btf ? btf__find_by_name_kind(btf, ".ksyms", BTF_KIND_DATASEC) : -1;
	if (sec > 0) {
		const struct btf_type *t = btf__type_by_id(btf, sec);
		const struct btf_var_secinfo *vs = btf_var_secinfos(t);

		for (int i = 0; i < btf_vlen(t); i++, vs++) {
			const struct btf_type *f = btf__type_by_id(btf, vs->type);

			if (btf_is_func(f))
				cb(btf__name_by_offset(btf, f->name_off), ctx);
		}
	}
	btf__free(btf);
	elf_close(&v);
	return 0;
}
