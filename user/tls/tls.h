/* SPDX-License-Identifier: Apache-2.0 */
/* tls.h - TLS 1.3 on the supervisor protocol (OpenSSL): the contexts a
 * gateway and a supervisor build from PEM files, and the checks that tie a
 * certificate to a protocol identity (a gateway id, a member id).  A
 * certificate "names" an id when one of its subjectAltName DNS entries
 * equals it (case-insensitive, no wildcards), or, with no DNS entry at all,
 * its subject CN does.  Contexts are rebuilt, never edited, so that a
 * reload (SIGHUP) swaps one pointer and live connections keep the context
 * they started with (OpenSSL counts the references). */
#ifndef RINGSTEER_TLS_H
#define RINGSTEER_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/bufferevent.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

/* PEM files; NULL when not given. */
struct rs_tls_files {
	const char *cert; /* our certificate chain */
	const char *key;  /* its private key */
	const char *ca;   /* the CA bundle peers are verified against */
};

/* A digest of the files' identity (mtime, inode, size; zeros for a file
 * that is missing): it changes when one of them is replaced, so an owner
 * can reload without a signal (tls_stamp.c). */
uint64_t rs_tls_files_stamp(const struct rs_tls_files *f);

/* Builds a server context: TLS 1.3 only, f->cert and f->key (required, and
 * checked to match); with f->ca, clients must present a certificate that
 * verifies against it (mTLS), else none is asked for.  Returns 0 and *out,
 * or -ENOENT (a file missing), -EINVAL (unusable contents, a directory, a
 * required file not given), -ENOMEM, or the errno of a file that cannot be
 * looked at (-EACCES); why (room for why_len; may be NULL) then says which
 * file and what OpenSSL said.  *out is set only on success. */
int rs_tls_server_ctx(const struct rs_tls_files *f, SSL_CTX **out, char *why, size_t why_len);

/* Builds a client context: TLS 1.3 only, servers verified against f->ca
 * (required); presents f->cert and f->key when both are given (mTLS).
 * Returns as rs_tls_server_ctx. */
int rs_tls_client_ctx(const struct rs_tls_files *f, SSL_CTX **out, char *why, size_t why_len);

/* Makes the client ssl's handshake fail unless the server's certificate
 * names name (an IP address literal is matched against IP SANs instead);
 * turns on SSL_VERIFY_PEER for ssl if its context had not.  Returns 0 or
 * -EINVAL (not a usable name: empty, a leading '.', a '*', a space or a
 * control character - forms OpenSSL would read as patterns). */
int rs_tls_expect_name(SSL *ssl, const char *name);

/* Whether cert names name (see above); false for a name
 * rs_tls_expect_name would refuse. */
bool rs_tls_cert_names(X509 *cert, const char *name);

/* The notAfter of ctx's own certificate, seconds since the epoch.  Returns
 * 0 or -ENOENT (no certificate), -EINVAL (unreadable time). */
int rs_tls_ctx_not_after(SSL_CTX *ctx, int64_t *out);

/* Why the handshake on ssl failed, as one line into buf (room for len):
 * the certificate verification result when verification failed (e.g.
 * "certificate does not name gw-2"), else the first error OpenSSL queued
 * (err, 0 if none), else "handshake failed". */
void rs_tls_describe_failure(const SSL *ssl, unsigned long err, char *buf, size_t len);

/* Why the TLS bufferevent bev (libevent_openssl; a plain one: the socket
 * error) failed, as one line into buf; *refused (if not NULL): the peer's
 * certificate was refused.  Consumes bev's queued OpenSSL errors.  Call it
 * first thing in the event callback: it reads errno (tls_bev.c). */
void rs_tls_bev_failure(struct bufferevent *bev, char *buf, size_t len, bool *refused);

/* A client bufferevent on base for the unconnected socket fd: TLS under
 * ctx (connecting; the server's certificate verified and required to name
 * name; SNI sent when name is a DNS name, not an address literal), or
 * plain when ctx is NULL.  NULL on failure, fd then closed.  The reference
 * supervisor and the swarm dial with it (tls_client_bev.c). */
struct bufferevent *rs_tls_client_bufferevent(struct event_base *base, SSL_CTX *ctx, int fd, const char *name);

/* Whether the handshake on ssl failed because the peer's certificate was
 * refused (did not verify, or did not name the expected name), as opposed to
 * the connection failing. */
bool rs_tls_peer_refused(const SSL *ssl);

#endif
