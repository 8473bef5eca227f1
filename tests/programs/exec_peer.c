// SPDX-License-Identifier: GPL-2.0-only
/*
 * A plain TCP program for the lism exec tests, run under `lism exec` (it
 * knows nothing of lism).  Its stream is a xorshift sequence the reader
 * regenerates, so every byte is checked where it lands.
 *
 *   exec-peer serve PORT [nonblock]   accept one connection, read to the end
 *                                     (nonblock: edge-triggered, pausing 20 ms
 *                                     every 128 MiB),
 *                                     print "OK|BAD bytes N tcp T end EOF|RESET"
 *                                     and write it back, then close
 *   exec-peer send PORT BYTES [nonblock]   send BYTES, shut down writing, print
 *                                     the server's line; exit 0 if it says OK N
 *   exec-peer flood PORT              send forever, printing "mib M sent N" per MiB
 *                                     (for kill -9)
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct gen {
	uint64_t x;
	uint64_t word;
	int left; /* bytes of word not handed out */
};

static unsigned char next_byte(struct gen *g)
{
	if (!g->left) {
		g->x ^= g->x << 13, g->x ^= g->x >> 7, g->x ^= g->x << 17;
		g->word = g->x;
		g->left = 8;
	}
	g->left--;
	return (unsigned char)(g->word >> (8 * g->left));
}

static void fill(struct gen *g, unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		b[i] = next_byte(g);
}

static void wait_for(int fd, short ev)
{
	struct pollfd p = { .fd = fd, .events = ev };

	poll(&p, 1, -1);
}

static int serve(int port, int nonblock)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	static unsigned char buf[1 << 20], want[1 << 20];
	struct gen g = { .x = 88172645463325252ull };
	unsigned long long bytes = 0;
	const char *end = "EOF";
	int l = socket(AF_INET, SOCK_STREAM, 0), one = 1, c, bad = 0, ep = -1;
	struct tcp_info ti = { 0 };
	socklen_t tl = sizeof(ti);
	char line[200];

	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l, (struct sockaddr *)&sa, sizeof(sa)) || listen(l, 4))
		return perror("listen"), 2;
	printf("listening\n");
	fflush(stdout);
	c = accept4(l, NULL, NULL, nonblock ? SOCK_NONBLOCK : 0);
	if (c < 0)
		return perror("accept"), 2;
	if (nonblock) {
		struct epoll_event ev = { .events = EPOLLIN | EPOLLET };

		ep = epoll_create1(0);
		epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
	}
	for (;;) {
		size_t n = 1 + (size_t)(g.x % sizeof(buf));
		ssize_t r = read(c, buf, n);

		if (r > 0) {
			fill(&g, want, (size_t)r);
			if (!bad && memcmp(buf, want, (size_t)r))
				bad = 1;
			/* a non-blocking reader lags now and then, as real ones do, so
			 * that its writer fills the ring and goes on in runs (a reader
			 * that spins on the ring may keep up with it otherwise) */
			if (nonblock && (bytes >> 27) != ((bytes + (unsigned long long)r) >> 27)) {
				struct timespec lag = { 0, 20 * 1000000L };

				nanosleep(&lag, NULL);
			}
			bytes += (unsigned long long)r;
			continue;
		}
		if (r == 0)
			break;
		if (errno == EAGAIN && nonblock) {
			struct epoll_event out;

			epoll_wait(ep, &out, 1, -1); /* edge-triggered: read until EAGAIN, then wait */
			continue;
		}
		if (errno == EINTR)
			continue;
		end = errno == ECONNRESET ? "RESET" : strerror(errno);
		break;
	}
	{
		/* the ring's end of the stream can come before the last doorbells
		 * and the FIN land (a spinning reader sees the header at once):
		 * once the FIN is in, every doorbell is */
		struct pollfd fin = { .fd = c, .events = POLLRDHUP };

		poll(&fin, 1, 10000);
	}
	getsockopt(c, IPPROTO_TCP, TCP_INFO, &ti, &tl);
	snprintf(line, sizeof(line), "%s bytes %llu tcp %llu end %s\n", bad ? "BAD" : "OK", bytes,
		 (unsigned long long)ti.tcpi_bytes_received, end);
	printf("%s", line);
	fflush(stdout);
	if (nonblock)
		fcntl(c, F_SETFL, 0);
	(void)!write(c, line, strlen(line));
	close(c);
	return bad;
}

static int connect_to(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int c = socket(AF_INET, SOCK_STREAM, 0);

	if (connect(c, (struct sockaddr *)&sa, sizeof(sa)))
		return perror("connect"), -1;
	return c;
}

static int send_all(int port, unsigned long long total, int nonblock, int flood)
{
	static unsigned char buf[1 << 18];
	struct gen g = { .x = 88172645463325252ull };
	unsigned long long sent = 0, mark = 1 << 20;
	unsigned seed = 1;
	char line[200] = "";
	int c = connect_to(port);
	ssize_t r;

	if (c < 0)
		return 2;
	if (nonblock)
		fcntl(c, F_SETFL, O_NONBLOCK);
	while (flood || sent < total) {
		size_t n = 1 + rand_r(&seed) % (rand_r(&seed) % 8 ? 4096 : sizeof(buf));

		if (!flood && n > total - sent)
			n = (size_t)(total - sent);
		fill(&g, buf, n);
		for (size_t off = 0; off < n;) {
			r = write(c, buf + off, n - off);
			if (r > 0) {
				off += (size_t)r;
				continue;
			}
			if (r < 0 && errno == EAGAIN) {
				wait_for(c, POLLOUT);
				continue;
			}
			if (r < 0 && errno == EINTR)
				continue;
			fprintf(stderr, "write: %s after %llu\n", strerror(errno), sent + off);
			return 3;
		}
		sent += n;
		if (flood && sent >= mark) {
			printf("mib %llu sent %llu\n", mark >> 20, sent);
			fflush(stdout);
			mark += 1 << 20;
		}
	}
	if (nonblock)
		fcntl(c, F_SETFL, 0);
	shutdown(c, SHUT_WR);
	r = read(c, line, sizeof(line) - 1);
	line[r > 0 ? r : 0] = '\0';
	printf("%s", line);
	close(c);
	return strncmp(line, "OK", 2) || strtoull(line + 9, NULL, 10) != total;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc >= 3 && !strcmp(argv[1], "serve"))
		return serve(atoi(argv[2]), argc > 3);
	if (argc >= 4 && !strcmp(argv[1], "send"))
		return send_all(atoi(argv[2]), strtoull(argv[3], NULL, 0), argc > 4, 0);
	if (argc >= 3 && !strcmp(argv[1], "flood"))
		return send_all(atoi(argv[2]), 0, 0, 1);
	fprintf(stderr, "usage: exec-peer serve PORT [nonblock] | send PORT BYTES [nonblock] | flood PORT\n");
	return 2;
}
