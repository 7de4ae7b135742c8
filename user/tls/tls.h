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

#include "ringsteer/keyring.h"

/* PEM files; NULL when not given. */
struct rs_tls_files {
	const char *cert; /* our certificate chain */
	const char *key;  /* its private key */
	const char *ca;   /* the CA bundle peers are verified against */
	const char *tickets; /* a gateway's session-ticket keyring: only its stamp here */
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

/* ---- resumption across a fleet (tls_ticket.c, tls_resume.c) ----------- */

#define RS_TLS_TICKET_KEYS 3            /* the key that encrypts, and the two before it */
#define RS_TLS_TICKET_LIFETIME_S 3600   /* a ticket's lifetime, told to the client */
#define RS_TLS_TICKET_LABEL_NAME "ringsteer tls ticket name"
#define RS_TLS_TICKET_LABEL_AES "ringsteer tls ticket aes-256-cbc"
#define RS_TLS_TICKET_LABEL_HMAC "ringsteer tls ticket hmac-sha256"

/* One keyring key's ticket keys, HKDF-SHA256 of its secret (salt "ringsteer
 * tls session ticket v1", info the labels above). */
struct rs_tls_ticket_key {
	uint8_t name[16]; /* in every ticket, in the clear: picks the key */
	uint8_t aes[32];
	uint8_t hmac[32];
};

struct rs_tls_ticket_keys {
	size_t n;                                     /* 1..RS_TLS_TICKET_KEYS once derived */
	struct rs_tls_ticket_key k[RS_TLS_TICKET_KEYS]; /* k[0] encrypts; all decrypt */
};

/* Derives s's ticket keys into *out.  Returns 0, -ENOMEM or -EINVAL. */
int rs_tls_ticket_key_derive(const struct rs_secret *s, struct rs_tls_ticket_key *out);

/* Derives the ticket keys of kr at now: the signer (rs_keyring_signer) and
 * the up to two keys before it in the file.  Returns 0, -ENOKEY (no key
 * signs yet), or rs_tls_ticket_key_derive's error; *out untouched then. */
int rs_tls_ticket_keys_derive(const struct rs_keyring *kr, uint64_t now, struct rs_tls_ticket_keys *out);

/* Turns session tickets on for the server ctx under keys (read at each
 * handshake, so the owner may rewrite them in place; they must outlive
 * ctx): one ticket per handshake; a ticket under k[1..] resumes and is
 * replaced by one under k[0]; any other is a full handshake.  Uses ctx's
 * app data.  Returns 0 or -EINVAL. */
int rs_tls_ticket_keys_install(SSL_CTX *ctx, struct rs_tls_ticket_keys *keys);

/* Sends one session ticket on the server ssl now, its handshake done (for
 * a context whose num_tickets is 0, where the owner picks the moment).
 * Call it only when no application data write is pending on ssl.  Returns
 * 0 (written), -EAGAIN (goes out before the next application data), -EINVAL
 * (not a TLS 1.3 server past its handshake), -EIO. */
int rs_tls_send_ticket(SSL *ssl);

/* A client's last session (tls_resume.c). */
struct rs_tls_resume {
	SSL_CTX *ctx;      /* the context it is attached to (not owned) */
	SSL_SESSION *last; /* the last resumable session received; NULL: none */
};

/* Keeps the sessions the client ctx's servers send tickets for in r (the
 * last one), which must outlive ctx; a new ctx drops the session of the
 * old.  Uses ctx's app data.  Returns 0, -EINVAL or -ENOMEM. */
int rs_tls_resume_attach(SSL_CTX *ctx, struct rs_tls_resume *r);

/* Drops r's session. */
void rs_tls_resume_forget(struct rs_tls_resume *r);

/* Offers on ssl (before its handshake) the session kept for its context,
 * if there is one and its server's certificate names name.  Returns
 * whether it was offered.  rs_tls_client_bufferevent calls it. */
bool rs_tls_resume_offer(SSL *ssl, const char *name);

/* After a handshake: 0 when it was full (verification checked the name),
 * or resumed and the session's certificate names name; else -EACCES. */
int rs_tls_check_resumed(SSL *ssl, const char *name);

#endif
