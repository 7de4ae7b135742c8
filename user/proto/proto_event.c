/* SPDX-License-Identifier: Apache-2.0 */
/* proto_event.c - the codec over libevent evbuffers, so a transport (plain
 * TCP now, TLS bufferevents later) hands whole buffers over and never frames
 * bytes itself.
 *
 * Guarantees: a frame is removed from the input only when it was decoded or
 * skipped as another version; an incomplete, oversized or malformed frame
 * leaves the input as it was.  Only the announced frame is made contiguous,
 * and only once all of it has arrived, so a peer announcing 64 KiB and
 * sending it slowly costs one linearisation, not one per read. */
#include <errno.h>

#include <event2/buffer.h>

#include "proto/proto_event.h"
#include "wire.h"

int rs_proto_read(struct evbuffer *in, struct rs_frame *out)
{
	uint8_t hdr[WIRE_LENGTH_FIELD];
	const uint8_t *frame;
	size_t total, consumed;
	int rc;

	if (evbuffer_get_length(in) < sizeof(hdr))
		return -EAGAIN;
	if (evbuffer_copyout(in, hdr, sizeof(hdr)) != (ev_ssize_t)sizeof(hdr))
		return -EAGAIN;
	rc = wire_frame_total(hdr, &total);
	if (rc < 0)
		return rc;
	if (evbuffer_get_length(in) < total)
		return -EAGAIN;
	frame = evbuffer_pullup(in, (ev_ssize_t)total);
	if (!frame)
		return -ENOMEM;

	rc = rs_frame_decode(frame, total, out, &consumed);
	if (rc == 0 || rc == -EPROTONOSUPPORT) {
		if (evbuffer_drain(in, consumed) < 0)
			return -ENOMEM;
	}
	return rc;
}

int rs_proto_write(struct evbuffer *out, const struct rs_frame *f)
{
	/* Every frame fits in WIRE_FRAME_BOUND (about 1.4 KiB, asserted in
	 * frame_encode.c), so the stack holds it and -ENOSPC cannot happen. */
	uint8_t buf[WIRE_FRAME_BOUND];
	size_t len;
	int rc;

	rc = rs_frame_encode(f, buf, sizeof(buf), &len);
	if (rc < 0)
		return rc;
	if (evbuffer_add(out, buf, len) < 0)
		return -ENOMEM;
	return 0;
}
