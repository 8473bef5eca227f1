// SPDX-License-Identifier: GPL-2.0-only
/*
 * One lism per socket: two instances on nested cgroups (a pod's under a
 * node-wide one; a test's under `make run`'s).  The instance nearest the
 * socket handles it; the outer one leaves it alone (reason
 * nested-instance); ends of two instances are two devices.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "pins.h"
#include "traffic.h"

static struct env outer; /* env_up's instance, on the test's cgroup */
static struct env inner; /* a second one, on a child of it */

static void down(void)
{
	if (inner.pin[0]) {
		if (inner.loaded)
			lism(&inner, "unload --timeout 2 --force");
		lism_pins_remove(inner.pin);
		rmdir(inner.cgroup);
	}
	memset(&inner, 0, sizeof(inner));
	env_down(&outer);
}

TestSuite(nested, .fini = down, .timeout = 120);

static void join(const char *cgroup)
{
	char path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/cgroup.procs", cgroup);
	write_file(path, "0");
}

static void up(void)
{
	char args[PATH_MAX + 64], out[4096];

	env_up(&outer, LISM_TEST_MEASURE);
	inner = outer;
	inner.loaded = 0;
	cr_assert_lt(snprintf(inner.cgroup, sizeof(inner.cgroup), "%.4000s/inner", outer.cgroup),
		     (int)sizeof(inner.cgroup));
	cr_assert_lt(snprintf(inner.pin, sizeof(inner.pin), "%.4000s-inner", outer.pin), (int)sizeof(inner.pin));
	cr_assert_eq(mkdir(inner.cgroup, 0755), 0, "%s", strerror(errno));
	snprintf(args, sizeof(args), "load --cgroup %s " LISM_TEST_MEASURE, inner.cgroup);
	cr_assert_eq(lism_out(&inner, args, out, sizeof(out)), 0, "%s", out);
	inner.loaded = 1;
}

Test(nested, the_instance_nearest_the_socket_handles_it)
{
	struct lism_snapshot in, out0, out1;
	struct pump_result r;
	int c, s;

	require_root();
	needs(LISM_F_DATA_PATH);
	up();
	snap(&outer, &out0);
	join(inner.cgroup);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c, &s);
	join(outer.cghome);
	cr_assert_eq(wait_senders(&inner, 2, 3000), 0, "the inner instance's pair are not senders");
	pump(c, s, 1 << 20, 1 << 20, 65536, 3, 20000, &r);
	cr_assert(r.ok, "%s", r.why);
	snap(&inner, &in);
	snap(&outer, &out1);
	cr_assert_eq(in.confirmed, 1);
	cr_assert_gt(in.stats[LISM_S_SC_BYTES], 1 << 20, "the inner pair did not take the shortcut");
	cr_assert_eq(out1.usage.dmbs_in_use, 0, "the outer instance took an entry for the inner's socket");
	cr_assert_eq(out1.stats[LISM_S_PROPOSALS_SENT], out0.stats[LISM_S_PROPOSALS_SENT]);
	cr_assert_eq(out1.stats[LISM_S_SC_MSGS], 0);
	cr_assert_geq(out1.reasons[LISM_R_NESTED] - out0.reasons[LISM_R_NESTED], 1,
		      "the outer instance did not leave the client alone");
	close(c);
	close(s);
	cr_assert_eq(wait_drained(&inner, 3000), 0);
	cr_assert_eq(wait_drained(&outer, 3000), 0);
}

Test(nested, the_outer_instance_still_handles_its_own_sockets)
{
	struct lism_snapshot st;
	struct pump_result r;
	int c, s;

	require_root();
	needs(LISM_F_DATA_PATH);
	up();
	env_enter(&outer);
	tcp_pair(AF_INET, "127.0.0.1", 1, &c, &s);
	env_leave(&outer);
	cr_assert_eq(wait_senders(&outer, 2, 3000), 0);
	pump(c, s, 1 << 20, 1 << 20, 65536, 4, 20000, &r);
	cr_assert(r.ok, "%s", r.why);
	snap(&outer, &st);
	cr_assert_eq(st.confirmed, 1);
	cr_assert_gt(st.stats[LISM_S_SC_BYTES], 1 << 20);
	cr_assert_eq(st.reasons[LISM_R_NESTED], 0, "the outer instance took its own sockets for an inner one's");
	close(c);
	close(s);
	cr_assert_eq(wait_drained(&outer, 3000), 0);
}

/* A client of the inner instance and a server of the outer one: two devices, plain TCP. */
Test(nested, ends_of_two_instances_are_two_devices)
{
	struct lism_snapshot in, out;
	int l, c, s, port = 0;

	require_root();
	up();
	env_enter(&outer);
	l = tcp_listen(AF_INET, "127.0.0.1", &port, 1);
	join(inner.cgroup);
	c = tcp_connect(AF_INET, "127.0.0.1", port, 1);
	join(outer.cghome);
	outer.entered = 0;
	s = tcp_accept(l, 1, 5000);
	cr_assert_eq(send_all(c, 5, 0, 200000), 0);
	cr_assert_eq(recv_check(s, 5, 0, 200000, 5000), 0);
	cr_assert_eq(send_all(s, 6, 0, 200000), 0);
	cr_assert_eq(recv_check(c, 6, 0, 200000, 5000), 0);
	snap(&inner, &in);
	snap(&outer, &out);
	cr_assert_eq(in.stats[LISM_S_PROPOSALS_SENT], 1);
	cr_assert_eq(in.confirmed + out.confirmed, 0);
	cr_assert_geq(out.reasons[LISM_R_GID_MISMATCH], 1, "the outer listener did not see another device");
	cr_assert_eq(in.reasons[LISM_R_PEER_NO_LISM], 1, "the client did not fall back for want of an answer");
	cr_assert_eq(in.stats[LISM_S_SC_BYTES] + out.stats[LISM_S_SC_BYTES], 0);
	close(c);
	close(s);
	close(l);
	cr_assert_eq(wait_drained(&inner, 3000), 0);
	cr_assert_eq(wait_drained(&outer, 3000), 0);
}
