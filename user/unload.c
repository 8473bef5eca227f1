// SPDX-License-Identifier: GPL-2.0-only
#include <bpf/bpf.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "device.h"
#include "load.h"
#include "pins.h"
#include "unload.h"

/* Detach and unpin everything an instance pinned. */
static int remove_instance(const struct lism_instance *in)
{
	char path[PATH_MAX];
	int fd, senders, err = 0, rm;

	if (!lism_pin_join(path, sizeof(path), in->pin_path, LISM_PIN_LINK_SOCKOPS)) {
		fd = bpf_obj_get(path);
		if (fd >= 0) {
			if (bpf_link_detach(fd) && errno != EINVAL)
				err = -errno;
			close(fd);
		}
	}
	if (!lism_pin_join(path, sizeof(path), in->pin_path, LISM_PIN_PROG_MSG)) {
		fd = bpf_obj_get(path);
		senders = lism_pin_open(in->pin_path, "senders");
		if (fd >= 0 && senders >= 0 &&
		    bpf_prog_detach2(fd, senders, BPF_SK_MSG_VERDICT) && errno != ENOENT)
			err = -errno;
		if (fd >= 0)
			close(fd);
		if (senders >= 0)
			close(senders);
	}
	rm = lism_pins_remove(in->pin_path);
	return err ? err : rm;
}

/* Wait until no socket is in the shortcut and no DMB in use: 0, -EBUSY at the timeout, or -errno. */
static int drain(const struct lism_instance *in, const struct lism_unload_cfg *cfg,
		 struct lism_unload_info *info, struct lism_error *e)
{
	double deadline = lism_mono_s() + cfg->timeout_s, next_note = lism_mono_s() + 2;
	struct lism_snapshot s;
	long long busy;
	int err;

	for (;;) {
		err = lism_snapshot_read(in, &s);
		if (err)
			return lism_fail(e, LISM_EXIT_FAIL, err, "reading the instance failed: %s", strerror(-err));
		err = lism_shortcut_map_count(in, s.dev.capacity + 1, &s.shortcut_sockets);
		if (err)
			return lism_fail(e, LISM_EXIT_FAIL, err, "reading the shortcut map failed: %s",
					 strerror(-err));
		/* pairs without a data path have nothing in the maps: their entries go at their close */
		busy = s.usage.dmbs_in_use - (long long)s.pair_only;
		if (!s.shortcut_sockets && busy <= 0)
			return 0;
		if (lism_mono_s() >= deadline) {
			if (cfg->force) {
				info->forced = 1;
				info->forced_sockets = s.shortcut_sockets;
				return 0;
			}
			lism_fail(e, LISM_EXIT_BUSY, -EBUSY,
				  "%u sockets still use the shortcut (%lld DMBs in use) after %us; lism stays "
				  "loaded but inactive (new connections use TCP)",
				  s.shortcut_sockets, busy, cfg->timeout_s);
			lism_fail_hint(e, "rerun 'lism unload' once they close, raise --timeout, or use --force "
				       "(their unread bytes would be lost)");
			return -EBUSY;
		}
		if (cfg->waiting && lism_mono_s() >= next_note) {
			cfg->waiting(cfg->ctx, s.shortcut_sockets, busy);
			next_note = lism_mono_s() + 5;
		}
		usleep(50 * 1000);
	}
}

int lism_unload(const char *pin_path, const struct lism_unload_cfg *cfg, struct lism_unload_info *info,
		struct lism_error *e)
{
	struct lism_instance in;
	struct lism_device d;
	int err, lockfd;

	memset(info, 0, sizeof(*info));
	err = lism_require_root(e);
	if (err)
		return err;
	err = lism_instance_open(&in, pin_path);
	if (err) {
		lism_fail(e, LISM_EXIT_STATE, err, "no lism instance at %s: %s", pin_path, strerror(-err));
		lism_fail_hint(e, "see 'lism status --pin-path DIR' for where it was loaded");
		return err;
	}
	lockfd = lism_pin_lock(pin_path);
	if (lockfd < 0) {
		lism_instance_close(&in);
		return lism_pin_lock_fail(e, pin_path, lockfd);
	}
	err = lism_device_read(&in, &d);
	if (!err && d.layout == 0) {
		/*
		 * A load killed before it wrote the device (SIGKILL while the
		 * verifier ran): its maps are pinned, nothing was attached through
		 * a pin, no socket ever used them.
		 */
		info->unfinished = 1;
	} else if (err || d.layout != LISM_LAYOUT_VERSION) {
		lism_fail(e, LISM_EXIT_STATE, err ? err : -EPROTO,
			  "the pins at %s are not of this lism's layout (found %u, want %u)", pin_path,
			  err ? 0 : d.layout, LISM_LAYOUT_VERSION);
		lism_fail_hint(e, "unload it with the lism build that loaded it");
		err = err ? err : -EPROTO;
		goto out;
	} else {
		/*
		 * New connections stay on TCP from now on; closes are still
		 * tracked.  Draining, not off by choice: if the wait times out, a
		 * daemon that adopts the instance switches it on again (a pod's
		 * successor).
		 */
		if (d.active)
			d.flags |= LISM_DEV_F_DRAINING;
		d.active = 0;
		err = lism_device_write(&in, &d);
		if (err) {
			lism_fail(e, LISM_EXIT_FAIL, err, "switching the device off failed: %s", strerror(-err));
			goto out;
		}
		err = drain(&in, cfg, info, e);
		if (err)
			goto out;
	}
	err = remove_instance(&in);
	if (err)
		lism_fail(e, LISM_EXIT_FAIL, err, "removing %s failed: %s", pin_path, strerror(-err));
out:
	lism_instance_close(&in);
	close(lockfd);
	return err;
}
