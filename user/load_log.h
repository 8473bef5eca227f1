/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A refused BPF program, said in a few lines.  While an object loads,
 * libbpf's output is kept (log.h's capture) instead of printed; when a
 * program is refused, the report names it, quotes the verifier's last two
 * lines and the kernel release, and saves the whole log to a file whose
 * path it gives.  With -v the whole log reaches the terminal as well.
 * Never a hundred lines by default.
 */
#ifndef LISM_LOAD_LOG_H
#define LISM_LOAD_LOG_H

#include <limits.h>
#include <stddef.h>
#include <stdio.h>

struct lism_load_log {
	FILE *f;
	char *text;
	size_t len;
};

/* Keep libbpf's output from now on; stop keeping it (text is then NUL-terminated). */
int lism_load_log_begin(struct lism_load_log *l);
void lism_load_log_end(struct lism_load_log *l);
void lism_load_log_free(struct lism_load_log *l);

#define LISM_REFUSAL_LINE 256

struct lism_refusal {
	char prog[64];                     /* the program libbpf failed to load, "" if none was named */
	int verifier;                      /* 1: the verifier refused it (its log is there) */
	int n;                             /* lines in line[] */
	char line[2][LISM_REFUSAL_LINE];   /* the log's last two lines, oldest first */
	char path[PATH_MAX];               /* where the whole log was saved, "" if it could not be */
};

/*
 * What libbpf's output @text says failed: the program's name and its
 * verifier log's last two lines (without the "processed N insns" summary),
 * or libbpf's own last two lines when no verifier log is there.  Pure: the
 * unit tests feed it logs.
 */
void lism_refusal_parse(const char *text, struct lism_refusal *r);

/*
 * Save @text as ${TMPDIR:-/tmp}/lism-load-@prog.log ("object" when no
 * program is named), over the last log of that program: written to a new
 * file, then renamed, so a load that fails at every restart keeps one log
 * per program and a planted symlink is replaced, never followed.
 * 0 and the path, or -errno (and "").
 */
int lism_load_log_save(const char *text, const char *prog, char *path, size_t len);

/* Parse and save @l into @r (path "" if it could not be saved). */
void lism_load_log_refusal(const struct lism_load_log *l, struct lism_refusal *r);

/* "6.18.44-fc-v973 #1 SMP PREEMPT_DYNAMIC ..." (uname -rv) */
void lism_kernel_release(char *buf, size_t len);

/*
 * Print the report of a refusal of @what (e.g. "lism_sockops, a core
 * program (the handshake)"): the program's lines, the kernel, the log.
 * Caller prints the verdict line before and the hint after.
 */
void lism_refusal_print(FILE *f, const struct lism_refusal *r);

/* One line for status and the features map: "the verifier refused lism_iter_socks: <last line>" */
void lism_refusal_summary(const struct lism_refusal *r, char *buf, size_t len);

#endif
