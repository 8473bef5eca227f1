/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Fixed-width types for headers shared by BPF programs and userspace. */
#ifndef LISM_TYPES_H
#define LISM_TYPES_H

#ifdef __bpf__
/* BPF side: vmlinux.h (included first by every .bpf.c) provides __u8..__u64. */
#else
#include <linux/types.h>
#endif

#endif
