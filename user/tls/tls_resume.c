/* SPDX-License-Identifier: Apache-2.0 */
/* tls_resume.c - the client's half of resumption: the last session a
 * gateway sent a ticket for, offered on the next dial.  Guarantees: a
 * session is offered only to a name its certificate names (the certificate
 * of the handshake it came from, which was verified then), because a
 * resumed handshake carries no certificate and a fleet's shared ticket key
 * would otherwise let any gateway answer for any other; the owner can
 * check the same after the handshake (rs_tls_check_resumed); a session of
 * a context that has since been rebuilt (a rotated client certificate) is
 * not kept. */
#include <errno.h>

#include <openssl/err.h>

#include "tls/tls.h"

static int on_new_session(SSL *ssl, SSL_SESSION *sess)
{
	SSL_CTX *ctx = SSL_get_SSL_CTX(ssl);
	struct rs_tls_resume *r = SSL_CTX_get_app_data(ctx);

	SSL_SESSION *copy;

	if (!r || r->ctx != ctx || !SSL_SESSION_is_resumable(sess))
		return 0; /* not taken: OpenSSL frees it */
	/* A copy: OpenSSL marks the link's own session unresumable when the
	 * link is freed without a close_notify, which is how a blip, a
	 * REDIRECT or a libevent bufferevent ends one; that rule is TLS 1.2's
	 * (RFC 5246 7.2.2), and RFC 8446 has no such rule for a ticket. */
	copy = SSL_SESSION_dup(sess);
	if (!copy) {
		ERR_clear_error();
		return 0;
	}
	SSL_SESSION_free(r->last);
	r->last = copy;
	return 0; /* sess itself is not kept */
}

int rs_tls_resume_attach(SSL_CTX *ctx, struct rs_tls_resume *r)
{
	if (!ctx || !r)
		return -EINVAL;
	if (r->ctx != ctx)
		rs_tls_resume_forget(r);
	if (SSL_CTX_set_app_data(ctx, r) != 1) {
		ERR_clear_error();
		return -ENOMEM;
	}
	r->ctx = ctx;
	/* Client sessions go to the callback alone: OpenSSL's own client cache
	 * would hold every ticket of every link. */
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(ctx, on_new_session);
	return 0;
}

void rs_tls_resume_forget(struct rs_tls_resume *r)
{
	if (!r)
		return;
	SSL_SESSION_free(r->last);
	r->last = NULL;
}

bool rs_tls_resume_offer(SSL *ssl, const char *name)
{
	SSL_CTX *ctx = ssl ? SSL_get_SSL_CTX(ssl) : NULL;
	const struct rs_tls_resume *r = ctx ? SSL_CTX_get_app_data(ctx) : NULL;
	SSL_SESSION *copy;
	bool ok;

	if (!r || r->ctx != ctx || !r->last || !SSL_SESSION_is_resumable(r->last))
		return false;
	if (!rs_tls_cert_names(SSL_SESSION_get0_peer(r->last), name))
		return false;
	/* A copy again, for the same reason as in on_new_session: the link
	 * would otherwise mark the kept session unresumable when it ends
	 * without a close_notify, and a gateway answering from its newest key
	 * sends no new ticket to replace it. */
	copy = SSL_SESSION_dup(r->last);
	ok = copy && SSL_set_session(ssl, copy) == 1; /* takes its own reference */
	SSL_SESSION_free(copy);
	ERR_clear_error();
	return ok;
}

int rs_tls_check_resumed(SSL *ssl, const char *name)
{
	if (!ssl || !SSL_session_reused(ssl))
		return 0; /* a full handshake verified the name itself */
	return rs_tls_cert_names(SSL_get0_peer_certificate(ssl), name) ? 0 : -EACCES;
}
