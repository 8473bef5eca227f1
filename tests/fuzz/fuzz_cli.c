// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target: the command line, split on NUL bytes into argv.  Any
 * input either parses into options within their documented ranges or is a
 * usage error with a message; nothing else.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "lism/abi.h"

#define MAX_ARGS 32

/* A load configuration within its documented ranges. */
static void check_cfg(const struct lism_load_cfg *c)
{
	if (c->max_dmbs < 1 || c->max_dmbs > LISM_MAX_DMBS_LIMIT || c->dmb_size < LISM_MIN_DMB_SIZE ||
	    c->dmb_size > LISM_MAX_DMB_SIZE || c->n_local_cidrs > LISM_MAX_CIDRS ||
	    c->n_exclude_ports > LISM_MAX_PORTS || c->n_include_ports > LISM_MAX_PORTS ||
	    (c->local_routes != 0 && c->local_routes != 1))
		abort();
	for (int i = 0; i < c->n_local_cidrs; i++)
		if (c->local_cidrs[i].prefixlen > 128)
			abort();
	for (int i = 0; i < c->n_exclude_ports; i++)
		if (!c->exclude_ports[i])
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *copy = malloc(size + 1), *argv[MAX_ARGS + 2] = { "lism" }, err[256];
	struct lism_opts o;
	int argc = 1, ret;

	memcpy(copy, data, size);
	copy[size] = '\0';
	for (size_t i = 0; i <= size && argc <= MAX_ARGS; i++) {
		argv[argc++] = copy + i;
		i += strlen(copy + i);
	}
	argv[argc] = NULL;
	ret = lism_parse_args(argc, argv, &o, err, sizeof(err));
	if (ret == LISM_EXIT_OK) {
		if (o.c.pin_path[0] != '/')
			abort();
		if (o.cmd == LISM_CMD_LOAD || o.cmd == LISM_CMD_RUN)
			check_cfg(o.cmd == LISM_CMD_LOAD ? &o.load.cfg : &o.run.cfg);
		if ((o.cmd == LISM_CMD_UNLOAD && o.unload.timeout_s > 86400) ||
		    (o.cmd == LISM_CMD_RUN && o.run.timeout_s > 86400))
			abort();
	} else if (ret != LISM_EXIT_USAGE || !err[0]) {
		abort();
	}
	free(copy);
	return 0;
}
