/* SPDX-License-Identifier: Apache-2.0 */
/* proto.h - the supervisor <-> gateway wire protocol (docs/PROTOCOL.md).
 *
 * Every frame: u32 length (big-endian; counts the bytes after itself),
 * u8 version, u8 type, then the type's payload.  Integers are big-endian;
 * a string is a u16 length then that many bytes (no NUL).  A frame is at most
 * RS_FRAME_MAX bytes including its length field.  The codec is pure (no I/O,
 * no allocation): decoded strings are copied, NUL-terminated, into the
 * fixed arrays of struct rs_frame, whose sizes are the protocol's limits. */
#ifndef RINGSTEER_PROTO_H
#define RINGSTEER_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringsteer/ring.h"

#include "ringsteer/export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RS_PROTO_VERSION 1
#define RS_FRAME_MAX 65536      /* bytes, length field included */
#define RS_FRAME_HEADER 6       /* u32 length, u8 version, u8 type */
#define RS_FRAME_V1_MAX 1366    /* the largest version-1 frame (a HELLO with every
				 * string at its limit): a receiver may refuse
				 * larger frames without refusing a valid peer */
#define RS_TOKEN_MAX 1024       /* bytes of a token */
#define RS_ENDPOINT_MAX 64      /* "ADDR:PORT", IPv6 as "[ADDR]:PORT" */
#define RS_TEXT_MAX 512         /* REJECT / GOODBYE text */
#define RS_INSTANCE_MAX 64      /* instance id: printable ASCII */

enum rs_frame_type {
	RS_FRAME_HELLO = 1,     /* supervisor: who it is, what it asks */
	RS_FRAME_ACCEPT = 2,    /* gateway: attached here */
	RS_FRAME_REDIRECT = 3,  /* gateway: go to that gateway's peer endpoint */
	RS_FRAME_REJECT = 4,    /* gateway: refused, with a code and text; then close */
	RS_FRAME_HEARTBEAT = 5, /* either side, empty payload */
	RS_FRAME_SANDBOXES = 6, /* supervisor: its sandbox count changed */
	RS_FRAME_REFRESH = 7,   /* supervisor: asks for a new token */
	RS_FRAME_TOKEN = 8,     /* gateway: the new token and its expiry */
	RS_FRAME_GOODBYE = 9,   /* either side: closing on purpose, with a reason */
};

/* HELLO flags. */
#define RS_HELLO_STAY 0x01       /* accept me where I land unless that gateway drains */
#define RS_HELLO_REDIRECTED 0x02 /* I dial you because a gateway redirected me */

enum rs_redirect_reason {
	RS_REDIRECT_PLACEMENT = 1,
	RS_REDIRECT_DRAIN = 2,
};

enum rs_reject_code {
	RS_REJECT_BAD_FRAME = 1,     /* malformed, oversized or unexpected frame */
	RS_REJECT_BAD_VERSION = 2,   /* a version this gateway does not speak */
	RS_REJECT_BAD_TOKEN = 3,     /* token invalid, expired, or for another member */
	RS_REJECT_BAD_MEMBER = 4,    /* member id not 1..253 bytes of [a-z0-9.-] */
	RS_REJECT_HELLO_TIMEOUT = 5, /* no HELLO within the deadline */
	RS_REJECT_SUPERSEDED = 6,    /* a newer epoch of this member is attached */
	RS_REJECT_UNAVAILABLE = 7,   /* store unreachable, draining with nowhere to go, ... */
	RS_REJECT_LIMIT = 8,         /* a limit was reached; retry_after_ms says when */
};

enum rs_goodbye_reason {
	RS_GOODBYE_CLOSING = 1,    /* ordinary close (supervisor stopping, token redial) */
	RS_GOODBYE_SUPERSEDED = 2, /* gateway: a newer connection of this member took over */
	RS_GOODBYE_SHUTDOWN = 3,   /* gateway: stopping */
};

struct rs_hello {
	char member_id[RS_ID_MAX + 1];
	char instance_id[RS_INSTANCE_MAX + 1];
	uint64_t epoch;     /* grows with every connection a supervisor makes;
			     * at most INT64_MAX (the decoder refuses more) */
	uint8_t flags;      /* RS_HELLO_* */
	char token[RS_TOKEN_MAX + 1];
	uint32_t sandboxes;
};

struct rs_accept {
	char gateway_id[RS_ID_MAX + 1];
	char peer[RS_ENDPOINT_MAX + 1]; /* where to redial this gateway directly */
	uint32_t heartbeat_ms;
};

struct rs_redirect {
	char gateway_id[RS_ID_MAX + 1];
	char peer[RS_ENDPOINT_MAX + 1];
	uint8_t reason; /* enum rs_redirect_reason */
};

struct rs_reject {
	uint16_t code; /* enum rs_reject_code */
	uint32_t retry_after_ms; /* 0: do not retry sooner than the usual backoff */
	char text[RS_TEXT_MAX + 1];
};

struct rs_token_frame {
	char token[RS_TOKEN_MAX + 1];
	uint64_t expiry; /* unix seconds */
};

struct rs_goodbye {
	uint8_t reason; /* enum rs_goodbye_reason */
	char text[RS_TEXT_MAX + 1];
};

struct rs_frame {
	uint8_t version;
	uint8_t type; /* enum rs_frame_type */
	union {
		struct rs_hello hello;
		struct rs_accept accept;
		struct rs_redirect redirect;
		struct rs_reject reject;
		uint32_t sandboxes;          /* SANDBOXES */
		struct rs_token_frame token; /* TOKEN */
		struct rs_goodbye goodbye;
		/* HEARTBEAT and REFRESH carry nothing. */
	} u;
};

/* Returns whether id is 1..RS_ID_MAX bytes of [a-z0-9.-] (a DNS-like name). */
RS_EXPORT bool rs_proto_member_id_ok(const char *id);

/* Decodes one frame from the front of buf[0..len).  Returns 0 and sets
 * *consumed (> 0) when a whole frame was decoded into *out; -EAGAIN when
 * more bytes are needed (nothing consumed); -EMSGSIZE when the length
 * field announces more than RS_FRAME_MAX or fewer than the header;
 * -EPROTONOSUPPORT for a version other than RS_PROTO_VERSION (*out->version
 * and *consumed are set, so the caller can answer and skip it); -EPROTO for
 * an unknown type, a payload that does not match its type exactly (short,
 * trailing bytes, a string over its limit or holding NUL, a bad member id
 * in HELLO, a HELLO epoch above INT64_MAX, an unknown flag or reason).  Never reads outside buf. */
RS_EXPORT int rs_frame_decode(const uint8_t *buf, size_t len, struct rs_frame *out, size_t *consumed);

/* Reads the length field at the front of buf[0..len) and sets *total to
 * the whole frame's size, length field included, without looking at the
 * rest: a receiver with a lower limit than RS_FRAME_MAX refuses a frame by
 * it before buffering any of it.  Returns 0, -EAGAIN (len < 4), or
 * -EMSGSIZE (the same bounds as rs_frame_decode). */
RS_EXPORT int rs_frame_size(const uint8_t *buf, size_t len, size_t *total);

/* Encodes f into buf (room for cap bytes) and sets *len.  Returns 0,
 * -ENOSPC when cap is too small, -EINVAL when f violates a limit the decoder
 * would refuse, a version other than RS_PROTO_VERSION included (so a peer
 * never receives what it must reject). */
RS_EXPORT int rs_frame_encode(const struct rs_frame *f, uint8_t *buf, size_t cap, size_t *len);

/* Returns the type's upper-case name ("HELLO", ...) or "UNKNOWN". */
RS_EXPORT const char *rs_frame_type_name(uint8_t type);

#ifdef __cplusplus
}
#endif

#endif
