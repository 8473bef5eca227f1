// SPDX-License-Identifier: GPL-2.0-only
/* lism: the loopback-ism device control plane.  Subcommands only. */
#include <stdio.h>

#include "cli.h"
#include "lism/abi.h"
#include "loader.h"
#include "log.h"
#include "conns.h"
#include "daemon.h"
#include "device.h"
#include "events.h"
#include "probe.h"
#include "stats.h"
#include "status.h"

int main(int argc, char **argv)
{
	struct lism_opts o;
	char err[256];
	int ret;

	ret = lism_parse_args(argc, argv, &o, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "lism: %s\n", err);
		return ret;
	}
	lism_log_setup(o.verbose);
	switch (o.cmd) {
	case LISM_CMD_LOAD:
		return lism_cmd_load(&o);
	case LISM_CMD_UNLOAD:
		return o.stay ? lism_cmd_unload_stay(&o) : lism_cmd_unload(&o);
	case LISM_CMD_STATUS:
		return lism_cmd_status(&o);
	case LISM_CMD_CONNS:
		return lism_cmd_conns(&o);
	case LISM_CMD_STATS:
		return lism_cmd_stats(&o);
	case LISM_CMD_EVENTS:
		return lism_cmd_events(&o);
	case LISM_CMD_RUN:
		return lism_cmd_run(&o);
	case LISM_CMD_SET:
		return lism_cmd_set(&o);
	case LISM_CMD_PROBE:
		return lism_cmd_probe(&o);
	case LISM_CMD_MOUNT_BPFFS:
		return lism_cmd_mount_bpffs(&o);
	case LISM_CMD_VERSION:
		printf("lism %s (layout %d)\n", LISM_VERSION, LISM_LAYOUT_VERSION);
		return LISM_EXIT_OK;
	case LISM_CMD_HELP:
	default:
		lism_usage(stdout);
		return LISM_EXIT_OK;
	}
}
