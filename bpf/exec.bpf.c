// SPDX-License-Identifier: GPL-2.0-only
/*
 * lism exec's socket options (lism/exec.h), on the instance's cgroup:
 *
 *   setsockopt(LISM_SOL, LISM_SO_EXEC)  mark a fresh TCP socket as running
 *                                       liblism; accept() clones the mark
 *   getsockopt(LISM_SOL, LISM_SO_INFO)  this end's pair and its transport
 *   setsockopt(LISM_SOL, LISM_SO_KERNEL) an active end settles an undecided
 *                                       pair as KERNEL
 *
 * Every other level goes to the kernel untouched, and so does this one on
 * a socket the options do not fit: the caller then gets the kernel's own
 * error (ENOPROTOOPT from setsockopt; EOPNOTSUPP from an IPv4 getsockopt,
 * ENOPROTOOPT from an IPv6 one), which liblism reads as "no lism exec
 * here".  The programs read the handshake's state and never decide; the
 * one write, LISM_SO_KERNEL, can only settle an undecided pair as KERNEL.
 */
#include "lism.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define IPPROTO_TCP 6

const volatile bool lism_test_reject = false; /* LISM_TEST_REJECT_POINT */

/*
 * Every call the programs do not answer goes on to the kernel as it came.
 * An option buffer longer than a page was never the program's to see: 0
 * says so (before 6.5 the kernel failed such a call with EFAULT otherwise,
 * iptables' and IP_MSFILTER's among them).
 */
static __always_inline int pass(struct bpf_sockopt *ctx)
{
	if (ctx->optlen > 4096)
		ctx->optlen = 0;
	return 1;
}

static __always_inline int tcp_sock_fits(const struct bpf_sock *sk)
{
	return sk && sk->protocol == IPPROTO_TCP && (sk->family == AF_INET || sk->family == AF_INET6);
}

/* An active end that waited settles the decision: KERNEL, unless the passive end's came first. */
static __always_inline void claim_kernel(struct bpf_sock *sk)
{
	struct lism_sk *st = bpf_sk_storage_get(&socks, sk, 0, 0);
	struct lism_dmb *e = st ? dmb_by_token(st->token) : NULL;

	if (e && e->role == LISM_ROLE_ACTIVE &&
	    __sync_val_compare_and_swap(&e->exec, 0, LISM_EXEC_WORD(LISM_EXEC_KERNEL, LISM_R_EXEC_UNDECIDED)) == 0)
		reason_count(LISM_R_EXEC_UNDECIDED);
}

SEC("cgroup/setsockopt")
int lism_exec_set(struct bpf_sockopt *ctx)
{
	struct bpf_sock *sk = ctx->sk;
	int *val = ctx->optval;

	LISM_TEST_REJECT_POINT(lism_test_reject);
	if (ctx->level != LISM_SOL || !tcp_sock_fits(sk) || ctx->optlen != sizeof(int) ||
	    (void *)(val + 1) > ctx->optval_end)
		return pass(ctx); /* a nearer instance's program answered: optlen is -1 */
	if (ctx->optname == LISM_SO_KERNEL) {
		claim_kernel(sk);
		ctx->optlen = -1;
		return 1;
	}
	/* a mark only before the handshake: one made later would not be on the pair's entries */
	if (ctx->optname != LISM_SO_EXEC || sk->state != BPF_TCP_CLOSE)
		return pass(ctx);
	if (*val) {
		if (!bpf_sk_storage_get(&exec_marks, sk, 0, BPF_SK_STORAGE_GET_F_CREATE))
			return pass(ctx);
	} else {
		bpf_sk_storage_delete(&exec_marks, sk);
	}
	ctx->optlen = -1; /* done: the kernel's setsockopt does not run */
	return 1;
}

/* The transport the ends of @e's pair use, as this end sees it now. */
static __always_inline __u32 exec_mode(const struct lism_sk *st, const struct lism_dmb *e)
{
	__u32 mode;

	if (!st || !e || st->state == LISM_ST_FALLBACK || st->state == LISM_ST_CLOSED ||
	    e->state == LISM_ST_FALLBACK)
		return LISM_EXEC_KERNEL;
	mode = LISM_EXEC_MODE(e->exec);
	/* RING is written after both entries are CONFIRMED: read it only with the state that goes with it */
	return mode == LISM_EXEC_RING && e->state != LISM_ST_CONFIRMED ? LISM_EXEC_UNDECIDED : mode;
}

SEC("cgroup/getsockopt")
int lism_exec_get(struct bpf_sockopt *ctx)
{
	struct bpf_sock *sk = ctx->sk;
	struct lism_exec_info *out = ctx->optval;
	struct lism_dmb *e = NULL;
	struct lism_sk *st;

	LISM_TEST_REJECT_POINT(lism_test_reject);
	/* the kernel answers no LISM_SOL call: a 0 here is a nearer instance's answer, which stands */
	if (ctx->level != LISM_SOL || ctx->optname != LISM_SO_INFO || !tcp_sock_fits(sk) || ctx->retval == 0)
		return pass(ctx);
	if ((void *)(out + 1) > ctx->optval_end)
		return pass(ctx);
	__builtin_memset(out, 0, sizeof(*out));
	out->layout = LISM_LAYOUT_VERSION;
	if (bpf_sk_storage_get(&exec_marks, sk, 0, 0))
		out->flags |= LISM_EXEC_I_MARKED;
	st = bpf_sk_storage_get(&socks, sk, 0, 0);
	if (st) {
		out->state = st->state;
		out->reason = st->reason;
		out->role = st->role;
		e = st->token ? dmb_by_token(st->token) : NULL;
	}
	if (e) {
		out->flags |= LISM_EXEC_I_PAIRED;
		out->token = e->token;
		out->peer_token = e->peer_token;
		out->state = e->state; /* an active end's own state stays READY: its entry's says more */
	}
	/* an unmarked socket never takes a ring, whatever its peer asked */
	out->mode = (out->flags & LISM_EXEC_I_MARKED) ? exec_mode(st, e) : LISM_EXEC_KERNEL;
	if (out->mode == LISM_EXEC_KERNEL && e && LISM_EXEC_MODE(e->exec) == LISM_EXEC_KERNEL)
		out->reason = LISM_EXEC_REASON(e->exec);
	ctx->optlen = sizeof(*out);
	ctx->retval = 0;
	return 1;
}
