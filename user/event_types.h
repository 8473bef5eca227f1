/* SPDX-License-Identifier: GPL-2.0-only */
/* Lifecycle event types by name, and sets of them (lism events --type, lism run --log-events). */
#ifndef LISM_EVENT_TYPES_H
#define LISM_EVENT_TYPES_H

#include <stddef.h>

#include "lism/abi.h"

/* Their names, in type order, for messages */
#define LISM_EV_NAMES "confirm, fallback, close, limit, abort, reaped"

/* "confirm", "fallback", ...; "?" for anything else. */
const char *lism_event_name(unsigned int type);
/* "all", "none", or names joined by commas ("limit,reaped") into a LISM_EV_TYPE() mask; 0 or -EINVAL. */
int lism_event_types_parse(const char *s, __u32 *mask);
/* The other way: "all", "none" or "limit,reaped". */
void lism_event_types_format(__u32 mask, char *buf, size_t len);

#endif
