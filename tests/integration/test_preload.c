// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unmodified programs under `lism exec` (liblism.so, exec/preload.c), in the
 * test's cgroup and network namespace with the test's own device: a
 * checksummed 10 GiB stream whose TCP connection carried only doorbells,
 * an edge-triggered non-blocking reader, kill -9 of either end mid-stream,
 * a Python asyncio echo over 200 connections, nginx serving a file by
 * sendfile to curl, redis under redis-benchmark with its data checked,
 * PostgreSQL's forked backends under pgbench with the bank's books checked,
 * sshd's fork, re-exec and sandboxed child carrying a checksummed stream, and
 * a peer without the library staying on TCP.
 */
#include <criterion/criterion.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "device.h"
#include "harness.h"
#include "lism/abi.h"
#include "lism/exec.h"
#include "lism/reason.h"
#include "broker.h"

static struct env e;
static struct lism_broker *dev;
static char bin[PATH_MAX], peer[PATH_MAX], programs[PATH_MAX];
/* A witness's directory, /run/sshd if the test made it, its ssh user: removed after the test, failed or not. */
static char scratch[PATH_MAX];
static int made_run_sshd, made_ssh_user;

/* ssh logs in as a user of its own: root may be locked ("!") on the machine, which sshd refuses without PAM */
#define SSH_USER "lism-sshw"

static void down(void)
{
	lism_broker_stop(dev);
	dev = NULL;
	env_down(&e); /* its processes die with its cgroup */
	if (scratch[0])
		sh("rm -rf %s", scratch);
	scratch[0] = '\0';
	if (made_run_sshd)
		rmdir("/run/sshd");
	made_run_sshd = 0;
	if (made_ssh_user)
		sh("userdel " SSH_USER);
	made_ssh_user = 0;
}

static void gate(void)
{
	require_root();
	needs(LISM_F_EXEC);
}

TestSuite(preload, .init = gate, .fini = down, .timeout = 240);

/* Where the build put lism, liblism.so and exec-peer; the repository's programs. */
static void paths(void)
{
	const char *b = getenv("LISM_BIN");
	char dir[PATH_MAX];

	cr_assert(b && realpath(b, bin), "LISM_BIN names the lism under test");
	snprintf(dir, sizeof(dir), "%s", bin);
	snprintf(peer, sizeof(peer), "%s/tests/exec-peer", dirname(dir));
	cr_assert_eq(access(peer, X_OK), 0, "%s: build it (make integration)", peer);
	cr_assert(realpath("tests/programs", programs), "run from the repository's top directory");
}

static void up(void)
{
	paths();
	env_up(&e, NULL);
	cr_assert_eq(lism_broker_start(e.pin, e.device, &dev), 0, "the device did not start");
	env_enter(&e);
}

static __u64 stat_now(int which)
{
	struct lism_snapshot s;

	snap(&e, &s);
	return s.stats[which];
}

/* Run @cmd (a shell command line) to its end; its first output line in @out. */
static int run_line(const char *cmd, char *out, size_t len)
{
	FILE *f = popen(cmd, "r");
	int st;

	cr_assert_not_null(f);
	out[0] = '\0';
	while (fgets(out, (int)len, f) && strncmp(out, "listening", 9) == 0)
		;
	while (fgetc(f) != EOF)
		;
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A server under lism exec in the background: its pid, its stdout in *@fd, once it listens. */
static pid_t serve(const char *args, int *fd)
{
	char cmd[PATH_MAX * 3], buf[256] = "";
	pid_t pid;

	snprintf(cmd, sizeof(cmd), "exec %s exec -- %s serve %s", bin, peer, args);
	pid = spawn_sh(cmd, fd);
	cr_assert_gt(wait_output(*fd, buf, sizeof(buf), "listening", 10000), 0, "the server did not start");
	return pid;
}

/* The server's verdict line ("OK bytes N tcp T end EOF"). */
static void verdict(int fd, pid_t pid, char *line, size_t len)
{
	int st;

	line[0] = '\0';
	cr_assert_gt(wait_output(fd, line, len, " end ", 120000), 0, "the server said nothing");
	waitpid(pid, &st, 0);
	close(fd);
}

static unsigned long long field(const char *line, const char *name)
{
	return line_field(line, name);
}

/* @total bytes from a sender to a server, both under lism exec: the server's verdict line in @line. */
static void stream(int port, unsigned long long total, int nonblock, char *line, size_t len)
{
	char cmd[PATH_MAX * 3], out[256], args[32];
	int fd;
	pid_t pid;

	up();
	snprintf(args, sizeof(args), "%d%s", port, nonblock ? " nonblock" : "");
	pid = serve(args, &fd);
	snprintf(cmd, sizeof(cmd), "%s exec -- %s send %d %llu%s", bin, peer, port, total, nonblock ? " nonblock" : "");
	cr_assert_eq(run_line(cmd, out, sizeof(out)), 0, "the sender: %s", out);
	verdict(fd, pid, line, len);
	cr_assert_eq(strncmp(line, "OK", 2), 0, "%s", line);
	cr_assert_eq(field(line, "bytes "), total);
}

/* The device's counters, as lism stats reads them (its pairs' headers folded in now). */
static struct lism_device_totals device_totals(void)
{
	return device_totals_at(e.device);
}

/*
 * The reader's TCP bytes are runs and doorbells: ring bytes plus TCP
 * bytes make the stream plus one byte per doorbell, as the device counts
 * them from the ring's header, and the sender's FIN (exec-peer reads its
 * TCP count once the FIN is in).  The server's verdict line goes back
 * through the ring too, with a doorbell unless its reader spun on the
 * ring (silent: exec/bell.h) or had gone: the count is one less then.
 */
static void assert_accounted(const char *line, unsigned long long total)
{
	struct lism_device_totals t = device_totals();
	unsigned long long reply = strlen(line) + (strchr(line, '\n') ? 0 : 1);
	unsigned long long in = t.bytes + field(line, "tcp "), out = total + t.doorbells + reply;

	cr_assert(in == out || in == out + 1, "ring %llu + tcp %llu != %llu + doorbells %llu + reply %llu + FIN (runs %llu)",
		  (unsigned long long)t.bytes, field(line, "tcp "), total, (unsigned long long)t.doorbells, reply,
		  (unsigned long long)t.runs);
	/* doorbells may be none: a reader that keeps up spins or looks (exec/bell.h) */
}

Test(preload, ten_gib_checksummed_through_a_ring_with_only_doorbells_on_tcp)
{
	unsigned long long total = 10ull << 30;
	char line[256] = "";

	stream(7501, total, 0, line, sizeof(line));
	cr_assert_lt(field(line, "tcp "), total / 1000, "TCP carried more than doorbells: %s", line);
	cr_assert_eq(stat_now(LISM_S_RING_PAIRS), 1);
	assert_accounted(line, total);
	cr_assert_eq(device_totals().runs, 0, "a blocking writer waits for room: no runs");
}

Test(preload, a_nonblocking_writer_and_an_edge_triggered_reader_keep_the_stream)
{
	unsigned long long total = 1ull << 30;
	char line[256] = "";

	stream(7502, total, 1, line, sizeof(line));
	cr_assert_lt(field(line, "tcp "), total, "not everything went through TCP: %s", line);
	assert_accounted(line, total);
	cr_assert_gt(device_totals().runs, 0, "a non-blocking writer that fills the ring goes on in runs");
}

Test(preload, kill_9_of_the_writer_leaves_its_reader_every_byte_then_the_end)
{
	char cmd[PATH_MAX * 3], buf[4096] = "", line[256] = "";
	unsigned long long sent = 0;
	int fd, wfd;
	pid_t pid, writer;
	char *p;

	up();
	pid = serve("7503", &fd);
	snprintf(cmd, sizeof(cmd), "exec %s exec -- %s flood 7503", bin, peer);
	writer = spawn_sh(cmd, &wfd);
	cr_assert_gt(wait_output(wfd, buf, sizeof(buf), "mib 32 ", 30000), 0, "the writer did not get going");
	kill(writer, SIGKILL);
	waitpid(writer, NULL, 0);
	read_until_quiet(wfd, buf, sizeof(buf), 100);
	close(wfd);
	for (p = buf; (p = strstr(p, "sent ")); p += 5)
		sent = strtoull(p + 5, NULL, 10); /* the last it said: written before it died */
	verdict(fd, pid, line, sizeof(line));
	cr_assert_eq(strncmp(line, "OK", 2), 0, "the bytes before the kill arrived changed: %s", line);
	cr_assert_geq(field(line, "bytes "), sent, "%s, the writer had written %llu", line, sent);
	cr_assert(strstr(line, "end EOF") || strstr(line, "end RESET"), "%s", line);
}

Test(preload, kill_9_of_the_reader_ends_its_writer_with_an_error)
{
	char cmd[PATH_MAX * 3], out[256];
	int fd;
	pid_t pid;
	time_t t0;

	up();
	pid = serve("7504", &fd);
	snprintf(cmd, sizeof(cmd), "(sleep 1; kill -9 %d) & exec %s exec -- %s send 7504 %llu 2>&1", (int)pid, bin, peer,
		 1ull << 40);
	t0 = time(NULL);
	cr_assert_eq(run_line(cmd, out, sizeof(out)), 3, "the writer must fail on its write: '%s'", out);
	cr_assert_lt(time(NULL) - t0, 20, "the writer took too long to notice");
	cr_assert(strstr(out, "Broken pipe") || strstr(out, "reset"), "%s", out);
	waitpid(pid, NULL, 0);
	close(fd);
}

Test(preload, python_asyncio_echo_over_200_connections)
{
	char cmd[PATH_MAX * 3], out[256], buf[4096] = "";
	int fd;
	pid_t srv;

	up();
	snprintf(cmd, sizeof(cmd), "exec %s exec -- python3 %s/aecho.py server 7505", bin, programs);
	srv = spawn_sh(cmd, &fd);
	cr_assert_gt(wait_output(fd, buf, sizeof(buf), "listening", 20000), 0);
	snprintf(cmd, sizeof(cmd), "%s exec -- python3 %s/aecho.py client 7505", bin, programs);
	cr_assert_eq(run_line(cmd, out, sizeof(out)), 0);
	cr_assert_eq(strcmp(out, "ok 200\n"), 0, "'%s'", out);
	cr_assert_eq(stat_now(LISM_S_RING_PAIRS), 200);
	kill(srv, SIGKILL);
	waitpid(srv, NULL, 0);
	close(fd);
}

Test(preload, nginx_sends_a_file_by_sendfile_to_curl_checksummed)
{
	char dir[] = "/tmp/lism-nginx-XXXXXX", cmd[PATH_MAX * 4], want[128], got[128], buf[256];
	int fd;
	pid_t srv;

	up();
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(sh("chmod 755 %s && mkdir -p %s/html %s/logs && head -c 3000001 /dev/urandom > %s/html/big.bin && "
			"printf 'worker_processes 2; daemon off; error_log %s/logs/error.log; pid %s/nginx.pid;\\n"
			"events { worker_connections 256; }\\n"
			"http { access_log off; sendfile on; server { listen 127.0.0.1:7506; root %s/html; } }\\n' "
			"> %s/nginx.conf",
			dir, dir, dir, dir, dir, dir, dir, dir), 0);
	snprintf(cmd, sizeof(cmd), "sha256sum < %s/html/big.bin", dir);
	cr_assert_eq(run_line(cmd, want, sizeof(want)), 0);
	snprintf(cmd, sizeof(cmd), "exec %s exec -- nginx -c %s/nginx.conf -p %s", bin, dir, dir);
	srv = spawn_sh(cmd, &fd);
	for (int i = 0; i < 100 && sh("%s exec -- curl -sf -o /dev/null http://127.0.0.1:7506/big.bin", bin); i++)
		usleep(50000);
	for (int i = 0; i < 3; i++) {
		snprintf(cmd, sizeof(cmd), "%s exec -- curl -sf http://127.0.0.1:7506/big.bin | sha256sum", bin);
		cr_assert_eq(run_line(cmd, got, sizeof(got)), 0);
		cr_assert_str_eq(got, want, "the file arrived changed");
	}
	cr_assert_geq(stat_now(LISM_S_RING_PAIRS), 4);
	kill(srv, SIGQUIT);
	waitpid(srv, NULL, 0);
	close(fd);
	snprintf(buf, sizeof(buf), "rm -rf %s", dir);
	cr_assert_eq(sh("%s", buf), 0);
}

Test(preload, redis_under_redis_benchmark_keeps_its_data)
{
	char cmd[PATH_MAX * 3], out[256], buf[4096] = "";
	int fd;
	pid_t srv;

	up();
	snprintf(cmd, sizeof(cmd), "exec %s exec -- redis-server --port 7507 --bind 127.0.0.1 --save '' --appendonly no", bin);
	srv = spawn_sh(cmd, &fd);
	cr_assert_gt(wait_output(fd, buf, sizeof(buf), "Ready to accept", 20000), 0, "redis: %s", buf);
	cr_assert_eq(sh("%s exec -- redis-benchmark -p 7507 -n 20000 -c 20 -t set,get,lpush,lpop -q >/dev/null", bin),
		     0);
	/* 500 keys with values of up to 100 KiB (bigger than the ring: some go in runs), read back */
	snprintf(cmd, sizeof(cmd),
		 "for i in $(seq 1 500); do printf 'SET k%%d %%s\\n' $i $(head -c $((i * 200)) /dev/zero | tr '\\0' x); done"
		 " | %s exec -- redis-cli -p 7507 >/dev/null && "
		 "for i in $(seq 1 500); do %s exec -- redis-cli -p 7507 STRLEN k$i; done | awk '{ s += $1 } END { print s }'",
		 bin, bin);
	cr_assert_eq(run_line(cmd, out, sizeof(out)), 0);
	cr_assert_eq(strtoull(out, NULL, 10), 200ull * 500 * 501 / 2, "the values read back: %s", out);
	cr_assert_gt(stat_now(LISM_S_RING_PAIRS), 500);
	kill(srv, SIGKILL);
	waitpid(srv, NULL, 0);
	close(fd);
}

Test(preload, a_peer_without_the_library_stays_on_tcp_and_says_why)
{
	char cmd[PATH_MAX * 3], out[256], line[256] = "";
	struct lism_snapshot s;
	int fd;
	pid_t pid;

	up();
	pid = serve("7508", &fd);
	snprintf(cmd, sizeof(cmd), "%s send 7508 %llu", peer, 64ull << 20); /* no lism exec */
	cr_assert_eq(run_line(cmd, out, sizeof(out)), 0, "%s", out);
	verdict(fd, pid, line, sizeof(line));
	cr_assert_eq(strncmp(line, "OK", 2), 0, "%s", line);
	cr_assert_geq(field(line, "tcp "), 64ull << 20, "all of it on TCP: %s", line);
	snap(&e, &s);
	cr_assert_eq(s.stats[LISM_S_RING_PAIRS], 0);
	/* a blocking client is declined at its connect, before the decision would say exec-peer-no-lib */
	cr_assert_geq(s.reasons[LISM_R_EXEC_PEER_NO_LIB] + s.reasons[LISM_R_BLOCKING], 1);
}

/* A directory of the test's own in scratch, 0755 (programs run as nobody read it). */
static void scratch_dir(const char *what)
{
	snprintf(scratch, sizeof(scratch), "/tmp/lism-%s-XXXXXX", what);
	cr_assert_not_null(mkdtemp(scratch));
	cr_assert_eq(chmod(scratch, 0755), 0);
}

/*
 * PostgreSQL: a server under lism exec forks a backend per connection
 * (the postmaster accepts, the backend takes the ring at its first call);
 * pgbench's clients move the bank's money around through rings, and the
 * books must balance: every account, branch and teller total equals the sum
 * of the history's deltas, one history row per transaction pgbench counted,
 * none failed.
 */
Test(preload, postgresql_backends_under_pgbench_keep_the_books)
{
	char pg[PATH_MAX], cmd[PATH_MAX * 8], out[4096] = "", buf[8192] = "", build[PATH_MAX], *nl;
	unsigned long long done, pairs, sums[5];
	int fd;
	pid_t srv;

	/* Debian's (make deps), before a PATH's: CI and a developer's machine run the same */
	if (sh_out("for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -rV) "
		   "$(dirname \"$(command -v postgres || echo /none/postgres)\"); do "
		   "[ -x $d/postgres ] && [ -x $d/initdb ] && [ -x $d/pgbench ] && [ -x $d/psql ] && "
		   "{ echo $d; exit 0; }; done; exit 1",
		   pg, sizeof(pg)))
		needs_missing("PostgreSQL (postgres, initdb, pgbench, psql; make deps installs it)");
	pg[strcspn(pg, "\n")] = '\0';
	up();
	scratch_dir("pg");
	/* postgres refuses root: nobody runs it, with the library where nobody reads it */
	snprintf(build, sizeof(build), "%s", bin);
	snprintf(cmd, sizeof(cmd),
		 "cp %s/liblism.so %s/ && chown nobody %s && cd %s && "
		 "setpriv --reuid=nobody --regid=nogroup --clear-groups -- %s/initdb -D %s/data -U postgres "
		 "-A trust --no-locale -E UTF8 --no-sync 2>&1",
		 dirname(build), scratch, scratch, scratch, pg, scratch);
	cr_assert_eq(sh_out(cmd, out, sizeof(out)), 0, "initdb: %s", out);
	snprintf(cmd, sizeof(cmd),
		 "cd %s && LISM_LIBRARY=%s/liblism.so exec %s exec -- setpriv --reuid=nobody --regid=nogroup "
		 "--clear-groups -- %s/postgres -D %s/data -c listen_addresses=127.0.0.1 -p 7510 -k %s "
		 "-c fsync=off 2>&1",
		 scratch, scratch, bin, pg, scratch, scratch);
	srv = spawn_sh(cmd, &fd);
	cr_assert_gt(wait_output(fd, buf, sizeof(buf), "ready to accept connections", 30000), 0, "postgres: %s", buf);
	snprintf(cmd, sizeof(cmd), "%s exec -- %s/pgbench -h 127.0.0.1 -p 7510 -U postgres -i -s 2 postgres 2>&1", bin,
		 pg);
	cr_assert_eq(sh_out(cmd, out, sizeof(out)), 0, "pgbench -i: %s", out);
	pairs = stat_now(LISM_S_RING_PAIRS);
	snprintf(cmd, sizeof(cmd), "%s exec -- %s/pgbench -h 127.0.0.1 -p 7510 -U postgres -c 4 -j 2 -T 10 postgres 2>&1",
		 bin, pg);
	cr_assert_eq(sh_out(cmd, out, sizeof(out)), 0, "pgbench: %s", out);
	done = field(out, "number of transactions actually processed: ");
	cr_assert_gt(done, 0, "%s", out);
	cr_assert(strstr(out, "number of failed transactions: 0 "), "a transaction failed: %s", out);
	cr_assert_geq(stat_now(LISM_S_RING_PAIRS) - pairs, 4, "every client's connection took a ring");
	snprintf(cmd, sizeof(cmd),
		 "%s exec -- %s/psql -h 127.0.0.1 -p 7510 -U postgres -AtF ' ' -c 'select "
		 "(select sum(abalance) from pgbench_accounts), (select sum(bbalance) from pgbench_branches), "
		 "(select sum(tbalance) from pgbench_tellers), (select sum(delta) from pgbench_history), "
		 "(select count(*) from pgbench_history)' postgres 2>&1",
		 bin, pg);
	cr_assert_eq(sh_out(cmd, out, sizeof(out)), 0, "psql: %s", out);
	nl = out;
	for (int i = 0; i < 5; i++)
		sums[i] = strtoull(nl, &nl, 10); /* signed sums read as their bits: compared, never ordered */
	cr_assert(sums[0] == sums[3] && sums[1] == sums[3] && sums[2] == sums[3],
		  "the balances are not the history's deltas: %s", out);
	cr_assert_eq(sums[4], done, "history rows %llu, transactions %llu", sums[4], done);
	kill(srv, SIGINT); /* fast shutdown */
	waitpid(srv, NULL, 0);
	close(fd);
}

/*
 * sshd under lism exec: its listener forks a child per connection that
 * re-execs sshd (the new image finds its ring socket at start), which forks
 * a pre-auth child under a seccomp filter (read, write and poll for its
 * socket, death at a recvfrom or a sendmsg), then a session child; ssh
 * under lism exec pipes 256 MiB through it to sha256sum, checksummed.
 */
Test(preload, ssh_to_sshd_through_fork_reexec_and_its_sandbox_checksummed)
{
	char sshd[PATH_MAX] = "", cmd[PATH_MAX * 4], want[128], got[128], buf[8192] = "";
	int fd;
	pid_t srv;

	if (sh_out("PATH=$PATH:/usr/sbin:/sbin; command -v ssh >/dev/null && command -v ssh-keygen >/dev/null && "
		   "command -v sshd",
		   sshd, sizeof(sshd)))
		needs_missing("OpenSSH (sshd, ssh, ssh-keygen; make deps installs it)");
	sshd[strcspn(sshd, "\n")] = '\0';
	cr_assert_eq(sshd[0], '/', "sshd re-execs itself by an absolute path: %s", sshd);
	up();
	scratch_dir("ssh");
	/* its privilege separation directory, as the package's service makes it */
	if (access("/run/sshd", F_OK)) {
		cr_assert_eq(mkdir("/run/sshd", 0755), 0);
		made_run_sshd = 1;
	}
	/* no password, not locked ('*'), no home: sshd runs its command from / */
	cr_assert_eq(sh("userdel " SSH_USER " 2>/dev/null; useradd -M -d / -s /bin/sh -p '*' " SSH_USER), 0);
	made_ssh_user = 1;
	cr_assert_eq(sh("cd %s && ssh-keygen -q -t ed25519 -N '' -f hostkey && ssh-keygen -q -t ed25519 -N '' -f key && "
			"cp key.pub authorized_keys && printf 'ListenAddress 127.0.0.1\nPort 7511\nHostKey %s/hostkey\n"
			"AuthorizedKeysFile %s/authorized_keys\nPidFile none\nUsePAM no\nStrictModes no\n"
			"PasswordAuthentication no\nKbdInteractiveAuthentication no\n' "
			"> sshd_config && head -c 268435456 /dev/urandom > data",
			scratch, scratch, scratch),
		     0);
	snprintf(cmd, sizeof(cmd), "sha256sum < %s/data", scratch);
	cr_assert_eq(run_line(cmd, want, sizeof(want)), 0);
	snprintf(cmd, sizeof(cmd), "exec %s exec -- %s -D -e -f %s/sshd_config 2>&1", bin, sshd, scratch);
	srv = spawn_sh(cmd, &fd);
	cr_assert_gt(wait_output(fd, buf, sizeof(buf), "Server listening", 10000), 0, "sshd: %s", buf);
	snprintf(cmd, sizeof(cmd),
		 "%s exec -- ssh -F /dev/null -p 7511 -i %s/key -o BatchMode=yes -o StrictHostKeyChecking=no "
		 "-o UserKnownHostsFile=/dev/null -o GlobalKnownHostsFile=/dev/null -o LogLevel=ERROR "
		 SSH_USER "@127.0.0.1 sha256sum < %s/data 2>&1",
		 bin, scratch, scratch);
	got[0] = '\0';
	if (run_line(cmd, got, sizeof(got)) || strcmp(got, want))
		read_until_quiet(fd, buf, sizeof(buf), 200); /* sshd's word, for the message */
	cr_assert_str_eq(got, want, "the stream arrived changed, or ssh failed: '%s'; sshd said: %s", got, buf);
	cr_assert_eq(stat_now(LISM_S_RING_PAIRS), 1, "the connection took a ring");
	kill(srv, SIGTERM);
	waitpid(srv, NULL, 0);
	close(fd);
}

/* `lism device` (what make run starts): a device for a loaded instance, until that instance is unloaded. */
Test(preload, lism_device_serves_until_its_instance_is_unloaded)
{
	char cmd[PATH_MAX * 3], out[256], buf[512] = "", line[256] = "";
	int fd, dfd, st;
	pid_t pid, device;

	paths();
	env_up(&e, NULL);
	env_enter(&e);
	snprintf(cmd, sizeof(cmd), "exec %s device --pin-path %s --device-socket %s", bin, e.pin, e.device);
	device = spawn_sh(cmd, &dfd);
	cr_assert_gt(wait_output(dfd, buf, sizeof(buf), "serves at", 10000), 0, "%s", buf);
	cr_assert(lism_device_answers(e.device));
	snprintf(cmd, sizeof(cmd), "%s device --pin-path %s --device-socket %s", bin, e.pin, e.device);
	cr_assert_eq(run_line(cmd, out, sizeof(out)), 0);
	cr_assert(strstr(out, "already serves"), "a second one leaves the first alone: %s", out);
	pid = serve("7509", &fd);
	snprintf(cmd, sizeof(cmd), "%s exec -- %s send 7509 %llu", bin, peer, 1ull << 20);
	cr_assert_eq(run_line(cmd, out, sizeof(out)), 0, "%s", out);
	verdict(fd, pid, line, sizeof(line));
	cr_assert_eq(strncmp(line, "OK", 2), 0, "%s", line);
	cr_assert_eq(stat_now(LISM_S_RING_PAIRS), 1, "the pair took a ring through this device");
	cr_assert_eq(lism(&e, "unload --timeout 2 --force"), 0);
	e.loaded = 0;
	cr_assert_gt(wait_output(dfd, buf, sizeof(buf), "the instance was unloaded", 5000), 0, "%s", buf);
	waitpid(device, &st, 0);
	close(dfd);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	cr_assert_not(lism_device_answers(e.device), "its socket went with it");
}

/* liblism touches no other socket: a UDP echo under lism exec answers where the datagram came from. */
Test(preload, a_udp_echo_under_lism_exec_answers_its_sender)
{
	char cmd[PATH_MAX * 3], out[256];

	up();
	snprintf(cmd, sizeof(cmd),
		 "%s exec -- python3 -c \"import socket\n"
		 "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('127.0.0.1', 0))\n"
		 "c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); c.settimeout(5)\n"
		 "c.sendto(b'ping', s.getsockname())\n"
		 "d, a = s.recvfrom(100); s.sendto(d + b'-pong', a)\n"
		 "print(c.recv(100).decode())\"",
		 bin);
	cr_assert_eq(run_line(cmd, out, sizeof(out)), 0);
	cr_assert_str_eq(out, "ping-pong\n");
}
