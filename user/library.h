/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * liblism.so, the library lism exec preloads (docs/exec.md): where this
 * lism finds it, and its copy beside a device socket, where pods that
 * mount the socket's directory preload it from (docs/kubernetes.md).
 */
#ifndef LISM_LIBRARY_H
#define LISM_LIBRARY_H

#include <stddef.h>

/* make install's directory for it; the Makefile sets it from PREFIX */
#ifndef LISM_LIBDIR
#define LISM_LIBDIR "/usr/local/lib/lism"
#endif

#define LISM_LIBRARY_NAME "liblism.so"

/*
 * The library's path in @out: $LISM_LIBRARY (an absolute path), else
 * beside this binary (a build tree), else ../lib/lism beside it (make
 * install, the image's /usr/sbin and /usr/lib/lism), else LISM_LIBDIR.
 * 0, or -ENOENT if none is readable; prints nothing.
 */
int lism_library_find(char *out, size_t len);

/*
 * Copy the library at @lib to @dir/liblism.so (mode 0644): written to a
 * temporary file in @dir, synced, then renamed over the old one, so that a
 * process that maps the old one keeps its inode whole and one that opens
 * it sees either file complete.  The copy's path in @out.  0 or -errno
 * (nothing is left behind); prints nothing.
 */
int lism_library_publish(const char *lib, const char *dir, char *out, size_t len);

#endif
