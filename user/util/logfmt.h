/* SPDX-License-Identifier: Apache-2.0 */
/* logfmt.h - one structured line per event on stderr, logfmt style
 * ("ts=... level=info key=value ..."), so operators can grep and ship
 * them.  Values with spaces, quotes or '=' are quoted and escaped. */
#ifndef RINGSTEER_LOGFMT_H
#define RINGSTEER_LOGFMT_H

#include <stdio.h>

/* Writes "ts=<RFC 3339 UTC, ms> level=<level> <who> " then the key=value
 * pairs: keys and values alternate in the NULL-terminated list, values are
 * quoted when needed.  One write(2) per line so concurrent writers do not
 * interleave. */
void rs_log(FILE *out, const char *level, const char *who, ...) __attribute__((sentinel));

/* rs_log with the pairs in a NULL-terminated array. */
void rs_log_kv(FILE *out, const char *level, const char *who, const char *const *kv);

#endif
