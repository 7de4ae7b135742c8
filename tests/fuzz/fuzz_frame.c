/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_frame.c - libFuzzer target for the wire codec.
 *
 * Decodes the input frame after frame until the first error, and checks:
 * every decoded frame re-encodes to exactly its own bytes (the encoder and
 * decoder agree on every rule); a skipped other-version frame and a decoded
 * frame each consume a whole frame inside the input; and rs_proto_read over
 * an evbuffer holding the same bytes (in three chains, so the pullup has to
 * join them) returns the same results and drains the same bytes.
 * Any disagreement aborts, which libFuzzer reports as a crash. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "ringsteer/proto.h"
#include "proto/proto_event.h"
#include "proto/wire.h"

static void check(int ok)
{
	if (!ok)
		abort();
}

static void check_reencodes(const struct rs_frame *f, const uint8_t *bytes, size_t n)
{
	uint8_t enc[WIRE_FRAME_BOUND];
	size_t len = 0;

	/* No valid frame is longer than the encoder's bound. */
	check(n <= sizeof(enc));
	check(rs_frame_encode(f, enc, sizeof(enc), &len) == 0);
	check(len == n);
	check(memcmp(enc, bytes, n) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct evbuffer *in = evbuffer_new();
	size_t off = 0;
	/* Chain boundaries that depend on the input's size, not its framing. */
	size_t cut1 = size % 7; /* <= size */
	size_t cut2 = cut1 + (size - cut1) / 2;

	if (!in)
		return 0;
	if (evbuffer_add_reference(in, data, cut1, NULL, NULL) < 0 ||
	    evbuffer_add_reference(in, data + cut1, cut2 - cut1, NULL, NULL) < 0 ||
	    evbuffer_add_reference(in, data + cut2, size - cut2, NULL, NULL) < 0)
		goto cleanup;

	/* Every success consumes at least a header, so this ends. */
	for (;;) {
		struct rs_frame direct, viaev;
		size_t consumed = 0;
		int rc = rs_frame_decode(data + off, size - off, &direct, &consumed);
		int rc_ev = rs_proto_read(in, &viaev);

		check(rc == rc_ev);
		if (rc != 0 && rc != -EPROTONOSUPPORT) {
			check(rc == -EAGAIN || rc == -EMSGSIZE || rc == -EPROTO);
			check(consumed == 0);
			check(evbuffer_get_length(in) == size - off);
			break;
		}
		check(consumed >= RS_FRAME_HEADER && consumed <= RS_FRAME_MAX);
		check(consumed <= size - off);
		check(direct.version == viaev.version && direct.type == viaev.type);
		if (rc == 0) {
			check(direct.version == RS_PROTO_VERSION);
			check(memcmp(&direct, &viaev, sizeof(direct)) == 0);
			check_reencodes(&direct, data + off, consumed);
		} else {
			check(direct.version != RS_PROTO_VERSION);
		}
		off += consumed;
		check(evbuffer_get_length(in) == size - off);
	}

cleanup:
	evbuffer_free(in);
	return 0;
}
