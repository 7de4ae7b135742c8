/* ctl_json.c - JSON string escaping and key/value writers for
 * ringsteerctl.  Guarantee: whatever bytes a string holds, the output is
 * a valid JSON string literal in valid UTF-8 (RFC 8259): well-formed UTF-8
 * sequences pass through, control characters are escaped, and any byte
 * that does not start a well-formed sequence becomes U+FFFD. */
#include "ctl_json.h"

#include <inttypes.h>
#include <stddef.h>

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

void ctl_json_string(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");

	fputc('"', out);
	while (*p) {
		unsigned char c = *p;
		size_t len;

		switch (c) {
		case '"':
			fputs("\\\"", out);
			break;
		case '\\':
			fputs("\\\\", out);
			break;
		case '\b':
			fputs("\\b", out);
			break;
		case '\f':
			fputs("\\f", out);
			break;
		case '\n':
			fputs("\\n", out);
			break;
		case '\r':
			fputs("\\r", out);
			break;
		case '\t':
			fputs("\\t", out);
			break;
		default:
			if (c < 0x20 || c == 0x7f) {
				fprintf(out, "\\u%04x", c);
			} else if (c < 0x80) {
				fputc(c, out);
			} else if ((len = utf8_sequence(p)) != 0) {
				fwrite(p, 1, len, out);
				p += len;
				continue;
			} else {
				fputs("\\ufffd", out);
			}
		}
		p++;
	}
	fputc('"', out);
}

static void key(FILE *out, bool first, const char *name)
{
	if (!first)
		fputs(", ", out);
	ctl_json_string(out, name);
	fputs(": ", out);
}

void ctl_json_key_string(FILE *out, bool first, const char *name, const char *value)
{
	key(out, first, name);
	ctl_json_string(out, value);
}

void ctl_json_key_int(FILE *out, bool first, const char *name, int64_t value)
{
	key(out, first, name);
	fprintf(out, "%" PRId64, value);
}

void ctl_json_key_uint(FILE *out, bool first, const char *name, uint64_t value)
{
	key(out, first, name);
	fprintf(out, "%" PRIu64, value);
}

void ctl_json_key_bool(FILE *out, bool first, const char *name, bool value)
{
	key(out, first, name);
	fputs(value ? "true" : "false", out);
}
