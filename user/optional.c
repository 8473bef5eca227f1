// SPDX-License-Identifier: GPL-2.0-only
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device.h"
#include "feature.h"
#include "load_log.h"
#include "lism/rmem.h"
#include "objects.h"
#include "optional.h"
#include "pins.h"
#include "probe.h"

/*
 * Pin @fd (a program or link) as @name, over an older pin of that name:
 * pinned beside it first, then renamed over it, so the name never goes
 * missing (a lism conns during an upgrade finds the old or the new one).
 */
static int pin_over(int fd, const char *dir, const char *name)
{
	char path[PATH_MAX], next[PATH_MAX + 8];
	int err = lism_pin_join(path, sizeof(path), dir, name);

	if (err)
		return err;
	snprintf(next, sizeof(next), "%s_next", path); /* bpffs names take no dot */
	unlink(next);
	if (bpf_obj_pin(fd, next))
		return -errno;
	if (rename(next, path)) {
		err = -errno;
		unlink(next);
		return err;
	}
	return 0;
}

static void unpin(const char *dir, const char *name)
{
	char path[PATH_MAX];

	if (!lism_pin_join(path, sizeof(path), dir, name))
		unlink(path);
}

/* Switch the handshake's joins on or off (LISM_DEV_F_DATA_PATH). */
static int data_path_flag(const char *pin_path, int on)
{
	struct lism_instance in;
	struct lism_device d;
	int err = lism_instance_open(&in, pin_path);

	if (err)
		return err;
	err = lism_device_read(&in, &d);
	if (!err && !!(d.flags & LISM_DEV_F_DATA_PATH) != !!on) {
		d.flags = on ? d.flags | LISM_DEV_F_DATA_PATH : d.flags & ~LISM_DEV_F_DATA_PATH;
		err = lism_device_write(&in, &d);
	}
	lism_instance_close(&in);
	return err;
}

/* The data path counts socket memory in the kernel's pages, whose size no BTF names (rmem.h). */
static int shortcut_prepare(struct bpf_object *obj, const char *pin_path)
{
	__u16 shift = lism_rmem_page_shift(sysconf(_SC_PAGESIZE));

	(void)pin_path;
	return lism_object_set_rodata(obj, "lism_page_shift", &shift, sizeof(shift));
}

/*
 * The data path: lism_msg on the senders map (a socket joining it takes the
 * map's program with it; those already in keep theirs), the sender join
 * timer's callback set by lism_sender_start (bpf/sender.bpf.h), then the
 * device flag that lets the handshake make members.  At an upgrade the new
 * callback replaces the old one in place (bpf_timer_set_callback on a live
 * timer), so nothing queued is dropped.
 */
static int shortcut_start(struct bpf_object *obj, struct bpf_program *prog, const char *pin_path, char *why,
			  size_t len)
{
	struct bpf_program *starter = bpf_object__find_program_by_name(obj, "lism_sender_start");
	int senders = lism_pin_open(pin_path, "senders"), err = 0, attached = 0;
	__u32 retval = 0;

	if (senders < 0 || !starter) {
		err = senders < 0 ? senders : -ENOENT;
		snprintf(why, len, "opening the senders map failed: %s", strerror(-err));
		goto out;
	}
	if (bpf_prog_attach(bpf_program__fd(prog), senders, BPF_SK_MSG_VERDICT, 0)) {
		err = -errno;
		snprintf(why, len, "attaching lism_msg to the senders map failed: %s", strerror(-err));
		goto out;
	}
	attached = 1;
	err = lism_prog_run_once(bpf_program__fd(starter), &retval);
	if (err || retval != 1) {
		snprintf(why, len, "starting the sender join timer failed: %s",
			 err ? strerror(-err) : "the kernel refused the timer");
		err = err ? err : -EINVAL;
		goto out;
	}
	err = pin_over(bpf_program__fd(starter), pin_path, LISM_PIN_PROG_SENDER);
	if (!err) /* here, not after: the one attached is the one pinned, whatever fails next */
		err = pin_over(bpf_program__fd(prog), pin_path, LISM_PIN_PROG_MSG);
	if (err) {
		snprintf(why, len, "pinning the data path's programs failed: %s", strerror(-err));
		goto out;
	}
	err = data_path_flag(pin_path, 1);
	if (err)
		snprintf(why, len, "switching the handshake's joins on failed: %s", strerror(-err));
out:
	/* a failure after the attach takes this program off again (remove detaches the pinned one) */
	if (err && attached)
		bpf_prog_detach2(bpf_program__fd(prog), senders, BPF_SK_MSG_VERDICT);
	if (senders >= 0)
		close(senders);
	return err;
}

/*
 * No new member joins; lism_msg leaves the senders map (its members keep
 * the program they joined with, and the sender join timer its callback:
 * both work on the same maps until their connections end).
 */
static void shortcut_remove(const char *pin_path)
{
	int prog = lism_pin_open(pin_path, LISM_PIN_PROG_MSG), senders = lism_pin_open(pin_path, "senders");

	data_path_flag(pin_path, 0);
	if (prog >= 0 && senders >= 0)
		bpf_prog_detach2(prog, senders, BPF_SK_MSG_VERDICT);
	if (prog >= 0)
		close(prog);
	if (senders >= 0)
		close(senders);
	unpin(pin_path, LISM_PIN_PROG_SENDER);
}

/* lism conns: the iterator finds each socket's state by the socks map's id. */
static int views_prepare(struct bpf_object *obj, const char *pin_path)
{
	__u32 id;
	int err = lism_pin_map_id(pin_path, "socks", &id);

	return err ? err : lism_object_set_rodata(obj, "lism_socks_map_id", &id, sizeof(id));
}

/*
 * The backstop: a tracing link cannot switch programs, so the new one is
 * attached beside the old, then the old one goes with its pin.
 */
static int backstop_start(struct bpf_object *obj, struct bpf_program *prog, const char *pin_path, char *why,
			  size_t len)
{
	struct bpf_link *link = bpf_program__attach_trace(prog);
	int err;

	(void)obj; /* one program: the one given */
	if (!link) {
		err = -errno;
		snprintf(why, len, "attaching lism_destroy to tcp_destroy_sock failed: %s (the kernel needs "
			 "BPF trampolines)", strerror(-err));
		return err;
	}
	err = pin_over(bpf_link__fd(link), pin_path, LISM_PIN_LINK_DESTROY);
	if (err)
		snprintf(why, len, "pinning the backstop's link failed: %s", strerror(-err));
	bpf_link__destroy(link); /* the pin keeps it attached */
	return err;
}

static void backstop_remove(const char *pin_path)
{
	unpin(pin_path, LISM_PIN_LINK_DESTROY); /* its last reference: detached */
}

/* Cancel the sweep's timer: a map update frees the timer of the value it replaces. */
static int sweep_cancel(const char *pin_path)
{
	int fd = lism_pin_open(pin_path, "sweep"), err = 0;
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info), zero = 0;
	void *blank;

	if (fd < 0)
		return fd;
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		err = -errno;
	blank = err ? NULL : calloc(1, info.value_size);
	if (!err && !blank)
		err = -ENOMEM;
	if (!err && bpf_map_update_elem(fd, &zero, blank, BPF_ANY))
		err = -errno;
	free(blank);
	close(fd);
	return err;
}

/*
 * The sweep's timer runs the callback of the program that set it up: an
 * old one (an upgrade's) is cancelled, then the new program sets it up and
 * starts it at once, so entries in use are swept without waiting for a
 * connect().  (An old handshake still finishing a connect() on another CPU
 * may start it in between: it then has no callback and fails, and the next
 * connect() starts it.)
 */
static int sweep_start(struct bpf_object *obj, struct bpf_program *prog, const char *pin_path, char *why,
		       size_t len)
{
	__u32 retval = 0;
	int err = sweep_cancel(pin_path); /* a fresh table's timer was never set up: nothing to cancel */

	(void)obj; /* one program: the one given */
	if (err) {
		snprintf(why, len, "cancelling the old sweep failed: %s", strerror(-err));
		return err;
	}
	err = lism_prog_run_once(bpf_program__fd(prog), &retval);
	if (err || retval != 1) {
		snprintf(why, len, "starting the sweep's timer failed: %s",
			 err ? strerror(-err) : "the kernel refused the timer");
		return err ? err : -EINVAL;
	}
	return 0;
}

static void sweep_remove(const char *pin_path)
{
	sweep_cancel(pin_path);
}

/*
 * The cgroup the instance's programs are attached to, opened: the device
 * map's path, which is cut (and says so with "...") past its 255 bytes.
 */
static int instance_cgroup(const char *pin_path)
{
	struct lism_instance in;
	struct lism_device d;
	int err = lism_instance_open(&in, pin_path), fd;
	size_t n;

	if (err)
		return err;
	err = lism_device_read(&in, &d);
	lism_instance_close(&in);
	if (err)
		return err;
	d.cgroup[sizeof(d.cgroup) - 1] = '\0';
	n = strlen(d.cgroup);
	if (n >= 3 && !strcmp(d.cgroup + n - 3, "..."))
		return -ENAMETOOLONG;
	fd = open(d.cgroup, O_RDONLY | O_DIRECTORY);
	return fd < 0 ? -errno : fd;
}

/*
 * @prog on the instance's cgroup through the link pinned as @link_pin: the
 * pinned link takes the new program in place (an upgrade), or a new link
 * is made and pinned (a load).
 */
static int attach_cgroup_pinned(struct bpf_program *prog, int *cgfd, const char *pin_path, const char *link_pin)
{
	int old = lism_pin_open(pin_path, link_pin), err;
	struct bpf_link *link;

	if (old >= 0) {
		err = bpf_link_update(old, bpf_program__fd(prog), NULL) ? -errno : 0;
		close(old);
		return err;
	}
	if (*cgfd < 0)
		*cgfd = instance_cgroup(pin_path);
	if (*cgfd < 0)
		return *cgfd;
	link = bpf_program__attach_cgroup(prog, *cgfd);
	if (!link)
		return -errno;
	err = pin_over(bpf_link__fd(link), pin_path, link_pin);
	if (err)
		bpf_link__detach(link);
	bpf_link__destroy(link); /* the pin keeps it attached */
	return err;
}

/* lism exec's socket options: both programs on the instance's cgroup, each by a link of its own. */
static int exec_start(struct bpf_object *obj, struct bpf_program *prog, const char *pin_path, char *why,
		      size_t len)
{
	struct bpf_program *set = bpf_object__find_program_by_name(obj, "lism_exec_set");
	int cgfd = -1, err = set ? 0 : -ENOENT;

	if (!err)
		err = attach_cgroup_pinned(prog, &cgfd, pin_path, LISM_PIN_LINK_EXEC_GET);
	if (!err)
		err = attach_cgroup_pinned(set, &cgfd, pin_path, LISM_PIN_LINK_EXEC_SET);
	if (!err)
		err = pin_over(bpf_program__fd(set), pin_path, LISM_PIN_PROG_EXEC_SET);
	if (err == -ENAMETOOLONG)
		snprintf(why, len, "the instance's cgroup path is longer than the device map keeps (255 bytes)");
	else if (err)
		snprintf(why, len, "attaching lism exec's sockopt programs to the instance's cgroup failed: %s",
			 strerror(-err));
	if (cgfd >= 0)
		close(cgfd);
	return err;
}

static void exec_remove(const char *pin_path)
{
	unpin(pin_path, LISM_PIN_LINK_EXEC_SET); /* their last references: detached */
	unpin(pin_path, LISM_PIN_LINK_EXEC_GET);
	unpin(pin_path, LISM_PIN_PROG_EXEC_SET);
}

/*
 * Each optional feature: its object and program, the program's pin, and
 * what else it sets up beside the pin (NULL: nothing) and takes down again.
 */
static const struct optional {
	enum lism_feature feature;
	const char *object;
	const char *prog;
	const char *pin;
	int (*prepare)(struct bpf_object *obj, const char *pin_path);
	int (*start)(struct bpf_object *obj, struct bpf_program *prog, const char *pin_path, char *why,
		     size_t len);
	void (*remove)(const char *pin_path);
} optionals[] = {
	{ LISM_F_DATA_PATH, "shortcut", "lism_msg", LISM_PIN_PROG_MSG, shortcut_prepare, shortcut_start,
	  shortcut_remove },
	{ LISM_F_CONNS, "views", "lism_iter_socks", LISM_PIN_PROG_ITER, views_prepare, NULL, NULL },
	{ LISM_F_BACKSTOP, "backstop", "lism_destroy", LISM_PIN_PROG_DESTROY, NULL, backstop_start,
	  backstop_remove },
	{ LISM_F_SWEEP, "sweep", "lism_sweep_start", LISM_PIN_PROG_SWEEP, NULL, sweep_start, sweep_remove },
	{ LISM_F_EXEC, "exec", "lism_exec_get", LISM_PIN_PROG_EXEC_GET, NULL, exec_start, exec_remove },
};

/* Take down what a failed or replaced optional feature set up; what is not there is fine. */
static void remove_one(const struct optional *op, const char *pin_path)
{
	if (op->remove)
		op->remove(pin_path);
	unpin(pin_path, op->pin);
}

/* One optional feature: 0 when it runs, else @st says why not. */
static int load_one(const struct optional *op, const char *pin_path, __u32 entries, __u32 ablate,
		    struct lism_feature_state *st)
{
	struct lism_load_log log = { 0 };
	struct bpf_object *obj = NULL;
	struct bpf_program *prog;
	char why[LISM_FEATURE_WHY_LEN] = "";
	__u8 reject = (__u8)lism_test_reject(op->feature);
	int err;

	obj = lism_object_open(lism_object_find(op->object), pin_path);
	if (!obj) {
		err = -errno;
		lism_feature_off(st, LISM_FC_ATTACH, "opening its object failed: %s", strerror(-err));
		return err;
	}
	err = lism_object_configure(obj, entries, ablate);
	if (!err && op->prepare)
		err = op->prepare(obj, pin_path);
	if (!err)
		err = lism_object_set_rodata(obj, "lism_test_reject", &reject, sizeof(reject));
	if (err) {
		lism_feature_off(st, LISM_FC_ATTACH, "preparing its object over the pins failed: %s",
				 strerror(-err));
		goto out;
	}
	err = lism_load_log_begin(&log);
	if (!err) {
		err = bpf_object__load(obj);
		lism_load_log_end(&log);
	}
	if (err) {
		struct lism_refusal r;
		char where[PATH_MAX + 16] = "";
		size_t room;

		lism_load_log_refusal(&log, &r);
		if (r.path[0])
			snprintf(where, sizeof(where), " (log: %s)", r.path);
		/* the verifier's line is cut, never the log's path */
		room = strlen(where) < sizeof(why) / 2 ? sizeof(why) - strlen(where) : sizeof(why) / 2;
		lism_refusal_summary(&r, why, room);
		lism_feature_off(st, r.verifier ? LISM_FC_VERIFIER : LISM_FC_ATTACH, "%s%s", why, where);
		goto out;
	}
	prog = bpf_object__find_program_by_name(obj, op->prog);
	err = prog ? 0 : -ENOENT;
	if (!err && op->start)
		err = op->start(obj, prog, pin_path, why, sizeof(why));
	if (!err) {
		err = pin_over(bpf_program__fd(prog), pin_path, op->pin);
		if (err)
			snprintf(why, sizeof(why), "pinning %s failed: %s", op->prog, strerror(-err));
	}
	if (err) {
		lism_feature_off(st, LISM_FC_ATTACH, "%s", why[0] ? why : strerror(-err));
		goto out;
	}
	lism_feature_on(st);
out:
	lism_load_log_free(&log);
	bpf_object__close(obj);
	return err;
}

void lism_optional_load(const char *pin_path, __u32 entries, __u32 ablate, const struct lism_probe *probe,
			struct lism_feature_state st[LISM_F_MAX])
{
	for (size_t i = 0; i < sizeof(optionals) / sizeof(optionals[0]); i++) {
		const struct optional *op = &optionals[i];
		char missing[LISM_FEATURE_WHY_LEN];

		if (lism_probe_missing(probe, op->feature, missing, sizeof(missing))) {
			lism_feature_off(&st[op->feature], LISM_FC_KERNEL, "the kernel lacks %s", missing);
			remove_one(op, pin_path);
			continue;
		}
		/*
		 * Whatever a failure left half done goes, and at an upgrade the old
		 * build's program with it: an instance runs one build's programs or
		 * none, and a feature recorded off is off.
		 */
		if (load_one(op, pin_path, entries, ablate, &st[op->feature]))
			remove_one(op, pin_path);
	}
}

void lism_probed_features(const struct lism_probe *probe, struct lism_feature_state st[LISM_F_MAX])
{
	static const enum lism_feature probed[] = { LISM_F_SEND_SIZES, LISM_F_BPF_STATS };
	char missing[LISM_FEATURE_WHY_LEN];

	for (size_t i = 0; i < sizeof(probed) / sizeof(probed[0]); i++) {
		enum lism_feature f = probed[i];

		if (lism_probe_missing(probe, f, missing, sizeof(missing)))
			lism_feature_off(&st[f], LISM_FC_KERNEL, "the kernel lacks %s", missing);
		else
			lism_feature_on(&st[f]);
	}
}
