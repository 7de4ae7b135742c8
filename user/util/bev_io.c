/* SPDX-License-Identifier: Apache-2.0 */
/* bev_io.c - writing a bufferevent's output outside the event loop (see
 * bev_io.h for why).  Frames are small, so the output is made contiguous
 * and handed to one send() or SSL_write(); a short write leaves the rest
 * queued, as the loop would. */
#include <errno.h>
#include <stdint.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "util/bev_io.h"

int rs_bev_write_now(struct bufferevent *bev)
{
	struct evbuffer *out = bufferevent_get_output(bev);
	size_t n = evbuffer_get_length(out);
	SSL *ssl = bufferevent_openssl_get_ssl(bev);
	unsigned char *p;
	ssize_t w;

	if (n == 0)
		return 0;
	if (n > INT32_MAX)
		n = INT32_MAX;
	p = evbuffer_pullup(out, (ev_ssize_t)n);
	if (!p)
		return -EIO;
	if (ssl) {
		int r;

		if (!SSL_is_init_finished(ssl))
			return -ENOTCONN;
		r = SSL_write(ssl, p, (int)n);
		if (r <= 0) {
			int e = SSL_get_error(ssl, r);

			ERR_clear_error();
			return e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ ? -EAGAIN : -EIO;
		}
		w = r;
	} else {
		w = send(bufferevent_getfd(bev), p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? -EAGAIN : -EIO;
	}
	evbuffer_drain(out, (size_t)w);
	return (int)w;
}
