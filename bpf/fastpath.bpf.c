// SPDX-License-Identifier: GPL-2.0-only
/*
 * The veth fast path: XDP on the node side of pod veths.  A packet from one
 * pod to another pod on the same node normally crosses the node's stack
 * (routing, netfilter, conntrack) between two veths; this program sends it
 * straight to the destination pod's veth instead -- but only for flows the
 * stack already accepted and will not rewrite:
 *   - the FIB routes it to a veth lism manages (xdp_ports), with a resolved
 *     neighbour, forwarding on, within the MTU (bpf_fib_lookup).  A GSO
 *     batch (TCP bulk over veth is never segmented) is larger than the MTU
 *     and stays with the stack: the redirect would drop it (EMSGSIZE);
 *   - conntrack has a confirmed entry that has seen a reply, is not NATed
 *     (Services stay with kube-proxy), is not a related/expected flow, and
 *     is not about to time out (the stack refreshes it);
 *   - TCP only when established, never SYN/FIN/RST, and only when conntrack
 *     accepts segments outside the window it saw (be_liberal): otherwise the
 *     segments the stack still sees (FIN, RST) would look out of window to
 *     it, become INVALID, and be dropped by policies that drop INVALID.
 * Everything else is XDP_PASS: the stack is always right, this is only
 * faster.  Policy is thus applied when a flow starts, as with netfilter
 * flowtables; a verdict changed later applies once the entry is gone.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <xdp/xdp_helpers.h>

#include "lism/fastpath.h"
#include "reject.bpf.h"

char LICENSE[] SEC("license") = "GPL";

const volatile bool lism_test_reject = false; /* LISM_TEST_REJECT_POINT */

#define AF_INET 2
#define AF_INET6 10
#define ETH_ALEN 6
#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD
#define IP_MF 0x2000
#define IP_OFFSET 0x1FFF
#define TCP_FLAGS_OFF 13
#define TCP_FIN_SYN_RST 0x07
#define TCP_CONNTRACK_ESTABLISHED 3
#define IP_CT_TCP_FLAG_BE_LIBERAL 0x08
#define IPS_EXPECTED (1UL << 0)
#define IPS_SEEN_REPLY (1UL << 1)
#define IPS_CONFIRMED (1UL << 3)
#define IPS_SRC_NAT (1UL << 4)
#define IPS_DST_NAT (1UL << 5)
#define IPS_DYING (1UL << 9)
#define BPF_F_CURRENT_NETNS (-1)

/* In libxdp's dispatcher, after a CNI's own programs (lower numbers run
 * first, 50 is the default): they may filter, and a redirect ends the chain. */
struct {
	__uint(priority, 60);
	__uint(XDP_PASS, 1);
} XDP_RUN_CONFIG(lism_xdp_fwd);

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u32);
} xdp_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LISM_XDP_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} xdp_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lism_xdp_config);
} xdp_config SEC(".maps");

extern int CONFIG_HZ __kconfig __weak;
extern struct nf_conn *bpf_xdp_ct_lookup(struct xdp_md *xdp_ctx, struct bpf_sock_tuple *tuple,
					 __u32 tuple__sz, struct bpf_ct_opts *opts,
					 __u32 opts__sz) __ksym;
extern void bpf_ct_release(struct nf_conn *ct) __ksym;

static __always_inline int count(__u32 stat, __u64 n, int verdict)
{
	__u64 *c = bpf_map_lookup_elem(&xdp_stats, &stat);

	if (c)
		*c += n;
	return verdict;
}

static __always_inline int pass(__u32 stat)
{
	return count(stat, 1, XDP_PASS);
}

/* What the conntrack entry says about skipping the stack; LISM_XDP_STAT_MAX: go. */
static __always_inline __u32 ct_verdict(struct nf_conn *ct, __u8 proto, __u8 tcp_flags,
					const struct lism_xdp_config *cfg)
{
	unsigned long status = ct->status;
	__s64 hz = CONFIG_HZ > 0 ? CONFIG_HZ : 250;
	__s32 left;

	if (!(status & IPS_CONFIRMED) || !(status & IPS_SEEN_REPLY) ||
	    (status & (IPS_DYING | IPS_EXPECTED)) || ct->master)
		return LISM_XDP_CT_STATE;
	if (status & (IPS_SRC_NAT | IPS_DST_NAT))
		return LISM_XDP_NAT;
	left = (__s32)(ct->timeout - (__u32)bpf_jiffies64());
	if ((__s64)left * 1000 < (__s64)cfg->refresh_ms * hz)
		return LISM_XDP_REFRESH;
	if (proto != IPPROTO_TCP)
		return LISM_XDP_STAT_MAX;
	if (tcp_flags & TCP_FIN_SYN_RST)
		return LISM_XDP_TCP_FLAGS;
	if (ct->proto.tcp.state != TCP_CONNTRACK_ESTABLISHED)
		return LISM_XDP_CT_STATE;
	if (!(cfg->flags & LISM_XDP_F_TCP) &&
	    !((ct->proto.tcp.seen[0].flags & ct->proto.tcp.seen[1].flags) & IP_CT_TCP_FLAG_BE_LIBERAL))
		return LISM_XDP_TCP_STRICT;
	return LISM_XDP_STAT_MAX;
}

/* Ports of the TCP/UDP header at @l4, and its TCP flags; -1 for other protocols. */
static __always_inline int l4_ports(void *l4, void *end, __u8 proto, __be16 *sport, __be16 *dport,
				    __u8 *flags)
{
	if (proto == IPPROTO_TCP) {
		struct tcphdr *th = l4;

		if ((void *)(th + 1) > end)
			return -1;
		*sport = th->source;
		*dport = th->dest;
		*flags = ((__u8 *)th)[TCP_FLAGS_OFF];
		return 0;
	}
	if (proto == IPPROTO_UDP) {
		struct udphdr *uh = l4;

		if ((void *)(uh + 1) > end)
			return -1;
		*sport = uh->source;
		*dport = uh->dest;
		*flags = 0;
		return 0;
	}
	return -1;
}

SEC("xdp")
int lism_xdp_fwd(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct bpf_fib_lookup fib = {};
	struct bpf_sock_tuple tuple = {};
	struct bpf_ct_opts opts = { .netns_id = BPF_F_CURRENT_NETNS };
	const struct lism_xdp_config *cfg;
	struct iphdr *iph = NULL;
	struct ipv6hdr *ip6h = NULL;
	__u32 tuple_len, zero = 0, verdict;
	__u8 proto, tcp_flags = 0;
	struct nf_conn *ct;
	__u64 bytes = end - data;
	int rc;

	LISM_TEST_REJECT_POINT(lism_test_reject);
	if ((void *)(eth + 1) > end)
		return pass(LISM_XDP_NOT_IP);
	cfg = bpf_map_lookup_elem(&xdp_config, &zero);
	if (!cfg)
		return XDP_PASS;

	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		iph = (void *)(eth + 1);
		if ((void *)(iph + 1) > end || iph->ihl != 5 || iph->ttl <= 1 ||
		    (iph->frag_off & bpf_htons(IP_MF | IP_OFFSET)))
			return pass(LISM_XDP_NOT_IP);
		proto = iph->protocol;
		if (l4_ports(iph + 1, end, proto, &tuple.ipv4.sport, &tuple.ipv4.dport, &tcp_flags))
			return pass(LISM_XDP_NOT_IP);
		tuple.ipv4.saddr = iph->saddr;
		tuple.ipv4.daddr = iph->daddr;
		tuple_len = sizeof(tuple.ipv4);
		fib.family = AF_INET;
		fib.tos = iph->tos;
		fib.tot_len = bpf_ntohs(iph->tot_len);
		fib.ipv4_src = iph->saddr;
		fib.ipv4_dst = iph->daddr;
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		ip6h = (void *)(eth + 1);
		if ((void *)(ip6h + 1) > end || ip6h->hop_limit <= 1)
			return pass(LISM_XDP_NOT_IP);
		proto = ip6h->nexthdr; /* extension headers: not TCP/UDP, passed */
		if (l4_ports(ip6h + 1, end, proto, &tuple.ipv6.sport, &tuple.ipv6.dport, &tcp_flags))
			return pass(LISM_XDP_NOT_IP);
		__builtin_memcpy(tuple.ipv6.saddr, &ip6h->saddr, 16);
		__builtin_memcpy(tuple.ipv6.daddr, &ip6h->daddr, 16);
		tuple_len = sizeof(tuple.ipv6);
		fib.family = AF_INET6;
		fib.flowinfo = *(__be32 *)ip6h & bpf_htonl(0x0FFFFFFF);
		fib.tot_len = bpf_ntohs(ip6h->payload_len) + sizeof(*ip6h);
		__builtin_memcpy(fib.ipv6_src, &ip6h->saddr, 16);
		__builtin_memcpy(fib.ipv6_dst, &ip6h->daddr, 16);
	} else {
		return pass(LISM_XDP_NOT_IP);
	}
	fib.l4_protocol = proto;
	fib.ifindex = ctx->ingress_ifindex;

	rc = bpf_fib_lookup(ctx, &fib, sizeof(fib), 0);
	if (rc == BPF_FIB_LKUP_RET_FRAG_NEEDED)
		return pass(LISM_XDP_TOO_BIG);
	if (rc != BPF_FIB_LKUP_RET_SUCCESS)
		return pass(LISM_XDP_NO_ROUTE);
	if (fib.ifindex == ctx->ingress_ifindex || !bpf_map_lookup_elem(&xdp_ports, &fib.ifindex))
		return pass(LISM_XDP_NOT_LOCAL);

	opts.l4proto = proto;
	ct = bpf_xdp_ct_lookup(ctx, &tuple, tuple_len, &opts, sizeof(opts));
	if (!ct)
		return pass(LISM_XDP_NO_CT);
	verdict = ct_verdict(ct, proto, tcp_flags, cfg);
	bpf_ct_release(ct);
	if (verdict != LISM_XDP_STAT_MAX)
		return pass(verdict);

	/* What forwarding would have done to the packet. */
	if (iph) {
		__u32 csum = iph->check + bpf_htons(0x0100);

		iph->check = (__u16)(csum + (csum >= 0xFFFF));
		iph->ttl--;
	} else if (ip6h) {
		ip6h->hop_limit--;
	}
	__builtin_memcpy(eth->h_dest, fib.dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, fib.smac, ETH_ALEN);
	count(LISM_XDP_FWD_BYTES, bytes, 0);
	return count(LISM_XDP_FORWARDED, 1, bpf_redirect_map(&xdp_ports, fib.ifindex, 0));
}
