// SPDX-License-Identifier: GPL-2.0-only
/*
 * semantics-peer SCENARIO: one scenario of docs/semantics.md (semantics.h)
 * on a loopback TCP pair made in this process, what it saw on stdout, one
 * number a line, then "end N" (N numbers); "fail WHY" and exit 1 if it
 * could not go on.  The integration test runs it under `lism exec`, where
 * the pair is a ring pair, and compares with plain TCP.  It knows nothing
 * of lism.
 */
#include <stdio.h>
#include <unistd.h>

#include "semantics.h"
#include "slow.h"

int main(int argc, char **argv)
{
	const struct sem_scenario *sc = argc == 2 ? sem_find(argv[1]) : NULL;
	struct sem_obs o = { 0 };
	int c, s, err;

	if (!sc) {
		fprintf(stderr, "usage: semantics-peer SCENARIO (a name of tests/programs/semantics.c)\n");
		return 2;
	}
	alarm(100 * time_scale()); /* a hung scenario must not outlive its test */
	err = sem_pair(sc->nonblock, &c, &s);
	if (err) {
		printf("fail the pair: %d\n", err);
		return 1;
	}
	if (sc->run(c, s, &o)) {
		printf("fail %s\n", o.why);
		return 1;
	}
	for (int i = 0; i < o.n; i++)
		printf("%ld\n", o.v[i]);
	printf("end %d\n", o.n);
	printf("lazy %d\n", o.lazy);
	return 0;
}
