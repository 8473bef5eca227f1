/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * One fd in SCM_RIGHTS, each way: what liblism and the lism device pass
 * (the caller's socket, the ring's memfd).  Rule: every fd a message
 * carried is either handed to the caller or closed here.
 */
#ifndef LISM_EXEC_SCM_H
#define LISM_EXEC_SCM_H

#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Put @fd in @m's control data, in @cbuf of CMSG_SPACE(sizeof(int)) bytes. */
static inline void lism_scm_put(struct msghdr *m, char *cbuf, int fd)
{
	struct cmsghdr *c;

	memset(cbuf, 0, CMSG_SPACE(sizeof(int)));
	m->msg_control = cbuf;
	m->msg_controllen = CMSG_SPACE(sizeof(int));
	c = CMSG_FIRSTHDR(m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
}

/*
 * The fds a received message carried: the first @max in @fds, the others
 * closed.  Returns how many it carried in all.
 */
static inline int lism_scm_take(struct msghdr *m, int *fds, int max)
{
	int n = 0;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++, n++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (n < max)
				fds[n] = fd;
			else
				syscall(SYS_close, fd); /* not liblism's close: see attach.c */
		}
	}
	return n;
}

#endif
