/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What lism reads of a kernel socket outside the data path: its file's
 * mode and the bytes unread in its shortcut queue (the psock's
 * msg_tot_len), with CO-RE probe reads, which every kernel's verifier
 * takes on any pointer.  The data path reads the same two fields with
 * direct loads through bpf_rdonly_cast() (shortcut.bpf.c), because it runs
 * on every send.
 */
#ifndef LISM_SOCK_BPF_H
#define LISM_SOCK_BPF_H

#include "lism.bpf.h"

/* The flags of @sk's file: 0, or -1 while it has none (not accepted yet). */
static __always_inline int sock_file_flags(const struct sock *sk, unsigned int *flags)
{
	struct file *f;

	if (!sk)
		return -1;
	f = BPF_CORE_READ(sk, sk_socket, file);
	if (!f || bpf_core_read(flags, sizeof(*flags), &f->f_flags))
		return -1;
	return 0;
}

/* Whether @sk's file is non-blocking; a socket without a file counts as blocking. */
static __always_inline int sock_nonblocking(const struct sock *sk)
{
	unsigned int flags;

	return !sock_file_flags(sk, &flags) && (flags & O_NONBLOCK);
}

/* Bytes unread in @sk's shortcut queue, 0 without a psock.  The read is
 * unguarded: an object using it needs sk_psock.msg_tot_len, and the probe
 * reads that requirement off the object (user/core_fields.c). */
static __always_inline __u32 sock_shortcut_unread(const struct sock *sk)
{
	__u64 ud = (__u64)BPF_CORE_READ(sk, sk_user_data) & ~SK_USER_DATA_FLAGS;

	return ud ? BPF_CORE_READ((struct sk_psock *)ud, msg_tot_len) : 0;
}

/* The same for an object that also runs on a kernel without the count: 0
 * there, where no data path runs and nothing is queued. */
static __always_inline __u32 sock_shortcut_unread_if_counted(const struct sock *sk)
{
	return bpf_core_field_exists(((struct sk_psock *)0)->msg_tot_len) ? sock_shortcut_unread(sk) : 0;
}

#endif
