/* SPDX-License-Identifier: Apache-2.0 */
/* tls_stamp.c - noticing that TLS files were replaced, without reading
 * them: a digest of each file's mtime, inode and size.  A Kubernetes Secret
 * or a cert-manager csi-driver volume swaps files by renaming a symlinked
 * directory (stat follows the link), and an operator's cp changes mtime and
 * usually size; either way the digest changes and the owner reloads. */
#include <sys/stat.h>

#include "tls/tls.h"

uint64_t rs_tls_files_stamp(const struct rs_tls_files *f)
{
	const char *files[] = { f->cert, f->key, f->ca, f->tickets };
	uint64_t h = 1469598103934665603ULL; /* FNV-1a over the fields */

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct stat st;
		uint64_t v[4] = { 0, 0, 0, 0 };

		if (files[i] && stat(files[i], &st) == 0) {
			v[0] = (uint64_t)st.st_mtim.tv_sec;
			v[1] = (uint64_t)st.st_mtim.tv_nsec;
			v[2] = (uint64_t)st.st_ino;
			v[3] = (uint64_t)st.st_size;
		}
		for (size_t j = 0; j < 4; j++)
			for (size_t b = 0; b < 8; b++)
				h = (h ^ ((v[j] >> (8 * b)) & 0xff)) * 1099511628211ULL;
	}
	return h;
}
