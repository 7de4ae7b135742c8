/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_token.c - libFuzzer target for the token parser (user/token/).
 *
 * The input, cut at its first NUL (the API takes C strings), is a token
 * checked against a fixed secret and clock, and its own bytes also name a
 * member and an expiry to mint.  Checks:
 *  - rs_token_expiry and rs_token_verify agree on what is well-formed
 *    (verify's -EINVAL for a valid member means the text is malformed);
 *  - a token that verifies (authentic: 0 or -EKEYEXPIRED) is exactly the
 *    text mint gives for its member and expiry (one text per token), its
 *    expiry is the one rs_token_expiry reads, and it is refused (-EACCES)
 *    for any other member;
 *  - mint's output for the input's member and expiry parses back to that
 *    expiry and verifies (0 when it lies ahead of the clock, else
 *    -EKEYEXPIRED), and not with another secret.
 * Any disagreement aborts, which libFuzzer reports as a crash. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ringsteer/proto.h"
#include "ringsteer/token.h"

#define NOW 1700000000ULL

static void check(int ok)
{
	if (!ok)
		abort();
}

static void secret_fill(struct rs_secret *s, uint8_t salt)
{
	memset(s, 0, sizeof(*s));
	s->len = 32;
	for (size_t i = 0; i < s->len; i++)
		s->key[i] = (uint8_t)(i * 7 + salt);
}

/* The member part of text: everything before its second-to-last dot, as
 * the parser splits it (token.h), if that is a valid member id. */
static int member_of(const char *text, char *member)
{
	const char *last = strrchr(text, '.'), *second = NULL;
	size_t n;

	if (!last)
		return -1;
	for (const char *p = last; p > text; p--)
		if (p[-1] == '.') {
			second = p - 1;
			break;
		}
	if (!second)
		return -1;
	n = (size_t)(second - text);
	if (n == 0 || n > RS_ID_MAX)
		return -1;
	memcpy(member, text, n);
	member[n] = '\0';
	return rs_proto_member_id_ok(member) ? 0 : -1;
}

static void check_parsed(const struct rs_secret *key, const char *text)
{
	char member[RS_ID_MAX + 1], minted[RS_TOKEN_MAX + 1];
	uint64_t expiry = 0, vexpiry = 0;
	int rc_exp = rs_token_expiry(text, &expiry);
	int rc;

	check(rc_exp == 0 || rc_exp == -EINVAL);
	/* A fixed, valid member: malformed text is -EINVAL, else -EACCES
	 * unless the member matches. */
	rc = rs_token_verify(key, text, "sup-1", NOW, &vexpiry);
	check(rc == 0 || rc == -EINVAL || rc == -EACCES || rc == -EKEYEXPIRED);
	check((rc == -EINVAL) == (rc_exp == -EINVAL));
	if (member_of(text, member) != 0) {
		check(rc_exp == -EINVAL);
		return;
	}
	rc = rs_token_verify(key, text, member, NOW, &vexpiry);
	check((rc == -EINVAL) == (rc_exp == -EINVAL));
	if (rc != 0 && rc != -EKEYEXPIRED)
		return;
	/* Authentic: the one text for (member, expiry). */
	check(vexpiry == expiry);
	check((rc == 0) == (expiry > NOW));
	check(rs_token_mint(key, member, expiry, minted, sizeof(minted)) == 0);
	check(strcmp(minted, text) == 0);
	if (strcmp(member, "sup-1") != 0)
		check(rs_token_verify(key, text, "sup-1", NOW, &vexpiry) == -EACCES);
}

static void check_minted(const struct rs_secret *key, const struct rs_secret *other, const uint8_t *data,
			 size_t size)
{
	char member[RS_ID_MAX + 1], minted[RS_TOKEN_MAX + 1];
	uint64_t expiry = 0, back = 0;
	size_t n = 0;
	int rc;

	if (size < 9)
		return;
	for (size_t i = 0; i < 8; i++)
		expiry = expiry << 8 | data[i];
	for (size_t i = 8; i < size && n < RS_ID_MAX; i++)
		member[n++] = (char)data[i];
	member[n] = '\0';
	rc = rs_token_mint(key, member, expiry, minted, sizeof(minted));
	if (!rs_proto_member_id_ok(member)) {
		check(rc == -EINVAL);
		return;
	}
	check(rc == 0);
	check(rs_token_expiry(minted, &back) == 0 && back == expiry);
	rc = rs_token_verify(key, minted, member, NOW, &back);
	check(rc == (expiry > NOW ? 0 : -EKEYEXPIRED));
	check(rs_token_verify(other, minted, member, NOW, &back) == -EACCES);
	/* Too small a buffer is refused, never cut. */
	check(rs_token_mint(key, member, expiry, minted, strlen(minted)) == -ENOSPC);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rs_secret key, other;
	size_t n = strnlen((const char *)data, size);
	char *text = malloc(n + 1);

	if (!text)
		return 0;
	memcpy(text, data, n);
	text[n] = '\0';
	secret_fill(&key, 1);
	secret_fill(&other, 2);
	check_parsed(&key, text);
	check_minted(&key, &other, data, size);
	free(text);
	return 0;
}
