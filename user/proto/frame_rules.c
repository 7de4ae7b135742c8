/* SPDX-License-Identifier: Apache-2.0 */
/* frame_rules.c - what a valid field is, in one place.  The decoder refuses
 * and the encoder refuses by these same functions; none of them reads past
 * the length it is given, and none accepts a NUL byte, so a decoded string
 * is always a C string of exactly its wire length. */
#include <errno.h>
#include <string.h>

#include "wire.h"

struct str_rule {
	size_t min, max;
	bool (*byte_ok)(uint8_t c);
};

/* DNS-like, lower case: what Kubernetes pod and node names are made of, and
 * what goes into ring hashing, so one member has exactly one spelling. */
static bool id_byte(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
}

/* Printable without space: ids, endpoints and tokens are single words, so
 * a log line that prints them stays unambiguous. */
static bool graph_byte(uint8_t c)
{
	return c >= 0x21 && c <= 0x7e;
}

/* Human text may hold spaces but no control bytes (no log injection). */
static bool text_byte(uint8_t c)
{
	return c >= 0x20 && c <= 0x7e;
}

static const struct str_rule str_rules[] = {
	[WIRE_STR_ID] = { 1, RS_ID_MAX, id_byte },
	[WIRE_STR_INSTANCE] = { 1, RS_INSTANCE_MAX, graph_byte },
	[WIRE_STR_ENDPOINT] = { 1, RS_ENDPOINT_MAX, graph_byte },
	[WIRE_STR_HELLO_TOKEN] = { 0, RS_TOKEN_MAX, graph_byte },
	[WIRE_STR_TOKEN] = { 1, RS_TOKEN_MAX, graph_byte },
	[WIRE_STR_TEXT] = { 0, RS_TEXT_MAX, text_byte },
};

size_t wire_str_max(enum wire_str k)
{
	return str_rules[k].max;
}

bool wire_str_ok(enum wire_str k, const char *s, size_t len)
{
	const struct str_rule *rule = &str_rules[k];

	if (len < rule->min || len > rule->max)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!rule->byte_ok((uint8_t)s[i]))
			return false;
	return true;
}

bool rs_proto_member_id_ok(const char *id)
{
	if (!id)
		return false;
	/* strnlen stops one past the limit, so an overlong id is refused
	 * without scanning the rest of it. */
	return wire_str_ok(WIRE_STR_ID, id, strnlen(id, RS_ID_MAX + 1));
}

bool wire_type_known(uint8_t type)
{
	return type >= RS_FRAME_HELLO && type <= RS_FRAME_GOODBYE;
}

bool wire_hello_epoch_ok(uint64_t epoch)
{
	return epoch <= (uint64_t)INT64_MAX;
}

bool wire_hello_flags_ok(uint8_t flags)
{
	return (flags & ~(RS_HELLO_STAY | RS_HELLO_REDIRECTED)) == 0;
}

bool wire_redirect_reason_ok(uint8_t reason)
{
	return reason == RS_REDIRECT_PLACEMENT || reason == RS_REDIRECT_DRAIN;
}

/* Any nonzero code: a newer gateway may add codes, and an older supervisor
 * must still read the REJECT (and its retry_after_ms) rather than fail on it. */
bool wire_reject_code_ok(uint16_t code)
{
	return code != 0;
}

bool wire_goodbye_reason_ok(uint8_t reason)
{
	return reason >= RS_GOODBYE_CLOSING && reason <= RS_GOODBYE_SHUTDOWN;
}

int wire_frame_total(const uint8_t hdr[WIRE_LENGTH_FIELD], size_t *total)
{
	uint32_t n = wire_get32(hdr);

	/* Compared before adding, so a huge length cannot wrap a 32-bit size_t. */
	if (n < RS_FRAME_HEADER - WIRE_LENGTH_FIELD || n > RS_FRAME_MAX - WIRE_LENGTH_FIELD)
		return -EMSGSIZE;
	*total = WIRE_LENGTH_FIELD + (size_t)n;
	return 0;
}

int rs_frame_size(const uint8_t *buf, size_t len, size_t *total)
{
	if (len < WIRE_LENGTH_FIELD)
		return -EAGAIN;
	return wire_frame_total(buf, total);
}

const char *rs_frame_type_name(uint8_t type)
{
	switch (type) {
	case RS_FRAME_HELLO:
		return "HELLO";
	case RS_FRAME_ACCEPT:
		return "ACCEPT";
	case RS_FRAME_REDIRECT:
		return "REDIRECT";
	case RS_FRAME_REJECT:
		return "REJECT";
	case RS_FRAME_HEARTBEAT:
		return "HEARTBEAT";
	case RS_FRAME_SANDBOXES:
		return "SANDBOXES";
	case RS_FRAME_REFRESH:
		return "REFRESH";
	case RS_FRAME_TOKEN:
		return "TOKEN";
	case RS_FRAME_GOODBYE:
		return "GOODBYE";
	}
	return "UNKNOWN";
}
