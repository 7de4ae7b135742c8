/* SPDX-License-Identifier: Apache-2.0 */
/* registration_wire.c - the registration records (request, reply) as
 * user/registration/agent_reg.h lays them out, and the reason names.
 *
 * Guarantees: pure functions over caller buffers (no I/O, no allocation);
 * a decoder reads nothing past buf[len) and nothing past the record's own
 * length field, and tells an incomplete record (-EAGAIN, with the bytes it
 * needs) from a bad one, so a stream reader can read exactly one record;
 * a decoded id or text is NUL-terminated and within its limit. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "registration/agent_reg.h"
#include "ringsteer/proto.h"

enum {
	TYPE_REGISTER = 1,
	TYPE_REPLY = 2,
	TYPE_MEMBER = 3,
	REQ_FIXED = RS_AGENT_REG_HEADER + 4,   /* role, flags, id_len */
	REPLY_FIXED = RS_AGENT_REG_HEADER + 8, /* status, reason, slot, text_len */
	VERSION_AT = 4,                        /* the version byte follows the length */
};

/* Both records at their largest fit the bound that readers buffer. */
_Static_assert(REQ_FIXED + RS_ID_MAX <= RS_AGENT_REG_MSG_MAX, "request bound");
_Static_assert(REPLY_FIXED + RS_AGENT_REG_TEXT_MAX <= RS_AGENT_REG_MSG_MAX, "reply bound");

static const char *const reason_names[RS_AGENT_REG_REASON_COUNT] = {
	[RS_AGENT_REG_OK] = "ok",
	[RS_AGENT_REG_MALFORMED] = "malformed",
	[RS_AGENT_REG_BAD_VERSION] = "bad_version",
	[RS_AGENT_REG_UID] = "uid",
	[RS_AGENT_REG_BAD_ID] = "bad_id",
	[RS_AGENT_REG_BAD_ROLE] = "bad_role",
	[RS_AGENT_REG_NO_FD] = "no_fd",
	[RS_AGENT_REG_TOO_MANY_FDS] = "too_many_fds",
	[RS_AGENT_REG_NOT_SOCKET] = "not_socket",
	[RS_AGENT_REG_FAMILY] = "family",
	[RS_AGENT_REG_NOT_TCP] = "not_tcp",
	[RS_AGENT_REG_NOT_LISTENING] = "not_listening",
	[RS_AGENT_REG_NETNS] = "netns",
	[RS_AGENT_REG_TIMEOUT] = "timeout",
	[RS_AGENT_REG_BUSY] = "busy",
	[RS_AGENT_REG_STORE] = "store",
	[RS_AGENT_REG_INTERNAL] = "internal",
	[RS_AGENT_REG_NO_KEY] = "no_key",
	[RS_AGENT_REG_OUTSIDE] = "outside",
	[RS_AGENT_REG_CALLER_GONE] = "caller_gone",
	[RS_AGENT_REG_KEY_IN_USE] = "key_in_use",
	[RS_AGENT_REG_FULL] = "full",
	[RS_AGENT_REG_RATE_LIMITED] = "rate_limited",
	[RS_AGENT_REG_UID_FULL] = "uid_full",
	[RS_AGENT_REG_ENDPOINT] = "endpoint",
};

static const char *const reason_texts[RS_AGENT_REG_REASON_COUNT] = {
	[RS_AGENT_REG_OK] = "registered",
	[RS_AGENT_REG_MALFORMED] = "malformed registration message",
	[RS_AGENT_REG_BAD_VERSION] = "unsupported registration version",
	[RS_AGENT_REG_UID] = "caller uid is not allowed to register",
	[RS_AGENT_REG_BAD_ID] = "bad gateway id (1..253 bytes of [a-z0-9.-])",
	[RS_AGENT_REG_BAD_ROLE] = "unknown role",
	[RS_AGENT_REG_NO_FD] = "no socket passed (SCM_RIGHTS)",
	[RS_AGENT_REG_TOO_MANY_FDS] = "more than one fd passed",
	[RS_AGENT_REG_NOT_SOCKET] = "fd is not a socket",
	[RS_AGENT_REG_FAMILY] = "socket is not AF_INET or AF_INET6",
	[RS_AGENT_REG_NOT_TCP] = "socket is not TCP",
	[RS_AGENT_REG_NOT_LISTENING] = "socket is not listening",
	[RS_AGENT_REG_NETNS] = "socket is in another network namespace",
	[RS_AGENT_REG_TIMEOUT] = "no complete request before the deadline",
	[RS_AGENT_REG_BUSY] = "agent busy: too many registrations in progress",
	[RS_AGENT_REG_STORE] = "agent: cannot store the socket",
	[RS_AGENT_REG_INTERNAL] = "agent: internal error",
	[RS_AGENT_REG_NO_KEY] = "caller shares the agent's network namespace and cgroup: nothing to key it by",
	[RS_AGENT_REG_OUTSIDE] = "caller's cgroup is outside the cgroup the agent steers",
	[RS_AGENT_REG_CALLER_GONE] = "caller exited before it could be identified",
	[RS_AGENT_REG_KEY_IN_USE] = "another member is registered for the caller's network namespace or cgroup",
	[RS_AGENT_REG_FULL] = "agent holds its maximum of registered members",
	[RS_AGENT_REG_RATE_LIMITED] = "too many registrations from the caller's network namespace or cgroup: retry later",
	[RS_AGENT_REG_UID_FULL] = "the caller's uid holds its maximum of registered members",
	[RS_AGENT_REG_ENDPOINT] = "socket's local address is not the gateway's advertised endpoint",
};

const char *rs_agent_role_name(unsigned role)
{
	switch (role) {
	case RS_AGENT_ROLE_LISTEN:
		return "listen";
	case RS_AGENT_ROLE_PEER:
		return "peer";
	default:
		return "unknown";
	}
}

const char *rs_agent_reg_reason_name(unsigned reason)
{
	return reason < RS_AGENT_REG_REASON_COUNT ? reason_names[reason] : "unknown";
}

const char *rs_agent_reg_reason_text(unsigned reason)
{
	return reason < RS_AGENT_REG_REASON_COUNT ? reason_texts[reason] : "unknown reason";
}

static void put_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint16_t get_u16(const uint8_t *p)
{
	return (uint16_t)((unsigned)p[0] << 8 | p[1]);
}

static uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static bool role_known(unsigned role)
{
	return role == RS_AGENT_ROLE_LISTEN || role == RS_AGENT_ROLE_PEER;
}

static bool text_ok(const uint8_t *s, size_t n)
{
	/* Printable ASCII only: the text ends up in log lines and reason
	 * buffers, where control bytes would forge lines. */
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return false;
	return true;
}

/* The framing both records share: the version is judged as soon as its
 * byte is in (before the length bound, so that a longer record of a later
 * version is told "version", not "malformed"), then the length. */
static int frame_total(const uint8_t *buf, size_t len, size_t fixed, size_t *total, uint8_t *version)
{
	uint32_t body;

	if (len < VERSION_AT + 1) {
		*total = VERSION_AT + 1;
		return -EAGAIN;
	}
	*version = buf[VERSION_AT];
	if (*version != RS_AGENT_REG_VERSION) {
		*total = 0;
		return -EPROTONOSUPPORT;
	}
	body = get_u32(buf);
	if (body < fixed - 4 || body > RS_AGENT_REG_MSG_MAX - 4) {
		*total = 0;
		return -EMSGSIZE;
	}
	*total = 4 + (size_t)body;
	return len < *total ? -EAGAIN : 0;
}

/* Both requests share a layout: the header, a type, two bytes (a gateway's
 * role and flags; a member's flags and a reserved byte), an id.  b6 is the
 * first of those bytes, b7 always 0. */
static int encode_id_request(uint8_t type, uint8_t b6, const char *id, uint8_t *buf, size_t cap, size_t *len)
{
	size_t id_len = strlen(id), total = REQ_FIXED + id_len;

	if (cap < total)
		return -ENOSPC;
	put_u32(buf, (uint32_t)(total - 4));
	buf[4] = RS_AGENT_REG_VERSION;
	buf[5] = type;
	buf[6] = b6;
	buf[7] = 0;
	put_u16(buf + 8, (uint16_t)id_len);
	memcpy(buf + REQ_FIXED, id, id_len);
	*len = total;
	return 0;
}

/* Decodes a request of type into id[RS_ID_MAX + 1] and *b6; with b6_zero a
 * non-zero b6 is inconsistent (-EPROTO) like the type.  *size and the
 * returns as rs_agent_reg_decode_request's, the role aside. */
static int decode_id_request(const uint8_t *buf, size_t len, uint8_t type, bool b6_zero, char *id, uint8_t *b6,
			     uint8_t *version, size_t *size)
{
	size_t total, id_len;
	int rc;

	rc = frame_total(buf, len, REQ_FIXED, &total, version);
	*size = total;
	if (rc < 0)
		return rc;
	*size = 0;
	id_len = get_u16(buf + 8);
	if (buf[5] != type || buf[7] != 0 || (b6_zero && buf[6] != 0) || id_len != total - REQ_FIXED)
		return -EPROTO;
	/* The id is checked as text, so an embedded NUL or an overlong id is a
	 * bad id, not a silently shortened one. */
	if (id_len == 0 || id_len > RS_ID_MAX || memchr(buf + REQ_FIXED, '\0', id_len))
		return -EINVAL;
	memcpy(id, buf + REQ_FIXED, id_len);
	id[id_len] = '\0';
	if (!rs_proto_member_id_ok(id))
		return -EINVAL;
	*b6 = buf[6];
	*size = total;
	return 0;
}

int rs_agent_reg_encode_request(const struct rs_agent_reg_request *req, uint8_t *buf, size_t cap,
				size_t *len)
{
	if (!req || !buf || !len || req->version != RS_AGENT_REG_VERSION || !role_known(req->role) ||
	    !rs_proto_member_id_ok(req->gateway_id))
		return -EINVAL;
	return encode_id_request(TYPE_REGISTER, req->role, req->gateway_id, buf, cap, len);
}

int rs_agent_reg_decode_request(const uint8_t *buf, size_t len, struct rs_agent_reg_request *out,
				size_t *size)
{
	uint8_t version = 0, role = 0;
	int rc = decode_id_request(buf, len, TYPE_REGISTER, false, out->gateway_id, &role, &version, size);

	if (rc == -EPROTONOSUPPORT)
		out->version = version;
	if (rc < 0)
		return rc;
	if (!role_known(role)) {
		*size = 0;
		return -ERANGE;
	}
	out->version = version;
	out->role = role;
	return 0;
}

int rs_agent_member_encode_request(const struct rs_agent_member_request *req, uint8_t *buf, size_t cap,
				   size_t *len)
{
	if (!req || !buf || !len || req->version != RS_AGENT_REG_VERSION || !rs_proto_member_id_ok(req->member_id))
		return -EINVAL;
	return encode_id_request(TYPE_MEMBER, 0, req->member_id, buf, cap, len);
}

int rs_agent_member_decode_request(const uint8_t *buf, size_t len, struct rs_agent_member_request *out,
				   size_t *size)
{
	uint8_t version = 0, flags;
	int rc = decode_id_request(buf, len, TYPE_MEMBER, true, out->member_id, &flags, &version, size);

	if (rc == -EPROTONOSUPPORT)
		out->version = version;
	if (rc == 0)
		out->version = version;
	return rc;
}

static bool status_reason_ok(unsigned status, unsigned reason)
{
	if (status == RS_AGENT_REG_STATUS_OK)
		return reason == RS_AGENT_REG_OK;
	return status == RS_AGENT_REG_STATUS_REFUSED && reason > RS_AGENT_REG_OK &&
	       reason < RS_AGENT_REG_REASON_COUNT;
}

int rs_agent_reg_encode_reply(const struct rs_agent_reg_reply *reply, uint8_t *buf, size_t cap,
			      size_t *len)
{
	size_t text_len, total;

	if (!reply || !buf || !len || !status_reason_ok(reply->status, reply->reason))
		return -EINVAL;
	text_len = strnlen(reply->text, sizeof(reply->text));
	if (text_len > RS_AGENT_REG_TEXT_MAX || !text_ok((const uint8_t *)reply->text, text_len))
		return -EINVAL;
	total = REPLY_FIXED + text_len;
	if (cap < total)
		return -ENOSPC;
	put_u32(buf, (uint32_t)(total - 4));
	buf[4] = RS_AGENT_REG_VERSION;
	buf[5] = TYPE_REPLY;
	buf[6] = reply->status;
	buf[7] = reply->reason;
	put_u32(buf + 8, reply->status == RS_AGENT_REG_STATUS_OK ? reply->slot : 0);
	put_u16(buf + 12, (uint16_t)text_len);
	memcpy(buf + REPLY_FIXED, reply->text, text_len);
	*len = total;
	return 0;
}

int rs_agent_reg_decode_reply(const uint8_t *buf, size_t len, struct rs_agent_reg_reply *out,
			      size_t *size)
{
	size_t total, text_len;
	uint8_t version = 0;
	int rc;

	rc = frame_total(buf, len, REPLY_FIXED, &total, &version);
	*size = total;
	if (rc < 0)
		return rc;
	*size = 0;
	text_len = get_u16(buf + 12);
	/* A refusal carries slot 0 (the layout says so and the encoder writes
	 * it): one with another slot is inconsistent, not a refusal to read
	 * leniently, so every reply has exactly one encoding. */
	if (buf[5] != TYPE_REPLY || !status_reason_ok(buf[6], buf[7]) ||
	    (buf[6] != RS_AGENT_REG_STATUS_OK && get_u32(buf + 8) != 0) || text_len != total - REPLY_FIXED ||
	    text_len > RS_AGENT_REG_TEXT_MAX || !text_ok(buf + REPLY_FIXED, text_len))
		return -EPROTO;
	out->status = buf[6];
	out->reason = buf[7];
	out->slot = get_u32(buf + 8);
	memcpy(out->text, buf + REPLY_FIXED, text_len);
	out->text[text_len] = '\0';
	*size = total;
	return 0;
}
