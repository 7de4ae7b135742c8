/* SPDX-License-Identifier: Apache-2.0 */
/* token.c - supervisor tokens (include/ringsteer/token.h).
 *
 * A token is "[<kid>:]<member>.<expiry>.<mac>": kid a key id (1..32 bytes
 * of [a-z0-9-]) naming the key that signed it, or absent (a legacy token,
 * or one of a legacy secret file); member a valid member id (1..253 bytes
 * of [a-z0-9.-], so it may hold dots), expiry unix seconds in canonical
 * decimal, mac the 64 lower-case hex digits of
 * HMAC-SHA256(secret, "[<kid>:]<member>\n<expiry>").  The key id is inside
 * the mac, so it cannot be moved onto another key's token; and a keyed
 * message (it holds a ':') is never a legacy one (a member id holds none).
 *
 * Guarantees:
 *  - Parsing is strict and total: a token is split at its first ':' (if
 *    any; the key id before it must be valid) and its last two dots;
 *    the expiry is 1..20 digits, no sign, no leading zero (except "0"),
 *    fitting in 64 bits; the mac is exactly 64 digits of [0-9a-f].  Anything
 *    else, or a token longer than RS_TOKEN_MAX, is -EINVAL, and no byte past
 *    the token's NUL (or past RS_TOKEN_MAX + 1 bytes) is read.
 *  - So every valid (member, expiry) pair has exactly one token text, and
 *    mint output always parses back to the same pair.
 *  - Verification checks, in order: form (-EINVAL), member (-EACCES), mac
 *    compared in constant time (-EACCES), expiry (-EKEYEXPIRED).  An
 *    expired token is reported as such only when its mac is authentic.
 *  - A secret outside RS_SECRET_MIN..RS_SECRET_MAX bytes is refused by
 *    mint and verify (-EINVAL) as it is by rs_secret_load.
 *  - rs_secret_load refuses (-EPERM) a file whose mode gives its group or
 *    others any access: a secret others could read may already be known,
 *    and a token minted from it proves nothing (private_file.c).
 *  - Secret bytes and computed macs held on the stack are wiped with
 *    OPENSSL_cleanse before return; a failed rs_secret_load leaves *out
 *    wiped with len 0.
 */
#include "ringsteer/token.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "ringsteer/proto.h"
#include "ringsteer/ring.h"
#include "private_file.h"
#include "token_kid.h"

#define TOKEN_MAC_LEN 32                  /* bytes of HMAC-SHA256 */
#define TOKEN_HEX_LEN (2 * TOKEN_MAC_LEN) /* characters of its hex form */
#define TOKEN_EXPIRY_DIGITS 20            /* UINT64_MAX = 18446744073709551615 */

/* The parts of a parsed token (the member copied out, NUL-terminated). */
struct token_parts {
	char kid[RS_KEY_ID_MAX + 1]; /* "" when the token has none */
	char member[RS_ID_MAX + 1];
	uint64_t expiry;
	uint8_t mac[TOKEN_MAC_LEN];
};

static bool secret_ok(const struct rs_secret *s)
{
	return s && s->len >= RS_SECRET_MIN && s->len <= RS_SECRET_MAX;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1; /* upper case is refused: one text per token */
}

/* Parses a canonical decimal u64 from s[0..len).  Returns 0 or -EINVAL. */
static int parse_expiry(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	if (len == 0 || len > TOKEN_EXPIRY_DIGITS || (len > 1 && s[0] == '0'))
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		unsigned d;

		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

bool rs_key_id_ok(const char *s, size_t len)
{
	if (len == 0 || len > RS_KEY_ID_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return false;
	return true;
}

/* Splits token at its first ':' and its last two dots into *p.  Returns 0
 * or -EINVAL. */
static int token_parse(const char *token, struct token_parts *p)
{
	const char *dot_mac = NULL, *dot_expiry = NULL, *colon;
	size_t len, member_len;

	if (!token)
		return -EINVAL;
	len = strnlen(token, RS_TOKEN_MAX + 1);
	if (len > RS_TOKEN_MAX)
		return -EINVAL;
	p->kid[0] = '\0';
	colon = memchr(token, ':', len);
	if (colon) {
		size_t kid_len = (size_t)(colon - token);

		if (!rs_key_id_ok(token, kid_len))
			return -EINVAL;
		memcpy(p->kid, token, kid_len);
		p->kid[kid_len] = '\0';
		len -= kid_len + 1;
		token = colon + 1;
	}
	for (size_t i = len; i > 0; i--) {
		if (token[i - 1] != '.')
			continue;
		if (!dot_mac) {
			dot_mac = token + i - 1;
		} else {
			dot_expiry = token + i - 1;
			break;
		}
	}
	if (!dot_expiry)
		return -EINVAL;
	member_len = (size_t)(dot_expiry - token);
	if (member_len == 0 || member_len > RS_ID_MAX)
		return -EINVAL;
	memcpy(p->member, token, member_len);
	p->member[member_len] = '\0';
	if (!rs_proto_member_id_ok(p->member))
		return -EINVAL;
	if (parse_expiry(dot_expiry + 1, (size_t)(dot_mac - dot_expiry - 1), &p->expiry))
		return -EINVAL;
	if ((size_t)(token + len - (dot_mac + 1)) != TOKEN_HEX_LEN)
		return -EINVAL;
	for (size_t i = 0; i < TOKEN_MAC_LEN; i++) {
		int hi = hex_digit(dot_mac[1 + 2 * i]), lo = hex_digit(dot_mac[2 + 2 * i]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		p->mac[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

/* Computes HMAC-SHA256(secret, "[<kid>:]<member>\n<expiry>") into mac.  kid
 * is "" or a valid key id, member a valid member id.  Returns 0 or -EIO. */
static int token_mac(const struct rs_secret *s, const char *kid, const char *member, uint64_t expiry,
		     uint8_t mac[TOKEN_MAC_LEN])
{
	char msg[RS_KEY_ID_MAX + 1 + RS_ID_MAX + 1 + TOKEN_EXPIRY_DIGITS + 1];
	size_t mac_len = 0;
	int n;

	n = snprintf(msg, sizeof(msg), "%s%s%s\n%llu", kid, *kid ? ":" : "", member, (unsigned long long)expiry);
	if (n < 0 || (size_t)n >= sizeof(msg))
		return -EIO;
	if (!EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, s->key, s->len, (const unsigned char *)msg,
		       (size_t)n, mac, TOKEN_MAC_LEN, &mac_len) ||
	    mac_len != TOKEN_MAC_LEN) {
		OPENSSL_cleanse(mac, TOKEN_MAC_LEN);
		return -EIO;
	}
	return 0;
}

int rs_secret_load(const char *path, struct rs_secret *out)
{
	/* A maximal secret and its newline; anything longer is refused. */
	uint8_t buf[RS_SECRET_MAX + 1];
	size_t len = 0;
	int err;

	out->len = 0;
	err = rs_private_file_read(path, buf, sizeof(buf), &len);
	if (err == -EFBIG)
		err = -EINVAL;
	if (err)
		goto cleanup;
	if (len > 0 && buf[len - 1] == '\n')
		len--;
	if (len < RS_SECRET_MIN || len > RS_SECRET_MAX) {
		err = -EINVAL;
		goto cleanup;
	}
	memcpy(out->key, buf, len);
	out->len = len;
cleanup:
	if (err)
		OPENSSL_cleanse(out->key, sizeof(out->key));
	OPENSSL_cleanse(buf, sizeof(buf));
	return err;
}

const char *rs_secret_strerror(int err)
{
	if (err == -EPERM)
		return "its group or others may access it: chmod 600 (or 400) it";
	return strerror(-err);
}

int rs_token_mint(const struct rs_secret *s, const char *member, uint64_t expiry, char *out, size_t cap)
{
	return rs_token_mint_kid(s, NULL, member, expiry, out, cap);
}

int rs_token_mint_kid(const struct rs_secret *s, const char *kid, const char *member, uint64_t expiry, char *out,
		      size_t cap)
{
	uint8_t mac[TOKEN_MAC_LEN];
	static const char hex[] = "0123456789abcdef";
	size_t member_len, expiry_len, kid_len;
	char digits[TOKEN_EXPIRY_DIGITS + 1];
	char *p;
	int err = 0;

	if (out && cap > 0)
		out[0] = '\0';
	if (!kid)
		kid = "";
	kid_len = strlen(kid);
	if (!secret_ok(s) || !member || !rs_proto_member_id_ok(member) || (kid_len && !rs_key_id_ok(kid, kid_len)))
		return -EINVAL;
	if (!out)
		return -ENOSPC;
	member_len = strlen(member);
	expiry_len = (size_t)snprintf(digits, sizeof(digits), "%llu", (unsigned long long)expiry);
	if (cap < kid_len + !!kid_len + member_len + 1 + expiry_len + 1 + TOKEN_HEX_LEN + 1)
		return -ENOSPC;
	err = token_mac(s, kid, member, expiry, mac);
	if (err)
		goto cleanup;
	p = out;
	if (kid_len) {
		memcpy(p, kid, kid_len);
		p += kid_len;
		*p++ = ':';
	}
	memcpy(p, member, member_len);
	p += member_len;
	*p++ = '.';
	memcpy(p, digits, expiry_len);
	p += expiry_len;
	*p++ = '.';
	for (size_t i = 0; i < TOKEN_MAC_LEN; i++) {
		*p++ = hex[mac[i] >> 4];
		*p++ = hex[mac[i] & 0xf];
	}
	*p = '\0';
cleanup:
	OPENSSL_cleanse(mac, sizeof(mac));
	return err;
}

/* Also -EINVAL when member (the expected one) is not a valid member id.
 * *expiry is set on 0 and on -EKEYEXPIRED (the mac was authentic). */
int rs_token_verify(const struct rs_secret *s, const char *token, const char *member, uint64_t now,
		    uint64_t *expiry)
{
	struct token_parts parts;
	uint8_t want[TOKEN_MAC_LEN];
	int err;

	if (!secret_ok(s) || !member || !rs_proto_member_id_ok(member))
		return -EINVAL;
	err = token_parse(token, &parts);
	if (err)
		return err;
	if (strcmp(parts.member, member) != 0)
		return -EACCES;
	err = token_mac(s, parts.kid, parts.member, parts.expiry, want);
	if (err)
		goto cleanup;
	if (CRYPTO_memcmp(want, parts.mac, TOKEN_MAC_LEN) != 0) {
		err = -EACCES;
		goto cleanup;
	}
	if (expiry)
		*expiry = parts.expiry;
	if (parts.expiry <= now)
		err = -EKEYEXPIRED;
cleanup:
	OPENSSL_cleanse(want, sizeof(want));
	return err;
}

int rs_token_key_id(const char *token, char kid[RS_KEY_ID_MAX + 1])
{
	struct token_parts parts;
	int err = token_parse(token, &parts);

	if (err)
		return err;
	memcpy(kid, parts.kid, sizeof(parts.kid));
	return 0;
}

int rs_token_expiry(const char *token, uint64_t *expiry)
{
	struct token_parts parts;
	int err = token_parse(token, &parts);

	if (err)
		return err;
	*expiry = parts.expiry;
	return 0;
}
