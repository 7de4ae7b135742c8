/* SPDX-License-Identifier: Apache-2.0 */
/* keyring_token.c - minting and verifying tokens with a keyring
 * (keyring.h).
 *
 * Verification does the work of one key whatever the keyring's size: the
 * token's key id picks the key (no id: the first, legacy key), and that
 * key's mac is the only one computed, so neither timing nor a wrong key
 * makes trying keys worthwhile.  A key id the keyring lacks is -EACCES,
 * like a wrong mac: to the gateway both mean "not signed by a key we
 * hold" (a removed key's tokens among them). */
#include "ringsteer/keyring.h"

#include <errno.h>
#include <string.h>

#include "token_kid.h"

const struct rs_key *rs_keyring_signer(const struct rs_keyring *kr, uint64_t now)
{
	for (size_t i = kr->n; i > 0; i--)
		if (kr->keys[i - 1].since <= now)
			return &kr->keys[i - 1];
	return NULL;
}

int rs_keyring_mint(const struct rs_keyring *kr, uint64_t now, const char *member, uint64_t expiry, char *out,
		    size_t cap)
{
	const struct rs_key *k = rs_keyring_signer(kr, now);

	if (!k) {
		if (out && cap > 0)
			out[0] = '\0';
		return -ENOKEY;
	}
	return rs_token_mint_kid(&k->secret, k->id, member, expiry, out, cap);
}

int rs_keyring_verify(const struct rs_keyring *kr, const char *token, const char *member, uint64_t now,
		      uint64_t *expiry)
{
	char kid[RS_KEY_ID_MAX + 1];
	int err;

	if (!kr || kr->n == 0 || !member)
		return -EINVAL;
	err = rs_token_key_id(token, kid);
	if (err)
		return err;
	if (kid[0] == '\0')
		return rs_token_verify(&kr->keys[0].secret, token, member, now, expiry);
	for (size_t i = 0; i < kr->n; i++)
		if (strcmp(kr->keys[i].id, kid) == 0)
			return rs_token_verify(&kr->keys[i].secret, token, member, now, expiry);
	/* Same order as rs_token_verify: a malformed member first. */
	return rs_token_verify(&kr->keys[0].secret, token, member, now, expiry) == -EINVAL ? -EINVAL : -EACCES;
}
