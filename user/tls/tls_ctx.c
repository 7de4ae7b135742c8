/* SPDX-License-Identifier: Apache-2.0 */
/* tls_ctx.c - the TLS contexts a gateway (server) and a supervisor (client)
 * build from PEM files.  Guarantees: TLS 1.3 only; a context is returned
 * whole or not at all; a failure names the file at fault and what OpenSSL
 * said about it; no OpenSSL error is left queued for a later, unrelated
 * call to find. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "tls/tls.h"

/* Names the files by the options that give them, so that a message points
 * at what the operator typed. */
#define WHAT_CERT "tls-cert"
#define WHAT_KEY "tls-key"
#define WHAT_CA "tls-ca"

static void say(char *why, size_t why_len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void say(char *why, size_t why_len, const char *fmt, ...)
{
	va_list ap;

	if (!why || why_len == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(why, why_len, fmt, ap);
	va_end(ap);
}

/* The first error OpenSSL queued is the cause ("no start line", "key
 * values mismatch"); the ones after it are the callers' wrappers ("PEM
 * lib"), which say nothing an operator can act on. */
static const char *openssl_reason(char *buf, size_t len)
{
	unsigned long e = ERR_peek_error();
	const char *reason;

	if (e == 0)
		return "unknown error";
	reason = ERR_reason_error_string(e);
	if (reason)
		return reason;
	ERR_error_string_n(e, buf, len);
	return buf;
}

/* Sets why to "what path: problem (<openssl reason>)" and returns -EINVAL. */
static int bad_contents(const char *what, const char *path, const char *problem, char *why, size_t why_len)
{
	char buf[256];

	say(why, why_len, "%s %s: %s (%s)", what, path, problem, openssl_reason(buf, sizeof(buf)));
	return -EINVAL;
}

/* OpenSSL reports a missing file and a malformed one alike (as a BIO or
 * PEM error); looking first lets the caller tell "not there" from "not
 * usable". */
static int check_file(const char *what, const char *path, char *why, size_t why_len)
{
	struct stat st;

	if (stat(path, &st) < 0) {
		int err = errno;

		say(why, why_len, "%s %s: %s", what, path, strerror(err));
		return err == ENOTDIR ? -ENOENT : -err;
	}
	if (S_ISDIR(st.st_mode)) {
		say(why, why_len, "%s %s: is a directory", what, path);
		return -EINVAL;
	}
	return 0;
}

/* An encrypted key would make OpenSSL prompt on the terminal, which a
 * daemon must never do: refuse the passphrase so the load fails instead. */
static int no_passphrase(char *buf, int size, int rwflag, void *userdata)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)userdata;
	return 0;
}

static SSL_CTX *new_ctx(const SSL_METHOD *method)
{
	SSL_CTX *ctx = SSL_CTX_new(method);

	if (!ctx)
		return NULL;
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1) {
		SSL_CTX_free(ctx);
		return NULL;
	}
	SSL_CTX_set_default_passwd_cb(ctx, no_passphrase);
	/* Most supervisor connections sit idle between frames; with this,
	 * an idle connection holds no read or write buffer. */
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	return ctx;
}

static int load_identity(SSL_CTX *ctx, const struct rs_tls_files *f, char *why, size_t why_len)
{
	int rc;

	if ((rc = check_file(WHAT_CERT, f->cert, why, why_len)) < 0)
		return rc;
	if (SSL_CTX_use_certificate_chain_file(ctx, f->cert) != 1)
		return bad_contents(WHAT_CERT, f->cert, "not a usable PEM certificate chain", why, why_len);
	if ((rc = check_file(WHAT_KEY, f->key, why, why_len)) < 0)
		return rc;
	/* OpenSSL refuses a key that does not match the certificate already
	 * loaded at this step, not at SSL_CTX_check_private_key, so both say
	 * so in the same words. */
	if (SSL_CTX_use_PrivateKey_file(ctx, f->key, SSL_FILETYPE_PEM) != 1) {
		unsigned long e = ERR_peek_error();

		if (ERR_GET_LIB(e) == ERR_LIB_X509 && ERR_GET_REASON(e) == X509_R_KEY_VALUES_MISMATCH)
			return bad_contents(WHAT_KEY, f->key, "does not match the certificate", why, why_len);
		return bad_contents(WHAT_KEY, f->key, "not a usable PEM private key", why, why_len);
	}
	if (SSL_CTX_check_private_key(ctx) != 1)
		return bad_contents(WHAT_KEY, f->key, "does not match the certificate", why, why_len);
	return 0;
}

static int load_ca(SSL_CTX *ctx, const char *ca, char *why, size_t why_len)
{
	int rc = check_file(WHAT_CA, ca, why, why_len);

	if (rc < 0)
		return rc;
	if (SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1)
		return bad_contents(WHAT_CA, ca, "no usable PEM CA certificates", why, why_len);
	return 0;
}

int rs_tls_server_ctx(const struct rs_tls_files *f, SSL_CTX **out, char *why, size_t why_len)
{
	STACK_OF(X509_NAME) *names = NULL;
	SSL_CTX *ctx = NULL;
	int rc;

	if (!f || !out || !f->cert || !f->key) {
		say(why, why_len, "a server needs both %s and %s", WHAT_CERT, WHAT_KEY);
		return -EINVAL;
	}
	ERR_clear_error();
	ctx = new_ctx(TLS_server_method());
	if (!ctx) {
		say(why, why_len, "cannot make a TLS server context");
		rc = -ENOMEM;
		goto cleanup;
	}
	if ((rc = load_identity(ctx, f, why, why_len)) < 0)
		goto cleanup;
	/* No tickets unless the owner installs shared ticket keys
	 * (rs_tls_ticket_keys_install): a ticket under this context's own
	 * random key could resume only here, and the two tickets a TLS 1.3
	 * server sends by default sit unacknowledged in front of the ACCEPT,
	 * which Nagle, on a socket without TCP_NODELAY, holds for the client's
	 * delayed ACK (about 40 ms per attach, bench/tls_cost.sh). */
	SSL_CTX_set_num_tickets(ctx, 0);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	/* A session resumes only where its context says the same: with mTLS
	 * a session without a client certificate must not resume, and OpenSSL
	 * refuses resumption outright under SSL_VERIFY_PEER without one. */
	if (SSL_CTX_set_session_id_context(ctx, (const unsigned char *)(f->ca ? "ringsteer mtls" : "ringsteer tls"),
					   f->ca ? 14 : 13) != 1) {
		say(why, why_len, "cannot set the session id context");
		rc = -ENOMEM;
		goto cleanup;
	}
	/* The server's preference, not a restriction: ChaCha20-Poly1305 first.
	 * A supervisor's link carries a frame every few seconds for hours, so
	 * what costs is the state an idle connection holds, not cipher speed:
	 * under OpenSSL 3.0 a ChaCha20 connection holds about 500 bytes less
	 * than an AES-GCM one (14.1 against 14.6 KB after the handshake,
	 * measured), 5 MB over 10,000 supervisors.  AES-GCM stays offered. */
	if (SSL_CTX_set_ciphersuites(ctx, "TLS_CHACHA20_POLY1305_SHA256:TLS_AES_256_GCM_SHA384:TLS_AES_128_GCM_SHA256") != 1) {
		say(why, why_len, "cannot set the TLS 1.3 cipher suites");
		rc = -EINVAL;
		goto cleanup;
	}
	SSL_CTX_set_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
	/* A peer that connects and closes without a word (a TCP port probe, a
	 * load balancer's check) is a close, not a failed handshake: OpenSSL 3
	 * would report it as an error and the refusal counters would count
	 * every probe. */
	SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
	if (f->ca) {
		if ((rc = load_ca(ctx, f->ca, why, why_len)) < 0)
			goto cleanup;
		/* The CertificateRequest lists the acceptable issuers, so that a
		 * client holding several certificates can pick the right one. */
		names = SSL_load_client_CA_file(f->ca);
		if (!names) {
			rc = bad_contents(WHAT_CA, f->ca, "no usable PEM CA certificates", why, why_len);
			goto cleanup;
		}
		SSL_CTX_set_client_CA_list(ctx, names); /* takes names */
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	}
	*out = ctx;
	ctx = NULL;
	rc = 0;
cleanup:
	SSL_CTX_free(ctx);
	ERR_clear_error();
	return rc;
}

int rs_tls_client_ctx(const struct rs_tls_files *f, SSL_CTX **out, char *why, size_t why_len)
{
	SSL_CTX *ctx = NULL;
	int rc;

	if (!f || !out || !f->ca) {
		say(why, why_len, "a client needs %s to verify servers against", WHAT_CA);
		return -EINVAL;
	}
	if (!f->cert != !f->key) {
		say(why, why_len, "%s and %s go together: give both or neither", WHAT_CERT, WHAT_KEY);
		return -EINVAL;
	}
	ERR_clear_error();
	ctx = new_ctx(TLS_client_method());
	if (!ctx) {
		say(why, why_len, "cannot make a TLS client context");
		rc = -ENOMEM;
		goto cleanup;
	}
	if ((rc = load_ca(ctx, f->ca, why, why_len)) < 0)
		goto cleanup;
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if (f->cert && (rc = load_identity(ctx, f, why, why_len)) < 0)
		goto cleanup;
	*out = ctx;
	ctx = NULL;
	rc = 0;
cleanup:
	SSL_CTX_free(ctx);
	ERR_clear_error();
	return rc;
}

int rs_tls_ctx_not_after(SSL_CTX *ctx, int64_t *out)
{
	X509 *cert = ctx ? SSL_CTX_get0_certificate(ctx) : NULL;
	const ASN1_TIME *t;
	struct tm tm;
	time_t when;

	if (!cert)
		return -ENOENT;
	t = X509_get0_notAfter(cert);
	memset(&tm, 0, sizeof(tm));
	if (!t || ASN1_TIME_to_tm(t, &tm) != 1) {
		ERR_clear_error();
		return -EINVAL;
	}
	/* ASN1_TIME_to_tm gives UTC, hence timegm (not mktime, which would
	 * read it as local time). */
	when = timegm(&tm);
	if (when == (time_t)-1)
		return -EINVAL;
	*out = (int64_t)when;
	return 0;
}
