// SPDX-License-Identifier: GPL-2.0-only
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "lism/abi.h"
#include "cli.h"
#include "scope.h"

static int is_mapped(const __u8 *addr, __u32 prefixlen)
{
	static const __u8 mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return prefixlen >= 96 && !memcmp(addr, mapped, sizeof(mapped));
}

int lism_scope_key_is_v4(const struct lism_scope_key *k)
{
	return is_mapped(k->addr, k->prefixlen);
}

int lism_cidr_link_local(const struct lism_cidr *c)
{
	if (is_mapped(c->addr, c->prefixlen))
		return c->prefixlen >= 96 + 16 && c->addr[12] == 169 && c->addr[13] == 254;
	return c->prefixlen >= 10 && c->addr[0] == 0xfe && (c->addr[1] & 0xc0) == 0x80;
}

static int push(struct lism_scope_entry **v, int *n, int *cap, const struct lism_cidr *c, __u8 value)
{
	if (*n == *cap) {
		int ncap = *cap ? *cap * 2 : 16;
		struct lism_scope_entry *nv = realloc(*v, (size_t)ncap * sizeof(**v));

		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = ncap;
	}
	memset(&(*v)[*n], 0, sizeof(**v));
	(*v)[*n].key.prefixlen = c->prefixlen;
	memcpy((*v)[*n].key.addr, c->addr, 16);
	(*v)[*n].value = value;
	(*n)++;
	return 0;
}

/* A later entry of the same prefix replaces an earlier one (an exclusion a local one). */
static int push_unique(struct lism_scope_entry **v, int *n, int *cap, const struct lism_cidr *c, __u8 value)
{
	for (int i = 0; i < *n; i++) {
		if ((*v)[i].key.prefixlen == c->prefixlen && !memcmp((*v)[i].key.addr, c->addr, 16)) {
			(*v)[i].value = value;
			return 0;
		}
	}
	return push(v, n, cap, c, value);
}

int lism_scope_entries(const struct lism_cidr *local, int n_local, const struct lism_cidr *exclude,
		       int n_exclude, int with_addrs, struct lism_scope_entry **out, int *n_out)
{
	static const char *const loopback[] = { "127.0.0.0/8", "::1/128" };
	struct lism_scope_entry *v = NULL;
	struct ifaddrs *ifa, *it;
	struct lism_cidr c;
	int err = 0, n = 0, cap = 0;

	for (size_t i = 0; i < sizeof(loopback) / sizeof(loopback[0]) && !err; i++)
		err = lism_parse_cidr(loopback[i], &c) ? -EINVAL : push_unique(&v, &n, &cap, &c, LISM_SCOPE_LOCAL);
	if (!err && with_addrs && getifaddrs(&ifa))
		err = -errno;
	else if (!err && with_addrs) {
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
			if (!lism_cidr_link_local(&c))
				err = push_unique(&v, &n, &cap, &c, LISM_SCOPE_LOCAL);
		}
		freeifaddrs(ifa);
	}
	for (int i = 0; i < n_local && !err; i++)
		err = push_unique(&v, &n, &cap, &local[i], LISM_SCOPE_LOCAL);
	/* last: an exclusion of the same prefix as a local entry replaces it */
	for (int i = 0; i < n_exclude && !err; i++)
		err = push_unique(&v, &n, &cap, &exclude[i], LISM_SCOPE_EXCLUDE);
	if (err) {
		free(v);
		return err;
	}
	*out = v;
	*n_out = n;
	return 0;
}

int lism_scope_read(int fd, struct lism_scope_entry **out, int *n_out)
{
	struct lism_scope_entry *v = NULL;
	struct lism_scope_key k, next, *prev = NULL;
	int n = 0, cap = 0, err = 0;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		struct lism_cidr c = { .prefixlen = next.prefixlen };
		__u8 value;

		k = next;
		prev = &k;
		/* an LPM lookup of a stored prefix finds that prefix itself */
		if (bpf_map_lookup_elem(fd, &k, &value)) {
			if (errno == ENOENT)
				continue; /* deleted meanwhile */
			err = -errno;
			break;
		}
		memcpy(c.addr, k.addr, 16);
		err = push(&v, &n, &cap, &c, value);
		if (err)
			break;
	}
	if (!err && errno != ENOENT)
		err = -errno;
	if (err) {
		free(v);
		return err;
	}
	*out = v;
	*n_out = n;
	return 0;
}

int lism_scope_fill(int fd, const struct lism_cidr *local, int n_local,
		    const struct lism_cidr *exclude, int n_exclude, int with_addrs, int *n_out)
{
	struct lism_scope_entry *v;
	int err, n;

	*n_out = 0;
	err = lism_scope_entries(local, n_local, exclude, n_exclude, with_addrs, &v, &n);
	if (err)
		return err;
	for (int i = 0; i < n && !err; i++) {
		if (bpf_map_update_elem(fd, &v[i].key, &v[i].value, BPF_ANY))
			err = -errno;
		else
			(*n_out)++;
	}
	free(v);
	return err;
}
