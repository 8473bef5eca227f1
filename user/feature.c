// SPDX-License-Identifier: GPL-2.0-only
#include <bpf/bpf.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "feature.h"
#include "log.h"
#include "pins.h"

static const struct lism_feature_info table[LISM_F_MAX] = {
	[LISM_F_HANDSHAKE] = {
		.name = "handshake",
		.title = "the handshake",
		.core = 1,
		.programs = "lism_sockops",
		.without = "nothing pairs: lism does not load",
	},
	[LISM_F_DATA_PATH] = {
		.name = "data_path",
		.title = "the data path",
		.programs = "lism_msg, lism_sender_start",
		.without = "pairs are confirmed and their bytes stay on TCP (reason no-data-path); the "
			   "handshake, the DMB table and the views work",
	},
	[LISM_F_CONNS] = {
		.name = "conns",
		.title = "the conns iterator",
		.programs = "lism_iter_socks",
		.needed_by = "lism conns",
		.without = "'lism conns' cannot list connections; pairing, the data path, status, stats, "
			   "events and /metrics work",
	},
	[LISM_F_BACKSTOP] = {
		.name = "backstop",
		.title = "the tcp_destroy_sock backstop",
		.programs = "lism_destroy",
		.without = "a DMB whose close went unseen waits for the sweep; everything else works",
	},
	[LISM_F_SWEEP] = {
		.name = "sweep",
		.title = "the sweep",
		.programs = "lism_sweep_start",
		.without = "a DMB of a socket freed unseen by both the close and the backstop stays in use "
			   "until unload; everything else works",
	},
	[LISM_F_SEND_SIZES] = {
		.name = "send_sizes",
		.title = "send-size measuring",
		.programs = "",
		.without = "a one-way bulk writer's sends stay on TCP (request/response connections still "
			   "join the data path)",
	},
	[LISM_F_BPF_STATS] = {
		.name = "bpf_stats",
		.title = "BPF run-time stats",
		.programs = "",
		.without = "status and /metrics show no BPF run time; everything else works",
	},
	[LISM_F_EXEC] = {
		.name = "exec",
		.title = "lism exec's socket options",
		.programs = "lism_exec_set, lism_exec_get",
		.needed_by = "lism exec",
		.without = "processes under 'lism exec' find no lism and use the sk_msg path or TCP; "
			   "everything else works",
	},
};

static const char *const causes[] = {
	[LISM_FC_NONE] = "none",
	[LISM_FC_KERNEL] = "kernel",
	[LISM_FC_VERIFIER] = "verifier",
	[LISM_FC_ATTACH] = "attach",
};

const struct lism_feature_info *lism_feature_info(enum lism_feature f)
{
	return (unsigned int)f < LISM_F_MAX ? &table[f] : NULL;
}

int lism_feature_by_name(const char *name)
{
	for (int f = 0; f < LISM_F_MAX; f++)
		if (!strcmp(table[f].name, name))
			return f;
	return -1;
}

void lism_feature_on(struct lism_feature_state *st)
{
	memset(st, 0, sizeof(*st));
	st->status = LISM_FS_ON;
}

void lism_feature_off(struct lism_feature_state *st, enum lism_feature_cause cause, const char *fmt, ...)
{
	va_list ap;

	memset(st, 0, sizeof(*st));
	st->status = LISM_FS_OFF;
	st->cause = cause;
	va_start(ap, fmt);
	vsnprintf(st->why, sizeof(st->why), fmt, ap);
	va_end(ap);
}

int lism_feature_enabled(const struct lism_feature_state *st)
{
	return st->status == LISM_FS_ON;
}

int lism_features_read(const char *pin_path, struct lism_feature_state st[LISM_F_MAX])
{
	int fd = lism_pin_open(pin_path, "features"), err = 0;

	memset(st, 0, sizeof(*st) * LISM_F_MAX);
	if (fd < 0)
		return fd;
	for (__u32 f = 0; f < LISM_F_MAX && !err; f++)
		if (bpf_map_lookup_elem(fd, &f, &st[f]))
			err = -errno;
	close(fd);
	return err;
}

int lism_features_write(const char *pin_path, const struct lism_feature_state st[LISM_F_MAX])
{
	int fd = lism_pin_open(pin_path, "features"), err = 0;

	if (fd < 0)
		return fd;
	for (__u32 f = 0; f < LISM_F_MAX && !err; f++)
		if (bpf_map_update_elem(fd, &f, &st[f], BPF_ANY))
			err = -errno;
	close(fd);
	return err;
}

void lism_feature_off_line(enum lism_feature f, const struct lism_feature_state *st, char *buf,
			   size_t len)
{
	const struct lism_feature_info *fi = lism_feature_info(f);

	snprintf(buf, len, "%s (%s) is off: %s; %s", fi->title, fi->name,
		 st->status == LISM_FS_UNKNOWN ? "not recorded by the load" : st->why, fi->without);
}

struct json_object *lism_features_json(const struct lism_feature_state st[LISM_F_MAX])
{
	struct json_object *o = json_object_new_object();

	for (int f = 0; f < LISM_F_MAX; f++) {
		struct json_object *one = json_object_new_object();
		unsigned int cause = st[f].cause < sizeof(causes) / sizeof(causes[0]) ? st[f].cause : 0;

		json_object_object_add(one, "enabled", json_object_new_boolean(lism_feature_enabled(&st[f])));
		json_object_object_add(one, "core", json_object_new_boolean(table[f].core));
		if (!lism_feature_enabled(&st[f])) {
			json_object_object_add(one, "cause", json_object_new_string(causes[cause]));
			json_object_object_add(one, "reason",
					       json_object_new_string(st[f].status == LISM_FS_UNKNOWN ?
								      "not recorded by the load" : st[f].why));
			json_object_object_add(one, "without", json_object_new_string(table[f].without));
		}
		json_object_object_add(o, table[f].name, one);
	}
	return o;
}

void lism_features_metrics(FILE *f, const struct lism_feature_state st[LISM_F_MAX])
{
	fprintf(f, "# HELP lism_feature_enabled 1 if this part of lism runs on this instance; "
		   "0 if it could not here (lism status says why).\n"
		   "# TYPE lism_feature_enabled gauge\n");
	for (int i = 0; i < LISM_F_MAX; i++)
		fprintf(f, "lism_feature_enabled{feature=\"%s\",core=\"%d\"} %d\n", table[i].name, table[i].core,
			lism_feature_enabled(&st[i]));
}

int lism_feature_require(const char *pin_path, enum lism_feature f)
{
	struct lism_feature_state st[LISM_F_MAX];
	const struct lism_feature_info *fi = lism_feature_info(f);
	int err = lism_features_read(pin_path, st);

	if (err) {
		lism_err("reading which features run at %s failed: %s", pin_path, strerror(-err));
		return LISM_EXIT_FAIL;
	}
	if (lism_feature_enabled(&st[f]))
		return LISM_EXIT_OK;
	lism_err("%s needs %s (%s), which is off on this instance: %s", fi->needed_by, fi->title, fi->name,
		 st[f].status == LISM_FS_UNKNOWN ? "not recorded by the load" : st[f].why);
	lism_hint("without it %s", fi->without);
	lism_hint("'lism probe' shows what this kernel offers; reload lism where it can run %s", fi->programs);
	return LISM_EXIT_ENV;
}

int lism_test_reject(enum lism_feature f)
{
	const char *list = getenv("LISM_TEST_REJECT");
	const char *name = lism_feature_info(f)->name;
	size_t n = strlen(name);

	for (const char *p = list; p && *p;) {
		size_t len = strcspn(p, ",");

		if (len == n && !strncmp(p, name, n))
			return 1;
		p += len;
		p += *p == ',';
	}
	return 0;
}
