/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef LISM_REJECT_BPF_H
#define LISM_REJECT_BPF_H

/*
 * Tests only (LISM_TEST_REJECT, user/optional.c): when the loader sets an
 * object's flag, the program reads through a NULL scalar and the verifier
 * refuses it for real, so the degraded paths are tested against a true
 * refusal.  Otherwise the flag is read-only zero and the verifier drops the
 * branch unvisited: no cost.
 */
#define LISM_TEST_REJECT_POINT(flag)                                                      \
	do {                                                                              \
		if (flag)                                                                 \
			asm volatile("r1 = 0\n\tr1 = *(u64 *)(r1 + 0)" ::: "r1");          \
	} while (0)

#endif
