// SPDX-License-Identifier: GPL-2.0-only
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "commands.h"
#include "cli.h"
#include "clock.h"
#include "device.h"
#include "feature.h"
#include "log.h"
#include "pins.h"

static __u32 value_size(int fd)
{
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.value_size;
}

void lism_instance_close(struct lism_instance *in)
{
	int *fds[] = { &in->device_fd,  &in->usage_fd, &in->dmbs_fd,    &in->stats_fd,
		       &in->reasons_fd, &in->sizes_fd, &in->shortcut_fd };

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

int lism_instance_open(struct lism_instance *in, const char *pin_path)
{
	struct {
		int *fd;
		const char *name;
	} maps[] = {
		{ &in->device_fd, "device" }, { &in->usage_fd, "usage" },
		{ &in->dmbs_fd, "dmbs" },     { &in->stats_fd, "stats" },
		{ &in->reasons_fd, "reasons" }, { &in->shortcut_fd, "shortcut" },
	};
	int err;

	memset(in, 0, sizeof(*in));
	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
		*maps[i].fd = -1;
	in->sizes_fd = -1;
	if (strlen(pin_path) >= sizeof(in->pin_path))
		return -ENAMETOOLONG;
	strcpy(in->pin_path, pin_path);
	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
		err = lism_pin_open(pin_path, maps[i].name);
		if (err < 0) {
			lism_instance_close(in);
			return err;
		}
		*maps[i].fd = err;
	}
	/* Newer than some instances: read as zeros when absent. */
	err = lism_pin_open(pin_path, "sizes");
	in->sizes_fd = err < 0 ? -1 : err;
	/* Values are read into this build's structs: refuse other layouts before any read. */
	if (value_size(in->device_fd) != sizeof(struct lism_device) ||
	    value_size(in->usage_fd) != sizeof(struct lism_usage) ||
	    value_size(in->dmbs_fd) != sizeof(struct lism_dmb)) {
		lism_instance_close(in);
		return -EPROTO;
	}
	return 0;
}

int lism_layout_check(const struct lism_instance *in)
{
	struct lism_device d;
	int err = lism_device_read(in, &d);

	if (err) {
		lism_err("reading the device at %s failed: %s", in->pin_path, strerror(-err));
		return LISM_EXIT_FAIL;
	}
	if (!d.layout) {
		lism_err("%s holds the pins of a load that did not finish (or is still running)", in->pin_path);
		lism_hint("remove them with 'lism unload --pin-path %s'", in->pin_path);
		return LISM_EXIT_STATE;
	}
	if (d.layout != LISM_LAYOUT_VERSION) {
		lism_err("the pins at %s have layout %u, this lism reads %u", in->pin_path, d.layout,
			 LISM_LAYOUT_VERSION);
		lism_hint("read them with the lism build that loaded them");
		return LISM_EXIT_STATE;
	}
	return LISM_EXIT_OK;
}

int lism_device_read(const struct lism_instance *in, struct lism_device *d)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(in->device_fd, &zero, d) ? -errno : 0;
}

int lism_device_write(const struct lism_instance *in, const struct lism_device *d)
{
	__u32 zero = 0;

	return bpf_map_update_elem(in->device_fd, &zero, d, BPF_ANY) ? -errno : 0;
}

int lism_percpu_sum(int fd, __u64 *out, unsigned int n)
{
	int ncpu = libbpf_num_possible_cpus();
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info);
	__u64 *vals;

	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	/* Counter arrays only grow: an older instance's map may be shorter. */
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	memset(out, 0, n * sizeof(*out));
	if (info.max_entries < n)
		n = info.max_entries;
	vals = calloc(ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (__u32 i = 0; i < n; i++) {
		if (bpf_map_lookup_elem(fd, &i, vals)) {
			int err = -errno;

			free(vals);
			return err;
		}
		for (int c = 0; c < ncpu; c++)
			out[i] += vals[c];
	}
	free(vals);
	return 0;
}

int lism_percpu_zero(int fd)
{
	int ncpu = libbpf_num_possible_cpus();
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info);
	__u64 *zeros;
	int err = 0;

	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	zeros = calloc(ncpu, sizeof(*zeros));
	if (!zeros)
		return -ENOMEM;
	for (__u32 i = 0; i < info.max_entries && !err; i++)
		if (bpf_map_update_elem(fd, &i, zeros, BPF_ANY))
			err = -errno;
	free(zeros);
	return err;
}

/* One batched pass over the token table: confirmed connections, joined ends, ends paired without a data path. */
static int scan_table(const struct lism_instance *in, __u32 capacity, __u32 *confirmed, __u32 *joined,
		      __u32 *pair_only)
{
	enum { CHUNK = 1024 };
	struct lism_dmb *vals = malloc(CHUNK * sizeof(*vals));
	__u32 *keys = malloc(CHUNK * sizeof(*keys));
	__u32 batch = 0, n;
	void *in_batch = NULL;
	int err = 0;

	*confirmed = *joined = *pair_only = 0;
	if (!vals || !keys) {
		err = -ENOMEM;
		goto out;
	}
	for (__u32 done = 0; done < capacity; done += n) {
		n = CHUNK;
		err = bpf_map_lookup_batch(in->dmbs_fd, in_batch, &batch, keys, vals, &n, NULL);
		if (err && errno != ENOENT) {
			err = -errno;
			goto out;
		}
		for (__u32 i = 0; i < n; i++) {
			if (!vals[i].token)
				continue;
			if (vals[i].state == LISM_ST_CONFIRMED && vals[i].role == LISM_ROLE_ACTIVE)
				(*confirmed)++;
			if ((vals[i].state == LISM_ST_CONFIRMED || vals[i].state == LISM_ST_READY) &&
			    !(vals[i].conn_flags & LISM_CONN_NO_DATA_PATH))
				(*joined)++;
			if (vals[i].conn_flags & LISM_CONN_NO_DATA_PATH)
				(*pair_only)++;
		}
		if (err || !n) { /* ENOENT: that was the last batch */
			err = 0;
			break;
		}
		in_batch = &batch;
	}
out:
	free(vals);
	free(keys);
	return err;
}

static int sockhash_count(int fd, __u32 limit, __u32 *out)
{
	__u64 key, next;
	void *prev = NULL;

	/*
	 * get_next_key restarts from the first bucket when @key was deleted
	 * meanwhile, so under churn this could revisit keys: stop at @limit
	 * (a count past the map's size means "still busy", which is all the
	 * caller needs).
	 */
	*out = 0;
	while (*out < limit && !bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		(*out)++;
	}
	return *out >= limit || errno == ENOENT ? 0 : -errno;
}

int lism_shortcut_map_count(const struct lism_instance *in, __u32 limit, __u32 *out)
{
	return sockhash_count(in->shortcut_fd, limit, out);
}

/* Members whose sends run the data path (the senders map), at most the table's size. */
static int senders_count(const struct lism_instance *in, __u32 limit, __u32 *out)
{
	int fd = lism_pin_open(in->pin_path, "senders"), err;

	if (fd < 0)
		return fd;
	err = sockhash_count(fd, limit, out);
	close(fd);
	return err;
}

/* The event types whose lease runs now (abi.h); 0 when unreadable. */
static __u32 events_followed(const char *pin_path)
{
	__u64 until, now = lism_mono_ns();
	__u32 mask = 0;
	int fd = lism_pin_open(pin_path, "event_readers");

	if (fd < 0)
		return 0;
	for (__u32 t = 1; t < LISM_EV_MAX; t++)
		if (!bpf_map_lookup_elem(fd, &t, &until) && until > now)
			mask |= LISM_EV_TYPE(t);
	close(fd);
	return mask;
}

/* lism exec's device lease into @l: 1 while it is live. */
static int exec_lease(const char *pin_path, struct lism_exec_lease *l)
{
	int fd = lism_pin_open(pin_path, "exec_lease"), live = 0;
	__u32 zero = 0;

	memset(l, 0, sizeof(*l));
	if (fd < 0)
		return 0;
	if (!bpf_map_lookup_elem(fd, &zero, l))
		live = l->until_ns > lism_mono_ns();
	close(fd);
	return live;
}

/*
 * The backstop's recursion misses: a tracing program does not run while it
 * runs on the same CPU, and the kernel counts each such destroy in the
 * program's info.  -errno if unreadable (an instance loaded by a build that
 * did not pin it).
 */
static int backstop_misses(const char *pin_path, __u64 *misses)
{
	struct bpf_prog_info info;
	int err = lism_prog_info_read(pin_path, LISM_PIN_PROG_DESTROY, &info);

	if (!err)
		*misses = info.recursion_misses;
	return err;
}

int lism_snapshot_read(const struct lism_instance *in, struct lism_snapshot *s)
{
	char path[PATH_MAX];
	__u32 zero = 0;
	int err;

	memset(s, 0, sizeof(*s));
	err = lism_device_read(in, &s->dev);
	if (err)
		return err;
	if (bpf_map_lookup_elem(in->usage_fd, &zero, &s->usage))
		return -errno;
	err = lism_percpu_sum(in->stats_fd, s->stats, LISM_S_MAX);
	if (!err)
		err = lism_percpu_sum(in->reasons_fd, s->reasons, LISM_R_MAX);
	if (!err && in->sizes_fd >= 0)
		err = lism_percpu_sum(in->sizes_fd, s->sizes, LISM_HIST_BUCKETS);
	/* every shortcut send counts once in its size bucket: the data path adds no second counter */
	for (int b = 0; !err && b < LISM_HIST_BUCKETS; b++)
		s->stats[LISM_S_SC_MSGS] += s->sizes[b];
	if (!err)
		err = scan_table(in, s->dev.capacity, &s->confirmed, &s->shortcut_sockets, &s->pair_only);
	if (!err)
		err = senders_count(in, s->dev.capacity, &s->sender_sockets);
	if (!lism_pin_join(path, sizeof(path), in->pin_path, LISM_PIN_LINK_SOCKOPS))
		s->attached = access(path, F_OK) == 0;
	if (!err)
		s->events_followed = events_followed(in->pin_path);
	if (!err)
		s->exec_serving = exec_lease(in->pin_path, &s->exec_lease);
	if (!lism_pin_join(path, sizeof(path), in->pin_path, LISM_PIN_LINK_DESTROY))
		s->backstop = access(path, F_OK) == 0;
	s->backstop_misses_known = s->backstop && !backstop_misses(in->pin_path, &s->backstop_misses);
	lism_bpf_time_read(in->pin_path, &s->bpf_time);
	lism_features_read(in->pin_path, s->features); /* unknown where it cannot be read */
	return err;
}

int lism_gid_generate(__u8 gid[16])
{
	ssize_t n = getrandom(gid, 16, 0);

	return n == 16 ? 0 : -EIO;
}

void lism_gid_format(const __u8 gid[16], char out[34])
{
	char *p = out;

	for (int i = 0; i < 16; i++) {
		if (i == 8)
			*p++ = '-';
		p += sprintf(p, "%02x", gid[i]);
	}
}

int lism_cmd_set(const struct lism_common_opts *co, const struct lism_set_opts *o)
{
	struct lism_instance in;
	struct lism_device d;
	int err, ret = LISM_EXIT_OK, lockfd = -1;

	err = lism_instance_open(&in, co->pin_path);
	if (err) {
		lism_err("no lism instance at %s: %s", co->pin_path, strerror(-err));
		return LISM_EXIT_STATE;
	}
	/* read-modify-write of the device: not while an unload switches it off */
	lockfd = lism_pin_lock(co->pin_path);
	if (lockfd < 0) {
		lism_pin_lock_failed(co->pin_path, lockfd);
		ret = LISM_EXIT_STATE;
		goto out;
	}
	err = lism_device_read(&in, &d);
	if (err || d.layout != LISM_LAYOUT_VERSION) {
		lism_err("the pins at %s are not of this lism's layout", co->pin_path);
		ret = LISM_EXIT_STATE;
		goto out;
	}
	switch (o->key) {
	case LISM_SET_ACTIVE:
		/* a drain of a device an operator switched off leaves it off, not draining */
		if (o->value == LISM_ACTIVE_DRAIN && (d.active || (d.flags & LISM_DEV_F_DRAINING)))
			d.flags |= LISM_DEV_F_DRAINING;
		else
			d.flags &= ~LISM_DEV_F_DRAINING;
		d.active = o->value == 1;
		break;
	case LISM_SET_MAX_DMBS:
		if (o->value > d.capacity) {
			lism_err("max-dmbs %u is larger than the DMB table (%u entries)", o->value,
				 d.capacity);
			lism_hint("the table size is fixed at load: reload with --max-dmbs %u",
				  o->value);
			ret = LISM_EXIT_USAGE;
			goto out;
		}
		d.max_dmbs = o->value;
		break;
	case LISM_SET_CHURN_DETECT:
		if (o->value)
			d.flags &= ~LISM_DEV_F_NO_CHURN_DETECT;
		else
			d.flags |= LISM_DEV_F_NO_CHURN_DETECT;
		break;
	case LISM_SET_SENDERS:
		if (o->value)
			d.flags |= LISM_DEV_F_EAGER_SENDERS;
		else
			d.flags &= ~LISM_DEV_F_EAGER_SENDERS;
		break;
	default:
		ret = LISM_EXIT_USAGE;
		goto out;
	}
	err = lism_device_write(&in, &d);
	if (err) {
		lism_err("writing the device failed: %s", strerror(-err));
		ret = LISM_EXIT_FAIL;
		goto out;
	}
	if (o->key == LISM_SET_ACTIVE)
		printf("lism: active %s: new connections %s\n",
		       d.active ? "on" : (d.flags & LISM_DEV_F_DRAINING) ? "off (draining)" : "off",
		       d.active ? "may use the shortcut" :
		       (d.flags & LISM_DEV_F_DRAINING) ?
				  "stay on TCP, existing ones keep theirs, until a lism run adopts the instance" :
				  "stay on TCP; existing ones keep theirs");
	else if (o->key == LISM_SET_CHURN_DETECT)
		printf("lism: churn-detect %s: %s\n", o->value ? "on" : "off",
		       o->value ? "destinations of short connections may skip the shortcut"
				    : "every new connection may use the shortcut");
	else if (o->key == LISM_SET_SENDERS)
		printf("lism: senders %s: %s\n", o->value ? "eager" : "adaptive",
		       o->value ? "new connections' sends run the data path from the handshake"
				    : "new connections' sends run it once data goes both ways or is bulk");
	else
		printf("lism: max-dmbs %u\n", d.max_dmbs);
out:
	if (lockfd >= 0)
		close(lockfd);
	lism_instance_close(&in);
	return ret;
}
