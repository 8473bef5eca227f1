// SPDX-License-Identifier: GPL-2.0-only
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device.h"
#include "lism/abi.h"
#include "log.h"
#include "pins.h"
#include "scope.h"
#include "settings.h"

const char *const lism_settings_names[] = { "max_dmbs", "dmb_size", "allow_blocking", "cgroup",
					    "ports", "scope" };
const size_t lism_n_settings_names = sizeof(lism_settings_names) / sizeof(lism_settings_names[0]);

static void add_name(char *buf, size_t len, const char *name)
{
	size_t n = strlen(buf);

	snprintf(buf + n, len - n, "%s%s", n ? "," : "", name);
}

static const char *onoff(int v)
{
	return v ? "on" : "off";
}

/* One device flag the adopting daemon sets as configured; says a change. */
static void apply_flag(struct lism_device *d, __u32 flag, int want, const char *what)
{
	if (!!(d->flags & flag) == !!want)
		return;
	printf("lism: adopted instance: %s %s -> %s\n", what, onoff(!want), onoff(want));
	d->flags = want ? d->flags | flag : d->flags & ~flag;
}

static int reconcile_device(const struct lism_load_cfg *o, const struct lism_instance *in, char *na, size_t len)
{
	struct lism_device d;
	int err = lism_device_read(in, &d);

	if (err)
		return err;
	if (o->max_dmbs != d.max_dmbs) {
		if (o->max_dmbs <= d.capacity) {
			printf("lism: adopted instance: max-dmbs %u -> %u\n", d.max_dmbs, o->max_dmbs);
			d.max_dmbs = o->max_dmbs;
		} else {
			printf("lism: adopted instance: max-dmbs %u not applied: its DMB table has %u entries "
			       "(fixed at load); it keeps %u\n", o->max_dmbs, d.capacity, d.max_dmbs);
			add_name(na, len, "max_dmbs");
		}
	}
	if (o->dmb_size != d.dmb_size) {
		/* each confirmed end's unread budget: changed under live connections it would not add up */
		printf("lism: adopted instance: dmb-size %u not applied (fixed at load); it keeps %u\n",
		       o->dmb_size, d.dmb_size);
		add_name(na, len, "dmb_size");
	}
	if (!!o->allow_blocking != !!(d.flags & LISM_DEV_F_ALLOW_BLOCKING)) {
		printf("lism: adopted instance: allow-blocking %s not applied (fixed at load)\n",
		       onoff(o->allow_blocking));
		add_name(na, len, "allow_blocking");
	}
	if (o->cgroup[0] && strcmp(o->cgroup, d.cgroup)) {
		printf("lism: adopted instance: cgroup %s not applied: it stays attached to %s\n", o->cgroup,
		       d.cgroup);
		add_name(na, len, "cgroup");
	}
	if (o->churn_window_ms != d.churn_window_ms) {
		printf("lism: adopted instance: churn-window %u -> %u ms\n", d.churn_window_ms,
		       o->churn_window_ms);
		d.churn_window_ms = o->churn_window_ms;
	}
	apply_flag(&d, LISM_DEV_F_NO_CHURN_DETECT, o->no_churn_detect, "churn-detect off");
	apply_flag(&d, LISM_DEV_F_EAGER_SENDERS, o->eager_senders, "senders eager");
	apply_flag(&d, LISM_DEV_F_INCLUDE_PORTS, o->n_include_ports, "include-ports");
	return lism_device_write(in, &d);
}

/* The ports map as configured: every port's flags, set or cleared. */
static int reconcile_ports(const struct lism_load_cfg *o, const char *pin_path)
{
	static __u8 want[65536];
	int fd = lism_pin_open(pin_path, "ports"), err = 0, changed = 0;

	if (fd < 0)
		return fd;
	memset(want, 0, sizeof(want));
	for (int i = 0; i < o->n_exclude_ports; i++)
		want[o->exclude_ports[i]] |= LISM_PORT_EXCLUDE;
	for (int i = 0; i < o->n_include_ports; i++)
		want[o->include_ports[i]] |= LISM_PORT_INCLUDE;
	for (__u32 port = 0; port < 65536 && !err; port++) {
		__u8 v;

		if (bpf_map_lookup_elem(fd, &port, &v)) {
			err = -errno;
			break;
		}
		if (v == want[port])
			continue;
		if (bpf_map_update_elem(fd, &port, &want[port], BPF_ANY))
			err = -errno;
		changed++;
	}
	close(fd);
	if (!err && changed)
		printf("lism: adopted instance: port policy of %d ports changed to the configured one\n", changed);
	return err;
}

static void say_entry(const char *what, const struct lism_scope_key *k, __u8 v)
{
	char addr[INET6_ADDRSTRLEN];
	int v4 = lism_scope_key_is_v4(k);

	inet_ntop(v4 ? AF_INET : AF_INET6, v4 ? k->addr + 12 : k->addr, addr, sizeof(addr));
	printf("lism: adopted instance: scope %s %s/%u (%s)\n", what, addr, v4 ? k->prefixlen - 96 : k->prefixlen,
	       v == LISM_SCOPE_EXCLUDE ? "excluded" : "local");
}

/*
 * The scope's configured entries (loopback, this namespace's addresses,
 * --local-cidr, --exclude-cidr) made what lism_scope_fill() would write
 * now; the routes' entries (routes.h) are theirs.
 */
static int reconcile_scope(const struct lism_load_cfg *o, const char *pin_path)
{
	struct lism_scope_entry *want = NULL, *have = NULL;
	int n_want = 0, n_have = 0, fd, err, add_err = 0;

	fd = lism_pin_open(pin_path, "scope");
	if (fd < 0)
		return fd;
	err = lism_scope_entries(o->local_cidrs, o->n_local_cidrs, o->exclude_cidrs, o->n_exclude_cidrs,
				 !o->local_routes, &want, &n_want);
	if (!err)
		err = lism_scope_read(fd, &have, &n_have);
	/* new entries first, old ones after: an exclusion being replaced never lapses */
	for (int j = 0; j < n_want && !err && !add_err; j++) {
		int same = 0;

		for (int i = 0; i < n_have && !same; i++)
			same = !memcmp(&have[i].key, &want[j].key, sizeof(want[j].key)) &&
			       have[i].value == want[j].value;
		if (same)
			continue;
		if (bpf_map_update_elem(fd, &want[j].key, &want[j].value, BPF_ANY))
			add_err = -errno; /* a full map: still narrow it below */
		else
			say_entry("+", &want[j].key, want[j].value);
	}
	for (int i = 0; i < n_have && !err; i++) {
		int keep = 0;

		/* an exclusion goes only once its replacement is in */
		if (have[i].value != LISM_SCOPE_LOCAL && (have[i].value != LISM_SCOPE_EXCLUDE || add_err))
			continue;
		for (int j = 0; j < n_want && !keep; j++)
			keep = !memcmp(&have[i].key, &want[j].key, sizeof(want[j].key));
		if (keep)
			continue;
		if (bpf_map_delete_elem(fd, &have[i].key) && errno != ENOENT)
			err = -errno;
		else
			say_entry("-", &have[i].key, have[i].value);
	}
	free(want);
	free(have);
	close(fd);
	return err ? err : add_err;
}

int lism_settings_reconcile(const char *pin_path, const struct lism_load_cfg *o, char *not_applied,
			    size_t len)
{
	struct lism_instance in;
	int err, part, lockfd;

	not_applied[0] = '\0';
	err = lism_instance_open(&in, pin_path);
	if (err)
		return err;
	/* read-modify-write of the device and maps: not while a set or an unload runs */
	lockfd = lism_pin_lock(pin_path);
	if (lockfd < 0) {
		lism_instance_close(&in);
		return lockfd;
	}
	/* each part on its own: one that fails is named, the others still apply */
	err = reconcile_device(o, &in, not_applied, len);
	if (err)
		add_name(not_applied, len, "max_dmbs"); /* the device record kept as it was */
	part = reconcile_ports(o, pin_path);
	if (part) {
		add_name(not_applied, len, "ports");
		err = err ? err : part;
	}
	part = reconcile_scope(o, pin_path);
	if (part) {
		add_name(not_applied, len, "scope");
		err = err ? err : part;
	}
	close(lockfd);
	lism_instance_close(&in);
	return err;
}
