// SPDX-License-Identifier: GPL-2.0-only
/*
 * What the views read that userspace cannot: a task_file iterator walks
 * every process's open files (all network namespaces), keeps the sockets
 * that carry lism state, and emits one lism_sock_row each, with the
 * kernel's view of the socket, the bytes waiting in its shortcut queue and
 * the process holding it.  Runs only while `lism conns` reads it.
 *
 * (An iterator over the "socks" storage map would visit closed-but-unfreed
 * sockets too, but this machine's kernel refuses to load one: EPERM.)
 */
#include "lism.bpf.h"

char LICENSE[] SEC("license") = "GPL";

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
	struct lism_sk *st;
	struct socket *so;
	struct sock *sk;
	__u64 ud;

	if (!task || !file)
		return 0;
	so = bpf_sock_from_file(file);
	if (!so)
		return 0;
	sk = so->sk;
	if (!sk)
		return 0;
	st = bpf_sk_storage_get(&socks, sk, 0, 0);
	if (!st)
		return 0;
	__builtin_memset(&row, 0, sizeof(row));
	__builtin_memcpy(&row.st, st, sizeof(row.st));
	row.cookie = bpf_get_socket_cookie(sk);
	row.pid = task->tgid;
	row.fd = ctx->fd;
	bpf_probe_read_kernel_str(row.comm, sizeof(row.comm), task->comm);
	row.family = sk->__sk_common.skc_family;
	row.tcp_state = sk->__sk_common.skc_state;
	row.lport = sk->__sk_common.skc_num;
	row.rport = bpf_ntohs(sk->__sk_common.skc_dport);
	if (row.family == AF_INET) {
		v4mapped(row.laddr, sk->__sk_common.skc_rcv_saddr);
		v4mapped(row.raddr, sk->__sk_common.skc_daddr);
	} else {
		BPF_CORE_READ_INTO(&row.laddr, sk, __sk_common.skc_v6_rcv_saddr);
		BPF_CORE_READ_INTO(&row.raddr, sk, __sk_common.skc_v6_daddr);
	}
	ud = (__u64)BPF_CORE_READ(sk, sk_user_data) & ~SK_USER_DATA_FLAGS;
	if (ud)
		row.unread = BPF_CORE_READ((struct sk_psock *)ud, msg_tot_len);
	bpf_seq_write(ctx->meta->seq, &row, sizeof(row));
	return 0;
}
