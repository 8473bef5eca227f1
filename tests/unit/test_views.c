// SPDX-License-Identifier: GPL-2.0-only
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "device.h"
#include "format.h"
#include "reason.h"

Test(format, bytes)
{
	static const struct {
		__u64 in;
		const char *out;
	} cases[] = {
		{ 0, "0 B" },           { 1023, "1023 B" },          { 1024, "1.0 KiB" },
		{ 1536, "1.5 KiB" },    { 1 << 20, "1.0 MiB" },      { 5ull << 30, "5.0 GiB" },
		{ ~0ull, "16.0 EiB" },
	};
	char buf[32];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		lism_fmt_bytes(cases[i].in, buf, sizeof(buf));
		cr_assert_str_eq(buf, cases[i].out);
	}
}

Test(reason, every_code_has_a_unique_name_and_text)
{
	for (unsigned int a = 0; a < LISM_R_MAX; a++) {
		if (LISM_REASON_RETIRED(a)) { /* never reused */
			cr_assert(!lism_reason_known(a));
			cr_assert_str_eq(lism_reason_name(a), "unknown");
			continue;
		}
		cr_assert(lism_reason_known(a), "code %u", a);
		cr_assert_str_neq(lism_reason_name(a), "unknown", "code %u", a);
		cr_assert_gt(strlen(lism_reason_text(a)), 5);
		cr_assert_eq(lism_reason_code(lism_reason_name(a)), (int)a);
		for (unsigned int b = a + 1; b < LISM_R_MAX; b++)
			if (lism_reason_known(b))
				cr_assert_str_neq(lism_reason_name(a), lism_reason_name(b));
	}
	cr_assert_str_eq(lism_reason_name(LISM_R_MAX), "unknown");
	cr_assert(!lism_reason_known(LISM_R_MAX));
	cr_assert_eq(lism_reason_code("no-such-reason"), -1);
}

Test(reason, codes_are_stable)
{
	/* ABI: pinned counters and events carry these numbers. */
	cr_assert_eq(LISM_R_PEER_NO_LISM, 2);
	cr_assert_eq(LISM_R_MAX_DMB, 4);
	cr_assert_eq(LISM_R_BLOCKING, 6);
	cr_assert_str_eq(lism_reason_name(LISM_R_MAX_DMB), "max-dmb");
}

Test(device, gid_format)
{
	const __u8 gid[16] = { 0, 1, 2, 3, 4, 5, 6, 7, 0xf8, 0xf9, 0xfa, 0xfb, 0xfc, 0xfd, 0xfe, 0xff };
	char out[34];

	lism_gid_format(gid, out);
	cr_assert_str_eq(out, "0001020304050607-f8f9fafbfcfdfeff");
}

Test(device, gids_are_random)
{
	__u8 a[16], b[16];

	cr_assert_eq(lism_gid_generate(a), 0);
	cr_assert_eq(lism_gid_generate(b), 0);
	cr_assert_arr_neq(a, b, 16);
}

static void mounts_file(char *path, const char *content)
{
	int fd;

	strcpy(path, "/tmp/lism-mounts-XXXXXX");
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
}

Test(cgroup, finds_the_cgroup2_mount_on_hybrid_and_unified_hosts)
{
	char path[64], out[256];

	mounts_file(path, "tmpfs /sys/fs/cgroup tmpfs rw 0 0\n"
			  "cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n"
			  "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n");
	cr_assert_eq(lism_cgroup2_mount(path, out, sizeof(out)), 0);
	cr_assert_str_eq(out, "/sys/fs/cgroup/unified");
	unlink(path);
	mounts_file(path, "cgroup2 /sys/fs/cgroup cgroup2 rw,nsdelegate 0 0\n");
	cr_assert_eq(lism_cgroup2_mount(path, out, sizeof(out)), 0);
	cr_assert_str_eq(out, "/sys/fs/cgroup");
	unlink(path);
	mounts_file(path, "proc /proc proc rw 0 0\n");
	cr_assert_eq(lism_cgroup2_mount(path, out, sizeof(out)), -ENOENT);
	unlink(path);
}
