/* SPDX-License-Identifier: Apache-2.0 */
/* private_file.c - a secret-holding file, read whole (private_file.h).
 *
 * The mode is read with fstat on the descriptor that is then read, so a
 * file swapped in between check and read cannot slip past the check.  Only
 * a regular file's mode says who can read those bytes: a pipe's (a secret
 * handed over by <(...)) does not, and a directory fails at read with its
 * own errno. */
#include "private_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

int rs_private_file_read(const char *path, uint8_t *buf, size_t cap, size_t *len)
{
	struct stat st;
	size_t have = 0;
	int fd, err = 0;

	*len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0) {
		err = -errno;
		goto cleanup;
	}
	if (S_ISREG(st.st_mode) && (st.st_mode & 077)) {
		err = -EPERM;
		goto cleanup;
	}
	/* Up to cap bytes, then one probe byte to tell a longer file. */
	for (;;) {
		uint8_t probe;
		ssize_t r;

		if (have < cap)
			r = read(fd, buf + have, cap - have);
		else
			r = read(fd, &probe, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = -errno;
			goto cleanup;
		}
		if (r == 0)
			break;
		if (have == cap) {
			OPENSSL_cleanse(&probe, sizeof(probe));
			err = -EFBIG;
			goto cleanup;
		}
		have += (size_t)r;
	}
	*len = have;
cleanup:
	if (err)
		OPENSSL_cleanse(buf, cap);
	close(fd);
	return err;
}
