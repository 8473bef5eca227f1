/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The kernel probe: every kernel feature lism uses, whether this kernel has
 * it, and which lism feature (feature.h) each one enables.  What lism uses
 * comes from its own BPF objects where it can -- program and map types,
 * iterators, tracepoints, kfuncs, and the struct fields read through CO-RE
 * (core_fields.h) -- and from one table where it cannot: the helpers each
 * program type calls (a unit test holds the table to the objects), the
 * sockops callback, the bpf_stats sysctl.  `lism probe` prints it; `lism
 * load` decides from it which features to try.
 */
#ifndef LISM_PROBE_H
#define LISM_PROBE_H

#include <linux/types.h>
#include <stddef.h>

#include "core_fields.h"
#include "lism/feature.h"

enum lism_kreq_kind {
	LISM_KR_BTF,        /* the kernel's BTF */
	LISM_KR_PROG,       /* a program type */
	LISM_KR_ATTACH,     /* an attach type */
	LISM_KR_MAP,        /* a map type */
	LISM_KR_HELPER,     /* a helper, for one program type */
	LISM_KR_KFUNC,      /* a kfunc (vmlinux or module BTF) */
	LISM_KR_ITER,       /* a BPF iterator target */
	LISM_KR_TRACEPOINT, /* a BTF-typed tracepoint */
	LISM_KR_CORE,       /* a struct field, type or enum value (CO-RE) */
	LISM_KR_SYSCTL,     /* a file under /proc/sys */
	LISM_KR_MAX
};

struct lism_kreq {
	enum lism_kreq_kind kind;
	__u32 type;       /* PROG, MAP, ATTACH: its type; HELPER: the program type that calls it */
	__u32 id;         /* HELPER: its id */
	char name[160];   /* what it is, for a person */
	const char *note; /* why it matters, or NULL */
	int checked;      /* the code reads it only where it exists: never counts as missing */
	__u32 features;   /* 1 << LISM_F_* of every feature that uses it */
	int have;         /* 1 here, 0 missing, -1 not probed (needs root) */
	struct lism_core_ref core; /* CORE: what is read */
};

struct lism_probe {
	struct lism_kreq *req;
	size_t n, cap;
	char kernel[512]; /* uname -rv */
	int root;         /* the probes that load programs ran */
	__u32 missing;    /* 1 << LISM_F_* of every feature with a requirement missing */
};

/* Probe this kernel for everything lism uses.  0 or -errno (out of memory). */
int lism_probe_run(struct lism_probe *p);
void lism_probe_free(struct lism_probe *p);

/*
 * What @f needs that this kernel lacks, comma-separated into @buf; the
 * number of missing requirements (0: all there, as far as probed).
 */
int lism_probe_missing(const struct lism_probe *p, enum lism_feature f, char *buf, size_t len);

/* The helpers lism's programs call, per program type (the part no object tells). */
struct lism_helper_req {
	__u32 prog_type;
	__u32 helper;
	const char *name;
	enum lism_feature feature;
};
extern const struct lism_helper_req lism_helper_reqs[];
extern const size_t lism_n_helper_reqs;

#endif
