/* SPDX-License-Identifier: Apache-2.0 */
/* keyring.c - the keyring file format, parsed from memory (keyring.h).
 *
 * Guarantees:
 *  - Without the header line the whole text is one legacy secret under
 *    rs_secret_load's rules (one trailing newline dropped, then 16..4096
 *    bytes, binary allowed): old secret files load unchanged.
 *  - With it, every line is a key, a comment or blank; anything else is
 *    -EINVAL with its line number.  No NUL byte is accepted in a keyring
 *    (it is text: a NUL there is a corrupt file, not a key byte).
 *  - Key ids are unique, so a token's key id names exactly one key.
 *  - On failure *out is wiped with n 0: no half-read keyring is used.
 */
#include "ringsteer/keyring.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <openssl/crypto.h>

#include "token_kid.h"

#define KEY_FIELDS 3 /* id, secret, since */

struct field {
	const char *s;
	size_t len;
};

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Canonical decimal (no sign, no leading zero), fitting 64 bits. */
static int parse_u64(const struct field *f, uint64_t *out)
{
	uint64_t v = 0;

	if (f->len == 0 || f->len > 20 || (f->len > 1 && f->s[0] == '0'))
		return -EINVAL;
	for (size_t i = 0; i < f->len; i++) {
		unsigned d;

		if (f->s[i] < '0' || f->s[i] > '9')
			return -EINVAL;
		d = (unsigned)(f->s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

/* The secret field: "hex:" and its bytes in hex, or its bytes as they are. */
static int parse_secret(const struct field *f, struct rs_secret *out)
{
	static const char hex[] = "hex:";
	size_t n = sizeof(hex) - 1;

	if (f->len >= n && memcmp(f->s, hex, n) == 0) {
		size_t digits = f->len - n;

		if (digits % 2 || digits / 2 < RS_SECRET_MIN || digits / 2 > RS_SECRET_MAX)
			return -EINVAL;
		for (size_t i = 0; i < digits / 2; i++) {
			int hi = hex_value(f->s[n + 2 * i]), lo = hex_value(f->s[n + 2 * i + 1]);

			if (hi < 0 || lo < 0)
				return -EINVAL;
			out->key[i] = (uint8_t)(hi << 4 | lo);
		}
		out->len = digits / 2;
		return 0;
	}
	if (f->len < RS_SECRET_MIN || f->len > RS_SECRET_MAX)
		return -EINVAL;
	memcpy(out->key, f->s, f->len);
	out->len = f->len;
	return 0;
}

/* Splits l[0..len) at blanks into at most KEY_FIELDS + 1 fields, stopping
 * at a field that starts with '#'.  Returns the count. */
static size_t split(const char *l, size_t len, struct field f[KEY_FIELDS + 1])
{
	size_t n = 0, i = 0;

	while (i < len && n < KEY_FIELDS + 1) {
		size_t start;

		while (i < len && (l[i] == ' ' || l[i] == '\t'))
			i++;
		if (i == len || l[i] == '#')
			break;
		start = i;
		while (i < len && l[i] != ' ' && l[i] != '\t')
			i++;
		f[n].s = l + start;
		f[n].len = i - start;
		n++;
	}
	return n;
}

/* One line of a keyring, its end of line gone.  Returns 0 or -EINVAL. */
static int parse_line(const char *l, size_t len, struct rs_keyring *out)
{
	struct field f[KEY_FIELDS + 1];
	struct rs_key *k;
	size_t n;

	if (len > 0 && l[len - 1] == '\r')
		len--;
	if (memchr(l, '\0', len))
		return -EINVAL;
	n = split(l, len, f);
	if (n == 0)
		return 0; /* blank or a comment */
	if (n < 2 || n > KEY_FIELDS || out->n == RS_KEYRING_MAX || !rs_key_id_ok(f[0].s, f[0].len))
		return -EINVAL;
	for (size_t i = 0; i < out->n; i++)
		if (strlen(out->keys[i].id) == f[0].len && memcmp(out->keys[i].id, f[0].s, f[0].len) == 0)
			return -EINVAL;
	k = &out->keys[out->n];
	memcpy(k->id, f[0].s, f[0].len);
	k->id[f[0].len] = '\0';
	k->since = 0;
	if (parse_secret(&f[1], &k->secret) || (n == 3 && parse_u64(&f[2], &k->since)))
		return -EINVAL;
	out->n++;
	return 0;
}

static int parse_legacy(const char *text, size_t len, struct rs_keyring *out)
{
	struct rs_key *k = &out->keys[0];

	if (len > 0 && text[len - 1] == '\n')
		len--;
	if (len < RS_SECRET_MIN || len > RS_SECRET_MAX)
		return -EINVAL;
	k->id[0] = '\0';
	k->since = 0;
	memcpy(k->secret.key, text, len);
	k->secret.len = len;
	out->n = 1;
	return 0;
}

/* Where the header line ends (past its "\n"), or 0 when text has none. */
static size_t header_end(const char *text, size_t len)
{
	size_t n = sizeof(RS_KEYRING_HEADER) - 1;

	if (len < n || memcmp(text, RS_KEYRING_HEADER, n) != 0)
		return 0;
	if (len == n)
		return n;
	if (text[n] == '\n')
		return n + 1;
	if (len > n + 1 && text[n] == '\r' && text[n + 1] == '\n')
		return n + 2;
	return 0;
}

int rs_keyring_parse(const char *text, size_t len, struct rs_keyring *out, size_t *line)
{
	size_t at, lineno = 1, bad = 0;
	int err = 0;

	rs_keyring_wipe(out);
	at = header_end(text, len);
	if (at == 0) {
		err = parse_legacy(text, len, out);
		goto cleanup;
	}
	while (at < len) {
		const char *eol = memchr(text + at, '\n', len - at);
		size_t n = eol ? (size_t)(eol - (text + at)) : len - at;

		lineno++;
		err = parse_line(text + at, n, out);
		if (err) {
			bad = lineno;
			goto cleanup;
		}
		at += n + (eol != NULL);
	}
	if (out->n == 0)
		err = -EINVAL;
cleanup:
	if (line)
		*line = bad;
	if (err)
		rs_keyring_wipe(out);
	return err;
}

void rs_keyring_wipe(struct rs_keyring *kr)
{
	OPENSSL_cleanse(kr, sizeof(*kr));
	kr->n = 0;
}
