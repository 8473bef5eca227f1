// SPDX-License-Identifier: GPL-2.0-only
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <mntent.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <json-c/json.h>

#include "cgroup.h"
#include "conns.h"
#include "feature.h"
#include "broker.h"
#include "harness.h"
#include "lism/sender.h"
#include "traffic.h"
#include "pins.h"
#include "slow.h"

static int host_netns_fd = -1;
/* The test's own network namespace (env_up): where netns_switch(NULL) goes back to. */
static int home_netns_fd = -1;

void require_root(void)
{
	const char *ci = getenv("CI");

	if (geteuid() == 0)
		return;
	if (ci && !strcmp(ci, "true"))
		cr_assert_fail("integration tests need root (netns, cgroup2, bpffs) and CI=true forbids skipping");
	cr_skip_test("integration tests need root (netns, cgroup2, bpffs); skipped");
}

/*
 * Whether a feature runs here, as `lism probe -j` says: the kernel has what
 * it needs and the verifier does not refuse its program.  Probed once per
 * runner (it loads every object into the verifier) and kept for its other
 * tests in /tmp/lism-t-<runner>-probe: one '0' or '1' per feature.
 */
int kernel_has(enum lism_feature f)
{
	static char out[1 << 20];
	char path[64], tmp[80], have[LISM_F_MAX + 1] = "";
	struct json_object *j, *feats, *one, *v;
	FILE *fp;

	snprintf(path, sizeof(path), "/tmp/lism-t-%d-probe", getppid());
	fp = fopen(path, "r");
	if (fp) {
		size_t n = fread(have, 1, LISM_F_MAX, fp);

		fclose(fp);
		if (n == LISM_F_MAX)
			return have[f] == '1';
	}
	cr_assert_eq(sh_out("\"$LISM_BIN\" probe -j", out, sizeof(out)), 0, "lism probe -j: %.2000s", out);
	j = json_tokener_parse(out);
	cr_assert(j && json_object_object_get_ex(j, "features", &feats), "lism probe -j: %.2000s", out);
	for (int i = 0; i < LISM_F_MAX; i++) {
		struct json_object *verified = NULL;

		cr_assert(json_object_object_get_ex(feats, lism_feature_info(i)->name, &one) &&
				  json_object_object_get_ex(one, "kernel", &v),
			  "lism probe -j says nothing of %s", lism_feature_info(i)->name);
		json_object_object_get_ex(one, "verifier", &verified); /* null: not tried */
		have[i] = json_object_get_boolean(v) && (!verified || json_object_get_boolean(verified)) ? '1' : '0';
	}
	json_object_put(j);
	snprintf(tmp, sizeof(tmp), "%s.%d", path, getpid());
	fp = fopen(tmp, "w");
	if (fp && fwrite(have, 1, LISM_F_MAX, fp) == LISM_F_MAX && !fclose(fp))
		rename(tmp, path);
	else if (fp)
		fclose(fp);
	unlink(tmp);
	return have[f] == '1';
}

unsigned long long line_field(const char *line, const char *name)
{
	const char *p = strstr(line, name);

	cr_assert_not_null(p, "no '%s' in '%s'", name, line);
	return strtoull(p + strlen(name), NULL, 10);
}

struct lism_device_totals device_totals_at(const char *socket_path)
{
	struct lism_device_report *r;
	struct lism_device_totals t;

	cr_assert_eq(lism_device_report(socket_path, &r), 0, "the device at %s answers no report", socket_path);
	t = r->totals;
	free(r);
	return t;
}

void needs_missing(const char *what)
{
	const char *ci = getenv("CI");

	if (ci && !strcmp(ci, "true"))
		cr_assert_fail("%s is missing, and CI=true forbids skipping", what);
	cr_skip_test("%s is missing; skipped", what);
}

void needs(enum lism_feature f)
{
	const char *ci = getenv("CI"), *matrix = getenv("LISM_KERNEL_MATRIX");

	if (kernel_has(f))
		return;
	if (matrix && !strcmp(matrix, "1")) {
		/* for make vmtest's count: Criterion's synthesis leaves skipped tests out */
		fprintf(stderr, "lism-matrix-skip: %s::%s needs %s\n", criterion_current_test->category,
			criterion_current_test->name, lism_feature_info(f)->name);
		cr_skip_test("this kernel lacks what %s (%s) needs (lism probe): off here, as the matrix says",
			     lism_feature_info(f)->title, lism_feature_info(f)->name);
	}
	if (ci && !strcmp(ci, "true"))
		cr_assert_fail("this kernel lacks what %s (%s) needs (lism probe), and CI=true forbids skipping",
			       lism_feature_info(f)->title, lism_feature_info(f)->name);
	cr_skip_test("this kernel lacks what %s (%s) needs (lism probe); skipped", lism_feature_info(f)->title,
		     lism_feature_info(f)->name);
}

int sh(const char *fmt, ...)
{
	char cmd[16384];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	if (st == -1 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static const char *lism_bin(void)
{
	const char *b = getenv("LISM_BIN");

	return b ? b : "build/lism";
}

int lism(const struct env *e, const char *args)
{
	return sh("%s %s --pin-path %s >/dev/null 2>&1", lism_bin(), args, e->pin);
}

int sh_out(const char *cmd, char *out, size_t len)
{
	size_t n = 0;
	FILE *p;
	int st;

	p = popen(cmd, "r");
	cr_assert_not_null(p, "popen %s", cmd);
	while (n + 1 < len) {
		size_t r = fread(out + n, 1, len - 1 - n, p);

		if (!r)
			break;
		n += r;
	}
	out[n] = '\0';
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int lism_out(const struct env *e, const char *args, char *out, size_t len)
{
	char cmd[16384];

	cr_assert_lt(snprintf(cmd, sizeof(cmd), "%s %s --pin-path %s 2>&1", lism_bin(), args, e->pin),
		     (int)sizeof(cmd));
	return sh_out(cmd, out, len);
}

void write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	cr_assert_geq(fd, 0, "open %s: %s", path, strerror(errno));
	n = write(fd, s, strlen(s));
	close(fd);
	cr_assert_eq(n, (ssize_t)strlen(s), "write %s: %s", path, strerror(errno));
}

/*
 * Where this process sits in the cgroup2 hierarchy (/proc/self/cgroup's
 * "0::" line): the test goes back there, not to the root (a CI job's own
 * cgroup must keep its processes).
 */
static void cgroup_home(const char *cgroot, char *out, size_t len)
{
	char line[PATH_MAX + 8];
	FILE *f = fopen("/proc/self/cgroup", "r");
	int found = 0;

	cr_assert_not_null(f, "/proc/self/cgroup: %s", strerror(errno));
	while (!found && fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = '\0';
			cr_assert_lt(snprintf(out, len, "%s%s", cgroot, strcmp(line + 3, "/") ? line + 3 : ""),
				     (int)len);
			found = 1;
		}
	fclose(f);
	cr_assert(found, "no cgroup2 line in /proc/self/cgroup");
}

void env_up(struct env *e, const char *load_args)
{
	static int seq;
	char args[8192];

	memset(e, 0, sizeof(*e));
	snprintf(e->name, sizeof(e->name), "lism-t-%d-%d-%d", getppid(), getpid(), seq++);
	cr_assert_eq(lism_cgroup2_mount("/proc/mounts", e->cgroot, sizeof(e->cgroot)), 0,
		     "no cgroup2 mount");
	cr_assert_lt(snprintf(e->cgroup, sizeof(e->cgroup), "%s/%s", e->cgroot, e->name),
		     (int)sizeof(e->cgroup));
	cgroup_home(e->cgroot, e->cghome, sizeof(e->cghome));
	snprintf(e->pin, sizeof(e->pin), "/sys/fs/bpf/%s", e->name);
	/* lism exec's device (a lism run's, or a test's own) and its callers meet here, not in /run/lism */
	snprintf(e->device, sizeof(e->device), "/tmp/%s-device/device.sock", e->name);
	setenv("LISM_DEVICE", e->device, 1);
	if (lism_is_bpffs("/sys/fs/bpf") != 1)
		cr_assert_eq(sh("mount -t bpf bpf /sys/fs/bpf"), 0, "cannot mount bpffs");
	cr_assert_eq(mkdir(e->cgroup, 0755), 0, "mkdir %s: %s", e->cgroup, strerror(errno));
	cr_assert_lt(snprintf(args, sizeof(args), "load --cgroup %s %s", e->cgroup,
			      load_args ? load_args : ""),
		     (int)sizeof(args));
	cr_assert_eq(lism_out(e, args, e->load_out, sizeof(e->load_out)), 0, "lism %s failed: %s", args,
		     e->load_out);
	e->loaded = 1;
	if (host_netns_fd < 0)
		host_netns_fd = open("/proc/self/ns/net", O_RDONLY);
	cr_assert_geq(host_netns_fd, 0);
	/* the test's traffic, listeners and daemons stay off the host's network namespace */
	netns_switch(env_netns(e, "home"));
	home_netns_fd = open("/proc/self/ns/net", O_RDONLY);
	cr_assert_geq(home_netns_fd, 0, "%s", strerror(errno));
}

/* Write 0 (this process) into @dir's cgroup.procs: 0 or -errno. */
static int cgroup_procs_self(const char *dir)
{
	char path[PATH_MAX + 32];
	int fd, ok, err;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	ok = write(fd, "0", 1) == 1;
	err = errno;
	close(fd);
	return ok ? 0 : -err;
}

/* Move this process into the cgroup at @dir, or fail the test. */
static void cgroup_join(const char *dir)
{
	int err = cgroup_procs_self(dir);

	cr_assert_eq(err, 0, "moving into %s: %s", dir, strerror(-err));
}

void env_enter(struct env *e)
{
	cgroup_join(e->cgroup);
	e->entered = 1;
}

void env_plain(struct env *e)
{
	if (!other_lism_covers(e->cghome)) {
		cgroup_join(e->cghome);
		e->entered = 1;
		return;
	}
	/* a node-wide lism (make run) covers the cgroup the test came from */
	if (!e->plain_loaded) {
		cr_assert_lt(snprintf(e->plain_cgroup, sizeof(e->plain_cgroup), "%.4000s-plain", e->cgroup),
			     (int)sizeof(e->plain_cgroup));
		cr_assert_lt(snprintf(e->plain_pin, sizeof(e->plain_pin), "%.4000s-plain", e->pin),
			     (int)sizeof(e->plain_pin));
		cr_assert(mkdir(e->plain_cgroup, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", e->plain_cgroup,
			  strerror(errno));
		cr_assert_eq(sh("%s load --cgroup %s --pin-path %s >/dev/null && %s set active off --pin-path %s "
				">/dev/null", lism_bin(), e->plain_cgroup, e->plain_pin, lism_bin(), e->plain_pin),
			     0, "loading the switched-off instance of %s", e->plain_cgroup);
		e->plain_loaded = 1;
	}
	cgroup_join(e->plain_cgroup);
	e->entered = 1;
}

void env_leave(struct env *e)
{
	if (!e->entered)
		return;
	cgroup_join(e->cghome);
	e->entered = 0;
}

/*
 * Processes a failed test left in its cgroup (children it forked, waited
 * for only on success) would keep the directory, and their sockets, alive:
 * kill them (cgroup.kill, Linux 5.14) and wait until the cgroup is empty.
 */
static void kill_stragglers(const char *cgroup)
{
	char path[PATH_MAX + 32], ev[256];

	snprintf(path, sizeof(path), "%s/cgroup.kill", cgroup);
	int fd = open(path, O_WRONLY);

	if (fd < 0)
		return;
	if (write(fd, "1", 1) < 0)
		perror("killing what the test left in its cgroup");
	close(fd);
	snprintf(path, sizeof(path), "%s/cgroup.events", cgroup);
	for (int i = 0; i < 200; i++) {
		ssize_t n = -1;

		fd = open(path, O_RDONLY);
		if (fd >= 0) {
			n = read(fd, ev, sizeof(ev) - 1);
			close(fd);
		}
		if (n <= 0)
			return;
		ev[n] = '\0';
		if (strstr(ev, "populated 0"))
			return;
		usleep(10000);
	}
}

/* Where the cgroup v1 memory controller is mounted (-ENOENT: not as v1). */
static int memcg_v1_root(char *out, size_t len)
{
	struct mntent *m;
	int ret = -ENOENT;
	FILE *f = setmntent("/proc/mounts", "r");

	if (!f)
		return -errno;
	while ((m = getmntent(f))) {
		if (strcmp(m->mnt_type, "cgroup") || !hasmntopt(m, "memory"))
			continue;
		if (strlen(m->mnt_dir) < len) {
			strcpy(out, m->mnt_dir);
			ret = 0;
		}
		break;
	}
	endmntent(f);
	return ret;
}

void memcg_up(struct env *e, unsigned long limit)
{
	const char *ci = getenv("CI");
	char root[PATH_MAX], path[PATH_MAX + 64], val[32];

	if (memcg_v1_root(root, sizeof(root)) ||
	    (snprintf(path, sizeof(path), "%s/memory.kmem.tcp.limit_in_bytes", root), access(path, F_OK))) {
		if (getenv("LISM_KERNEL_MATRIX")) { /* the guests mount cgroup2 alone */
			fprintf(stderr, "lism-matrix-skip: %s::%s needs cgroup-v1-memory\n",
				criterion_current_test->category, criterion_current_test->name);
			cr_skip_test("needs the cgroup v1 memory controller, which make vmtest's guests do not mount");
		}
		if (ci && !strcmp(ci, "true"))
			cr_assert_fail("no cgroup v1 memory controller with kmem.tcp, and CI=true forbids skipping");
		cr_skip_test("needs the cgroup v1 memory controller (memory.kmem.tcp); skipped");
	}
	cr_assert_lt(snprintf(e->memcg, sizeof(e->memcg), "%s/%s", root, e->name), (int)sizeof(e->memcg));
	cr_assert_eq(mkdir(e->memcg, 0755), 0, "mkdir %s: %s", e->memcg, strerror(errno));
	snprintf(path, sizeof(path), "%s/memory.kmem.tcp.limit_in_bytes", e->memcg);
	snprintf(val, sizeof(val), "%lu", limit);
	write_file(path, val);
}

/* The path of this process's cgroup in the v1 hierarchy that has @ctrl (co-mounted or not), or -ENOENT. */
static int v1_cgroup_of_self(const char *ctrl, char *out, size_t len)
{
	char line[PATH_MAX + 64];
	int ret = -ENOENT;
	FILE *f = fopen("/proc/self/cgroup", "r");

	if (!f)
		return -errno;
	while (ret && fgets(line, sizeof(line), f)) {
		/* "ID:controller[,controller...]:/path" */
		char *ctrls = strchr(line, ':'), *path, *tok, *save = NULL;

		if (!ctrls || !(path = strchr(++ctrls, ':')))
			continue;
		*path++ = '\0';
		path[strcspn(path, "\n")] = '\0';
		for (tok = strtok_r(ctrls, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
			if (!strcmp(tok, ctrl) && strlen(path) < len) {
				strcpy(out, path);
				ret = 0;
			}
	}
	fclose(f);
	return ret;
}

void memcg_enter(struct env *e)
{
	char self[PATH_MAX], *slash;

	/* where to come back to: this process's memory cgroup, under the v1 mount */
	cr_assert_eq(v1_cgroup_of_self("memory", self, sizeof(self)), 0, "no memory line in /proc/self/cgroup");
	snprintf(e->memcg_home, sizeof(e->memcg_home), "%s", e->memcg);
	slash = strrchr(e->memcg_home, '/'); /* the mount is memcg's parent */
	cr_assert_not_null(slash);
	snprintf(slash, sizeof(e->memcg_home) - (size_t)(slash - e->memcg_home), "%s", strcmp(self, "/") ? self : "");
	cgroup_join(e->memcg);
}

/*
 * Back to the memory cgroup this process came from; to the controller's
 * root where that path is not under the mount (a mount of a subtree, as in
 * a container without a cgroup namespace).  Quiet, for env_down.
 */
static int memcg_go_home(const struct env *e)
{
	char root[PATH_MAX], *slash;
	int err = -ENOENT;

	if (e->memcg_home[0])
		err = cgroup_procs_self(e->memcg_home);
	if (err != -ENOENT)
		return err;
	snprintf(root, sizeof(root), "%s", e->memcg);
	slash = strrchr(root, '/');
	if (!slash)
		return -EINVAL;
	*slash = '\0';
	return cgroup_procs_self(root);
}

void memcg_leave(struct env *e)
{
	int err = memcg_go_home(e);

	cr_assert_eq(err, 0, "leaving %s: %s", e->memcg, strerror(-err));
}

unsigned long long memcg_read(const struct env *e, const char *file)
{
	char path[PATH_MAX + 64], buf[64] = "";
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%s", e->memcg, file);
	fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0, "open %s: %s", path, strerror(errno));
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	cr_assert_gt(n, 0, "read %s", path);
	buf[n] = '\0';
	return strtoull(buf, NULL, 10);
}

void env_down(struct env *e)
{
	int err;

	if (!e->name[0])
		return;
	if (host_netns_fd >= 0 && setns(host_netns_fd, CLONE_NEWNET))
		fprintf(stderr, "back to the host's network namespace: %s\n", strerror(errno));
	if (home_netns_fd >= 0) {
		close(home_netns_fd);
		home_netns_fd = -1;
	}
	/* first: what follows is not charged to it */
	if (e->memcg[0] && (err = memcg_go_home(e)))
		fprintf(stderr, "leaving the test's memory cgroup: %s\n", strerror(-err));
	if (e->entered) {
		if ((err = cgroup_procs_self(e->cghome)))
			fprintf(stderr, "leaving the test cgroup: %s\n", strerror(-err));
		e->entered = 0;
	}
	kill_stragglers(e->cgroup);
	for (int i = 0; i < e->n_netns; i++)
		sh("ip netns del %s 2>/dev/null", e->netns[i]);
	if (e->loaded)
		lism(e, "unload --timeout 2 --force");
	lism_pins_remove(e->pin);
	rmdir(e->cgroup);
	if (e->device[0]) {
		sh("rm -rf /tmp/%s-device", e->name);
		e->device[0] = '\0';
	}
	if (e->plain_loaded) {
		kill_stragglers(e->plain_cgroup);
		sh("%s unload --timeout 2 --force --pin-path %s >/dev/null 2>&1", lism_bin(), e->plain_pin);
		lism_pins_remove(e->plain_pin);
		rmdir(e->plain_cgroup);
		e->plain_loaded = 0;
	}
	if (e->memcg[0]) {
		/* v1 removes a memory cgroup without tasks even while sockets still hold charges */
		for (int i = 0; i < 100 && rmdir(e->memcg) && errno == EBUSY; i++)
			usleep(10000);
		e->memcg[0] = e->memcg_home[0] = '\0';
	}
	e->name[0] = '\0';
}

int other_lism_covers(const char *cgroup)
{
	__u32 ids[64], cnt = 64;
	int fd = open(cgroup, O_RDONLY | O_DIRECTORY), n = 0;
	LIBBPF_OPTS(bpf_prog_query_opts, q, .query_flags = BPF_F_QUERY_EFFECTIVE, .prog_ids = ids);

	cr_assert_geq(fd, 0, "opening %s: %s", cgroup, strerror(errno));
	q.prog_cnt = cnt;
	cr_assert_eq(bpf_prog_query_opts(fd, BPF_CGROUP_SOCK_OPS, &q), 0, "querying %s: %s", cgroup,
		     strerror(errno));
	close(fd);
	for (__u32 i = 0; i < q.prog_cnt; i++) {
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);
		int pfd = bpf_prog_get_fd_by_id(ids[i]);

		if (pfd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(pfd, &info, &len) && !strcmp(info.name, "lism_sockops"))
			n++;
		close(pfd);
	}
	return n;
}

void snap(const struct env *e, struct lism_snapshot *s)
{
	struct lism_instance in;

	cr_assert_eq(lism_instance_open(&in, e->pin), 0, "open pins %s", e->pin);
	cr_assert_eq(lism_snapshot_read(&in, s), 0);
	lism_instance_close(&in);
}

__u64 stats_json_u64(const struct env *e, const char *key)
{
	struct json_object *j, *v;
	char out[16384];
	__u64 n;

	cr_assert_eq(lism_out(e, "stats -j", out, sizeof(out)), 0, "%s", out);
	j = json_tokener_parse(out);
	cr_assert_not_null(j, "%s", out);
	cr_assert(json_object_object_get_ex(j, key, &v), "no '%s' in lism stats -j", key);
	n = json_object_get_uint64(v);
	json_object_put(j);
	return n;
}

__u32 shortcut_members(const struct env *e)
{
	struct lism_instance in;
	__u32 n;

	cr_assert_eq(lism_instance_open(&in, e->pin), 0, "open pins %s", e->pin);
	cr_assert_eq(lism_shortcut_map_count(&in, 1u << 20, &n), 0);
	lism_instance_close(&in);
	return n;
}

int dmb_lookup(const struct env *e, __u64 token, struct lism_dmb *out)
{
	struct lism_instance in;
	__u32 slot = (__u32)token;
	int ok;

	cr_assert_eq(lism_instance_open(&in, e->pin), 0);
	ok = !bpf_map_lookup_elem(in.dmbs_fd, &slot, out) && out->token == token;
	lism_instance_close(&in);
	return ok;
}

/* What is left in the token table, for a failure message. */
static void dump_table(const struct env *e, const struct lism_snapshot *s)
{
	struct lism_instance in;
	struct lism_dmb d;
	int shown = 0;

	if (lism_instance_open(&in, e->pin))
		return;
	fprintf(stderr, "table: %lld DMBs in use, %u joined\n", (long long)s->usage.dmbs_in_use,
		s->shortcut_sockets);
	for (__u32 slot = 0; slot < s->dev.capacity && shown < 20; slot++) {
		if (bpf_map_lookup_elem(in.dmbs_fd, &slot, &d) || !d.token)
			continue;
		fprintf(stderr,
			"  slot %u token %016llx peer %016llx role %u state %u reason %u/%u flags %#x "
			"ports %u->%u rx %llu cookie %llu (sk:%llx)\n",
			slot, (unsigned long long)d.token, (unsigned long long)d.peer_token, d.role,
			d.state, d.reason, d.peer_reason, d.conn_flags, d.lport, d.rport,
			(unsigned long long)d.rx_bytes, (unsigned long long)d.cookie,
			(unsigned long long)d.cookie);
		shown++;
	}
	/* and whether any process still holds a socket lism knows */
	struct lism_conn *conns;
	size_t n;

	if (!lism_conns_collect(&in, &conns, &n)) {
		for (size_t i = 0; i < n && i < 20; i++)
			fprintf(stderr, "  socket cookie %llu state %u pid %u fd %u token %016llx ports %u->%u\n",
				(unsigned long long)conns[i].row.cookie, conns[i].row.tcp_state,
				conns[i].row.pid, conns[i].row.fd,
				(unsigned long long)conns[i].row.st.token, conns[i].row.lport,
				conns[i].row.rport);
		fprintf(stderr, "  %zu sockets with lism state held by processes\n", n);
		free(conns);
	}
	/* the kernel's view of this netns (ss -e prints each socket's cookie as sk:<hex>) */
	fflush(stderr);
	if (system("ss -tanei >&2"))
		fprintf(stderr, "  (ss failed)\n");
	lism_instance_close(&in);
}

long wait_drained(const struct env *e, int timeout_ms)
{
	struct lism_snapshot s;

	for (int waited = 0;; waited += 10) {
		snap(e, &s);
		if (!s.usage.dmbs_in_use && !s.shortcut_sockets && !s.sender_sockets)
			return 0;
		if (waited >= scaled_ms(timeout_ms)) {
			dump_table(e, &s);
			return s.usage.dmbs_in_use + s.shortcut_sockets + s.sender_sockets;
		}
		usleep(10 * 1000);
	}
}

long wait_senders(const struct env *e, __u32 n, int timeout_ms)
{
	struct lism_snapshot s;

	for (int waited = 0;; waited += 5) {
		snap(e, &s);
		if (s.sender_sockets >= n)
			return 0;
		if (waited >= scaled_ms(timeout_ms))
			return (long)n - s.sender_sockets;
		usleep(5 * 1000);
	}
}

void round_trips(int c, int s, int rounds, __u32 size, __u32 seed)
{
	for (int i = 0; i < rounds; i++) {
		cr_assert_eq(send_all(c, seed, (__u64)i * size, size), 0);
		cr_assert_eq(recv_check(s, seed, (__u64)i * size, size, 5000), 0, "round %d", i);
		cr_assert_eq(send_all(s, seed + 1, (__u64)i * size, size), 0);
		cr_assert_eq(recv_check(c, seed + 1, (__u64)i * size, size, 5000), 0, "round %d", i);
	}
}

void one_way_stream(int c, int s, int sends, __u32 size, int batch, __u32 seed)
{
	for (int i = 0; i < sends; i += batch) {
		for (int j = i; j < i + batch; j++)
			cr_assert_eq(send_all(c, seed, (__u64)j * size, size), 0);
		cr_assert_eq(recv_check(s, seed, (__u64)i * size, (__u64)batch * size, 5000), 0,
			     "stream bytes at send %d", i);
	}
}

void make_senders(const struct env *e, int c, int s)
{
	struct lism_snapshot before;

	snap(e, &before);
	/*
	 * One-byte round trips, one segment each: both ends send the last one
	 * with LISM_SENDER_MIN_SEGS data segments gone each way
	 * (include/lism/sender.h).
	 */
	round_trips(c, s, LISM_SENDER_MIN_SEGS + 1, 1, 98);
	cr_assert_eq(wait_senders(e, before.sender_sockets + 2, 3000), 0,
		     "the pair's ends did not become senders after %d round trips", LISM_SENDER_MIN_SEGS + 1);
}

const char *env_netns(struct env *e, const char *suffix)
{
	char *name;

	cr_assert_lt(e->n_netns, (int)(sizeof(e->netns) / sizeof(e->netns[0])));
	name = e->netns[e->n_netns];
	/* netns names are short: pid and a counter identify the test */
	snprintf(name, sizeof(e->netns[0]), "lt%d-%d-%d%s", getppid(), getpid(), e->n_netns, suffix);
	cr_assert_eq(sh("ip netns add %s && ip -n %s link set lo up", name, name), 0,
		     "creating netns %s", name);
	e->n_netns++;
	return name;
}

void netns_switch(const char *ns)
{
	char path[PATH_MAX];
	int fd;

	if (host_netns_fd < 0)
		host_netns_fd = open("/proc/self/ns/net", O_RDONLY);
	if (!ns) {
		int back = home_netns_fd >= 0 ? home_netns_fd : host_netns_fd;

		cr_assert_eq(setns(back, CLONE_NEWNET), 0, "setns back: %s", strerror(errno));
		return;
	}
	snprintf(path, sizeof(path), "/run/netns/%s", ns);
	fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0, "open %s: %s", path, strerror(errno));
	cr_assert_eq(setns(fd, CLONE_NEWNET), 0, "setns %s: %s", ns, strerror(errno));
	close(fd);
}

/*
 * A test pin directory holds only what one test pinned: empty it whatever
 * the names (a test binary older than the lism it ran may not know them all).
 */
static void empty_pin_dir(const char *dir)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) < (int)sizeof(path))
			unlink(path);
	closedir(d);
	rmdir(dir);
}

static void sweep_dir(const char *dir, const char *prefix, int pins)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, prefix, strlen(prefix)))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (pins)
			empty_pin_dir(path);
		else
			rmdir(path);
	}
	closedir(d);
}

void sweep_leftovers(int pid)
{
	char cgroot[PATH_MAX], prefix[64];

	snprintf(prefix, sizeof(prefix), "lism-t-%d-", pid);
	sweep_dir("/sys/fs/bpf", prefix, 1);
	if (!lism_cgroup2_mount("/proc/mounts", cgroot, sizeof(cgroot)))
		sweep_dir(cgroot, prefix, 0);
	if (!memcg_v1_root(cgroot, sizeof(cgroot)))
		sweep_dir(cgroot, prefix, 0);
	sh("for n in $(ip netns list | awk '{print $1}' | grep '^lt%d-'); do ip netns del $n; done",
	   pid);
	sh("rm -f /tmp/lism-t-%d-probe", pid);
	sh("rm -rf /tmp/lism-t-%d-*-device", pid);
}

/*
 * A test's time limit grows with its waits (slow.h): under make vmtest a
 * test that passes in 10 s here takes minutes.  The runner reads the limits
 * when it starts each test, after this hook.
 */
ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
	int k = time_scale();

	if (k == 1)
		return;
	FOREACH_SET(struct criterion_suite_set *ss, set->suites) {
		if (ss->suite.data && ss->suite.data->timeout > 0)
			ss->suite.data->timeout *= k;
		FOREACH_SET(struct criterion_test *t, ss->tests) {
			if (t->data->timeout > 0)
				t->data->timeout *= k;
		}
	}
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
	(void)stats;
	if (geteuid() == 0)
		sweep_leftovers(getpid());
}

pid_t spawn_sh(const char *cmd, int *out)
{
	int p[2];
	pid_t pid;

	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(p[1], 1);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	*out = p[0];
	return pid;
}

void stop_spawned(pid_t *pid, int out)
{
	int st;

	kill(*pid, SIGTERM);
	waitpid(*pid, &st, 0);
	*pid = -1;
	close(out);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status %d", WEXITSTATUS(st));
}

/* One read of what @fd has for @buf (appended), within @ms; 0 when nothing came (or EOF). */
static ssize_t read_more(int fd, char *buf, size_t len, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	size_t n = strlen(buf);
	ssize_t r;

	if (n >= len - 1 || poll(&p, 1, ms) != 1)
		return 0;
	r = read(fd, buf + n, len - 1 - n);
	if (r <= 0)
		return 0;
	buf[n + (size_t)r] = '\0';
	return r;
}

/* Read from @fd until @needle shows up in the accumulated text (or timeout). */
int wait_output(int fd, char *buf, size_t len, const char *needle, int ms)
{
	ms = scaled_ms(ms);
	for (int waited = 0; !strstr(buf, needle); waited += 50) {
		if (waited > ms)
			return 0;
		read_more(fd, buf, len, 50);
	}
	return 1;
}

void read_until_quiet(int fd, char *buf, size_t len, int quiet_ms)
{
	while (read_more(fd, buf, len, quiet_ms) > 0)
		;
}
