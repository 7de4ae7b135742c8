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
#include <stdlib.h>
#include <string.h>

#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>

#include "gateway.h"
#include "util/logfmt.h"
#include "tls/tls.h"

static struct rs_tls_files files_of(const struct gateway *gw)
{
	return (struct rs_tls_files){ .cert = gw->cfg.tls_cert, .key = gw->cfg.tls_key, .ca = gw->cfg.tls_ca,
				      .tickets = gw->cfg.tls_ticket_keys };
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

bool gw_tls_client_is(struct bufferevent *bev, const struct gateway *gw, const char *member)
{
	SSL *ssl;
	X509 *cert;
	bool named;

	if (!gw->tls || !gw->cfg.tls_ca)
		return true;
	ssl = bufferevent_openssl_get_ssl(bev);
	cert = ssl ? SSL_get1_peer_certificate(ssl) : NULL;
	if (!cert)
		return false;
	named = rs_tls_cert_names(cert, member);
	/* Resumed: the certificate was verified when the session was made, up
	 * to a ticket's lifetime ago; one that has expired since is refused
	 * as a full handshake would refuse it. */
	if (named && SSL_session_reused(ssl) && X509_cmp_current_time(X509_get0_notAfter(cert)) <= 0)
		named = false;
	X509_free(cert);
	return named;
}
