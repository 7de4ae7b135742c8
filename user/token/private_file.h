/* SPDX-License-Identifier: Apache-2.0 */
/* private_file.h - reading a file that holds secrets (a cluster secret, a
 * keyring): one reader, so every such file gets the same mode check. */
#ifndef RS_TOKEN_PRIVATE_FILE_H
#define RS_TOKEN_PRIVATE_FILE_H

#include <stddef.h>
#include <stdint.h>

/* Reads the file at path into buf[0..cap), its length to *len.  Returns 0,
 * -errno from open/fstat/read, -EPERM when it is a regular file whose group
 * or others have any access (mode & 077), -EFBIG when longer than cap.  On
 * failure buf is wiped. */
int rs_private_file_read(const char *path, uint8_t *buf, size_t cap, size_t *len);

#endif
