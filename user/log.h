/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef LISM_LOG_H
#define LISM_LOG_H

#include <stdio.h>

/* "lism: <message>" on stderr. */
void lism_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "  hint: <message>" on stderr, after an error: what to do next. */
void lism_hint(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* libbpf messages: warnings always, everything with -v. */
void lism_log_setup(int verbose);
/*
 * Hide libbpf's warnings (unless verbose) around calls whose failures are
 * expected and handled, e.g. the probe's trial maps; the caller reports
 * the outcome itself.
 */
void lism_log_quiet(int on);
int lism_log_verbose(void);
/*
 * Send libbpf's warnings and notes to @f instead of the terminal (NULL:
 * back to the terminal); with -v they still reach the terminal too.  The
 * loader keeps a verifier's refusal this way and says it in a few lines
 * (load_log.h).
 */
void lism_log_capture(FILE *f);

#endif
