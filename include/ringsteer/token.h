/* SPDX-License-Identifier: Apache-2.0 */
/* token.h - supervisor tokens: "[<kid>:]<member>.<expiry>.<mac>", mac =
 * lower-case hex HMAC-SHA256(secret, "[<kid>:]<member>\n<expiry>"), expiry
 * in unix seconds.  kid, when present, names the key that signed it
 * (keyring.h): 1..RS_KEY_ID_MAX bytes of [a-z0-9-].  Member ids hold no
 * ':', so a token is split at its first ':' (if any) and at its last two
 * dots (member ids may hold dots).  Verification compares in constant time. */
#ifndef RINGSTEER_TOKEN_H
#define RINGSTEER_TOKEN_H

#include <stddef.h>
#include <stdint.h>

#include "ringsteer/export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RS_SECRET_MIN 16  /* bytes: shorter secrets are refused */
#define RS_SECRET_MAX 4096
#define RS_KEY_ID_MAX 32  /* bytes of a key id */

struct rs_secret {
	uint8_t key[RS_SECRET_MAX];
	size_t len;
};

/* Loads a cluster secret file (its bytes, one trailing newline dropped).
 * Returns 0, -errno from open/read, -EPERM when the file's group or others
 * have any access (mode & 077), -EINVAL when shorter than RS_SECRET_MIN or
 * longer than RS_SECRET_MAX. */
RS_EXPORT int rs_secret_load(const char *path, struct rs_secret *out);

/* A one-line reason for an rs_secret_load error err (negative errno): for
 * -EPERM what to do about the file's mode, otherwise strerror's text. */
RS_EXPORT const char *rs_secret_strerror(int err);

/* Writes a token for member expiring at expiry into out (room for cap,
 * NUL included), without a key id.  Returns 0, -EINVAL (bad member id),
 * -ENOSPC, -EIO. */
RS_EXPORT int rs_token_mint(const struct rs_secret *s, const char *member, uint64_t expiry, char *out, size_t cap);

/* Checks token for member at time now (unix seconds) with s (the key its
 * id names, if it has one) and stores its expiry.  Returns 0, -EINVAL
 * (malformed), -EACCES (wrong mac or another member's), -EKEYEXPIRED
 * (expiry <= now). */
RS_EXPORT int rs_token_verify(const struct rs_secret *s, const char *token, const char *member, uint64_t now,
			      uint64_t *expiry);

/* Reads a token's expiry without checking it (the supervisor plans its
 * refresh with it).  Returns 0 or -EINVAL. */
RS_EXPORT int rs_token_expiry(const char *token, uint64_t *expiry);

#ifdef __cplusplus
}
#endif

#endif
