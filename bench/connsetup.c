// SPDX-License-Identifier: GPL-2.0-only
/*
 * connsetup: the cost of one TCP connection's life (connect, accept, one
 * 100-byte request and its answer, close) while IDLE other connections stay
 * established, as in seed 002's "connection setup with 1, 200, 1000
 * established connections".  Non-blocking sockets, one thread each side.
 * Prints "us_per_conn N" (median over batches of 200 connections) and
 * "conns N" (how many were made).
 *
 * -x: both ends follow lism exec's contract as liblism will
 * (include/lism/exec.h): mark the socket before connect()/listen(), read
 * the decision, and take the ring from the device when it is RING ("rings
 * N" says how many ends did).  Where no lism exec is (plain TCP) the marks
 * fail at once and the connections are plain.
 *
 *   connsetup [-n IDLE] [-t SECONDS] [-x]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "exec/attach.h"

enum { BATCH = 200, MSG = 100 };

static struct sockaddr_in addr = { .sin_family = AF_INET };
static volatile int stop;
static int exec_contract;
static unsigned long rings[2]; /* ends that took their ring: client, server */

/* The contract's per-connection part after the handshake: the decision, and the ring if RING. */
static void exec_take(int fd, int marked, struct lism_exec_map *m, unsigned long *count)
{
	struct lism_exec_info in;

	m->base = NULL;
	if (!marked || lism_exec_wait(fd, &in, 1000) || in.mode != LISM_EXEC_RING)
		return;
	if (lism_exec_attach(fd, lism_exec_device_path(), m))
		die("the device refused a ring pair's end");
	(*count)++;
}

static void xfer(int fd, char *buf, size_t n, int out)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = out ? send(fd, buf + done, n - done, MSG_NOSIGNAL) : recv(fd, buf + done, n - done, 0);

		if (r > 0)
			done += r;
		else if (r < 0 && errno == EAGAIN)
			wait_for(fd, out ? POLLOUT : POLLIN);
		else
			die(out ? "send" : "recv (or early EOF)");
	}
}

/* Accepts for ever: idle connections are kept open, the measured ones answered and closed. */
static void *server(void *arg)
{
	int l = *(int *)arg, idle_left = *((int *)arg + 1);
	char buf[MSG];

	while (!stop) {
		int fd = accept4(l, NULL, NULL, SOCK_NONBLOCK);

		if (fd < 0) {
			if (errno != EAGAIN)
				die("accept");
			struct pollfd p = { .fd = l, .events = POLLIN };
			poll(&p, 1, 100);
			continue;
		}
		if (idle_left > 0) {
			idle_left--;
			continue; /* stays established, idle */
		}
		{
			struct lism_exec_map m;

			exec_take(fd, exec_contract, &m, &rings[1]);
			xfer(fd, buf, MSG, 0);
			xfer(fd, buf, MSG, 1);
			lism_exec_detach(&m);
		}
		close(fd);
	}
	return NULL;
}

static int dial(int *marked)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), err = 0;
	socklen_t len = sizeof(err);

	if (fd < 0)
		die("socket");
	*marked = exec_contract && !lism_exec_mark(fd);
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) && errno != EINPROGRESS)
		die("connect");
	wait_for(fd, POLLOUT);
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) || err) {
		errno = err;
		die("connect");
	}
	return fd;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int idle = 1, l, c, args[2], n = 0, one = 1;
	struct rlimit rl = { 65536, 65536 };
	double secs = 5, t0, samples[4096];
	socklen_t alen = sizeof(addr);
	char buf[MSG] = { 0 };
	pthread_t th;

	while ((c = getopt(argc, argv, "n:t:x")) != -1) {
		if (c == 'x')
			exec_contract = 1;
		else if (c == 'n')
			idle = atoi(optarg);
		else if (c == 't')
			secs = strtod(optarg, NULL);
		else
			return 2;
	}
	if (idle < 0 || idle > 30000 || secs <= 0) {
		fprintf(stderr, "connsetup: -n 0..30000, -t > 0\n");
		return 2;
	}
	setrlimit(RLIMIT_NOFILE, &rl);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (l < 0)
		die("socket");
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* accepted sockets clone the listener's mark; without lism exec here, nobody is marked */
	if (exec_contract)
		exec_contract = !lism_exec_mark(l);
	if (bind(l, (struct sockaddr *)&addr, sizeof(addr)) || listen(l, 4096) ||
	    getsockname(l, (struct sockaddr *)&addr, &alen))
		die("listen");
	args[0] = l;
	args[1] = idle;
	if (pthread_create(&th, NULL, server, args))
		die("thread");
	for (int i = 0; i < idle; i++)
		dial(&c); /* kept open until exit */
	t0 = now_s();
	while (n < (int)(sizeof(samples) / sizeof(samples[0])) && now_s() - t0 < secs) {
		double b0 = now_s();

		for (int i = 0; i < BATCH; i++) {
			struct lism_exec_map m;
			int marked, fd = dial(&marked);

			exec_take(fd, marked, &m, &rings[0]);
			xfer(fd, buf, MSG, 1);
			xfer(fd, buf, MSG, 0);
			lism_exec_detach(&m);
			close(fd);
		}
		samples[n++] = (now_s() - b0) * 1e6 / BATCH;
	}
	stop = 1;
	pthread_join(th, NULL);
	qsort(samples, n, sizeof(samples[0]), cmp);
	printf("us_per_conn %.2f\nconns %d\n", samples[n / 2], n * BATCH);
	if (exec_contract)
		printf("rings %lu %lu\n", rings[0], rings[1]);
	return 0;
}
