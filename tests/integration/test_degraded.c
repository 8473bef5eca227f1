// SPDX-License-Identifier: GPL-2.0-only
/*
 * The degraded paths: each optional program refused by the verifier for
 * real (LISM_TEST_REJECT, bpf/reject.bpf.h), and lism without it.  The core
 * must still pair and carry a checksummed stream through the shortcut;
 * load, status, status -j and /metrics must say the feature is off and why;
 * the command that needs it must explain itself.  And a core program
 * refused: a short report, the whole log in a file, nothing left behind.
 * Runs on every machine: the refusal is made, not waited for, and the
 * features this kernel lacks anyway (lism probe) are expected off too.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "feature.h"
#include "harness.h"
#include "lism/exec.h"
#include "pins.h"
#include "traffic.h"

static struct env e;
static pid_t child = -1;

static void down(void)
{
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		child = -1;
	}
	unsetenv("LISM_TEST_REJECT");
	env_down(&e);
}

TestSuite(degraded, .fini = down, .timeout = 120);

/* Load this test's instance with @feature's program refused by the verifier. */
static void up_without(const char *feature)
{
	setenv("LISM_TEST_REJECT", feature, 1);
	env_up(&e, LISM_TEST_MEASURE); /* the checksummed stream below measures the shortcut itself */
	unsetenv("LISM_TEST_REJECT");
}

static struct json_object *status_json(void)
{
	static char out[1 << 18];
	struct json_object *j;

	cr_assert_eq(lism_out(&e, "status -j", out, sizeof(out)), 0, "%s", out);
	j = json_tokener_parse(out);
	cr_assert_not_null(j, "status -j: %s", out);
	return j;
}

static struct json_object *jget(struct json_object *o, const char *key)
{
	struct json_object *v;

	cr_assert(json_object_object_get_ex(o, key, &v), "no '%s' in %s", key, json_object_to_json_string(o));
	return v;
}

static int count(const char *text, const char *needle)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/*
 * @name is off for the verifier's refusal of @prog, and said so: one line at
 * load, one in status, and in status -j; every other feature is as the
 * kernel allows (on where the probe finds what it needs).
 */
static void assert_reported_off(enum lism_feature off, const char *prog)
{
	const char *name = lism_feature_info(off)->name;
	char out[16384], want[256];
	struct json_object *j, *feats, *one;
	int on[LISM_F_MAX], others_off = 0;

	for (int f = 0; f < LISM_F_MAX; f++) {
		on[f] = f != (int)off && kernel_has(f);
		others_off += f != (int)off && !on[f];
	}
	if (kernel_has(off))
		snprintf(want, sizeof(want), "(%s) is off: the verifier refused %s: R1 invalid mem access 'scalar'",
			 name, prog);
	else /* the kernel's own reason comes first (6.1's data path) */
		snprintf(want, sizeof(want), "(%s) is off: the kernel lacks ", name);
	cr_assert_eq(count(e.load_out, " is off: "), 1 + others_off, "load said more or less than it should:\n%s",
		     e.load_out);
	cr_assert_not_null(strstr(e.load_out, want), "load did not say it:\n%s", e.load_out);
	/* the line names the whole log, which is really there */
	if (kernel_has(off)) {
		const char *log = strstr(e.load_out, "(log: ");
		char path[256] = "";

		cr_assert_not_null(log, "%s", e.load_out);
		sscanf(log + 6, "%255[^)]", path);
		cr_assert_eq(sh("grep -q 'BEGIN PROG LOAD LOG' %s", path), 0, "no verifier log in %s", path);
		unlink(path);
	}
	cr_assert_eq(lism_out(&e, "status", out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, want), "status did not say it:\n%s", out);
	cr_assert_eq(count(out, "  OFF: "), 1 + others_off, "%s", out);

	j = status_json();
	feats = jget(j, "features");
	for (int f = 0; f < LISM_F_MAX; f++) {
		one = jget(feats, lism_feature_info(f)->name);
		cr_assert_eq(json_object_get_boolean(jget(one, "enabled")), on[f], "%s: %s",
			     lism_feature_info(f)->name, json_object_to_json_string(one));
	}
	one = jget(feats, name);
	cr_assert_str_eq(json_object_get_string(jget(one, "cause")), kernel_has(off) ? "verifier" : "kernel");
	if (kernel_has(off))
		cr_assert_not_null(strstr(json_object_get_string(jget(one, "reason")), prog));
	cr_assert_not(json_object_get_boolean(jget(one, "core")));
	json_object_put(j);
}

/*
 * The core still pairs and carries a checksummed stream both ways through
 * the shortcut (on a kernel without a data path, 6.1: over TCP, paired), and
 * gives every DMB back at the close.
 */
static void assert_core_carries(void)
{
	struct lism_snapshot before, after;
	struct pump_result r;
	int c, s, dp = kernel_has(LISM_F_DATA_PATH);

	env_enter(&e);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c, &s);
	if (dp)
		cr_assert_eq(wait_senders(&e, 2, 3000), 0, "the pair's ends are not senders (--eager-senders)");
	snap(&e, &before);
	pump(c, s, 2 << 20, 1 << 20, 65536, 7, 20000, &r);
	cr_assert(r.ok, "%s", r.why);
	snap(&e, &after);
	cr_assert_eq(after.confirmed, 1);
	if (!dp) { /* paired, and said why its bytes stay on TCP */
		cr_assert_geq(after.reasons[LISM_R_NO_DATA_PATH], 2);
		cr_assert_eq(after.stats[LISM_S_SC_BYTES], before.stats[LISM_S_SC_BYTES]);
	} else {
		cr_assert_gt(after.stats[LISM_S_SC_BYTES] - before.stats[LISM_S_SC_BYTES], 1 << 20,
			     "the stream did not take the shortcut: %llu bytes of 3 MiB through it, %llu over TCP",
			     (unsigned long long)(after.stats[LISM_S_SC_BYTES] - before.stats[LISM_S_SC_BYTES]),
			     (unsigned long long)(after.stats[LISM_S_TCP_BYTES] - before.stats[LISM_S_TCP_BYTES]));
	}
	close(c);
	close(s);
	env_leave(&e);
	cr_assert_eq(wait_drained(&e, 5000), 0, "DMBs left in use");
}

/* /metrics of a daemon that adopts the instance (its upgrade sees the same refusal). */
static void assert_metrics(enum lism_feature off)
{
	char buf[8192] = "", body[1 << 16], cmd[PATH_MAX * 2], url[128], series[128];
	int out, port = 34000 + getpid() % 1000;

	snprintf(cmd, sizeof(cmd), "LISM_TEST_REJECT=%s exec \"$LISM_BIN\" run --metrics-addr 127.0.0.1:%d "
		 "--pin-path %s", lism_feature_info(off)->name, port, e.pin);
	child = spawn_sh(cmd, &out);
	/* its adoption loads every object: 10 s here, more under TCG (make vmtest) */
	cr_assert(wait_output(out, buf, sizeof(buf), "running", 60000), "daemon did not start: %s", buf);
	cr_assert(strstr(buf, " is off: "), "the adoption's upgrade did not say it: %s", buf);
	snprintf(url, sizeof(url), "curl -s http://127.0.0.1:%d/metrics", port);
	cr_assert_eq(sh_out(url, body, sizeof(body)), 0);
	for (int f = 0; f < LISM_F_MAX; f++) {
		snprintf(series, sizeof(series), "\nlism_feature_enabled{feature=\"%s\",core=\"%d\"} %d\n",
			 lism_feature_info(f)->name, lism_feature_info(f)->core, f != (int)off && kernel_has(f));
		cr_assert_not_null(strstr(body, series), "no%s in /metrics", series);
	}
	stop_spawned(&child, out);
}

Test(degraded, without_the_conns_iterator)
{
	char out[4096];
	int rc;

	require_root();
	up_without("conns");
	assert_reported_off(LISM_F_CONNS, "lism_iter_socks");
	cr_assert_neq(access(e.pin, F_OK), -1);
	assert_core_carries();
	/* the command that needs it says which feature, why, and what still works */
	rc = lism_out(&e, "conns", out, sizeof(out));
	cr_assert_eq(rc, 3, "exit %d: %s", rc, out);
	cr_assert_not_null(strstr(out, "lism conns needs the conns iterator (conns), which is off on this "
				       "instance: the verifier refused lism_iter_socks"), "%s", out);
	cr_assert_not_null(strstr(out, "status, stats, events and /metrics work"), "%s", out);
	cr_assert_eq(lism_out(&e, "conns -j", out, sizeof(out)), 3, "%s", out);
	cr_assert_eq(lism_out(&e, "stats", out, sizeof(out)), 0, "%s", out);
	assert_metrics(LISM_F_CONNS);
}

/* Without lism exec's options: a mark fails as with no lism at all, and nothing else changes. */
Test(degraded, without_lism_exec)
{
	char path[PATH_MAX];
	int fd, one = 1;

	require_root();
	up_without("exec");
	assert_reported_off(LISM_F_EXEC, "lism_exec_set");
	lism_pin_join(path, sizeof(path), e.pin, LISM_PIN_LINK_EXEC_SET);
	cr_assert_neq(access(path, F_OK), 0, "lism_exec_set is attached");
	lism_pin_join(path, sizeof(path), e.pin, LISM_PIN_LINK_EXEC_GET);
	cr_assert_neq(access(path, F_OK), 0, "lism_exec_get is attached");
	env_enter(&e);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(setsockopt(fd, LISM_SOL, LISM_SO_EXEC, &one, sizeof(one)), -1, "a mark took without lism exec");
	cr_assert_eq(errno, ENOPROTOOPT);
	close(fd);
	env_leave(&e);
	assert_core_carries();
	assert_metrics(LISM_F_EXEC);
}

Test(degraded, without_the_backstop)
{
	char path[PATH_MAX], out[16384];
	struct json_object *j;

	require_root();
	up_without("backstop");
	assert_reported_off(LISM_F_BACKSTOP, "lism_destroy");
	lism_pin_join(path, sizeof(path), e.pin, LISM_PIN_LINK_DESTROY);
	cr_assert_neq(access(path, F_OK), 0, "the backstop is attached");
	cr_assert_eq(lism_out(&e, "status", out, sizeof(out)), 0);
	cr_assert_not_null(strstr(out, "backstop: OFF"), "%s", out);
	j = status_json();
	cr_assert_not(json_object_get_boolean(jget(j, "backstop")));
	json_object_put(j);
	assert_core_carries();
	assert_metrics(LISM_F_BACKSTOP);
}

Test(degraded, without_the_sweep)
{
	struct lism_snapshot st;
	char out[16384];
	int c, s;

	require_root();
	up_without("sweep");
	assert_reported_off(LISM_F_SWEEP, "lism_sweep_start");
	cr_assert_eq(lism_out(&e, "status", out, sizeof(out)), 0);
	cr_assert_not_null(strstr(out, "sweep: OFF"), "%s", out);
	assert_core_carries();
	/* an entry in use for three ticks: a running sweep would have passed over the table */
	env_enter(&e);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c, &s);
	env_leave(&e);
	usleep(3 * LISM_SWEEP_TICK_MS * 1000 + 200 * 1000);
	snap(&e, &st);
	cr_assert_eq(st.usage.dmbs_in_use, 2);
	cr_assert_eq(st.stats[LISM_S_SWEEPS], 0, "the sweep ran");
	close(c);
	close(s);
	cr_assert_eq(wait_drained(&e, 5000), 0);
	assert_metrics(LISM_F_SWEEP);
}

/* The same table entry, with the sweep on: the check above can fail. */
Test(degraded, the_sweep_runs_when_it_is_on)
{
	struct lism_snapshot st;
	int c, s;

	require_root();
	env_up(&e, NULL);
	cr_assert_eq(count(e.load_out, "(sweep) is off: "), 0, "%s", e.load_out);
	env_enter(&e);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c, &s);
	env_leave(&e);
	/* a pass over the 5000-entry table takes two ticks; a busy machine may delay them */
	for (int waited = 0;; waited += LISM_SWEEP_TICK_MS) {
		snap(&e, &st);
		if (st.stats[LISM_S_SWEEPS] > 0)
			break;
		cr_assert_lt(waited, 10000, "the sweep did not run");
		usleep(LISM_SWEEP_TICK_MS * 1000);
	}
	close(c);
	close(s);
}

/* A core program refused: a short report, the whole log kept, nothing left behind. */
static void core_refused(const char *feature, const char *prog, const char *title)
{
	char out[1 << 16], cmd[PATH_MAX * 6], path[256] = "", want[256];
	struct utsname u;
	const char *log;
	int rc;

	require_root();
	env_up(&e, NULL);
	cr_assert_eq(lism(&e, "unload"), 0);
	e.loaded = 0;
	snprintf(cmd, sizeof(cmd), "LISM_TEST_REJECT=%s \"$LISM_BIN\" load --cgroup %s --pin-path %s 2>&1",
		 feature, e.cgroup, e.pin);
	rc = sh_out(cmd, out, sizeof(out));
	cr_assert_eq(rc, 1, "exit %d: %s", rc, out);
	snprintf(want, sizeof(want), "the verifier refused %s, a core program (%s), so lism cannot load", prog,
		 title);
	cr_assert_not_null(strstr(out, want), "%s", out);
	cr_assert_not_null(strstr(out, "  verifier: R1 invalid mem access 'scalar'\n"), "%s", out);
	cr_assert_eq(count(out, "  verifier: "), 2, "not the last two lines: %s", out);
	uname(&u);
	cr_assert_not_null(strstr(out, u.release), "no kernel release: %s", out);
	cr_assert_not_null(strstr(out, "hint: 'lism probe'"), "%s", out);
	cr_assert_lt(count(out, "\n"), 12, "not a few lines:\n%s", out);
	log = strstr(out, "the whole log: ");
	cr_assert_not_null(log, "%s", out);
	sscanf(log + strlen("the whole log: "), "%255s", path);
	cr_assert_eq(sh("grep -q 'BEGIN PROG LOAD LOG' %s && grep -q 'processed' %s", path, path), 0,
		     "the saved log of %s is not the verifier's", path);
	unlink(path);
	cr_assert_neq(access(e.pin, F_OK), 0, "a refused load left %s", e.pin);
	cr_assert_eq(other_lism_covers(e.cgroup), other_lism_covers(e.cghome), "a refused load stayed attached");
	/* -v: the whole log on the terminal instead (thousands of lines: into a file of the test's) */
	snprintf(cmd, sizeof(cmd), "LISM_TEST_REJECT=%s \"$LISM_BIN\" load -v --cgroup %s --pin-path %s "
		 ">/tmp/%s.out 2>&1; echo $?", feature, e.cgroup, e.pin, e.name);
	cr_assert_eq(sh_out(cmd, out, sizeof(out)), 0);
	if (atoi(out) != 1) {
		snprintf(cmd, sizeof(cmd), "head -c 2000 /tmp/%s.out", e.name);
		sh_out(cmd, out + strlen(out), sizeof(out) - strlen(out));
	}
	cr_assert_eq(atoi(out), 1, "exit %s", out);
	snprintf(cmd, sizeof(cmd), "grep -c . /tmp/%s.out; grep -c 'BEGIN PROG LOAD LOG' /tmp/%s.out; "
		 "sed -n 's/.*the whole log is above, and in //p' /tmp/%s.out", e.name, e.name, e.name);
	cr_assert_eq(sh_out(cmd, out, sizeof(out)), 0, "%s", out);
	{
		int lines = 0, logs = 0;

		cr_assert_eq(sscanf(out, "%d %d %255s", &lines, &logs, path), 3, "%s", out);
		cr_assert_gt(lines, 50, "-v did not show the whole log (%d lines)", lines);
		cr_assert_eq(logs, 1, "-v did not show the verifier's log");
	}
	unlink(path);
	sh("rm -f /tmp/%s.out", e.name);
	cr_assert_neq(access(e.pin, F_OK), 0);
}

Test(degraded, a_refused_handshake_is_said_in_a_few_lines)
{
	core_refused("handshake", "lism_sockops", "the handshake");
}

/*
 * Without the data path (a kernel that lacks it, as 6.1 does, or the
 * verifier's refusal) lism still pairs: both ends confirmed, their bytes
 * on TCP with reason no-data-path, nothing in the maps, every DMB back at
 * the close.  The next upgrade that can load it carries new pairs through
 * the shortcut.
 */
Test(degraded, without_the_data_path)
{
	static char out[1 << 16];
	struct lism_snapshot before, after;
	struct pump_result r;
	char path[PATH_MAX];
	int c, s;

	require_root();
	up_without("data_path");
	assert_reported_off(LISM_F_DATA_PATH, "lism_msg");
	lism_pin_join(path, sizeof(path), e.pin, LISM_PIN_PROG_MSG);
	cr_assert_neq(access(path, F_OK), 0, "lism_msg is pinned");
	lism_pin_join(path, sizeof(path), e.pin, LISM_PIN_PROG_SENDER);
	cr_assert_neq(access(path, F_OK), 0, "lism_sender_start is pinned");
	env_enter(&e);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c, &s);
	env_leave(&e);
	snap(&e, &before);
	pump(c, s, 2 << 20, 1 << 20, 65536, 7, 20000, &r);
	cr_assert(r.ok, "%s", r.why);
	snap(&e, &after);
	cr_assert_eq(after.confirmed, 1, "the pair was not confirmed");
	cr_assert_eq(after.usage.dmbs_in_use, 2);
	cr_assert_eq(after.shortcut_sockets, 0, "a member joined the shortcut map");
	cr_assert_eq(after.sender_sockets, 0, "a member joined the senders map");
	cr_assert_eq(after.reasons[LISM_R_NO_DATA_PATH], 2, "no-data-path counted %llu times, not once per end",
		     (unsigned long long)after.reasons[LISM_R_NO_DATA_PATH]);
	cr_assert_eq(after.stats[LISM_S_SC_BYTES], before.stats[LISM_S_SC_BYTES], "bytes took a shortcut");
	cr_assert_eq(after.stats[LISM_S_FALLBACKS], 0, "a pair without a data path is no fallback");
	cr_assert_eq(lism_out(&e, "conns -j", out, sizeof(out)), 0, "%s", out);
	cr_assert_eq(count(out, "\"mode\":\"tcp\",\"reason\":\"no-data-path\""), 2, "%s", out);
	cr_assert_eq(count(out, "\"peer_token\":\"0x"), 2, "the ends do not name their peers: %s", out);
	cr_assert_eq(lism_out(&e, "status", out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "senders: none: no data path on this instance (see data_path below); pairs "
				       "are confirmed and their bytes stay on TCP (2 ends)"), "%s", out);
	close(c);
	close(s);
	cr_assert_eq(wait_drained(&e, 5000), 0, "DMBs left in use");
	if (!kernel_has(LISM_F_DATA_PATH))
		return; /* a kernel without it (6.1): what runs there is tested */
	/* an upgrade that can load it switches the joins on */
	cr_assert_eq(lism_out(&e, "load --upgrade", out, sizeof(out)), 0, "%s", out);
	cr_assert_eq(count(out, "(data_path) is off: "), 0, "%s", out);
	assert_core_carries();
	assert_metrics(LISM_F_DATA_PATH); /* last: the daemon puts its own settings in force */
}

/*
 * Unload does not wait for pairs without a data path: nothing of theirs is
 * in the maps (it would wait the whole --timeout, then exit busy), and
 * they go on over TCP.
 */
Test(degraded, unload_does_not_wait_for_pairs_without_a_data_path)
{
	char out[4096];
	struct lism_snapshot st;
	int c, s, rc;

	require_root();
	up_without("data_path");
	env_enter(&e);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c, &s);
	env_leave(&e);
	snap(&e, &st);
	cr_assert_eq(st.confirmed, 1);
	cr_assert_eq(st.pair_only, 2);
	rc = lism_out(&e, "unload --timeout 3", out, sizeof(out));
	cr_assert_eq(rc, 0, "exit %d: %s", rc, out);
	e.loaded = 0;
	cr_assert_neq(access(e.pin, F_OK), 0, "%s is still there", e.pin);
	cr_assert_eq(send_all(c, 21, 0, 1 << 20), 0);
	cr_assert_eq(recv_check(s, 21, 0, 1 << 20, 5000), 0);
	cr_assert_eq(send_all(s, 22, 0, 1 << 20), 0);
	cr_assert_eq(recv_check(c, 22, 0, 1 << 20, 5000), 0);
	close(c);
	close(s);
}

/*
 * And the other way: an upgrade that cannot load it switches the joins
 * off; a pair already on the shortcut keeps its programs and its bytes.
 */
Test(degraded, an_upgrade_without_the_data_path_keeps_the_pairs_it_carries)
{
	char out[16384], path[PATH_MAX], cmd[PATH_MAX * 2];
	struct lism_snapshot st;
	int c, s, c2, s2;

	require_root();
	needs(LISM_F_DATA_PATH);
	env_up(&e, LISM_TEST_MEASURE);
	env_enter(&e);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c, &s);
	env_leave(&e);
	cr_assert_eq(wait_senders(&e, 2, 3000), 0, "the pair's ends are not senders (--eager-senders)");
	snprintf(cmd, sizeof(cmd), "LISM_TEST_REJECT=data_path \"$LISM_BIN\" load --upgrade --pin-path %s 2>&1",
		 e.pin);
	cr_assert_eq(sh_out(cmd, out, sizeof(out)), 0, "%s", out);
	cr_assert_eq(count(out, "(data_path) is off: "), 1, "%s", out);
	lism_pin_join(path, sizeof(path), e.pin, LISM_PIN_PROG_MSG);
	cr_assert_neq(access(path, F_OK), 0, "the old build's lism_msg stayed pinned");
	snap(&e, &st);
	cr_assert_not(st.dev.flags & LISM_DEV_F_DATA_PATH, "the handshake still makes members");
	cr_assert_eq(send_all(c, 9, 0, 1 << 20), 0);
	cr_assert_eq(recv_check(s, 9, 0, 1 << 20, 5000), 0);
	cr_assert_eq(send_all(s, 10, 0, 1 << 20), 0);
	cr_assert_eq(recv_check(c, 10, 0, 1 << 20, 5000), 0);
	env_enter(&e);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c2, &s2);
	env_leave(&e);
	snap(&e, &st);
	cr_assert_eq(st.confirmed, 2);
	cr_assert_eq(st.shortcut_sockets, 2, "the new pair joined, or the old one left");
	cr_assert_eq(st.reasons[LISM_R_NO_DATA_PATH], 2);
	close(c2);
	close(s2);
	close(c);
	close(s);
	cr_assert_eq(wait_drained(&e, 5000), 0, "DMBs left in use");
}

/* lism probe: every kernel feature and what it enables; the verifier's answer for every object. */
Test(degraded, probe_lists_what_the_kernel_has_and_what_it_enables)
{
	static char out[1 << 20];
	struct json_object *j, *feats, *reqs;
	/* under the kernel matrix the README's table says what each kernel has (tests/vm/requirements.py) */
	int ci = getenv("CI") && !strcmp(getenv("CI"), "true") && !getenv("LISM_KERNEL_MATRIX");

	require_root();
	cr_assert_eq(sh_out("\"$LISM_BIN\" probe -j", out, sizeof(out)), 0, "%.2000s", out);
	j = json_tokener_parse(out);
	cr_assert_not_null(j, "%.2000s", out);
	cr_assert(json_object_get_boolean(jget(j, "loadable")));
	cr_assert(json_object_get_boolean(jget(j, "probed_as_root")));
	feats = jget(j, "features");
	for (int f = 0; f < LISM_F_MAX; f++) {
		const struct lism_feature_info *fi = lism_feature_info(f);
		struct json_object *one = jget(feats, fi->name), *v = jget(one, "verifier");

		if (fi->core || ci) { /* under CI a missing capability is a failure, never a skip */
			cr_assert(json_object_get_boolean(jget(one, "kernel")), "%s: %s", fi->name,
				  json_object_to_json_string(one));
			if (*fi->programs)
				cr_assert(v && json_object_get_boolean(v), "%s: %s", fi->name,
					  json_object_to_json_string(one));
		}
	}
	reqs = jget(j, "requirements");
	cr_assert_gt(json_object_array_length(reqs), 50);
	for (size_t i = 0; i < json_object_array_length(reqs); i++) {
		struct json_object *r = json_object_array_get_idx(reqs, i);

		cr_assert_gt(json_object_array_length(jget(r, "used_by")), 0, "%s", json_object_to_json_string(r));
		cr_assert_gt(strlen(json_object_get_string(jget(r, "what"))), 3);
	}
	cr_assert_not_null(strstr(out, "\"what\":\"sk_psock.msg_tot_len\""), "the FIONREAD fix is not listed");
	cr_assert_not_null(strstr(out, "\"what\":\"helper bpf_msg_redirect_hash (sk_msg)\""));
	cr_assert_not_null(strstr(out, "\"what\":\"iterator task_file\""));
	json_object_put(j);
	cr_assert_eq(sh_out("\"$LISM_BIN\" probe", out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "lism can load on this kernel"), "%.2000s", out);
}

/*
 * An upgrade whose optional program this kernel refuses removes the old
 * build's (an instance runs one build's programs or none), and says so;
 * the next upgrade that can load it brings it back.
 */
Test(degraded, an_upgrade_that_cannot_load_a_feature_removes_the_old_one)
{
	char out[16384], path[PATH_MAX], cmd[PATH_MAX * 2];
	struct json_object *j;
	int c, s;

	require_root();
	env_up(&e, NULL);
	lism_pin_join(path, sizeof(path), e.pin, LISM_PIN_PROG_ITER);
	cr_assert_eq(access(path, F_OK), 0, "the iterator is not pinned");
	env_enter(&e);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c, &s);
	env_leave(&e);
	snprintf(cmd, sizeof(cmd), "LISM_TEST_REJECT=conns \"$LISM_BIN\" load --upgrade --pin-path %s 2>&1", e.pin);
	cr_assert_eq(sh_out(cmd, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "upgraded the programs"), "%s", out);
	cr_assert_eq(count(out, "(conns) is off: "), 1, "%s", out);
	cr_assert_neq(access(path, F_OK), 0, "the old build's iterator stayed");
	j = status_json();
	cr_assert_not(json_object_get_boolean(jget(jget(jget(j, "features"), "conns"), "enabled")));
	json_object_put(j);
	cr_assert_eq(lism_out(&e, "conns", out, sizeof(out)), 3, "%s", out);
	/* the connection made before is still carried */
	cr_assert_eq(send_all(c, 9, 0, 100000), 0);
	cr_assert_eq(recv_check(s, 9, 0, 100000, 5000), 0);
	cr_assert_eq(lism_out(&e, "load --upgrade", out, sizeof(out)), 0, "%s", out);
	cr_assert_eq(count(out, "(conns) is off: "), 0, "%s", out);
	cr_assert_eq(lism_out(&e, "conns -j", out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, kernel_has(LISM_F_DATA_PATH) ? "\"mode\":\"shortcut\"" :
								     "\"reason\":\"no-data-path\""),
			   "%s", out);
	close(c);
	close(s);
	cr_assert_eq(wait_drained(&e, 3000), 0);
}
