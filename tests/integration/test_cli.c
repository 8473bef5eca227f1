// SPDX-License-Identifier: GPL-2.0-only
/* The lism tool against a real kernel: errors and exit codes, pins, JSON, unload. */
#include <bpf/bpf.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "harness.h"
#include "pins.h"
#include "traffic.h"

static struct env e;

static void down(void)
{
	/* what a failed load_refuses_what_it_cannot_use left behind (its names carry this pid) */
	sh("umount /tmp/lism-t-%d-bpffs 2>/dev/null; rmdir /tmp/lism-t-%d-bpffs 2>/dev/null; "
	   "rm -rf /sys/fs/bpf/lism-t-%d-other /sys/fs/bpf/lism-t-%d-none",
	   getpid(), getpid(), getpid(), getpid());
	env_down(&e);
}

TestSuite(cli, .fini = down, .timeout = 60);

static void expect(int rc, int want, const char *out, const char *needle)
{
	cr_assert_eq(rc, want, "exit %d, want %d; output: %s", rc, want, out);
	cr_assert(strstr(out, needle), "output lacks '%s': %s", needle, out);
}

Test(cli, status_and_unload_when_not_loaded)
{
	struct env none = { 0 };
	char out[4096];

	require_root();
	snprintf(none.pin, sizeof(none.pin), "/sys/fs/bpf/lism-t-%d-none", getpid());
	expect(lism_out(&none, "status", out, sizeof(out)), LISM_EXIT_STATE, out, "not loaded");
	expect(lism_out(&none, "unload", out, sizeof(out)), LISM_EXIT_STATE, out, "no lism instance");
}

/* The cleanup DaemonSet's unload --stay: nothing pinned (no directory, or an empty one) is done. */
Test(cli, unload_stay_with_nothing_pinned_is_done)
{
	char cmd[PATH_MAX + 64], buf[4096], dir[PATH_MAX];
	pid_t pid;
	int out;

	require_root();
	snprintf(dir, sizeof(dir), "/sys/fs/bpf/lism-t-%d-none", getpid());
	for (int i = 0; i < 2; i++) {
		if (i == 1)
			cr_assert_eq(mkdir(dir, 0700), 0, "%s: %s", dir, strerror(errno));
		snprintf(cmd, sizeof(cmd), "exec \"$LISM_BIN\" unload --stay --pin-path %s", dir);
		buf[0] = '\0';
		pid = spawn_sh(cmd, &out);
		cr_assert(wait_output(out, buf, sizeof(buf), "staying until stopped", 5000), "%s", buf);
		cr_assert(strstr(buf, "nothing is pinned"), "%s", buf);
		cr_assert_neq(access(dir, F_OK), 0, "the empty directory stayed");
		stop_spawned(&pid, out);
	}
}

Test(cli, load_refuses_what_it_cannot_use)
{
	char out[4096], args[PATH_MAX + 64];

	require_root();
	env_up(&e, NULL);
	snprintf(args, sizeof(args), "load --cgroup %s", e.cgroup);
	expect(lism_out(&e, args, out, sizeof(out)), LISM_EXIT_STATE, out, "already loaded");

	struct env other = e;

	snprintf(other.pin, sizeof(other.pin), "/tmp/lism-t-%d-notbpffs", getpid());
	expect(lism_out(&other, args, out, sizeof(out)), LISM_EXIT_ENV, out, "not on a BPF filesystem");
	expect(lism_out(&other, args, out, sizeof(out)), LISM_EXIT_ENV, out, "mount -t bpf");

	snprintf(other.pin, sizeof(other.pin), "/sys/fs/bpf/lism-t-%d-other", getpid());
	expect(lism_out(&other, "load --cgroup /tmp", out, sizeof(out)), LISM_EXIT_ENV, out,
	       "not a cgroup2 directory");
	cr_assert_eq(access(other.pin, F_OK), -1, "a failed load left %s behind", other.pin);

	/* the root of a bpffs is nobody's to take over */
	struct env root = e;

	sh("mkdir -p /tmp/lism-t-%d-bpffs && mount -t bpf bpf /tmp/lism-t-%d-bpffs", getpid(), getpid());
	snprintf(root.pin, sizeof(root.pin), "/tmp/lism-t-%d-bpffs", getpid());
	expect(lism_out(&root, args, out, sizeof(out)), LISM_EXIT_USAGE, out, "mount point");
	sh("umount /tmp/lism-t-%d-bpffs; rmdir /tmp/lism-t-%d-bpffs", getpid(), getpid());

	/* a pin directory holding something else is not ours to fill */
	cr_assert_eq(mkdir(other.pin, 0700), 0);
	cr_assert_eq(sh("bpftool map create %s/foreign type array key 4 value 4 entries 1 name foreign",
			other.pin),
		     0);
	expect(lism_out(&other, args, out, sizeof(out)), LISM_EXIT_STATE, out, "not a lism instance");
	sh("rm -rf %s", other.pin);
}

/*
 * A namespace whose net.ipv4.tcp_notsent_lowat, or tcp_wmem maximum, keeps
 * its sockets' sends on TCP (include/lism/sender.h) is named at load.
 */
Test(cli, load_notes_send_limits_that_keep_sends_on_tcp)
{
	char out[4096], args[PATH_MAX + 64];

	require_root();
	env_up(&e, NULL);
	cr_assert_eq(lism(&e, "unload"), 0);
	netns_switch(env_netns(&e, "lowat"));
	write_file("/proc/sys/net/ipv4/tcp_notsent_lowat", "16384"); /* the namespace goes with the test */
	snprintf(args, sizeof(args), "load --cgroup %s", e.cgroup);
	expect(lism_out(&e, args, out, sizeof(out)), 0, out, "net.ipv4.tcp_notsent_lowat is 16384 here");
	cr_assert_null(strstr(out, "tcp_wmem"), "a note for the default tcp_wmem: %s", out);
	cr_assert_eq(lism(&e, "unload"), 0);
	netns_switch(env_netns(&e, "wmem"));
	write_file("/proc/sys/net/ipv4/tcp_wmem", "4096 16384 131072");
	expect(lism_out(&e, args, out, sizeof(out)), 0, out, "net.ipv4.tcp_wmem maximum is 131072 here");
	cr_assert_eq(lism(&e, "unload"), 0);
	/* a namespace with the kernel's default (no limit) gets no note */
	netns_switch(env_netns(&e, "nolimit"));
	expect(lism_out(&e, args, out, sizeof(out)), 0, out, "lism: loaded at");
	cr_assert_null(strstr(out, "tcp_notsent_lowat"), "a note without a limit: %s", out);
	cr_assert_null(strstr(out, "tcp_wmem"), "a note without a limit: %s", out);
	netns_switch(NULL);
}

/* The runs and run time of one program in `status -j`'s bpf_time; fails if it is missing. */
static void prog_time(struct json_object *j, const char *prog, __u64 *runs, __u64 *ns)
{
	struct json_object *t, *progs, *p, *v;

	cr_assert(json_object_object_get_ex(j, "bpf_time", &t), "no bpf_time");
	cr_assert(json_object_object_get_ex(t, "programs", &progs));
	cr_assert(json_object_object_get_ex(progs, prog, &p) && p, "%s unreadable", prog);
	cr_assert(json_object_object_get_ex(p, "runs", &v));
	*runs = json_object_get_uint64(v);
	cr_assert(json_object_object_get_ex(p, "run_time_ns", &v));
	*ns = json_object_get_uint64(v);
}

/*
 * status shows what BPF stats counted of lism's programs.  Stats are turned
 * on the way bpftool prog profile does it, by a BPF_ENABLE_STATS fd: it is
 * counted, and closing it (also when the test dies) turns them off again;
 * the host's sysctl is never written.
 */
Test(cli, status_shows_what_bpf_stats_counted)
{
	__u64 hs_runs, hs_ns, dp_runs, dp_ns, runs, ns;
	struct json_object *j;
	char out[16384];
	int c, s, stats;

	require_root();
	needs(LISM_F_DATA_PATH);
	env_up(&e, NULL);
	stats = bpf_enable_stats(BPF_STATS_RUN_TIME);
	cr_assert_geq(stats, 0, "BPF_ENABLE_STATS: %s", strerror(errno));
	env_enter(&e);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c, &s);
	make_senders(&e, c, s);
	cr_assert_eq(send_all(c, 1, 0, 5000), 0);
	cr_assert_eq(recv_check(s, 1, 0, 5000, 5000), 0);
	close(stats);
	cr_assert_eq(lism_out(&e, "status -j", out, sizeof(out)), 0, "%s", out);
	j = json_tokener_parse(out);
	cr_assert_not_null(j, "not JSON: %s", out);
	prog_time(j, "handshake", &hs_runs, &hs_ns);
	prog_time(j, "data_path", &dp_runs, &dp_ns);
	prog_time(j, "backstop", &runs, &ns);
	json_object_put(j);
	/* both ends' handshakes and the make_senders round trips ran the sockops program */
	cr_assert_geq(hs_runs, 10, "handshake runs: %llu", (unsigned long long)hs_runs);
	cr_assert_gt(hs_ns, 0);
	cr_assert_geq(dp_runs, 1, "data path runs: %llu (a send went through the shortcut)",
		      (unsigned long long)dp_runs);
	cr_assert_gt(dp_ns, 0);
	cr_assert_eq(lism_out(&e, "status", out, sizeof(out)), 0);
	cr_assert(strstr(out, "BPF time: ") && strstr(out, " ns x "), "%s", out);
	close(c);
	close(s);
}

/*
 * With kernel.bpf_stats_enabled on, load and status say what it costs.  The
 * sysctl is a file bind-mounted over it in a mount namespace of lism's own:
 * the host's is never written.
 */
Test(cli, load_notes_bpf_stats_left_on)
{
	char out[8192], file[64], cmd[16384];
	const char *bin = getenv("LISM_BIN") ? getenv("LISM_BIN") : "build/lism";

	require_root();
	env_up(&e, NULL);
	cr_assert_eq(lism(&e, "unload"), 0);
	snprintf(file, sizeof(file), "/tmp/lism-t-%d-bpf-stats", getpid());
	for (int on = 1; on >= 0; on--) {
		FILE *f = fopen(file, "w");

		cr_assert_not_null(f, "%s: %s", file, strerror(errno));
		fputs(on ? "1\n" : "0\n", f);
		cr_assert_eq(fclose(f), 0);
		cr_assert_lt(snprintf(cmd, sizeof(cmd),
				      "unshare -m sh -c 'mount --bind %s /proc/sys/kernel/bpf_stats_enabled && "
				      "%s load --cgroup %s --pin-path %s && %s status --pin-path %s' 2>&1",
				      file, bin, e.cgroup, e.pin, bin, e.pin),
			     (int)sizeof(cmd));
		cr_assert_eq(sh_out(cmd, out, sizeof(out)), 0, "%s", out);
		if (on) {
			cr_assert(strstr(out, "lism: note: kernel.bpf_stats_enabled is 1"), "%s", out);
			cr_assert(strstr(out, "BPF time: kernel.bpf_stats_enabled=1, so every BPF program run"), "%s",
				  out);
		} else {
			cr_assert_null(strstr(out, "note: kernel.bpf_stats_enabled"), "%s", out);
			cr_assert_null(strstr(out, "BPF time: kernel.bpf_stats_enabled=1"), "%s", out);
		}
		cr_assert_eq(lism(&e, "unload"), 0);
	}
	unlink(file);
}

Test(cli, needs_root)
{
	char out[4096];
	int rc;

	require_root();
	env_up(&e, NULL);
	rc = sh_out("cd / && setpriv --reuid=65534 --regid=65534 --clear-groups "
		    "\"$LISM_BIN\" load --pin-path /sys/fs/bpf/lism-t-nobody 2>&1",
		    out, sizeof(out));
	expect(rc, LISM_EXIT_ENV, out, "must run as root");
}

Test(cli, pins_are_root_only_and_readable_with_bpftool)
{
	char out[65536], cmd[PATH_MAX + 64];
	struct stat st;

	require_root();
	env_up(&e, NULL);
	cr_assert_eq(stat(e.pin, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0700, "pin dir mode %o", st.st_mode & 0777);
	snprintf(cmd, sizeof(cmd), "bpftool map dump pinned %s/device 2>&1", e.pin);
	cr_assert_eq(sh_out(cmd, out, sizeof(out)), 0, "%s", out);
	/* BTF makes the dump name every field */
	cr_assert(strstr(out, "\"gid\"") && strstr(out, "\"chid\": 65535") && strstr(out, "\"max_dmbs\""),
		  "device dump: %s", out);
	snprintf(cmd, sizeof(cmd), "bpftool map dump pinned %s/dmbs 2>&1 | head -40", e.pin);
	sh_out(cmd, out, sizeof(out));
	cr_assert(strstr(out, "\"peer_token\"") && strstr(out, "\"rx_bytes\""), "dmbs dump: %s", out);
}

Test(cli, status_json)
{
	struct json_object *j, *v;
	char out[8192];
	int c, s;

	require_root();
	needs(LISM_F_DATA_PATH);
	env_up(&e, "--max-dmbs 100 --dmb-size 256K");
	env_enter(&e);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c, &s);
	make_senders(&e, c, s);
	cr_assert_eq(send_all(c, 1, 0, 5000), 0);
	cr_assert_eq(recv_check(s, 1, 0, 5000, 5000), 0);
	cr_assert_eq(lism_out(&e, "status -j", out, sizeof(out)), 0, "%s", out);
	j = json_tokener_parse(out);
	cr_assert_not_null(j, "not JSON: %s", out);
	cr_assert(json_object_object_get_ex(j, "name", &v));
	cr_assert_str_eq(json_object_get_string(v), "loopback-ism");
	cr_assert(json_object_object_get_ex(j, "chid", &v));
	cr_assert_eq(json_object_get_int(v), 0xffff);
	cr_assert(json_object_object_get_ex(j, "gid", &v));
	cr_assert_eq(strlen(json_object_get_string(v)), 33);
	cr_assert(json_object_object_get_ex(j, "max_dmbs", &v));
	cr_assert_eq(json_object_get_int(v), 100);
	cr_assert(json_object_object_get_ex(j, "dmb_size", &v));
	cr_assert_eq(json_object_get_int(v), 256 << 10);
	cr_assert(json_object_object_get_ex(j, "dmbs_in_use", &v));
	cr_assert_eq(json_object_get_int(v), 2);
	cr_assert(json_object_object_get_ex(j, "confirmed", &v));
	cr_assert_eq(json_object_get_int(v), 1);
	cr_assert(json_object_object_get_ex(j, "shortcut_bytes", &v));
	cr_assert_eq(json_object_get_int64(v), 5000);
	cr_assert(json_object_object_get_ex(j, "fallback_reasons", &v));
	cr_assert(json_object_object_get_ex(v, "max-dmb", NULL));
	cr_assert(json_object_object_get_ex(j, "eager_senders", &v));
	cr_assert(!json_object_get_boolean(v));
	cr_assert(json_object_object_get_ex(j, "sender_timer", &v));
	cr_assert(json_object_get_boolean(v), "the sender join timer is not ready: %s", out);
	cr_assert(json_object_object_get_ex(j, "sender_sockets", &v));
	cr_assert_eq(json_object_get_int(v), 2);
	cr_assert(json_object_object_get_ex(j, "senders_joined", &v));
	cr_assert_eq(json_object_get_int(v), 2);
	cr_assert(json_object_object_get_ex(j, "backstop", &v));
	cr_assert(json_object_get_boolean(v), "the backstop is attached: %s", out);
	cr_assert(json_object_object_get_ex(j, "backstop_recursion_misses", &v) && v,
		  "no backstop misses (the program's pin unreadable?): %s", out);
	json_object_put(j);
	cr_assert_eq(lism_out(&e, "status", out, sizeof(out)), 0);
	cr_assert(strstr(out, "loopback-ism") && strstr(out, "0xFFFF"), "%s", out);
	cr_assert(strstr(out, "backstop: tcp_destroy_sock, ") && strstr(out, "sweep: 0 entries"), "%s", out);
	cr_assert(strstr(out, "senders: after 4 data segments each way or bulk sends (timer ready), 2 now; 2 joined"), "%s", out);
	close(c);
	close(s);
}

/* Unload never pulls the map from under a live shortcut connection. */
Test(cli, unload_waits_for_shortcut_connections)
{
	struct lism_snapshot st;
	char out[4096], cmd[PATH_MAX + 64];
	int c, s, c2, s2;

	require_root();
	needs(LISM_F_DATA_PATH); /* without one, pairs hold nothing unload must wait for */
	env_up(&e, NULL);
	env_enter(&e);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c, &s);
	cr_assert_eq(send_all(c, 1, 0, 100000), 0); /* unread shortcut bytes */
	expect(lism_out(&e, "unload --timeout 1", out, sizeof(out)), LISM_EXIT_BUSY, out,
	       "still use the shortcut");
	snap(&e, &st);
	cr_assert_eq(st.dev.active, 0, "a busy unload must switch new connections off");
	cr_assert_eq(st.confirmed, 1);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c2, &s2);
	snap(&e, &st);
	cr_assert_eq(st.reasons[LISM_R_INACTIVE], 1, "new connection while unloading");
	cr_assert_eq(recv_check(s, 1, 0, 100000, 5000), 0, "bytes lost during the unload attempt");
	close(c);
	close(s);
	close(c2);
	close(s2);
	cr_assert_eq(wait_drained(&e, 3000), 0);
	/* something else pinned next to lism's pins is left alone */
	cr_assert_eq(sh("bpftool map create %s/not-lism type array key 4 value 4 entries 1 name notlism",
			e.pin),
		     0);
	expect(lism_out(&e, "unload --timeout 5", out, sizeof(out)), 0, out, "unloaded");
	e.loaded = 0;
	cr_assert_eq(sh("test \"$(ls %s)\" = not-lism", e.pin), 0, "unload touched a foreign pin");
	sh("rm -rf %s", e.pin);
	snprintf(cmd, sizeof(cmd), "test -z \"$(bpftool cgroup show %s)\"", e.cgroup);
	cr_assert_eq(sh("%s", cmd), 0, "programs still attached to the cgroup");
}

static int link_prog_id(const struct env *env)
{
	char cmd[PATH_MAX + 64], out[4096];
	const char *p;

	snprintf(cmd, sizeof(cmd), "bpftool link show pinned %s/link_sockops", env->pin);
	cr_assert_eq(sh_out(cmd, out, sizeof(out)), 0, "%s", out);
	p = strstr(out, "prog ");
	cr_assert_not_null(p, "%s", out);
	return atoi(p + 5);
}

/* The id of a program lism pinned under @name. */
static int pinned_prog_id(const struct env *env, const char *name)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	int fd = lism_pin_open(env->pin, name);

	cr_assert_geq(fd, 0, "%s/%s is not pinned", env->pin, name);
	cr_assert_eq(bpf_obj_get_info_by_fd(fd, &info, &len), 0);
	close(fd);
	return (int)info.id;
}

/* lism load --upgrade in the middle of a transfer: nothing lost, new programs in force. */
Test(cli, upgrade_in_place_mid_transfer)
{
	struct lism_snapshot before, after;
	struct pump_result r;
	int c, s, c2, s2, marker[2], prog_before, sender_before, st;
	char out[4096], k;
	pid_t pid;

	require_root();
	needs(LISM_F_DATA_PATH);
	env_up(&e, NULL);
	struct env none = e;

	snprintf(none.pin, sizeof(none.pin), "/sys/fs/bpf/lism-t-%d-none", getpid());
	expect(lism_out(&none, "load --upgrade", out, sizeof(out)), LISM_EXIT_STATE, out,
	       "nothing is loaded");
	snap(&e, &before);
	prog_before = link_prog_id(&e);
	sender_before = pinned_prog_id(&e, LISM_PIN_PROG_SENDER);
	env_enter(&e);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c, &s);
	cr_assert_eq(pipe2(marker, O_NONBLOCK), 0);
	pid = fork();
	if (pid == 0) {
		close(c);
		close(s);
		usleep(20000);
		int rc = lism(&e, "load --upgrade");

		_exit(write(marker[1], "u", 1) == 1 ? rc : 99);
	}
	/* 32 MiB each way at a time until the upgrade is done, and once more: traffic runs across it */
	for (int i = 0, done = 0; done < 2; i++) {
		cr_assert_lt(i, 500, "the upgrade did not finish");
		pump(c, s, 32u << 20, 32u << 20, 256u << 10, 100 + i, 60000, &r);
		cr_assert(r.ok, "a transfer across an upgrade: %s", r.why);
		if (done || read(marker[0], &k, 1) == 1)
			done++;
	}
	waitpid(pid, &st, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "lism load --upgrade exit %d", WEXITSTATUS(st));
	cr_assert_neq(link_prog_id(&e), prog_before, "the cgroup link still runs the old program");
	snap(&e, &after);
	cr_assert_arr_eq(after.dev.gid, before.dev.gid, 16, "the upgrade changed the device GID");
	cr_assert_eq(after.confirmed, 1);
	/*
	 * The upgrade cancelled the old program's sweep timer, the last thing
	 * holding the old handshake program, so that program goes away; and it
	 * armed the new program's sweep at once: the entries in use are swept
	 * with no new connection.
	 */
	for (int waited = 0, fd; (fd = bpf_prog_get_fd_by_id(prog_before)) >= 0; waited += 10) {
		close(fd);
		cr_assert_lt(waited, 5000, "the old handshake program outlived the upgrade (its sweep runs on)");
		usleep(10 * 1000);
	}
	/* the sender join timer's callback moved to the new program in place */
	cr_assert_neq(pinned_prog_id(&e, LISM_PIN_PROG_SENDER), sender_before);
	for (int waited = 0, fd; (fd = bpf_prog_get_fd_by_id(sender_before)) >= 0; waited += 10) {
		close(fd);
		cr_assert_lt(waited, 5000, "the sender join timer still runs the old program's callback");
		usleep(10 * 1000);
	}
	snap(&e, &before);
	usleep((LISM_SWEEP_TICK_MS * 3 + 100) * 1000);
	snap(&e, &after);
	cr_assert_gt(after.stats[LISM_S_SWEEPS], before.stats[LISM_S_SWEEPS],
		     "no sweep after the upgrade until a new connection");
	/* the old connection keeps working; a new one pairs under the new programs */
	pump(c, s, 8u << 20, 8u << 20, 256u << 10, 24, 30000, &r);
	cr_assert(r.ok, "%s", r.why);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c2, &s2);
	pump(c2, s2, 8u << 20, 8u << 20, 256u << 10, 25, 30000, &r);
	cr_assert(r.ok, "%s", r.why);
	snap(&e, &after);
	cr_assert_eq(after.confirmed, 2, "a connection after the upgrade did not pair");
	cr_assert_eq(wait_senders(&e, 4, 3000), 0,
		     "the new connection's ends did not become senders after the upgrade");
	close(c);
	close(s);
	close(c2);
	close(s2);
	close(marker[0]);
	close(marker[1]);
	cr_assert_eq(wait_drained(&e, 3000), 0);
}

/* Pins of another layout are refused, never misread or half-removed. */
Test(cli, another_layout_is_refused)
{
	struct lism_instance in;
	struct lism_device d;
	char out[4096];

	require_root();
	env_up(&e, NULL);
	cr_assert_eq(lism_instance_open(&in, e.pin), 0);
	cr_assert_eq(lism_device_read(&in, &d), 0);
	d.layout = LISM_LAYOUT_VERSION + 7; /* as an older or newer lism would have left it */
	cr_assert_eq(lism_device_write(&in, &d), 0);
	expect(lism_out(&e, "status", out, sizeof(out)), LISM_EXIT_STATE, out, "layout");
	expect(lism_out(&e, "unload", out, sizeof(out)), LISM_EXIT_STATE, out, "layout");
	expect(lism_out(&e, "load --upgrade", out, sizeof(out)), LISM_EXIT_STATE, out, "layout");
	expect(lism_out(&e, "set active off", out, sizeof(out)), LISM_EXIT_STATE, out, "layout");
	expect(lism_out(&e, "stats", out, sizeof(out)), LISM_EXIT_STATE, out, "layout");
	expect(lism_out(&e, "stats reset", out, sizeof(out)), LISM_EXIT_STATE, out, "layout");
	expect(lism_out(&e, "conns", out, sizeof(out)), LISM_EXIT_STATE, out, "layout");
	expect(lism_out(&e, "events", out, sizeof(out)), LISM_EXIT_STATE, out, "layout");
	cr_assert_eq(access(e.pin, F_OK), 0, "a refused command removed the pins");
	d.layout = LISM_LAYOUT_VERSION;
	cr_assert_eq(lism_device_write(&in, &d), 0);
	lism_instance_close(&in);
}

/*
 * A load killed after libbpf pinned its maps but before it wrote the device
 * (SIGKILL while the verifier runs) leaves pins with layout 0: every command
 * names them, and unload removes them.  Here the device is zeroed by hand.
 */
Test(cli, unload_removes_what_an_unfinished_load_left)
{
	struct lism_instance in;
	struct lism_device d = { 0 };
	char out[4096], args[PATH_MAX + 64];

	require_root();
	env_up(&e, NULL);
	cr_assert_eq(lism_instance_open(&in, e.pin), 0);
	cr_assert_eq(lism_device_write(&in, &d), 0);
	lism_instance_close(&in);
	snprintf(args, sizeof(args), "load --cgroup %s", e.cgroup);
	expect(lism_out(&e, "status", out, sizeof(out)), LISM_EXIT_STATE, out, "a load that did not finish");
	expect(lism_out(&e, args, out, sizeof(out)), LISM_EXIT_STATE, out, "a load that did not finish");
	expect(lism_out(&e, "unload", out, sizeof(out)), 0, out, "unloaded from");
	cr_assert_eq(access(e.pin, F_OK), -1, "unload left %s", e.pin);
	e.loaded = 0;
	expect(lism_out(&e, args, out, sizeof(out)), 0, out, "lism: loaded at");
	e.loaded = 1;
}

/*
 * SIGTERM or Ctrl-C during a load waits until the load is done: what is
 * pinned is a whole instance or nothing, wherever the signal lands.
 */
Test(cli, a_signal_during_load_leaves_a_whole_instance_or_nothing)
{
	char out[4096], cmd[16384];
	const char *bin = getenv("LISM_BIN") ? getenv("LISM_BIN") : "build/lism";
	static const int delays_ms[] = { 20, 60, 120, 250, 500 };

	require_root();
	env_up(&e, NULL);
	cr_assert_eq(lism(&e, "unload"), 0);
	e.loaded = 0;
	for (size_t i = 0; i < sizeof(delays_ms) / sizeof(delays_ms[0]); i++) {
		int outfd, st;
		pid_t p;

		cr_assert_lt(snprintf(cmd, sizeof(cmd), "exec %s load --cgroup %s --pin-path %s", bin, e.cgroup,
				      e.pin),
			     (int)sizeof(cmd));
		p = spawn_sh(cmd, &outfd);
		usleep(delays_ms[i] * 1000);
		kill(p, SIGTERM);
		waitpid(p, &st, 0);
		close(outfd);
		if (access(e.pin, F_OK))
			continue; /* it died before the first pin */
		/* whatever is pinned is a whole instance: status reads it, unload removes it */
		cr_assert_eq(lism_out(&e, "status", out, sizeof(out)), 0, "after SIGTERM at %d ms: %s", delays_ms[i],
			     out);
		cr_assert_eq(lism_out(&e, "unload", out, sizeof(out)), 0, "%s", out);
		cr_assert_eq(access(e.pin, F_OK), -1);
	}
}

/* lism unload in the middle of a transfer: the transfer finishes exact, then unload does. */
Test(cli, unload_mid_transfer)
{
	struct lism_snapshot st;
	struct pump_result r;
	int c, s, c2, s2, marker[2], status;
	char k;
	pid_t pid;

	require_root();
	needs(LISM_F_DATA_PATH); /* without one, pairs hold nothing unload must wait for */
	env_up(&e, NULL);
	env_enter(&e);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c, &s);
	cr_assert_eq(pipe2(marker, O_NONBLOCK), 0);
	pid = fork();
	if (pid == 0) {
		close(c); /* inherited: they would keep the sockets (and the unload) alive */
		close(s);
		usleep(20000);
		if (write(marker[1], "s", 1) != 1)
			_exit(98);
		_exit(lism(&e, "unload --timeout 60"));
	}
	pump(c, s, 256u << 20, 256u << 20, 256u << 10, 26, 60000, &r);
	cr_assert_eq(read(marker[0], &k, 1), 1, "the transfer ended before the unload started");
	cr_assert(r.ok, "a transfer across an unload: %s", r.why);
	cr_assert_eq(waitpid(pid, &status, WNOHANG), 0, "unload finished under a live shortcut");
	snap(&e, &st);
	cr_assert_eq(st.dev.active, 0, "unload did not switch new connections off");
	tcp_pair(AF_INET, "127.0.0.1", 1, &c2, &s2);
	snap(&e, &st);
	cr_assert_eq(st.confirmed, 1, "a new connection paired during the unload");
	close(c2);
	close(s2);
	close(c);
	close(s);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "unload exit %d", WEXITSTATUS(status));
	e.loaded = 0;
	cr_assert_eq(access(e.pin, F_OK), -1, "pins left after the unload");
	close(marker[0]);
	close(marker[1]);
}
