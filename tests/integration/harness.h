/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * End-to-end test environment: every test loads its own lism instance,
 * attached to a private cgroup2 directory and pinned in a private bpffs
 * directory, and makes its traffic in network namespaces it creates.
 * Names carry the runner's pid ("lism-t-<pid>-..."), and a post-run hook
 * sweeps whatever a crashed test left behind.
 */
#ifndef LISM_TEST_HARNESS_H
#define LISM_TEST_HARNESS_H

#include <limits.h>
#include <linux/types.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "device.h"
#include "lism/exec.h"
#include "lism/feature.h"
#include "lism/sender.h"

struct env {
	char name[64];
	char cgroot[PATH_MAX];
	char cgroup[PATH_MAX];
	char cghome[PATH_MAX]; /* the cgroup2 directory the test process came from (env_leave goes back) */
	char pin[PATH_MAX];
	char device[108];  /* lism exec's device socket of the test ($LISM_DEVICE, set by env_up) */
	char netns[8][64]; /* [0]: the test's own, where it starts (env_up) */
	int n_netns;
	int entered;
	int loaded;
	char memcg[PATH_MAX]; /* a cgroup v1 memory cgroup of the test (memcg_up), or "" */
	char memcg_home[PATH_MAX]; /* the memory cgroup this process came from (memcg_enter), or "" */
	char load_out[8192];       /* what `lism load` printed (stdout and stderr) */
	char plain_cgroup[PATH_MAX]; /* env_plain's, under a node-wide lism */
	char plain_pin[PATH_MAX];
	int plain_loaded;
};

/* Skips (not root) or fails (not root under CI=true). */
void require_root(void);

/* Whether feature @f runs here: the kernel has what it needs, the verifier takes it (`lism probe -j`). */
int kernel_has(enum lism_feature f);
/*
 * The test needs feature @f.  Where the kernel lacks it, the test is
 * skipped under the kernel matrix (make vmtest sets LISM_KERNEL_MATRIX=1:
 * the feature is off there by design, and the matrix says so), skipped on
 * a developer's machine, and failed under CI=true.
 */
void needs(enum lism_feature f);

/* The number after @name in a program's result line ("bytes 42 tcp 7"): fails if it is not there. */
unsigned long long line_field(const char *line, const char *name);

/* The counters of the lism exec device at @socket_path (its pairs' headers folded in now). */
struct lism_device_totals device_totals_at(const char *socket_path);

/* Something a test needs besides the kernel (a program, a second CPU) is
 * missing, @what saying which: failed under CI=true, else skipped. */
void needs_missing(const char *what);

/* Create the cgroup and load lism with extra `lism load` arguments. */
/*
 * Load arguments for tests that measure the shortcut itself (how much of a
 * stream it carried): by default a one-way transfer never makes its writer a
 * sender (include/lism/sender.h).  Tests of the default policy load without
 * them.
 */
#define LISM_TEST_MEASURE "--eager-senders"

void env_up(struct env *e, const char *load_args);
/* Move this process into / out of the test cgroup (sockets made inside are under lism). */
void env_enter(struct env *e);
void env_leave(struct env *e);
/*
 * Move this process where no lism handles its sockets (env_leave goes
 * back): the cgroup it came from, or, where a node-wide lism covers that
 * (make run), a cgroup of the test's own with a switched-off instance
 * (the instance nearest a socket owns it: docs/architecture.md).
 */
void env_plain(struct env *e);
/* Unload, remove cgroup, pins and namespaces.  Safe after a partial env_up. */
void env_down(struct env *e);

/*
 * A cgroup v1 memory cgroup of the test whose TCP socket memory is limited
 * to @limit bytes (memory.kmem.tcp.limit_in_bytes); env_down removes it.
 * Skips the test where the memory controller is not mounted as v1 with that
 * file (or fails it under CI=true).
 */
void memcg_up(struct env *e, unsigned long limit);
/* Move this process into it and back where it was: sockets made or accepted inside are charged to it. */
void memcg_enter(struct env *e);
void memcg_leave(struct env *e);
/* A counter of the test's memory cgroup (a file name: "memory.kmem.tcp.failcnt"). */
unsigned long long memcg_read(const struct env *e, const char *file);

/* Write @s to the file at @path (a sysctl, a cgroup file), or fail the test. */
void write_file(const char *path, const char *s);
/* Run a shell command; returns its exit status (or -1). */
int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Run a shell command capturing its standard output; returns its exit status. */
int sh_out(const char *cmd, char *out, size_t len);
/* Run build/lism with @args and --pin-path of @e; returns its exit status. */
int lism(const struct env *e, const char *args);
/* Same, capturing stdout into @out. */
int lism_out(const struct env *e, const char *args, char *out, size_t len);

/*
 * lism instances (their handshake programs) that sockets made in @cgroup
 * go through, this test's included if @cgroup is under it.  One outside
 * the test's own is a node-wide lism (make run): the test's "outside lism"
 * ends are under it.
 */
int other_lism_covers(const char *cgroup);

void snap(const struct env *e, struct lism_snapshot *s);
/* A top-level counter of `lism stats -j` (fails the test if it is missing). */
__u64 stats_json_u64(const struct env *e, const char *key);
/* Sockets in the shortcut map itself (snap's shortcut_sockets counts DMB entries instead). */
__u32 shortcut_members(const struct env *e);
/* Read the entry a token names (0 if absent). */
int dmb_lookup(const struct env *e, __u64 token, struct lism_dmb *out);
/* Wait until the table and the shortcut map are empty; returns dmbs in use left. */
long wait_drained(const struct env *e, int timeout_ms);
/* 0 once at least @n sockets are senders (the senders map), else how many are missing. */
long wait_senders(const struct env *e, __u32 n, int timeout_ms);
/*
 * Round trips on a confirmed pair, so that both ends become senders
 * (default policy): MAKE_SENDERS_BYTES bytes over TCP, counted as TCP bytes
 * at each end's first send as a sender (or its close).
 */
#define MAKE_SENDERS_BYTES (2 * (LISM_SENDER_MIN_SEGS + 1))
void make_senders(const struct env *e, int c, int s);
/* @rounds request/response exchanges of @size checked bytes, c to s (stream @seed) and back (@seed + 1). */
void round_trips(int c, int s, int rounds, __u32 size, __u32 seed);
/* @sends sends of @size checked bytes c to s (stream @seed), read every @batch (a multiple of it). */
void one_way_stream(int c, int s, int sends, __u32 size, int batch, __u32 seed);

/* A network namespace owned by the test (deleted by env_down). */
const char *env_netns(struct env *e, const char *suffix);
/* Switch this thread into @ns (NULL: back to the namespace we started in). */
void netns_switch(const char *ns);

/* Start `sh -c @cmd` with its stdout on *@out (a pipe); returns its pid. */
pid_t spawn_sh(const char *cmd, int *out);
/* SIGTERM to *@pid (spawn_sh), wait, close @out; it must exit 0.  *@pid becomes -1. */
void stop_spawned(pid_t *pid, int out);
/* Read @fd into @buf until @needle shows up in the text read so far; 0 on timeout. */
int wait_output(int fd, char *buf, size_t len, const char *needle, int ms);
/* Append what @fd has written to @buf until it stays quiet for @quiet_ms (0: what is there now). */
void read_until_quiet(int fd, char *buf, size_t len, int quiet_ms);

/* Sweep everything a runner with pid @pid may have left (report hook). */
void sweep_leftovers(int pid);

#endif
