/* SPDX-License-Identifier: Apache-2.0 */
/* tls_client_bev.c - the client end of a supervisor link: one place that
 * decides how a dial is wrapped (TLS 1.3 bound to the name the peer must
 * carry, or plain), so every client of the protocol refuses the same
 * certificates. */
#include <string.h>
#include <unistd.h>

#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>

#include "tls/tls.h"

struct bufferevent *rs_tls_client_bufferevent(struct event_base *base, SSL_CTX *ctx, int fd, const char *name)
{
	struct bufferevent *bev;
	SSL *ssl;

	if (!ctx) {
		bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
		if (!bev)
			close(fd);
		return bev;
	}
	ssl = SSL_new(ctx);
	if (!ssl || rs_tls_expect_name(ssl, name) != 0)
		goto fail;
	/* Only where ctx keeps sessions (rs_tls_resume_attach), and only a
	 * session whose certificate names name. */
	(void)rs_tls_resume_offer(ssl, name);
	/* SNI carries DNS names only; an address literal is left out. */
	if (!strchr(name, ':') && strspn(name, "0123456789.") != strlen(name) &&
	    SSL_set_tlsext_host_name(ssl, name) != 1)
		goto fail;
	bev = bufferevent_openssl_socket_new(base, fd, ssl, BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE);
	if (!bev)
		goto fail;
	bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	return bev;
fail:
	SSL_free(ssl);
	ERR_clear_error();
	close(fd);
	return NULL;
}
