/* SPDX-License-Identifier: Apache-2.0 */
/* point_hash.h - SHA-256 ring points with one fetched digest reused, so that
 * hashing 128 points per gateway costs the compression function and little
 * else (OpenSSL 3's one-shot SHA256() fetches the algorithm on every call). */
#ifndef RS_POINT_HASH_H
#define RS_POINT_HASH_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>

struct rs_point_hasher {
	EVP_MD *md;
	EVP_MD_CTX *ctx;
};

/* Fetches SHA-256 and a context.  Returns 0 or -ENOMEM. */
int rs_point_hasher_init(struct rs_point_hasher *h);

/* Releases what init acquired; safe on a zeroed or failed hasher. */
void rs_point_hasher_fini(struct rs_point_hasher *h);

/* Stores the first 8 bytes of SHA-256(data) big-endian in *point.
 * Returns 0 or -EIO when OpenSSL fails. */
int rs_point_hasher_point(struct rs_point_hasher *h, const void *data, size_t len, uint64_t *point);

#endif
