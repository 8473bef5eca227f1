// SPDX-License-Identifier: GPL-2.0-only
/*
 * lism exec: run a command with liblism.so preloaded (docs/exec.md), as
 * SMC's smc_run does with its library.  The library comes from
 * $LISM_LIBRARY, else beside this binary (a build tree), else LISM_LIBDIR
 * (make install).  Without a device, the command still runs: its pairs stay
 * on the kernel path with reason exec-no-device.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker.h"
#include "commands.h"
#include "library.h"
#include "lism/exec.h"

int lism_cmd_exec(const struct lism_common_opts *co, const struct lism_exec_opts *o)
{
	char lib[PATH_MAX], *preload;
	const char *old = getenv("LD_PRELOAD"), *device;

	(void)co;
	if (lism_library_find(lib, sizeof(lib))) {
		fprintf(stderr, "lism exec: liblism.so not found (%s, or beside lism, or in %s); "
				"set LISM_LIBRARY to its path\n", getenv("LISM_LIBRARY") ?: "no $LISM_LIBRARY",
			LISM_LIBDIR);
		return LISM_EXIT_FAIL;
	}
	if (o->device_socket[0] && setenv("LISM_DEVICE", o->device_socket, 1))
		return LISM_EXIT_FAIL;
	if (o->busy_poll_set) {
		char us[16];

		snprintf(us, sizeof(us), "%u", o->busy_poll_us);
		if (setenv("LISM_BUSY_POLL_US", us, 1))
			return LISM_EXIT_FAIL;
	}
	device = lism_device_path(getenv("LISM_DEVICE"));
	if (!lism_device_answers(device))
		fprintf(stderr, "lism exec: no lism device answers at %s: connections stay on the kernel path "
				"(reason exec-no-device); `lism run` serves one\n", device);
	if (old && *old) {
		if (asprintf(&preload, "%s:%s", lib, old) < 0)
			return LISM_EXIT_FAIL;
	} else {
		preload = lib;
	}
	if (setenv("LD_PRELOAD", preload, 1))
		return LISM_EXIT_FAIL;
	execvp(o->argv[0], o->argv);
	fprintf(stderr, "lism exec: %s: %s\n", o->argv[0], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
