// SPDX-License-Identifier: GPL-2.0-only
/*
 * make bench's baseline: a plain sockmap redirect, the way Cilium's old
 * bpf_redir and Merbridge shortcut local TCP.  sockops puts every
 * established IPv4 (or v4-mapped) socket into a sockhash keyed by its
 * 4-tuple; sk_msg redirects each send to the socket whose tuple is the
 * mirror of the sender's.  No handshake, no bounds, no order check, no
 * fallback: what a redirect costs and gains on this kernel, and no more.
 */
#include "vmlinux.h"
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

struct tuple {
	__u32 sip, dip, sport, dport; /* ports in host order */
};

struct {
	__uint(type, BPF_MAP_TYPE_SOCKHASH);
	__uint(max_entries, 65536);
	__type(key, struct tuple);
	__type(value, __u64);
} baseline_socks SEC(".maps");

/* A socket's two ends as read from its context: every field at a constant offset. */
struct ends {
	__u32 family, l4, r4, l6[4], r6[4];
};

/*
 * Read each context field once, at its own constant offset, before any
 * branch: clang may otherwise fold two branches' loads into one load from
 * a computed context pointer, which the verifier refuses.
 */
#define READ_ENDS(ctx, e)                                                                        \
	do {                                                                                     \
		(e)->family = (ctx)->family;                                                     \
		(e)->l4 = (ctx)->local_ip4;                                                      \
		(e)->r4 = (ctx)->remote_ip4;                                                     \
		(e)->l6[0] = (ctx)->local_ip6[0];                                                \
		(e)->l6[1] = (ctx)->local_ip6[1];                                                \
		(e)->l6[2] = (ctx)->local_ip6[2];                                                \
		(e)->l6[3] = (ctx)->local_ip6[3];                                                \
		(e)->r6[0] = (ctx)->remote_ip6[0];                                               \
		(e)->r6[1] = (ctx)->remote_ip6[1];                                               \
		(e)->r6[2] = (ctx)->remote_ip6[2];                                               \
		(e)->r6[3] = (ctx)->remote_ip6[3];                                               \
		asm volatile("" ::: "memory");                                                   \
	} while (0)

/* An IPv4 address, also from ::ffff:a.b.c.d; 0 if neither. */
static __always_inline int v4(__u32 family, __u32 ip4, const __u32 ip6[4], __u32 *out)
{
	if (family == 2 /* AF_INET */) {
		*out = ip4;
		return 1;
	}
	if (family == 10 /* AF_INET6 */ && !ip6[0] && !ip6[1] && ip6[2] == bpf_htonl(0xffff)) {
		*out = ip6[3];
		return 1;
	}
	return 0;
}

SEC("sockops")
int baseline_sockops(struct bpf_sock_ops *s)
{
	struct tuple k = {};
	struct ends e;

	if (s->op != BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB && s->op != BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB)
		return 1;
	READ_ENDS(s, &e);
	if (!v4(e.family, e.l4, e.l6, &k.sip) || !v4(e.family, e.r4, e.r6, &k.dip))
		return 1;
	k.sport = s->local_port;
	k.dport = bpf_ntohl(s->remote_port);
	bpf_sock_hash_update(s, &baseline_socks, &k, BPF_ANY);
	return 1;
}

SEC("sk_msg")
int baseline_msg(struct sk_msg_md *m)
{
	struct tuple k = {};
	struct ends e;

	READ_ENDS(m, &e);
	/* the peer's tuple: its local end is our remote one */
	if (!v4(e.family, e.r4, e.r6, &k.sip) || !v4(e.family, e.l4, e.l6, &k.dip))
		return SK_PASS;
	k.sport = bpf_ntohl(m->remote_port);
	k.dport = m->local_port;
	bpf_msg_redirect_hash(m, &baseline_socks, &k, BPF_F_INGRESS);
	return SK_PASS;
}

char LICENSE[] SEC("license") = "GPL";
