// SPDX-License-Identifier: GPL-2.0-only
/*
 * lism xdp: the veth fast path's control plane.
 *
 * SKB (generic) mode, not native: a pod's packets are built by its own
 * stack with checksum offload (CHECKSUM_PARTIAL: the TCP/UDP checksum is
 * still to be computed).  Native XDP on a veth turns the skb into a frame
 * and a redirect loses that state, so the receiving pod drops every
 * redirected segment as a checksum error (measured: UdpInCsumErrors).  In
 * SKB mode the redirected skb keeps it, and the destination veth needs no
 * XDP or GRO on its pod side.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fnmatch.h>
#include <json-c/json.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xdp/libxdp.h>

#include "device.h"
#include "fastpath.h"
#include "feature.h"
#include "load_log.h"
#include "log.h"
#include "objects.h"
#include "pins.h"
#include "fastpath.skel.h"

const void *lism_fastpath_elf(size_t *size)
{
	return lism_fastpath_bpf__elf_bytes(size);
}

#define REFRESH_MS 10000 /* conntrack entries with less left go through the stack */
#define BE_LIBERAL "/proc/sys/net/netfilter/nf_conntrack_tcp_be_liberal"

static const char *const stat_names[LISM_XDP_STAT_MAX] = {
	[LISM_XDP_FORWARDED] = "forwarded",   [LISM_XDP_FWD_BYTES] = "forwarded_bytes",
	[LISM_XDP_NOT_IP] = "not_ip",         [LISM_XDP_NO_ROUTE] = "no_route",
	[LISM_XDP_TOO_BIG] = "too_big",
	[LISM_XDP_NOT_LOCAL] = "not_local",   [LISM_XDP_NO_CT] = "no_ct",
	[LISM_XDP_CT_STATE] = "ct_state",     [LISM_XDP_NAT] = "nat",
	[LISM_XDP_TCP_FLAGS] = "tcp_flags",   [LISM_XDP_TCP_STRICT] = "tcp_strict",
	[LISM_XDP_REFRESH] = "ct_refresh",
};

const char *lism_xdp_stat_name(int stat)
{
	if (stat < 0 || stat >= LISM_XDP_STAT_MAX || !stat_names[stat])
		return "?";
	return stat_names[stat];
}

/* Whether the program @prog_fd uses the map with id @ports_id (ours, not another instance's). */
static int prog_uses_map(int prog_fd, __u32 ports_id)
{
	struct bpf_prog_info info = {};
	__u32 ids[16], len = sizeof(info);

	info.nr_map_ids = sizeof(ids) / sizeof(ids[0]);
	info.map_ids = (__u64)(unsigned long)ids;
	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len))
		return 0;
	for (__u32 i = 0; i < info.nr_map_ids && i < sizeof(ids) / sizeof(ids[0]); i++)
		if (ids[i] == ports_id)
			return 1;
	return 0;
}

/*
 * Whether our program is attached to @ifindex: 1 (*@prog set; the caller
 * closes *@mp), 0, or -errno when the attached programs cannot be read.
 */
static int find_ours(int ifindex, __u32 ports_id, struct xdp_multiprog **mp,
		     struct xdp_program **prog)
{
	struct xdp_program *p = NULL;
	int err;

	*prog = NULL;
	*mp = xdp_multiprog__get_from_ifindex(ifindex);
	err = libxdp_get_error(*mp);
	if (err) {
		*mp = NULL;
		return err == -ENOENT ? 0 : err; /* -ENOENT: no XDP program at all */
	}
	if (xdp_multiprog__is_legacy(*mp)) {
		p = xdp_multiprog__main_prog(*mp);
		if (p && !strcmp(xdp_program__name(p), LISM_XDP_PROG_NAME) &&
		    prog_uses_map(xdp_program__fd(p), ports_id))
			*prog = p;
		return !!*prog;
	}
	while ((p = xdp_multiprog__next_prog(p, *mp)))
		if (!strcmp(xdp_program__name(p), LISM_XDP_PROG_NAME) &&
		    prog_uses_map(xdp_program__fd(p), ports_id)) {
			*prog = p;
			return 1;
		}
	return 0;
}

static void inspect_failed(const char *ifname, int err)
{
	lism_err("reading the XDP programs of %s failed: %s", ifname, strerror(-err));
	if (err == -EPERM)
		lism_hint("libxdp reads attached programs by id, which the kernel allows only with "
			  "CAP_SYS_ADMIN: the fast path needs it (docs/kubernetes.md)");
}

typedef int (*attached_fn)(const struct if_nameindex *i, struct xdp_multiprog *mp,
			   struct xdp_program *p, void *ctx);

/*
 * Call @fn for every interface of this namespace our program (the one using
 * @pin_path's ports map) is attached to.  Interfaces whose programs cannot
 * be read are reported and skipped.  Returns the first error (of reading
 * or of @fn), or the number of such interfaces.
 */
static int for_each_attached(const char *pin_path, attached_fn fn, void *ctx)
{
	struct if_nameindex *ifs, *i;
	int n = 0, first_err = 0, err;
	__u32 ports_id;

	err = lism_pin_map_id(pin_path, LISM_PIN_XDP_PORTS, &ports_id);
	if (err)
		return err;
	ifs = if_nameindex();
	if (!ifs)
		return -errno;
	for (i = ifs; i->if_index; i++) {
		struct xdp_multiprog *mp;
		struct xdp_program *p;

		err = find_ours(i->if_index, ports_id, &mp, &p);
		if (err < 0)
			inspect_failed(i->if_name, err);
		else if (err && !(err = fn(i, mp, p, ctx)))
			n++;
		first_err = first_err ? first_err : err < 0 ? err : 0;
		xdp_multiprog__close(mp);
	}
	if_freenameindex(ifs);
	return first_err ? first_err : n;
}

static int name_matches(const char *name, const char *globs)
{
	const char *p = globs;

	while (*p) {
		size_t len = strcspn(p, ",");
		char glob[IF_NAMESIZE * 4];

		if (len && len < sizeof(glob)) {
			memcpy(glob, p, len);
			glob[len] = '\0';
			if (!fnmatch(glob, name, 0))
				return 1;
		}
		p += len + (p[len] == ',');
	}
	return 0;
}

/* The fast path's maps, in the order of their pins (lism_fastpath_pins). */

static void skel_maps(struct lism_fastpath_bpf *skel, struct bpf_map *maps[LISM_FASTPATH_PINS])
{
	maps[0] = skel->maps.xdp_ports;
	maps[1] = skel->maps.xdp_stats;
	maps[2] = skel->maps.xdp_config;
}

/*
 * Reuse the maps already pinned (explicitly: libbpf 1.1's pinned-map check
 * rejects devmaps, whose flags the kernel changes at creation).
 */
static int reuse_pins(struct lism_fastpath_bpf *skel, const char *pin_path)
{
	struct bpf_map *maps[LISM_FASTPATH_PINS];
	int fd, err;

	skel_maps(skel, maps);
	for (int i = 0; i < LISM_FASTPATH_PINS; i++) {
		fd = lism_pin_open(pin_path, lism_fastpath_pins[i]);
		if (fd == -ENOENT)
			continue;
		if (fd < 0)
			return fd;
		err = bpf_map__reuse_fd(maps[i], fd);
		close(fd);
		if (err)
			return err;
	}
	return 0;
}

/* Pin the maps the first attach created. */
static int pin_new(struct lism_fastpath_bpf *skel, const char *pin_path)
{
	struct bpf_map *maps[LISM_FASTPATH_PINS];
	char path[PATH_MAX];
	int fd;

	skel_maps(skel, maps);
	for (int i = 0; i < LISM_FASTPATH_PINS; i++) {
		fd = lism_pin_open(pin_path, lism_fastpath_pins[i]);
		if (fd >= 0) {
			close(fd);
			continue;
		}
		if (lism_pin_join(path, sizeof(path), pin_path, lism_fastpath_pins[i]))
			return -ENAMETOOLONG;
		if (bpf_obj_pin(bpf_map__fd(maps[i]), path))
			return -errno;
	}
	return 0;
}

static int libxdp_log(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	return lism_log_verbose() ? vfprintf(stderr, fmt, ap) : 0;
}

/* Load a copy of the program (reusing the pinned maps) and attach it to @ifindex. */
static int attach_one(const char *pin_path, int ifindex, const char *ifname)
{
	struct lism_load_log log = { 0 };
	struct lism_fastpath_bpf *skel;
	struct xdp_program *prog = NULL;
	char msg[256];
	int err;

	/*
	 * libxdp first probes whether its dispatcher can run (freplace); where
	 * it cannot it says so and attaches the program alone.  Our own
	 * messages report what finally happened.
	 */
	libxdp_set_print(libxdp_log);
	lism_log_quiet(1);
	skel = lism_fastpath_bpf__open();
	if (!skel) {
		err = -errno;
		lism_err("opening the fast path program failed: %s", strerror(-err));
		goto cleanup;
	}
	skel->rodata->lism_test_reject = lism_test_reject(LISM_F_FASTPATH);
	err = reuse_pins(skel, pin_path);
	if (err) {
		lism_err("reusing the fast path's maps at %s failed: %s", pin_path, strerror(-err));
		goto cleanup;
	}
	DECLARE_LIBXDP_OPTS(xdp_program_opts, opts, .obj = skel->obj,
			    .prog_name = LISM_XDP_PROG_NAME);
	prog = xdp_program__create(&opts);
	err = libxdp_get_error(prog);
	if (err) {
		prog = NULL;
		libxdp_strerror(err, msg, sizeof(msg));
		lism_err("preparing the fast path program failed: %s", msg);
		goto cleanup;
	}
	/* libxdp loads the program here: a refusal is said in a few lines (load_log.h) */
	err = lism_load_log_begin(&log);
	if (!err) {
		err = xdp_program__attach(prog, ifindex, XDP_MODE_SKB, 0);
		lism_load_log_end(&log);
	}
	if (err) {
		struct lism_refusal r;

		libxdp_strerror(err, msg, sizeof(msg));
		lism_load_log_refusal(&log, &r);
		if (r.verifier) {
			lism_err("attaching the fast path to %s failed: the verifier refused %s (%s)", ifname,
				 r.prog, lism_feature_info(LISM_F_FASTPATH)->name);
			lism_refusal_print(stderr, &r);
			lism_hint("without it %s; 'lism probe' shows what this kernel offers",
				  lism_feature_info(LISM_F_FASTPATH)->without);
		} else {
			lism_err("attaching the fast path to %s failed: %s", ifname, msg);
		}
		if (err == -EEXIST || err == -EBUSY)
			lism_hint("%s has an XDP program in another mode or not loaded through libxdp; "
				  "lism runs in SKB mode next to libxdp-managed programs only", ifname);
		goto cleanup;
	}
	err = pin_new(skel, pin_path);
	if (err) {
		lism_err("pinning the fast path's maps at %s failed: %s", pin_path, strerror(-err));
		xdp_program__detach(prog, ifindex, XDP_MODE_SKB, 0);
	}
cleanup:
	lism_load_log_free(&log);
	xdp_program__close(prog);
	lism_fastpath_bpf__destroy(skel);
	lism_log_quiet(0);
	return err;
}

/* TCP may skip conntrack only when it accepts out-of-window segments. */
static int write_config(const char *pin_path)
{
	struct lism_xdp_config cfg = { .refresh_ms = REFRESH_MS };
	FILE *f = fopen(BE_LIBERAL, "r");
	__u32 zero = 0;
	int fd, err = 0, v = 0;

	if (f) {
		if (fscanf(f, "%d", &v) == 1 && v)
			cfg.flags |= LISM_XDP_F_TCP;
		fclose(f);
	}
	fd = lism_pin_open(pin_path, LISM_PIN_XDP_CONFIG);
	if (fd < 0)
		return fd;
	if (bpf_map_update_elem(fd, &zero, &cfg, BPF_ANY))
		err = -errno;
	close(fd);
	return err;
}

int lism_fastpath_sync(const char *pin_path, const char *ifaces, int log)
{
	struct if_nameindex *ifs = if_nameindex(), *i;
	int ports = -1, attached = 0, first_err = 0, err;
	__u32 ports_id;

	if (!ifs)
		return -errno;
	lism_pin_map_id(pin_path, LISM_PIN_XDP_PORTS, &ports_id); /* 0 before the first attach: matches nothing */
	for (i = ifs; i->if_index; i++) {
		struct xdp_multiprog *mp = NULL;
		struct xdp_program *p;
		__u32 idx = i->if_index;
		int ours;

		if (!name_matches(i->if_name, ifaces))
			continue;
		ours = find_ours(i->if_index, ports_id, &mp, &p);
		xdp_multiprog__close(mp);
		if (ours < 0) {
			inspect_failed(i->if_name, ours);
			first_err = first_err ? first_err : ours;
			continue;
		}
		if (!ours) {
			err = attach_one(pin_path, i->if_index, i->if_name);
			if (err) {
				first_err = first_err ? first_err : err;
				continue;
			}
			attached++;
			if (log)
				printf("lism: fast path attached to %s\n", i->if_name);
		}
		if (ports < 0) {
			ports = lism_pin_open(pin_path, LISM_PIN_XDP_PORTS);
			if (ports < 0) {
				first_err = first_err ? first_err : ports;
				break;
			}
		}
		/* A redirect target: a packet routed to this veth may skip the stack. */
		if (bpf_map_update_elem(ports, &idx, &idx, BPF_ANY)) {
			err = -errno;
			lism_err("adding %s to the fast path's ports failed: %s", i->if_name,
				 strerror(-err));
			first_err = first_err ? first_err : err;
		}
	}
	if_freenameindex(ifs);
	if (ports >= 0) {
		close(ports);
		err = write_config(pin_path);
		if (err) {
			lism_err("writing the fast path's configuration failed: %s", strerror(-err));
			first_err = first_err ? first_err : err;
		}
	}
	return first_err ? first_err : attached;
}

static int detach_one(const struct if_nameindex *i, struct xdp_multiprog *mp, struct xdp_program *p,
		      void *ctx)
{
	int err = xdp_program__detach(p, i->if_index, xdp_multiprog__attach_mode(mp), 0);

	(void)ctx;
	if (err)
		lism_err("detaching the fast path from %s failed: %s", i->if_name, strerror(-err));
	return err;
}

int lism_fastpath_remove(const char *pin_path)
{
	int err = for_each_attached(pin_path, detach_one, NULL);

	if (err == -ENOENT)
		return 0; /* never set up here */
	if (err < 0)
		return err; /* keep the maps: a program still uses them */
	return lism_fastpath_pins_remove(pin_path);
}

int lism_fastpath_stats(const char *pin_path, __u64 out[LISM_XDP_STAT_MAX])
{
	int fd = lism_pin_open(pin_path, LISM_PIN_XDP_STATS), err;

	if (fd < 0)
		return fd;
	err = lism_percpu_sum(fd, out, LISM_XDP_STAT_MAX);
	close(fd);
	return err;
}

struct port_list {
	FILE *f;
	struct json_object *arr;
	int n;
};

static int list_one(const struct if_nameindex *i, struct xdp_multiprog *mp, struct xdp_program *p,
		    void *ctx)
{
	struct port_list *l = ctx;

	(void)mp;
	(void)p;
	if (l->f)
		fprintf(l->f, "%s%s", l->n++ ? " " : "  attached to: ", i->if_name);
	if (l->arr)
		json_object_array_add(l->arr, json_object_new_string(i->if_name));
	return 0;
}

/* Interfaces our program is attached to, into a JSON array and/or @f. */
static void list_ports(const char *pin_path, FILE *f, struct json_object *arr)
{
	struct port_list l = { .f = f, .arr = arr };

	for_each_attached(pin_path, list_one, &l);
	if (f)
		fprintf(f, l.n ? "\n" : "  attached to no interface\n");
}

static int xdp_status(const struct lism_opts *o)
{
	__u64 st[LISM_XDP_STAT_MAX];
	struct lism_xdp_config cfg = {};
	__u32 zero = 0;
	int err, fd;

	err = lism_fastpath_stats(o->pin_path, st);
	if (err) {
		if (err == -ENOENT) {
			lism_err("the fast path is not set up at %s", o->pin_path);
			lism_hint("attach it with 'lism xdp attach --iface GLOB'");
			return LISM_EXIT_STATE;
		}
		lism_err("reading the fast path counters failed: %s", strerror(-err));
		return LISM_EXIT_FAIL;
	}
	fd = lism_pin_open(o->pin_path, LISM_PIN_XDP_CONFIG);
	if (fd >= 0) {
		bpf_map_lookup_elem(fd, &zero, &cfg);
		close(fd);
	}
	if (o->json) {
		struct json_object *j = json_object_new_object(), *c = json_object_new_object();
		struct json_object *arr = json_object_new_array();

		list_ports(o->pin_path, NULL, arr);
		json_object_object_add(j, "interfaces", arr);
		json_object_object_add(j, "tcp", json_object_new_boolean(cfg.flags & LISM_XDP_F_TCP));
		json_object_object_add(j, "refresh_ms", json_object_new_uint64(cfg.refresh_ms));
		for (int k = 0; k < LISM_XDP_STAT_MAX; k++)
			json_object_object_add(c, lism_xdp_stat_name(k), json_object_new_uint64(st[k]));
		json_object_object_add(j, "counters", c);
		puts(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN));
		json_object_put(j);
		return LISM_EXIT_OK;
	}
	printf("veth fast path (XDP, SKB mode), maps at %s\n", o->pin_path);
	list_ports(o->pin_path, stdout, NULL);
	printf("  TCP: %s\n", cfg.flags & LISM_XDP_F_TCP ?
				     "established segments skip the stack (conntrack is liberal)" :
				     "through the stack (conntrack tracks windows strictly)");
	printf("  %-40s %llu packets, %llu bytes\n", "forwarded to the destination veth",
	       (unsigned long long)st[LISM_XDP_FORWARDED], (unsigned long long)st[LISM_XDP_FWD_BYTES]);
	printf("  left to the stack:\n");
	for (int k = LISM_XDP_NOT_IP; k < LISM_XDP_STAT_MAX; k++)
		printf("    %-38s %llu\n", lism_xdp_stat_name(k), (unsigned long long)st[k]);
	return LISM_EXIT_OK;
}

int lism_cmd_xdp(const struct lism_opts *o)
{
	int err, lockfd;

	if (geteuid() != 0 && o->xdp_action != LISM_XDP_STATUS) {
		lism_err("must run as root (CAP_BPF, CAP_NET_ADMIN)");
		return LISM_EXIT_ENV;
	}
	switch (o->xdp_action) {
	case LISM_XDP_ATTACH:
		if (mkdir(o->pin_path, 0700) && errno != EEXIST) {
			lism_err("cannot create --pin-path %s: %s", o->pin_path, strerror(errno));
			return LISM_EXIT_ENV;
		}
		if (lism_is_bpffs(o->pin_path) != 1) {
			lism_err("--pin-path %s is not on a BPF filesystem", o->pin_path);
			lism_hint("mount it with 'lism mount-bpffs'");
			return LISM_EXIT_ENV;
		}
		lockfd = lism_pin_lock(o->pin_path); /* not between an unload's detach and its unlink */
		if (lockfd < 0) {
			lism_pin_lock_failed(o->pin_path, lockfd);
			return LISM_EXIT_STATE;
		}
		err = lism_fastpath_sync(o->pin_path, o->xdp_ifaces, 1);
		close(lockfd);
		if (err < 0)
			return LISM_EXIT_FAIL;
		if (!err)
			printf("lism: no new interface matches '%s'\n", o->xdp_ifaces);
		return LISM_EXIT_OK;
	case LISM_XDP_DETACH:
		lockfd = lism_pin_lock(o->pin_path);
		if (lockfd < 0) {
			lism_pin_lock_failed(o->pin_path, lockfd);
			return LISM_EXIT_STATE;
		}
		err = lism_fastpath_remove(o->pin_path);
		close(lockfd);
		if (err) {
			lism_err("removing the fast path failed: %s", strerror(-err));
			return LISM_EXIT_FAIL;
		}
		printf("lism: fast path detached\n");
		return LISM_EXIT_OK;
	case LISM_XDP_STATUS:
	default:
		return xdp_status(o);
	}
}
