// SPDX-License-Identifier: GPL-2.0-only
/*
 * The backstop: an optional feature in its own object (a tracing program
 * needs BPF trampolines and the tracepoint's BTF, which not every kernel
 * build offers).  Without it a close the handshake did not see waits for
 * the sweep.
 */
#include "dmb.bpf.h"

char LICENSE[] SEC("license") = "GPL";

const volatile bool lism_test_reject = false; /* LISM_TEST_REJECT_POINT */

/*
 * Backstop for the invariant nothing else could restore: a socket that still
 * owns a DMB when the kernel destroys it gives it back here.  TCP_CLOSE
 * always comes before destruction, and the close seen by lism_sockops has
 * released the entry already, so this acts only on a close that program did
 * not see; each one is counted (reaped) and reported with the socket's state.
 */
SEC("tp_btf/tcp_destroy_sock")
int lism_destroy(__u64 *ctx)
{
	struct sock *sk = (struct sock *)ctx[0]; /* typed by the tracepoint's BTF */
	struct lism_sk *st;
	struct lism_dmb *e;
	__u64 token;

	LISM_TEST_REJECT_POINT(lism_test_reject);
	st = bpf_sk_storage_get(&socks, sk, 0, 0);
	if (!st)
		return 0;
	token = st->token;
	e = token ? dmb_by_token(token) : NULL;
	if (!e) {
		/*
		 * The socket may have forgotten its token while the entry stayed:
		 * the entry of its slot is still its own if it carries its cookie
		 * (set when it took or joined it; cookies are never reused).  The
		 * token first: a slot taken again is cleared before its new token
		 * is published, so a cookie read after the token is the token's
		 * owner's.  The other order could release a new connection's
		 * entry under an old cookie.
		 */
		e = dmb_get(st->slot);
		if (!e)
			goto out;
		token = __sync_fetch_and_add(&e->token, 0);
		if (!token || !e->cookie || e->cookie != bpf_get_socket_cookie(sk))
			goto out;
		stat_add(LISM_S_REAPED_ORPHANS, 1);
	}
	__sync_fetch_and_or(&e->conn_flags, LISM_CONN_CLOSED);
	stat_add(LISM_S_REAPED, 1);
	emit_event_at(LISM_EV_REAPED, st->reason, e, sk->__sk_common.skc_state);
	close_own(st, e, token);
	return 0;
out:
	sk_closed(st);
	return 0;
}
