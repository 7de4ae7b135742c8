/* SPDX-License-Identifier: Apache-2.0 */
/* program_version.h - what every program says of its build: `--version`
 * and the ringsteer_build_info series on every /metrics, both from the
 * library's rs_version() (version.h, the one source) and rs_build_commit(). */
#ifndef RINGSTEER_PROGRAM_VERSION_H
#define RINGSTEER_PROGRAM_VERSION_H

#include <event2/buffer.h>

/* Prints "PROG VERSION (commit COMMIT)" and a newline on stdout. */
void rs_program_version(const char *prog);

/* Appends the ringsteer_build_info family: one series, value 1, labelled
 * with the version and the commit. */
void rs_metrics_build_info(struct evbuffer *b);

#endif
