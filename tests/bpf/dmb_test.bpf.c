// SPDX-License-Identifier: GPL-2.0-only
/*
 * The DMB allocator, driven through BPF_PROG_TEST_RUN: the same dmb.bpf.h
 * the handshake uses, on the same kind of maps, without any sockets.  tc
 * programs with their arguments in .bss: a syscall program would be
 * sleepable, and 6.1 lets sleepable programs use no queue map.
 */
#include "dmb.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct dmb_test_args {
	__u64 token;
	__s32 err;
	__u32 slot;
};

struct dmb_test_args args; /* in and out: the test's (skel->bss) */

SEC("tc")
int dmb_test_take(struct __sk_buff *skb)
{
	struct dmb_test_args *a = &args;
	struct lism_device *d = lism_dev();
	struct lism_dmb *e;
	__u32 slot = 0;

	(void)skb;

	a->token = 0;
	if (!d) {
		a->err = -1;
		return 0;
	}
	e = dmb_take(d, &slot);
	if (!e) {
		a->err = -28; /* ENOSPC */
		return 0;
	}
	a->token = dmb_publish(d, e, slot, LISM_ROLE_ACTIVE);
	a->slot = slot;
	a->err = 0;
	return 0;
}

SEC("tc")
int dmb_test_release(struct __sk_buff *skb)
{
	struct dmb_test_args *a = &args;
	struct lism_dmb *e = dmb_get(lism_token_slot(a->token));

	(void)skb;
	if (!e) {
		a->err = -2;
		return 0;
	}
	dmb_release(e, a->token, NULL);
	a->err = 0;
	return 0;
}
