/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * liblism.so's fd table, as its wait wrappers (exec/poll.c) see it: which
 * fds are ring sockets.  Both files are the library's own (they interpose
 * libc), never linked elsewhere.
 */
#ifndef LISM_EXEC_PRELOAD_H
#define LISM_EXEC_PRELOAD_H

#include <stdbool.h>

struct lism_conn;

/* @fd's ring if it is a decided ring socket, with a reference in *@ref
 * (lism_fd_put), else NULL.  Never decides (a socket's first call does). */
struct lism_conn *lism_fd_ring(int fd, void **ref);
void lism_fd_put(void *ref);

/* Whether @fd has an entry: a ring socket, or a marked one not decided yet. */
bool lism_fd_known(int fd);

/* @fd may be waited on where this library does not look (EPOLLONESHOT,
 * another process): never spun on nor looked at again (lism_conn_set_shared);
 * true if its ring holds bytes counted silent now. */
bool lism_fd_kernel_alone(int fd);

/* A wait this library cannot follow (an epoll fd it did not make, one
 * nested in another wait): no ring of the process spins or looks again. */
void lism_fd_unseen_wait(const char *why);

/* A fork's child: no wait of its runs (exec/poll.c). */
void lism_poll_forked(void);

/* @fd closes (or is replaced): the wait wrappers forget it. */
void lism_poll_forget(int fd);

/* Lazy epoll registrations (exec/poll.c): an epoll fd's close-on-exec
 * flag changed; an fd passed to another process (SCM_RIGHTS) or dup'd;
 * and the end of them for good (a fork, a sandbox), every change held
 * back applied. */
void lism_poll_cloexec(int fd, bool on);
void lism_poll_passed(int fd);
void lism_poll_lazy_end(void);
/* @fd's entry was a file closed behind this library's back (its number is
 * another's now): every set forgets it, applying nothing. */
void lism_poll_stale(int fd);
/* @fd names a file new to this library (a dup): a set kept under its
 * number was closed behind its back, and is forgotten, applying nothing. */
void lism_poll_fresh(int fd);

#endif
