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
		if (o.pin_path[0] != '/' || o.max_dmbs < 1 || o.max_dmbs > LISM_MAX_DMBS_LIMIT ||
		    o.dmb_size < LISM_MIN_DMB_SIZE || o.dmb_size > LISM_MAX_DMB_SIZE ||
		    o.n_local_cidrs > LISM_MAX_CIDRS || o.n_exclude_ports > LISM_MAX_PORTS ||
		    o.n_include_ports > LISM_MAX_PORTS || o.timeout_s > 86400 ||
		    (o.local_routes != 0 && o.local_routes != 1))
			abort();
		for (int i = 0; i < o.n_local_cidrs; i++)
			if (o.local_cidrs[i].prefixlen > 128)
				abort();
		for (int i = 0; i < o.n_exclude_ports; i++)
			if (!o.exclude_ports[i])
				abort();
	} else if (ret != LISM_EXIT_USAGE || !err[0]) {
		abort();
	}
	free(copy);
	return 0;
}
