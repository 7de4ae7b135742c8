/* SPDX-License-Identifier: Apache-2.0 */
/* small_file.c - whole-file reads of short text files, bounded by the
 * caller's buffer: a file that does not fit is an error, never a silent
 * truncation. */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "util/small_file.h"

int rs_read_small_file(const char *path, char *buf, size_t cap, size_t *len)
{
	size_t got = 0;
	int fd, err = 0;

	if (cap < 2)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* One byte past the room tells a file that fits from one that does not. */
	while (got < cap) {
		ssize_t n = read(fd, buf + got, cap - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (err)
		return err;
	if (got >= cap)
		return -EFBIG;
	while (got > 0 && (buf[got - 1] == '\n' || buf[got - 1] == '\r' || buf[got - 1] == ' ' || buf[got - 1] == '\t'))
		got--;
	buf[got] = '\0';
	*len = got;
	return 0;
}
