// SPDX-License-Identifier: GPL-2.0-only
/*
 * The fence of carried counts: membarrier(2), registered at start (rules in
 * fence.h).
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "exec/fence.h"
#include "exec/ring.h"

static long membarrier(int cmd)
{
	return syscall(SYS_membarrier, cmd, 0, 0);
}

void lism_fence_init(void)
{
	const char *e = getenv("LISM_CARRY");
	long cmds = membarrier(MEMBARRIER_CMD_QUERY);
	bool on = !(e && !strcmp(e, "0")) && cmds > 0 && (cmds & MEMBARRIER_CMD_GLOBAL_EXPEDITED) &&
		  !membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED);

	__atomic_store_n(&lism_ring_carry, on, __ATOMIC_RELAXED);
	e = getenv("LISM_MIRROR");
	__atomic_store_n(&lism_ring_mirror, e && !strcmp(e, "0") ? 0 : 1, __ATOMIC_RELAXED);
}

void lism_fence_forked(void)
{
	/* the start's decision stands (a server may have cleared its
	 * environment before it forked); the registration is the mm's */
	if (__atomic_load_n(&lism_ring_carry, __ATOMIC_RELAXED) &&
	    membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED))
		__atomic_store_n(&lism_ring_carry, false, __ATOMIC_RELAXED);
}

void lism_fence_peers(void)
{
	int saved = errno;

	if (membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED)) {
		struct timespec ts = { 0, LISM_FENCE_SETTLE_US * 1000L };

		__atomic_store_n(&lism_ring_carry, false, __ATOMIC_RELAXED);
		/* not nanosleep(3): no cancellation point under the rx lock */
		while (syscall(SYS_nanosleep, &ts, &ts) && errno == EINTR)
			;
	}
	errno = saved;
}
