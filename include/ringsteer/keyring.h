/* SPDX-License-Identifier: Apache-2.0 */
/* keyring.h - the keys supervisor tokens are signed with, so that the key
 * can change without a flag day: a token names its key ("<kid>:" before
 * the member, token.h), a keyring verifies it with that key alone, and
 * signs with its newest key.  A token without a key id is checked with the
 * keyring's first key (the legacy one).
 *
 * The file: the first line exactly "ringsteer-keyring v1", then one key a
 * line, "<key-id> <secret> [<since>]", oldest first; blank lines and "#"
 * comments (whole lines, or from a field starting with "#") are skipped.
 * key-id is 1..RS_KEY_ID_MAX bytes of [a-z0-9-]; secret is the field's
 * bytes taken literally, or "hex:" and the bytes in hex, RS_SECRET_MIN..
 * RS_SECRET_MAX bytes either way; since (unix seconds, default 0) is when
 * the key may start signing: it verifies from the start.  The signing key
 * is the last one whose since has come.  A file without that first line is
 * one legacy secret, read as rs_secret_load does: a keyring of one key
 * without an id, whose tokens carry no key id (the old format).
 * The same file format serves any keyed secret that rotates (the TLS
 * session-ticket keys reuse the loader). */
#ifndef RINGSTEER_KEYRING_H
#define RINGSTEER_KEYRING_H

#include <stddef.h>
#include <stdint.h>

#include "ringsteer/export.h"
#include "ringsteer/token.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RS_KEYRING_MAX 8             /* keys in one keyring */
#define RS_KEYRING_FILE_MAX 65536    /* bytes of a keyring file */
#define RS_KEYRING_HEADER "ringsteer-keyring v1"

struct rs_key {
	char id[RS_KEY_ID_MAX + 1]; /* "" for a legacy secret file's one key */
	uint64_t since;             /* unix seconds from which it may sign */
	struct rs_secret secret;
};

struct rs_keyring {
	size_t n;                          /* 1..RS_KEYRING_MAX once loaded */
	struct rs_key keys[RS_KEYRING_MAX]; /* file order: oldest first */
};

/* Parses len bytes of a keyring (or legacy secret) file into *out.
 * Returns 0 or -EINVAL, with *line (if non-NULL) the 1-based line at fault
 * or 0 when no line is (no key, a legacy secret's size); *out is wiped, n 0,
 * on failure. */
RS_EXPORT int rs_keyring_parse(const char *text, size_t len, struct rs_keyring *out, size_t *line);

/* Reads and parses the file at path.  Returns rs_keyring_parse's result,
 * -errno from open/read, -EPERM when its group or others have any access
 * (mode & 077), -EFBIG when longer than RS_KEYRING_FILE_MAX. */
RS_EXPORT int rs_keyring_load(const char *path, struct rs_keyring *out, size_t *line);

/* The key that signs at now: the last one whose since <= now, or NULL. */
RS_EXPORT const struct rs_key *rs_keyring_signer(const struct rs_keyring *kr, uint64_t now);

/* Mints member's token expiring at expiry with the key signing at now
 * (its id in the token).  Returns rs_token_mint's errors, or -ENOKEY. */
RS_EXPORT int rs_keyring_mint(const struct rs_keyring *kr, uint64_t now, const char *member, uint64_t expiry,
			      char *out, size_t cap);

/* Verifies token with the one key its id names (no id: the first key),
 * as rs_token_verify does; a key id not in the keyring is -EACCES. */
RS_EXPORT int rs_keyring_verify(const struct rs_keyring *kr, const char *token, const char *member, uint64_t now,
				uint64_t *expiry);

/* Wipes every key (OPENSSL_cleanse) and sets n to 0. */
RS_EXPORT void rs_keyring_wipe(struct rs_keyring *kr);

#ifdef __cplusplus
}
#endif

#endif
