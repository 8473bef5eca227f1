// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <linux/magic.h>
#include <mntent.h>
#include <stdio.h>
#include <string.h>
#include <sys/vfs.h>

#include "cgroup.h"

int lism_cgroup2_mount(const char *mounts, char *out, size_t outlen)
{
	struct mntent *m;
	int ret = -ENOENT;
	FILE *f;

	f = setmntent(mounts, "r");
	if (!f)
		return -errno;
	while ((m = getmntent(f))) {
		if (strcmp(m->mnt_type, "cgroup2"))
			continue;
		if (strlen(m->mnt_dir) >= outlen) {
			ret = -ENAMETOOLONG;
			break;
		}
		strcpy(out, m->mnt_dir);
		ret = 0;
		break;
	}
	endmntent(f);
	return ret;
}

int lism_is_cgroup2(const char *path)
{
	struct statfs st;

	if (statfs(path, &st))
		return -errno;
	return st.f_type == CGROUP2_SUPER_MAGIC;
}
