/* SPDX-License-Identifier: Apache-2.0 */
/* flags.h - numeric command-line values, parsed strictly (a typo is an
 * error, not a different number) with one message format for every daemon. */
#ifndef RINGSTEER_FLAGS_H
#define RINGSTEER_FLAGS_H

#include <stdint.h>

/* Parses a decimal in min..max with nothing after it; on failure prints
 * "<prog>: <flag>: expected a number in MIN..MAX, got 'TEXT'" on stderr.
 * Returns 0 or -EINVAL. */
int rs_parse_flag_u32(const char *prog, const char *flag, const char *text, uint32_t min, uint32_t max,
		      uint32_t *out);

#endif
