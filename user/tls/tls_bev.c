/* SPDX-License-Identifier: Apache-2.0 */
/* tls_bev.c - why a TLS bufferevent failed, in words an operator can act
 * on.  libevent's OpenSSL bufferevent queues two kinds of codes behind
 * bufferevent_get_openssl_error(): OpenSSL's own errors (a library and a
 * reason) and, when the socket failed under SSL (SSL_ERROR_SYSCALL), the
 * bare SSL_get_error() value with no library; printed as an OpenSSL error
 * the latter reads "error:00000005:lib(0)::reason(5)".  Here the real
 * OpenSSL error wins, else the socket's errno, else a plain sentence. */
#include <errno.h>
#include <string.h>

#include <event2/bufferevent_ssl.h>
#include <event2/util.h>
#include <openssl/err.h>

#include "tls/tls.h"

void rs_tls_bev_failure(struct bufferevent *bev, char *buf, size_t len, bool *refused)
{
	SSL *ssl = bufferevent_openssl_get_ssl(bev);
	int sys_err = EVUTIL_SOCKET_ERROR(); /* before any call below can change it */
	unsigned long e, err = 0;

	if (refused)
		*refused = false;
	if (!buf || len == 0)
		return;
	if (!ssl) {
		snprintf(buf, len, "%s", sys_err ? evutil_socket_error_to_string(sys_err) : "connection failed");
		return;
	}
	/* Drain them all: what is left would be blamed on a later failure. */
	while ((e = bufferevent_get_openssl_error(bev)) != 0)
		if (err == 0 && ERR_GET_LIB(e) != 0)
			err = e;
	ERR_clear_error();
	if (refused)
		*refused = rs_tls_peer_refused(ssl);
	if (err != 0 || SSL_get_verify_result(ssl) != X509_V_OK)
		rs_tls_describe_failure(ssl, err, buf, len);
	else if (sys_err != 0)
		snprintf(buf, len, "%s", evutil_socket_error_to_string(sys_err));
	else
		snprintf(buf, len, "connection closed during the TLS handshake");
}
