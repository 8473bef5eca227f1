/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * lism's BPF objects as built into this binary: the core (handshake and
 * data path, one object) and one object per optional feature, so a kernel
 * that refuses one loads the others.  Here: their bytes, and the generic
 * steps every optional object takes -- open, point its maps at the core's
 * pins, set its read-only flags.
 */
#ifndef LISM_OBJECTS_H
#define LISM_OBJECTS_H

#include <linux/types.h>
#include <stddef.h>

#include "lism/feature.h"

struct bpf_object;

struct lism_object {
	const char *name;                 /* "core", "views", ... */
	const void *(*elf)(size_t *size); /* the skeleton's ELF bytes */
	int own_maps;                     /* it creates its maps (the others reuse the core's pins) */
};
extern const struct lism_object lism_objects[];
extern const size_t lism_n_objects;

/* The ELF bytes of the core (its skeleton lives in load.c). */
const void *lism_core_elf(size_t *size);

/* The object called @name, or NULL. */
const struct lism_object *lism_object_find(const char *name);

/* The feature that program @prog belongs to (feature.h's table), or -1. */
int lism_feature_of_program(const char *prog);

/*
 * bpf_object__open_mem() of @o over the instance at @pin_path: each map is
 * the pin of its name there (LIBBPF_PIN_BY_NAME; created at load if
 * missing).  @pin_path NULL: maps of its own, pinned nowhere (the probe).
 * NULL and errno on failure.
 */
struct bpf_object *lism_object_open(const struct lism_object *o, const char *pin_path);

/*
 * Before load: the maps indexed by DMB slot get @entries (--max-dmbs at
 * load, the instance's capacity after), so that they match the pins, and
 * the programs the LISM_ABLATE_* bits of @ablate (lism/ablate.h).  0 or -errno.
 */
int lism_object_configure(struct bpf_object *obj, __u32 entries, __u32 ablate);

/* Before load: the read-only global @var of @obj (a const volatile) gets @size bytes of @val. */
int lism_object_set_rodata(struct bpf_object *obj, const char *var, const void *val, size_t size);

/* Run a never-attached tc program once (BPF_PROG_RUN): 0 and its return value, or -errno. */
int lism_prog_run_once(int prog_fd, __u32 *retval);

#endif
