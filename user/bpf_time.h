/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What lism's BPF programs cost, as the kernel counts it: run count and run
 * time per program (bpf_prog_info), kept only while BPF stats are on
 * (kernel.bpf_stats_enabled, or a BPF_ENABLE_STATS fd that bpftool prog
 * profile or bpftop holds).  Stats themselves cost every BPF program run on
 * the host two clock reads (docs/performance.md, "What bpf_stats costs"),
 * so lism never turns them on; it shows what they measured and says when
 * they are on.
 */
#ifndef LISM_BPF_TIME_H
#define LISM_BPF_TIME_H

#include <bpf/bpf.h>
#include <stddef.h>
#include <stdio.h>

/* The programs that run on their own (the loader's one-shot tc programs and the iterator do not). */
enum lism_prog {
	LISM_PROG_HANDSHAKE, /* sockops: every callback of every TCP socket under the cgroup */
	LISM_PROG_DATA_PATH, /* sk_msg: every send of a sender */
	LISM_PROG_BACKSTOP,  /* tp_btf/tcp_destroy_sock: every TCP socket destroyed on the host */
	LISM_PROG_MAX,
};

struct lism_prog_time {
	int known; /* its pin was readable */
	__u64 runs;
	__u64 run_ns;
};

struct lism_bpf_time {
	int stats_sysctl; /* kernel.bpf_stats_enabled: 1, 0, or -1 when unreadable */
	struct lism_prog_time prog[LISM_PROG_MAX];
};

#define LISM_BPF_STATS_SYSCTL "/proc/sys/kernel/bpf_stats_enabled"

/* "handshake", "data_path", "backstop": metric labels and JSON keys. */
const char *lism_prog_name(enum lism_prog p);

/* bpf_prog_info of the program pinned as @name under @pin_path; -errno if it cannot be read. */
int lism_prog_info_read(const char *pin_path, const char *name, struct bpf_prog_info *info);

/* The sysctl's value (0 or 1), or -1 when it cannot be read. */
int lism_bpf_stats_sysctl(void);

/* Every program's counts (known = 0 for a pin that cannot be read) and the sysctl. */
void lism_bpf_time_read(const char *pin_path, struct lism_bpf_time *t);

/* The status line's text after "BPF time": what was measured, and whether stats are on. */
void lism_bpf_time_format(const struct lism_bpf_time *t, char *out, size_t len);

/* The load-time note when the sysctl is on; nothing otherwise. */
void lism_bpf_stats_note(FILE *f, int stats_sysctl);

#endif
