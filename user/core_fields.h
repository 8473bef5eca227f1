/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What a BPF object reads of the kernel's structs through CO-RE, taken from
 * the object itself (its .BTF.ext relocations), and whether a kernel's BTF
 * has each of them.  So `lism probe` lists every struct field, type and enum
 * value lism's programs read, and cannot drift from the code.  A field the
 * object also asks about (bpf_core_field_exists) is "checked": the code
 * reads it only where it exists.
 */
#ifndef LISM_CORE_FIELDS_H
#define LISM_CORE_FIELDS_H

#include <stddef.h>

struct btf;

#define LISM_CORE_PATH_MAX 8

enum lism_core_ref_kind {
	LISM_CORE_FIELD,   /* type.member.member... */
	LISM_CORE_TYPE,    /* a type by name */
	LISM_CORE_ENUMVAL, /* an enumerator by name */
};

struct lism_core_ref {
	enum lism_core_ref_kind kind;
	int checked;                  /* the object asks whether it exists before it reads it */
	char type[64];                /* "sock" (flavour suffix "___x" dropped); "" for an anonymous enum */
	int n;                        /* members (FIELD) */
	char member[LISM_CORE_PATH_MAX][64];
	char enumval[64];             /* ENUMVAL */
};

/*
 * Every CO-RE reference of the ELF object @elf (as bytes), deduplicated,
 * into a malloc'ed array.  0 and *@n, or -errno.
 */
int lism_core_refs(const void *elf, size_t size, struct lism_core_ref **out, size_t *n);

/* "sock.__sk_common.skc_cookie.counter", "type tcp_sock", "enum value X" */
void lism_core_ref_format(const struct lism_core_ref *r, char *buf, size_t len);

/* Whether any of @btfs (vmlinux first, then modules) has @r: 1 or 0. */
int lism_core_ref_resolve(const struct lism_core_ref *r, struct btf *const *btfs, int nbtf);

/*
 * The helper ids an ELF object calls, per section (@cb gets the section
 * name and the helper id; kfunc calls are not helpers and are skipped).
 * 0 or -errno.
 */
int lism_elf_helper_calls(const void *elf, size_t size,
			  void (*cb)(const char *section, unsigned int helper, void *ctx), void *ctx);

/* The kfuncs an ELF object declares (its .ksyms section's functions), one @cb each.  0 or -errno. */
int lism_elf_kfuncs(const void *elf, size_t size, void (*cb)(const char *name, void *ctx), void *ctx);

#endif
