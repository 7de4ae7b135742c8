/* SPDX-License-Identifier: Apache-2.0 */
/* test_tls_resume.c - session tickets shared by a fleet's gateways
 * (tls_ticket.c) and the client's last session (tls_resume.c): real TLS 1.3
 * handshakes over socketpairs, with certificates made by
 * tests/tls/make_certs.sh.  Expected key bytes come from the openssl CLI's
 * HKDF, not from the code under test. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "tls/tls.h"
#include "ringsteer/keyring.h"
#include "testutil.h"

#define MAKE_CERTS "tests/tls/make_certs.sh"

struct pki {
	char dir[64];
};

static const struct {
	const char *name, *san;
} leaves[] = {
	{ "gw-1", "DNS:gw-1" },
	{ "gw-2", "DNS:gw-2" },
	{ "fleet", "DNS:gw-1,DNS:gw-2" }, /* one certificate naming both gateways */
	{ "sup-1", "DNS:sup-1" },
};

static int make_pki(void **state)
{
	struct pki *p = calloc(1, sizeof(*p));
	char cmd[512];

	if (!p)
		return -1;
	*state = p;
	snprintf(p->dir, sizeof(p->dir), "/tmp/rs-tlsr-XXXXXX");
	if (!mkdtemp(p->dir)) {
		p->dir[0] = '\0';
		return -1;
	}
	snprintf(cmd, sizeof(cmd), "%s %s", MAKE_CERTS, p->dir);
	if (system(cmd) != 0)
		return -1;
	for (size_t i = 0; i < sizeof(leaves) / sizeof(leaves[0]); i++) {
		snprintf(cmd, sizeof(cmd), "%s %s issue %s '%s' ca 30", MAKE_CERTS, p->dir, leaves[i].name,
			 leaves[i].san);
		if (system(cmd) != 0)
			return -1;
	}
	return 0;
}

static int remove_pki(void **state)
{
	struct pki *p = *state;
	char cmd[128];

	if (p && p->dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", p->dir);
		if (system(cmd) != 0)
			return -1;
	}
	free(p);
	return 0;
}

/* A keyring of the given secrets (each 32 bytes of one repeated letter),
 * oldest first, all signing from 0 except the last, from last_since. */
static void keyring(struct rs_keyring *kr, const char *letters, uint64_t last_since)
{
	char text[2048];
	size_t off = 0, line = 0, n = strlen(letters);

	off += (size_t)snprintf(text + off, sizeof(text) - off, "%s\n", RS_KEYRING_HEADER);
	for (size_t i = 0; i < n; i++) {
		char secret[33];

		memset(secret, letters[i], 32);
		secret[32] = '\0';
		off += (size_t)snprintf(text + off, sizeof(text) - off, "k%zu %s %llu\n", i, secret,
					(unsigned long long)(i + 1 == n ? last_since : 0));
	}
	assert_int_equal(rs_keyring_parse(text, off, kr, &line), 0);
}

struct server {
	SSL_CTX *ctx;
	struct rs_tls_ticket_keys keys;
};

/* A gateway: NAME's certificate, mTLS when ca, tickets under letters ("":
 * none, today's behaviour). */
static void server_open(struct server *s, const struct pki *p, const char *name, bool mtls, const char *letters)
{
	char cert[128], key[128], ca[128], why[256] = "";
	struct rs_tls_files f = { .cert = cert, .key = key, .ca = mtls ? ca : NULL };
	struct rs_keyring kr;

	snprintf(cert, sizeof(cert), "%s/%s.crt", p->dir, name);
	snprintf(key, sizeof(key), "%s/%s.key", p->dir, name);
	snprintf(ca, sizeof(ca), "%s/ca.crt", p->dir);
	memset(s, 0, sizeof(*s));
	if (rs_tls_server_ctx(&f, &s->ctx, why, sizeof(why)) != 0)
		fail_msg("server %s: %s", name, why);
	if (!*letters)
		return;
	keyring(&kr, letters, 0);
	assert_int_equal(rs_tls_ticket_keys_derive(&kr, 1000, &s->keys), 0);
	assert_int_equal(rs_tls_ticket_keys_install(s->ctx, &s->keys), 0);
}

static SSL_CTX *client_open(const struct pki *p, const char *name, struct rs_tls_resume *r)
{
	char cert[128], key[128], ca[128], why[256] = "";
	struct rs_tls_files f = { .cert = name ? cert : NULL, .key = name ? key : NULL, .ca = ca };
	SSL_CTX *ctx = NULL;

	snprintf(cert, sizeof(cert), "%s/%s.crt", p->dir, name ? name : "");
	snprintf(key, sizeof(key), "%s/%s.key", p->dir, name ? name : "");
	snprintf(ca, sizeof(ca), "%s/ca.crt", p->dir);
	if (rs_tls_client_ctx(&f, &ctx, why, sizeof(why)) != 0)
		fail_msg("client: %s", why);
	memset(r, 0, sizeof(*r));
	assert_int_equal(rs_tls_resume_attach(ctx, r), 0);
	return ctx;
}

struct conn {
	int fds[2];
	SSL *c, *s;
	bool offered;
};

/* Alternates the two ends until both finish; false if either fails. */
static bool handshake(struct conn *k)
{
	bool cdone = false, sdone = false;

	for (int round = 0; round < 64 && !(cdone && sdone); round++) {
		int rc;

		if (!cdone) {
			ERR_clear_error();
			rc = SSL_do_handshake(k->c);
			if (rc == 1)
				cdone = true;
			else if (SSL_get_error(k->c, rc) != SSL_ERROR_WANT_READ)
				return false;
		}
		if (!sdone) {
			ERR_clear_error();
			rc = SSL_do_handshake(k->s);
			if (rc == 1)
				sdone = true;
			else if (SSL_get_error(k->s, rc) != SSL_ERROR_WANT_READ)
				return false;
		}
	}
	return cdone && sdone;
}

/* Dials server as if to expect, offering the kept session the way
 * rs_tls_client_bufferevent does; then the server's first bytes (the
 * ACCEPT's place) are read, which takes in the ticket sent before them. */
static bool dial(struct conn *k, SSL_CTX *client, const struct server *server, const char *expect)
{
	char buf[16];

	memset(k, 0, sizeof(*k));
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, k->fds), 0);
	k->c = SSL_new(client);
	k->s = SSL_new(server->ctx);
	assert_non_null(k->c);
	assert_non_null(k->s);
	SSL_set_fd(k->c, k->fds[0]);
	SSL_set_fd(k->s, k->fds[1]);
	SSL_set_connect_state(k->c);
	SSL_set_accept_state(k->s);
	assert_int_equal(rs_tls_expect_name(k->c, expect), 0);
	k->offered = rs_tls_resume_offer(k->c, expect);
	if (!handshake(k))
		return false;
	assert_int_equal(SSL_write(k->s, "ACCEPT", 6), 6);
	assert_int_equal(SSL_read(k->c, buf, sizeof(buf)), 6);
	return true;
}

static void hang_up(struct conn *k)
{
	SSL_free(k->c);
	SSL_free(k->s);
	close(k->fds[0]);
	close(k->fds[1]);
	ERR_clear_error();
}

static void server_close(struct server *s)
{
	SSL_CTX_free(s->ctx);
}

/* The openssl CLI's HKDF of 32 bytes of letter under label: the expected
 * bytes, computed outside the code under test. */
static void cli_hkdf(char letter, const char *label, size_t len, uint8_t *out)
{
	char cmd[512], hex[160] = "";
	FILE *f;

	snprintf(cmd, sizeof(cmd),
		 "openssl kdf -keylen %zu -kdfopt digest:SHA256 -kdfopt key:%c%c%c%c%c%c%c%c%c%c%c%c%c%c%c%c"
		 "%c%c%c%c%c%c%c%c%c%c%c%c%c%c%c%c -kdfopt 'salt:ringsteer tls session ticket v1' "
		 "-kdfopt 'info:%s' HKDF | tr -d ':\\n'",
		 len, letter, letter, letter, letter, letter, letter, letter, letter, letter, letter, letter, letter,
		 letter, letter, letter, letter, letter, letter, letter, letter, letter, letter, letter, letter, letter,
		 letter, letter, letter, letter, letter, letter, letter, label);
	f = popen(cmd, "r");
	assert_non_null(f);
	assert_non_null(fgets(hex, sizeof(hex), f));
	pclose(f);
	assert_int_equal(strlen(hex), 2 * len);
	for (size_t i = 0; i < len; i++)
		assert_int_equal(sscanf(hex + 2 * i, "%2hhx", &out[i]), 1);
}

static void test_derive_matches_cli(void **state)
{
	struct rs_secret s = { .len = 32 };
	struct rs_tls_ticket_key k;
	uint8_t want[32];

	(void)state;
	memset(s.key, 'a', 32);
	assert_int_equal(rs_tls_ticket_key_derive(&s, &k), 0);
	cli_hkdf('a', RS_TLS_TICKET_LABEL_NAME, 16, want);
	assert_memory_equal(k.name, want, 16);
	cli_hkdf('a', RS_TLS_TICKET_LABEL_AES, 32, want);
	assert_memory_equal(k.aes, want, 32);
	cli_hkdf('a', RS_TLS_TICKET_LABEL_HMAC, 32, want);
	assert_memory_equal(k.hmac, want, 32);
	assert_memory_not_equal(k.aes, k.hmac, 32);
}

/* The signer and the two before it, newest first; a key not yet signing
 * is not used at all. */
static void test_keys_chosen(void **state)
{
	struct rs_tls_ticket_keys keys;
	struct rs_keyring kr;
	uint8_t want[16];

	(void)state;
	keyring(&kr, "abcd", 0);
	assert_int_equal(rs_tls_ticket_keys_derive(&kr, 1000, &keys), 0);
	assert_int_equal(keys.n, 3);
	cli_hkdf('d', RS_TLS_TICKET_LABEL_NAME, 16, want);
	assert_memory_equal(keys.k[0].name, want, 16);
	cli_hkdf('c', RS_TLS_TICKET_LABEL_NAME, 16, want);
	assert_memory_equal(keys.k[1].name, want, 16);
	cli_hkdf('b', RS_TLS_TICKET_LABEL_NAME, 16, want);
	assert_memory_equal(keys.k[2].name, want, 16);

	keyring(&kr, "abcd", 5000); /* d signs from 5000 */
	assert_int_equal(rs_tls_ticket_keys_derive(&kr, 1000, &keys), 0);
	assert_int_equal(keys.n, 3);
	cli_hkdf('c', RS_TLS_TICKET_LABEL_NAME, 16, want);
	assert_memory_equal(keys.k[0].name, want, 16);
	cli_hkdf('a', RS_TLS_TICKET_LABEL_NAME, 16, want);
	assert_memory_equal(keys.k[2].name, want, 16);

	keyring(&kr, "a", 0);
	assert_int_equal(rs_tls_ticket_keys_derive(&kr, 1000, &keys), 0);
	assert_int_equal(keys.n, 1);
	keyring(&kr, "a", 5000);
	assert_int_equal(rs_tls_ticket_keys_derive(&kr, 1000, &keys), -ENOKEY);
}

/* Redirected from gw-1 to gw-2, both holding the fleet's keys and a
 * certificate naming both: resumed.  A gateway with other keys, or none: a
 * full handshake, which still succeeds. */
static void test_redirect_resumes(void **state)
{
	const struct pki *p = *state;
	struct server gw1, gw2, other, plain;
	struct rs_tls_resume r;
	SSL_CTX *client = client_open(p, NULL, &r);
	struct conn k;

	server_open(&gw1, p, "fleet", false, "ab");
	server_open(&gw2, p, "fleet", false, "ab");
	server_open(&other, p, "fleet", false, "xy");
	server_open(&plain, p, "fleet", false, "");

	assert_true(dial(&k, client, &gw1, "gw-1"));
	assert_false(k.offered);
	assert_false(SSL_session_reused(k.s));
	hang_up(&k);
	assert_non_null(r.last);

	assert_true(dial(&k, client, &gw2, "gw-2"));
	assert_true(k.offered);
	assert_true(SSL_session_reused(k.s));
	assert_true(SSL_session_reused(k.c));
	assert_int_equal(rs_tls_check_resumed(k.c, "gw-2"), 0);
	hang_up(&k);

	assert_true(dial(&k, client, &other, "gw-2"));
	assert_true(k.offered);
	assert_false(SSL_session_reused(k.s));
	hang_up(&k);

	/* other's ticket is the one kept now: gw-1 cannot read it. */
	assert_true(dial(&k, client, &gw1, "gw-1"));
	assert_false(SSL_session_reused(k.s));
	hang_up(&k);

	assert_true(dial(&k, client, &plain, "gw-1"));
	assert_false(SSL_session_reused(k.s));
	hang_up(&k);

	rs_tls_resume_forget(&r);
	SSL_CTX_free(client);
	server_close(&gw1);
	server_close(&gw2);
	server_close(&other);
	server_close(&plain);
}

/* A ticket under key a: resumed while a is the signer or one of the two
 * before it (abc: renewed under c), refused once three newer keys came
 * (abcd). */
static void test_rotation(void **state)
{
	const struct pki *p = *state;
	struct server old, next, far;
	struct rs_tls_resume r;
	SSL_CTX *client = client_open(p, NULL, &r);
	struct conn k;
	SSL_SESSION *under_a;

	server_open(&old, p, "gw-1", false, "a");
	server_open(&next, p, "gw-1", false, "abc");
	server_open(&far, p, "gw-1", false, "abcd");

	assert_true(dial(&k, client, &old, "gw-1"));
	hang_up(&k);
	under_a = r.last;
	assert_non_null(under_a);
	SSL_SESSION_up_ref(under_a);

	assert_true(dial(&k, client, &next, "gw-1"));
	assert_true(SSL_session_reused(k.s));
	hang_up(&k);
	assert_true(r.last != under_a); /* the renewed ticket, under c */

	/* c is one of abcd's three: the renewed ticket resumes there. */
	assert_true(dial(&k, client, &far, "gw-1"));
	assert_true(SSL_session_reused(k.s));
	hang_up(&k);

	SSL_SESSION_free(r.last);
	r.last = under_a;
	assert_true(dial(&k, client, &far, "gw-1"));
	assert_true(k.offered);
	assert_false(SSL_session_reused(k.s));
	hang_up(&k);

	rs_tls_resume_forget(&r);
	SSL_CTX_free(client);
	server_close(&old);
	server_close(&next);
	server_close(&far);
}

/* Certificates naming one gateway each: gw-1's session is not offered to
 * gw-2.  Forced on it anyway (what a client without the rule would do),
 * OpenSSL resumes without a word, since no certificate is sent, and
 * rs_tls_check_resumed is what catches it. */
static void test_identity_on_resumption(void **state)
{
	const struct pki *p = *state;
	struct server gw1, gw2;
	struct rs_tls_resume r;
	SSL_CTX *client = client_open(p, NULL, &r);
	struct conn k;
	char buf[16];

	server_open(&gw1, p, "gw-1", false, "ab");
	server_open(&gw2, p, "gw-2", false, "ab");
	assert_true(dial(&k, client, &gw1, "gw-1"));
	hang_up(&k);

	assert_true(dial(&k, client, &gw2, "gw-2"));
	assert_false(k.offered);
	assert_false(SSL_session_reused(k.s));
	assert_true(rs_tls_cert_names(SSL_get0_peer_certificate(k.c), "gw-2"));
	hang_up(&k);

	/* The kept session is gw-2's now; gw-1 is not offered it either. */
	assert_true(dial(&k, client, &gw1, "gw-1"));
	assert_false(k.offered);
	hang_up(&k);
	/* ...and gw-1's, offered to gw-1 on a redial: resumed. */
	assert_true(dial(&k, client, &gw1, "gw-1"));
	assert_true(k.offered);
	assert_true(SSL_session_reused(k.s));
	assert_int_equal(rs_tls_check_resumed(k.c, "gw-1"), 0);
	hang_up(&k);

	memset(&k, 0, sizeof(k));
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, k.fds), 0);
	k.c = SSL_new(client);
	k.s = SSL_new(gw2.ctx);
	SSL_set_fd(k.c, k.fds[0]);
	SSL_set_fd(k.s, k.fds[1]);
	SSL_set_connect_state(k.c);
	SSL_set_accept_state(k.s);
	assert_int_equal(rs_tls_expect_name(k.c, "gw-2"), 0);
	assert_int_equal(SSL_set_session(k.c, r.last), 1); /* gw-1's session, to gw-2 */
	assert_true(handshake(&k));
	assert_true(SSL_session_reused(k.c));
	assert_int_equal(rs_tls_check_resumed(k.c, "gw-2"), -EACCES);
	(void)buf;
	hang_up(&k);

	rs_tls_resume_forget(&r);
	SSL_CTX_free(client);
	server_close(&gw1);
	server_close(&gw2);
}

/* mTLS: the client certificate survives resumption on another gateway,
 * so the HELLO's member is checked against it there as on a full
 * handshake (gw_tls_client_is reads the same peer certificate). */
static void test_mtls_identity_survives(void **state)
{
	const struct pki *p = *state;
	struct server gw1, gw2;
	struct rs_tls_resume r;
	SSL_CTX *client = client_open(p, "sup-1", &r);
	struct conn k;
	X509 *peer;

	server_open(&gw1, p, "fleet", true, "ab");
	server_open(&gw2, p, "fleet", true, "ab");
	assert_true(dial(&k, client, &gw1, "gw-1"));
	hang_up(&k);
	assert_true(dial(&k, client, &gw2, "gw-2"));
	assert_true(SSL_session_reused(k.s));
	peer = SSL_get0_peer_certificate(k.s);
	assert_non_null(peer);
	assert_true(rs_tls_cert_names(peer, "sup-1"));
	assert_false(rs_tls_cert_names(peer, "sup-2"));
	assert_int_equal(SSL_get_verify_result(k.s), X509_V_OK);
	hang_up(&k);

	rs_tls_resume_forget(&r);
	SSL_CTX_free(client);
	server_close(&gw1);
	server_close(&gw2);
}

/* A session from a gateway without mTLS does not resume on one with it
 * (the session id contexts differ): the client certificate is asked for. */
static void test_mtls_needs_mtls_session(void **state)
{
	const struct pki *p = *state;
	struct server open_gw, mtls_gw;
	struct rs_tls_resume r;
	SSL_CTX *client = client_open(p, "sup-1", &r);
	struct conn k;

	server_open(&open_gw, p, "fleet", false, "ab");
	server_open(&mtls_gw, p, "fleet", true, "ab");
	assert_true(dial(&k, client, &open_gw, "gw-1"));
	assert_null(SSL_get0_peer_certificate(k.s));
	hang_up(&k);
	assert_true(dial(&k, client, &mtls_gw, "gw-2"));
	assert_true(k.offered);
	assert_false(SSL_session_reused(k.s));
	assert_non_null(SSL_get0_peer_certificate(k.s));
	hang_up(&k);

	rs_tls_resume_forget(&r);
	SSL_CTX_free(client);
	server_close(&open_gw);
	server_close(&mtls_gw);
}

/* The gateway's way: no ticket at the end of the handshake (num_tickets
 * 0), one when it asks (rs_tls_send_ticket), ahead of what it writes next. */
static void test_ticket_on_demand(void **state)
{
	const struct pki *p = *state;
	struct server gw1;
	struct rs_tls_resume r;
	SSL_CTX *client = client_open(p, NULL, &r);
	struct conn k;
	char buf[16];

	server_open(&gw1, p, "gw-1", false, "a");
	SSL_CTX_set_num_tickets(gw1.ctx, 0);
	assert_true(dial(&k, client, &gw1, "gw-1"));
	hang_up(&k);
	assert_null(r.last);

	memset(&k, 0, sizeof(k));
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, k.fds), 0);
	k.c = SSL_new(client);
	k.s = SSL_new(gw1.ctx);
	SSL_set_fd(k.c, k.fds[0]);
	SSL_set_fd(k.s, k.fds[1]);
	SSL_set_connect_state(k.c);
	SSL_set_accept_state(k.s);
	assert_int_equal(rs_tls_expect_name(k.c, "gw-1"), 0);
	assert_true(handshake(&k));
	assert_int_equal(rs_tls_send_ticket(k.c), -EINVAL); /* a client sends none */
	assert_int_equal(rs_tls_send_ticket(k.s), 0);
	assert_int_equal(SSL_write(k.s, "ACCEPT", 6), 6);
	assert_int_equal(SSL_read(k.c, buf, sizeof(buf)), 6);
	hang_up(&k);
	assert_non_null(r.last);

	assert_true(dial(&k, client, &gw1, "gw-1"));
	assert_true(SSL_session_reused(k.s));
	hang_up(&k);

	rs_tls_resume_forget(&r);
	SSL_CTX_free(client);
	server_close(&gw1);
}

/* A rebuilt client context (a rotated client certificate) starts without
 * a session. */
static void test_new_ctx_forgets(void **state)
{
	const struct pki *p = *state;
	struct server gw1;
	struct rs_tls_resume r;
	SSL_CTX *client = client_open(p, NULL, &r), *fresh;
	char ca[128], why[256];
	struct rs_tls_files f = { .ca = ca };
	struct conn k;

	server_open(&gw1, p, "gw-1", false, "a");
	assert_true(dial(&k, client, &gw1, "gw-1"));
	hang_up(&k);
	assert_non_null(r.last);
	snprintf(ca, sizeof(ca), "%s/ca.crt", p->dir);
	assert_int_equal(rs_tls_client_ctx(&f, &fresh, why, sizeof(why)), 0);
	assert_int_equal(rs_tls_resume_attach(fresh, &r), 0);
	assert_null(r.last);
	SSL_CTX_free(client);
	rs_tls_resume_forget(&r);
	SSL_CTX_free(fresh);
	server_close(&gw1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_derive_matches_cli),
		cmocka_unit_test(test_keys_chosen),
		cmocka_unit_test(test_redirect_resumes),
		cmocka_unit_test(test_rotation),
		cmocka_unit_test(test_identity_on_resumption),
		cmocka_unit_test(test_mtls_identity_survives),
		cmocka_unit_test(test_mtls_needs_mtls_session),
		cmocka_unit_test(test_ticket_on_demand),
		cmocka_unit_test(test_new_ctx_forgets),
	};

	return cmocka_run_group_tests_name("tls_resume", tests, make_pki, remove_pki);
}
