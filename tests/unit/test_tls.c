/* SPDX-License-Identifier: Apache-2.0 */
/* test_tls.c - the TLS contexts, name checks and failure descriptions, on
 * certificates made fresh by tests/tls/make_certs.sh (so the openssl
 * command is needed) and on real handshakes between two SSL objects over a
 * socketpair; and the allow-list prefixes (cidr), against a table and
 * against a bit-by-bit reference on random prefixes and addresses. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "util/cidr.h"
#include "util/endpoint.h"
#include "tls/tls.h"
#include "tls/tls_record.h"
#include "testutil.h"

#define MAKE_CERTS "tests/tls/make_certs.sh"
#define DAYS 30 /* make_certs.sh's default validity */

/* ---- the PKI every TLS test shares ------------------------------------- */

struct pki {
	char dir[64];
};

/* The leaves the tests use: NAME, subjectAltName, issuing CA, days. */
static const struct {
	const char *name, *san, *ca, *days;
} leaves[] = {
	{ "gw-1", "DNS:gw-1,DNS:ringsteer.test,IP:127.0.0.1", "ca", "30" },
	{ "sup-1", "DNS:sup-1", "ca", "30" },
	{ "rogue", "DNS:gw-1,DNS:sup-1", "other-ca", "30" }, /* right names, wrong CA */
	{ "expired", "DNS:gw-1", "ca", "0" },
	{ "nosan", "", "ca", "30" },		      /* the CN is what names it */
	{ "iponly", "IP:127.0.0.2", "ca", "30" },     /* no DNS entry: the CN still counts */
	{ "cnignored", "DNS:other-name", "ca", "30" }, /* a DNS entry: the CN does not count */
	{ "wild", "DNS:*.ringsteer.test,DNS:gw-*", "ca", "30" },
};

static int run_quiet(const char *cmd)
{
	int rc = system(cmd);

	if (rc != 0)
		fprintf(stderr, "test_tls: failed (%d): %s\n", rc, cmd);
	return rc;
}

static int make_pki(void **state)
{
	struct pki *p = calloc(1, sizeof(*p));
	char cmd[512];
	FILE *f;

	if (!p)
		return -1;
	*state = p;
	if (system("command -v openssl >/dev/null 2>&1") != 0) {
		fprintf(stderr, "test_tls: the openssl command is needed to make test certificates "
				"(apt-get install openssl)\n");
		return -1;
	}
	snprintf(p->dir, sizeof(p->dir), "/tmp/rs-tls-XXXXXX");
	if (!mkdtemp(p->dir)) {
		p->dir[0] = '\0';
		return -1;
	}
	snprintf(cmd, sizeof(cmd), "%s %s", MAKE_CERTS, p->dir);
	if (run_quiet(cmd))
		return -1;
	for (size_t i = 0; i < sizeof(leaves) / sizeof(leaves[0]); i++) {
		snprintf(cmd, sizeof(cmd), "%s %s issue %s '%s' %s %s", MAKE_CERTS, p->dir, leaves[i].name,
			 leaves[i].san, leaves[i].ca, leaves[i].days);
		if (run_quiet(cmd))
			return -1;
	}
	/* A passphrase-protected key: loading it must fail, never prompt. */
	snprintf(cmd, sizeof(cmd), "openssl pkey -in %s/gw-1.key -aes256 -passout pass:secret -out %s/locked.key",
		 p->dir, p->dir);
	if (run_quiet(cmd))
		return -1;
	snprintf(cmd, sizeof(cmd), "%s/garbage.pem", p->dir);
	f = fopen(cmd, "w");
	if (!f)
		return -1;
	fputs("-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n", f);
	fclose(f);
	return 0;
}

static int remove_pki(void **state)
{
	struct pki *p = *state;
	char cmd[128];
	int rc = 0;

	if (p && p->dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", p->dir);
		rc = run_quiet(cmd);
	}
	free(p);
	return rc ? -1 : 0;
}

/* The files a context is built from: NAME.crt/NAME.key (NULL: none) and
 * CA.crt (NULL: none), inside the PKI's directory. */
struct paths {
	char cert[128], key[128], ca[128];
	struct rs_tls_files f;
};

static const struct rs_tls_files *files(struct paths *ps, const struct pki *p, const char *name, const char *ca)
{
	memset(ps, 0, sizeof(*ps));
	if (name) {
		snprintf(ps->cert, sizeof(ps->cert), "%s/%s.crt", p->dir, name);
		snprintf(ps->key, sizeof(ps->key), "%s/%s.key", p->dir, name);
		ps->f.cert = ps->cert;
		ps->f.key = ps->key;
	}
	if (ca) {
		snprintf(ps->ca, sizeof(ps->ca), "%s/%s.crt", p->dir, ca);
		ps->f.ca = ps->ca;
	}
	return &ps->f;
}

static SSL_CTX *server_ctx(const struct pki *p, const char *name, const char *ca)
{
	struct paths ps;
	SSL_CTX *ctx = NULL;
	char why[256] = "";
	int rc = rs_tls_server_ctx(files(&ps, p, name, ca), &ctx, why, sizeof(why));

	if (rc != 0)
		fprintf(stderr, "server ctx %s: %s\n", name, why);
	assert_int_equal(rc, 0);
	assert_non_null(ctx);
	return ctx;
}

static SSL_CTX *client_ctx(const struct pki *p, const char *name, const char *ca)
{
	struct paths ps;
	SSL_CTX *ctx = NULL;
	char why[256] = "";
	int rc = rs_tls_client_ctx(files(&ps, p, name, ca), &ctx, why, sizeof(why));

	if (rc != 0)
		fprintf(stderr, "client ctx %s: %s\n", name ? name : "(none)", why);
	assert_int_equal(rc, 0);
	assert_non_null(ctx);
	return ctx;
}

static X509 *load_cert(const struct pki *p, const char *name)
{
	char path[128];
	X509 *cert;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.crt", p->dir, name);
	f = fopen(path, "r");
	assert_non_null(f);
	cert = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	assert_non_null(cert);
	return cert;
}

static void assert_contains(const char *haystack, const char *needle)
{
	if (!strstr(haystack, needle))
		fail_msg("\"%s\" does not contain \"%s\"", haystack, needle);
}

/* ---- contexts ------------------------------------------------------------ */

static void test_ctx_good(void **state)
{
	const struct pki *p = *state;
	SSL_CTX *ctx;

	ctx = server_ctx(p, "gw-1", NULL);
	assert_int_equal(SSL_CTX_get_min_proto_version(ctx), TLS1_3_VERSION);
	assert_int_equal(SSL_CTX_get_verify_mode(ctx), SSL_VERIFY_NONE);
	SSL_CTX_free(ctx);
	ctx = server_ctx(p, "gw-1", "ca");
	assert_int_equal(SSL_CTX_get_verify_mode(ctx), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT);
	assert_int_equal(sk_X509_NAME_num(SSL_CTX_get_client_CA_list(ctx)), 1);
	SSL_CTX_free(ctx);
	ctx = client_ctx(p, NULL, "ca");
	assert_int_equal(SSL_CTX_get_min_proto_version(ctx), TLS1_3_VERSION);
	assert_int_equal(SSL_CTX_get_verify_mode(ctx), SSL_VERIFY_PEER);
	SSL_CTX_free(ctx);
	ctx = client_ctx(p, "sup-1", "ca");
	assert_non_null(SSL_CTX_get0_certificate(ctx));
	SSL_CTX_free(ctx);
	assert_int_equal(ERR_peek_error(), 0); /* nothing left queued */
}

static void expect_error(int rc, int want, const char *why, const char *what, const char *path)
{
	assert_int_equal(rc, want);
	if (what)
		assert_contains(why, what);
	if (path)
		assert_contains(why, path);
	assert_int_equal(ERR_peek_error(), 0);
}

static void test_ctx_errors(void **state)
{
	const struct pki *p = *state;
	struct paths ps, other;
	struct rs_tls_files f;
	SSL_CTX *ctx = NULL;
	char why[256], missing[128], garbage[128], locked[128];

	snprintf(missing, sizeof(missing), "%s/nothing-here.pem", p->dir);
	snprintf(garbage, sizeof(garbage), "%s/garbage.pem", p->dir);

	/* Missing files: -ENOENT, naming the option and the path. */
	f = *files(&ps, p, "gw-1", "ca");
	f.cert = missing;
	expect_error(rs_tls_server_ctx(&f, &ctx, why, sizeof(why)), -ENOENT, why, "tls-cert", missing);
	f = *files(&ps, p, "gw-1", "ca");
	f.key = missing;
	expect_error(rs_tls_server_ctx(&f, &ctx, why, sizeof(why)), -ENOENT, why, "tls-key", missing);
	f.key = "/nonexistent-dir/x/y.key";
	expect_error(rs_tls_server_ctx(&f, &ctx, why, sizeof(why)), -ENOENT, why, "tls-key", f.key);
	f = *files(&ps, p, "gw-1", "ca");
	f.ca = missing;
	expect_error(rs_tls_server_ctx(&f, &ctx, why, sizeof(why)), -ENOENT, why, "tls-ca", missing);
	expect_error(rs_tls_client_ctx(&f, &ctx, why, sizeof(why)), -ENOENT, why, "tls-ca", missing);

	/* Unusable contents: -EINVAL, with OpenSSL's reason. */
	f = *files(&ps, p, "gw-1", NULL);
	f.cert = garbage;
	expect_error(rs_tls_server_ctx(&f, &ctx, why, sizeof(why)), -EINVAL, why, "tls-cert", garbage);
	f = *files(&ps, p, "gw-1", NULL);
	f.key = garbage;
	expect_error(rs_tls_server_ctx(&f, &ctx, why, sizeof(why)), -EINVAL, why, "tls-key", garbage);
	f = *files(&ps, p, "gw-1", NULL);
	f.key = files(&other, p, "sup-1", NULL)->key; /* a key, but not this certificate's */
	expect_error(rs_tls_server_ctx(&f, &ctx, why, sizeof(why)), -EINVAL, why, "tls-key", other.key);
	assert_contains(why, "mismatch");
	f = *files(&ps, p, "gw-1", NULL);
	snprintf(locked, sizeof(locked), "%s/locked.key", p->dir);
	f.key = locked;
	expect_error(rs_tls_server_ctx(&f, &ctx, why, sizeof(why)), -EINVAL, why, "tls-key", locked);
	f = *files(&ps, p, "gw-1", NULL);
	f.cert = ps.key; /* a key where the certificate belongs */
	expect_error(rs_tls_server_ctx(&f, &ctx, why, sizeof(why)), -EINVAL, why, "tls-cert", ps.key);
	f = *files(&ps, p, "gw-1", "ca");
	f.ca = garbage;
	expect_error(rs_tls_server_ctx(&f, &ctx, why, sizeof(why)), -EINVAL, why, "tls-ca", garbage);
	expect_error(rs_tls_client_ctx(&f, &ctx, why, sizeof(why)), -EINVAL, why, "tls-ca", garbage);
	f.ca = p->dir; /* a directory */
	expect_error(rs_tls_client_ctx(&f, &ctx, why, sizeof(why)), -EINVAL, why, "tls-ca", p->dir);

	/* Missing pieces. */
	f = *files(&ps, p, "gw-1", NULL);
	f.key = NULL;
	expect_error(rs_tls_server_ctx(&f, &ctx, why, sizeof(why)), -EINVAL, why, "tls-key", NULL);
	f = *files(&ps, p, NULL, "ca");
	expect_error(rs_tls_server_ctx(&f, &ctx, why, sizeof(why)), -EINVAL, why, "tls-cert", NULL);
	f = *files(&ps, p, "sup-1", NULL);
	expect_error(rs_tls_client_ctx(&f, &ctx, why, sizeof(why)), -EINVAL, why, "tls-ca", NULL);
	f = *files(&ps, p, "sup-1", "ca");
	f.key = NULL;
	expect_error(rs_tls_client_ctx(&f, &ctx, why, sizeof(why)), -EINVAL, why, "tls-key", NULL);
	f = *files(&ps, p, "sup-1", "ca");
	f.cert = NULL;
	expect_error(rs_tls_client_ctx(&f, &ctx, why, sizeof(why)), -EINVAL, why, "tls-cert", NULL);
	f = *files(&ps, p, "sup-1", "ca");
	f.key = files(&other, p, "gw-1", NULL)->key;
	expect_error(rs_tls_client_ctx(&f, &ctx, why, sizeof(why)), -EINVAL, why, "tls-key", other.key);

	/* No room for a reason is not an error in itself. */
	f = *files(&ps, p, "gw-1", NULL);
	f.cert = missing;
	assert_int_equal(rs_tls_server_ctx(&f, &ctx, NULL, 0), -ENOENT);
	assert_int_equal(rs_tls_server_ctx(&f, &ctx, why, 1), -ENOENT);
	assert_string_equal(why, "");
	assert_null(ctx); /* never set on failure */
}

static void test_not_after(void **state)
{
	const struct pki *p = *state;
	int64_t now = (int64_t)time(NULL), when = 0;
	SSL_CTX *ctx;

	ctx = server_ctx(p, "gw-1", NULL);
	assert_int_equal(rs_tls_ctx_not_after(ctx, &when), 0);
	assert_true(when > now);
	assert_true(when <= now + (int64_t)(DAYS + 1) * 86400);
	assert_true(when >= now + (int64_t)(DAYS - 1) * 86400);
	SSL_CTX_free(ctx);
	ctx = server_ctx(p, "expired", NULL);
	assert_int_equal(rs_tls_ctx_not_after(ctx, &when), 0);
	assert_true(when <= now + 1 && when > now - 86400);
	SSL_CTX_free(ctx);
	ctx = client_ctx(p, NULL, "ca"); /* no certificate of its own */
	assert_int_equal(rs_tls_ctx_not_after(ctx, &when), -ENOENT);
	SSL_CTX_free(ctx);
	assert_int_equal(rs_tls_ctx_not_after(NULL, &when), -ENOENT);
}

/* ---- names --------------------------------------------------------------- */

static void test_cert_names(void **state)
{
	static const struct {
		const char *cert, *name;
		bool names;
	} cases[] = {
		{ "gw-1", "gw-1", true },
		{ "gw-1", "GW-1", true }, /* DNS names ignore case */
		{ "gw-1", "ringsteer.test", true },
		{ "gw-1", "RingSteer.TEST", true },
		{ "gw-1", "127.0.0.1", true }, /* the IP SAN */
		{ "gw-1", "gw-2", false },
		{ "gw-1", "gw", false },
		{ "gw-1", "gw-11", false },
		{ "gw-1", "gw-1.", false },
		{ "gw-1", "gw-1 ", false },
		{ "gw-1", "gw-1.ringsteer.test", false },
		{ "gw-1", "test", false },
		{ "gw-1", ".test", false }, /* OpenSSL's "any subdomain of" form */
		{ "gw-1", ".ringsteer.test", false },
		{ "gw-1", "*.test", false },
		{ "gw-1", "*", false },
		{ "gw-1", "127.0.0.2", false },
		{ "gw-1", "::1", false },
		{ "gw-1", "", false },
		{ "gw-1", "ca", false },
		{ "sup-1", "sup-1", true },
		{ "sup-1", "sup-2", false },
		{ "sup-1", "gw-1", false },
		{ "nosan", "nosan", true }, /* no SAN at all: the CN */
		{ "nosan", "NOSAN", true },
		{ "nosan", "nosan2", false },
		{ "iponly", "iponly", true }, /* IP SANs only: still the CN */
		{ "iponly", "127.0.0.2", true },
		{ "iponly", "127.0.0.1", false },
		{ "cnignored", "cnignored", false }, /* a DNS SAN: never the CN */
		{ "cnignored", "other-name", true },
		{ "wild", "gw-1.ringsteer.test", false }, /* wildcards are not honoured */
		{ "wild", "x.ringsteer.test", false },
		{ "wild", "gw-1", false },
		{ "wild", "gw-x", false },
		{ "wild", "*.ringsteer.test", false }, /* nor matched literally */
		{ "wild", "gw-*", false },
		{ "wild", "wild", false },
	};
	const struct pki *p = *state;
	X509 *cert;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cert = load_cert(p, cases[i].cert);

		if (rs_tls_cert_names(cert, cases[i].name) != cases[i].names)
			fail_msg("%s names \"%s\": expected %s", cases[i].cert, cases[i].name,
				 cases[i].names ? "true" : "false");
		X509_free(cert);
	}
	cert = load_cert(p, "gw-1");
	assert_false(rs_tls_cert_names(cert, NULL));
	assert_false(rs_tls_cert_names(NULL, "gw-1"));
	X509_free(cert);
	assert_int_equal(ERR_peek_error(), 0);
}

static void test_expect_name_refuses(void **state)
{
	static const char *const bad[] = { "", ".test", "*.ringsteer.test", "gw-*", "gw 1", "gw-1\n" };
	const struct pki *p = *state;
	SSL_CTX *ctx = client_ctx(p, NULL, "ca");
	SSL *ssl = SSL_new(ctx);

	assert_non_null(ssl);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(rs_tls_expect_name(ssl, bad[i]), -EINVAL);
	assert_int_equal(rs_tls_expect_name(ssl, NULL), -EINVAL);
	assert_int_equal(rs_tls_expect_name(NULL, "gw-1"), -EINVAL);
	assert_int_equal(rs_tls_expect_name(ssl, "gw-1"), 0);
	assert_int_equal(rs_tls_expect_name(ssl, "::1"), 0);
	SSL_free(ssl);
	SSL_CTX_free(ctx);
}

/* ---- handshakes ---------------------------------------------------------- */

struct side {
	SSL *ssl;
	bool done, failed;
	unsigned long err; /* the first error OpenSSL queued when it failed */
};

struct pair {
	int fds[2];
	struct side client, server;
};

static void pair_open(struct pair *p, SSL_CTX *client, SSL_CTX *server, const char *expect)
{
	memset(p, 0, sizeof(*p));
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, p->fds), 0);
	p->client.ssl = SSL_new(client);
	p->server.ssl = SSL_new(server);
	assert_non_null(p->client.ssl);
	assert_non_null(p->server.ssl);
	assert_int_equal(SSL_set_fd(p->client.ssl, p->fds[0]), 1);
	assert_int_equal(SSL_set_fd(p->server.ssl, p->fds[1]), 1);
	SSL_set_connect_state(p->client.ssl);
	SSL_set_accept_state(p->server.ssl);
	if (expect)
		assert_int_equal(rs_tls_expect_name(p->client.ssl, expect), 0);
}

static void step(struct side *s)
{
	int rc;

	if (s->done || s->failed)
		return;
	/* Both ends share this thread's error queue: empty it before each
	 * call so that SSL_get_error and err describe this end only. */
	ERR_clear_error();
	rc = SSL_do_handshake(s->ssl);
	if (rc == 1) {
		s->done = true;
		return;
	}
	switch (SSL_get_error(s->ssl, rc)) {
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		return;
	default:
		s->failed = true;
		s->err = ERR_peek_error();
		ERR_clear_error();
	}
}

/* Alternates the two ends until each has finished or failed; a TLS 1.3
 * handshake takes a few rounds, so the bound is only there to stop a
 * stuck one. */
static void pair_run(struct pair *p)
{
	for (int round = 0; round < 64; round++) {
		step(&p->client);
		step(&p->server);
		if ((p->client.done || p->client.failed) && (p->server.done || p->server.failed))
			return;
	}
}

static void pair_close(struct pair *p)
{
	SSL_free(p->client.ssl);
	SSL_free(p->server.ssl);
	close(p->fds[0]);
	close(p->fds[1]);
}

static void describe(const struct side *s, char *buf, size_t len)
{
	rs_tls_describe_failure(s->ssl, s->err, buf, len);
}

static void test_handshake_ok(void **state)
{
	static const char *const names[] = { "gw-1", "GW-1", "ringsteer.test", "127.0.0.1" };
	const struct pki *p = *state;
	SSL_CTX *server = server_ctx(p, "gw-1", NULL);
	SSL_CTX *client = client_ctx(p, NULL, "ca");
	struct pair hs;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		pair_open(&hs, client, server, names[i]);
		pair_run(&hs);
		if (!hs.client.done || !hs.server.done)
			fail_msg("expecting %s: client %s, server %s", names[i], hs.client.done ? "done" : "not done",
				 hs.server.done ? "done" : "not done");
		assert_int_equal(SSL_version(hs.client.ssl), TLS1_3_VERSION);
		assert_false(rs_tls_peer_refused(hs.client.ssl));
		assert_false(rs_tls_peer_refused(hs.server.ssl));
		assert_null(SSL_get0_peer_certificate(hs.server.ssl)); /* none asked for */
		pair_close(&hs);
	}
	SSL_CTX_free(client);
	SSL_CTX_free(server);
}

static void test_handshake_mtls(void **state)
{
	const struct pki *p = *state;
	SSL_CTX *server = server_ctx(p, "gw-1", "ca");
	SSL_CTX *client = client_ctx(p, "sup-1", "ca");
	struct pair hs;
	X509 *peer;

	pair_open(&hs, client, server, "gw-1");
	pair_run(&hs);
	assert_true(hs.client.done);
	assert_true(hs.server.done);
	peer = SSL_get0_peer_certificate(hs.server.ssl);
	assert_non_null(peer);
	assert_int_equal(SSL_get_verify_result(hs.server.ssl), X509_V_OK);
	assert_true(rs_tls_cert_names(peer, "sup-1"));
	assert_false(rs_tls_cert_names(peer, "sup-2"));
	assert_false(rs_tls_cert_names(peer, "gw-1"));
	assert_false(rs_tls_peer_refused(hs.server.ssl));
	pair_close(&hs);
	SSL_CTX_free(client);
	SSL_CTX_free(server);
}

/* (b) the server's certificate verifies but names someone else. */
static void test_handshake_wrong_name(void **state)
{
	static const char *const names[] = { "gw-2", "127.0.0.2", "gw-1.ringsteer.test" };
	const struct pki *p = *state;
	SSL_CTX *server = server_ctx(p, "gw-1", NULL);
	SSL_CTX *client = client_ctx(p, NULL, "ca");
	char buf[256], want[128];
	struct pair hs;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		pair_open(&hs, client, server, names[i]);
		pair_run(&hs);
		assert_true(hs.client.failed);
		assert_false(hs.server.done);
		assert_true(rs_tls_peer_refused(hs.client.ssl));
		assert_false(rs_tls_peer_refused(hs.server.ssl)); /* it was refused, it refused nothing */
		describe(&hs.client, buf, sizeof(buf));
		snprintf(want, sizeof(want), "certificate does not name %s", names[i]);
		assert_string_equal(buf, want);
		pair_close(&hs);
	}
	SSL_CTX_free(client);
	SSL_CTX_free(server);
}

/* (c) certificates that do not verify: another CA's, an expired one. */
static void test_handshake_untrusted(void **state)
{
	static const struct {
		const char *cert, *says;
	} cases[] = {
		{ "rogue", "unable to get local issuer certificate" },
		{ "expired", "certificate has expired" },
	};
	const struct pki *p = *state;
	SSL_CTX *client = client_ctx(p, NULL, "ca");
	char buf[256];
	struct pair hs;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		SSL_CTX *server = server_ctx(p, cases[i].cert, NULL);

		pair_open(&hs, client, server, "gw-1");
		pair_run(&hs);
		assert_true(hs.client.failed);
		assert_false(hs.server.done);
		assert_true(rs_tls_peer_refused(hs.client.ssl));
		describe(&hs.client, buf, sizeof(buf));
		assert_contains(buf, "certificate verification failed");
		assert_contains(buf, cases[i].says);
		pair_close(&hs);
		SSL_CTX_free(server);
	}
	SSL_CTX_free(client);
}

/* (d) an mTLS server and clients whose certificate is missing or foreign. */
static void test_handshake_mtls_refused(void **state)
{
	const struct pki *p = *state;
	SSL_CTX *server = server_ctx(p, "gw-1", "ca");
	SSL_CTX *bare = client_ctx(p, NULL, "ca");
	SSL_CTX *rogue = client_ctx(p, "rogue", "ca");
	char buf[256];
	struct pair hs;

	pair_open(&hs, bare, server, "gw-1");
	pair_run(&hs);
	assert_true(hs.server.failed);
	assert_null(SSL_get0_peer_certificate(hs.server.ssl));
	assert_false(rs_tls_peer_refused(hs.client.ssl));
	describe(&hs.server, buf, sizeof(buf));
	assert_string_equal(buf, "peer did not return a certificate");
	pair_close(&hs);

	pair_open(&hs, rogue, server, "gw-1");
	pair_run(&hs);
	assert_true(hs.server.failed);
	assert_true(rs_tls_peer_refused(hs.server.ssl));
	describe(&hs.server, buf, sizeof(buf));
	assert_contains(buf, "certificate verification failed");
	pair_close(&hs);

	SSL_CTX_free(rogue);
	SSL_CTX_free(bare);
	SSL_CTX_free(server);
}

/* (e) TLS 1.2 is refused both ways. */
static void test_handshake_tls12(void **state)
{
	const struct pki *p = *state;
	SSL_CTX *server = server_ctx(p, "gw-1", NULL);
	SSL_CTX *client = client_ctx(p, NULL, "ca");
	SSL_CTX *old_client = SSL_CTX_new(TLS_client_method());
	SSL_CTX *old_server = SSL_CTX_new(TLS_server_method());
	struct paths ps;
	char buf[256];
	struct pair hs;

	assert_non_null(old_client);
	assert_non_null(old_server);
	assert_int_equal(SSL_CTX_set_max_proto_version(old_client, TLS1_2_VERSION), 1);
	assert_int_equal(SSL_CTX_set_max_proto_version(old_server, TLS1_2_VERSION), 1);
	files(&ps, p, "gw-1", NULL);
	assert_int_equal(SSL_CTX_use_certificate_chain_file(old_server, ps.cert), 1);
	assert_int_equal(SSL_CTX_use_PrivateKey_file(old_server, ps.key, SSL_FILETYPE_PEM), 1);

	pair_open(&hs, old_client, server, NULL);
	pair_run(&hs);
	assert_true(hs.server.failed);
	assert_true(hs.client.failed);
	assert_false(rs_tls_peer_refused(hs.server.ssl));
	describe(&hs.server, buf, sizeof(buf));
	assert_contains(buf, "protocol");
	pair_close(&hs);

	pair_open(&hs, client, old_server, "gw-1");
	pair_run(&hs);
	assert_true(hs.client.failed);
	assert_false(rs_tls_peer_refused(hs.client.ssl));
	describe(&hs.client, buf, sizeof(buf));
	assert_contains(buf, "protocol");
	pair_close(&hs);

	SSL_CTX_free(old_server);
	SSL_CTX_free(old_client);
	SSL_CTX_free(client);
	SSL_CTX_free(server);
}

/* rs_tls_expect_name turns verification on, so the name check holds even
 * on a context that did not ask for it. */
static void test_expect_name_forces_verify(void **state)
{
	const struct pki *p = *state;
	SSL_CTX *server = server_ctx(p, "gw-1", NULL);
	SSL_CTX *client = SSL_CTX_new(TLS_client_method());
	struct paths ps;
	struct pair hs;

	assert_non_null(client);
	files(&ps, p, NULL, "ca");
	assert_int_equal(SSL_CTX_load_verify_locations(client, ps.ca, NULL), 1);
	assert_int_equal(SSL_CTX_get_verify_mode(client), SSL_VERIFY_NONE);
	pair_open(&hs, client, server, "gw-2");
	pair_run(&hs);
	assert_true(hs.client.failed);
	assert_true(rs_tls_peer_refused(hs.client.ssl));
	pair_close(&hs);
	SSL_CTX_free(client);
	SSL_CTX_free(server);
}

static void test_describe_fallbacks(void **state)
{
	const struct pki *p = *state;
	SSL_CTX *ctx = client_ctx(p, NULL, "ca");
	SSL *ssl = SSL_new(ctx);
	char buf[64];

	assert_non_null(ssl);
	rs_tls_describe_failure(ssl, 0, buf, sizeof(buf));
	assert_string_equal(buf, "handshake failed");
	rs_tls_describe_failure(ssl, ERR_PACK(ERR_LIB_SSL, 0, SSL_R_NO_SHARED_CIPHER), buf, sizeof(buf));
	assert_string_equal(buf, "no shared cipher");
	rs_tls_describe_failure(ssl, 0, buf, 7); /* truncated, still terminated */
	assert_string_equal(buf, "handsh");
	rs_tls_describe_failure(ssl, 0, NULL, 0);
	assert_false(rs_tls_peer_refused(ssl));
	assert_false(rs_tls_peer_refused(NULL));
	SSL_free(ssl);
	SSL_CTX_free(ctx);
}

/* ---- records after the handshake (tls_record.c) ---------------------------- */

static void keylog_to_app_data(const SSL *ssl, const char *line)
{
	rs_tls_secrets_note(SSL_get_app_data(ssl), line);
}

/* Reads whole records off fd into buf; returns the bytes read. */
static size_t read_raw(int fd, uint8_t *buf, size_t cap)
{
	ssize_t n = read(fd, buf, cap);

	assert_true(n > 0);
	return (size_t)n;
}

/* Under each suite: an OpenSSL client and a server that has left its SSL
 * for records exchange data both ways; a flipped bit is refused; the
 * client's close_notify reads as an alert. */
static void test_records(void **state)
{
	static const char *const suites[] = { "TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_128_GCM_SHA256",
					      "TLS_AES_256_GCM_SHA384" };
	const struct pki *p = *state;
	SSL_CTX *server = server_ctx(p, "gw-1", NULL);
	SSL_CTX *client = client_ctx(p, NULL, "ca");
	struct rs_tls_scratch sc;
	struct evbuffer *out = evbuffer_new();

	assert_non_null(out);
	assert_int_equal(rs_tls_scratch_init(&sc), 0);
	SSL_CTX_set_keylog_callback(server, keylog_to_app_data);
	for (size_t i = 0; i < sizeof(suites) / sizeof(suites[0]); i++) {
		struct rs_tls_secrets secrets = { 0 };
		struct rs_tls_records r;
		struct pair hs;
		uint8_t buf[4 * RS_TLS_CIPHERTEXT_MAX], *plain, big[20000], got[20000];
		size_t n, plain_len, total = 0;
		int len;

		pair_open(&hs, client, server, "gw-1");
		assert_int_equal(SSL_set_ciphersuites(hs.server.ssl, suites[i]), 1);
		SSL_set_app_data(hs.server.ssl, &secrets);
		pair_run(&hs);
		assert_true(hs.client.done && hs.server.done);
		assert_int_equal(rs_tls_records_take(hs.server.ssl, &secrets, &r), 0);

		/* client to server: one record */
		assert_int_equal(SSL_write(hs.client.ssl, "hello", 5), 5);
		n = read_raw(hs.fds[1], buf, sizeof(buf));
		assert_int_equal(rs_tls_open(&r, &sc, buf, n, &plain, &plain_len), 23);
		assert_int_equal(plain_len, 5);
		assert_memory_equal(plain, "hello", 5);

		/* server to client: more than one record's worth */
		for (size_t k = 0; k < sizeof(big); k++)
			big[k] = (uint8_t)(k * 7 + i);
		assert_int_equal(rs_tls_seal(&r, &sc, big, sizeof(big), out), 0);
		n = evbuffer_get_length(out);
		assert_int_equal(evbuffer_remove(out, buf, n), (int)n);
		assert_int_equal(write(hs.fds[1], buf, n), (ssize_t)n);
		while (total < sizeof(big)) {
			int rc = SSL_read(hs.client.ssl, got + total, (int)(sizeof(got) - total));

			assert_true(rc > 0);
			total += (size_t)rc;
		}
		assert_memory_equal(got, big, sizeof(big));

		/* a flipped bit does not authenticate */
		assert_int_equal(SSL_write(hs.client.ssl, "again", 5), 5);
		n = read_raw(hs.fds[1], buf, sizeof(buf));
		len = rs_tls_record_len(buf);
		assert_int_equal(len, (int)n);
		buf[n - 1] ^= 1;
		assert_int_equal(rs_tls_open(&r, &sc, buf, n, &plain, &plain_len), -EBADMSG);

		/* close_notify: an alert (the sequence moved on by the refused record's) */
		r.rx.seq++;
		assert_int_equal(SSL_shutdown(hs.client.ssl), 0);
		n = read_raw(hs.fds[1], buf, sizeof(buf));
		assert_int_equal(rs_tls_open(&r, &sc, buf, n, &plain, &plain_len), 21);

		/* past the records one key may protect: refused both ways */
		r.tx.seq = RS_TLS_RECORDS_MAX;
		assert_int_equal(rs_tls_seal(&r, &sc, big, 1, out), -EIO);
		r.rx.seq = RS_TLS_RECORDS_MAX;
		assert_int_equal(rs_tls_open(&r, &sc, buf, n, &plain, &plain_len), -EBADMSG);
		pair_close(&hs);
	}
	rs_tls_scratch_fini(&sc);
	evbuffer_free(out);
	SSL_CTX_free(client);
	SSL_CTX_free(server);
}

/* ---- cidr ---------------------------------------------------------------- */

static void test_cidr_parse(void **state)
{
	static const struct {
		const char *text;
		sa_family_t family;
		unsigned prefix;
		const char *network;
	} good[] = {
		{ "198.18.0.0/15", AF_INET, 15, "198.18.0.0" },
		{ "10.0.0.0/8", AF_INET, 8, "10.0.0.0" },
		{ "10.1.2.3", AF_INET, 32, "10.1.2.3" },
		{ "10.1.2.3/32", AF_INET, 32, "10.1.2.3" },
		{ "0.0.0.0/0", AF_INET, 0, "0.0.0.0" },
		{ "255.255.255.255", AF_INET, 32, "255.255.255.255" },
		{ "128.0.0.0/1", AF_INET, 1, "128.0.0.0" },
		{ "fd00::/8", AF_INET6, 8, "fd00::" },
		{ "FD00::/8", AF_INET6, 8, "fd00::" },
		{ "::1", AF_INET6, 128, "::1" },
		{ "::/0", AF_INET6, 0, "::" },
		{ "2001:db8::/32", AF_INET6, 32, "2001:db8::" },
		{ "2001:db8::1/128", AF_INET6, 128, "2001:db8::1" },
		{ "fe80::/10", AF_INET6, 10, "fe80::" },
		/* IPv4-mapped prefixes of /96 and longer are IPv4 prefixes. */
		{ "::ffff:198.18.0.0/111", AF_INET, 15, "198.18.0.0" },
		{ "::ffff:10.1.2.3", AF_INET, 32, "10.1.2.3" },
		{ "::ffff:0:0/96", AF_INET, 0, "0.0.0.0" },
		{ "::/80", AF_INET6, 80, "::" },
	};
	static const char *const bad[] = {
		"", " ", "10.0.0.0/8 ", " 10.0.0.0/8", "10.0.0.0 /8", "10.0.0.0/ 8", "10.0.0.0/8\n",
		"10.0.0.0/", "/8", "10.0.0.0/33", "10.0.0.0/+8", "10.0.0.0/-8", "10.0.0.0/08", "10.0.0.0/008",
		"10.0.0.0/0x8", "10.0.0.0/8/8", "10.0.0.0/8.0", "10.0.0.1/8", "10.0.0.0/4", "10.0.0/24",
		"010.0.0.0/8", "1.2.3.4.5", "1.2.3.256", "localhost", "fd00::/129", "fd00::1/8", "::/1280",
		"fe80::1%eth0", "[::1]", "[::1]/128", "::ffff:0:0/95", "::ffff:0:0/80", "::ffff:10.0.0.1/104",
		"1.2.3.4/4294967328", "10.0.0.0/8x",
	};
	struct rs_cidr c;
	char text[INET6_ADDRSTRLEN];

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		memset(&c, 0xa5, sizeof(c));
		if (rs_cidr_parse(good[i].text, &c) != 0)
			fail_msg("\"%s\" refused", good[i].text);
		assert_int_equal(c.family, good[i].family);
		assert_int_equal(c.prefix, good[i].prefix);
		assert_non_null(inet_ntop(c.family, c.addr, text, sizeof(text)));
		assert_string_equal(text, good[i].network);
		if (c.family == AF_INET)
			for (size_t b = 4; b < sizeof(c.addr); b++)
				assert_int_equal(c.addr[b], 0);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		c.family = 77;
		if (rs_cidr_parse(bad[i], &c) != -EINVAL)
			fail_msg("\"%s\" accepted", bad[i]);
		assert_int_equal(c.family, 77); /* untouched on failure */
	}
	assert_int_equal(rs_cidr_parse(NULL, &c), -EINVAL);
}

static struct sockaddr_storage addr_of(const char *text)
{
	struct sockaddr_storage ss;
	socklen_t len;

	if (rs_address_parse(text, &ss, &len) != 0)
		fail_msg("bad test address %s", text);
	return ss;
}

static void test_cidr_contains(void **state)
{
	static const struct {
		const char *cidr, *addr;
		bool in;
	} cases[] = {
		{ "10.0.0.0/8", "10.0.0.0", true },
		{ "10.0.0.0/8", "10.255.255.255", true },
		{ "10.0.0.0/8", "11.0.0.0", false },
		{ "10.0.0.0/8", "9.255.255.255", false },
		{ "10.0.0.0/8", "::ffff:10.1.2.3", true }, /* mapped: as IPv4 */
		{ "10.0.0.0/8", "::ffff:11.1.2.3", false },
		{ "10.0.0.0/8", "::10.1.2.3", false }, /* IPv4-compatible is not mapped */
		{ "10.0.0.0/8", "a01:203::", false },
		{ "198.18.0.0/15", "198.19.255.255", true },
		{ "198.18.0.0/15", "198.20.0.0", false },
		{ "198.18.0.0/15", "198.17.255.255", false },
		{ "0.0.0.0/0", "1.2.3.4", true },
		{ "0.0.0.0/0", "255.255.255.255", true },
		{ "0.0.0.0/0", "::ffff:1.2.3.4", true },
		{ "0.0.0.0/0", "::1", false },
		{ "0.0.0.0/0", "::", false },
		{ "::/0", "::1", true },
		{ "::/0", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true },
		{ "::/0", "1.2.3.4", false },
		{ "::/0", "::ffff:1.2.3.4", false }, /* mapped is IPv4 */
		{ "::/80", "::ffff:1.2.3.4", false }, /* covers it as bits, not as IPv4 */
		{ "::/80", "::1", true },
		{ "::ffff:0:0/96", "::ffff:1.2.3.4", true },
		{ "::ffff:0:0/96", "8.8.8.8", true },
		{ "::ffff:198.18.0.0/111", "198.19.0.1", true },
		{ "::ffff:198.18.0.0/111", "::ffff:198.19.0.1", true },
		{ "::ffff:198.18.0.0/111", "198.20.0.1", false },
		{ "1.2.3.4", "1.2.3.4", true },
		{ "1.2.3.4/32", "1.2.3.5", false },
		{ "1.2.3.4/32", "1.2.3.3", false },
		{ "128.0.0.0/1", "255.0.0.0", true },
		{ "128.0.0.0/1", "127.255.255.255", false },
		{ "::1/128", "::1", true },
		{ "::1", "::", false },
		{ "::1", "::2", false },
		{ "::1", "0.0.0.1", false },
		{ "::/1", "7fff::", true },
		{ "::/1", "8000::", false },
		{ "fd00::/8", "fdff:ffff::1", true },
		{ "fd00::/8", "fe00::", false },
		{ "fd00::/8", "fc00::", false },
		{ "2001:db8::/33", "2001:db8:7fff:ffff::1", true },
		{ "2001:db8::/33", "2001:db8:8000::", false },
		{ "2001:db8::/127", "2001:db8::1", true },
		{ "2001:db8::/127", "2001:db8::2", false },
	};
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	struct sockaddr_storage ss;
	struct rs_cidr c;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(rs_cidr_parse(cases[i].cidr, &c), 0);
		ss = addr_of(cases[i].addr);
		if (rs_cidr_contains(&c, (struct sockaddr *)&ss) != cases[i].in)
			fail_msg("%s contains %s: expected %s", cases[i].cidr, cases[i].addr,
				 cases[i].in ? "true" : "false");
	}
	assert_int_equal(rs_cidr_parse("0.0.0.0/0", &c), 0);
	assert_false(rs_cidr_contains(&c, (struct sockaddr *)&un));
	assert_false(rs_cidr_contains(&c, NULL));
	assert_false(rs_cidr_contains(NULL, (struct sockaddr *)&ss));
}

static void test_cidr_list(void **state)
{
	static const char *const texts[] = { "10.0.0.0/8", "fd00::/8", "192.0.2.7" };
	struct rs_cidr list[3];
	struct sockaddr_storage ss;

	(void)state;
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(rs_cidr_parse(texts[i], &list[i]), 0);
	ss = addr_of("10.9.8.7");
	assert_true(rs_cidr_list_contains(list, 3, (struct sockaddr *)&ss));
	assert_false(rs_cidr_list_contains(list, 0, (struct sockaddr *)&ss));
	assert_false(rs_cidr_list_contains(NULL, 0, (struct sockaddr *)&ss));
	ss = addr_of("fd12::1");
	assert_true(rs_cidr_list_contains(list, 3, (struct sockaddr *)&ss));
	assert_false(rs_cidr_list_contains(list, 1, (struct sockaddr *)&ss));
	ss = addr_of("::ffff:192.0.2.7");
	assert_true(rs_cidr_list_contains(list, 3, (struct sockaddr *)&ss));
	ss = addr_of("192.0.2.8");
	assert_false(rs_cidr_list_contains(list, 3, (struct sockaddr *)&ss));
	ss = addr_of("fe00::1");
	assert_false(rs_cidr_list_contains(list, 3, (struct sockaddr *)&ss));
}

static bool bit(const uint8_t *a, unsigned i)
{
	return (a[i / 8] >> (7 - i % 8)) & 1;
}

static bool is_mapped(const uint8_t *a)
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };

	return memcmp(a, mapped, sizeof(mapped)) == 0;
}

/* The obvious definition, one bit at a time. */
static bool reference_contains(const uint8_t *net, unsigned prefix, const uint8_t *addr)
{
	for (unsigned i = 0; i < prefix; i++)
		if (bit(net, i) != bit(addr, i))
			return false;
	return true;
}

static struct sockaddr_storage sockaddr_from(sa_family_t family, const uint8_t *addr)
{
	struct sockaddr_storage ss;

	memset(&ss, 0, sizeof(ss));
	if (family == AF_INET) {
		struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;

		in4->sin_family = AF_INET;
		memcpy(&in4->sin_addr, addr, 4);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

		in6->sin6_family = AF_INET6;
		memcpy(&in6->sin6_addr, addr, 16);
	}
	return ss;
}

static void test_cidr_random(void **state)
{
	struct test_rng r;
	unsigned checked = 0, inside = 0;

	(void)state;
	test_rng_seed(&r, "cidr random", 21);
	for (int iter = 0; iter < 3000; iter++) {
		bool v4 = test_rng_below(&r, 2) == 0;
		sa_family_t family = v4 ? AF_INET : AF_INET6;
		unsigned len = v4 ? 4 : 16, max = len * 8;
		unsigned prefix = (unsigned)test_rng_below(&r, max + 1);
		uint8_t net[16] = { 0 };
		char text[INET6_ADDRSTRLEN + 8], addr_text[INET6_ADDRSTRLEN];
		struct rs_cidr c;

		for (unsigned i = 0; i < len; i++)
			net[i] = (uint8_t)test_rng_next(&r);
		if (prefix < max) { /* a host bit set: refused */
			unsigned host = prefix + (unsigned)test_rng_below(&r, max - prefix);

			net[host / 8] |= (uint8_t)(0x80 >> (host % 8));
			inet_ntop(family, net, addr_text, sizeof(addr_text));
			snprintf(text, sizeof(text), "%s/%u", addr_text, prefix);
			if (rs_cidr_parse(text, &c) != -EINVAL)
				fail_msg("%s accepted", text);
		}
		for (unsigned i = prefix; i < max; i++)
			net[i / 8] &= (uint8_t)~(0x80 >> (i % 8));
		if (!v4 && prefix >= 96 && is_mapped(net))
			continue; /* parsed as IPv4: test_cidr_parse covers it */
		inet_ntop(family, net, addr_text, sizeof(addr_text));
		snprintf(text, sizeof(text), "%s/%u", addr_text, prefix);
		if (rs_cidr_parse(text, &c) != 0)
			fail_msg("%s refused", text);
		assert_int_equal(c.family, family);
		assert_int_equal(c.prefix, prefix);
		assert_memory_equal(c.addr, net, len);

		for (int probe = 0; probe < 8; probe++) {
			uint8_t addr[16];
			struct sockaddr_storage ss;
			bool want;

			/* Half share the prefix; of those, some have one bit
			 * of it flipped: the addresses just outside. */
			for (unsigned i = 0; i < len; i++)
				addr[i] = (uint8_t)test_rng_next(&r);
			if (probe % 2 == 0)
				for (unsigned i = 0; i < prefix; i++)
					addr[i / 8] = (uint8_t)((addr[i / 8] & ~(0x80 >> (i % 8))) |
								(net[i / 8] & (0x80 >> (i % 8))));
			if (probe % 4 == 2 && prefix > 0) {
				unsigned flip = (unsigned)test_rng_below(&r, prefix);

				addr[flip / 8] ^= (uint8_t)(0x80 >> (flip % 8));
			}
			want = reference_contains(net, prefix, addr) && (v4 || !is_mapped(addr));
			ss = sockaddr_from(family, addr);
			if (rs_cidr_contains(&c, (struct sockaddr *)&ss) != want) {
				inet_ntop(family, addr, addr_text, sizeof(addr_text));
				fail_msg("%s contains %s: expected %s", text, addr_text, want ? "true" : "false");
			}
			if (v4) { /* the same peer through a dual-stack socket */
				uint8_t mapped[16] = { [10] = 0xff, [11] = 0xff };

				memcpy(mapped + 12, addr, 4);
				ss = sockaddr_from(AF_INET6, mapped);
				assert_int_equal(rs_cidr_contains(&c, (struct sockaddr *)&ss), want);
			}
			checked++;
			inside += want;
		}
	}
	/* The probes must exercise both answers, or the test proves little. */
	assert_true(inside > checked / 8);
	assert_true(checked - inside > checked / 8);
}

int main(void)
{
	const struct CMUnitTest tls[] = {
		cmocka_unit_test(test_ctx_good),
		cmocka_unit_test(test_ctx_errors),
		cmocka_unit_test(test_not_after),
		cmocka_unit_test(test_cert_names),
		cmocka_unit_test(test_expect_name_refuses),
		cmocka_unit_test(test_handshake_ok),
		cmocka_unit_test(test_handshake_mtls),
		cmocka_unit_test(test_handshake_wrong_name),
		cmocka_unit_test(test_handshake_untrusted),
		cmocka_unit_test(test_handshake_mtls_refused),
		cmocka_unit_test(test_handshake_tls12),
		cmocka_unit_test(test_expect_name_forces_verify),
		cmocka_unit_test(test_describe_fallbacks),
		cmocka_unit_test(test_records),
	};
	const struct CMUnitTest cidr[] = {
		cmocka_unit_test(test_cidr_parse),
		cmocka_unit_test(test_cidr_contains),
		cmocka_unit_test(test_cidr_list),
		cmocka_unit_test(test_cidr_random),
	};
	int failed = cmocka_run_group_tests_name("tls", tls, make_pki, remove_pki);

	failed += cmocka_run_group_tests_name("cidr", cidr, NULL, NULL);
	return failed;
}
