/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The pinned layout of one lism instance (docs/maps.md):
 *   DIR/<map name>      every map, with BTF (bpftool map dump pinned ...)
 *   DIR/prog_sockops    the handshake program
 *   DIR/prog_msg        the data path program
 *   DIR/prog_sender_start  the sender join timer's program (its id shows which one runs)
 *   DIR/link_sockops    the cgroup attachment
 * and each optional feature's, when it runs (DIR/features says which):
 *   DIR/prog_iter_socks the sockets iterator behind `lism conns`
 *   DIR/prog_destroy    the tcp_destroy_sock backstop program (read for its recursion misses)
 *   DIR/link_destroy    the tcp_destroy_sock backstop (frees a DMB whose close went unseen)
 *   DIR/prog_sweep_start the sweep timer's program
 *   DIR/prog_exec_set, DIR/prog_exec_get, DIR/link_exec_set, DIR/link_exec_get
 *                       lism exec's socket options and their cgroup attachments
 * DIR is --pin-path; several instances can coexist in different DIRs.
 */
#ifndef LISM_PINS_H
#define LISM_PINS_H

#include <linux/types.h>
#include <stddef.h>

#include "error.h"

#define LISM_PIN_PROG_SOCKOPS "prog_sockops"
#define LISM_PIN_PROG_MSG "prog_msg"
#define LISM_PIN_PROG_ITER "prog_iter_socks"
#define LISM_PIN_PROG_DESTROY "prog_destroy"
#define LISM_PIN_PROG_SENDER "prog_sender_start"
#define LISM_PIN_PROG_SWEEP "prog_sweep_start"
#define LISM_PIN_LINK_SOCKOPS "link_sockops"
#define LISM_PIN_LINK_DESTROY "link_destroy"
#define LISM_PIN_PROG_EXEC_SET "prog_exec_set"
#define LISM_PIN_PROG_EXEC_GET "prog_exec_get"
#define LISM_PIN_LINK_EXEC_SET "link_exec_set"
#define LISM_PIN_LINK_EXEC_GET "link_exec_get"

/* "@dir/@name" into @out; -ENAMETOOLONG if it does not fit. */
int lism_pin_join(char *out, size_t outlen, const char *dir, const char *name);

/* bpf_obj_get() of "@dir/@name": an fd, or -errno (-ENOENT: not pinned). */
int lism_pin_open(const char *dir, const char *name);

/* The id of the map pinned as "@dir/@name" (0 and -errno if it cannot be read). */
int lism_pin_map_id(const char *dir, const char *name, __u32 *id);

/* Whether @path is on a BPF filesystem (1), not (0), or -errno. */
int lism_is_bpffs(const char *path);

/* Nearest existing ancestor directory of @path (itself if it exists). */
int lism_existing_ancestor(const char *path, char *out, size_t outlen);

/*
 * Unlink lism's own pins in @dir (the names above and every map of the
 * object), then the directory if that left it empty.  Other files are
 * never touched.  A missing directory is fine.
 */
int lism_pins_remove(const char *dir);

/* Whether @dir holds nothing (1), something (0), or -errno. */
int lism_dir_is_empty(const char *dir);

/* Whether @path is a mount point (1), not (0), or -errno. */
int lism_is_mount_point(const char *path);

/*
 * Exclusive lock on the pin directory against a concurrent load, unload,
 * set or fast-path change; fd or -errno.  Waits up to
 * LISM_PIN_LOCK_WAIT_MS for a holder: the short ones (the daemon's
 * fast-path rescan, a set) must not make another command fail, the long
 * ones (a load, an unload's wait) still do (-EWOULDBLOCK).
 */
#define LISM_PIN_LOCK_WAIT_MS 1000
int lism_pin_lock(const char *dir);
/* The same, without waiting: -EWOULDBLOCK while it is held. */
int lism_pin_trylock(const char *dir);
/* Say why lism_pin_lock(@dir) failed with @err: another lism holds it, or the error itself. */
void lism_pin_lock_failed(const char *dir, int err);
/* The same said in @e (class STATE); returns @err. */
int lism_pin_lock_fail(struct lism_error *e, const char *dir, int err);
/* flock(LOCK_EX | LOCK_NB) on @path opened O_RDONLY | @oflags; the fd (close it to unlock) or -errno (-EWOULDBLOCK: held). */
int lism_flock(const char *path, int oflags);

#endif
