/* SPDX-License-Identifier: Apache-2.0 */
/* tls_trust.c - the supervisor's side of trust: TLS 1.3 links whose server
 * certificate must name the gateway the supervisor means to reach (the
 * REDIRECT's gateway id, its last gateway on a redial, the Service's name on
 * a Service dial), and in plaintext (--insecure) an allow list of networks
 * that redirect and redial targets must lie in.  Either way a REDIRECT
 * cannot send a supervisor, with its token, to an address an attacker
 * chose.  SIGHUP rebuilds the context, and so does a change of the files
 * seen before each dial and at each heartbeat (a rotated client
 * certificate must be in use before the old one expires, and an expired
 * one must not keep the supervisor out); files that do not load leave the
 * old context in use.
 *
 * Resumption (tls_resume.c): the last session a gateway sent a ticket for
 * is offered on the next dial - a redirect, a handoff, a redial, a
 * Service dial - when its certificate names the name that dial must
 * reach, since a resumed handshake shows no certificate.  With a
 * certificate per gateway naming its id alone, that is a redial of the
 * same gateway; gateways whose certificates name the fleet's ids (and
 * which share --tls-ticket-keys) resume across it.  A new context (a
 * rotated client certificate) starts without a session. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>

#include "util/logfmt.h"
#include "tls/tls.h"
#include "supervisor.h"

int sup_tls_load(struct supervisor *s)
{
	const struct rs_tls_files files = { .cert = s->cfg.tls_cert, .key = s->cfg.tls_key, .ca = s->cfg.tls_ca };
	SSL_CTX *fresh = NULL;
	char why[256] = "";
	int err;

	if (s->cfg.insecure)
		return 0;
	s->tls_stamp = rs_tls_files_stamp(&files); /* a failure is retried when they change again */
	err = rs_tls_client_ctx(&files, &fresh, why, sizeof(why));
	if (err) {
		rs_log(stderr, "error", s->who, "event", s->tls ? "tls_reload_failed" : "tls_failed", "error", why, NULL);
		return err;
	}
	err = rs_tls_resume_attach(fresh, &s->resume);
	if (err) {
		rs_log(stderr, "error", s->who, "event", s->tls ? "tls_reload_failed" : "tls_failed", "error",
		       "cannot keep TLS sessions", NULL);
		SSL_CTX_free(fresh);
		return err;
	}
	SSL_CTX_free(s->tls); /* a link being set up holds its own reference */
	s->tls = fresh;
	rs_log(stderr, "info", s->who, "event", "tls_loaded", "ca", s->cfg.tls_ca, "client_cert",
	       s->cfg.tls_cert ? s->cfg.tls_cert : "none", NULL);
	return 0;
}

void sup_tls_watch(struct supervisor *s)
{
	const struct rs_tls_files files = { .cert = s->cfg.tls_cert, .key = s->cfg.tls_key, .ca = s->cfg.tls_ca };

	if (s->tls && rs_tls_files_stamp(&files) != s->tls_stamp)
		(void)sup_tls_load(s); /* logged; on failure the old files still serve */
}

struct bufferevent *sup_tls_bufferevent(struct supervisor *s, int fd, const char *name)
{
	return rs_tls_client_bufferevent(s->base, s->tls, fd, name);
}

bool sup_target_allowed(const struct supervisor *s, const struct sockaddr_storage *ss)
{
	if (s->tls)
		return true;
	return rs_cidr_list_contains(s->cfg.allow, s->cfg.n_allow, (const struct sockaddr *)ss);
}
