// SPDX-License-Identifier: GPL-2.0-only
#include <stdarg.h>
#include <string.h>

#include "error.h"

int lism_fail(struct lism_error *e, enum lism_exit exit, int err, const char *fmt, ...)
{
	va_list ap;

	if (e->exit != LISM_EXIT_OK)
		return err;
	e->exit = exit;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return err;
}

void lism_fail_hint(struct lism_error *e, const char *fmt, ...)
{
	va_list ap;

	if (e->hint[0])
		return;
	va_start(ap, fmt);
	vsnprintf(e->hint, sizeof(e->hint), fmt, ap);
	va_end(ap);
}

FILE *lism_fail_detail(struct lism_error *e)
{
	size_t used = strlen(e->detail);

	return fmemopen(e->detail + used, sizeof(e->detail) - used, "w");
}

int lism_error_print(const struct lism_error *e)
{
	fprintf(stderr, "lism: %s\n", e->msg[0] ? e->msg : "failed (no reason was given)");
	fputs(e->detail, stderr);
	if (e->hint[0])
		fprintf(stderr, "  hint: %s\n", e->hint);
	return e->exit != LISM_EXIT_OK ? e->exit : LISM_EXIT_FAIL;
}
