// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "exec/attach.h"
#include "exec/scm.h"
#include "lism/abi.h"

const char *lism_exec_device_path(void)
{
	return lism_device_path(getenv("LISM_DEVICE"));
}

int lism_exec_mark(int fd)
{
	int one = 1;

	return setsockopt(fd, LISM_SOL, LISM_SO_EXEC, &one, sizeof(one)) ? -errno : 0;
}

int lism_exec_info(int fd, struct lism_exec_info *out)
{
	socklen_t len = sizeof(*out);

	memset(out, 0, sizeof(*out));
	if (getsockopt(fd, LISM_SOL, LISM_SO_INFO, out, &len))
		return -errno;
	return len == sizeof(*out) ? 0 : -EPROTO;
}

int lism_exec_wait(int fd, struct lism_exec_info *out, int timeout_ms)
{
	struct timespec start, now, nap = { 0, 20000 };
	int err;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (int i = 0;; i++) {
		err = lism_exec_info(fd, out);
		if (err || out->mode != LISM_EXEC_UNDECIDED)
			return err;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 >= timeout_ms) {
			int one = 1;

			/* settle it: KERNEL, unless the passive end's decision came first (then that one) */
			if (setsockopt(fd, LISM_SOL, LISM_SO_KERNEL, &one, sizeof(one)))
				return -errno;
			return lism_exec_info(fd, out);
		}
		if (i < 64)
			sched_yield(); /* on one CPU, the softirq that decides may need ours */
		else
			nanosleep(&nap, NULL);
	}
}

int lism_exec_ask(const char *device_path, __u32 op, int fd, struct lism_device_ans *ans, int *memfd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct lism_device_req req = { .magic = LISM_DEVICE_MAGIC, .op = op };
	char cbuf[CMSG_SPACE(sizeof(int) * 4)] = { 0 };
	struct iovec iov = { &req, sizeof(req) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	int s, err = 0, nfds = 0;
	ssize_t n;

	*memfd = -1;
	if (strlen(device_path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, device_path);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	{
		struct timeval tv = { .tv_sec = 5 }; /* a device that does not answer is no device */

		setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	}
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		goto out;
	}
	if (fd >= 0) {
		lism_scm_put(&m, cbuf, fd);
	} else {
		m.msg_control = NULL;
		m.msg_controllen = 0;
	}
	do
		n = syscall(SYS_sendmsg, s, &m, MSG_NOSIGNAL); /* not liblism's own sendmsg (exec/preload.c) */
	while (n < 0 && errno == EINTR);
	if (n != sizeof(req)) {
		err = n < 0 ? -errno : -EPROTO;
		goto out;
	}
	iov = (struct iovec){ ans, sizeof(*ans) };
	m = (struct msghdr){ .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	memset(cbuf, 0, sizeof(cbuf));
	do
		n = syscall(SYS_recvmsg, s, &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	/* exactly one fd is an answer; any other count is closed and refused */
	if (n >= 0)
		nfds = lism_scm_take(&m, memfd, 1);
	if (nfds > 1)
		err = -EPROTO;
	else if (n != sizeof(*ans) || ans->magic != LISM_DEVICE_MAGIC || (m.msg_flags & MSG_CTRUNC))
		err = n < 0 ? -errno : -EPROTO;
	else if (ans->err)
		err = ans->err < 0 ? ans->err : -EPROTO;
	else if (*memfd < 0)
		err = -EPROTO;
out:
	if (err && *memfd >= 0) {
		syscall(SYS_close, *memfd);
		*memfd = -1;
	}
	syscall(SYS_close, s);
	return err;
}

int lism_exec_attach(int fd, const char *device_path, struct lism_exec_map *m)
{
	const int sealed = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
	struct lism_exec_info in;
	struct lism_device_ans ans;
	struct lism_ring_hdr *h;
	struct stat st;
	int memfd, err, seals;

	memset(m, 0, sizeof(*m));
	err = lism_exec_info(fd, &in);
	if (err)
		return err;
	err = lism_exec_ask(device_path, LISM_DEVICE_ATTACH, fd, &ans, &memfd);
	if (err)
		return err;
	/* the peer maps the same memory: it must not be able to shrink or grow it under us (SIGBUS) */
	seals = fcntl(memfd, F_GET_SEALS);
	if (ans.end != (in.role == LISM_ROLE_ACTIVE ? 0u : 1u) || ans.size != lism_ring_region_size(ans.dmb_size) ||
	    fstat(memfd, &st) || (__u64)st.st_size != ans.size || seals < 0 || (seals & sealed) != sealed) {
		err = -EPROTO;
		goto out;
	}
	m->base = mmap(NULL, ans.size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (m->base == MAP_FAILED) {
		err = -errno;
		m->base = NULL;
		goto out;
	}
	m->len = ans.size;
	m->end = (int)ans.end;
	h = m->base;
	/* the memory names this pair: the device's word is checked against the handshake's */
	err = h->token[m->end] == in.token && h->token[!m->end] == in.peer_token ? 0 : -EPROTO;
	if (!err)
		err = lism_ring_attach(m->base, m->len, m->end, &m->rx, &m->tx);
	if (err)
		lism_exec_detach(m);
out:
	/* the mapping keeps the memory; syscall(2): liblism's close would look
	 * at its tables, whose locks a caller here may hold (decide's setup) */
	syscall(SYS_close, memfd);
	return err;
}

void lism_exec_detach(struct lism_exec_map *m)
{
	if (m->base)
		munmap(m->base, m->len);
	m->base = NULL;
}
