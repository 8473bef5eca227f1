/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What a library call that failed says.  The library (load.h, unload.h)
 * returns -errno and prints nothing; it fills a struct lism_error with
 * what failed, the kernel's own lines when there are some (a verifier's
 * refusal), what to do next, and the class of the failure.  A command
 * prints it and exits with the class; the daemon keeps the message as its
 * reason for not running.  The first failure said is the one kept.
 */
#ifndef LISM_ERROR_H
#define LISM_ERROR_H

#include <stdio.h>

/* Exit codes, documented in docs/lism.8; also the class of a library failure. */
enum lism_exit {
	LISM_EXIT_OK = 0,
	LISM_EXIT_FAIL = 1,    /* the operation failed (kernel or BPF error) */
	LISM_EXIT_USAGE = 2,   /* invalid command line */
	LISM_EXIT_ENV = 3,     /* environment not ready: privileges, BTF, bpffs, cgroup2, kernel features */
	LISM_EXIT_STATE = 4,   /* already loaded / not loaded / foreign pins */
	LISM_EXIT_BUSY = 5,    /* unload timed out: connections still use the shortcut */
};

struct lism_error {
	enum lism_exit exit; /* LISM_EXIT_OK until a failure is said */
	char msg[512];       /* what failed, one line */
	char detail[4096];   /* lines that explain it ("  verifier: ..."), each ending in '\n' */
	char hint[512];      /* what to do next, or "" */
};

/*
 * Say that the call fails: class @exit, message @fmt, returns @err (a
 * negative errno, passed through for "return lism_fail(...)").  A message
 * already said stays: the first failure is the cause.
 */
int lism_fail(struct lism_error *e, enum lism_exit exit, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* What to do next, for the failure just said (the first hint stays too). */
void lism_fail_hint(struct lism_error *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A stream that appends to e->detail (fclose it before e is read); NULL if none can be opened. */
FILE *lism_fail_detail(struct lism_error *e);

/* "lism: <msg>", the detail, "  hint: <hint>" on stderr; returns e->exit (FAIL if none was said). */
int lism_error_print(const struct lism_error *e);

#endif
