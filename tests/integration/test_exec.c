// SPDX-License-Identifier: GPL-2.0-only
/*
 * lism exec's contract (lism/exec.h), end to end: sockets marked the way
 * liblism marks them, the handshake's decision as both ends read it, and
 * the device handing a ring pair's memory only to holders of its sockets.
 * The device runs in this process (the library call lism run makes).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <linux/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/capability.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "broker.h"
#include "exec/attach.h"
#include "harness.h"
#include "lism/reason.h"
#include "traffic.h"

static struct env e;
static struct lism_broker *dev;
static const char *dev_path; /* the test's own: env_up sets $LISM_DEVICE */

static void down(void)
{
	lism_broker_stop(dev);
	dev = NULL;
	env_down(&e);
}

static void gate(void)
{
	require_root();
	needs(LISM_F_EXEC);
}

TestSuite(exec, .init = gate, .fini = down, .timeout = 120);

static void up(int with_device)
{
	env_up(&e, NULL);
	dev_path = lism_exec_device_path();
	cr_assert_str_eq(dev_path, e.device);
	if (with_device)
		cr_assert_eq(lism_broker_start(e.pin, dev_path, &dev), 0, "the device did not start");
	env_enter(&e);
}

/* A TCP socket on 127.0.0.1, marked as liblism marks it when @mark. */
static int exec_socket(int mark)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert_geq(fd, 0);
	if (mark)
		cr_assert_eq(lism_exec_mark(fd), 0, "marking a fresh socket: %s", strerror(errno));
	return fd;
}

/*
 * A connected pair, each end marked as asked.  A marked end is blocking
 * (blocking semantics are liblism's own business); an unmarked one is
 * non-blocking, as the sk_msg path wants it.
 */
static void exec_pair(int mark_c, int mark_s, int *c, int *s)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int l, port = 0;

	if (mark_s) {
		l = exec_socket(1);
		cr_assert_eq(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
		cr_assert_eq(listen(l, 16), 0);
		cr_assert_eq(getsockname(l, (struct sockaddr *)&a, &len), 0);
		port = ntohs(a.sin_port);
	} else {
		l = tcp_listen(AF_INET, "127.0.0.1", &port, 1);
		a.sin_port = htons((__u16)port);
	}
	if (mark_c) {
		*c = exec_socket(1);
		cr_assert_eq(connect(*c, (struct sockaddr *)&a, sizeof(a)), 0, "connect: %s", strerror(errno));
	} else {
		*c = tcp_connect(AF_INET, "127.0.0.1", port, 1);
	}
	if (mark_s)
		*s = accept(l, NULL, NULL);
	else
		*s = tcp_accept(l, 1, 5000);
	cr_assert_geq(*s, 0);
	close(l);
}

static __u32 decided(int fd, struct lism_exec_info *in)
{
	cr_assert_eq(lism_exec_wait(fd, in, 5000), 0, "getsockopt(LISM_SO_INFO): %s", strerror(errno));
	cr_assert_neq(in->mode, LISM_EXEC_UNDECIDED, "the pair was not decided within 5 s");
	return in->mode;
}

struct ring_stream {
	struct lism_exec_map *m;
	__u64 n;
	__u32 seed;
	int ok;
	char why[128];
};

/* Write @n pattern bytes into the ring (spinning on a full ring: no doorbells here). */
static void *ring_writer(void *arg)
{
	struct ring_stream *st = arg;
	__u64 off = 0;

	while (off < st->n) {
		__u64 len;
		const __u8 *p = pattern_span_public(st->seed, off, st->n - off, &len);
		struct iovec iov = { (void *)p, len > (1u << 20) ? 1u << 20 : len };
		ssize_t w = lism_ring_send(&st->m->tx, &iov, 1);

		if (w == -EAGAIN) {
			sched_yield();
			continue;
		}
		if (w <= 0) {
			snprintf(st->why, sizeof(st->why), "send at %llu: %zd", (unsigned long long)off, w);
			return NULL;
		}
		off += (__u64)w;
	}
	lism_ring_tx_set_state(&st->m->tx, LISM_RING_DONE_WRITING);
	st->ok = 1;
	return NULL;
}

/* Read and check until the end of the stream; the bytes read. */
static __u64 ring_read_all(struct lism_exec_map *m, __u32 seed, char *why, size_t whylen)
{
	static __u8 buf[256 << 10];
	__u64 off = 0;

	for (;;) {
		struct iovec iov = { buf, (size_t)(1 + off % sizeof(buf)) }; /* odd sizes: wraps everywhere */
		ssize_t r = lism_ring_recv(&m->rx, &iov, 1, 0);

		if (r == -EAGAIN) {
			sched_yield();
			continue;
		}
		if (r == 0)
			return off;
		if (r < 0) {
			snprintf(why, whylen, "recv at %llu: %zd", (unsigned long long)off, r);
			return off;
		}
		for (ssize_t i = 0; i < r; i++)
			if (buf[i] != pattern_at(seed, off + (__u64)i)) {
				snprintf(why, whylen, "byte %llu differs", (unsigned long long)(off + (__u64)i));
				return off;
			}
		off += (__u64)r;
	}
}

static void stream_through(struct lism_exec_map *w, struct lism_exec_map *r, __u64 n, __u32 seed)
{
	struct ring_stream st = { .m = w, .n = n, .seed = seed };
	char why[128] = "";
	pthread_t t;
	__u64 got;

	pattern_at(seed, 0); /* the pattern table, before threads */
	cr_assert_eq(pthread_create(&t, NULL, ring_writer, &st), 0);
	got = ring_read_all(r, seed, why, sizeof(why));
	pthread_join(t, NULL);
	cr_assert(st.ok, "writer: %s", st.why);
	cr_assert_eq(got, n, "read %llu of %llu bytes: %s", (unsigned long long)got, (unsigned long long)n, why);
}

static int count_lines(const char *text, const char *needle)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* Segments with payload the TCP connection carried each way, as this end's kernel counts them. */
static __u64 tcp_payload(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	cr_assert_eq(getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len), 0);
	return (__u64)ti.tcpi_data_segs_in + ti.tcpi_data_segs_out;
}

/*
 * Both ends marked, a device serving: the pair is decided RING, stays out
 * of the sk_msg maps, and both ends get the same memory from the device,
 * through which 64 MiB go each way, checksummed, with nothing on the TCP
 * connection.  Once the connection ends the device lets go of the memory.
 */
Test(exec, a_pair_under_lism_exec_gets_one_ring_through_the_device)
{
	struct lism_exec_info ic, is;
	struct lism_exec_map mc, ms;
	struct lism_device_totals bs;
	struct lism_snapshot snapshot;
	struct lism_ring_hdr *h;
	int c, s;

	up(1);
	exec_pair(1, 1, &c, &s);
	cr_assert_eq(decided(c, &ic), LISM_EXEC_RING, "client: mode %u reason %u", ic.mode, ic.reason);
	cr_assert_eq(decided(s, &is), LISM_EXEC_RING, "server: mode %u reason %u", is.mode, is.reason);
	cr_assert(ic.flags & LISM_EXEC_I_MARKED);
	cr_assert(is.flags & LISM_EXEC_I_MARKED, "accept() did not clone the listener's mark");
	cr_assert_eq(ic.peer_token, is.token);
	cr_assert_eq(is.peer_token, ic.token);
	snap(&e, &snapshot);
	cr_assert_eq(snapshot.confirmed, 1);
	cr_assert_eq(snapshot.stats[LISM_S_RING_PAIRS], 1);
	cr_assert_eq(shortcut_members(&e), 0, "a ring pair's ends joined the sk_msg maps");
	if (kernel_has(LISM_F_CONNS)) {
		char out[8192];

		cr_assert_eq(lism_out(&e, "conns --mode ring", out, sizeof(out)), 0, "%s", out);
		cr_assert_eq(count_lines(out, " ring "), 2, "both ends are ring rows:\n%s", out);
	}

	{
		char out[8192];

		cr_assert_eq(lism_out(&e, "status", out, sizeof(out)), 0, "%s", out);
		cr_assert_not_null(strstr(out, "lism exec: a device serves"), "%s", out);
		cr_assert_not_null(strstr(out, ", 1 ring pairs"), "%s", out);
	}
	cr_assert_eq(lism_exec_attach(c, dev_path, &mc), 0);
	cr_assert_eq(lism_exec_attach(s, dev_path, &ms), 0);
	cr_assert_eq(mc.end, 0, "the active end is end 0");
	cr_assert_eq(ms.end, 1);
	h = mc.base;
	cr_assert_eq(h->token[0], ic.token);
	cr_assert_eq(h->token[1], is.token);
	/* one memory: what one end writes the other reads */
	stream_through(&mc, &ms, 64ull << 20, 3);
	stream_through(&ms, &mc, 64ull << 20, 4);
	cr_assert_eq(tcp_payload(c), 0, "the TCP connection carried %llu data segments", (unsigned long long)tcp_payload(c));
	cr_assert_eq(tcp_payload(s), 0, "the TCP connection carried %llu data segments", (unsigned long long)tcp_payload(s));
	/* the views, from the device: each end received 64 MiB into its DMB and sent 64 MiB */
	if (kernel_has(LISM_F_CONNS)) {
		static char out[16384];

		cr_assert_eq(lism_out(&e, "conns -j --mode ring", out, sizeof(out)), 0, "%s", out);
		cr_assert_eq(count_lines(out, "\"rx_bytes\":67108864"), 2, "%s", out);
		cr_assert_eq(count_lines(out, "\"tx_bytes\":67108864"), 2, "%s", out);
		cr_assert_eq(count_lines(out, "\"unread\":0"), 2, "%s", out);
		cr_assert_eq(count_lines(out, "\"ring\":{\"end\":0"), 1, "%s", out);
		cr_assert_eq(count_lines(out, "\"ring\":{\"end\":1"), 1, "%s", out);
		cr_assert_eq(count_lines(out, "\"state\":[\"done_writing\"]"), 4, "both directions, from both ends:\n%s", out);
		cr_assert_eq(lism_out(&e, "conns -w --mode ring", out, sizeof(out)), 0, "%s", out);
		cr_assert_eq(count_lines(out, " ring "), 4, "mode and tx of both rows:\n%s", out);
		cr_assert_eq(count_lines(out, " 67108864     67108864     "), 2, "RxBytes and TxBytes of both rows:\n%s", out);
	}
	{
		char out[16384];

		cr_assert_eq(lism_out(&e, "stats -j", out, sizeof(out)), 0, "%s", out);
		cr_assert_not_null(strstr(out, "\"ring_bytes\":134217728"), "both directions:\n%s", out);
		cr_assert_not_null(strstr(out, "\"rings_held\":1,\"rings\":1,\"attaches\":2"), "%s", out);
		cr_assert_eq(lism_out(&e, "stats", out, sizeof(out)), 0, "%s", out);
		cr_assert_not_null(strstr(out, "ring bytes                         134217728 (128"), "%s", out);
	}
	/* settled: an end's late claim changes nothing */
	{
		int one = 1;

		cr_assert_eq(setsockopt(c, LISM_SOL, LISM_SO_KERNEL, &one, sizeof(one)), 0);
		cr_assert_eq(decided(c, &ic), LISM_EXEC_RING);
	}
	lism_broker_stats(dev, &bs);
	cr_assert_eq(bs.rings, 1);
	cr_assert_eq(bs.attaches, 2);
	cr_assert_eq(bs.held, 1);
	cr_assert_eq(bs.bytes, 128ull << 20);

	{
		/* a device of another release: its rings another version, said as such (liblism then
		 * marks no more sockets: its later pairs take the kernel's path instead of resetting) */
		struct lism_exec_map again;

		h->version = LISM_RING_VERSION + 1;
		cr_assert_eq(lism_exec_attach(s, dev_path, &again), -EPROTONOSUPPORT);
		h->version = LISM_RING_VERSION;
	}
	lism_exec_detach(&mc);
	lism_exec_detach(&ms);
	close(c);
	close(s);
	cr_assert_eq(wait_drained(&e, 5000), 0);
	for (int i = 0; i < 50; i++) { /* the device sweeps its pairs every second */
		lism_broker_stats(dev, &bs);
		if (!bs.held)
			break;
		usleep(100 * 1000);
	}
	cr_assert_eq(bs.held, 0, "the device kept the memory of a closed pair");
	cr_assert_eq(bs.bytes, 128ull << 20, "a pair given back keeps its bytes in the totals");
	cr_assert_eq(bs.aborts, 0);
}

/*
 * A request written by hand: with @empty, a message of no bytes carrying
 * the sockets; else a well-formed request carrying @a and @b (if >= 0).
 * The device's err, or 0 when it hung up without one.
 */
static int raw_request(int empty, int a, int b)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct lism_device_req req = { .magic = LISM_DEVICE_MAGIC, .op = LISM_DEVICE_ATTACH };
	struct lism_device_ans ans = { 0 };
	char cbuf[CMSG_SPACE(2 * sizeof(int))] = { 0 };
	int fds[2] = { a, b }, n = b >= 0 ? 2 : 1;
	struct iovec iov = { &req, empty ? 0 : sizeof(req) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = CMSG_SPACE(n * sizeof(int)) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	int d = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	ssize_t r;

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(n * sizeof(int));
	memcpy(CMSG_DATA(c), fds, n * sizeof(int));
	strcpy(sa.sun_path, dev_path);
	cr_assert_eq(connect(d, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_geq(sendmsg(d, &m, 0), 0, "%s", strerror(errno));
	r = recv(d, &ans, sizeof(ans), 0);
	close(d);
	return r == (ssize_t)sizeof(ans) ? ans.err : 0;
}

/* Sockets open in this process, the device's thread included. */
static int open_sockets_now(void)
{
	struct dirent *de;
	char path[300], link[64];
	int n = 0;
	DIR *d = opendir("/proc/self/fd");

	cr_assert_not_null(d);
	while ((de = readdir(d))) {
		ssize_t l;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		l = readlink(path, link, sizeof(link) - 1);
		if (l > 0 && (link[l] = '\0', !strncmp(link, "socket:", 7)))
			n++;
	}
	closedir(d);
	return n;
}

/*
 * The same once the device is done with what it was sent before (it drops
 * a caller and closes received fds just after answering): a count that
 * holds for 100 ms.
 */
static int open_sockets(void)
{
	int n = open_sockets_now(), same = 0;

	for (int i = 0; i < 200 && same < 5; i++) {
		int m;

		usleep(20 * 1000);
		m = open_sockets_now();
		same = m == n ? same + 1 : 0;
		n = m;
	}
	return n;
}

/* A request the device must refuse: the socket passed is not an end of a ring pair. */
static int attach_err(int fd)
{
	struct lism_exec_map m;
	int err = lism_exec_attach(fd, dev_path, &m);

	if (!err)
		lism_exec_detach(&m);
	return err;
}

/*
 * The memory goes only with a socket of its pair: each pair's ends get
 * their own pair's memory; a plain pair, a marked pair decided KERNEL, a
 * UDP socket, a marked socket that never paired, a request with no socket,
 * an empty message with sockets and a request with two get nothing, and
 * the device keeps no fd of theirs.
 */
Test(exec, the_device_hands_a_ring_only_to_a_holder_of_its_pair)
{
	struct lism_exec_info ia, ib;
	struct lism_exec_map ma, mb;
	struct lism_device_totals bs;
	int a_c, a_s, b_c, b_s, p_c, p_s, u, l;

	up(1);
	exec_pair(1, 1, &a_c, &a_s);
	exec_pair(1, 1, &b_c, &b_s);
	exec_pair(0, 0, &p_c, &p_s);
	cr_assert_eq(decided(a_c, &ia), LISM_EXEC_RING);
	cr_assert_eq(decided(b_s, &ib), LISM_EXEC_RING);
	cr_assert_eq(lism_exec_attach(a_c, dev_path, &ma), 0);
	cr_assert_eq(lism_exec_attach(b_s, dev_path, &mb), 0);
	cr_assert_eq(((struct lism_ring_hdr *)ma.base)->token[0], ia.token);
	cr_assert_eq(((struct lism_ring_hdr *)mb.base)->token[1], ib.token);
	cr_assert_neq(((struct lism_ring_hdr *)mb.base)->token[0], ia.token, "pair B got pair A's memory");
	lism_ring_tx_set_state(&ma.tx, LISM_RING_ABORT); /* pair A ends reset: the device counts it */
	lism_exec_detach(&ma);
	lism_exec_detach(&mb);

	cr_assert_eq(attach_err(p_c), -EPERM, "a pair of unmarked sockets (its entries carry no ring)");
	u = socket(AF_INET, SOCK_DGRAM, 0);
	cr_assert_eq(attach_err(u), -EOPNOTSUPP, "liblism asks no device for a UDP socket");
	l = exec_socket(1);
	cr_assert_eq(attach_err(l), -ENOENT, "a marked socket that never paired");
	{
		int k_c, k_s;
		struct lism_exec_info ik;

		exec_pair(1, 0, &k_c, &k_s);
		cr_assert_eq(decided(k_c, &ik), LISM_EXEC_KERNEL);
		cr_assert_eq(attach_err(k_c), -EPERM, "a marked end of a pair decided KERNEL");
		close(k_c);
		close(k_s);
	}
	{
		/* a request without a socket */
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		struct lism_device_req req = { .magic = LISM_DEVICE_MAGIC, .op = LISM_DEVICE_ATTACH };
		struct lism_device_ans ans;
		int d = socket(AF_UNIX, SOCK_SEQPACKET, 0);

		strcpy(sa.sun_path, dev_path);
		cr_assert_eq(connect(d, (struct sockaddr *)&sa, sizeof(sa)), 0);
		cr_assert_eq(send(d, &req, sizeof(req), 0), (ssize_t)sizeof(req));
		cr_assert_eq(recv(d, &ans, sizeof(ans), 0), (ssize_t)sizeof(ans));
		cr_assert_eq(ans.err, -EINVAL);
		close(d);
	}
	{
		int before = open_sockets(), after = -1;

		cr_assert_eq(raw_request(0, a_c, a_s), -EINVAL, "a request with two sockets");
		cr_assert_eq(raw_request(0, u, -1), -EPROTONOSUPPORT, "a UDP socket, sent by hand");
		cr_assert_eq(raw_request(1, a_c, -1), 0, "an empty message with a socket: no answer, and dropped");
		/* every socket the device received is closed again (by its reaper: a moment later) */
		after = open_sockets();
		cr_assert_eq(after, before, "the device kept %d of the sockets it was sent", after - before);
	}
	{
		/* the report names every pair: not for another user */
		struct lism_device_report *r;
		pid_t pid = fork();
		int st;

		cr_assert_geq(pid, 0);
		if (!pid) {
			if (setgid(65534) || setuid(65534))
				_exit(2);
			_exit(lism_device_report(dev_path, &r) == -EACCES ? 0 : 1);
		}
		cr_assert_eq(waitpid(pid, &st, 0), pid);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "user nobody was not refused the report (%d)", st);
		/* root without CAP_BPF or CAP_SYS_ADMIN, as in a pod that mounts the device's directory */
		pid = fork();
		cr_assert_geq(pid, 0);
		if (!pid) {
			struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
			struct __user_cap_data_struct d[2] = { 0 };

			if (syscall(SYS_capget, &h, d))
				_exit(2);
			d[0].effective &= ~(1u << CAP_SYS_ADMIN);
			d[1].effective &= ~(1u << (CAP_BPF - 32));
			if (syscall(SYS_capset, &h, d))
				_exit(2);
			_exit(lism_device_report(dev_path, &r) == -EACCES ? 0 : 1);
		}
		cr_assert_eq(waitpid(pid, &st, 0), pid);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "root without CAP_BPF was not refused the report (%d)",
			  st);
		cr_assert_eq(lism_device_report(dev_path, &r), 0);
		cr_assert_eq(r->n, 2, "the report has both pairs");
		free(r);
	}
	lism_broker_stats(dev, &bs);
	cr_assert_eq(bs.attaches, 2);
	cr_assert_eq(bs.refusals, 8, "%llu", (unsigned long long)bs.refusals);
	cr_assert_eq(bs.rings, 2);
	close(u);
	close(l);
	close(a_c);
	close(a_s);
	close(b_c);
	close(b_s);
	close(p_c);
	close(p_s);
	cr_assert_eq(wait_drained(&e, 5000), 0);
	for (int i = 0; i < 50; i++) { /* the device sweeps its pairs every second */
		lism_broker_stats(dev, &bs);
		if (!bs.held)
			break;
		usleep(100 * 1000);
	}
	cr_assert_eq(bs.held, 0);
	cr_assert_eq(bs.aborts, 1, "the pair that ended reset, and only it: %llu", (unsigned long long)bs.aborts);
}

static void assert_tcp_works(int c, int s, __u32 seed)
{
	cr_assert_eq(send_all(c, seed, 0, 1u << 20), 0);
	cr_assert_eq(recv_check(s, seed, 0, 1u << 20, 10000), 0);
	cr_assert_eq(send_all(s, seed + 1, 0, 1u << 20), 0);
	cr_assert_eq(recv_check(c, seed + 1, 0, 1u << 20, 10000), 0);
}

/* Both ends marked and no device: the kernel path, reason exec-no-device, and TCP's bytes. */
Test(exec, without_a_device_a_marked_pair_stays_on_tcp_and_says_why)
{
	struct lism_exec_info ic, is;
	struct lism_snapshot snapshot;
	struct lism_exec_map m;
	int c, s;

	up(0);
	exec_pair(1, 1, &c, &s);
	cr_assert_eq(decided(c, &ic), LISM_EXEC_KERNEL);
	cr_assert_eq(decided(s, &is), LISM_EXEC_KERNEL);
	cr_assert_eq(ic.reason, LISM_R_EXEC_NO_DEVICE, "reason %u", ic.reason);
	cr_assert_eq(is.reason, LISM_R_EXEC_NO_DEVICE, "reason %u", is.reason);
	snap(&e, &snapshot);
	cr_assert_eq(snapshot.reasons[LISM_R_EXEC_NO_DEVICE], 1);
	cr_assert_eq(snapshot.stats[LISM_S_RING_PAIRS], 0);
	cr_assert_eq(shortcut_members(&e), 0);
	cr_assert_eq(lism_exec_attach(c, dev_path, &m), -ENOENT, "no device socket there");
	{
		char out[8192];

		cr_assert_eq(lism_out(&e, "status", out, sizeof(out)), 0, "%s", out);
		cr_assert_not_null(strstr(out, "lism exec: no device serves"), "%s", out);
	}
	assert_tcp_works(c, s, 21);
	close(c);
	close(s);
	cr_assert_eq(wait_drained(&e, 5000), 0);
}

/*
 * One end without the library, either way round: the pair is decided
 * KERNEL with reason exec-peer-no-lib, and its bytes go over TCP (a marked
 * end never joins the sk_msg maps, so neither does its pair).
 */
Test(exec, a_pair_with_one_end_unmarked_stays_on_tcp_and_says_why)
{
	struct lism_exec_info in;
	struct lism_snapshot snapshot;
	int c, s;

	up(1);
	exec_pair(1, 0, &c, &s);
	cr_assert_eq(decided(c, &in), LISM_EXEC_KERNEL);
	cr_assert_eq(in.reason, LISM_R_EXEC_PEER_NO_LIB, "reason %u", in.reason);
	cr_assert_eq(decided(s, &in), LISM_EXEC_KERNEL);
	cr_assert_eq(in.reason, LISM_R_EXEC_PEER_NO_LIB, "reason %u", in.reason);
	cr_assert_eq(shortcut_members(&e), 0);
	assert_tcp_works(c, s, 31);
	close(c);
	close(s);

	/* the unmarked active end joined the maps at its end of the handshake: it is declined */
	exec_pair(0, 1, &c, &s);
	cr_assert_eq(decided(c, &in), LISM_EXEC_KERNEL);
	cr_assert_eq(decided(s, &in), LISM_EXEC_KERNEL);
	cr_assert_eq(in.reason, LISM_R_EXEC_PEER_NO_LIB, "reason %u", in.reason);
	assert_tcp_works(c, s, 41);
	snap(&e, &snapshot);
	cr_assert_eq(snapshot.reasons[LISM_R_EXEC_PEER_NO_LIB], 2, "one per pair: %llu",
		     (unsigned long long)snapshot.reasons[LISM_R_EXEC_PEER_NO_LIB]);
	cr_assert_eq(shortcut_members(&e), 0, "the unmarked active end stayed in the maps");
	close(c);
	close(s);
	cr_assert_eq(wait_drained(&e, 5000), 0);
}

/* The options answer only where they mean something; the kernel's ENOPROTOOPT elsewhere. */
Test(exec, the_options_answer_only_where_they_fit)
{
	struct lism_exec_info in;
	int one = 1, c, s, u;

	up(0);
	exec_pair(0, 0, &c, &s);
	cr_assert_eq(lism_exec_mark(c), -ENOPROTOOPT, "a mark after connect() must be refused");
	cr_assert_eq(lism_exec_info(c, &in), 0);
	cr_assert_eq(in.mode, LISM_EXEC_KERNEL, "an unmarked pair");
	cr_assert_eq(in.flags & LISM_EXEC_I_MARKED, 0);
	cr_assert_eq(setsockopt(c, LISM_SOL, 99, &one, sizeof(one)), -1);
	cr_assert_eq(errno, ENOPROTOOPT);
	u = socket(AF_INET, SOCK_DGRAM, 0);
	cr_assert_eq(lism_exec_mark(u), -ENOPROTOOPT);
	cr_assert_eq(lism_exec_info(u, &in), -EOPNOTSUPP, "IPv4's own answer to an unknown level");
	{
		socklen_t len = 4;
		char small[4];

		cr_assert_eq(getsockopt(c, LISM_SOL, LISM_SO_INFO, small, &len), -1, "a buffer too small");
		cr_assert_eq(errno, EOPNOTSUPP);
	}
	{
		/* IPv6 says ENOPROTOOPT to both; a marked IPv6 socket answers like an IPv4 one */
		int u6 = socket(AF_INET6, SOCK_DGRAM, 0), t6 = socket(AF_INET6, SOCK_STREAM, 0);

		cr_assert_eq(lism_exec_info(u6, &in), -ENOPROTOOPT);
		cr_assert_eq(lism_exec_mark(t6), 0);
		cr_assert_eq(lism_exec_info(t6, &in), 0);
		cr_assert(in.flags & LISM_EXEC_I_MARKED);
		close(u6);
		close(t6);
	}
	{
		/* an option buffer beyond a page goes to the kernel whole (6.1 failed it with EFAULT) */
		static char big[8192];
		int rcvbuf = 65536;
		socklen_t len = sizeof(big);

		memcpy(big, &rcvbuf, sizeof(rcvbuf));
		cr_assert_eq(setsockopt(c, SOL_SOCKET, SO_RCVBUF, big, sizeof(big)), 0, "%s", strerror(errno));
		cr_assert_eq(getsockopt(c, SOL_SOCKET, SO_RCVBUF, big, &len), 0, "%s", strerror(errno));
	}
	close(u);
	close(c);
	close(s);
}

/*
 * The lease: a device that stops lets new pairs go KERNEL (exec-no-device),
 * while a ring already mapped keeps working.
 */
Test(exec, a_device_that_stops_leaves_new_pairs_on_tcp)
{
	struct lism_exec_info in;
	struct lism_exec_map mc, ms;
	int c, s, c2, s2;

	up(1);
	exec_pair(1, 1, &c, &s);
	cr_assert_eq(decided(c, &in), LISM_EXEC_RING);
	cr_assert_eq(lism_exec_attach(c, dev_path, &mc), 0);
	cr_assert_eq(lism_exec_attach(s, dev_path, &ms), 0);
	lism_broker_stop(dev);
	dev = NULL;
	exec_pair(1, 1, &c2, &s2);
	cr_assert_eq(decided(c2, &in), LISM_EXEC_KERNEL);
	cr_assert_eq(in.reason, LISM_R_EXEC_NO_DEVICE);
	stream_through(&mc, &ms, 8u << 20, 5);
	lism_exec_detach(&mc);
	lism_exec_detach(&ms);
	close(c);
	close(s);
	close(c2);
	close(s2);
	cr_assert_eq(wait_drained(&e, 5000), 0);
}

/*
 * An end that asks late still gets what its peer wrote: the client
 * attaches, writes, says it closed, and closes its socket (its entry goes);
 * the server asks a sweep later, and reads every byte, then the end.
 */
Test(exec, an_end_that_asks_after_its_peer_closed_reads_what_it_wrote)
{
	struct lism_exec_info in;
	struct lism_exec_map mc, ms;
	char why[128] = "";
	int c, s;

	up(1);
	exec_pair(1, 1, &c, &s);
	cr_assert_eq(decided(c, &in), LISM_EXEC_RING);
	cr_assert_eq(lism_exec_attach(c, dev_path, &mc), 0);
	/* the default --dmb-size is 4 MiB: the device's rings stay in cache */
	cr_assert_eq(mc.rx.size, LISM_RING_DMB_CACHE, "a ring DMB of %u bytes", mc.rx.size);
	{
		struct ring_stream st = { .m = &mc, .n = 1u << 19, .seed = 9 };

		pattern_at(9, 0);
		ring_writer(&st); /* fits: a ring DMB is 1 MiB (lism/ring.h) */
		cr_assert(st.ok, "%s", st.why);
	}
	lism_ring_tx_set_state(&mc.tx, LISM_RING_CLOSED);
	lism_exec_detach(&mc);
	close(c);
	usleep(1500 * 1000); /* the device's sweep runs every second */
	cr_assert_eq(lism_exec_attach(s, dev_path, &ms), 0, "the device let go of a pair with one end left");
	cr_assert_eq(ring_read_all(&ms, 9, why, sizeof(why)), 1u << 19, "%s", why);
	lism_exec_detach(&ms);
	close(s);
	cr_assert_eq(wait_drained(&e, 5000), 0);
}
