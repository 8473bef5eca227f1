/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The scenarios of docs/semantics.md's table, one definition each, run
 * three ways: by the integration test in its own process on plain TCP and
 * on the sk_msg path (tests/integration/test_semantics.c), and by
 * semantics-peer under `lism exec` on a ring pair (semantics_peer.c).
 * What the application saw is a list of numbers, compared between the ways.
 *
 * No Criterion here: a scenario that cannot go on returns -1 with the
 * reason in its observations' @why.
 */
#ifndef LISM_TEST_SEMANTICS_H
#define LISM_TEST_SEMANTICS_H

#define SEM_OBS_MAX 32

struct sem_obs {
	long v[SEM_OBS_MAX];
	int n;
	char why[200]; /* what stopped a scenario */
	/* how the kernel was reached, which may differ by way (not compared):
	 * epoll_ctl_sequence sets it when the kernel's set still held the
	 * application's last registration after a DEL and an ADD (liblism's
	 * lazy registrations, exec/poll.c) */
	int lazy;
};

struct sem_scenario {
	const char *name;
	int nonblock; /* the pair's sockets and its listener */
	/* 0, or -1 with o->why; closes both sockets either way */
	int (*run)(int c, int s, struct sem_obs *o);
};

/* The scenario called @name, or NULL. */
const struct sem_scenario *sem_find(const char *name);

/*
 * A connected pair over 127.0.0.1 in this process (listen on port 0,
 * connect, accept), each end in the mode asked: *c the client, *s the
 * server end.  0 or -errno.
 */
int sem_pair(int nonblock, int *c, int *s);

#endif
