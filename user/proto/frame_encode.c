/* SPDX-License-Identifier: Apache-2.0 */
/* frame_encode.c - one frame into a caller's buffer.
 *
 * Guarantees: never writes outside buf[0..cap), never allocates, and
 * produces only frames rs_frame_decode accepts, byte for byte what it would
 * re-encode (fields are checked by the rules the decoder uses, and a string
 * field is read only up to its array's size, so an unterminated array is
 * refused, not overrun).  The writer keeps counting past cap so that one pass
 * tells -EINVAL (the frame is wrong whatever the room) from -ENOSPC. */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include "wire.h"

static_assert(WIRE_FRAME_BOUND <= RS_FRAME_MAX, "largest frame exceeds RS_FRAME_MAX");
static_assert(WIRE_FRAME_BOUND == RS_FRAME_V1_MAX, "RS_FRAME_V1_MAX is not the largest frame");
static_assert(WIRE_ACCEPT_MAX <= WIRE_FRAME_BOUND, "ACCEPT exceeds WIRE_FRAME_BOUND");
static_assert(WIRE_REDIRECT_MAX <= WIRE_FRAME_BOUND, "REDIRECT exceeds WIRE_FRAME_BOUND");
static_assert(WIRE_REJECT_MAX <= WIRE_FRAME_BOUND, "REJECT exceeds WIRE_FRAME_BOUND");
static_assert(WIRE_TOKEN_MAX <= WIRE_FRAME_BOUND, "TOKEN exceeds WIRE_FRAME_BOUND");
static_assert(WIRE_GOODBYE_MAX <= WIRE_FRAME_BOUND, "GOODBYE exceeds WIRE_FRAME_BOUND");

struct writer {
	uint8_t *buf;
	size_t cap;
	size_t len;   /* bytes the frame needs so far, may pass cap */
	bool invalid; /* a field broke its rule */
};

static void put(struct writer *w, const void *bytes, size_t n)
{
	/* Once a put does not fit, len stays past cap and no later put writes,
	 * so the buffer never holds a frame with a hole in it. */
	if (n <= w->cap && w->len <= w->cap - n)
		memcpy(w->buf + w->len, bytes, n);
	w->len += n;
}

static void put_u8(struct writer *w, uint8_t v)
{
	put(w, &v, 1);
}

static void put_u16(struct writer *w, uint16_t v)
{
	uint8_t b[2] = { (uint8_t)(v >> 8), (uint8_t)v };

	put(w, b, sizeof(b));
}

static void put_u32(struct writer *w, uint32_t v)
{
	uint8_t b[4];

	wire_put32(b, v);
	put(w, b, sizeof(b));
}

static void put_u64(struct writer *w, uint64_t v)
{
	put_u32(w, (uint32_t)(v >> 32));
	put_u32(w, (uint32_t)v);
}

/* s is a field array of size bytes; its string ends at the first NUL. */
static void put_str(struct writer *w, enum wire_str k, const char *s, size_t size)
{
	size_t n = strnlen(s, size);

	if (!wire_str_ok(k, s, n)) {
		w->invalid = true;
		return;
	}
	put_u16(w, (uint16_t)n);
	put(w, s, n);
}

static void check(struct writer *w, bool ok)
{
	if (!ok)
		w->invalid = true;
}

static void encode_hello(struct writer *w, const struct rs_hello *h)
{
	put_str(w, WIRE_STR_ID, h->member_id, sizeof(h->member_id));
	put_str(w, WIRE_STR_INSTANCE, h->instance_id, sizeof(h->instance_id));
	check(w, wire_hello_epoch_ok(h->epoch));
	put_u64(w, h->epoch);
	check(w, wire_hello_flags_ok(h->flags));
	put_u8(w, h->flags);
	put_str(w, WIRE_STR_HELLO_TOKEN, h->token, sizeof(h->token));
	put_u32(w, h->sandboxes);
}

static void encode_accept(struct writer *w, const struct rs_accept *a)
{
	put_str(w, WIRE_STR_ID, a->gateway_id, sizeof(a->gateway_id));
	put_str(w, WIRE_STR_ENDPOINT, a->peer, sizeof(a->peer));
	put_u32(w, a->heartbeat_ms);
}

static void encode_redirect(struct writer *w, const struct rs_redirect *d)
{
	put_str(w, WIRE_STR_ID, d->gateway_id, sizeof(d->gateway_id));
	put_str(w, WIRE_STR_ENDPOINT, d->peer, sizeof(d->peer));
	check(w, wire_redirect_reason_ok(d->reason));
	put_u8(w, d->reason);
}

static void encode_reject(struct writer *w, const struct rs_reject *j)
{
	check(w, wire_reject_code_ok(j->code));
	put_u16(w, j->code);
	put_u32(w, j->retry_after_ms);
	put_str(w, WIRE_STR_TEXT, j->text, sizeof(j->text));
}

static void encode_token(struct writer *w, const struct rs_token_frame *t)
{
	put_str(w, WIRE_STR_TOKEN, t->token, sizeof(t->token));
	put_u64(w, t->expiry);
}

static void encode_goodbye(struct writer *w, const struct rs_goodbye *g)
{
	check(w, wire_goodbye_reason_ok(g->reason));
	put_u8(w, g->reason);
	put_str(w, WIRE_STR_TEXT, g->text, sizeof(g->text));
}

int rs_frame_encode(const struct rs_frame *f, uint8_t *buf, size_t cap, size_t *len)
{
	struct writer w = { .buf = buf, .cap = cap };

	/* The decoder refuses every other version, so the encoder does too. */
	if (f->version != RS_PROTO_VERSION)
		return -EINVAL;
	put_u32(&w, 0); /* length, filled in once known */
	put_u8(&w, f->version);
	put_u8(&w, f->type);
	switch (f->type) {
	case RS_FRAME_HELLO:
		encode_hello(&w, &f->u.hello);
		break;
	case RS_FRAME_ACCEPT:
		encode_accept(&w, &f->u.accept);
		break;
	case RS_FRAME_REDIRECT:
		encode_redirect(&w, &f->u.redirect);
		break;
	case RS_FRAME_REJECT:
		encode_reject(&w, &f->u.reject);
		break;
	case RS_FRAME_HEARTBEAT:
	case RS_FRAME_REFRESH:
		break;
	case RS_FRAME_SANDBOXES:
		put_u32(&w, f->u.sandboxes);
		break;
	case RS_FRAME_TOKEN:
		encode_token(&w, &f->u.token);
		break;
	case RS_FRAME_GOODBYE:
		encode_goodbye(&w, &f->u.goodbye);
		break;
	default:
		return -EINVAL;
	}
	if (w.invalid)
		return -EINVAL;
	if (w.len > cap)
		return -ENOSPC;
	assert(w.len <= WIRE_FRAME_BOUND);
	wire_put32(buf, (uint32_t)(w.len - WIRE_LENGTH_FIELD));
	*len = w.len;
	return 0;
}
