// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "library.h"

static int readable(const char *path)
{
	return !access(path, R_OK);
}

int lism_library_find(char *out, size_t len)
{
	const char *env = getenv("LISM_LIBRARY");
	char exe[PATH_MAX];
	ssize_t n;
	char *slash;

	if (env && env[0] == '/') {
		snprintf(out, len, "%s", env);
		return readable(out) ? 0 : -ENOENT;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			if ((size_t)snprintf(out, len, "%s/" LISM_LIBRARY_NAME, exe) < len && readable(out))
				return 0;
			if ((size_t)snprintf(out, len, "%s/../lib/lism/" LISM_LIBRARY_NAME, exe) < len && readable(out))
				return 0;
		}
	}
	snprintf(out, len, "%s/" LISM_LIBRARY_NAME, LISM_LIBDIR);
	return readable(out) ? 0 : -ENOENT;
}

static int copy_fd(int in, int out)
{
	char buf[1 << 16];

	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf)), done = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n ? -errno : 0;
		while (done < n) {
			ssize_t w = write(out, buf + done, (size_t)(n - done));

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				return w ? -errno : -EIO;
			done += w;
		}
	}
}

int lism_library_publish(const char *lib, const char *dir, char *out, size_t len)
{
	char tmp[PATH_MAX];
	int in, fd, dfd, err;

	if ((size_t)snprintf(out, len, "%s/" LISM_LIBRARY_NAME, dir) >= len ||
	    (size_t)snprintf(tmp, sizeof(tmp), "%s/." LISM_LIBRARY_NAME ".XXXXXX", dir) >= sizeof(tmp))
		return -ENAMETOOLONG;
	in = open(lib, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		close(in);
		return err;
	}
	/*
	 * Never written in place: a process that maps the old file would see
	 * its code change under it (or SIGBUS past a truncation).  A rename
	 * swaps in a new inode whole; the old one lives while it is mapped.
	 */
	err = copy_fd(in, fd);
	if (!err && (fchmod(fd, 0644) || fsync(fd) || rename(tmp, out)))
		err = -errno;
	close(fd);
	close(in);
	if (err) {
		unlink(tmp);
		return err;
	}
	/* the rename itself, where the directory is on a disk (/run is usually a tmpfs) */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
}
