/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Unloading an instance, the library call under `lism unload` and `lism
 * run --unload-on-exit`.  Rule: the device goes off (draining) first, then
 * the call waits until no socket is left in the shortcut map and no DMB in
 * use, and only then detaches and unpins everything: removing the maps
 * earlier would make the kernel drop what the sockets have not read yet.
 * Prints nothing; 0 or -errno with what failed in a struct lism_error.
 */
#ifndef LISM_UNLOAD_H
#define LISM_UNLOAD_H

#include "error.h"

#define LISM_DEFAULT_UNLOAD_TIMEOUT 30

struct lism_unload_cfg {
	unsigned int timeout_s; /* how long to wait for the sockets to leave */
	int force;              /* then remove it anyway (their unread bytes are lost) */
	/* every few seconds of the wait, if set: how many sockets and DMBs are left */
	void (*waiting)(void *ctx, unsigned int sockets, long long dmbs);
	void *ctx;
};

struct lism_unload_info {
	int unfinished;          /* the pins were a load that did not finish: removed */
	int forced;              /* --force removed it with sockets still in the shortcut */
	unsigned int forced_sockets;
};

/*
 * Unload the instance at @pin_path.  -EBUSY (class BUSY) when sockets are
 * still in the shortcut after the timeout without @force: the instance
 * then stays loaded but inactive (draining).
 */
int lism_unload(const char *pin_path, const struct lism_unload_cfg *cfg, struct lism_unload_info *info,
		struct lism_error *e);

#endif
