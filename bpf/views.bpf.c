// SPDX-License-Identifier: GPL-2.0-only
/*
 * What `lism conns` reads that userspace cannot: a task_file iterator walks
 * every process's open files (all network namespaces, no setns), keeps the
 * sockets that carry lism state, and emits one lism_sock_row each, with the
 * kernel's view of the socket, the bytes waiting in its shortcut queue and
 * the process holding it.  Runs only while `lism conns` reads it.
 *
 * Rule: nothing here hands a pointer it walked to a helper.  Whether the
 * verifier trusts file->socket->sk differs between kernel builds of one
 * release (bpf_sk_storage_get refused an "untrusted_ptr_sock" on one 6.18
 * and took it on another), so everything past the socket is read with
 * CO-RE probe reads, which the verifier accepts on every kernel: the
 * socket's fields, its cookie, and its lism storage (storage.bpf.h).  Why not the alternatives
 * (measured here, docs/architecture.md "Views"): an sk_storage-map
 * iterator is refused (EPERM) by this machine's kernel, and iter/tcp sees
 * one network namespace per reader (setns needs CAP_SYS_ADMIN, which the
 * DaemonSet does not grant).
 */
#include "sock.bpf.h"
#include "storage.bpf.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 lism_socks_map_id = 0; /* the loader's: the pinned "socks" map */
const volatile bool lism_test_reject = false; /* LISM_TEST_REJECT_POINT */

static __always_inline void v4mapped(__u8 *out, __be32 a)
{
	__builtin_memset(out, 0, 10);
	out[10] = 0xff;
	out[11] = 0xff;
	__builtin_memcpy(out + 12, &a, 4);
}

SEC("iter/task_file")
int lism_iter_socks(struct bpf_iter__task_file *ctx)
{
	struct task_struct *task = ctx->task;
	struct file *file = ctx->file;
	struct lism_sock_row row;
	struct socket *so;
	struct sock *sk;
	__u64 st;

	LISM_TEST_REJECT_POINT(lism_test_reject);
	if (!task || !file)
		return 0;
	so = bpf_sock_from_file(file); /* from the context's own pointer: trusted on every kernel */
	if (!so)
		return 0;
	sk = BPF_CORE_READ(so, sk);
	if (!sk || BPF_CORE_READ(sk, sk_protocol) != IPPROTO_TCP)
		return 0;
	st = storage_find(sk, lism_socks_map_id, STORAGE_THIS_MAP);
	if (!st)
		return 0;
	__builtin_memset(&row, 0, sizeof(row));
	if (bpf_probe_read_kernel(&row.st, sizeof(row.st), (void *)st))
		return 0;
	row.cookie = BPF_CORE_READ(sk, __sk_common.skc_cookie.counter);
	row.pid = task->tgid;
	row.fd = ctx->fd;
	bpf_probe_read_kernel_str(row.comm, sizeof(row.comm), task->comm);
	row.family = BPF_CORE_READ(sk, __sk_common.skc_family);
	row.tcp_state = BPF_CORE_READ(sk, __sk_common.skc_state);
	row.lport = BPF_CORE_READ(sk, __sk_common.skc_num);
	row.rport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	if (row.family == AF_INET) {
		v4mapped(row.laddr, BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr));
		v4mapped(row.raddr, BPF_CORE_READ(sk, __sk_common.skc_daddr));
	} else {
		BPF_CORE_READ_INTO(&row.laddr, sk, __sk_common.skc_v6_rcv_saddr);
		BPF_CORE_READ_INTO(&row.raddr, sk, __sk_common.skc_v6_daddr);
	}
	row.unread = sock_shortcut_unread_if_counted(sk);
	bpf_seq_write(ctx->meta->seq, &row, sizeof(row));
	return 0;
}
