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

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "broker.h"
#include "exec/attach.h"
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

/*
 * lism exec under two instances: the inner one marks, decides and answers;
 * the outer one's sockopt programs, which run after it, leave its answer
 * standing (it would say "not marked": the mark is in the inner's map).
 */
Test(nested, an_inner_instances_exec_answer_stands)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	struct lism_exec_info ic, is;
	struct lism_broker *dev = NULL;
	struct lism_dmb ent;
	int l, c, s;

	require_root();
	needs(LISM_F_EXEC);
	up();
	cr_assert_eq(lism_broker_start(inner.pin, outer.device, &dev), 0);
	join(inner.cgroup);
	l = socket(AF_INET, SOCK_STREAM, 0);
	c = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_eq(lism_exec_mark(l), 0);
	cr_assert_eq(lism_exec_mark(c), 0);
	cr_assert_eq(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(l, 4), 0);
	cr_assert_eq(getsockname(l, (struct sockaddr *)&a, &len), 0);
	cr_assert_eq(connect(c, (struct sockaddr *)&a, sizeof(a)), 0);
	s = accept(l, NULL, NULL);
	join(outer.cghome);
	cr_assert_geq(s, 0);
	cr_assert_eq(lism_exec_wait(c, &ic, 5000), 0);
	cr_assert_eq(lism_exec_wait(s, &is, 5000), 0);
	cr_assert(ic.flags & LISM_EXEC_I_MARKED, "the outer instance overwrote the inner one's answer");
	cr_assert_eq(ic.mode, LISM_EXEC_RING, "mode %u reason %u", ic.mode, ic.reason);
	cr_assert_eq(is.mode, LISM_EXEC_RING, "mode %u reason %u", is.mode, is.reason);
	cr_assert_eq(dmb_lookup(&inner, ic.token, &ent), 1, "the answer is not the inner instance's pair");
	lism_broker_stop(dev);
	close(c);
	close(s);
	close(l);
	cr_assert_eq(wait_drained(&inner, 3000), 0);
	cr_assert_eq(wait_drained(&outer, 3000), 0);
}
