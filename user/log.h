/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef LISM_LOG_H
#define LISM_LOG_H

/* "lism: <message>" on stderr. */
void lism_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "  hint: <message>" on stderr, after an error: what to do next. */
void lism_hint(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* libbpf messages: warnings always, everything with -v. */
void lism_log_setup(int verbose);
/*
 * Hide libbpf's warnings (unless verbose) around calls whose failures are
 * expected and handled, e.g. libxdp's feature probes; the caller reports
 * the outcome itself.
 */
void lism_log_quiet(int on);
int lism_log_verbose(void);

#endif
