/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The veth fast path (bpf/fastpath.bpf.c, `lism xdp`): what the XDP
 * program and the control plane share.  docs/kubernetes.md explains it.
 */
#ifndef LISM_FASTPATH_H
#define LISM_FASTPATH_H

#include "types.h"

/* Pins in the instance's directory (the program itself is libxdp's). */
#define LISM_PIN_XDP_PORTS "xdp_ports"   /* DEVMAP_HASH: ifindex -> ifindex, the redirect targets */
#define LISM_PIN_XDP_STATS "xdp_stats"   /* PERCPU_ARRAY of __u64, enum lism_xdp_stat */
#define LISM_PIN_XDP_CONFIG "xdp_config" /* ARRAY[1] of struct lism_xdp_config */
#define LISM_XDP_PROG_NAME "lism_xdp_fwd"

/* xdp_config.flags */
/* conntrack accepts TCP segments outside the window it tracked
 * (nf_conntrack_tcp_be_liberal=1), so established TCP may skip it */
#define LISM_XDP_F_TCP (1u << 0)

struct lism_xdp_config {
	__u32 flags;
	/* pass a packet to the stack when its conntrack entry has less
	 * than this left, so the stack refreshes the timeout */
	__u32 refresh_ms;
};

/* Why a packet took the fast path or was left to the stack. */
enum lism_xdp_stat {
	LISM_XDP_FORWARDED = 0,  /* redirected to the destination pod's veth */
	LISM_XDP_FWD_BYTES,
	LISM_XDP_NOT_IP,         /* not IPv4/IPv6 TCP/UDP, IP options, fragments, TTL <= 1 */
	LISM_XDP_NO_ROUTE,       /* FIB lookup failed: no route, no neighbour, forwarding off */
	LISM_XDP_TOO_BIG,        /* larger than the egress MTU: mostly GSO batches (TCP bulk),
				    which a generic-XDP redirect cannot carry */
	LISM_XDP_NOT_LOCAL,      /* routed somewhere that is not a fast-path veth */
	LISM_XDP_NO_CT,          /* no conntrack entry: a new flow, the stack decides */
	LISM_XDP_CT_STATE,       /* entry unconfirmed, no reply seen, dying, related, or TCP not established */
	LISM_XDP_NAT,            /* the flow is NATed (a Service): only the stack rewrites it */
	LISM_XDP_TCP_FLAGS,      /* SYN, FIN or RST: conntrack must see them */
	LISM_XDP_TCP_STRICT,     /* conntrack tracks TCP windows strictly (be_liberal=0) */
	LISM_XDP_REFRESH,        /* conntrack entry near its timeout: the stack refreshes it */
	LISM_XDP_STAT_MAX,
};

#endif
