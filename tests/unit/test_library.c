// SPDX-License-Identifier: GPL-2.0-only
/*
 * liblism.so's lookup and its copy beside the device socket (library.h):
 * the copy is whole, readable by all, swapped in as a new inode (a process
 * that holds the old one keeps its bytes), and a failure leaves nothing
 * behind.  On a temporary directory: no privileges.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "library.h"

static char dir[] = "/tmp/lism-library-test-XXXXXX";
static char src[PATH_MAX];

static void write_file(const char *path, char fill, size_t len)
{
	char *buf = malloc(len);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	cr_assert_not_null(buf);
	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	memset(buf, fill, len);
	cr_assert_eq(write(fd, buf, len), (ssize_t)len);
	close(fd);
	free(buf);
}

static void dir_up(void)
{
	cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	snprintf(src, sizeof(src), "%s/src.so", dir);
}

static void dir_down(void)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(library, .init = dir_up, .fini = dir_down);

/* Entries of @d other than . and .. */
static int entries(const char *d)
{
	DIR *h = opendir(d);
	struct dirent *e;
	int n = 0;

	cr_assert_not_null(h);
	while ((e = readdir(h)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(h);
	return n;
}

Test(library, a_copy_is_whole_readable_by_all_and_a_new_inode_each_time)
{
	char out[PATH_MAX], want[PATH_MAX + 16], pub[PATH_MAX];
	size_t len = 300 * 1024 + 17; /* several reads' worth, not a multiple of one */
	struct stat a, b;
	unsigned char *old;
	int fd;

	snprintf(pub, sizeof(pub), "%s/pub", dir);
	cr_assert_eq(mkdir(pub, 0755), 0);
	write_file(src, 'a', len);
	cr_assert_eq(lism_library_publish(src, pub, out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "%s/liblism.so", pub);
	cr_assert_str_eq(out, want);
	cr_assert_eq(stat(out, &a), 0);
	cr_assert_eq(a.st_size, (off_t)len);
	cr_assert_eq(a.st_mode & 07777, 0644, "mode %o", a.st_mode & 07777);
	cr_assert_eq(entries(pub), 1, "no temporary file left");

	/* a process maps it, then a new version is published */
	fd = open(out, O_RDONLY);
	cr_assert_geq(fd, 0);
	old = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	cr_assert_neq(old, MAP_FAILED);
	close(fd);
	write_file(src, 'b', len / 2);
	cr_assert_eq(lism_library_publish(src, pub, out, sizeof(out)), 0);
	cr_assert_eq(stat(out, &b), 0);
	cr_assert_neq(b.st_ino, a.st_ino, "replaced by a rename, not written in place");
	cr_assert_eq(b.st_size, (off_t)(len / 2));
	for (size_t i = 0; i < len; i += 4096)
		cr_assert_eq(old[i], 'a', "the mapped old copy changed at %zu", i);
	cr_assert_eq(old[len - 1], 'a');
	munmap(old, len);
	cr_assert_eq(entries(pub), 1);
}

Test(library, a_failure_leaves_nothing_behind_and_the_old_copy_stands)
{
	char out[PATH_MAX], pub[PATH_MAX], missing[PATH_MAX];
	struct stat a, b;

	snprintf(pub, sizeof(pub), "%s/pub", dir);
	cr_assert_eq(mkdir(pub, 0755), 0);
	write_file(src, 'a', 4096);
	cr_assert_eq(lism_library_publish(src, pub, out, sizeof(out)), 0);
	cr_assert_eq(stat(out, &a), 0);
	snprintf(missing, sizeof(missing), "%s/none.so", dir);
	cr_assert_eq(lism_library_publish(missing, pub, out, sizeof(out)), -ENOENT);
	cr_assert_eq(lism_library_publish(dir, pub, out, sizeof(out)), -EISDIR, "a directory is no library");
	cr_assert_eq(stat(out, &b), 0);
	cr_assert_eq(b.st_ino, a.st_ino, "the old copy stays");
	cr_assert_eq(entries(pub), 1, "no temporary file left");
	snprintf(missing, sizeof(missing), "%s/no-such-dir", dir);
	cr_assert_eq(lism_library_publish(src, missing, out, sizeof(out)), -ENOENT);
	cr_assert_eq(lism_library_publish(src, pub, out, 8), -ENAMETOOLONG);
}

Test(library, found_from_lism_library_first)
{
	char out[PATH_MAX], missing[PATH_MAX];

	write_file(src, 'a', 16);
	setenv("LISM_LIBRARY", src, 1);
	cr_assert_eq(lism_library_find(out, sizeof(out)), 0);
	cr_assert_str_eq(out, src);
	snprintf(missing, sizeof(missing), "%s/none.so", dir);
	setenv("LISM_LIBRARY", missing, 1);
	cr_assert_eq(lism_library_find(out, sizeof(out)), -ENOENT, "a named library that is not there is not looked for elsewhere");
	unsetenv("LISM_LIBRARY");
}
