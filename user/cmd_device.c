// SPDX-License-Identifier: GPL-2.0-only
/*
 * lism device: lism exec's device alone, for an instance that `lism load`
 * loaded (make run starts it).  It serves while the instance stays pinned
 * and stops by itself once it is unloaded; unlike `lism run` it never loads
 * one.  A device that already answers at the socket is left alone.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "broker.h"
#include "commands.h"
#include "device.h"
#include "log.h"

/* Whether the instance is still pinned at @pin_path (its lease map: what the device writes). */
static int still_loaded(const char *pin_path)
{
	char path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/exec_lease", pin_path);
	return !access(path, F_OK);
}

int lism_cmd_device(const struct lism_common_opts *co, const struct lism_device_opts *o)
{
	struct timespec tick = { 1, 0 };
	struct lism_instance in;
	struct lism_broker *b;
	sigset_t stop;
	int err, sig = 0;

	if (lism_device_answers(o->device_socket)) {
		printf("lism: a device already serves at %s\n", o->device_socket);
		return LISM_EXIT_OK;
	}
	err = lism_instance_open(&in, co->pin_path);
	if (err) {
		lism_err("no lism instance at %s: %s", co->pin_path, strerror(-err));
		lism_hint("load it first ('lism load', or 'make run'), or run 'lism run', which is a device too");
		return LISM_EXIT_STATE;
	}
	err = lism_layout_check(&in);
	lism_instance_close(&in);
	if (err)
		return err;
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigprocmask(SIG_BLOCK, &stop, NULL);
	err = lism_broker_start(co->pin_path, o->device_socket, &b);
	if (err) {
		lism_err("lism exec's device cannot serve at %s: %s", o->device_socket, strerror(-err));
		return LISM_EXIT_FAIL;
	}
	printf("lism: lism exec's device serves at %s for the instance at %s\n", o->device_socket, co->pin_path);
	fflush(stdout);
	while (still_loaded(co->pin_path)) {
		sig = sigtimedwait(&stop, NULL, &tick);
		if (sig > 0)
			break;
	}
	lism_broker_stop(b);
	printf("lism: the device stops (%s)\n", sig > 0 ? strsignal(sig) : "the instance was unloaded");
	return LISM_EXIT_OK;
}
