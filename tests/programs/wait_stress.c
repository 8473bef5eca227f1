// SPDX-License-Identifier: GPL-2.0-only
/*
 * wait-stress: many short waits between a client and a server process over
 * TCP on 127.0.0.1, for the waits of ring sockets under `lism exec` (issue
 * 28: a reader that spins on its ring before it sleeps, and a writer whose
 * doorbells go silent meanwhile, must never lose a wakeup).  It knows
 * nothing of lism: plain, it is the TCP control.
 *
 *   wait-stress METHOD SERVER_CPU CLIENT_CPU ROUNDS SEED
 *
 * METHOD, how each side waits for bytes: recv (a blocking recv), poll and
 * select (a blocking socket: poll(2) or select(2), then a MSG_DONTWAIT
 * recv), nb-epoll-lt and nb-epoll-et (O_NONBLOCK; edge-triggered reads to
 * EAGAIN before it waits), mixed (the method turns per message, O_NONBLOCK
 * switched to fit), oneshot-late (mixed for the first half of the rounds,
 * then every wait through an EPOLLONESHOT registration re-armed each time:
 * the first one after a 20 ms pause, so that the peer's next burst is in
 * the ring before it, with no doorbell if the reader looked; exec/poll.c's
 * stand-in must say it), handoff-late (mixed for the first half, then the
 * socket is put in an epoll set that another thread already waits on,
 * after a 20 ms pause with the peer's burst in the ring: that thread must
 * be woken for it; then level-triggered waits on that set).  A CPU of -1:
 * not pinned.
 *
 * A round (wait_plan.h): the client sends a burst of 1..8 messages of 1 B
 * to 64 KiB, the server reads them and answers with a burst of its own.
 * Each direction's bytes are a xorshift stream its reader regenerates and
 * checks.  Before each send the writer waits a random tiny while (nothing,
 * a sched_yield, a few us of busy loop, now and then ~100 us: across a
 * reader's spin), and some messages go in pieces, so a reader's wait
 * sometimes finds its bytes there and sometimes sleeps.  Any wait longer
 * than the watchdog (10 s) is a hang: the side says what it waited for and
 * exits 4.  After the last round each side expects the end of the stream.
 *
 * The parent is the server, its child the client.  The last line, both
 * directions added up: "OK msgs N bytes B tcp T waits W long L spurious P secs S"
 * (messages and bytes received and checked, TCP bytes received, waits and
 * those over 20 us, level-triggered wakeups whose read found nothing), or
 * "BAD ..."; exit 0 only with OK.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "slow.h"
#include "wait_plan.h"

enum { M_RECV, M_POLL, M_SELECT, M_EPOLL_LT, M_EPOLL_ET, M_MIXED, M_ONESHOT_LATE, M_HANDOFF_LATE, M_ONESHOT,
       M_HANDOFF };
static const char *const method_names[] = { "recv", "poll", "select", "nb-epoll-lt", "nb-epoll-et", "mixed",
					    "oneshot-late", "handoff-late", "oneshot", "handoff" };
#define N_WAYS M_MIXED /* the ones mixed turns through */

#define WATCHDOG_S 10
#define LONG_WAIT_NS 20000
#define RX_BUF (128u << 10)
#define EOF_TARGET UINT64_MAX

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000ll + t.tv_nsec;
}

/* A direction's bytes: xorshift words, little-endian, so a fill of any length continues the stream. */
struct stream {
	uint64_t x, w;
	int pos; /* bytes of w handed out; 8: none left */
};

static void stream_init(struct stream *g, uint64_t seed, uint64_t salt)
{
	g->x = wait_seed(seed, salt);
	g->pos = 8;
}

static void stream_fill(struct stream *g, unsigned char *b, size_t n)
{
	for (; n && g->pos < 8; n--)
		*b++ = (unsigned char)(g->w >> (8 * g->pos++));
	for (; n >= 8; n -= 8, b += 8) {
		uint64_t le = htole64(wait_rand(&g->x));

		memcpy(b, &le, 8);
	}
	if (n) {
		g->w = wait_rand(&g->x);
		for (g->pos = 0; n; n--)
			*b++ = (unsigned char)(g->w >> (8 * g->pos++));
	}
}

struct side {
	const char *name;
	int id;              /* 0: server, 1: client */
	int fd, ep_lt, ep_et, ep_os, ep_ho;
	int method, nonblock, rounds;
	uint64_t plan, rnd;  /* the shared plan's draws; this side's own (delays, pieces, read sizes) */
	struct stream tx, rx;
	int round, msg;      /* where it is */
	uint64_t rx_bytes, msgs, waits, long_waits, turn;
	uint64_t spurious; /* a wait said readable (level-triggered), and the read found nothing */
	char why[256];
	unsigned char in[RX_BUF], want[RX_BUF], out[WAIT_MSG_MAX];
};

/*
 * What this side waits for now, for the watchdog thread: the fields are
 * written before @since (release) and read after it (acquire), and only a
 * wait that lasted seconds is described.
 */
static struct {
	const struct side *s;
	const char *call;
	int method;
	uint64_t target;
	long long since;
} wd;
static int result_fd = -1; /* the client's line to the server */
static pid_t child = -1;   /* the server's: killed with it */

static void wait_begin(struct side *s, const char *call, int method, uint64_t target)
{
	wd.s = s;
	wd.call = call;
	wd.method = method;
	wd.target = target;
	__atomic_store_n(&wd.since, now_ns(), __ATOMIC_RELEASE);
}

/* The wait is over: how long it took. */
static long long wait_over(void)
{
	return now_ns() - __atomic_exchange_n(&wd.since, 0, __ATOMIC_ACQ_REL);
}

/* A wait for the peer's bytes or room is over: counted. */
static void wait_end(struct side *s)
{
	long long t = wait_over();

	s->waits++;
	s->long_waits += t > LONG_WAIT_NS;
}

/* A hang is said on stdout (and the client's to the server), then the process goes: its peer sees the end. */
static void *watchdog(void *arg)
{
	long long limit = (long long)WATCHDOG_S * time_scale() * 1000000000ll;

	(void)arg;
	for (;;) {
		long long since = __atomic_load_n(&wd.since, __ATOMIC_ACQUIRE);
		const struct side *s = wd.s;
		char line[512], goal[64];
		int n;

		if (!since || now_ns() - since < limit) {
			usleep(50000);
			continue;
		}
		if (wd.target == EOF_TARGET)
			snprintf(goal, sizeof(goal), "the end of the stream");
		else if (wd.target)
			snprintf(goal, sizeof(goal), "stream byte %llu", (unsigned long long)wd.target);
		else
			snprintf(goal, sizeof(goal), "its peer");
		n = snprintf(line, sizeof(line),
			     "HANG %s: %d s in %s (%s) for %s, round %d message %d, %llu bytes in (%llu messages, "
			     "%llu waits so far)\n",
			     s->name, WATCHDOG_S * time_scale(), wd.call, method_names[wd.method], goal, s->round, s->msg,
			     (unsigned long long)s->rx_bytes, (unsigned long long)s->msgs, (unsigned long long)s->waits);
		(void)!write(1, line, (size_t)n);
		if (result_fd >= 0)
			(void)!write(result_fd, line, (size_t)n);
		if (child > 0) {
			kill(child, SIGKILL);
			n = snprintf(line, sizeof(line), "BAD the server hung\n");
			(void)!write(1, line, (size_t)n);
		}
		_exit(4);
	}
	return NULL;
}

static int fail(struct side *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct side *s, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(s->why, sizeof(s->why), "%s at round %d message %d: ", s->name, s->round, s->msg);

	va_start(ap, fmt);
	vsnprintf(s->why + n, sizeof(s->why) - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

static void spin_us(int us)
{
	long long end = now_ns() + us * 1000ll;

	while (now_ns() < end)
		;
}

/* The writer's tiny while before a send: the reader finds the bytes there, or waits, or gives up spinning. */
static void tiny_delay(struct side *s)
{
	uint64_t x = wait_rand(&s->rnd);

	switch (x & 15) {
	case 0 ... 7:
		break;
	case 8 ... 10:
		sched_yield();
		break;
	case 11 ... 14:
		spin_us(1 + (int)((x >> 8) % 8));
		break;
	default:
		spin_us(20 + (int)((x >> 8) % 100)); /* across a LISM_BUSY_POLL_US of 50 */
	}
}

static int set_nonblock(struct side *s, int on)
{
	int fl = fcntl(s->fd, F_GETFL);

	if (s->nonblock == on)
		return 0;
	if (fl < 0 || fcntl(s->fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK))
		return fail(s, "fcntl: %s", strerror(errno));
	s->nonblock = on;
	return 0;
}

static int send_piece(struct side *s, const unsigned char *p, size_t n)
{
	while (n) {
		ssize_t r = wait_rand(&s->rnd) & 1 ? send(s->fd, p, n, MSG_NOSIGNAL) : write(s->fd, p, n);

		if (r > 0) {
			p += r;
			n -= (size_t)r;
			continue;
		}
		if (r < 0 && errno == EAGAIN) {
			struct pollfd w = { .fd = s->fd, .events = POLLOUT };

			wait_begin(s, "poll for room", s->method, 0);
			poll(&w, 1, -1);
			wait_end(s);
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		return fail(s, "send: %s", r ? strerror(errno) : "0");
	}
	return 0;
}

/* A message of @size stream bytes, one time in eight in 2..4 pieces with a tiny while before each. */
static int send_msg(struct side *s, uint32_t size)
{
	uint64_t x = wait_rand(&s->rnd);
	int pieces = x & 7 ? 1 : 2 + (int)((x >> 8) % 3);
	size_t off = 0;

	stream_fill(&s->tx, s->out, size);
	for (int i = 0; i < pieces; i++) {
		size_t left = size - off, n = i == pieces - 1 ? left : (size_t)(wait_rand(&s->rnd) % (left + 1));

		tiny_delay(s);
		if (send_piece(s, s->out + off, n))
			return -1;
		off += n;
	}
	return 0;
}

static int check(struct side *s, size_t n)
{
	stream_fill(&s->rx, s->want, n);
	if (memcmp(s->in, s->want, n)) {
		size_t i = 0;

		while (s->in[i] == s->want[i])
			i++;
		return fail(s, "stream byte %llu is %#x, not %#x", (unsigned long long)(s->rx_bytes + i), s->in[i],
			    s->want[i]);
	}
	s->rx_bytes += n;
	return 0;
}

/* A recv's length: mostly all the buffer, one time in four up to 2 KiB (a message read in parts). */
static size_t read_len(struct side *s)
{
	uint64_t x = wait_rand(&s->rnd);

	return x & 3 ? RX_BUF : 1 + (size_t)((x >> 8) % 2048);
}

static void *handoff_waiter(void *arg)
{
	struct side *s = arg;
	struct epoll_event ev;

	return (void *)(long)epoll_wait(s->ep_ho, &ev, 1, -1);
}

/*
 * The hand-off: a thread waits on a new, empty epoll set; after 20 ms (the
 * peer's next burst in the ring) the socket is put in it, and that thread
 * must wake with its event.
 */
static int handoff(struct side *s, uint64_t target)
{
	struct epoll_event ev = { .events = EPOLLIN };
	pthread_t t;
	void *r;

	if ((s->ep_ho = epoll_create1(EPOLL_CLOEXEC)) < 0 || pthread_create(&t, NULL, handoff_waiter, s))
		return fail(s, "the hand-off's set or thread: %s", strerror(errno));
	usleep(20000);
	if (epoll_ctl(s->ep_ho, EPOLL_CTL_ADD, s->fd, &ev))
		return fail(s, "epoll_ctl ADD to a set being waited on: %s", strerror(errno));
	wait_begin(s, "epoll_wait of the thread the socket was handed to", M_HANDOFF, target);
	pthread_join(t, &r);
	wait_end(s);
	if ((long)r != 1)
		return fail(s, "the hand-off's wait said %ld", (long)r);
	return 0;
}

/*
 * Read and check until the stream holds @target bytes (EOF_TARGET: until
 * its end, and not a byte more), waiting the method's way.
 */
static int rx_until(struct side *s, uint64_t target)
{
	int m = s->method, eof = target == EOF_TARGET;

	if (m == M_ONESHOT_LATE)
		m = s->round >= s->rounds / 2 ? M_ONESHOT : M_MIXED;
	if (m == M_HANDOFF_LATE)
		m = s->round >= s->rounds / 2 ? M_HANDOFF : M_MIXED;
	if (m == M_HANDOFF && s->ep_ho < 0 && handoff(s, target))
		return -1;
	if (m == M_MIXED)
		m = (int)((s->turn++ + (uint64_t)s->id * 2) % N_WAYS);
	if (m == M_ONESHOT && s->ep_os < 0) {
		usleep(20000); /* the peer's burst lands */
		if ((s->ep_os = epoll_create1(EPOLL_CLOEXEC)) < 0)
			return fail(s, "epoll_create1: %s", strerror(errno));
	}
	if (set_nonblock(s, m == M_EPOLL_LT || m == M_EPOLL_ET || m == M_ONESHOT || m == M_HANDOFF))
		return -1;
	while (eof || m == M_EPOLL_ET || s->rx_bytes < target) {
		size_t len = read_len(s);
		struct epoll_event ev;
		struct pollfd p = { .fd = s->fd, .events = POLLIN };
		fd_set rd;
		ssize_t r;

		switch (m) {
		case M_RECV:
			wait_begin(s, "recv", m, target);
			r = recv(s->fd, s->in, len, 0);
			wait_end(s);
			break;
		case M_POLL:
			wait_begin(s, "poll", m, target);
			poll(&p, 1, -1);
			wait_end(s);
			r = recv(s->fd, s->in, len, MSG_DONTWAIT);
			s->spurious += r < 0 && errno == EAGAIN;
			break;
		case M_SELECT:
			FD_ZERO(&rd);
			FD_SET(s->fd, &rd);
			wait_begin(s, "select", m, target);
			select(s->fd + 1, &rd, NULL, NULL, NULL);
			wait_end(s);
			r = recv(s->fd, s->in, len, MSG_DONTWAIT);
			s->spurious += r < 0 && errno == EAGAIN;
			break;
		case M_ONESHOT: {
			struct epoll_event os = { .events = EPOLLIN | EPOLLONESHOT };

			/* armed for one wakeup, as a thread pool hands a socket on */
			if (epoll_ctl(s->ep_os, EPOLL_CTL_MOD, s->fd, &os) &&
			    (errno != ENOENT || epoll_ctl(s->ep_os, EPOLL_CTL_ADD, s->fd, &os)))
				return fail(s, "epoll_ctl EPOLLONESHOT: %s", strerror(errno));
			wait_begin(s, "epoll_wait (EPOLLONESHOT)", m, target);
			epoll_wait(s->ep_os, &ev, 1, -1);
			wait_end(s);
			/* not counted if it finds nothing: a kernel-only wait may be woken by a
			 * doorbell whose bytes an earlier read took (exec/poll.c filters only its own) */
			r = recv(s->fd, s->in, len, MSG_DONTWAIT);
			break;
		}
		case M_EPOLL_LT:
		case M_HANDOFF:
			wait_begin(s, "epoll_wait", m, target);
			epoll_wait(m == M_HANDOFF ? s->ep_ho : s->ep_lt, &ev, 1, -1);
			wait_end(s);
			r = recv(s->fd, s->in, len, MSG_DONTWAIT);
			s->spurious += r < 0 && errno == EAGAIN;
			break;
		default:
			/* edge-triggered: read to EAGAIN (past the target too), wait only then */
			r = recv(s->fd, s->in, len, 0);
			if (r < 0 && errno == EAGAIN) {
				if (!eof && s->rx_bytes >= target)
					return 0;
				wait_begin(s, "epoll_wait", m, target);
				epoll_wait(s->ep_et, &ev, 1, -1);
				wait_end(s);
				continue;
			}
		}
		if (r > 0) {
			if (eof)
				return fail(s, "%zd bytes after the last message", r);
			if (check(s, (size_t)r))
				return -1;
			continue;
		}
		if (r == 0)
			return eof ? 0 : fail(s, "the stream ended at byte %llu of %llu", (unsigned long long)s->rx_bytes,
					      (unsigned long long)target);
		if (errno == EAGAIN || errno == EINTR)
			continue; /* a wakeup for bytes another read took */
		return fail(s, "recv: %s", strerror(errno));
	}
	return 0;
}

/* The rounds, then the end of the stream: the client shuts its writing first, the server once it saw that. */
static int run(struct side *s, int rounds)
{
	struct wait_round r;
	uint64_t target = 0;

	s->rounds = rounds;
	for (s->round = 0; s->round < rounds; s->round++) {
		wait_plan_round(&s->plan, &r);
		for (int d = 0; d < 2; d++)
			for (s->msg = 0; s->msg < r.n[d]; s->msg++) {
				if (d + s->id == 1) { /* d 0: the client's burst, d 1: the server's */
					if (send_msg(s, r.size[d][s->msg]))
						return -1;
					continue;
				}
				target += r.size[d][s->msg];
				if (rx_until(s, target))
					return -1;
				s->msgs++;
			}
	}
	s->msg = 0;
	if (s->id && shutdown(s->fd, SHUT_WR))
		return fail(s, "shutdown: %s", strerror(errno));
	if (rx_until(s, EOF_TARGET))
		return -1;
	if (!s->id && shutdown(s->fd, SHUT_WR))
		return fail(s, "shutdown: %s", strerror(errno));
	return 0;
}

#define SALT_UP 0x7570ull   /* client to server */
#define SALT_DOWN 0x646eull
#define SALT_OWN 0x6f776eull

static int side_open(struct side *s, int fd, int method, uint64_t seed)
{
	struct epoll_event lt = { .events = EPOLLIN }, et = { .events = EPOLLIN | EPOLLET };
	int one = 1;

	s->fd = fd;
	s->method = method;
	s->ep_os = s->ep_ho = -1;
	s->plan = wait_seed(seed, WAIT_PLAN_SALT);
	s->rnd = wait_seed(seed, SALT_OWN + (uint64_t)s->id);
	stream_init(&s->tx, seed, s->id ? SALT_UP : SALT_DOWN);
	stream_init(&s->rx, seed, s->id ? SALT_DOWN : SALT_UP);
	/* request/response: no Nagle stall on the control's pieces */
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		return fail(s, "TCP_NODELAY: %s", strerror(errno));
	s->ep_lt = epoll_create1(EPOLL_CLOEXEC);
	s->ep_et = epoll_create1(EPOLL_CLOEXEC);
	if (s->ep_lt < 0 || s->ep_et < 0 || epoll_ctl(s->ep_lt, EPOLL_CTL_ADD, fd, &lt) ||
	    epoll_ctl(s->ep_et, EPOLL_CTL_ADD, fd, &et))
		return fail(s, "epoll: %s", strerror(errno));
	return set_nonblock(s, method == M_EPOLL_LT || method == M_EPOLL_ET);
}

/* Pinned to @cpu (-1: not), and watched: the watchdog thread, made after the pin, runs there too. */
static int pin_and_watch(struct side *s, int cpu)
{
	pthread_t t;
	cpu_set_t set;

	CPU_ZERO(&set);
	if (cpu >= 0)
		CPU_SET(cpu, &set);
	if (cpu >= 0 && sched_setaffinity(0, sizeof(set), &set))
		return fail(s, "pinning to CPU %d: %s", cpu, strerror(errno));
	if (pthread_create(&t, NULL, watchdog, NULL))
		return fail(s, "the watchdog thread: %s", strerror(errno));
	return 0;
}

static void result(struct side *s, char *line, size_t len)
{
	struct tcp_info ti = { 0 };
	socklen_t tl = sizeof(ti);

	struct pollfd fin = { .fd = s->fd, .events = POLLRDHUP };

	/* the end of the stream a ring says can come before the peer's last
	 * doorbells and FIN land (a spinning reader sees the header at once):
	 * once the FIN is in, every doorbell is */
	poll(&fin, 1, 10000);
	getsockopt(s->fd, IPPROTO_TCP, TCP_INFO, &ti, &tl);
	snprintf(line, len, "msgs %llu bytes %llu tcp %llu waits %llu long %llu spurious %llu", (unsigned long long)s->msgs,
		 (unsigned long long)s->rx_bytes, (unsigned long long)ti.tcpi_bytes_received,
		 (unsigned long long)s->waits, (unsigned long long)s->long_waits, (unsigned long long)s->spurious);
}

static int client(struct side *s, int l, int port, int cpu, int method, int rounds, uint64_t seed, pid_t parent)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	char line[512], res[300];
	int fd, ok;

	close(l);
	prctl(PR_SET_PDEATHSIG, SIGKILL); /* a server that hung and went takes its client */
	if (getppid() != parent)
		_exit(1);
	ok = !pin_and_watch(s, cpu);
	if (ok && ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
		   connect(fd, (struct sockaddr *)&sa, sizeof(sa))))
		ok = !fail(s, "connect: %s", strerror(errno));
	ok = ok && !side_open(s, fd, method, seed) && !run(s, rounds);
	if (ok)
		result(s, res, sizeof(res));
	snprintf(line, sizeof(line), "%s %s\n", ok ? "OK" : "BAD", ok ? res : s->why);
	(void)!write(result_fd, line, strlen(line));
	_exit(!ok);
}

/* The client's line, up to its end (it exited), and its exit status. */
static int client_said(struct side *s, int fd, char *line, size_t len)
{
	size_t n = 0;
	ssize_t r;
	int st = 0;

	wait_begin(s, "the client's result", s->method, 0);
	while (n + 1 < len && (r = read(fd, line + n, len - 1 - n)) != 0)
		if (r > 0)
			n += (size_t)r;
		else if (errno != EINTR)
			break;
	line[n] = '\0';
	line[strcspn(line, "\n")] = '\0';
	while (waitpid(child, &st, 0) < 0 && errno == EINTR)
		;
	wait_over();
	child = -1;
	return st;
}

/* A side's "msgs N bytes B tcp T waits W long L spurious S" in @v. */
static int counts(const char *line, unsigned long long v[6])
{
	return sscanf(line, "msgs %llu bytes %llu tcp %llu waits %llu long %llu spurious %llu", &v[0], &v[1], &v[2], &v[3],
		      &v[4], &v[5]) == 6;
}

int main(int argc, char **argv)
{
	static struct side srv = { .name = "server", .id = 0 }, cli = { .name = "client", .id = 1 };
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	unsigned long long a[6], c[6];
	int method = -1, res[2], l, fd, rounds, cpu_s, cpu_c, ok, st;
	char mine[300], theirs[512];
	long long t0;
	uint64_t seed;

	for (int i = 0; argc == 6 && i <= M_HANDOFF_LATE; i++)
		if (!strcmp(argv[1], method_names[i]))
			method = i;
	if (method < 0) {
		fprintf(stderr, "usage: wait-stress recv|poll|select|nb-epoll-lt|nb-epoll-et|mixed|oneshot-late|handoff-late SERVER_CPU CLIENT_CPU "
				"ROUNDS SEED\n");
		return 2;
	}
	cpu_s = atoi(argv[2]);
	cpu_c = atoi(argv[3]);
	rounds = atoi(argv[4]);
	seed = strtoull(argv[5], NULL, 0);
	signal(SIGPIPE, SIG_IGN);
	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&sa, &sl) || pipe2(res, O_CLOEXEC)) {
		printf("BAD the listener: %s\n", strerror(errno));
		return 1;
	}
	fflush(stdout);
	child = fork();
	if (child < 0) {
		printf("BAD fork: %s\n", strerror(errno));
		return 1;
	}
	if (!child) {
		child = -1;
		close(res[0]);
		result_fd = res[1];
		client(&cli, l, ntohs(sa.sin_port), cpu_c, method, rounds, seed, getppid());
	}
	close(res[1]);
	ok = !pin_and_watch(&srv, cpu_s);
	t0 = now_ns();
	if (ok) {
		wait_begin(&srv, "accept", method, 0);
		fd = accept4(l, NULL, NULL, SOCK_CLOEXEC);
		wait_over();
		if (fd < 0)
			ok = !fail(&srv, "accept: %s", strerror(errno));
	}
	close(l);
	ok = ok && !side_open(&srv, fd, method, seed) && !run(&srv, rounds);
	t0 = now_ns() - t0;
	if (ok)
		result(&srv, mine, sizeof(mine));
	else
		kill(child, SIGKILL); /* it may wait for what never comes */
	st = client_said(&srv, res[0], theirs, sizeof(theirs));
	if (ok && WIFEXITED(st) && !WEXITSTATUS(st) && counts(mine, a) && !strncmp(theirs, "OK ", 3) &&
	    counts(theirs + 3, c)) {
		printf("OK msgs %llu bytes %llu tcp %llu waits %llu long %llu spurious %llu secs %.2f\n", a[0] + c[0],
		       a[1] + c[1], a[2] + c[2], a[3] + c[3], a[4] + c[4], a[5] + c[5], (double)t0 / 1e9);
		return 0;
	}
	printf("BAD %s; client: %s (%s %d)\n", ok ? "server fine" : srv.why, theirs[0] ? theirs : "said nothing",
	       WIFSIGNALED(st) ? "signal" : "exit", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	return 1;
}
