/* SPDX-License-Identifier: Apache-2.0 */
/* flags.c - strict parsing of numeric flag values for the daemons. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/flags.h"

int rs_parse_flag_u32(const char *prog, const char *flag, const char *text, uint32_t min, uint32_t max,
		      uint32_t *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(text, &end, 10);
	if (errno || *end || text[0] < '0' || text[0] > '9' || v < min || v > max) {
		fprintf(stderr, "%s: %s: expected a number in %u..%u, got '%s'\n", prog, flag, min, max, text);
		return -EINVAL;
	}
	*out = (uint32_t)v;
	return 0;
}
