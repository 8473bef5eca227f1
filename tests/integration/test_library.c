// SPDX-License-Identifier: GPL-2.0-only
/*
 * The library under the commands (load.h, unload.h): -errno, the failure
 * in a struct lism_error with its class, and not a byte printed -- the
 * daemon calls it and keeps the message as its reason.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "feature.h"
#include "harness.h"
#include "load.h"
#include "log.h"
#include "objects.h"
#include "pins.h"
#include "unload.h"

static struct env e;
static int saved[2] = { -1, -1 };
static FILE *captured;

static void down(void)
{
	sh("rm -rf /tmp/lism-t-%d-notbpf", getpid());
	env_down(&e);
}

TestSuite(library, .fini = down, .timeout = 60);

/* From here to said(), standard output and standard error go to a file of their own. */
static void quiet_begin(void)
{
	fflush(stdout);
	fflush(stderr);
	captured = tmpfile();
	cr_assert_not_null(captured);
	for (int fd = 1; fd <= 2; fd++) {
		saved[fd - 1] = dup(fd);
		cr_assert_geq(saved[fd - 1], 0);
		cr_assert_geq(dup2(fileno(captured), fd), 0);
	}
}

/* What was printed since quiet_begin() (empty: nothing), with the terminal back. */
static const char *said(void)
{
	static char buf[4096];
	size_t n;

	fflush(stdout);
	fflush(stderr);
	for (int fd = 1; fd <= 2; fd++) {
		dup2(saved[fd - 1], fd);
		close(saved[fd - 1]);
	}
	rewind(captured);
	n = fread(buf, 1, sizeof(buf) - 1, captured);
	buf[n] = '\0';
	fclose(captured);
	return buf;
}

Test(library, load_upgrade_unload_say_nothing)
{
	struct lism_load_cfg cfg;
	struct lism_load_info info;
	struct lism_unload_cfg ucfg = { .timeout_s = 10 };
	struct lism_unload_info uinfo;
	struct lism_error err = { 0 };
	struct stat st;
	const char *out;
	int rc;

	require_root();
	env_up(&e, NULL);
	lism_log_setup(0); /* libbpf's own messages as the tool has them: its warnings only */
	lism_load_cfg_init(&cfg);
	snprintf(cfg.cgroup, sizeof(cfg.cgroup), "%s", e.cgroup);
	cfg.max_dmbs = 64;

	quiet_begin();
	rc = lism_load(e.pin, &cfg, &info, &err);
	out = said();
	cr_assert_eq(rc, -EEXIST, "a second load over the instance: %d (%s)", rc, err.msg);
	cr_assert_eq(err.exit, LISM_EXIT_STATE);
	cr_assert(strstr(err.msg, "already loaded"), "%s", err.msg);
	cr_assert(strstr(err.hint, "--upgrade"), "the hint says what to do: %s", err.hint);
	cr_assert_str_empty(out, "the library printed: %s", out);

	memset(&err, 0, sizeof(err));
	quiet_begin();
	rc = lism_upgrade(e.pin, &info, &err);
	out = said();
	cr_assert_eq(rc, 0, "upgrade: %s", err.msg);
	cr_assert_str_empty(out, "the library printed: %s", out);
	cr_assert(lism_feature_enabled(&info.features[LISM_F_HANDSHAKE]));
	cr_assert_eq(info.features[LISM_F_DATA_PATH].status == LISM_FS_ON, kernel_has(LISM_F_DATA_PATH),
		     "the data path runs where this kernel runs it");

	quiet_begin();
	rc = lism_unload(e.pin, &ucfg, &uinfo, &err);
	out = said();
	cr_assert_eq(rc, 0, "unload: %s", err.msg);
	cr_assert_str_empty(out, "the library printed: %s", out);
	cr_assert_not(uinfo.unfinished || uinfo.forced);
	cr_assert_eq(stat(e.pin, &st), -1, "unload left %s", e.pin);
	e.loaded = 0;

	/* a fresh load: every map pinned by its name, sized by the configuration */
	quiet_begin();
	rc = lism_load(e.pin, &cfg, &info, &err);
	out = said();
	cr_assert_eq(rc, 0, "load: %s", err.msg);
	e.loaded = 1;
	cr_assert_str_empty(out, "the library printed: %s", out);
	cr_assert_str_eq(info.cgroup, e.cgroup);
	cr_assert_gt(info.scope_entries, 0, "loopback at least");
	for (const char *const *name = (const char *const[]){ "device", "dmbs", "socks", "senders",
							    "shortcut", "events", NULL };
	     *name; name++) {
		int fd = lism_pin_open(e.pin, *name);
		struct bpf_map_info mi = { 0 };
		__u32 len = sizeof(mi);

		cr_assert_geq(fd, 0, "map %s is not pinned by its name: %s", *name, strerror(-fd));
		cr_assert_eq(bpf_obj_get_info_by_fd(fd, &mi, &len), 0);
		if (!strcmp(*name, "dmbs") || !strcmp(*name, "senders") || !strcmp(*name, "shortcut"))
			cr_assert_eq(mi.max_entries, 64, "%s: %u entries", *name, mi.max_entries);
		close(fd);
	}
}

Test(library, failures_are_classed_and_said_nowhere)
{
	struct lism_load_cfg cfg;
	struct lism_load_info info;
	struct lism_unload_cfg ucfg = { 0 };
	struct lism_unload_info uinfo;
	struct lism_error err = { 0 };
	char notbpf[PATH_MAX], missing[PATH_MAX];
	const char *out;
	int rc;

	require_root();
	lism_log_setup(0);
	lism_load_cfg_init(&cfg);
	snprintf(notbpf, sizeof(notbpf), "/tmp/lism-t-%d-notbpf/lism", getpid());
	snprintf(missing, sizeof(missing), "/sys/fs/bpf/lism-t-%d-none", getpid());
	cr_assert_eq(sh("mkdir -p /tmp/lism-t-%d-notbpf", getpid()), 0);

	quiet_begin();
	rc = lism_load(notbpf, &cfg, &info, &err);
	out = said();
	cr_assert_eq(rc, -ENOTSUP, "a pin path off bpffs: %d (%s)", rc, err.msg);
	cr_assert_eq(err.exit, LISM_EXIT_ENV);
	cr_assert(strstr(err.msg, "not on a BPF filesystem"), "%s", err.msg);
	cr_assert_str_empty(out, "the library printed: %s", out);

	memset(&err, 0, sizeof(err));
	quiet_begin();
	rc = lism_upgrade(notbpf, &info, &err);
	out = said();
	cr_assert_eq(rc, -ENOTSUP, "an upgrade off bpffs: %d (%s)", rc, err.msg);
	cr_assert_eq(err.exit, LISM_EXIT_ENV, "the environment, not the instance, is what is wrong");
	cr_assert_str_empty(out, "the library printed: %s", out);

	memset(&err, 0, sizeof(err));
	quiet_begin();
	rc = lism_unload(missing, &ucfg, &uinfo, &err);
	out = said();
	cr_assert_eq(rc, -ENOENT, "nothing there: %d (%s)", rc, err.msg);
	cr_assert_eq(err.exit, LISM_EXIT_STATE);
	cr_assert_str_empty(out, "the library printed: %s", out);

	memset(&err, 0, sizeof(err));
	quiet_begin();
	rc = lism_upgrade(missing, &info, &err);
	out = said();
	cr_assert_eq(rc, -ENOENT, "nothing to upgrade: %d (%s)", rc, err.msg);
	cr_assert_eq(err.exit, LISM_EXIT_STATE);
	cr_assert(strstr(err.msg, "nothing is loaded"), "%s", err.msg);
	cr_assert_str_empty(out, "the library printed: %s", out);
}

/*
 * Every map pins by its name (LIBBPF_PIN_BY_NAME), and libbpf's default
 * root for that is the host's /sys/fs/bpf: an object opened without an
 * instance -- the probe's trial loads -- must pin nothing there.
 */
Test(library, the_probe_pins_nothing)
{
	struct lism_common_opts co = { .pin_path = LISM_DEFAULT_PIN_PATH };
	struct bpf_object *obj;
	struct bpf_map *map;
	int rc;

	require_root();
	lism_log_setup(0);
	quiet_begin(); /* the probe's table is not the point here */
	rc = lism_cmd_probe(&co);
	said();
	cr_assert_eq(rc, LISM_EXIT_OK, "lism probe: this kernel cannot load lism");
	obj = lism_object_open(lism_object_find("core"), NULL);
	cr_assert_not_null(obj);
	bpf_object__for_each_map(map, obj) {
		char path[PATH_MAX];

		if (bpf_map__is_internal(map))
			continue;
		cr_assert_null(bpf_map__pin_path(map), "map %s would pin", bpf_map__name(map));
		snprintf(path, sizeof(path), "/sys/fs/bpf/%s", bpf_map__name(map));
		cr_assert_eq(access(path, F_OK), -1, "%s is pinned at the bpffs root", path);
	}
	bpf_object__close(obj);
}
