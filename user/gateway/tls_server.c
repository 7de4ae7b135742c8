/* SPDX-License-Identifier: Apache-2.0 */
/* tls_server.c - the gateway's TLS: one context for both listeners, built from
 * --tls-cert/--tls-key (and --tls-ca: client certificates required, mTLS),
 * rebuilt on SIGHUP.  A reload swaps the pointer new connections use; an
 * SSL holds a reference to the context it was made from, so connections
 * already up keep theirs and nothing is dropped.  Files that do not load
 * leave the old context serving: a botched rotation is an error in the log
 * and in ringsteer_gateway_tls_reloads_total{result="error"}, not an outage.
 * The heartbeat also reloads when the files change (mtime, inode, size),
 * so that a Kubernetes Secret or cert-manager rotation, which swaps the
 * files and sends no signal, takes effect without anyone's help; a change
 * that does not load is tried again only when the files change again.
 * Plaintext only with --insecure, which is logged at start and exported
 * (ringsteer_gateway_insecure).  --tls-ticket-keys is read with the other
 * files; what the tickets do is tls_tickets.c's. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#include <event2/bufferevent_ssl.h>
#include <openssl/crypto.h>
#include <openssl/err.h>

#include "gateway.h"
#include "util/logfmt.h"
#include "tls/tls.h"

static struct rs_tls_files files_of(const struct gateway *gw)
{
	return (struct rs_tls_files){ .cert = gw->cfg.tls_cert, .key = gw->cfg.tls_key, .ca = gw->cfg.tls_ca,
				      .tickets = gw->cfg.tls_ticket_keys };
}

/* The application secrets of a handshake, for its link's records
 * (conn.c); the handshake's other secrets are not kept. */
static void on_keylog(const SSL *ssl, const char *line)
{
	struct rs_tls_secrets *s = SSL_get_app_data(ssl);

	if (s)
		rs_tls_secrets_note(s, line);
}

void gw_tls_secrets_to(struct bufferevent *bev, struct rs_tls_secrets *s)
{
	SSL *ssl = bufferevent_openssl_get_ssl(bev);

	if (ssl)
		SSL_set_app_data(ssl, s);
}

/* A context, and with --tls-ticket-keys the keyring and keys it will use
 * once the caller has put them in gw (the context reads gw->tickets). */
static int build(struct gateway *gw, SSL_CTX **ctx, int64_t *not_after, struct rs_keyring *ring,
		 struct rs_tls_ticket_keys *keys, char *why, size_t why_len)
{
	const struct rs_tls_files files = files_of(gw);
	int err;

	if (gw->cfg.tls_ticket_keys && (err = gw_tickets_load(gw, ring, keys, why, why_len)) < 0)
		return err;
	err = rs_tls_server_ctx(&files, ctx, why, why_len);
	if (err)
		return err;
	if (gw->cfg.tls_ticket_keys && (err = gw_tickets_install(gw, *ctx, why, why_len)) < 0) {
		SSL_CTX_free(*ctx);
		*ctx = NULL;
		return err;
	}
	SSL_CTX_set_keylog_callback(*ctx, on_keylog);
	if (rs_tls_ctx_not_after(*ctx, not_after) != 0)
		*not_after = 0;
	return 0;
}

static uint64_t files_stamp(const struct gateway *gw)
{
	const struct rs_tls_files files = files_of(gw);

	return rs_tls_files_stamp(&files);
}

static void log_loaded(struct gateway *gw, const char *event)
{
	char expiry[24];

	snprintf(expiry, sizeof(expiry), "%lld", (long long)gw->tls_not_after);
	rs_log(stderr, "info", gw->who, "event", event, "cert", gw->cfg.tls_cert, "client_ca",
	       gw->cfg.tls_ca ? gw->cfg.tls_ca : "none", "not_after", expiry, "ticket_key", gw_tickets_signer(gw), NULL);
}

int gw_tls_init(struct gateway *gw)
{
	char why[256] = "";
	int err;

	if (gw->cfg.insecure) {
		rs_log(stderr, "warn", gw->who, "event", "insecure", "detail",
		       "plaintext: tokens and sessions cross the network in the clear (--insecure)", NULL);
		return 0;
	}
	gw->tls_stamp = files_stamp(gw);
	err = build(gw, &gw->tls, &gw->tls_not_after, &gw->ticket_ring, &gw->tickets, why, sizeof(why));
	if (err) {
		rs_log(stderr, "error", gw->who, "event", "tls_failed", "error", why, NULL);
		return err;
	}
	/* Without the cipher context links keep their SSL, as before; so do
	 * they with --tls-ticket-keys, whose ticket the SSL sends after the
	 * ACCEPT (records start at sequence 0 right after the handshake). */
	gw->tls_records = !gw->cfg.tls_ticket_keys && rs_tls_scratch_init(&gw->tls_scratch) == 0;
	log_loaded(gw, "tls_loaded");
	return 0;
}

void gw_tls_reload(struct gateway *gw)
{
	struct rs_keyring *ring = calloc(1, sizeof(*ring)); /* 33 KiB: off the stack */
	struct rs_tls_ticket_keys keys = { 0 };
	SSL_CTX *fresh = NULL;
	int64_t not_after = 0;
	char why[256] = "";

	if (!gw->tls)
		goto cleanup; /* plaintext: nothing to reload */
	gw->tls_stamp = files_stamp(gw);
	if (!ring) {
		snprintf(why, sizeof(why), "out of memory");
	} else if (build(gw, &fresh, &not_after, ring, &keys, why, sizeof(why)) == 0) {
		SSL_CTX_free(gw->tls); /* connections made from it hold their own reference */
		gw->tls = fresh;
		gw->tls_not_after = not_after;
		if (gw->cfg.tls_ticket_keys) {
			/* Contexts old and new read these: the old ones' handshakes
			 * in flight take the new keys too. */
			rs_keyring_wipe(&gw->ticket_ring);
			gw->ticket_ring = *ring;
			gw->tickets = keys;
		}
		gw->counters.tls_reloads_ok++;
		log_loaded(gw, "tls_reloaded");
		goto cleanup;
	}
	gw->counters.tls_reloads_failed++;
	rs_log(stderr, "error", gw->who, "event", "tls_reload_failed", "error", why, "detail",
	       "the previous certificate and ticket keys still serve", NULL);
cleanup:
	if (ring)
		rs_keyring_wipe(ring);
	free(ring);
	OPENSSL_cleanse(&keys, sizeof(keys));
}

void gw_tls_watch(struct gateway *gw)
{
	if (gw->tls && files_stamp(gw) != gw->tls_stamp)
		gw_tls_reload(gw);
	gw_tickets_watch(gw);
}

struct bufferevent *gw_tls_bufferevent(struct gateway *gw, evutil_socket_t fd)
{
	struct bufferevent *bev;
	SSL *ssl;

	if (!gw->tls) {
		bev = bufferevent_socket_new(gw->base, fd, BEV_OPT_CLOSE_ON_FREE);
		if (!bev)
			evutil_closesocket(fd);
		return bev;
	}
	ssl = SSL_new(gw->tls);
	if (!ssl) {
		ERR_clear_error();
		evutil_closesocket(fd);
		return NULL;
	}
	/* CLOSE_ON_FREE: freeing the bufferevent frees ssl and closes fd. */
	bev = bufferevent_openssl_socket_new(gw->base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
	if (!bev) {
		SSL_free(ssl);
		evutil_closesocket(fd);
		return NULL;
	}
	/* A supervisor that exits without close_notify is a departure, not an attack. */
	bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	return bev;
}

bool gw_tls_client_is(struct bufferevent *bev, const struct gw_tls_peer *peer, const struct gateway *gw,
		      const char *member)
{
	const unsigned char *der = peer->der;
	SSL *ssl;
	X509 *cert;
	bool named;

	if (!gw->tls || !gw->cfg.tls_ca)
		return true;
	ssl = bufferevent_openssl_get_ssl(bev);
	if (der)
		cert = d2i_X509(NULL, &der, (long)peer->len);
	else
		cert = ssl ? SSL_get1_peer_certificate(ssl) : NULL;
	ERR_clear_error();
	if (!cert)
		return false;
	named = rs_tls_cert_names(cert, member);
	/* Resumed: the certificate was verified when the session was made, up
	 * to a ticket's lifetime ago; one that has expired since is refused
	 * as a full handshake would refuse it. */
	if (named && ssl && SSL_session_reused(ssl) && X509_cmp_current_time(X509_get0_notAfter(cert)) <= 0)
		named = false;
	X509_free(cert);
	return named;
}

/* Under mTLS the member check at HELLO needs the client's certificate:
 * kept as DER (a few hundred bytes; parsed, OpenSSL 3.0 holds about 5 KB
 * of it) and parsed again for the check, once per HELLO. */
static int keep_peer(struct gateway *gw, SSL *ssl, struct gw_tls_peer *peer)
{
	X509 *cert = gw->cfg.tls_ca ? SSL_get0_peer_certificate(ssl) : NULL;
	unsigned char *p;
	int len;

	if (!gw->cfg.tls_ca)
		return 0;
	len = cert ? i2d_X509(cert, NULL) : -1;
	if (len <= 0)
		return -EINVAL;
	peer->der = malloc((size_t)len);
	if (!peer->der)
		return -ENOMEM;
	p = peer->der;
	peer->len = (size_t)i2d_X509(cert, &p);
	return 0;
}

struct bufferevent *gw_tls_detach(struct gateway *gw, struct bufferevent *bev, struct rs_tls_secrets *s,
				  struct rs_tls_records **out, struct gw_tls_peer *peer)
{
	SSL *ssl = bufferevent_openssl_get_ssl(bev);
	struct gw_tls_peer kept = { 0 };
	struct rs_tls_records *r = NULL;
	struct bufferevent *plain = NULL;
	evutil_socket_t fd = -1;

	if (!gw->tls_records || !ssl || !s)
		return NULL;
	SSL_set_app_data(ssl, NULL);
	/* Nothing read past the handshake, nothing of ours queued: the
	 * socket's next byte is the peer's first record, ours will be our
	 * first, both at sequence 0. */
	if (evbuffer_get_length(bufferevent_get_input(bev)) || evbuffer_get_length(bufferevent_get_output(bev)))
		goto cleanup;
	r = calloc(1, sizeof(*r));
	if (!r || keep_peer(gw, ssl, &kept) != 0 || rs_tls_records_take(ssl, s, r) != 0)
		goto cleanup;
	/* A copy of the socket, since freeing bev (which frees the SSL) closes its own. */
	fd = fcntl(bufferevent_getfd(bev), F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		goto cleanup;
	plain = bufferevent_socket_new(gw->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!plain)
		goto cleanup;
	fd = -1;
	*out = r;
	r = NULL;
	*peer = kept;
	kept.der = NULL;
cleanup:
	free(kept.der);
	if (fd >= 0)
		close(fd);
	if (r) {
		OPENSSL_cleanse(r, sizeof(*r));
		free(r);
	}
	OPENSSL_cleanse(s, sizeof(*s));
	return plain;
}
