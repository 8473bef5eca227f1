/* SPDX-License-Identifier: GPL-2.0-only */
/* A sockops context's addresses, as the scope and churn keys take them. */
#ifndef LISM_ADDR_BPF_H
#define LISM_ADDR_BPF_H

#include "lism.bpf.h"

/* IPv4 addresses are kept as ::ffff:a.b.c.d so one key type covers both. */
struct addr6 {
	__u32 w[4];
};

static __always_inline void addr_from_v4(struct addr6 *a, __u32 ip4)
{
	a->w[0] = 0;
	a->w[1] = 0;
	a->w[2] = bpf_htonl(0xffff);
	a->w[3] = ip4;
}

/*
 * Context fields are read with volatile loads: clang otherwise sinks them
 * into the branch and folds "v4 ? &ctx->a : &ctx->b" into a modified ctx
 * pointer, which the verifier rejects.
 */
#define CTX(field) (*(volatile __u32 *)&(field))

static __always_inline void pick_addr(struct addr6 *a, __u32 fam, __u32 ip4, __u32 a0, __u32 a1,
				      __u32 a2, __u32 a3)
{
	if (fam == AF_INET) {
		addr_from_v4(a, ip4);
	} else {
		a->w[0] = a0;
		a->w[1] = a1;
		a->w[2] = a2;
		a->w[3] = a3;
	}
}

static __always_inline void sockops_local(struct bpf_sock_ops *s, struct addr6 *a)
{
	pick_addr(a, CTX(s->family), CTX(s->local_ip4), CTX(s->local_ip6[0]),
		  CTX(s->local_ip6[1]), CTX(s->local_ip6[2]), CTX(s->local_ip6[3]));
}

static __always_inline void sockops_remote(struct bpf_sock_ops *s, struct addr6 *a)
{
	pick_addr(a, CTX(s->family), CTX(s->remote_ip4), CTX(s->remote_ip6[0]),
		  CTX(s->remote_ip6[1]), CTX(s->remote_ip6[2]), CTX(s->remote_ip6[3]));
}

static __always_inline int addr_eq(const __u8 *stored, const struct addr6 *a)
{
	const __u32 *w = (const __u32 *)stored;

	return w[0] == a->w[0] && w[1] == a->w[1] && w[2] == a->w[2] && w[3] == a->w[3];
}

static __always_inline __u16 sockops_rport(struct bpf_sock_ops *s)
{
	return (__u16)bpf_ntohl(s->remote_port);
}

#endif
