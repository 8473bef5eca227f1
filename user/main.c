// SPDX-License-Identifier: GPL-2.0-only
/* lism: the loopback-ism device control plane.  Subcommands only (commands.h). */
#include <stdio.h>

#include "cli.h"
#include "commands.h"
#include "lism/abi.h"
#include "log.h"

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
	lism_log_setup(o.c.verbose);
	switch (o.cmd) {
	case LISM_CMD_LOAD:
		return lism_cmd_load(&o.c, &o.load);
	case LISM_CMD_UNLOAD:
		return lism_cmd_unload(&o.c, &o.unload);
	case LISM_CMD_STATUS:
		return lism_cmd_status(&o.c, &o.status);
	case LISM_CMD_CONNS:
		return lism_cmd_conns(&o.c, &o.conns);
	case LISM_CMD_STATS:
		return lism_cmd_stats(&o.c, &o.stats);
	case LISM_CMD_EVENTS:
		return lism_cmd_events(&o.c, &o.events);
	case LISM_CMD_RUN:
		return lism_cmd_run(&o.c, &o.run);
	case LISM_CMD_SET:
		return lism_cmd_set(&o.c, &o.set);
	case LISM_CMD_DEVICE:
		return lism_cmd_device(&o.c, &o.device);
	case LISM_CMD_EXEC:
		return lism_cmd_exec(&o.c, &o.exec);
	case LISM_CMD_PROBE:
		return lism_cmd_probe(&o.c);
	case LISM_CMD_MOUNT_BPFFS:
		return lism_cmd_mount_bpffs(&o.c, &o.mount);
	case LISM_CMD_VERSION:
		printf("lism %s (layout %d)\n", LISM_VERSION, LISM_LAYOUT_VERSION);
		return LISM_EXIT_OK;
	case LISM_CMD_HELP:
	default:
		lism_usage(stdout);
		return LISM_EXIT_OK;
	}
}
