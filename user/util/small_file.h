/* SPDX-License-Identifier: Apache-2.0 */
/* small_file.h - reading a short text file (a token, a count) whole. */
#ifndef RINGSTEER_SMALL_FILE_H
#define RINGSTEER_SMALL_FILE_H

#include <stddef.h>

/* Reads path into buf (room for cap bytes, NUL included), drops trailing
 * whitespace and stores the length in *len.  Returns 0, -errno from
 * open/read, -EFBIG when the file does not fit. */
int rs_read_small_file(const char *path, char *buf, size_t cap, size_t *len);

#endif
