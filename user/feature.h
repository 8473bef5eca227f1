/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The feature table: every part of lism, whether it is core (the load
 * fails without it) or optional (lism loads without it and says so), which
 * programs it is made of, and what still works when it is off.  The
 * loader's verdicts live in the pinned "features" map
 * (include/lism/feature.h); this file names, reads, writes and explains
 * them.  docs/architecture.md ("Core and optional") says why each part is
 * what it is.
 */
#ifndef LISM_FEATURE_TABLE_H
#define LISM_FEATURE_TABLE_H

#include <stddef.h>
#include <stdio.h>

#include "lism/feature.h"

struct json_object;

struct lism_feature_info {
	const char *name;     /* metric label and JSON key: "conns" */
	const char *title;    /* for a person: "the conns iterator" */
	int core;             /* 1: lism does not load without it */
	const char *programs; /* its BPF programs ("" when it has none) */
	const char *needed_by; /* the command that cannot work without it, or NULL */
	const char *without;  /* what happens when it is off, and what still works */
};

const struct lism_feature_info *lism_feature_info(enum lism_feature f);
/* enum lism_feature of @name, or -1. */
int lism_feature_by_name(const char *name);

/* Record @f as on, or off for @cause with a printf-style reason. */
void lism_feature_on(struct lism_feature_state *st);
void lism_feature_off(struct lism_feature_state *st, enum lism_feature_cause cause, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int lism_feature_enabled(const struct lism_feature_state *st);

/* The pinned "features" map of the instance at @pin_path: read all (unknown when absent), write all. */
int lism_features_read(const char *pin_path, struct lism_feature_state st[LISM_F_MAX]);
int lism_features_write(const char *pin_path, const struct lism_feature_state st[LISM_F_MAX]);

/*
 * One line, no newline, for a feature that is off: "conns is off: <why>;
 * <without>".  What `load` prints and `status` shows.
 */
void lism_feature_off_line(enum lism_feature f, const struct lism_feature_state *st, char *buf,
			   size_t len);

/* {"<name>": {"enabled", "core", "cause", "reason"}, ...} for status -j and probe -j. */
struct json_object *lism_features_json(const struct lism_feature_state st[LISM_F_MAX]);
/* lism_feature_enabled{feature="..."} 0/1 for /metrics. */
void lism_features_metrics(FILE *f, const struct lism_feature_state st[LISM_F_MAX]);

/*
 * For a command that needs @f (lism conns needs conns): LISM_EXIT_OK if it
 * runs on the instance at @pin_path; else says which feature, why it is
 * off and what still works, and returns the exit code.
 */
int lism_feature_require(const char *pin_path, enum lism_feature f);

/*
 * Tests only: LISM_TEST_REJECT=conns,backstop,... makes the loader set those
 * features' programs up to be refused by the verifier (bpf/reject.bpf.h).
 */
int lism_test_reject(enum lism_feature f);

#endif
