/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef LISM_USER_REASON_H
#define LISM_USER_REASON_H

#include "lism/reason.h"

const char *lism_reason_name(unsigned int code);
const char *lism_reason_text(unsigned int code);
/* Whether @code names a reason (0 for a retired code or one past the table). */
int lism_reason_known(unsigned int code);
/* Code of a reason name, or -1. */
int lism_reason_code(const char *name);

#endif
