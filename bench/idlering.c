// SPDX-License-Identifier: GPL-2.0-only
/*
 * idlering: what idle ring connections cost (issue 28: a reader spins on
 * its ring before it sleeps, and must not keep spinning while nothing
 * comes).  Meant to run under lism exec.  It opens CONNS connections to a
 * listener of its own on 127.0.0.1, both ends in this process, and moves
 * one small message each way on each: liblism decides a socket at its
 * first call after the handshake, so every pair is then attached to its
 * ring.  Then it waits SECONDS idle: the main thread in one epoll_wait over
 * every server end, a second thread in a blocking recv on one client end.
 * Prints "conns N cpu_s_per_s X": this process's CPU time (user + sys,
 * every thread; getrusage) over the idle window only, per second of it,
 * and on a second line that window's length and its user and sys time.
 *
 *   idlering [-n CONNS] [-t SECONDS]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench_util.h"

enum { MSG = 16 };

/* One message of MSG bytes, blocking: the sockets are blocking, as a ring reader that sleeps is. */
static void xfer(int fd, int out)
{
	char buf[MSG] = "idlering hello";
	size_t done = 0;

	while (done < MSG) {
		ssize_t r = out ? send(fd, buf + done, MSG - done, MSG_NOSIGNAL) : recv(fd, buf + done, MSG - done, 0);

		if (r > 0)
			done += r;
		else if (r < 0 && errno == EINTR)
			continue;
		else
			die(out ? "send" : "recv (or early EOF)");
	}
}

static void cpu_s(double *user, double *sys)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		die("getrusage");
	*user = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
	*sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* Sleeps in a blocking recv through the idle window; the byte after it wakes it. */
static void *blocked_reader(void *arg)
{
	char b;

	for (;;) {
		ssize_t r = recv(*(int *)arg, &b, 1, 0);

		if (r == 1)
			return NULL;
		if (!(r < 0 && errno == EINTR))
			die("recv (the wake-up byte)");
	}
}

/* Two fds per connection, and a margin for the listener, epoll and what liblism opens. */
static void fd_room(int conns)
{
	rlim_t need = 2 * (rlim_t)conns + 64;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		die("getrlimit");
	if (rl.rlim_cur >= need)
		return;
	rl.rlim_cur = need;
	if (rl.rlim_max < need)
		rl.rlim_max = need; /* takes CAP_SYS_RESOURCE */
	if (setrlimit(RLIMIT_NOFILE, &rl))
		die("setrlimit RLIMIT_NOFILE (2 fds a connection)");
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	double secs = 3, u0, s0, u1, s1, t0, t1;
	socklen_t alen = sizeof(a);
	int conns = 1000, one = 1, c, l, ep, *cli, *srv;
	struct epoll_event ev[64];
	pthread_t th;

	while ((c = getopt(argc, argv, "n:t:")) != -1) {
		if (c == 'n')
			conns = atoi(optarg);
		else if (c == 't')
			secs = atof(optarg);
		else
			goto usage;
	}
	if (conns < 1 || secs <= 0)
		goto usage;
	fd_room(conns);
	cli = calloc(conns, sizeof(*cli));
	srv = calloc(conns, sizeof(*srv));
	l = socket(AF_INET, SOCK_STREAM, 0);
	ep = epoll_create1(0);
	if (!cli || !srv || l < 0 || ep < 0)
		die("socket");
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 64) ||
	    getsockname(l, (struct sockaddr *)&a, &alen))
		die("listen");
	/* one at a time: a ring end attaches (a device round trip) at its first call */
	for (int i = 0; i < conns; i++) {
		struct epoll_event e = { .events = EPOLLIN };

		cli[i] = socket(AF_INET, SOCK_STREAM, 0);
		if (cli[i] < 0 || connect(cli[i], (struct sockaddr *)&a, sizeof(a)))
			die("connect");
		srv[i] = accept(l, NULL, NULL);
		if (srv[i] < 0)
			die("accept");
		xfer(cli[i], 1);
		xfer(srv[i], 0);
		xfer(srv[i], 1);
		xfer(cli[i], 0);
		e.data.fd = srv[i];
		if (epoll_ctl(ep, EPOLL_CTL_ADD, srv[i], &e))
			die("epoll_ctl");
	}
	if (pthread_create(&th, NULL, blocked_reader, &cli[0]))
		die("pthread_create");
	usleep(100000); /* the reader is asleep in its recv before the window opens */

	cpu_s(&u0, &s0);
	t0 = now_s();
	for (double left = secs; left > 0; left = secs - (now_s() - t0)) {
		int n = epoll_wait(ep, ev, 64, (int)(left * 1000) + 1);

		if (n > 0) {
			fprintf(stderr, "idlering: an idle server end became readable\n");
			return 1;
		}
		if (n < 0 && errno != EINTR)
			die("epoll_wait");
	}
	t1 = now_s();
	cpu_s(&u1, &s1);

	if (send(srv[0], "x", 1, MSG_NOSIGNAL) != 1) /* wakes the reader */
		die("send (the wake-up byte)");
	if (pthread_join(th, NULL))
		die("pthread_join");
	printf("conns %d cpu_s_per_s %.6f\n", conns, (u1 - u0 + s1 - s0) / (t1 - t0));
	printf("idle_s %.3f user_s %.6f sys_s %.6f\n", t1 - t0, u1 - u0, s1 - s0);
	return 0;
usage:
	fprintf(stderr, "usage: idlering [-n CONNS >= 1] [-t SECONDS > 0]\n");
	return 2;
}
