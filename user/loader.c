// SPDX-License-Identifier: GPL-2.0-only
/*
 * lism load / lism unload: probe -> open -> configure -> load -> attach the
 * core, then each optional feature on its own (optional.h), with one cleanup
 * path, and the drain that keeps unload from dropping bytes.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bpf_time.h"
#include "cgroup.h"
#include "device.h"
#include "clock.h"
#include "feature.h"
#include "load_log.h"
#include "loader.h"
#include "lism/sender.h"
#include "log.h"
#include "objects.h"
#include "optional.h"
#include "pins.h"
#include "probe.h"
#include "routes.h"
#include "scope.h"
#include "signals.h"
#include "lism.skel.h"

#define BPFFS_DEFAULT "/sys/fs/bpf"

const void *lism_core_elf(size_t *size)
{
	return lism_bpf__elf_bytes(size);
}

static int check_privileges(void)
{
	if (geteuid() == 0)
		return 0;
	lism_err("must run as root (uid 0 with CAP_BPF, CAP_NET_ADMIN and CAP_PERFMON)");
	lism_hint("run it with sudo, or as the root user");
	return LISM_EXIT_ENV;
}

/* The pin directory must live on bpffs; mount the default one if asked. */
static int check_bpffs(const struct lism_opts *o)
{
	char anc[PATH_MAX];
	int is;

	if (lism_existing_ancestor(o->pin_path, anc, sizeof(anc))) {
		lism_err("cannot inspect --pin-path %s: %s", o->pin_path, strerror(errno));
		return LISM_EXIT_ENV;
	}
	is = lism_is_bpffs(anc);
	if (is == 1)
		return 0;
	if (o->mount_bpffs && !strncmp(o->pin_path, BPFFS_DEFAULT "/", strlen(BPFFS_DEFAULT) + 1) &&
	    !strcmp(anc, BPFFS_DEFAULT)) {
		if (mount("bpf", BPFFS_DEFAULT, "bpf", 0, "mode=0700")) {
			lism_err("mounting bpffs at %s failed: %s", BPFFS_DEFAULT, strerror(errno));
			return LISM_EXIT_ENV;
		}
		printf("lism: mounted bpffs at %s\n", BPFFS_DEFAULT);
		return 0;
	}
	lism_err("--pin-path %s is not on a BPF filesystem (%s is not bpffs)", o->pin_path, anc);
	lism_hint("mount it with 'mount -t bpf bpf %s', or rerun with --mount-bpffs", BPFFS_DEFAULT);
	return LISM_EXIT_ENV;
}

int lism_cmd_mount_bpffs(const struct lism_opts *o)
{
	struct lism_opts m = *o;
	int ret = check_privileges();

	m.mount_bpffs = 1;
	if (!ret)
		ret = check_bpffs(&m);
	if (ret && o->soft) {
		/* an init container: the pod goes on, and lism run says why it cannot load */
		printf("lism: bpffs is not mounted; continuing (--soft): lism run will say so and retry\n");
		return LISM_EXIT_OK;
	}
	return ret;
}

static int find_cgroup(const struct lism_opts *o, char *out, size_t len)
{
	int err, is;

	if (o->cgroup[0]) {
		if (strlen(o->cgroup) >= len)
			return LISM_EXIT_USAGE;
		strcpy(out, o->cgroup);
	} else {
		err = lism_cgroup2_mount("/proc/mounts", out, len);
		if (err) {
			lism_err("no cgroup2 filesystem is mounted (/proc/mounts): %s", strerror(-err));
			lism_hint("mount one with 'mount -t cgroup2 none /sys/fs/cgroup/unified', or pass --cgroup");
			return LISM_EXIT_ENV;
		}
	}
	is = lism_is_cgroup2(out);
	if (is != 1) {
		lism_err("--cgroup %s is not a cgroup2 directory%s%s", out, is < 0 ? ": " : "",
			 is < 0 ? strerror(-is) : "");
		lism_hint("cgroup2 is mounted where /proc/mounts lists type cgroup2");
		return LISM_EXIT_ENV;
	}
	return 0;
}

static int init_device(struct lism_bpf *skel, const struct lism_opts *o, const char *cgroup)
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
	d.capacity = o->max_dmbs;
	d.max_dmbs = o->max_dmbs;
	d.dmb_size = o->dmb_size;
	d.churn_window_ms = o->churn_window_ms;
	d.flags = (o->allow_blocking ? LISM_DEV_F_ALLOW_BLOCKING : 0) |
		  (o->n_include_ports ? LISM_DEV_F_INCLUDE_PORTS : 0) |
		  (o->no_stream_detect ? LISM_DEV_F_NO_STREAM_DETECT : 0) |
		  (o->no_churn_detect ? LISM_DEV_F_NO_CHURN_DETECT : 0) |
		  (o->eager_senders ? LISM_DEV_F_EAGER_SENDERS : 0);
	d.loaded_ns = (__u64)now.tv_sec * 1000000000ull + (__u64)now.tv_nsec;
	err = lism_pin_map_id(o->pin_path, "socks", &d.socks_id); /* libbpf pinned it at load */
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

static int fill_ports(struct lism_bpf *skel, const struct lism_opts *o)
{
	int err = 0;

	for (int i = 0; i < o->n_exclude_ports && !err; i++)
		err = set_port_flag(skel, o->exclude_ports[i], LISM_PORT_EXCLUDE);
	for (int i = 0; i < o->n_include_ports && !err; i++)
		err = set_port_flag(skel, o->include_ports[i], LISM_PORT_INCLUDE);
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

static int pin_prog(void *p, const char *path)
{
	return bpf_program__pin(p, path);
}

static int pin_link(void *l, const char *path)
{
	return bpf_link__pin(l, path);
}

/*
 * Pin @obj as @dir/@name.  @replace: over the pin of the instance being
 * upgraded, the old one gone first (pins cannot be overwritten).
 */
static int pin_at(const char *dir, const char *name, int (*pin)(void *, const char *), void *obj,
		  int replace)
{
	char path[PATH_MAX];
	int err = lism_pin_join(path, sizeof(path), dir, name);

	if (err)
		return err;
	if (replace && unlink(path) && errno != ENOENT)
		return -errno;
	return pin(obj, path);
}

/* The core program's pin (the link pins itself). */
static int pin_programs(struct lism_bpf *skel, const char *dir, int replace)
{
	int err = pin_at(dir, LISM_PIN_PROG_SOCKOPS, pin_prog, skel->progs.lism_sockops, replace);

	if (err)
		lism_err("pinning the handshake program failed: %s", strerror(-err));
	return err;
}

/* Before load: the token table and everything indexed like it have one entry per DMB. */
static void configure_object(struct lism_bpf *skel, __u32 entries)
{
	bpf_map__set_max_entries(skel->maps.dmbs, entries);
	bpf_map__set_max_entries(skel->maps.dmb_owner, entries);
	bpf_map__set_max_entries(skel->maps.dmb_free, entries);
	bpf_map__set_max_entries(skel->maps.shortcut, entries);
	bpf_map__set_max_entries(skel->maps.senders, entries);
	bpf_map__set_max_entries(skel->maps.sender_queue, entries);
	bpf_map__set_max_entries(skel->maps.sender_leaves, entries);
	skel->rodata->lism_test_reject_handshake = lism_test_reject(LISM_F_HANDSHAKE);
}

/*
 * What the core needs and this kernel lacks, said: LISM_EXIT_OK, or the
 * exit code.  The optional features' verdicts come from the same probe.
 */
static int probe_core(struct lism_probe *p)
{
	char missing[1024];
	int err = lism_probe_run(p), bad = 0;

	if (err) {
		lism_err("probing the kernel failed: %s", strerror(-err));
		return LISM_EXIT_FAIL;
	}
	for (int f = 0; f < LISM_F_MAX; f++) {
		const struct lism_feature_info *fi = lism_feature_info(f);

		if (fi->core && lism_probe_missing(p, f, missing, sizeof(missing))) {
			lism_err("this kernel lacks what %s (%s, core) needs: %s", fi->title, fi->name, missing);
			bad = 1;
		}
	}
	if (!bad)
		return LISM_EXIT_OK;
	lism_hint("'lism probe' lists every kernel feature lism uses and which of its parts each one "
		  "enables; lism needs BTF, sockops, sk_msg and sockmap (CONFIG_BPF_STREAM_PARSER)");
	lism_probe_free(p);
	return LISM_EXIT_ENV;
}

/*
 * Load the core object.  A refusal is said in a few lines: the program,
 * the verifier's last two lines, the kernel, where the whole log is.
 */
static int load_core(struct lism_bpf *skel, const char *what)
{
	struct lism_load_log log;
	struct lism_refusal r;
	int err = lism_load_log_begin(&log), f;

	if (err) {
		lism_err("%s: keeping libbpf's log failed: %s", what, strerror(-err));
		return err;
	}
	err = lism_bpf__load(skel);
	lism_load_log_end(&log);
	if (err) {
		lism_load_log_refusal(&log, &r);
		f = r.prog[0] ? lism_feature_of_program(r.prog) : -1;
		if (r.verifier)
			lism_err("%s: the verifier refused %s, a core program (%s), so lism cannot load", what,
				 r.prog, f >= 0 ? lism_feature_info(f)->title : "core");
		else
			lism_err("%s failed%s%s: %s", what, r.prog[0] ? " at " : "", r.prog, strerror(-err));
		lism_refusal_print(stderr, &r);
		lism_hint("'lism probe' shows what this kernel lacks and which of lism's programs its verifier "
			  "refuses; if it lacks nothing, this kernel's verifier differs from the ones lism is "
			  "tested on: report the log with 'lism version' and the kernel line above");
	}
	lism_load_log_free(&log);
	return err;
}

/* The features besides the core: the probed ones, then the optional programs (optional.h). */
static void start_features(const char *pin_path, const struct lism_probe *p,
			   struct lism_feature_state st[LISM_F_MAX])
{
	memset(st, 0, sizeof(*st) * LISM_F_MAX);
	lism_feature_on(&st[LISM_F_HANDSHAKE]);
	lism_probed_features(p, st);
	lism_optional_load(pin_path, p, st);
	if (lism_features_write(pin_path, st))
		lism_err("warning: recording which features run failed: status will not say");
}

/* One line per feature that does not run (status shows them too). */
static void say_features(const struct lism_feature_state st[LISM_F_MAX])
{
	char line[1024];

	for (int f = 0; f < LISM_F_MAX; f++)
		if (!lism_feature_enabled(&st[f])) {
			lism_feature_off_line(f, &st[f], line, sizeof(line));
			printf("lism: note: %s\n", line);
		}
}

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

/*
 * From the first pin to the last, a Ctrl-C or a SIGTERM waits: libbpf pins
 * the maps before the verifier runs, and a load cut off there leaves pins
 * without a device (only SIGKILL still can: unload removes such leftovers);
 * an upgrade cut off between its link switch and its pins leaves a mix.
 */
static void stop_signals_hold(sigset_t *old)
{
	sigset_t stop;

	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	sigaddset(&stop, SIGQUIT);
	sigprocmask(SIG_BLOCK, &stop, old);
}

/*
 * A stop signal that came meanwhile ends the command now that it is whole:
 * taken here, said, and the command's result returned (its instance is
 * there, or not, as it says).  One the caller blocked itself (lism run's
 * signalfd) stays pending for it.
 */
static void stop_signals_release(const sigset_t *old, const char *what)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
	struct timespec now = { 0, 0 };
	sigset_t pending, take;

	sigemptyset(&take);
	if (!sigpending(&pending))
		for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
			if (sigismember(&pending, sigs[i]) && !sigismember(old, sigs[i]))
				sigaddset(&take, sigs[i]);
	for (int sig; (sig = sigtimedwait(&take, NULL, &now)) > 0;)
		fprintf(stderr, "lism: %s arrived during the %s, which finished first\n", strsignal(sig), what);
	fflush(stdout);
	sigprocmask(SIG_SETMASK, old, NULL);
}

/*
 * lism load --upgrade: new programs over a running instance of the same
 * layout.  The maps are the pinned ones (libbpf reuses them), so state,
 * GID, settings and every connection stay.  The cgroup link switches to the
 * new handshake program atomically; the senders map gets the new data-path
 * program for sockets that join it from now on, while sockets already in it
 * keep the one they joined with (it works on the same maps).
 */
static int upgrade(const struct lism_opts *o)
{
	struct lism_feature_state features[LISM_F_MAX];
	struct lism_bpf *skel = NULL;
	struct lism_probe probe = { 0 };
	struct lism_instance in;
	struct lism_device d;
	char path[PATH_MAX];
	struct bpf_map *map;
	sigset_t old_mask;
	int err, ret = LISM_EXIT_FAIL, lockfd = -1, linkfd = -1;

	err = lism_instance_open(&in, o->pin_path);
	if (!err)
		err = lism_device_read(&in, &d);
	lism_instance_close(&in);
	if (err || d.layout != LISM_LAYOUT_VERSION) {
		lism_err("cannot upgrade %s in place: its layout is not this lism's (%u)", o->pin_path,
			 LISM_LAYOUT_VERSION);
		lism_hint("unload it with the lism that loaded it, then load this one");
		return LISM_EXIT_STATE;
	}
	ret = probe_core(&probe);
	if (ret)
		return ret;
	ret = LISM_EXIT_FAIL;
	lockfd = lism_pin_lock(o->pin_path);
	if (lockfd < 0) {
		lism_pin_lock_failed(o->pin_path, lockfd);
		lism_probe_free(&probe);
		return LISM_EXIT_STATE;
	}
	stop_signals_hold(&old_mask);
	skel = lism_bpf__open();
	if (!skel) {
		lism_err("opening the BPF object failed: %s", strerror(errno));
		goto out;
	}
	configure_object(skel, d.capacity);
	bpf_object__for_each_map(map, skel->obj) {
		if (bpf_map__is_internal(map))
			continue;
		err = lism_pin_join(path, sizeof(path), o->pin_path, bpf_map__name(map));
		if (!err)
			err = bpf_map__set_pin_path(map, path);
		if (err) {
			lism_err("setting the pin path of map %s failed: %s", bpf_map__name(map),
				 strerror(-err));
			goto out;
		}
	}
	/* reuses every pinned map, or fails if one differs (then: unload, load) */
	if (load_core(skel, "loading the new programs over the pinned maps"))
		goto out;
	/*
	 * The new data path and the other optional programs before the link
	 * switch, as at a load: the new handshake makes members from its first
	 * callback (and finds LISM_DEV_F_DATA_PATH as the new build leaves it).
	 */
	start_features(o->pin_path, &probe, features);
	if (lism_pin_join(path, sizeof(path), o->pin_path, LISM_PIN_LINK_SOCKOPS))
		goto out;
	linkfd = bpf_obj_get(path);
	if (linkfd < 0 || bpf_link_update(linkfd, bpf_program__fd(skel->progs.lism_sockops), NULL)) {
		lism_err("switching the cgroup link to the new sockops program failed: %s",
			 strerror(errno));
		goto out;
	}
	if (pin_programs(skel, o->pin_path, 1))
		goto out;
	printf("lism: upgraded the programs at %s (state, settings and connections kept)\n",
	       o->pin_path);
	say_features(features);
	ret = LISM_EXIT_OK;
out:
	if (linkfd >= 0)
		close(linkfd);
	lism_bpf__destroy(skel);
	lism_probe_free(&probe);
	close(lockfd);
	stop_signals_release(&old_mask, "upgrade");
	return ret;
}

int lism_upgrade(const struct lism_opts *o)
{
	int ret = check_privileges();

	return ret ? ret : upgrade(o);
}

int lism_cmd_load(const struct lism_opts *o)
{
	struct lism_feature_state features[LISM_F_MAX];
	struct lism_probe probe = { 0 };
	struct bpf_link *link = NULL;
	struct lism_bpf *skel = NULL;
	char cgroup[PATH_MAX], path[PATH_MAX];
	int err, ret = LISM_EXIT_FAIL, cgfd = -1, lockfd = -1, created = 0, n_scope;
	sigset_t old_mask;
	struct bpf_map *map;

	ret = check_privileges();
	if (!ret)
		ret = check_bpffs(o);
	if (!ret)
		ret = find_cgroup(o, cgroup, sizeof(cgroup));
	if (ret)
		return ret;
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		lism_err("the kernel exposes no BTF (/sys/kernel/btf/vmlinux): %s", strerror(errno));
		lism_hint("lism needs a kernel built with CONFIG_DEBUG_INFO_BTF=y (>= 5.10)");
		return LISM_EXIT_ENV;
	}
	if (!lism_pin_join(path, sizeof(path), o->pin_path, "device") && !access(path, F_OK)) {
		struct lism_instance in;
		struct lism_device d;

		if (!lism_instance_open(&in, o->pin_path)) {
			int unfinished = !lism_device_read(&in, &d) && d.layout == 0;

			lism_instance_close(&in);
			if (unfinished) {
				lism_err("%s holds the pins of a load that did not finish (or is still running)",
					 o->pin_path);
				lism_hint("remove them with 'lism unload --pin-path %s', then load", o->pin_path);
				return LISM_EXIT_STATE;
			}
		}
		if (o->upgrade)
			return upgrade(o);
		lism_err("lism is already loaded at %s", o->pin_path);
		lism_hint("see it with 'lism status --pin-path %s', remove it with 'lism unload --pin-path %s',"
			  " or replace its programs with 'lism load --upgrade'",
			  o->pin_path, o->pin_path);
		return LISM_EXIT_STATE;
	}
	if (o->upgrade) {
		lism_err("--upgrade: nothing is loaded at %s", o->pin_path);
		return LISM_EXIT_STATE;
	}
	if (!access(o->pin_path, F_OK) && lism_is_mount_point(o->pin_path) != 0) {
		lism_err("--pin-path %s is a mount point; lism needs a directory of its own inside bpffs",
			 o->pin_path);
		lism_hint("use e.g. %s/lism", o->pin_path);
		return LISM_EXIT_USAGE;
	}
	if (lism_dir_is_empty(o->pin_path) == 0) {
		lism_err("--pin-path %s holds pins that are not a lism instance", o->pin_path);
		lism_hint("choose another --pin-path, or remove what is there");
		return LISM_EXIT_STATE;
	}
	ret = probe_core(&probe);
	if (ret)
		return ret;

	ret = LISM_EXIT_FAIL;
	stop_signals_hold(&old_mask);
	cgfd = open(cgroup, O_RDONLY | O_DIRECTORY);
	if (cgfd < 0) {
		lism_err("opening cgroup %s failed: %s", cgroup, strerror(errno));
		goto cleanup;
	}
	if (mkdir(o->pin_path, 0700) && errno != EEXIST) {
		lism_err("creating --pin-path %s failed: %s", o->pin_path, strerror(errno));
		goto cleanup;
	}
	lockfd = lism_pin_lock(o->pin_path);
	if (lockfd < 0) {
		lism_pin_lock_failed(o->pin_path, lockfd);
		ret = LISM_EXIT_STATE;
		goto cleanup;
	}
	/* Under the lock: it may have been filled since we looked. */
	if (lism_dir_is_empty(o->pin_path) != 1) {
		lism_err("--pin-path %s is no longer empty", o->pin_path);
		ret = LISM_EXIT_STATE;
		close(lockfd);
		lockfd = -1;
		goto cleanup;
	}
	chmod(o->pin_path, 0700);
	created = 1;

	skel = lism_bpf__open();
	if (!skel) {
		lism_err("opening the BPF object failed: %s", strerror(errno));
		goto cleanup;
	}
	configure_object(skel, o->max_dmbs);
	bpf_object__for_each_map(map, skel->obj) {
		if (bpf_map__is_internal(map))
			continue; /* constants, not state */
		err = lism_pin_join(path, sizeof(path), o->pin_path, bpf_map__name(map));
		if (!err)
			err = bpf_map__set_pin_path(map, path);
		if (err) {
			lism_err("setting the pin path of map %s failed: %s", bpf_map__name(map),
				 strerror(-err));
			goto cleanup;
		}
	}
	if (load_core(skel, "loading lism's BPF programs"))
		goto cleanup;
	err = init_device(skel, o, cgroup);
	if (!err)
		err = fill_free_slots(skel, o->max_dmbs);
	if (!err)
		err = fill_ports(skel, o);
	if (!err)
		err = lism_scope_fill(bpf_map__fd(skel->maps.scope), o->local_cidrs, o->n_local_cidrs,
				      o->exclude_cidrs, o->n_exclude_cidrs, !o->local_routes, &n_scope);
	if (!err && o->local_routes) {
		/* once, at load: lism run follows them (routes.h) */
		int n = lism_routes_fill_once(bpf_map__fd(skel->maps.scope));

		if (n == -ENOSPC) /* what fits is in; the rest stays out of scope, never wider */
			lism_err("warning: the scope map is full: some of this node's routes stay out of scope");
		else if (n < 0)
			err = n;
		else
			n_scope += n;
	}
	if (err) {
		lism_err("initialising the maps failed: %s", strerror(-err));
		goto cleanup;
	}
	if (pin_programs(skel, o->pin_path, 0))
		goto cleanup;
	/* the optional features before the handshake goes live: the instance is whole from its first SYN */
	start_features(o->pin_path, &probe, features);
	link = bpf_program__attach_cgroup(skel->progs.lism_sockops, cgfd);
	if (!link) {
		lism_err("attaching the sockops program to cgroup %s failed: %s", cgroup, strerror(errno));
		lism_hint("another program with exclusive attachment may hold the cgroup");
		goto cleanup;
	}
	err = pin_at(o->pin_path, LISM_PIN_LINK_SOCKOPS, pin_link, link, 0);
	if (err) {
		lism_err("pinning the cgroup link failed: %s", strerror(-err));
		goto cleanup;
	}
	printf("lism: loaded at %s, attached to cgroup %s (%u DMBs of %u KiB, %d scope entries)\n",
	       o->pin_path, cgroup, o->max_dmbs, o->dmb_size >> 10, n_scope);
	say_features(features);
	note_send_limits();
	lism_bpf_stats_note(stdout, lism_bpf_stats_sysctl());
	ret = LISM_EXIT_OK;

cleanup:
	/* On success the pins hold everything; on failure nothing may stay behind. */
	if (ret != LISM_EXIT_OK && link)
		bpf_link__detach(link);
	bpf_link__destroy(link);
	lism_bpf__destroy(skel);
	lism_probe_free(&probe);
	if (ret != LISM_EXIT_OK && created)
		lism_pins_remove(o->pin_path);
	if (lockfd >= 0)
		close(lockfd);
	if (cgfd >= 0)
		close(cgfd);
	stop_signals_release(&old_mask, "load");
	return ret;
}

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

int lism_cmd_unload(const struct lism_opts *o)
{
	struct lism_instance in;
	struct lism_snapshot s;
	struct lism_device d;
	double deadline, next_note;
	long long busy;
	int err, ret, lockfd = -1;

	ret = check_privileges();
	if (ret)
		return ret;
	err = lism_instance_open(&in, o->pin_path);
	if (err) {
		lism_err("no lism instance at %s: %s", o->pin_path, strerror(-err));
		lism_hint("see 'lism status --pin-path DIR' for where it was loaded");
		return LISM_EXIT_STATE;
	}
	lockfd = lism_pin_lock(o->pin_path);
	if (lockfd < 0) {
		lism_pin_lock_failed(o->pin_path, lockfd);
		lism_instance_close(&in);
		return LISM_EXIT_STATE;
	}
	err = lism_device_read(&in, &d);
	if (!err && d.layout == 0) {
		/*
		 * A load killed before it wrote the device (SIGKILL while the
		 * verifier ran): its maps are pinned, nothing was attached through
		 * a pin, no socket ever used them.
		 */
		printf("lism: %s holds the pins of a load that did not finish: removing them\n", o->pin_path);
		goto remove;
	}
	if (err || d.layout != LISM_LAYOUT_VERSION) {
		lism_err("the pins at %s are not of this lism's layout (found %u, want %u)", o->pin_path,
			 err ? 0 : d.layout, LISM_LAYOUT_VERSION);
		lism_hint("unload it with the lism build that loaded it");
		ret = LISM_EXIT_STATE;
		goto out;
	}
	/*
	 * New connections stay on TCP from now on; closes are still tracked.
	 * Draining, not off by choice: if the wait times out, a daemon that
	 * adopts the instance switches it on again (a pod's successor).
	 */
	if (d.active)
		d.flags |= LISM_DEV_F_DRAINING;
	d.active = 0;
	err = lism_device_write(&in, &d);
	if (err) {
		lism_err("switching the device off failed: %s", strerror(-err));
		ret = LISM_EXIT_FAIL;
		goto out;
	}
	/*
	 * Sockets leave the shortcut map when they close.  Removing the map
	 * earlier would make the kernel drop whatever they have not read yet.
	 */
	deadline = lism_mono_s() + o->timeout_s;
	next_note = lism_mono_s() + 2;
	for (;;) {
		err = lism_snapshot_read(&in, &s);
		if (err) {
			lism_err("reading the instance failed: %s", strerror(-err));
			ret = LISM_EXIT_FAIL;
			goto out;
		}
		err = lism_shortcut_map_count(&in, s.dev.capacity + 1, &s.shortcut_sockets);
		if (err) {
			lism_err("reading the shortcut map failed: %s", strerror(-err));
			ret = LISM_EXIT_FAIL;
			goto out;
		}
		/* pairs without a data path have nothing in the maps: their entries go at their close */
		busy = s.usage.dmbs_in_use - (long long)s.pair_only;
		if (!s.shortcut_sockets && busy <= 0)
			break;
		if (lism_mono_s() >= deadline) {
			if (o->force) {
				fprintf(stderr,
					"lism: --force: removing with %u sockets still in the shortcut; "
					"bytes they have not read yet are lost\n",
					s.shortcut_sockets);
				break;
			}
			lism_err("%u sockets still use the shortcut (%lld DMBs in use) after %us; lism stays "
				 "loaded but inactive (new connections use TCP)",
				 s.shortcut_sockets, busy, o->timeout_s);
			lism_hint("rerun 'lism unload' once they close, raise --timeout, or use --force "
				  "(their unread bytes would be lost)");
			ret = LISM_EXIT_BUSY;
			goto out;
		}
		if (lism_mono_s() >= next_note) {
			printf("lism: waiting for %u sockets to leave the shortcut (%lld DMBs in use)...\n",
			       s.shortcut_sockets, busy);
			fflush(stdout);
			next_note = lism_mono_s() + 5;
		}
		usleep(50 * 1000);
	}
remove:
	err = remove_instance(&in);
	if (err) {
		lism_err("removing %s failed: %s", o->pin_path, strerror(-err));
		ret = LISM_EXIT_FAIL;
		goto out;
	}
	printf("lism: unloaded from %s\n", o->pin_path);
	ret = LISM_EXIT_OK;
out:
	lism_instance_close(&in);
	if (lockfd >= 0)
		close(lockfd);
	return ret;
}

/*
 * lism unload --stay, a cleanup DaemonSet's container: unload (nothing
 * pinned counts as done), then wait for SIGTERM, so the pod stays Running
 * and Ready once its node is clean.  A failed unload exits with its code
 * and the kubelet's restarts try again.
 */
int lism_cmd_unload_stay(const struct lism_opts *o)
{
	struct signalfd_siginfo si;
	int ret, sfd, empty = lism_dir_is_empty(o->pin_path);

	if (empty == 1 || empty == -ENOENT) {
		rmdir(o->pin_path); /* an empty directory is no instance: nothing to wait for */
		printf("lism: nothing is pinned at %s: nothing to remove\n", o->pin_path);
		ret = LISM_EXIT_OK;
	} else {
		ret = lism_cmd_unload(o);
	}
	if (ret)
		return ret;
	sfd = lism_stop_signals_fd();
	if (sfd < 0) {
		lism_err("signalfd failed: %s", strerror(-sfd));
		return LISM_EXIT_FAIL;
	}
	printf("lism: done; staying until stopped (--stay)\n");
	fflush(stdout);
	while (read(sfd, &si, sizeof(si)) < 0 && errno == EINTR)
		;
	close(sfd);
	return LISM_EXIT_OK;
}
