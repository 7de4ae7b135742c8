/* SPDX-License-Identifier: Apache-2.0 */
/* keyring_file.c - a keyring (or legacy secret) file, read and parsed
 * (keyring.h).  The file's bytes live on the heap only while parsed, and
 * are wiped before they are freed. */
#include "ringsteer/keyring.h"

#include <errno.h>
#include <stdlib.h>

#include <openssl/crypto.h>

#include "private_file.h"

int rs_keyring_load(const char *path, struct rs_keyring *out, size_t *line)
{
	uint8_t *buf = malloc(RS_KEYRING_FILE_MAX);
	size_t len = 0;
	int err;

	if (line)
		*line = 0;
	rs_keyring_wipe(out);
	if (!buf)
		return -ENOMEM;
	err = rs_private_file_read(path, buf, RS_KEYRING_FILE_MAX, &len);
	if (err)
		goto cleanup;
	err = rs_keyring_parse((const char *)buf, len, out, line);
cleanup:
	OPENSSL_cleanse(buf, RS_KEYRING_FILE_MAX);
	free(buf);
	return err;
}
