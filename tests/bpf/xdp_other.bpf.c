// SPDX-License-Identifier: GPL-2.0-only
/* Another XDP program on a veth (a CNI's, say), attached without libxdp. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

__u64 seen;

SEC("xdp")
int xdp_other(struct xdp_md *ctx)
{
	(void)ctx;
	__sync_fetch_and_add(&seen, 1);
	return XDP_PASS;
}
