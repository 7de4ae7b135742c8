/* SPDX-License-Identifier: Apache-2.0 */
/* bev_io.h - what a bufferevent cannot do by itself: write its output
 * buffer now, outside the event loop.  bufferevent_flush() writes nothing
 * for socket and OpenSSL bufferevents (libevent 2.1), and bufferevent_free()
 * drops what was queued, so a last frame (GOODBYE) queued just before a
 * free never leaves without this. */
#ifndef RINGSTEER_BEV_IO_H
#define RINGSTEER_BEV_IO_H

#include <event2/bufferevent.h>

/* Writes what bev's output buffer holds to its socket once, without
 * blocking, through TLS when bev is an OpenSSL bufferevent whose handshake
 * is done; drains what was written.  Best effort before a free: returns the
 * bytes written (0: nothing queued), or -EAGAIN (the socket is full),
 * -ENOTCONN (a TLS handshake not done), -EIO. */
int rs_bev_write_now(struct bufferevent *bev);

#endif
