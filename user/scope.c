// SPDX-License-Identifier: GPL-2.0-only
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <string.h>

#include "lism/abi.h"
#include "scope.h"

static int add(int fd, const struct lism_cidr *c, __u8 v, int *n)
{
	struct lism_scope_key k = { .prefixlen = c->prefixlen };


	memcpy(k.addr, c->addr, 16);
	if (bpf_map_update_elem(fd, &k, &v, BPF_ANY))
		return -errno;
	(*n)++;
	return 0;
}

int lism_scope_fill(int fd, const struct lism_cidr *local, int n_local,
		    const struct lism_cidr *exclude, int n_exclude, int *n_out)
{
	static const char *const loopback[] = { "127.0.0.0/8", "::1/128" };
	struct ifaddrs *ifa, *it;
	struct lism_cidr c;
	int err = 0;

	*n_out = 0;
	for (size_t i = 0; i < sizeof(loopback) / sizeof(loopback[0]); i++) {
		if (lism_parse_cidr(loopback[i], &c))
			return -EINVAL;
		err = add(fd, &c, LISM_SCOPE_LOCAL, n_out);
		if (err)
			return err;
	}
	if (getifaddrs(&ifa))
		return -errno;
	for (it = ifa; it && !err; it = it->ifa_next) {
		if (!it->ifa_addr)
			continue;
		memset(&c, 0, sizeof(c));
		if (it->ifa_addr->sa_family == AF_INET) {
			c.addr[10] = c.addr[11] = 0xff;
			memcpy(c.addr + 12, &((struct sockaddr_in *)it->ifa_addr)->sin_addr, 4);
		} else if (it->ifa_addr->sa_family == AF_INET6) {
			memcpy(c.addr, &((struct sockaddr_in6 *)it->ifa_addr)->sin6_addr, 16);
		} else {
			continue;
		}
		c.prefixlen = 128;
		err = add(fd, &c, LISM_SCOPE_LOCAL, n_out);
	}
	freeifaddrs(ifa);
	for (int i = 0; i < n_local && !err; i++)
		err = add(fd, &local[i], LISM_SCOPE_LOCAL, n_out);
	/* last: an exclusion of the same prefix as a local entry replaces it */
	for (int i = 0; i < n_exclude && !err; i++)
		err = add(fd, &exclude[i], LISM_SCOPE_EXCLUDE, n_out);
	return err;
}
