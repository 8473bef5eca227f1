/* SPDX-License-Identifier: GPL-2.0-only */
/* Prometheus text exposition (format 0.0.4) of a device snapshot. */
#ifndef LISM_METRICS_H
#define LISM_METRICS_H

#include <stdio.h>

#include "device.h"

/* Every series, zeros included, so dashboards see them from the first scrape. */
void lism_metrics_write(FILE *f, const struct lism_snapshot *s, const char *version);

#endif
