/* SPDX-License-Identifier: Apache-2.0 */
/* tls_record.c - TLS 1.3 application-data records after the handshake
 * (RFC 8446 section 5.2): see tls_record.h for why.  The nonce is the
 * IV XOR the record's sequence number; the additional data is the record
 * header; the inner plaintext ends with its content type, then zero
 * padding (we send none, and strip any). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/kdf.h>

#include "tls/tls_record.h"

#define TAG_LEN 16
#define TYPE_APPDATA 23

static const char *const cipher_names[RS_TLS_SUITES] = { "ChaCha20-Poly1305", "AES-128-GCM", "AES-256-GCM" };
static const size_t key_lens[RS_TLS_SUITES] = { 32, 16, 32 };

static int hex_in(const char *hex, uint8_t *out, size_t max, size_t *len)
{
	size_t n = 0;

	while (hex[0] && hex[0] != ' ' && hex[0] != '\n') {
		unsigned v;

		if (n == max || sscanf(hex, "%2x", &v) != 1)
			return -EINVAL;
		out[n++] = (uint8_t)v;
		hex += 2;
	}
	*len = n;
	return 0;
}

void rs_tls_secrets_note(struct rs_tls_secrets *s, const char *line)
{
	static const char client[] = "CLIENT_TRAFFIC_SECRET_0 ", server[] = "SERVER_TRAFFIC_SECRET_0 ";
	uint8_t *dst;
	size_t *len;
	const char *p;

	if (strncmp(line, client, sizeof(client) - 1) == 0) {
		dst = s->client, len = &s->client_len;
		p = line + sizeof(client) - 1;
	} else if (strncmp(line, server, sizeof(server) - 1) == 0) {
		dst = s->server, len = &s->server_len;
		p = line + sizeof(server) - 1;
	} else {
		return;
	}
	p = strchr(p, ' '); /* past the client random */
	if (!p || hex_in(p + 1, dst, RS_TLS_SECRET_MAX, len) != 0)
		*len = 0;
}

int rs_tls_scratch_init(struct rs_tls_scratch *sc)
{
	memset(sc, 0, sizeof(*sc));
	sc->ctx = EVP_CIPHER_CTX_new();
	for (int i = 0; i < RS_TLS_SUITES; i++)
		sc->cipher[i] = EVP_CIPHER_fetch(NULL, cipher_names[i], NULL);
	for (int i = 0; i < RS_TLS_SUITES; i++)
		if (!sc->cipher[i]) {
			rs_tls_scratch_fini(sc);
			ERR_clear_error();
			return -ENOMEM;
		}
	if (!sc->ctx) {
		rs_tls_scratch_fini(sc);
		return -ENOMEM;
	}
	return 0;
}

void rs_tls_scratch_fini(struct rs_tls_scratch *sc)
{
	EVP_CIPHER_CTX_free(sc->ctx);
	for (int i = 0; i < RS_TLS_SUITES; i++)
		EVP_CIPHER_free(sc->cipher[i]);
	memset(sc, 0, sizeof(*sc));
}

/* HKDF-Expand-Label(secret, label, "", len) of RFC 8446 section 7.1. */
static int expand_label(const char *md, const uint8_t *secret, size_t secret_len, const char *label, uint8_t *out,
			size_t len)
{
	uint8_t info[2 + 1 + 255 + 1];
	size_t label_len = strlen("tls13 ") + strlen(label), n = 0;
	EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
	EVP_KDF_CTX *kctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
	int mode = EVP_KDF_HKDF_MODE_EXPAND_ONLY, rc = -EIO;
	OSSL_PARAM params[5];

	info[n++] = (uint8_t)(len >> 8);
	info[n++] = (uint8_t)len;
	info[n++] = (uint8_t)label_len;
	memcpy(info + n, "tls13 ", 6);
	memcpy(info + n + 6, label, strlen(label));
	n += label_len;
	info[n++] = 0; /* empty context */
	params[0] = OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode);
	params[1] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)md, 0);
	params[2] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)secret, secret_len);
	params[3] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info, n);
	params[4] = OSSL_PARAM_construct_end();
	if (kctx && EVP_KDF_derive(kctx, out, len, params) == 1)
		rc = 0;
	EVP_KDF_CTX_free(kctx);
	EVP_KDF_free(kdf);
	ERR_clear_error();
	return rc;
}

static int dir_from(struct rs_tls_dir *d, enum rs_tls_suite suite, const uint8_t *secret, size_t secret_len)
{
	const char *md = suite == RS_TLS_AES256 ? "SHA384" : "SHA256";

	if (secret_len != (suite == RS_TLS_AES256 ? 48u : 32u))
		return -EINVAL;
	d->seq = 0;
	if (expand_label(md, secret, secret_len, "key", d->key, key_lens[suite]) != 0 ||
	    expand_label(md, secret, secret_len, "iv", d->iv, sizeof(d->iv)) != 0)
		return -EIO;
	return 0;
}

int rs_tls_records_take(SSL *ssl, struct rs_tls_secrets *s, struct rs_tls_records *r)
{
	const SSL_CIPHER *c = SSL_get_current_cipher(ssl);
	struct rs_tls_records fresh;
	enum rs_tls_suite suite;
	int rc = -ENOTSUP;

	if (!c || SSL_version(ssl) != TLS1_3_VERSION || SSL_has_pending(ssl) || SSL_get_num_tickets(ssl) != 0 ||
	    !SSL_is_init_finished(ssl) || !s->client_len || !s->server_len)
		goto cleanup;
	switch (SSL_CIPHER_get_id(c)) {
	case TLS1_3_CK_CHACHA20_POLY1305_SHA256: suite = RS_TLS_CHACHA20; break;
	case TLS1_3_CK_AES_128_GCM_SHA256: suite = RS_TLS_AES128; break;
	case TLS1_3_CK_AES_256_GCM_SHA384: suite = RS_TLS_AES256; break;
	default: goto cleanup;
	}
	memset(&fresh, 0, sizeof(fresh));
	fresh.suite = (uint8_t)suite;
	if (dir_from(&fresh.rx, suite, s->client, s->client_len) != 0 ||
	    dir_from(&fresh.tx, suite, s->server, s->server_len) != 0)
		goto cleanup;
	*r = fresh;
	rc = 0;
cleanup:
	OPENSSL_cleanse(&fresh, sizeof(fresh));
	OPENSSL_cleanse(s, sizeof(*s));
	return rc;
}

static void nonce_of(const struct rs_tls_dir *d, uint8_t nonce[12])
{
	memcpy(nonce, d->iv, 12);
	for (int i = 0; i < 8; i++)
		nonce[11 - i] ^= (uint8_t)(d->seq >> (8 * i));
}

/* One record of n plaintext bytes (at most RS_TLS_PLAIN_MAX) onto out. */
static int seal_one(struct rs_tls_records *r, struct rs_tls_scratch *sc, const uint8_t *p, size_t n, struct evbuffer *out)
{
	size_t len = n + 1 + TAG_LEN;
	uint8_t nonce[12], type = TYPE_APPDATA, *rec;
	struct evbuffer_iovec v;
	int outl, rc = -EIO;

	if (r->tx.seq >= RS_TLS_RECORDS_MAX ||
	    evbuffer_reserve_space(out, (ev_ssize_t)(RS_TLS_RECORD_HEADER + len), &v, 1) < 1)
		return -EIO;
	rec = v.iov_base;
	rec[0] = TYPE_APPDATA;
	rec[1] = 0x03;
	rec[2] = 0x03;
	rec[3] = (uint8_t)(len >> 8);
	rec[4] = (uint8_t)len;
	nonce_of(&r->tx, nonce);
	if (EVP_EncryptInit_ex2(sc->ctx, sc->cipher[r->suite], r->tx.key, nonce, NULL) != 1 ||
	    EVP_EncryptUpdate(sc->ctx, NULL, &outl, rec, RS_TLS_RECORD_HEADER) != 1 ||
	    EVP_EncryptUpdate(sc->ctx, rec + RS_TLS_RECORD_HEADER, &outl, p, (int)n) != 1 ||
	    EVP_EncryptUpdate(sc->ctx, rec + RS_TLS_RECORD_HEADER + n, &outl, &type, 1) != 1 ||
	    EVP_EncryptFinal_ex(sc->ctx, rec + RS_TLS_RECORD_HEADER + n + 1, &outl) != 1 ||
	    EVP_CIPHER_CTX_ctrl(sc->ctx, EVP_CTRL_AEAD_GET_TAG, TAG_LEN, rec + RS_TLS_RECORD_HEADER + n + 1) != 1)
		goto cleanup;
	v.iov_len = RS_TLS_RECORD_HEADER + len;
	if (evbuffer_commit_space(out, &v, 1) != 0)
		goto cleanup;
	r->tx.seq++;
	rc = 0;
cleanup:
	ERR_clear_error();
	return rc;
}

int rs_tls_seal(struct rs_tls_records *r, struct rs_tls_scratch *sc, const uint8_t *p, size_t n, struct evbuffer *out)
{
	do {
		size_t k = n > RS_TLS_PLAIN_MAX ? RS_TLS_PLAIN_MAX : n;
		int rc = seal_one(r, sc, p, k, out);

		if (rc)
			return rc;
		p += k;
		n -= k;
	} while (n > 0);
	return 0;
}

int rs_tls_record_len(const uint8_t *hdr)
{
	size_t len = (size_t)hdr[3] << 8 | hdr[4];

	/* TLS 1.3 protects every record as application data (23); a
	 * ChangeCipherSpec (20) is allowed only during the handshake. */
	if (hdr[0] != TYPE_APPDATA || hdr[1] != 0x03 || len < 1 + TAG_LEN || len > RS_TLS_CIPHERTEXT_MAX)
		return -EBADMSG;
	return (int)(RS_TLS_RECORD_HEADER + len);
}

int rs_tls_open(struct rs_tls_records *r, struct rs_tls_scratch *sc, uint8_t *rec, size_t rec_len, uint8_t **plain,
		size_t *plain_len)
{
	uint8_t nonce[12], *body = rec + RS_TLS_RECORD_HEADER;
	int len = rs_tls_record_len(rec), outl, rc = -EBADMSG;
	size_t n;

	if (len < 0 || (size_t)len != rec_len || r->rx.seq >= RS_TLS_RECORDS_MAX)
		return -EBADMSG;
	n = rec_len - RS_TLS_RECORD_HEADER - TAG_LEN;
	nonce_of(&r->rx, nonce);
	if (EVP_DecryptInit_ex2(sc->ctx, sc->cipher[r->suite], r->rx.key, nonce, NULL) != 1 ||
	    EVP_CIPHER_CTX_ctrl(sc->ctx, EVP_CTRL_AEAD_SET_TAG, TAG_LEN, body + n) != 1 ||
	    EVP_DecryptUpdate(sc->ctx, NULL, &outl, rec, RS_TLS_RECORD_HEADER) != 1 ||
	    EVP_DecryptUpdate(sc->ctx, body, &outl, body, (int)n) != 1 ||
	    EVP_DecryptFinal_ex(sc->ctx, body + n, &outl) != 1)
		goto cleanup;
	while (n > 0 && body[n - 1] == 0)
		n--; /* padding */
	if (n == 0)
		goto cleanup; /* no content type */
	r->rx.seq++;
	*plain = body;
	*plain_len = n - 1;
	rc = body[n - 1];
cleanup:
	ERR_clear_error();
	return rc;
}
