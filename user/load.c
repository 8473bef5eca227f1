// SPDX-License-Identifier: GPL-2.0-only
/*
 * lism_load / lism_upgrade: probe -> open -> configure -> load -> attach
 * the core, then each optional feature on its own (optional.h), with one
 * cleanup path.  Nothing here prints: failures go to the caller's
 * struct lism_error.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ablate.h"
#include "cgroup.h"
#include "device.h"
#include "feature.h"
#include "load.h"
#include "load_log.h"
#include "objects.h"
#include "optional.h"
#include "pins.h"
#include "probe.h"
#include "routes.h"
#include "scope.h"
#include "signals.h"
#include "lism/ablate.h"
#include "lism.skel.h"

#define BPFFS_DEFAULT "/sys/fs/bpf"

const void *lism_core_elf(size_t *size)
{
	return lism_bpf__elf_bytes(size);
}

int lism_require_root(struct lism_error *e)
{
	if (geteuid() == 0)
		return 0;
	lism_fail(e, LISM_EXIT_ENV, -EPERM,
		  "must run as root (uid 0 with CAP_BPF, CAP_NET_ADMIN and CAP_PERFMON)");
	lism_fail_hint(e, "run it with sudo, or as the root user");
	return -EPERM;
}

/* The pin directory must live on bpffs; mount the default one if asked. */
static int check_bpffs(const char *pin_path, int mount_it, int *mounted, struct lism_error *e)
{
	char anc[PATH_MAX];
	int is;

	*mounted = 0;
	is = lism_existing_ancestor(pin_path, anc, sizeof(anc));
	if (is)
		return lism_fail(e, LISM_EXIT_ENV, is, "cannot inspect --pin-path %s: %s", pin_path, strerror(-is));
	is = lism_is_bpffs(anc);
	if (is == 1)
		return 0;
	if (mount_it && !strncmp(pin_path, BPFFS_DEFAULT "/", strlen(BPFFS_DEFAULT) + 1) &&
	    !strcmp(anc, BPFFS_DEFAULT)) {
		if (mount("bpf", BPFFS_DEFAULT, "bpf", 0, "mode=0700"))
			return lism_fail(e, LISM_EXIT_ENV, -errno, "mounting bpffs at %s failed: %s",
					 BPFFS_DEFAULT, strerror(errno));
		*mounted = 1;
		return 0;
	}
	lism_fail(e, LISM_EXIT_ENV, -ENOTSUP, "--pin-path %s is not on a BPF filesystem (%s is not bpffs)",
		  pin_path, anc);
	lism_fail_hint(e, "mount it with 'mount -t bpf bpf %s', or rerun with --mount-bpffs", BPFFS_DEFAULT);
	return -ENOTSUP;
}

int lism_mount_bpffs(const char *pin_path, int *mounted, struct lism_error *e)
{
	int err = lism_require_root(e);

	*mounted = 0;
	return err ? err : check_bpffs(pin_path, 1, mounted, e);
}

static int find_cgroup(const char *cgroup, char *out, size_t len, struct lism_error *e)
{
	int err, is;

	if (cgroup[0]) {
		if (strlen(cgroup) >= len)
			return lism_fail(e, LISM_EXIT_USAGE, -ENAMETOOLONG, "--cgroup %s: too long", cgroup);
		strcpy(out, cgroup);
	} else {
		err = lism_cgroup2_mount("/proc/mounts", out, len);
		if (err) {
			lism_fail(e, LISM_EXIT_ENV, err, "no cgroup2 filesystem is mounted (/proc/mounts): %s",
				  strerror(-err));
			lism_fail_hint(e, "mount one with 'mount -t cgroup2 none /sys/fs/cgroup/unified', or pass "
				       "--cgroup");
			return err;
		}
	}
	is = lism_is_cgroup2(out);
	if (is != 1) {
		lism_fail(e, LISM_EXIT_ENV, is < 0 ? is : -ENOTDIR, "--cgroup %s is not a cgroup2 directory%s%s",
			  out, is < 0 ? ": " : "", is < 0 ? strerror(-is) : "");
		lism_fail_hint(e, "cgroup2 is mounted where /proc/mounts lists type cgroup2");
		return is < 0 ? is : -ENOTDIR;
	}
	return 0;
}

static int init_device(struct lism_bpf *skel, const char *pin_path, const struct lism_load_cfg *cfg,
		       const char *cgroup)
{
	struct lism_device d = { 0 };
	struct timespec now;
	__u32 zero = 0;
	int err;

	err = lism_gid_generate(d.gid);
	if (err)
		return err;
	clock_gettime(CLOCK_REALTIME, &now);
	d.layout = LISM_LAYOUT_VERSION;
	d.chid = LISM_CHID;
	d.active = 1;
	d.capacity = cfg->max_dmbs;
	d.max_dmbs = cfg->max_dmbs;
	d.dmb_size = cfg->dmb_size;
	d.churn_window_ms = cfg->churn_window_ms;
	d.flags = (cfg->allow_blocking ? LISM_DEV_F_ALLOW_BLOCKING : 0) |
		  (cfg->n_include_ports ? LISM_DEV_F_INCLUDE_PORTS : 0) |
		  (cfg->no_churn_detect ? LISM_DEV_F_NO_CHURN_DETECT : 0) |
		  (cfg->eager_senders ? LISM_DEV_F_EAGER_SENDERS : 0);
	d.loaded_ns = (__u64)now.tv_sec * 1000000000ull + (__u64)now.tv_nsec;
	err = lism_pin_map_id(pin_path, "socks", &d.socks_id); /* libbpf pinned it at load */
	if (err)
		return err;
	/* for views only: an overlong path is shown truncated */
	if (snprintf(d.cgroup, sizeof(d.cgroup), "%s", cgroup) >= (int)sizeof(d.cgroup))
		strcpy(d.cgroup + sizeof(d.cgroup) - 4, "...");
	if (bpf_map__update_elem(skel->maps.device, &zero, sizeof(zero), &d, sizeof(d), BPF_ANY))
		return -errno;
	return 0;
}

static int set_port_flag(struct lism_bpf *skel, __u16 port, __u8 flag)
{
	int fd = bpf_map__fd(skel->maps.ports);
	__u32 key = port;
	__u8 v;

	if (bpf_map_lookup_elem(fd, &key, &v))
		return -errno;
	v |= flag;
	return bpf_map_update_elem(fd, &key, &v, BPF_ANY) ? -errno : 0;
}

static int fill_ports(struct lism_bpf *skel, const struct lism_load_cfg *cfg)
{
	int err = 0;

	for (int i = 0; i < cfg->n_exclude_ports && !err; i++)
		err = set_port_flag(skel, cfg->exclude_ports[i], LISM_PORT_EXCLUDE);
	for (int i = 0; i < cfg->n_include_ports && !err; i++)
		err = set_port_flag(skel, cfg->include_ports[i], LISM_PORT_INCLUDE);
	return err;
}

static int fill_free_slots(struct lism_bpf *skel, __u32 n)
{
	int fd = bpf_map__fd(skel->maps.dmb_free);

	for (__u32 slot = 0; slot < n; slot++)
		if (bpf_map_update_elem(fd, NULL, &slot, BPF_ANY))
			return -errno;
	return 0;
}

/* The scope: loopback, the addresses, the prefixes, and with --local-routes the routes, once. */
static int fill_scope(struct lism_bpf *skel, const struct lism_load_cfg *cfg, struct lism_load_info *info)
{
	int fd = bpf_map__fd(skel->maps.scope), n;
	int err = lism_scope_fill(fd, cfg->local_cidrs, cfg->n_local_cidrs, cfg->exclude_cidrs,
				  cfg->n_exclude_cidrs, !cfg->local_routes, &info->scope_entries);

	if (err || !cfg->local_routes)
		return err;
	n = lism_routes_fill_once(fd); /* lism run follows them from then on (routes.h) */
	if (n == -ENOSPC) { /* what fits is in; the rest stays out of scope, never wider */
		info->scope_full = 1;
		return 0;
	}
	if (n < 0)
		return n;
	info->scope_entries += n;
	return 0;
}

/*
 * The core object, opened over the pin directory: each map is the pin of
 * its name there, created at load if missing, reused (and checked against
 * this build's definition) if present.  @entries sizes the DMB-indexed maps.
 */
static int open_core(const char *pin_path, __u32 entries, __u32 ablate, struct lism_bpf **out,
		     struct lism_error *e)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .pin_root_path = pin_path);
	struct lism_bpf *skel = lism_bpf__open_opts(&opts);
	int err;

	*out = NULL;
	if (!skel) {
		err = errno ? -errno : -ENOMEM;
		return lism_fail(e, LISM_EXIT_FAIL, err, "opening the BPF object failed: %s", strerror(-err));
	}
	err = lism_object_configure(skel->obj, entries, ablate);
	if (err) {
		lism_bpf__destroy(skel);
		return lism_fail(e, LISM_EXIT_FAIL, err, "configuring the BPF object failed: %s", strerror(-err));
	}
	skel->rodata->lism_test_reject_handshake = lism_test_reject(LISM_F_HANDSHAKE);
	*out = skel;
	return 0;
}

/* The bench's ablations (LISM_ABLATE, lism/ablate.h) into @info->ablated. */
static int read_ablate(struct lism_load_info *info, struct lism_error *e)
{
	const char *list = getenv("LISM_ABLATE");

	if (!lism_ablate_parse(list, &info->ablated))
		return 0;
	return lism_fail(e, LISM_EXIT_USAGE, -EINVAL, "LISM_ABLATE=%s is not a list of %s", list,
			 LISM_ABLATE_NAMES);
}

/* What the core needs and this kernel lacks: said in @e (class ENV), one line each. */
static int probe_core(struct lism_probe *p, struct lism_error *e)
{
	char missing[1024];
	int err = lism_probe_run(p), n = 0;
	FILE *more = NULL;

	if (err)
		return lism_fail(e, LISM_EXIT_FAIL, err, "probing the kernel failed: %s", strerror(-err));
	for (int f = 0; f < LISM_F_MAX; f++) {
		const struct lism_feature_info *fi = lism_feature_info(f);

		if (!fi->core || !lism_probe_missing(p, f, missing, sizeof(missing)))
			continue;
		if (!n++) {
			lism_fail(e, LISM_EXIT_ENV, -EOPNOTSUPP, "this kernel lacks what %s (%s, core) needs: %s",
				  fi->title, fi->name, missing);
			more = lism_fail_detail(e);
		} else if (more) {
			fprintf(more, "lism: this kernel lacks what %s (%s, core) needs: %s\n", fi->title,
				fi->name, missing);
		}
	}
	if (more)
		fclose(more);
	if (!n)
		return 0;
	lism_fail_hint(e, "'lism probe' lists every kernel feature lism uses and which of its parts each one "
		       "enables; lism needs BTF, sockops, sk_msg and sockmap (CONFIG_BPF_STREAM_PARSER)");
	lism_probe_free(p);
	return -EOPNOTSUPP;
}

/*
 * Load the core object.  A refusal is said in a few lines: the program,
 * the verifier's last two lines, the kernel, where the whole log is.
 */
static int load_core(struct lism_bpf *skel, const char *what, struct lism_error *e)
{
	struct lism_load_log log;
	struct lism_refusal r;
	int err = lism_load_log_begin(&log), f;
	FILE *detail;

	if (err)
		return lism_fail(e, LISM_EXIT_FAIL, err, "%s: keeping libbpf's log failed: %s", what,
				 strerror(-err));
	err = lism_bpf__load(skel);
	lism_load_log_end(&log);
	if (err) {
		lism_load_log_refusal(&log, &r);
		f = r.prog[0] ? lism_feature_of_program(r.prog) : -1;
		if (r.verifier)
			lism_fail(e, LISM_EXIT_FAIL, err,
				  "%s: the verifier refused %s, a core program (%s), so lism cannot load", what,
				  r.prog, f >= 0 ? lism_feature_info(f)->title : "core");
		else
			lism_fail(e, LISM_EXIT_FAIL, err, "%s failed%s%s: %s", what, r.prog[0] ? " at " : "",
				  r.prog, strerror(-err));
		detail = lism_fail_detail(e);
		if (detail) {
			lism_refusal_print(detail, &r);
			fclose(detail);
		}
		lism_fail_hint(e, "'lism probe' shows what this kernel lacks and which of lism's programs its "
			       "verifier refuses; if it lacks nothing, this kernel's verifier differs from the ones "
			       "lism is tested on: report the log with 'lism version' and the kernel line above");
	}
	lism_load_log_free(&log);
	return err;
}

/* The features besides the core: the probed ones, then the optional programs (optional.h). */
static void start_features(const char *pin_path, __u32 entries, const struct lism_probe *p,
			   struct lism_load_info *info)
{
	struct lism_feature_state *st = info->features;

	memset(st, 0, sizeof(info->features));
	lism_feature_on(&st[LISM_F_HANDSHAKE]);
	lism_probed_features(p, st);
	lism_optional_load(pin_path, entries, info->ablated, p, st);
	info->features_unrecorded = lism_features_write(pin_path, st) != 0;
}

/* Pin @fd as @dir/@name; @replace: over the pin of the instance being upgraded. */
static int pin_fd(int fd, const char *dir, const char *name, int replace)
{
	char path[PATH_MAX];
	int err = lism_pin_join(path, sizeof(path), dir, name);

	if (err)
		return err;
	if (replace && unlink(path) && errno != ENOENT)
		return -errno;
	return bpf_obj_pin(fd, path) ? -errno : 0;
}

/* @pin_path holds a device never written: a load killed midway, or one still running. */
static int unfinished_load(const char *pin_path, struct lism_error *e)
{
	lism_fail(e, LISM_EXIT_STATE, -EUCLEAN,
		  "%s holds the pins of a load that did not finish (or is still running)", pin_path);
	lism_fail_hint(e, "remove them with 'lism unload --pin-path %s', then load", pin_path);
	return -EUCLEAN;
}

/* An instance at @pin_path of this layout, read into @d, or -errno said in @e. */
static int instance_of_this_layout(const char *pin_path, struct lism_device *d, struct lism_error *e)
{
	struct lism_instance in;
	char path[PATH_MAX];
	int err = lism_pin_join(path, sizeof(path), pin_path, "device");

	if (!err && access(path, F_OK))
		return lism_fail(e, LISM_EXIT_STATE, -ENOENT, "--upgrade: nothing is loaded at %s", pin_path);
	if (!err)
		err = lism_instance_open(&in, pin_path);
	if (!err) {
		err = lism_device_read(&in, d);
		lism_instance_close(&in);
	}
	if (!err && d->layout == 0)
		return unfinished_load(pin_path, e);
	if (err || d->layout != LISM_LAYOUT_VERSION) {
		lism_fail(e, LISM_EXIT_STATE, err ? err : -EPROTO,
			  "cannot upgrade %s in place: its layout is not this lism's (%u)", pin_path,
			  LISM_LAYOUT_VERSION);
		lism_fail_hint(e, "unload it with the lism that loaded it, then load this one");
		return err ? err : -EPROTO;
	}
	return 0;
}

/*
 * The new handshake program goes in through the cgroup link, atomically;
 * the senders map gets the new data path for sockets that join it from
 * now on, while sockets already in it keep the one they joined with (it
 * works on the same maps).
 */
int lism_upgrade(const char *pin_path, struct lism_load_info *info, struct lism_error *e)
{
	struct lism_bpf *skel = NULL;
	struct lism_probe probe = { 0 };
	struct lism_device d;
	char path[PATH_MAX];
	sigset_t old_mask;
	int err, lockfd, linkfd = -1;

	memset(info, 0, sizeof(*info));
	err = lism_require_root(e);
	if (!err)
		err = read_ablate(info, e);
	if (!err)
		err = check_bpffs(pin_path, 0, &info->mounted_bpffs, e);
	if (!err)
		err = instance_of_this_layout(pin_path, &d, e);
	if (!err)
		err = probe_core(&probe, e);
	if (err)
		return err;
	lockfd = lism_pin_lock(pin_path);
	if (lockfd < 0) {
		lism_probe_free(&probe);
		return lism_pin_lock_fail(e, pin_path, lockfd);
	}
	lism_stop_signals_hold(&old_mask);
	err = open_core(pin_path, d.capacity, info->ablated, &skel, e);
	/* reuses every pinned map, or fails if one differs (then: unload, load) */
	if (!err)
		err = load_core(skel, "loading the new programs over the pinned maps", e);
	if (err)
		goto out;
	/*
	 * The new data path and the other optional programs before the link
	 * switch, as at a load: the new handshake makes members from its first
	 * callback (and finds LISM_DEV_F_DATA_PATH as the new build leaves it).
	 */
	start_features(pin_path, d.capacity, &probe, info);
	err = lism_pin_join(path, sizeof(path), pin_path, LISM_PIN_LINK_SOCKOPS);
	if (!err) {
		linkfd = bpf_obj_get(path);
		if (linkfd < 0 || bpf_link_update(linkfd, bpf_program__fd(skel->progs.lism_sockops), NULL))
			err = lism_fail(e, LISM_EXIT_FAIL, -errno,
					"switching the cgroup link to the new sockops program failed: %s",
					strerror(errno));
	}
	if (!err) {
		err = pin_fd(bpf_program__fd(skel->progs.lism_sockops), pin_path, LISM_PIN_PROG_SOCKOPS, 1);
		if (err)
			lism_fail(e, LISM_EXIT_FAIL, err, "pinning the handshake program failed: %s",
				  strerror(-err));
	}
out:
	if (err && e->exit == LISM_EXIT_OK)
		lism_fail(e, LISM_EXIT_FAIL, err, "upgrading %s failed: %s", pin_path, strerror(-err));
	if (linkfd >= 0)
		close(linkfd);
	lism_bpf__destroy(skel);
	lism_probe_free(&probe);
	close(lockfd);
	info->stop_signal = lism_stop_signals_release(&old_mask);
	return err;
}

/* @pin_path is free for a new instance: nothing there, or an empty directory that is no mount point. */
static int check_pin_path_free(const char *pin_path, struct lism_error *e)
{
	char path[PATH_MAX];
	struct lism_device d;

	if (!lism_pin_join(path, sizeof(path), pin_path, "device") && !access(path, F_OK)) {
		struct lism_instance in;

		if (!lism_instance_open(&in, pin_path)) {
			int unfinished = !lism_device_read(&in, &d) && d.layout == 0;

			lism_instance_close(&in);
			if (unfinished)
				return unfinished_load(pin_path, e);
		}
		lism_fail(e, LISM_EXIT_STATE, -EEXIST, "lism is already loaded at %s", pin_path);
		lism_fail_hint(e, "see it with 'lism status --pin-path %s', remove it with 'lism unload "
			       "--pin-path %s', or replace its programs with 'lism load --upgrade'",
			       pin_path, pin_path);
		return -EEXIST;
	}
	if (!access(pin_path, F_OK) && lism_is_mount_point(pin_path) != 0) {
		lism_fail(e, LISM_EXIT_USAGE, -EBUSY,
			  "--pin-path %s is a mount point; lism needs a directory of its own inside bpffs", pin_path);
		lism_fail_hint(e, "use e.g. %s/lism", pin_path);
		return -EBUSY;
	}
	if (lism_dir_is_empty(pin_path) == 0) {
		lism_fail(e, LISM_EXIT_STATE, -ENOTEMPTY, "--pin-path %s holds pins that are not a lism instance",
			  pin_path);
		lism_fail_hint(e, "choose another --pin-path, or remove what is there");
		return -ENOTEMPTY;
	}
	return 0;
}

int lism_load(const char *pin_path, const struct lism_load_cfg *cfg, struct lism_load_info *info,
	      struct lism_error *e)
{
	struct lism_probe probe = { 0 };
	struct bpf_link *link = NULL;
	struct lism_bpf *skel = NULL;
	int err, cgfd = -1, lockfd = -1, created = 0;
	const char *cgroup = info->cgroup;
	sigset_t old_mask;

	memset(info, 0, sizeof(*info));
	err = lism_require_root(e);
	if (!err)
		err = read_ablate(info, e);
	if (!err)
		err = check_bpffs(pin_path, cfg->mount_bpffs, &info->mounted_bpffs, e);
	if (!err)
		err = find_cgroup(cfg->cgroup, info->cgroup, sizeof(info->cgroup), e);
	if (err)
		return err;
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		err = lism_fail(e, LISM_EXIT_ENV, -errno, "the kernel exposes no BTF (/sys/kernel/btf/vmlinux): %s",
				strerror(errno));
		lism_fail_hint(e, "lism needs a kernel built with CONFIG_DEBUG_INFO_BTF=y (README.md, "
			       "\"Requirements\")");
		return err;
	}
	err = check_pin_path_free(pin_path, e);
	if (!err)
		err = probe_core(&probe, e);
	if (err)
		return err;

	/*
	 * From the first pin to the last, a Ctrl-C or a SIGTERM waits: libbpf
	 * pins the maps before the verifier runs, and a load cut off there
	 * leaves pins without a device (only SIGKILL still can: unload removes
	 * such leftovers).
	 */
	lism_stop_signals_hold(&old_mask);
	cgfd = open(cgroup, O_RDONLY | O_DIRECTORY);
	if (cgfd < 0) {
		err = lism_fail(e, LISM_EXIT_FAIL, -errno, "opening cgroup %s failed: %s", cgroup, strerror(errno));
		goto cleanup;
	}
	if (mkdir(pin_path, 0700) && errno != EEXIST) {
		err = lism_fail(e, LISM_EXIT_FAIL, -errno, "creating --pin-path %s failed: %s", pin_path,
				strerror(errno));
		goto cleanup;
	}
	lockfd = lism_pin_lock(pin_path);
	if (lockfd < 0) {
		err = lism_pin_lock_fail(e, pin_path, lockfd);
		goto cleanup;
	}
	/* Under the lock: it may have been filled since we looked. */
	if (lism_dir_is_empty(pin_path) != 1) {
		err = lism_fail(e, LISM_EXIT_STATE, -ENOTEMPTY, "--pin-path %s is no longer empty", pin_path);
		close(lockfd);
		lockfd = -1;
		goto cleanup;
	}
	chmod(pin_path, 0700);
	created = 1;

	err = open_core(pin_path, cfg->max_dmbs, info->ablated, &skel, e);
	if (!err)
		err = load_core(skel, "loading lism's BPF programs", e);
	if (err)
		goto cleanup;
	err = init_device(skel, pin_path, cfg, cgroup);
	if (!err)
		err = fill_free_slots(skel, cfg->max_dmbs);
	if (!err)
		err = fill_ports(skel, cfg);
	if (!err)
		err = fill_scope(skel, cfg, info);
	if (err) {
		lism_fail(e, LISM_EXIT_FAIL, err, "initialising the maps failed: %s", strerror(-err));
		goto cleanup;
	}
	err = pin_fd(bpf_program__fd(skel->progs.lism_sockops), pin_path, LISM_PIN_PROG_SOCKOPS, 0);
	if (err) {
		lism_fail(e, LISM_EXIT_FAIL, err, "pinning the handshake program failed: %s", strerror(-err));
		goto cleanup;
	}
	/* the optional features before the handshake goes live: the instance is whole from its first SYN */
	start_features(pin_path, cfg->max_dmbs, &probe, info);
	link = bpf_program__attach_cgroup(skel->progs.lism_sockops, cgfd);
	if (!link) {
		err = lism_fail(e, LISM_EXIT_FAIL, -errno, "attaching the sockops program to cgroup %s failed: %s",
				cgroup, strerror(errno));
		lism_fail_hint(e, "another program with exclusive attachment may hold the cgroup");
		goto cleanup;
	}
	err = pin_fd(bpf_link__fd(link), pin_path, LISM_PIN_LINK_SOCKOPS, 0);
	if (err)
		lism_fail(e, LISM_EXIT_FAIL, err, "pinning the cgroup link failed: %s", strerror(-err));

cleanup:
	/* On success the pins hold everything; on failure nothing may stay behind. */
	if (err && link)
		bpf_link__detach(link);
	bpf_link__destroy(link);
	lism_bpf__destroy(skel);
	lism_probe_free(&probe);
	if (err && created)
		lism_pins_remove(pin_path);
	if (lockfd >= 0)
		close(lockfd);
	if (cgfd >= 0)
		close(cgfd);
	info->stop_signal = lism_stop_signals_release(&old_mask);
	return err;
}
