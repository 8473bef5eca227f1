// SPDX-License-Identifier: GPL-2.0-only
#include <bpf/bpf.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <errno.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "log.h"
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

int lism_pin_open(const char *dir, const char *name)
{
	char path[4096];
	int fd;

	if (lism_pin_join(path, sizeof(path), dir, name))
		return -ENAMETOOLONG;
	fd = bpf_obj_get(path);
	return fd < 0 ? -errno : fd;
}

int lism_pin_map_id(const char *dir, const char *name, __u32 *id)
{
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info);
	int fd = lism_pin_open(dir, name), err = 0;

	*id = 0;
	if (fd < 0)
		return fd;
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		err = -errno;
	close(fd);
	*id = info.id;
	return err;
}

/* Every name lism pins: the core object's maps, the programs and the links of every object. */
static const char *const pin_names[] = {
	"device", "usage", "dmbs", "dmb_owner", "dmb_free", "shortcut", "socks", "stats",
	"reasons", "sizes", "scope", "ports", "churn", "events", "event_readers", "sweep",
	"senders", "sender_queue", "sender_leaves", "sender_join", "features", "exec_marks", "exec_listeners", "exec_lease",
	LISM_PIN_PROG_SOCKOPS, LISM_PIN_PROG_MSG, LISM_PIN_PROG_ITER, LISM_PIN_PROG_DESTROY,
	LISM_PIN_PROG_SENDER, LISM_PIN_PROG_SWEEP, LISM_PIN_PROG_EXEC_SET, LISM_PIN_PROG_EXEC_GET,
	LISM_PIN_LINK_SOCKOPS, LISM_PIN_LINK_DESTROY, LISM_PIN_LINK_EXEC_SET, LISM_PIN_LINK_EXEC_GET,
};

int lism_dir_is_empty(const char *dir)
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

static int unlink_pins(const char *dir, const char *const *names, size_t n)
{
	char path[4096], next[4096 + 8];
	int err = 0;

	for (size_t i = 0; i < n; i++) {
		if (lism_pin_join(path, sizeof(path), dir, names[i]))
			return -ENAMETOOLONG;
		if (unlink(path) && errno != ENOENT)
			err = -errno;
		/* a replacement pinned beside it, not renamed over it yet (optional.c) */
		snprintf(next, sizeof(next), "%s_next", path); /* bpffs names take no dot */
		unlink(next);
	}
	return err;
}

int lism_pins_remove(const char *dir)
{
	int err = unlink_pins(dir, pin_names, sizeof(pin_names) / sizeof(pin_names[0]));

	if (rmdir(dir) && errno != ENOENT && errno != ENOTEMPTY)
		err = -errno;
	return err;
}

int lism_is_mount_point(const char *path)
{
	char parent[4096];
	struct stat a, b;
	int n;

	n = snprintf(parent, sizeof(parent), "%s/..", path);
	if (n < 0 || (size_t)n >= sizeof(parent))
		return -ENAMETOOLONG;
	if (stat(path, &a) || stat(parent, &b))
		return -errno;
	return a.st_dev != b.st_dev || a.st_ino == b.st_ino;
}

int lism_pin_lock(const char *dir)
{
	int fd = lism_pin_trylock(dir);

	for (int waited = 0; fd == -EWOULDBLOCK && waited < LISM_PIN_LOCK_WAIT_MS; waited += 10) {
		usleep(10 * 1000);
		fd = lism_pin_trylock(dir);
	}
	return fd;
}

int lism_pin_trylock(const char *dir)
{
	return lism_flock(dir, O_DIRECTORY);
}

int lism_pin_lock_fail(struct lism_error *e, const char *dir, int err)
{
	if (err == -EWOULDBLOCK) {
		lism_fail(e, LISM_EXIT_STATE, err, "another lism is loading or unloading at %s", dir);
		lism_fail_hint(e, "try again once it is done");
	} else {
		lism_fail(e, LISM_EXIT_STATE, err, "locking the pin directory %s failed: %s", dir, strerror(-err));
	}
	return err;
}

void lism_pin_lock_failed(const char *dir, int err)
{
	struct lism_error e = { 0 };

	lism_pin_lock_fail(&e, dir, err);
	lism_error_print(&e);
}

int lism_flock(const char *path, int oflags)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | oflags);

	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}
