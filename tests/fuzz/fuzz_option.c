// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target: the TCP option parser sees bytes from the wire (via
 * bpf_load_hdr_opt), so it must accept exactly the well-formed options and
 * round-trip them, and never read past what it is given.  The copy below
 * makes ASan catch any read beyond @size.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lism/option.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *buf = malloc(size ? size : 1), again[LISM_OPT_LEN];
	struct lism_opt o;
	int err;

	memcpy(buf, data, size);
	err = lism_opt_parse(buf, (__u32)size, &o);
	if (err == LISM_OPT_OK) {
		if (size < LISM_OPT_LEN || buf[0] != LISM_OPT_KIND || buf[1] != LISM_OPT_LEN || !o.token)
			abort();
		lism_opt_encode(again, &o);
		if (memcmp(again, buf, LISM_OPT_LEN))
			abort();
	} else if (err < LISM_OPT_ETOKEN || err > LISM_OPT_ETRUNC) {
		abort();
	}
	free(buf);
	return 0;
}
