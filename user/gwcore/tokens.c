/* SPDX-License-Identifier: Apache-2.0 */
/* tokens.c - the core's supervisor tokens: checked with the keyring (or
 * the config's one secret, for embedders that set no keyring), and capped
 * in how far ahead they may expire: a token minted for years, or leaked,
 * would otherwise be good for years, whatever the key rotation. */
#include <errno.h>

#include "gwcore.h"

int rs_gw_core_set_keyring(struct rs_gw_core *core, const struct rs_keyring *keys)
{
	if (!core || !keys || keys->n == 0)
		return -EINVAL;
	core->keyring = keys;
	return 0;
}

int rs_gw_core_set_token_max_ttl(struct rs_gw_core *core, uint32_t max_ttl_s)
{
	if (!core || max_ttl_s == 0 || max_ttl_s < core->cfg.token_ttl_s)
		return -EINVAL;
	core->token_max_ttl_s = max_ttl_s;
	return 0;
}

int gwc_token_verify(const struct rs_gw_core *core, const char *token, const char *member, uint64_t *expiry)
{
	uint64_t now = (uint64_t)(core->now.wall_ms / 1000);
	int err;

	err = core->keyring ? rs_keyring_verify(core->keyring, token, member, now, expiry) :
			      rs_token_verify(core->cfg.secret, token, member, now, expiry);
	/* Only an authentic token gets this far, so -ERANGE names a real one. */
	if (err == 0 && *expiry - now > core->token_max_ttl_s)
		err = -ERANGE;
	return err;
}

int gwc_token_mint(const struct rs_gw_core *core, const char *member, uint64_t expiry, char *out, size_t cap)
{
	if (core->keyring)
		return rs_keyring_mint(core->keyring, (uint64_t)(core->now.wall_ms / 1000), member, expiry, out, cap);
	return rs_token_mint(core->cfg.secret, member, expiry, out, cap);
}
