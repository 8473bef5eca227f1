// SPDX-License-Identifier: GPL-2.0-only
/* lism load [--upgrade], lism mount-bpffs: the library calls of load.h, said. */
#include <stdio.h>
#include <string.h>

#include "ablate.h"
#include "bpf_time.h"
#include "commands.h"
#include "feature.h"
#include "lism/sender.h"
#include "load.h"

/* The @idx-th number (from 0) of a sysctl of this network namespace: 0, or -1 if unreadable. */
static int sysctl_field(const char *path, int idx, unsigned long *out)
{
	FILE *f = fopen(path, "r");
	int ret = -1;

	if (!f)
		return -1;
	for (int i = 0; i <= idx && fscanf(f, "%lu", out) == 1; i++)
		ret = i == idx ? 0 : -1;
	fclose(f);
	return ret;
}

/*
 * An unsent-bytes limit, or a cap on TCP's send buffers, below what the
 * data path needs keeps every member of its namespace off it
 * (include/lism/sender.h): say so at load, for this namespace (pods have
 * their own).
 */
static void note_send_limits(void)
{
	static const struct {
		const char *path, *name, *own;
		int idx;
	} limits[] = {
		{ "/proc/sys/net/ipv4/tcp_notsent_lowat", "net.ipv4.tcp_notsent_lowat", "TCP_NOTSENT_LOWAT", 0 },
		{ "/proc/sys/net/ipv4/tcp_wmem", "the net.ipv4.tcp_wmem maximum", "SO_SNDBUF", 2 },
	};
	const unsigned long least = LISM_SENDER_MIN_SEND_LIMIT;
	unsigned long v;

	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++)
		if (!sysctl_field(limits[i].path, limits[i].idx, &v) && v < least)
			printf("lism: note: %s is %lu here (below %lu): the sends of sockets in this network "
			       "namespace that set no %s of their own stay on TCP (docs/semantics.md, \"Sends "
			       "that stay on TCP by policy\")\n",
			       limits[i].name, v, least, limits[i].own);
}

/* One line per feature that does not run (status shows them too), and what else came up. */
static void say_features(const struct lism_load_info *info)
{
	char line[1024];

	if (info->scope_full)
		fprintf(stderr, "lism: warning: the scope map is full: some of this node's routes stay out of scope\n");
	if (info->features_unrecorded)
		fprintf(stderr, "lism: warning: recording which features run failed: status will not say\n");
	for (int f = 0; f < LISM_F_MAX; f++)
		if (!lism_feature_enabled(&info->features[f])) {
			lism_feature_off_line(f, &info->features[f], line, sizeof(line));
			printf("lism: note: %s\n", line);
		}
	if (info->ablated) {
		char names[128];

		lism_ablate_format(info->ablated, names, sizeof(names));
		printf("lism: note: LISM_ABLATE: switched off for a bench: %s\n", names);
	}
	fflush(stdout);
}

/* What a load or an upgrade did on its way, whether it succeeded or not. */
void lism_say_aside(const struct lism_load_info *info, const char *what)
{
	if (info->mounted_bpffs)
		printf("lism: mounted bpffs at /sys/fs/bpf\n");
	if (info->stop_signal)
		fprintf(stderr, "lism: %s arrived during the %s, which finished first\n",
			strsignal(info->stop_signal), what);
	fflush(stdout);
}

void lism_say_loaded(const char *pin_path, const struct lism_load_cfg *cfg, const struct lism_load_info *info)
{
	printf("lism: loaded at %s, attached to cgroup %s (%u DMBs of %u KiB, %d scope entries)\n", pin_path,
	       info->cgroup, cfg->max_dmbs, cfg->dmb_size >> 10, info->scope_entries);
	say_features(info);
	note_send_limits();
	lism_bpf_stats_note(stdout, lism_bpf_stats_sysctl());
}

void lism_say_upgraded(const char *pin_path, const struct lism_load_info *info)
{
	printf("lism: upgraded the programs at %s (state, settings and connections kept)\n", pin_path);
	say_features(info);
}

int lism_cmd_load(const struct lism_common_opts *co, const struct lism_load_opts *o)
{
	struct lism_load_info info = { 0 };
	struct lism_error e = { 0 };
	int err, mounted = 0;

	/* an upgrade needs no cgroup, so only --mount-bpffs asks for the mount */
	if (o->upgrade && o->cfg.mount_bpffs && lism_mount_bpffs(co->pin_path, &mounted, &e))
		return lism_error_print(&e);
	if (mounted)
		printf("lism: mounted bpffs at /sys/fs/bpf\n");
	err = o->upgrade ? lism_upgrade(co->pin_path, &info, &e) : lism_load(co->pin_path, &o->cfg, &info, &e);
	lism_say_aside(&info, o->upgrade ? "upgrade" : "load");
	if (err)
		return lism_error_print(&e);
	if (o->upgrade)
		lism_say_upgraded(co->pin_path, &info);
	else
		lism_say_loaded(co->pin_path, &o->cfg, &info);
	return LISM_EXIT_OK;
}

int lism_cmd_mount_bpffs(const struct lism_common_opts *co, const struct lism_mount_opts *o)
{
	struct lism_error e = { 0 };
	int mounted;

	if (!lism_mount_bpffs(co->pin_path, &mounted, &e)) {
		if (mounted)
			printf("lism: mounted bpffs at /sys/fs/bpf\n");
		return LISM_EXIT_OK;
	}
	lism_error_print(&e);
	if (!o->soft)
		return e.exit;
	/* an init container: the pod goes on, and lism run says why it cannot load */
	printf("lism: bpffs is not mounted; continuing (--soft): lism run will say so and retry\n");
	return LISM_EXIT_OK;
}
