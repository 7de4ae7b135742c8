/* SPDX-License-Identifier: Apache-2.0 */
/* tls_tickets.c - the gateway's session tickets (--tls-ticket-keys), under
 * a keyring the fleet shares (tls/tls_ticket.c), read with the certificate (a file that does not load
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
#include <string.h>

#include <event2/bufferevent_ssl.h>
#include <openssl/crypto.h>

#include "gateway.h"
#include "util/logfmt.h"
#include "util/mstime.h"
#include "tls/tls.h"

static uint64_t now_s(void)
{
	return (uint64_t)(rs_wall_ms() / 1000);
}

/* Reads --tls-ticket-keys into *ring and derives *keys from it. */
int gw_tickets_load(const struct gateway *gw, struct rs_keyring *ring, struct rs_tls_ticket_keys *keys, char *why,
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

int gw_tickets_install(struct gateway *gw, SSL_CTX *ctx, char *why, size_t why_len)
{
	if (rs_tls_ticket_keys_install(ctx, &gw->tickets) != 0) {
		snprintf(why, why_len, "cannot turn session tickets on");
		return -EINVAL;
	}
	SSL_CTX_set_num_tickets(ctx, 0); /* conn.c sends it: gw_tls_send_ticket */
	return 0;
}

/* The key that encrypts tickets, for the log: an operator rolling a key
 * checks it here. */
const char *gw_tickets_signer(const struct gateway *gw)
{
	const struct rs_key *k;

	if (!gw->cfg.tls_ticket_keys)
		return "off";
	k = rs_keyring_signer(&gw->ticket_ring, now_s());
	return !k ? "none" : k->id[0] ? k->id : "legacy";
}

/* A key whose since has come starts encrypting; the file is unchanged. */
void gw_tickets_watch(struct gateway *gw)
{
	struct rs_tls_ticket_keys keys;

	if (!gw->tls || !gw->cfg.tls_ticket_keys || gw->ticket_ring.n == 0)
		return;
	if (rs_tls_ticket_keys_derive(&gw->ticket_ring, now_s(), &keys) != 0)
		return; /* keeps the keys it has */
	if (memcmp(keys.k[0].name, gw->tickets.k[0].name, sizeof(keys.k[0].name)) != 0) {
		gw->tickets = keys;
		rs_log(stderr, "info", gw->who, "event", "tls_ticket_key", "ticket_key", gw_tickets_signer(gw), NULL);
	}
	OPENSSL_cleanse(&keys, sizeof(keys));
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

void gw_tls_send_ticket(struct gateway *gw, struct bufferevent *bev)
{
	SSL *ssl = gw->tls && gw->cfg.tls_ticket_keys ? bufferevent_openssl_get_ssl(bev) : NULL;

	if (ssl)
		(void)rs_tls_send_ticket(ssl); /* a failure is a supervisor without a ticket: a full handshake next */
}

