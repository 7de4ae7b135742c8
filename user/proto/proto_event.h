/* SPDX-License-Identifier: Apache-2.0 */
/* proto_event.h - the codec over libevent buffers, so that the transport
 * (plain TCP now, TLS bufferevents later) never touches the codec. */
#ifndef RINGSTEER_PROTO_EVENT_H
#define RINGSTEER_PROTO_EVENT_H

#include <event2/buffer.h>

#include "ringsteer/proto.h"

/* Takes one frame off the front of in.  Returns 0 (frame decoded and
 * drained), -EAGAIN (incomplete: nothing drained), or the decoder's error;
 * on -EPROTONOSUPPORT the frame is drained and out->version is set.  On
 * -EMSGSIZE and -EPROTO nothing is drained: the caller closes.  -ENOMEM
 * when the frame cannot be made contiguous. */
int rs_proto_read(struct evbuffer *in, struct rs_frame *out);

/* Appends f to out.  Returns 0, -EINVAL (f violates a limit), -ENOMEM. */
int rs_proto_write(struct evbuffer *out, const struct rs_frame *f);

#endif
