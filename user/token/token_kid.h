/* SPDX-License-Identifier: Apache-2.0 */
/* token_kid.h - the key-id side of tokens (token.c), for the keyring
 * (keyring_token.c): minting with a key id, and reading one back. */
#ifndef RS_TOKEN_KID_H
#define RS_TOKEN_KID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringsteer/token.h"

/* Whether s[0..len) is a key id: 1..RS_KEY_ID_MAX bytes of [a-z0-9-]. */
bool rs_key_id_ok(const char *s, size_t len);

/* rs_token_mint with key id kid in the token and its mac (NULL or "":
 * none, the legacy form); -EINVAL also for an invalid kid. */
int rs_token_mint_kid(const struct rs_secret *s, const char *kid, const char *member, uint64_t expiry, char *out,
		      size_t cap);

/* Copies token's key id into kid ("" when it has none).  Returns 0, or
 * -EINVAL when token is malformed. */
int rs_token_key_id(const char *token, char kid[RS_KEY_ID_MAX + 1]);

#endif
