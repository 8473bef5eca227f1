// SPDX-License-Identifier: GPL-2.0-only
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "lism/abi.h"
#include "lism/churn.h"

#define MAXARGS 32

/* Parse a space-separated command line ("load --max-dmbs 5"). */
static int parse(const char *line, struct lism_opts *o, char *err)
{
	static char buf[512];
	char *argv[MAXARGS] = { "lism" };
	int argc = 1;

	strcpy(buf, line);
	for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) {
		cr_assert_lt(argc, MAXARGS - 1, "test line has too many words: %s", line);
		argv[argc++] = tok;
	}
	argv[argc] = NULL;
	return lism_parse_args(argc, argv, o, err, 256);
}

Test(cli, defaults)
{
	struct lism_opts o;
	char err[256];

	cr_assert_eq(parse("load", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert_eq(o.cmd, LISM_CMD_LOAD);
	cr_assert_str_eq(o.c.pin_path, "/sys/fs/bpf/lism");
	cr_assert_str_eq(o.load.cfg.cgroup, "");
	cr_assert_eq(o.load.cfg.max_dmbs, 5000);
	cr_assert_eq(o.load.cfg.dmb_size, 4 << 20);
	cr_assert_eq(parse("unload", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert_eq(o.unload.timeout_s, 30);
	cr_assert_eq(parse("run", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert_eq(o.run.timeout_s, 30, "--unload-on-exit's wait");
	cr_assert_eq(o.run.cfg.max_dmbs, 5000);
}

Test(cli, load_options)
{
	struct lism_opts o;
	char err[256];

	cr_assert_eq(parse("load --cgroup /sys/fs/cgroup/x --pin-path /sys/fs/bpf/t --max-dmbs 7 "
			   "--dmb-size 64K --local-cidr 10.0.0.0/8 --local-cidr fd00::/64 --allow-blocking",
			   &o, err),
		     LISM_EXIT_OK, "%s", err);
	cr_assert_str_eq(o.run.cfg.cgroup, "/sys/fs/cgroup/x");
	cr_assert_str_eq(o.c.pin_path, "/sys/fs/bpf/t");
	cr_assert_eq(o.run.cfg.max_dmbs, 7);
	cr_assert_eq(o.run.cfg.dmb_size, 64 << 10);
	cr_assert_eq(o.run.cfg.n_local_cidrs, 2);
	cr_assert_eq(o.run.cfg.local_cidrs[0].prefixlen, 96 + 8);
	struct lism_opts x;

	cr_assert_eq(parse("load --exclude-cidr 10.1.0.0/16 --exclude-cidr 127.0.0.2", &x, err), LISM_EXIT_OK,
		     "%s", err);
	cr_assert_eq(x.load.cfg.n_exclude_cidrs, 2);
	cr_assert_eq(x.load.cfg.exclude_cidrs[1].prefixlen, 128);
	cr_assert_eq(o.run.cfg.local_cidrs[1].prefixlen, 64);
	cr_assert(o.run.cfg.allow_blocking);
	cr_assert_neq(parse("load --no-stream-detect", &x, err), LISM_EXIT_OK,
		      "stream detection is gone (layout 14): its switch must not be taken silently");
	cr_assert_not(o.run.cfg.no_churn_detect);
	cr_assert_eq(o.run.cfg.churn_window_ms, LISM_CHURN_WINDOW_MS, "the default");
	cr_assert_not(o.run.cfg.eager_senders, "senders join after a reply by default");
	cr_assert_eq(parse("run --eager-senders", &x, err), LISM_EXIT_OK, "%s", err);
	cr_assert(x.run.cfg.eager_senders);
	cr_assert_neq(parse("stats --eager-senders", &x, err), LISM_EXIT_OK, "a load option only");
	cr_assert_eq(parse("run --senders=eager", &x, err), LISM_EXIT_OK, "%s", err);
	cr_assert(x.run.cfg.eager_senders, "--senders eager is --eager-senders");
	cr_assert_eq(parse("run --eager-senders --senders adaptive", &x, err), LISM_EXIT_OK, "%s", err);
	cr_assert_not(x.run.cfg.eager_senders, "the last one counts");
	cr_assert_neq(parse("load --senders lazy", &x, err), LISM_EXIT_OK);
	cr_assert(strstr(err, "adaptive or eager"), "%s", err);
	cr_assert_neq(parse("load --senders=", &x, err), LISM_EXIT_OK, "an empty ConfigMap value");
	cr_assert_neq(parse("conns --senders eager", &x, err), LISM_EXIT_OK, "a load option only");
	cr_assert_eq(parse("run --no-churn-detect --churn-window 250", &x, err), LISM_EXIT_OK, "%s", err);
	cr_assert(x.run.cfg.no_churn_detect);
	cr_assert_eq(x.run.cfg.churn_window_ms, 250);
	cr_assert_eq(parse("load --churn-window 0", &x, err), LISM_EXIT_OK, "%s", err);
	cr_assert(x.load.cfg.no_churn_detect, "0 switches it off");
	cr_assert_eq(x.load.cfg.churn_window_ms, LISM_CHURN_WINDOW_MS, "for a later 'set churn-detect on'");
	cr_assert_neq(parse("load --churn-window x", &x, err), LISM_EXIT_OK);
	cr_assert_neq(parse("load --churn-window 60001", &x, err), LISM_EXIT_OK);
	cr_assert_neq(parse("status --churn-window 5", &x, err), LISM_EXIT_OK, "a load option");
}

Test(cli, operator_commands)
{
	struct lism_opts o;
	char err[256];

	cr_assert_eq(parse("set active off", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert_eq(o.set.key, LISM_SET_ACTIVE);
	cr_assert_eq(o.set.value, 0);
	cr_assert_eq(parse("set active drain", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert_eq(o.set.key, LISM_SET_ACTIVE);
	cr_assert_eq(o.set.value, LISM_ACTIVE_DRAIN);
	cr_assert_eq(parse("set max-dmbs 64 --pin-path /sys/fs/bpf/x", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert_eq(o.set.key, LISM_SET_MAX_DMBS);
	cr_assert_eq(o.set.value, 64);
	cr_assert_eq(parse("set churn-detect off", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert_eq(o.set.key, LISM_SET_CHURN_DETECT);
	cr_assert_eq(o.set.value, 0);
	cr_assert_eq(parse("set churn-detect on", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert_eq(o.set.value, 1);
	cr_assert_neq(parse("set churn-detect maybe", &o, err), LISM_EXIT_OK);
	cr_assert(strstr(err, "churn-detect"), "%s", err);
	cr_assert_eq(parse("set senders eager", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert_eq(o.set.key, LISM_SET_SENDERS);
	cr_assert_eq(o.set.value, 1);
	cr_assert_eq(parse("set senders adaptive", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert_eq(o.set.value, 0);
	cr_assert_neq(parse("set senders on", &o, err), LISM_EXIT_OK);
	cr_assert(strstr(err, "adaptive or eager"), "%s", err);
	cr_assert_eq(parse("stats reset", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert(o.stats.reset);
	cr_assert_eq(parse("stats -j", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert_not(o.stats.reset);
	cr_assert_eq(parse("conns -w --port 80 --state close-wait --mode tcp -j", &o, err), LISM_EXIT_OK,
		     "%s", err);
	cr_assert(o.conns.wide && o.c.json);
	cr_assert_eq(o.conns.port, 80);
	cr_assert_eq(o.conns.state, 8 + 1);
	cr_assert_eq(o.conns.mode, LISM_MODE_TCP);
	cr_assert_eq(parse("events -j --all", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert(o.events.all);
	cr_assert_eq(parse("run --metrics-addr [::1]:9000 --unload-on-exit --max-dmbs 9", &o, err),
		     LISM_EXIT_OK, "%s", err);
	cr_assert_str_eq(o.run.metrics_addr, "[::1]:9000");
	cr_assert(o.run.unload_on_exit);
	cr_assert_eq(o.run.cfg.max_dmbs, 9);
	cr_assert_eq(parse("run", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert_str_eq(o.run.metrics_addr, "127.0.0.1:19435");
	cr_assert_str_eq(o.run.device_socket, getenv("LISM_DEVICE") ? getenv("LISM_DEVICE") : "/run/lism/device.sock");
	setenv("LISM_DEVICE", "/tmp/elsewhere.sock", 1); /* where liblism looks: the device's default too */
	cr_assert_eq(parse("run", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert_str_eq(o.run.device_socket, "/tmp/elsewhere.sock");
	unsetenv("LISM_DEVICE");
	cr_assert_eq(parse("run --device-socket /tmp/d.sock", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert_str_eq(o.run.device_socket, "/tmp/d.sock");
	cr_assert_eq(parse("run --device-socket none", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert_str_eq(o.run.device_socket, "");
}

/* --local-routes on|off: load and run only, a value (a ConfigMap's), off by default. */
Test(cli, local_routes)
{
	struct lism_opts o;
	char err[256];

	cr_assert_eq(parse("load", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert_not(o.load.cfg.local_routes, "off by default");
	cr_assert_eq(parse("load --local-routes on", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert(o.load.cfg.local_routes);
	cr_assert_eq(parse("run --local-routes=on --local-routes off", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert_not(o.run.cfg.local_routes, "the last one counts");
	cr_assert_eq(parse("run --local-routes=on --local-cidr 10.96.0.0/12", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert(o.run.cfg.local_routes);
	cr_assert_eq(o.run.cfg.n_local_cidrs, 1, "with --local-cidr beside it");
	cr_assert_neq(parse("load --local-routes yes", &o, err), LISM_EXIT_OK);
	cr_assert(strstr(err, "not on or off"), "%s", err);
	cr_assert_neq(parse("load --local-routes=", &o, err), LISM_EXIT_OK, "an empty ConfigMap value");
	cr_assert_neq(parse("load --local-routes", &o, err), LISM_EXIT_OK, "needs a value");
	cr_assert_neq(parse("status --local-routes on", &o, err), LISM_EXIT_OK, "a load option only");
	cr_assert(strstr(err, "does not apply"), "%s", err);
	cr_assert_neq(parse("unload --local-routes off", &o, err), LISM_EXIT_OK, "a load option only");
}

Test(cli, port_policy)
{
	struct lism_opts o;
	char err[256];

	cr_assert_eq(parse("load --exclude-port 443 --exclude-port 8443 --include-port 80", &o, err),
		     LISM_EXIT_OK, "%s", err);
	cr_assert_eq(o.load.cfg.n_exclude_ports, 2);
	cr_assert_eq(o.load.cfg.exclude_ports[1], 8443);
	cr_assert_eq(o.load.cfg.n_include_ports, 1);
	cr_assert_eq(o.load.cfg.include_ports[0], 80);
}

/* Lists, so that one ConfigMap value can carry several; an empty value carries none. */
Test(cli, comma_separated_lists)
{
	struct lism_opts o;
	char err[256];

	cr_assert_eq(parse("load --local-cidr 10.244.0.0/16,10.96.0.0/12 --local-cidr fd00::/64 "
			   "--exclude-port 443,8443 --exclude-port 9000 --exclude-cidr 10.244.9.0/24,10.1.2.3",
			   &o, err),
		     LISM_EXIT_OK, "%s", err);
	cr_assert_eq(o.load.cfg.n_local_cidrs, 3);
	cr_assert_eq(o.load.cfg.local_cidrs[1].prefixlen, 96 + 12);
	cr_assert_eq(o.load.cfg.local_cidrs[2].prefixlen, 64);
	cr_assert_eq(o.load.cfg.n_exclude_ports, 3);
	cr_assert_eq(o.load.cfg.exclude_ports[0], 443);
	cr_assert_eq(o.load.cfg.exclude_ports[1], 8443);
	cr_assert_eq(o.load.cfg.exclude_ports[2], 9000);
	cr_assert_eq(o.load.cfg.n_exclude_cidrs, 2);
	cr_assert_eq(o.load.cfg.exclude_cidrs[1].prefixlen, 128);
	cr_assert_eq(parse("load --exclude-port= --local-cidr=", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert_eq(o.load.cfg.n_exclude_ports, 0);
	cr_assert_eq(o.load.cfg.n_local_cidrs, 0);
}

Test(cli, equals_form_and_short_options)
{
	struct lism_opts o;
	char err[256];

	cr_assert_eq(parse("status --pin-path=/sys/fs/bpf/x -j", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert_str_eq(o.c.pin_path, "/sys/fs/bpf/x");
	cr_assert(o.c.json);
	cr_assert_eq(parse("unload --timeout=0 --force", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert_eq(o.unload.timeout_s, 0);
	cr_assert(o.unload.force);
}

/* Every invalid line must be refused with a usage error naming the problem. */
Test(cli, rejects_invalid_input)
{
	static const struct {
		const char *line, *needle;
	} bad[] = {
		{ "", "missing command" },
		{ "frobnicate", "unknown command 'frobnicate'" },
		{ "load --max-dmbs 0", "--max-dmbs" },
		{ "load --max-dmbs -5", "--max-dmbs" },
		{ "load --max-dmbs 12abc", "--max-dmbs" },
		{ "load --max-dmbs 99999999999", "--max-dmbs" },
		{ "load --max-dmbs", "needs a value" },
		{ "load --dmb-size 1K", "--dmb-size" },
		{ "load --dmb-size 1G", "--dmb-size" },
		{ "load --dmb-size -64K", "--dmb-size" },
		{ "load --dmb-size 64Q", "--dmb-size" },
		{ "load --local-cidr 10.0.0.1/8", "--local-cidr" },
		{ "load --local-cidr 10.0.0.0/33", "--local-cidr" },
		{ "load --local-cidr 300.1.1.1", "--local-cidr" },
		{ "load --local-cidr fd00::/129", "--local-cidr" },
		{ "load --exclude-cidr 10.1.0.1/16", "--exclude-cidr" },
		{ "status --exclude-cidr 10.0.0.0/8", "does not apply" },
		{ "unload --upgrade", "does not apply" },
		{ "load --pin-path relative/dir", "absolute" },
		{ "load --bogus", "unknown option '--bogus'" },
		{ "status --max-dmbs 4", "does not apply" },
		{ "load -j", "does not apply" },
		{ "unload --timeout 1.5", "--timeout" },
		{ "unload --timeout 100000", "--timeout" },
		{ "status extra", "unexpected argument 'extra'" },
		{ "load --exclude-port 0", "--exclude-port" },
		{ "load --exclude-port 70000", "--exclude-port" },
		{ "load --exclude-port http", "--exclude-port" },
		{ "load --exclude-port 80,", "--exclude-port" },
		{ "load --exclude-port ,80", "--exclude-port" },
		{ "load --exclude-port 80,,81", "--exclude-port" },
		{ "load --exclude-port 80,0", "--exclude-port" },
		{ "load --include-port 80,70000", "--include-port" },
		{ "load --local-cidr 10.0.0.0/8,,10.1.0.0/16", "--local-cidr" },
		{ "load --local-cidr 10.0.0.0/8,10.0.0.1/8", "--local-cidr" },
		{ "load --exclude-cidr 10.0.0.0/8,", "--exclude-cidr" },
		{ "load --include-port -1", "--include-port" },
		{ "status --exclude-port 80", "does not apply" },
		{ "set", "expected 'active on|off|drain'" },
		{ "set active maybe", "not on, off or drain" },
		{ "set churn-detect drain", "not on or off" },
		{ "set max-dmbs 0", "max-dmbs" },
		{ "set max-dmbs -1", "unknown option" },
		{ "set speed 11", "unknown setting 'speed'" },
		{ "stats zero", "only 'reset'" },
		{ "conns --port 0", "--port" },
		{ "conns --state LISTENING", "--state" },
		{ "conns --mode fast", "--mode" },
		{ "run --metrics-addr localhost:9435", "--metrics-addr" },
		{ "run --metrics-addr 127.0.0.1", "--metrics-addr" },
		{ "run --metrics-addr 127.0.0.1:0", "--metrics-addr" },
		{ "run --metrics-addr [::1]:99999", "--metrics-addr" },
		{ "run --device-socket dev.sock", "--device-socket" },
		{ "load --device-socket /tmp/d.sock", "does not apply" },
		{ "events --port 80", "does not apply" },
		{ "status -w", "does not apply" },
		{ "status -xj", "unknown option '-x'" },
		{ "unload --force=1", "option '--force' takes no value" },
		{ "conns --wide=yes", "option '--wide' takes no value" },
		{ "load --bogus=5", "unknown option '--bogus=5'" },
		/* the veth fast path is gone (docs/kubernetes.md) */
		{ "xdp status", "unknown command 'xdp'" },
		{ "run --iface veth*", "unknown option '--iface'" },
	};
	struct lism_opts o;
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(parse(bad[i].line, &o, err), LISM_EXIT_USAGE, "'%s' was accepted", bad[i].line);
		cr_expect(strstr(err, bad[i].needle), "'%s': message '%s' lacks '%s'", bad[i].line, err,
			  bad[i].needle);
	}
}

Test(cli, help_and_version)
{
	struct lism_opts o;
	char err[256];

	cr_assert_eq(parse("--help", &o, err), LISM_EXIT_OK);
	cr_assert_eq(o.cmd, LISM_CMD_HELP);
	cr_assert_eq(parse("load --help", &o, err), LISM_EXIT_OK);
	cr_assert_eq(o.cmd, LISM_CMD_HELP);
	cr_assert_eq(parse("version", &o, err), LISM_EXIT_OK);
	cr_assert_eq(o.cmd, LISM_CMD_VERSION);
}

Test(cli, sizes)
{
	static const struct {
		const char *in;
		__u64 out;
	} good[] = {
		{ "0", 0 }, { "4096", 4096 }, { "64k", 65536 }, { "64K", 65536 }, { "64KiB", 65536 },
		{ "1M", 1 << 20 }, { "1MiB", 1 << 20 }, { "2MB", 2 << 20 }, { "1G", 1ull << 30 },
	};
	static const char *const bad[] = { "", "k", "-1", "1.5M", "1T", "1Mx", "0x10", " 1" };
	__u64 v;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		cr_assert_eq(lism_parse_size(good[i].in, &v), 0, "%s", good[i].in);
		cr_assert_eq(v, good[i].out, "%s", good[i].in);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_neq(lism_parse_size(bad[i], &v), 0, "'%s' accepted", bad[i]);
	cr_assert_eq(lism_parse_size("99999999999999999999", &v), -ERANGE);
	cr_assert_eq(lism_parse_size("17179869184G", &v), -ERANGE);
}

Test(cli, cidrs_map_ipv4_into_ipv6)
{
	struct lism_cidr c;
	static const __u8 want[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 96, 0, 0 };

	cr_assert_eq(lism_parse_cidr("10.96.0.0/12", &c), 0);
	cr_assert_eq(c.prefixlen, 96 + 12);
	cr_assert_arr_eq(c.addr, want, 16);
	cr_assert_eq(lism_parse_cidr("192.0.2.7", &c), 0);
	cr_assert_eq(c.prefixlen, 128);
	cr_assert_eq(lism_parse_cidr("::/0", &c), 0);
	cr_assert_eq(c.prefixlen, 0);
}

Test(cli, event_types_and_the_daemons_log)
{
	struct lism_opts o;
	char err[256];

	cr_assert_eq(parse("run", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert_eq(o.run.event_types, 0u, "the daemon logs a summary, no event (lism events may follow them)");
	cr_assert_eq(o.run.log_interval_s, LISM_DEFAULT_LOG_INTERVAL);
	cr_assert_eq(parse("run --log-events all --log-interval 0", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert_eq(o.run.event_types, LISM_EV_ALL);
	cr_assert_eq(o.run.log_interval_s, 0u);
	cr_assert_eq(parse("run --log-events none --log-interval 5", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert_eq(o.run.event_types, 0u);
	cr_assert_eq(o.run.log_interval_s, 5u);
	cr_assert_eq(parse("events", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert_eq(o.events.types, LISM_EV_ALL, "lism events follows everything");
	cr_assert_eq(parse("events --type fallback,abort", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert_eq(o.events.types, LISM_EV_TYPE(LISM_EV_FALLBACK) | LISM_EV_TYPE(LISM_EV_ABORT));

	cr_assert_eq(parse("events --type none", &o, err), LISM_EXIT_USAGE);
	cr_assert(strstr(err, "nothing to follow"), "%s", err);
	cr_assert_eq(parse("events --type confirm,closed", &o, err), LISM_EXIT_USAGE);
	cr_assert(strstr(err, "--type: 'confirm,closed' is not"), "%s", err);
	cr_assert_eq(parse("run --log-events everything", &o, err), LISM_EXIT_USAGE);
	cr_assert(strstr(err, "--log-events: 'everything'"), "%s", err);
	cr_assert_eq(parse("run --log-interval 86401", &o, err), LISM_EXIT_USAGE);
	cr_assert_eq(parse("run --log-interval 1m", &o, err), LISM_EXIT_USAGE);
	cr_assert_eq(parse("events --log-events all", &o, err), LISM_EXIT_USAGE, "a run option");
	cr_assert_eq(parse("run --type all", &o, err), LISM_EXIT_USAGE, "an events option");
	cr_assert_eq(parse("load --log-interval 5", &o, err), LISM_EXIT_USAGE);
}

/* lism exec: its own options, then the command with its options untouched; lism device: the socket. */
Test(cli, exec_and_device)
{
	struct lism_opts o;
	char err[256];

	cr_assert_eq(parse("exec -- redis-server --port 7000 -v", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert_eq(o.cmd, LISM_CMD_EXEC);
	cr_assert_str_eq(o.exec.argv[0], "redis-server");
	cr_assert_str_eq(o.exec.argv[2], "7000");
	cr_assert_str_eq(o.exec.argv[3], "-v", "the command's -v is the command's");
	cr_assert_null(o.exec.argv[4]);
	cr_assert_eq(parse("exec --device-socket /tmp/d.sock curl -s http://x", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert_str_eq(o.exec.device_socket, "/tmp/d.sock");
	cr_assert_str_eq(o.exec.argv[1], "-s", "getopt stops at the command");
	cr_assert_eq(parse("exec", &o, err), LISM_EXIT_USAGE);
	cr_assert(strstr(err, "missing the command"), "%s", err);
	cr_assert_eq(parse("exec --device-socket rel.sock -- true", &o, err), LISM_EXIT_USAGE);
	cr_assert_eq(parse("exec --cgroup /x -- true", &o, err), LISM_EXIT_USAGE, "a load option is not exec's");
	cr_assert_eq(parse("exec --busy-poll 0 -- true", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert(o.exec.busy_poll_set && o.exec.busy_poll_us == 0, "0: never spin, and said");
	cr_assert_eq(parse("exec --busy-poll 200 -- true", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert_eq(o.exec.busy_poll_us, 200);
	cr_assert_eq(parse("exec -- true", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert_not(o.exec.busy_poll_set, "not given: the environment's");
	cr_assert_eq(parse("exec --busy-poll 100001 -- true", &o, err), LISM_EXIT_USAGE, "past the cap");
	cr_assert_eq(parse("exec --busy-poll 5us -- true", &o, err), LISM_EXIT_USAGE);
	cr_assert_eq(parse("device --busy-poll 5", &o, err), LISM_EXIT_USAGE, "exec's alone");
	cr_assert_eq(parse("device", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert_eq(o.cmd, LISM_CMD_DEVICE);
	cr_assert_str_eq(o.device.device_socket, lism_device_path(getenv("LISM_DEVICE")));
	cr_assert_eq(parse("device --device-socket /run/x/d.sock", &o, err), LISM_EXIT_OK, "%s", err);
	cr_assert_str_eq(o.device.device_socket, "/run/x/d.sock");
	cr_assert_eq(parse("device extra", &o, err), LISM_EXIT_USAGE);
}
