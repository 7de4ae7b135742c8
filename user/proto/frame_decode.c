/* SPDX-License-Identifier: Apache-2.0 */
/* frame_decode.c - one frame off the front of a byte buffer.
 *
 * Guarantees: never reads outside buf[0..len), never allocates, and accepts
 * a frame only if its payload matches its type exactly (every field present
 * and within its rule, nothing after the last field).  Reading goes through
 * one cursor whose every access is checked against the frame's end; a failed
 * access marks the cursor bad and later accesses do nothing, so the per-type
 * functions read as the layout they decode and check once at the end. */
#include <errno.h>
#include <string.h>

#include "wire.h"

struct reader {
	const uint8_t *p;
	const uint8_t *end;
	bool bad;
};

static const uint8_t *take(struct reader *r, size_t n)
{
	const uint8_t *at = r->p;

	if (r->bad || (size_t)(r->end - r->p) < n) {
		r->bad = true;
		return NULL;
	}
	r->p += n;
	return at;
}

static uint8_t get_u8(struct reader *r)
{
	const uint8_t *b = take(r, 1);

	return b ? b[0] : 0;
}

static uint16_t get_u16(struct reader *r)
{
	const uint8_t *b = take(r, 2);

	return b ? wire_get16(b) : 0;
}

static uint32_t get_u32(struct reader *r)
{
	const uint8_t *b = take(r, 4);

	return b ? wire_get32(b) : 0;
}

static uint64_t get_u64(struct reader *r)
{
	const uint8_t *b = take(r, 8);

	return b ? wire_get64(b) : 0;
}

/* Copies a string of kind k into dst (cap bytes, the field's array) with a
 * terminating NUL.  The length is checked against the rule before any byte
 * is taken, so a long string cannot overrun dst even if cap were wrong. */
static void get_str(struct reader *r, enum wire_str k, char *dst, size_t cap)
{
	uint16_t n = get_u16(r);
	const uint8_t *b;

	if (r->bad)
		return;
	if (n > wire_str_max(k) || n >= cap) {
		r->bad = true;
		return;
	}
	b = take(r, n);
	if (!b)
		return;
	if (!wire_str_ok(k, (const char *)b, n)) {
		r->bad = true;
		return;
	}
	memcpy(dst, b, n);
	dst[n] = '\0';
}

static void check(struct reader *r, bool ok)
{
	if (!ok)
		r->bad = true;
}

static void decode_hello(struct reader *r, struct rs_hello *h)
{
	get_str(r, WIRE_STR_ID, h->member_id, sizeof(h->member_id));
	get_str(r, WIRE_STR_INSTANCE, h->instance_id, sizeof(h->instance_id));
	h->epoch = get_u64(r);
	check(r, wire_hello_epoch_ok(h->epoch));
	h->flags = get_u8(r);
	check(r, wire_hello_flags_ok(h->flags));
	get_str(r, WIRE_STR_HELLO_TOKEN, h->token, sizeof(h->token));
	h->sandboxes = get_u32(r);
}

static void decode_accept(struct reader *r, struct rs_accept *a)
{
	get_str(r, WIRE_STR_ID, a->gateway_id, sizeof(a->gateway_id));
	get_str(r, WIRE_STR_ENDPOINT, a->peer, sizeof(a->peer));
	a->heartbeat_ms = get_u32(r);
}

static void decode_redirect(struct reader *r, struct rs_redirect *d)
{
	get_str(r, WIRE_STR_ID, d->gateway_id, sizeof(d->gateway_id));
	get_str(r, WIRE_STR_ENDPOINT, d->peer, sizeof(d->peer));
	d->reason = get_u8(r);
	check(r, wire_redirect_reason_ok(d->reason));
}

static void decode_reject(struct reader *r, struct rs_reject *j)
{
	j->code = get_u16(r);
	check(r, wire_reject_code_ok(j->code));
	j->retry_after_ms = get_u32(r);
	get_str(r, WIRE_STR_TEXT, j->text, sizeof(j->text));
}

static void decode_token(struct reader *r, struct rs_token_frame *t)
{
	get_str(r, WIRE_STR_TOKEN, t->token, sizeof(t->token));
	t->expiry = get_u64(r);
}

static void decode_goodbye(struct reader *r, struct rs_goodbye *g)
{
	g->reason = get_u8(r);
	check(r, wire_goodbye_reason_ok(g->reason));
	get_str(r, WIRE_STR_TEXT, g->text, sizeof(g->text));
}

int rs_frame_decode(const uint8_t *buf, size_t len, struct rs_frame *out, size_t *consumed)
{
	struct reader r;
	size_t total;
	int rc;

	*consumed = 0;
	if (len < WIRE_LENGTH_FIELD)
		return -EAGAIN;
	/* The size is judged from the length field alone, so an oversized frame
	 * is refused before the caller buffers any of it. */
	rc = wire_frame_total(buf, &total);
	if (rc < 0)
		return rc;
	if (len < total)
		return -EAGAIN;

	memset(out, 0, sizeof(*out));
	out->version = buf[WIRE_LENGTH_FIELD];
	out->type = buf[WIRE_LENGTH_FIELD + 1];
	if (out->version != RS_PROTO_VERSION) {
		/* The header layout is the same in every version, so the frame
		 * can be skipped whole and answered with REJECT BAD_VERSION. */
		*consumed = total;
		return -EPROTONOSUPPORT;
	}

	r = (struct reader){ .p = buf + RS_FRAME_HEADER, .end = buf + total };
	switch (out->type) {
	case RS_FRAME_HELLO:
		decode_hello(&r, &out->u.hello);
		break;
	case RS_FRAME_ACCEPT:
		decode_accept(&r, &out->u.accept);
		break;
	case RS_FRAME_REDIRECT:
		decode_redirect(&r, &out->u.redirect);
		break;
	case RS_FRAME_REJECT:
		decode_reject(&r, &out->u.reject);
		break;
	case RS_FRAME_HEARTBEAT:
	case RS_FRAME_REFRESH:
		break;
	case RS_FRAME_SANDBOXES:
		out->u.sandboxes = get_u32(&r);
		break;
	case RS_FRAME_TOKEN:
		decode_token(&r, &out->u.token);
		break;
	case RS_FRAME_GOODBYE:
		decode_goodbye(&r, &out->u.goodbye);
		break;
	default:
		return -EPROTO;
	}
	if (r.bad || r.p != r.end)
		return -EPROTO;
	*consumed = total;
	return 0;
}
