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
#include "token/token_kid.h"

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

/* Whether s[0..len) is a key id as token.h states it: 1..RS_KEY_ID_MAX
 * bytes of [a-z0-9-].  Written here from the header, not taken from the
 * parser, so the two are checked against each other. */
static int kid_ok(const char *s, size_t len)
{
	if (len == 0 || len > RS_KEY_ID_MAX)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return 0;
	return 1;
}

/* The key id and member parts of text as token.h splits it: a key id
 * before its first ':' (if any), the member everything after that up to
 * its second-to-last dot.  Returns 0 when both are valid. */
static int member_of(const char *text, char *kid, char *member)
{
	const char *colon = strchr(text, ':'), *last, *second = NULL;
	size_t n;

	kid[0] = '\0';
	if (colon) {
		n = (size_t)(colon - text);
		if (!kid_ok(text, n))
			return -1;
		memcpy(kid, text, n);
		kid[n] = '\0';
		text = colon + 1;
	}
	last = strrchr(text, '.');
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
	char kid[RS_KEY_ID_MAX + 1], member[RS_ID_MAX + 1], minted[RS_TOKEN_MAX + 1];
	uint64_t expiry = 0, vexpiry = 0;
	int rc_exp = rs_token_expiry(text, &expiry);
	int rc;

	check(rc_exp == 0 || rc_exp == -EINVAL);
	/* A fixed, valid member: malformed text is -EINVAL, else -EACCES
	 * unless the member matches. */
	rc = rs_token_verify(key, text, "sup-1", NOW, &vexpiry);
	check(rc == 0 || rc == -EINVAL || rc == -EACCES || rc == -EKEYEXPIRED);
	check((rc == -EINVAL) == (rc_exp == -EINVAL));
	if (member_of(text, kid, member) != 0) {
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
	check(rs_token_mint_kid(key, kid, member, expiry, minted, sizeof(minted)) == 0);
	check(strcmp(minted, text) == 0);
	/* The key id is inside the mac: the same text under another id (or
	 * none) is never authentic. */
	if (kid[0])
		check(rs_token_verify(key, strchr(text, ':') + 1, member, NOW, &vexpiry) == -EACCES);
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
