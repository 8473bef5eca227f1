// SPDX-License-Identifier: GPL-2.0-only
#include <dirent.h>
#include <errno.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "pins.h"

int lism_pin_join(char *out, size_t outlen, const char *dir, const char *name)
{
	int n = snprintf(out, outlen, "%s/%s", dir, name);

	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

int lism_is_bpffs(const char *path)
{
	struct statfs st;

	if (statfs(path, &st))
		return -errno;
	return st.f_type == BPF_FS_MAGIC;
}

int lism_existing_ancestor(const char *path, char *out, size_t outlen)
{
	struct stat st;
	char *slash;

	if (strlen(path) >= outlen)
		return -ENAMETOOLONG;
	strcpy(out, path);
	while (stat(out, &st)) {
		if (errno != ENOENT)
			return -errno;
		slash = strrchr(out, '/');
		if (!slash)
			return -ENOENT;
		if (slash == out)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
	return 0;
}

int lism_dir_empty(const char *dir)
{
	struct dirent *de;
	int empty = 1;
	DIR *d;

	d = opendir(dir);
	if (!d)
		return -errno;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			empty = 0;
			break;
		}
	closedir(d);
	return empty;
}

int lism_pins_remove(const char *dir)
{
	char path[4096];
	struct dirent *de;
	int err = 0;
	DIR *d;

	d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (lism_pin_join(path, sizeof(path), dir, de->d_name) || unlink(path))
			err = -errno;
	}
	closedir(d);
	if (rmdir(dir) && errno != ENOENT)
		err = -errno;
	return err;
}
