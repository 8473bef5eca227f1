// SPDX-License-Identifier: GPL-2.0-only
/* lism unload [--stay]: the library call of unload.h, said. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "commands.h"
#include "pins.h"
#include "signals.h"
#include "unload.h"

static void waiting(void *ctx, unsigned int sockets, long long dmbs)
{
	(void)ctx;
	printf("lism: waiting for %u sockets to leave the shortcut (%lld DMBs in use)...\n", sockets, dmbs);
	fflush(stdout);
}

int lism_unload_said(const char *pin_path, const struct lism_unload_cfg *cfg)
{
	struct lism_unload_cfg c = *cfg;
	struct lism_unload_info info;
	struct lism_error e = { 0 };
	int err;

	if (!c.waiting)
		c.waiting = waiting;
	err = lism_unload(pin_path, &c, &info, &e);
	if (info.forced)
		fprintf(stderr, "lism: --force: removing with %u sockets still in the shortcut; bytes they have "
				"not read yet are lost\n", info.forced_sockets);
	if (err)
		return lism_error_print(&e);
	if (info.unfinished)
		printf("lism: %s held the pins of a load that did not finish: removed them\n", pin_path);
	printf("lism: unloaded from %s\n", pin_path);
	return LISM_EXIT_OK;
}

/*
 * lism unload --stay, a cleanup DaemonSet's container: unload (nothing
 * pinned counts as done), then wait for SIGTERM, so the pod stays Running
 * and Ready once its node is clean.  A failed unload exits with its code
 * and the kubelet's restarts try again.
 */
static int unload_stay(const char *pin_path, const struct lism_unload_cfg *cfg)
{
	struct signalfd_siginfo si;
	int ret, sfd, empty = lism_dir_is_empty(pin_path);

	if (empty == 1 || empty == -ENOENT) {
		rmdir(pin_path); /* an empty directory is no instance: nothing to wait for */
		printf("lism: nothing is pinned at %s: nothing to remove\n", pin_path);
		ret = LISM_EXIT_OK;
	} else {
		ret = lism_unload_said(pin_path, cfg);
	}
	if (ret)
		return ret;
	sfd = lism_stop_signals_fd();
	if (sfd < 0) {
		fprintf(stderr, "lism: signalfd failed: %s\n", strerror(-sfd));
		return LISM_EXIT_FAIL;
	}
	printf("lism: done; staying until stopped (--stay)\n");
	fflush(stdout);
	while (read(sfd, &si, sizeof(si)) < 0 && errno == EINTR)
		;
	close(sfd);
	return LISM_EXIT_OK;
}

int lism_cmd_unload(const struct lism_common_opts *co, const struct lism_unload_opts *o)
{
	struct lism_unload_cfg cfg = { .timeout_s = o->timeout_s, .force = o->force };

	return o->stay ? unload_stay(co->pin_path, &cfg) : lism_unload_said(co->pin_path, &cfg);
}
