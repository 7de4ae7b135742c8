/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_agent_reg.c - libFuzzer target for the agent registration records
 * (user/registration/registration_wire.c), every decoder (a gateway's request, a
 * member's request, the reply) on the same bytes.
 *
 * Checks, for the request and the reply alike:
 *  - the return is one of those agent_reg.h lists, and *size keeps its
 *    promise: on 0 the record's length (within the input), on -EAGAIN more
 *    than the input holds and no more than RS_AGENT_REG_MSG_MAX, else 0;
 *  - a decoded record re-encodes to exactly its own bytes (one encoding
 *    per record), decodes the same from a buffer cut to its size (the
 *    decoder never looks past its record), and every proper prefix of it
 *    is -EAGAIN (a stream reader can stop at the record's end);
 *  - a decoded id or text is NUL-terminated within its limit.
 * The input is copied to a buffer of its exact size, so ASan sees any read
 * past it.  Any disagreement aborts (libFuzzer reports a crash). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "registration/agent_reg.h"

static void check(int ok)
{
	if (!ok)
		abort();
}

static void check_size(int rc, size_t len, size_t size)
{
	if (rc == 0)
		check(size > 0 && size <= len && size <= RS_AGENT_REG_MSG_MAX);
	else if (rc == -EAGAIN)
		check(size > len && size <= RS_AGENT_REG_MSG_MAX);
	else
		check(size == 0);
}

static void check_request(const uint8_t *buf, size_t len)
{
	struct rs_agent_reg_request req, again;
	uint8_t enc[RS_AGENT_REG_MSG_MAX];
	size_t size = 7777, n = 0, size2 = 0;
	int rc = rs_agent_reg_decode_request(buf, len, &req, &size);

	check(rc == 0 || rc == -EAGAIN || rc == -EPROTONOSUPPORT || rc == -EMSGSIZE || rc == -EPROTO ||
	      rc == -EINVAL || rc == -ERANGE);
	check_size(rc, len, size);
	if (rc == -EPROTONOSUPPORT)
		check(req.version != RS_AGENT_REG_VERSION);
	if (rc != 0)
		return;
	check(memchr(req.gateway_id, '\0', sizeof(req.gateway_id)) != NULL);
	check(rs_agent_reg_encode_request(&req, enc, sizeof(enc), &n) == 0);
	check(n == size && memcmp(enc, buf, n) == 0);
	check(rs_agent_reg_decode_request(enc, n, &again, &size2) == 0 && size2 == n);
	check(again.role == req.role && strcmp(again.gateway_id, req.gateway_id) == 0);
	for (size_t k = 0; k < n; k++) {
		check(rs_agent_reg_decode_request(enc, k, &again, &size2) == -EAGAIN);
		check(size2 > k && size2 <= n);
	}
}

static void check_member(const uint8_t *buf, size_t len)
{
	struct rs_agent_member_request req, again;
	uint8_t enc[RS_AGENT_REG_MSG_MAX];
	size_t size = 7777, n = 0, size2 = 0;
	int rc = rs_agent_member_decode_request(buf, len, &req, &size);

	check(rc == 0 || rc == -EAGAIN || rc == -EPROTONOSUPPORT || rc == -EMSGSIZE || rc == -EPROTO ||
	      rc == -EINVAL);
	check_size(rc, len, size);
	if (rc == -EPROTONOSUPPORT)
		check(req.version != RS_AGENT_REG_VERSION);
	if (rc != 0)
		return;
	check(memchr(req.member_id, '\0', sizeof(req.member_id)) != NULL);
	check(rs_agent_member_encode_request(&req, enc, sizeof(enc), &n) == 0);
	check(n == size && memcmp(enc, buf, n) == 0);
	check(rs_agent_member_decode_request(enc, n, &again, &size2) == 0 && size2 == n);
	check(strcmp(again.member_id, req.member_id) == 0);
	for (size_t k = 0; k < n; k++) {
		check(rs_agent_member_decode_request(enc, k, &again, &size2) == -EAGAIN);
		check(size2 > k && size2 <= n);
	}
}

static void check_reply(const uint8_t *buf, size_t len)
{
	struct rs_agent_reg_reply rep, again;
	uint8_t enc[RS_AGENT_REG_MSG_MAX];
	size_t size = 7777, n = 0, size2 = 0;
	int rc = rs_agent_reg_decode_reply(buf, len, &rep, &size);

	check(rc == 0 || rc == -EAGAIN || rc == -EPROTONOSUPPORT || rc == -EMSGSIZE || rc == -EPROTO);
	check_size(rc, len, size);
	if (rc != 0)
		return;
	check(memchr(rep.text, '\0', sizeof(rep.text)) != NULL);
	check(rs_agent_reg_encode_reply(&rep, enc, sizeof(enc), &n) == 0);
	check(n == size && memcmp(enc, buf, n) == 0);
	check(rs_agent_reg_decode_reply(enc, n, &again, &size2) == 0 && size2 == n);
	check(again.status == rep.status && again.reason == rep.reason && again.slot == rep.slot &&
	      strcmp(again.text, rep.text) == 0);
	for (size_t k = 0; k < n; k++) {
		check(rs_agent_reg_decode_reply(enc, k, &again, &size2) == -EAGAIN);
		check(size2 > k && size2 <= n);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *buf = malloc(size ? size : 1);

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	check_request(buf, size);
	check_member(buf, size);
	check_reply(buf, size);
	free(buf);
	return 0;
}
