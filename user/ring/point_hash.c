/* SPDX-License-Identifier: Apache-2.0 */
/* point_hash.c - the ring's point function: first 8 bytes of SHA-256,
 * big-endian, exactly as OpenShell's gateway ring reads them. */
#include "point_hash.h"

#include <errno.h>
#include <string.h>

#include "ringsteer/ring.h"

static uint64_t first8_be(const unsigned char *digest)
{
	uint64_t value = 0;

	for (int i = 0; i < 8; i++)
		value = value << 8 | digest[i];
	return value;
}

int rs_point_hasher_init(struct rs_point_hasher *h)
{
	memset(h, 0, sizeof(*h));
	h->md = EVP_MD_fetch(NULL, "SHA256", NULL);
	h->ctx = EVP_MD_CTX_new();
	if (!h->md || !h->ctx) {
		rs_point_hasher_fini(h);
		return -ENOMEM;
	}
	return 0;
}

void rs_point_hasher_fini(struct rs_point_hasher *h)
{
	EVP_MD_CTX_free(h->ctx);
	EVP_MD_free(h->md);
	h->ctx = NULL;
	h->md = NULL;
}

int rs_point_hasher_point(struct rs_point_hasher *h, const void *data, size_t len, uint64_t *point)
{
	unsigned char digest[EVP_MAX_MD_SIZE];
	unsigned int digest_len = 0;

	if (!EVP_DigestInit_ex2(h->ctx, h->md, NULL) || !EVP_DigestUpdate(h->ctx, data, len) ||
	    !EVP_DigestFinal_ex(h->ctx, digest, &digest_len) || digest_len < 8)
		return -EIO;
	*point = first8_be(digest);
	return 0;
}

int rs_ring_point(const char *key, size_t len, uint64_t *point)
{
	unsigned char digest[EVP_MAX_MD_SIZE];
	unsigned int digest_len = 0;

	if (!EVP_Digest(key, len, digest, &digest_len, EVP_sha256(), NULL) || digest_len < 8)
		return -EIO;
	*point = first8_be(digest);
	return 0;
}
