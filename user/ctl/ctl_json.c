/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_json.c - jansson for ringsteerctl's --json.  Guarantee: whatever
 * bytes a string holds, the output is valid JSON in valid UTF-8 (RFC
 * 8259): well-formed UTF-8 sequences pass through, jansson escapes control
 * characters, and any byte that does not start a well-formed sequence
 * becomes U+FFFD before jansson sees it (json_string refuses invalid
 * UTF-8). */
#include "ctl_json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Every dump: keys as added, one line, reals to 15 significant digits (so
 * a figure printed rounded comes back as printed). */
#define DUMP_FLAGS (JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15))

static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */

/* Returns the length (2..4) of the well-formed UTF-8 sequence at s
 * (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF), or 0. */
static size_t utf8_sequence(const unsigned char *s)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len;

	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0; /* overlong */
	else if (c == 0xed)
		hi = 0x9f; /* surrogates */
	else if (c == 0xf0)
		lo = 0x90; /* overlong */
	else if (c == 0xf4)
		hi = 0x8f; /* above U+10FFFF */
	if (s[1] < lo || s[1] > hi)
		return 0;
	/* The string's NUL fails these checks, so nothing past it is read. */
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

json_t *ctl_json_text(const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t len = strlen((const char *)p), n = 0;
	char *clean;
	json_t *str;

	/* At most 3 bytes out (U+FFFD) per byte in. */
	clean = malloc(3 * len + 1);
	if (!clean)
		return NULL;
	while (*p) {
		size_t seq = *p < 0x80 ? 1 : utf8_sequence(p);

		if (seq == 0) {
			memcpy(clean + n, replacement, 3);
			n += 3;
			p++;
			continue;
		}
		memcpy(clean + n, p, seq);
		n += seq;
		p += seq;
	}
	str = json_stringn(clean, n);
	free(clean);
	return str;
}

int ctl_json_print(FILE *out, json_t *doc)
{
	int err = 0;

	if (!doc)
		return -ENOMEM;
	if (json_dumpf(doc, out, DUMP_FLAGS | JSON_ENCODE_ANY) < 0 || fputc('\n', out) == EOF)
		err = -EIO;
	json_decref(doc);
	return err;
}

void ctl_json_quote(FILE *out, const char *s)
{
	json_t *str = ctl_json_text(s);

	if (!str || json_dumpf(str, out, DUMP_FLAGS | JSON_ENCODE_ANY) < 0)
		fputs("\"?\"", out);
	json_decref(str);
}
