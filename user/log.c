// SPDX-License-Identifier: GPL-2.0-only
#include <bpf/libbpf.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

static int log_verbose;
static int log_quiet;
static FILE *log_capture;

void lism_err(const char *fmt, ...)
{
	va_list ap;

	fputs("lism: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void lism_hint(const char *fmt, ...)
{
	va_list ap;

	fputs("  hint: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (log_capture && level != LIBBPF_DEBUG) {
		va_list copy;

		va_copy(copy, ap);
		vfprintf(log_capture, fmt, copy);
		va_end(copy);
		return log_verbose ? vfprintf(stderr, fmt, ap) : 0;
	}
	if (level == LIBBPF_DEBUG && !log_verbose)
		return 0;
	if (level == LIBBPF_INFO && !log_verbose)
		return 0;
	if (log_quiet && !log_verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

void lism_log_setup(int verbose)
{
	log_verbose = verbose;
	libbpf_set_print(libbpf_log);
}

void lism_log_quiet(int on)
{
	log_quiet = on;
}

int lism_log_verbose(void)
{
	return log_verbose;
}

void lism_log_capture(FILE *f)
{
	log_capture = f;
}
