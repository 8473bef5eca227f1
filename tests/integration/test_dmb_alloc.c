// SPDX-License-Identifier: GPL-2.0-only
/* The DMB allocator in the kernel: unique tokens, exhaustion, idempotent release, FIFO reuse. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "harness.h"
#include "lism/token.h"

struct dmb_test_args { /* as tests/bpf/dmb_test.bpf.c's, which the skeleton names */
	__u64 token;
	__s32 err;
	__u32 slot;
};

#include "dmb_test.skel.h"

enum { CAP = 64 };

static struct dmb_test *skel;

static void setup(void)
{
	struct lism_device d = { .max_dmbs = CAP, .capacity = CAP, .dmb_size = 1 << 20, .active = 1 };
	__u32 zero = 0;
	struct bpf_map *map;

	require_root();
	skel = dmb_test__open();
	cr_assert_not_null(skel);
	/* maps of its own: lism.bpf.h pins by name, by default under the host's /sys/fs/bpf */
	bpf_object__for_each_map(map, skel->obj)
		cr_assert_eq(bpf_map__set_pin_path(map, NULL), 0);
	bpf_map__set_max_entries(skel->maps.dmbs, CAP);
	bpf_map__set_max_entries(skel->maps.dmb_owner, CAP);
	bpf_map__set_max_entries(skel->maps.dmb_free, CAP);
	bpf_map__set_max_entries(skel->maps.shortcut, CAP);
	cr_assert_eq(dmb_test__load(skel), 0, "loading the allocator test program");
	cr_assert_eq(bpf_map__update_elem(skel->maps.device, &zero, 4, &d, sizeof(d), 0), 0);
	for (__u32 slot = 0; slot < CAP; slot++)
		cr_assert_eq(bpf_map_update_elem(bpf_map__fd(skel->maps.dmb_free), NULL, &slot, 0), 0);
}

static void teardown(void)
{
	dmb_test__destroy(skel);
	skel = NULL;
}

TestSuite(dmb_alloc, .init = setup, .fini = teardown, .timeout = 30);

static struct dmb_test_args run(struct bpf_program *prog, __u64 token)
{
	char pkt[64] = { 0 }; /* a tc program runs on a packet: any will do */
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = pkt, .data_size_in = sizeof(pkt));

	memset(&skel->bss->args, 0, sizeof(skel->bss->args));
	skel->bss->args.token = token;
	cr_assert_eq(bpf_prog_test_run_opts(bpf_program__fd(prog), &opts), 0, "test run: %s",
		     strerror(errno));
	return skel->bss->args;
}

static struct dmb_test_args take(void)
{
	return run(skel->progs.dmb_test_take, 0);
}

static void release(__u64 token)
{
	cr_assert_eq(run(skel->progs.dmb_test_release, token).err, 0);
}

static struct lism_usage usage(void)
{
	struct lism_usage u;
	__u32 zero = 0;

	cr_assert_eq(bpf_map__lookup_elem(skel->maps.usage, &zero, 4, &u, sizeof(u), 0), 0);
	return u;
}

Test(dmb_alloc, unique_tokens_until_exhaustion)
{
	__u64 tokens[CAP];
	int seen[CAP] = { 0 };

	for (int i = 0; i < CAP; i++) {
		struct dmb_test_args a = take();

		cr_assert_eq(a.err, 0, "take %d failed", i);
		cr_assert(lism_token_valid(a.token, CAP));
		cr_assert_eq(lism_token_slot(a.token), a.slot);
		cr_assert_not(seen[a.slot], "slot %u handed out twice", a.slot);
		seen[a.slot] = 1;
		for (int j = 0; j < i; j++)
			cr_assert_neq(tokens[j], a.token);
		tokens[i] = a.token;
	}
	cr_assert_eq(usage().dmbs_in_use, CAP);
	cr_assert_eq(take().err, -ENOSPC, "allocated beyond capacity");
	cr_assert_eq(usage().dmbs_in_use, CAP, "a failed take leaked a count");
	cr_assert_eq(usage().dmbs_hwm, CAP);
	for (int i = 0; i < CAP; i++)
		release(tokens[i]);
	cr_assert_eq(usage().dmbs_in_use, 0);
}

Test(dmb_alloc, release_is_idempotent_and_ignores_stale_tokens)
{
	struct dmb_test_args a = take(), b;

	release(a.token);
	release(a.token); /* a second release (peer and close racing) changes nothing */
	cr_assert_eq(usage().dmbs_in_use, 0);
	/* drain the queue until a.slot comes back under a new token */
	__u64 held[CAP];
	int n = 0;

	do {
		b = take();
		cr_assert_eq(b.err, 0);
		held[n++] = b.token;
	} while (b.slot != a.slot);
	cr_assert_neq(b.token, a.token, "a reused slot got its old token back");
	release(a.token); /* stale: must not free the new owner's slot */
	cr_assert_eq(usage().dmbs_in_use, n);
	for (int i = 0; i < n; i++)
		release(held[i]);
	cr_assert_eq(usage().dmbs_in_use, 0);
}

Test(dmb_alloc, freed_slots_wait_behind_every_other_free_slot)
{
	struct dmb_test_args a = take(), b;

	release(a.token);
	/* FIFO: every other free slot comes before a.slot again */
	for (int i = 0; i < CAP - 1; i++) {
		b = take();
		cr_assert_neq(b.slot, a.slot, "slot reused after %d takes", i);
	}
	b = take();
	cr_assert_eq(b.slot, a.slot);
}

Test(dmb_alloc, max_dmbs_below_capacity_is_enforced)
{
	struct lism_device d;
	__u32 zero = 0;

	cr_assert_eq(bpf_map__lookup_elem(skel->maps.device, &zero, 4, &d, sizeof(d), 0), 0);
	d.max_dmbs = 10;
	cr_assert_eq(bpf_map__update_elem(skel->maps.device, &zero, 4, &d, sizeof(d), 0), 0);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(take().err, 0);
	cr_assert_eq(take().err, -ENOSPC);
	cr_assert_eq(usage().dmbs_in_use, 10);
}
