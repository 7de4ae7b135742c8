/* SPDX-License-Identifier: Apache-2.0 */
/* wire.h - what the protocol's decoder, encoder and evbuffer glue share
 * (internal to user/proto/): big-endian access, the frame length rule, and
 * the field rules.  Both directions ask the same rule functions, so the
 * encoder refuses exactly what the decoder refuses: that is the round-trip
 * property the fuzz target checks, held by construction. */
#ifndef RS_PROTO_WIRE_H
#define RS_PROTO_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringsteer/proto.h"

/* Bytes in the length field, which does not count itself. */
#define WIRE_LENGTH_FIELD 4

/* The longest frame the encoder can produce with the current limits (a HELLO
 * with every string at its limit).  frame_encode.c asserts at compile time
 * that every type fits in it and that it fits in RS_FRAME_MAX, so a writer
 * can encode into a buffer of this size without asking for the exact one. */
#define WIRE_HELLO_MAX (RS_FRAME_HEADER + (2 + RS_ID_MAX) + (2 + RS_INSTANCE_MAX) + 8 + 1 + \
			(2 + RS_TOKEN_MAX) + 4)
#define WIRE_ACCEPT_MAX (RS_FRAME_HEADER + (2 + RS_ID_MAX) + (2 + RS_ENDPOINT_MAX) + 4)
#define WIRE_REDIRECT_MAX (RS_FRAME_HEADER + (2 + RS_ID_MAX) + (2 + RS_ENDPOINT_MAX) + 1)
#define WIRE_REJECT_MAX (RS_FRAME_HEADER + 2 + 4 + (2 + RS_TEXT_MAX))
#define WIRE_TOKEN_MAX (RS_FRAME_HEADER + (2 + RS_TOKEN_MAX) + 8)
#define WIRE_GOODBYE_MAX (RS_FRAME_HEADER + 1 + (2 + RS_TEXT_MAX))
#define WIRE_FRAME_BOUND WIRE_HELLO_MAX

/* The kinds of string field; each has a length range and a byte class. */
enum wire_str {
	WIRE_STR_ID,          /* member / gateway id: 1..RS_ID_MAX of [a-z0-9.-] */
	WIRE_STR_INSTANCE,    /* 1..RS_INSTANCE_MAX of 0x21..0x7e */
	WIRE_STR_ENDPOINT,    /* 1..RS_ENDPOINT_MAX of 0x21..0x7e */
	WIRE_STR_HELLO_TOKEN, /* 0..RS_TOKEN_MAX of 0x21..0x7e (a gateway may run without tokens) */
	WIRE_STR_TOKEN,       /* 1..RS_TOKEN_MAX of 0x21..0x7e */
	WIRE_STR_TEXT,        /* 0..RS_TEXT_MAX of 0x20..0x7e */
};

/* Returns the longest string of kind k, in bytes. */
size_t wire_str_max(enum wire_str k);

/* Returns whether s[0..len) is a valid string of kind k (length and bytes;
 * a NUL byte is never valid). */
bool wire_str_ok(enum wire_str k, const char *s, size_t len);

bool wire_type_known(uint8_t type);
bool wire_hello_flags_ok(uint8_t flags);

/* Whether a HELLO epoch is one the session ledger can hold: at most
 * INT64_MAX (a signed 64-bit column on both backends).  Refusing the rest
 * at decode keeps a peer's epoch from ever reaching the store. */
bool wire_hello_epoch_ok(uint64_t epoch);
bool wire_redirect_reason_ok(uint8_t reason);
bool wire_reject_code_ok(uint16_t code);
bool wire_goodbye_reason_ok(uint8_t reason);

/* Reads the length field at hdr[0..4) and sets *total to the whole frame's
 * size, length field included.  Returns 0, or -EMSGSIZE when the frame would
 * exceed RS_FRAME_MAX or could not hold the version and type bytes. */
int wire_frame_total(const uint8_t hdr[WIRE_LENGTH_FIELD], size_t *total);

static inline uint16_t wire_get16(const uint8_t *b)
{
	return (uint16_t)((unsigned)b[0] << 8 | b[1]);
}

static inline uint32_t wire_get32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static inline uint64_t wire_get64(const uint8_t *b)
{
	return (uint64_t)wire_get32(b) << 32 | wire_get32(b + 4);
}

static inline void wire_put32(uint8_t *b, uint32_t v)
{
	b[0] = (uint8_t)(v >> 24);
	b[1] = (uint8_t)(v >> 16);
	b[2] = (uint8_t)(v >> 8);
	b[3] = (uint8_t)v;
}

#endif
