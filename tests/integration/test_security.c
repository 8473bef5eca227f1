// SPDX-License-Identifier: GPL-2.0-only
/*
 * Forged handshakes: a namespace that is not under lism, on the same bridge
 * (an address inside --local-cidr, the worst case), sends raw SYNs that
 * carry the real GID and a live client's token.  Nothing may pair, and the
 * real connection must still pair and deliver its bytes to the right socket.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "harness.h"
#include "lism/option.h"
#include "traffic.h"

static struct env e;

static void down(void)
{
	env_down(&e);
}

TestSuite(security, .fini = down, .timeout = 60);

static __u16 csum(const void *data, size_t len, __u32 sum)
{
	const __u8 *p = data;

	for (; len > 1; len -= 2, p += 2)
		sum += (p[0] << 8) | p[1];
	if (len)
		sum += p[0] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

/* A SYN from @src:@sport to @dst:@dport carrying MSS and the lism option. */
static void forge_syn(const char *src, __u16 sport, const char *dst, __u16 dport, __u64 gid,
		      __u64 token, __u32 isn)
{
	__u8 pkt[20 + 4 + LISM_OPT_LEN] = { 0 };
	struct lism_opt o = { .gid = gid, .token = token };
	struct sockaddr_in to = { .sin_family = AF_INET };
	struct {
		__u32 src, dst;
		__u8 zero, proto;
		__u16 len;
	} __attribute__((packed)) pseudo;
	__u8 sumbuf[sizeof(pseudo) + sizeof(pkt)];
	__u16 sum;
	int fd;

	pkt[0] = sport >> 8;
	pkt[1] = sport & 0xff;
	pkt[2] = dport >> 8;
	pkt[3] = dport & 0xff;
	pkt[4] = isn >> 24;
	pkt[5] = isn >> 16;
	pkt[6] = isn >> 8;
	pkt[7] = isn;
	pkt[12] = (sizeof(pkt) / 4) << 4; /* data offset */
	pkt[13] = 0x02;                   /* SYN */
	pkt[14] = 0xfa;                   /* window 64240 */
	pkt[15] = 0xf0;
	pkt[20] = 2; /* MSS 1460 */
	pkt[21] = 4;
	pkt[22] = 0x05;
	pkt[23] = 0xb4;
	lism_opt_encode(pkt + 24, &o);
	inet_pton(AF_INET, src, &pseudo.src);
	inet_pton(AF_INET, dst, &pseudo.dst);
	pseudo.zero = 0;
	pseudo.proto = IPPROTO_TCP;
	pseudo.len = htons(sizeof(pkt));
	memcpy(sumbuf, &pseudo, sizeof(pseudo));
	memcpy(sumbuf + sizeof(pseudo), pkt, sizeof(pkt));
	sum = csum(sumbuf, sizeof(sumbuf), 0);
	pkt[16] = sum >> 8;
	pkt[17] = sum & 0xff;
	fd = socket(AF_INET, SOCK_RAW, IPPROTO_TCP);
	cr_assert_geq(fd, 0, "raw socket: %s", strerror(errno));
	inet_pton(AF_INET, dst, &to.sin_addr);
	cr_assert_eq(sendto(fd, pkt, sizeof(pkt), 0, (struct sockaddr *)&to, sizeof(to)),
		     (ssize_t)sizeof(pkt), "sendto: %s", strerror(errno));
	close(fd);
}

/* Three "pods" on a bridge: client 10.77.0.1, server .2, forger .3. */
static void three_pods(const char **a, const char **b, const char **f)
{
	const char *br = env_netns(&e, "br");
	const char *ns[3];
	const char *ip[3] = { "10.77.0.1", "10.77.0.2", "10.77.0.3" };

	ns[0] = *a = env_netns(&e, "a");
	ns[1] = *b = env_netns(&e, "b");
	ns[2] = *f = env_netns(&e, "f");
	cr_assert_eq(sh("ip -n %s link add br0 type bridge && ip -n %s link set br0 up", br, br), 0);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(sh("ip link add eth0 netns %s type veth peer name v%d netns %s && "
				"ip -n %s link set v%d master br0 && ip -n %s link set v%d up && "
				"ip -n %s addr add %s/24 dev eth0 && ip -n %s link set eth0 up",
				ns[i], i, br, br, i, br, i, ns[i], ip[i], ns[i]),
			     0);
	}
}

/* The entry of the one client waiting in SYN_SENT. */
static struct lism_dmb proposed_entry(void)
{
	struct lism_instance in;
	struct lism_dmb d, found = { 0 };

	cr_assert_eq(lism_instance_open(&in, e.pin), 0);
	for (__u32 slot = 0; slot < LISM_DEFAULT_MAX_DMBS; slot++) {
		if (bpf_map_lookup_elem(in.dmbs_fd, &slot, &d))
			break;
		if (d.token && d.role == LISM_ROLE_ACTIVE && d.state == LISM_ST_PROPOSED)
			found = d;
	}
	lism_instance_close(&in);
	cr_assert_neq(found.token, 0, "no proposal in the table");
	return found;
}

/* Until @n fallbacks of @reason were counted (the SYNs sent took their way through the stack). */
static void wait_reason(unsigned int reason, __u64 n)
{
	struct lism_snapshot st;

	for (int waited = 0; waited < 5000; waited += 20) {
		snap(&e, &st);
		if (st.reasons[reason] >= n)
			return;
		usleep(20000);
	}
	cr_assert_fail("%llu fallbacks of reason %u, want %llu", (unsigned long long)st.reasons[reason], reason,
		       (unsigned long long)n);
}

Test(security, forged_syns_with_a_live_token_never_pair)
{
	const char *a, *b, *f;
	struct lism_snapshot st;
	struct lism_dmb s_entry, now;
	struct pump_result r;
	int l, c, sv, port = 7000;
	__u64 gid;

	require_root();
	env_up(&e, LISM_TEST_MEASURE " --local-cidr 10.77.0.0/24");
	three_pods(&a, &b, &f);
	env_enter(&e);
	netns_switch(b);
	l = tcp_listen(AF_INET, "10.77.0.2", &port, 1);
	netns_switch(a);
	/* hold the client in SYN_SENT: its SYNs (with the option) are dropped for now */
	cr_assert_eq(sh("ip netns exec %s iptables -A OUTPUT -p tcp --syn -j DROP", a), 0);
	c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, "10.77.0.2", &to.sin_addr);
	cr_assert_eq(connect(c, (struct sockaddr *)&to, sizeof(to)), -1);
	cr_assert_eq(errno, EINPROGRESS);
	netns_switch(NULL);

	s_entry = proposed_entry();
	snap(&e, &st);
	gid = lism_be64_load(st.dev.gid);

	/* the forger knows the GID and the live token, not the client's ISN */
	netns_switch(f);
	for (int i = 0; i < 5; i++)
		forge_syn("10.77.0.3", 40000 + i, "10.77.0.2", port, gid, s_entry.token,
			  s_entry.isn + 1000 + i);
	netns_switch(NULL);
	wait_reason(LISM_R_HANDSHAKE_INVALID, 5);
	cr_assert(dmb_lookup(&e, s_entry.token, &now), "the proposal vanished");
	cr_assert_eq(now.peer_token, 0, "a forged SYN claimed the client's token");
	snap(&e, &st);
	cr_assert_eq(st.reasons[LISM_R_HANDSHAKE_INVALID], 5, "forged SYNs not refused");
	cr_assert_eq(st.usage.dmbs_in_use, 1, "a forged SYN got a DMB");
	cr_assert_eq(st.stats[LISM_S_ACCEPTS_SENT], 0);

	/*
	 * The real SYN gets through now (a retransmission: it must still carry
	 * the option) and pairs with the real server.
	 */
	cr_assert_eq(sh("ip netns exec %s iptables -F OUTPUT", a), 0);
	sv = tcp_accept(l, 1, 10000);
	snap(&e, &st);
	cr_assert_eq(st.confirmed, 1, "the real connection did not pair");

	/* a forged SYN naming the now-claimed token changes nothing */
	netns_switch(f);
	forge_syn("10.77.0.3", 41000, "10.77.0.2", port, gid, s_entry.token, s_entry.isn);
	netns_switch(NULL);
	wait_reason(LISM_R_TOKEN_CLAIMED, 1);
	snap(&e, &st);
	cr_assert_eq(st.confirmed, 1);
	cr_assert_eq(st.usage.dmbs_in_use, 2);
	cr_assert_geq(st.reasons[LISM_R_TOKEN_CLAIMED], 1);

	pump(c, sv, 4u << 20, 4u << 20, 64u << 10, 13, 30000, &r);
	cr_assert(r.ok, "%s", r.why);
	snap(&e, &st);
	if (kernel_has(LISM_F_DATA_PATH)) /* else (6.1): paired above, its bytes on TCP */
		cr_assert_geq(st.stats[LISM_S_SC_BYTES], 4u << 20, "the real pair did not use the shortcut");
	close(c);
	close(sv);
	close(l);
}

/*
 * A client whose own address is out of scope proposes to an in-scope
 * server (its destination is in scope): the server gives no answer at all,
 * though the token is live and the addresses match.
 */
Test(security, out_of_scope_sources_get_no_answer)
{
	const char *a, *b, *f;
	struct lism_snapshot st;
	int l, c, sv, port = 7001;

	require_root();
	env_up(&e, "--local-cidr 10.77.0.1/32,10.77.0.2/32"); /* .1 and .2 local, .3 not */
	three_pods(&a, &b, &f);
	env_enter(&e);
	netns_switch(b);
	l = tcp_listen(AF_INET, "10.77.0.2", &port, 1);
	netns_switch(f);
	c = tcp_connect(AF_INET, "10.77.0.2", port, 1);
	sv = tcp_accept(l, 1, 5000);
	netns_switch(NULL);
	snap(&e, &st);
	cr_assert_eq(st.stats[LISM_S_PROPOSALS_SENT], 1, "the client did not propose (its destination is in scope)");
	cr_assert_eq(st.stats[LISM_S_PROPOSALS_RECV], 1, "the server did not see the proposal");
	cr_assert_eq(st.stats[LISM_S_ACCEPTS_SENT], 0, "a source out of scope got an answer");
	cr_assert_eq(st.reasons[LISM_R_PEER_NO_LISM], 1, "the client did not fall back for want of an answer");
	cr_assert_eq(st.confirmed, 0);
	cr_assert_eq(send_all(c, 14, 0, 1000), 0);
	cr_assert_eq(recv_check(sv, 14, 0, 1000, 5000), 0);
	close(c);
	close(sv);
	close(l);
	cr_assert_eq(wait_drained(&e, 3000), 0);
	(void)a;
}
