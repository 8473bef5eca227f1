/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef LISM_STATUS_H
#define LISM_STATUS_H

#include <json-c/json.h>
#include <stdio.h>

#include "cli.h"
#include "device.h"

/* The device line and its counters, like `smcd device`. */
void lism_status_print(FILE *f, const char *pin_path, const struct lism_snapshot *s);
/* The same as a JSON object (caller owns it). */
struct json_object *lism_status_json(const char *pin_path, const struct lism_snapshot *s);

#endif
