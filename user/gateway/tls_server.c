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
 * (ringsteer_gateway_insecure).
 *
 * --tls-ticket-keys: session tickets under a keyring the fleet shares
 * (tls_ticket.c), read with the certificate (a file that does not load
 * keeps the old context and keys, as a bad certificate does), and derived
 * again at each heartbeat, so that a key whose since has come starts
 * encrypting without a reload.  The ticket is not sent by OpenSSL at the
 * end of the handshake but by conn.c once the ACCEPT is written
 * (gw_tls_send_ticket): building one decodes the session again, client
 * certificate included, and OpenSSL 3.0's key decoder makes that about
 * 300 us, which before the ACCEPT made an mTLS attach 10% slower
 * (bench/tls_resume.sh).  So a supervisor holds a ticket once accepted
 * somewhere, for its redials, Service dials and handoffs; a REDIRECT's
 * link gets none.  A resumed handshake carries no
 * certificate: the client's, under mTLS, is the one the session was made
 * with, and gw_tls_client_is checks the HELLO's member against it as on a
 * full handshake. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>

#include "gateway.h"
#include "util/logfmt.h"
#include "util/mstime.h"
#include "tls/tls.h"

static struct rs_tls_files files_of(const struct gateway *gw)
{
	return (struct rs_tls_files){ .cert = gw->cfg.tls_cert, .key = gw->cfg.tls_key, .ca = gw->cfg.tls_ca,
				      .tickets = gw->cfg.tls_ticket_keys };
}

static uint64_t now_s(void)
{
	return (uint64_t)(rs_wall_ms() / 1000);
}

/* Reads --tls-ticket-keys into *ring and derives *keys from it. */
static int load_tickets(const struct gateway *gw, struct rs_keyring *ring, struct rs_tls_ticket_keys *keys, char *why,
			size_t why_len)
{
	size_t line = 0;
	int err = rs_keyring_load(gw->cfg.tls_ticket_keys, ring, &line);

	if (err) {
		snprintf(why, why_len, "tls-ticket-keys %s: %s (line %zu)", gw->cfg.tls_ticket_keys,
			 err == -EINVAL ? "not a keyring" : rs_secret_strerror(err), line);
		return err;
	}
	err = rs_tls_ticket_keys_derive(ring, now_s(), keys);
	if (err)
		snprintf(why, why_len, "tls-ticket-keys %s: %s", gw->cfg.tls_ticket_keys,
			 err == -ENOKEY ? "no key signs yet (every since is in the future)" : "cannot derive the keys");
	return err;
}

/* A context, and with --tls-ticket-keys the keyring and keys it will use
 * once the caller has put them in gw (the context reads gw->tickets). */
static int build(struct gateway *gw, SSL_CTX **ctx, int64_t *not_after, struct rs_keyring *ring,
		 struct rs_tls_ticket_keys *keys, char *why, size_t why_len)
{
	const struct rs_tls_files files = files_of(gw);
	int err;

	if (gw->cfg.tls_ticket_keys && (err = load_tickets(gw, ring, keys, why, why_len)) < 0)
		return err;
	err = rs_tls_server_ctx(&files, ctx, why, why_len);
	if (err)
		return err;
	if (gw->cfg.tls_ticket_keys) {
		if (rs_tls_ticket_keys_install(*ctx, &gw->tickets) != 0) {
			snprintf(why, why_len, "cannot turn session tickets on");
			SSL_CTX_free(*ctx);
			*ctx = NULL;
			return -EINVAL;
		}
		SSL_CTX_set_num_tickets(*ctx, 0); /* conn.c sends it: gw_tls_send_ticket */
	}
	if (rs_tls_ctx_not_after(*ctx, not_after) != 0)
		*not_after = 0;
	return 0;
}

/* The key that encrypts tickets, for the log: an operator rolling a key
 * checks it here. */
static const char *ticket_signer(const struct gateway *gw)
{
	const struct rs_key *k;

	if (!gw->cfg.tls_ticket_keys)
		return "off";
	k = rs_keyring_signer(&gw->ticket_ring, now_s());
	return !k ? "none" : k->id[0] ? k->id : "legacy";
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
	       gw->cfg.tls_ca ? gw->cfg.tls_ca : "none", "not_after", expiry, "ticket_key", ticket_signer(gw), NULL);
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

/* A key whose since has come starts encrypting; the file is unchanged. */
static void tickets_watch(struct gateway *gw)
{
	struct rs_tls_ticket_keys keys;

	if (!gw->tls || !gw->cfg.tls_ticket_keys || gw->ticket_ring.n == 0)
		return;
	if (rs_tls_ticket_keys_derive(&gw->ticket_ring, now_s(), &keys) != 0)
		return; /* keeps the keys it has */
	if (memcmp(keys.k[0].name, gw->tickets.k[0].name, sizeof(keys.k[0].name)) != 0) {
		gw->tickets = keys;
		rs_log(stderr, "info", gw->who, "event", "tls_ticket_key", "ticket_key", ticket_signer(gw), NULL);
	}
	OPENSSL_cleanse(&keys, sizeof(keys));
}

void gw_tls_watch(struct gateway *gw)
{
	if (gw->tls && files_stamp(gw) != gw->tls_stamp)
		gw_tls_reload(gw);
	tickets_watch(gw);
}

void gw_tls_count_handshake(struct gateway *gw, struct bufferevent *bev)
{
	SSL *ssl = gw->tls ? bufferevent_openssl_get_ssl(bev) : NULL;

	if (!ssl)
		return;
	if (SSL_session_reused(ssl))
		gw->counters.tls_resumed++;
	else
		gw->counters.tls_full++;
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

void gw_tls_send_ticket(struct gateway *gw, struct bufferevent *bev)
{
	SSL *ssl = gw->tls && gw->cfg.tls_ticket_keys ? bufferevent_openssl_get_ssl(bev) : NULL;

	if (ssl)
		(void)rs_tls_send_ticket(ssl); /* a failure is a supervisor without a ticket: a full handshake next */
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
