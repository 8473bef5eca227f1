// SPDX-License-Identifier: GPL-2.0-only
/*
 * msgrate: an ipc-bench-like message-rate test over TCP on loopback.  One
 * process forks a server; the client sends fixed-size messages for a time,
 * the server reads every message whole and counts them.  Prints
 * "msgs_per_s N".  Non-blocking sockets driven by poll() by default (the
 * way event-loop servers run); --blocking for plain blocking sockets.
 *
 *   msgrate [-s SIZE] [-t SECONDS] [--blocking] [--pingpong] [--cpus SERVER,CLIENT]
 *
 * --cpus pins the server and the client to one CPU each (the same one or
 * two): unpinned, the scheduler's placement decides, and the rate of a
 * one-way stream differs by about 2x between one CPU and two.
 *
 * With --pingpong the server echoes each message and the client waits for
 * it before sending the next (a round-trip rate).
 */
#define _GNU_SOURCE /* program_invocation_short_name */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"

static int blocking, pingpong;

/* Whether this process may run on @cpu (-1: not pinned, fine). */
static int cpu_allowed(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return 1;
	return cpu < CPU_SETSIZE && !sched_getaffinity(0, sizeof(set), &set) && CPU_ISSET(cpu, &set);
}

/* Pin the calling process to @cpu (-1: leave it). */
static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity");
}

/* Move exactly @n bytes (send when @out): 0, or -1 at EOF. */
static int xfer(int fd, char *buf, size_t n, int out)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = out ? send(fd, buf + done, n - done, MSG_NOSIGNAL)
				: recv(fd, buf + done, n - done, 0);

		if (r > 0) {
			done += r;
		} else if (r == 0) {
			return -1;
		} else if (errno == EAGAIN && !blocking) {
			wait_for(fd, out ? POLLOUT : POLLIN);
		} else if (errno != EINTR) {
			if (!out && (errno == ECONNRESET))
				return -1;
			die(out ? "send" : "recv");
		}
	}
	return 0;
}

static void setup(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (!blocking)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' }, { "time", required_argument, NULL, 't' },
		{ "blocking", no_argument, &blocking, 1 }, { "pingpong", no_argument, &pingpong, 1 },
		{ "cpus", required_argument, NULL, 'c' }, {}
	};
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	size_t size = 100;
	double secs = 5, t0, t1;
	int c, l, fd, one = 1, status, p[2], server_cpu = -1, client_cpu = -1;
	char junk;
	uint64_t count = 0, got;
	char *buf;
	pid_t pid;

	while ((c = getopt_long(argc, argv, "s:t:", opts, NULL)) != -1) {
		if (c == 's')
			size = strtoul(optarg, NULL, 0);
		else if (c == 't')
			secs = strtod(optarg, NULL);
		else if (c == 'c' && (sscanf(optarg, "%d,%d%c", &server_cpu, &client_cpu, &junk) != 2 ||
				      !cpu_allowed(server_cpu) || !cpu_allowed(client_cpu)))
			return fprintf(stderr, "msgrate: --cpus SERVER,CLIENT: two CPUs this process may use\n"), 2;
		else if (c != 0 && c != 'c')
			return 2;
	}
	if (!size || size > (1 << 24) || secs <= 0) {
		fprintf(stderr, "msgrate: -s 1..16777216, -t > 0\n");
		return 2;
	}
	buf = calloc(1, size);
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (!buf || l < 0)
		die("socket");
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &alen) || pipe(p))
		die("listen");
	if (!blocking)
		fcntl(l, F_SETFL, O_NONBLOCK); /* before the client's SYN can arrive */
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) { /* server: read whole messages until EOF, report the count */
		pin(server_cpu);
		if (!blocking)
			wait_for(l, POLLIN);
		fd = accept(l, NULL, NULL);
		if (fd < 0)
			die("accept");
		setup(fd);
		for (got = 0; !xfer(fd, buf, size, 0); got++)
			if (pingpong && xfer(fd, buf, size, 1))
				break;
		if (write(p[1], &got, sizeof(got)) != sizeof(got))
			die("pipe");
		_exit(0);
	}
	pin(client_cpu);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		die("socket");
	setup(fd);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) && errno != EINPROGRESS)
		die("connect");
	if (!blocking)
		wait_for(fd, POLLOUT);
	usleep(100000); /* the server is in its loop */
	t0 = now_s();
	do {
		for (int i = 0; i < 64; i++, count++) {
			xfer(fd, buf, size, 1);
			if (pingpong && xfer(fd, buf, size, 0))
				die("early EOF");
		}
	} while ((t1 = now_s()) - t0 < secs);
	shutdown(fd, SHUT_WR);
	if (read(p[0], &got, sizeof(got)) != sizeof(got))
		die("server result");
	t1 = now_s(); /* until the server has read the last message */
	waitpid(pid, &status, 0);
	if (got != count) {
		fprintf(stderr, "msgrate: sent %llu messages, server read %llu\n",
			(unsigned long long)count, (unsigned long long)got);
		return 1;
	}
	printf("msgs_per_s %.0f\n", count / (t1 - t0));
	return 0;
}
