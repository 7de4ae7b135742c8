/* SPDX-License-Identifier: Apache-2.0 */
/* tls_ticket.c - TLS 1.3 session-ticket keys shared by a fleet's gateways,
 * so that a supervisor sent from one gateway to another resumes instead of
 * paying a full handshake.  Guarantees: each key of the keyring yields a
 * ticket name, an AES-256 key and an HMAC-SHA256 key by HKDF-SHA256 with
 * distinct labels, so that no two uses share bytes and the secret itself
 * never reaches OpenSSL; tickets are encrypted with the key signing now and
 * accepted under it and the two before it (as nginx and HAProxy rotate);
 * a ticket under any other key is not an error, only a full handshake. */
#include <errno.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>

#include "tls/tls.h"

/* The salt ties the derived keys to this use; a keyring shared with the
 * token signer (the same file given twice) still yields unrelated keys. */
#define SALT "ringsteer tls session ticket v1"

static int hkdf(const struct rs_secret *s, const char *label, uint8_t *out, size_t len)
{
	char digest[] = "SHA256";
	EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
	EVP_KDF_CTX *kctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
	OSSL_PARAM p[5];
	int rc = -ENOMEM;

	if (!kctx)
		goto cleanup;
	p[0] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0);
	p[1] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)s->key, s->len);
	p[2] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)SALT, strlen(SALT));
	p[3] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)label, strlen(label));
	p[4] = OSSL_PARAM_construct_end();
	rc = EVP_KDF_derive(kctx, out, len, p) == 1 ? 0 : -EINVAL;
cleanup:
	EVP_KDF_CTX_free(kctx);
	EVP_KDF_free(kdf);
	ERR_clear_error();
	return rc;
}

int rs_tls_ticket_key_derive(const struct rs_secret *s, struct rs_tls_ticket_key *out)
{
	int rc;

	if ((rc = hkdf(s, RS_TLS_TICKET_LABEL_NAME, out->name, sizeof(out->name))) < 0 ||
	    (rc = hkdf(s, RS_TLS_TICKET_LABEL_AES, out->aes, sizeof(out->aes))) < 0 ||
	    (rc = hkdf(s, RS_TLS_TICKET_LABEL_HMAC, out->hmac, sizeof(out->hmac))) < 0)
		OPENSSL_cleanse(out, sizeof(*out));
	return rc;
}

int rs_tls_ticket_keys_derive(const struct rs_keyring *kr, uint64_t now, struct rs_tls_ticket_keys *out)
{
	const struct rs_key *signer = rs_keyring_signer(kr, now);
	struct rs_tls_ticket_keys fresh = { 0 };
	size_t at;
	int rc = 0;

	if (!signer)
		return -ENOKEY;
	/* File order is oldest first: the signer and up to two before it. */
	at = (size_t)(signer - kr->keys);
	for (size_t i = 0; i < RS_TLS_TICKET_KEYS && i <= at; i++) {
		if ((rc = rs_tls_ticket_key_derive(&kr->keys[at - i].secret, &fresh.k[i])) < 0)
			goto cleanup;
		fresh.n++;
	}
	*out = fresh;
cleanup:
	OPENSSL_cleanse(&fresh, sizeof(fresh));
	return rc;
}

static int set_hmac(EVP_MAC_CTX *hctx, const struct rs_tls_ticket_key *k)
{
	char digest[] = "SHA256";
	OSSL_PARAM p[3];

	p[0] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, (void *)k->hmac, sizeof(k->hmac));
	p[1] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0);
	p[2] = OSSL_PARAM_construct_end();
	return EVP_MAC_CTX_set_params(hctx, p) == 1 ? 0 : -EINVAL;
}

/* OpenSSL's contract: on encryption 1 (a ticket) or -1 (error); on
 * decryption 0 (not ours: full handshake), 1 (resume), 2 (resume, and
 * issue a ticket under the current key), -1 (error). */
static int ticket_cb(SSL *ssl, unsigned char name[16], unsigned char iv[EVP_MAX_IV_LENGTH], EVP_CIPHER_CTX *cctx,
		     EVP_MAC_CTX *hctx, int enc)
{
	const struct rs_tls_ticket_keys *keys = SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
	const struct rs_tls_ticket_key *k;

	if (!keys || keys->n == 0)
		return enc ? -1 : 0;
	if (enc) {
		k = &keys->k[0];
		if (RAND_bytes(iv, EVP_CIPHER_get_iv_length(EVP_aes_256_cbc())) != 1)
			return -1;
		memcpy(name, k->name, sizeof(k->name));
		if (EVP_EncryptInit_ex(cctx, EVP_aes_256_cbc(), NULL, k->aes, iv) != 1 || set_hmac(hctx, k) < 0)
			return -1;
		return 1;
	}
	for (size_t i = 0; i < keys->n && i < RS_TLS_TICKET_KEYS; i++) {
		k = &keys->k[i];
		if (memcmp(name, k->name, sizeof(k->name)) != 0)
			continue;
		if (set_hmac(hctx, k) < 0 || EVP_DecryptInit_ex(cctx, EVP_aes_256_cbc(), NULL, k->aes, iv) != 1)
			return -1;
		return i == 0 ? 1 : 2;
	}
	return 0;
}

int rs_tls_send_ticket(SSL *ssl)
{
	int rc, err;

	ERR_clear_error();
	if (!ssl || SSL_new_session_ticket(ssl) != 1) {
		ERR_clear_error();
		return -EINVAL;
	}
	/* Written now when the socket takes it; else OpenSSL finishes it
	 * before the next application data it writes. */
	rc = SSL_do_handshake(ssl);
	err = rc == 1 ? SSL_ERROR_NONE : SSL_get_error(ssl, rc);
	ERR_clear_error();
	if (err == SSL_ERROR_NONE)
		return 0;
	return err == SSL_ERROR_WANT_WRITE || err == SSL_ERROR_WANT_READ ? -EAGAIN : -EIO;
}

int rs_tls_ticket_keys_install(SSL_CTX *ctx, struct rs_tls_ticket_keys *keys)
{
	if (!ctx || !keys || keys->n == 0)
		return -EINVAL;
	if (SSL_CTX_set_app_data(ctx, keys) != 1 || SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, ticket_cb) != 1) {
		ERR_clear_error();
		return -EINVAL;
	}
	/* One ticket at the end of each handshake: a client keeps only the
	 * last.  An owner that picks the moment itself (the gateway, after
	 * its ACCEPT) sets num_tickets 0 and calls rs_tls_send_ticket. */
	SSL_CTX_set_num_tickets(ctx, 1);
	SSL_CTX_clear_options(ctx, SSL_OP_NO_TICKET);
	/* Bounds how long a client certificate verified once is taken on
	 * trust by resumption (the gateway checks its expiry again). */
	SSL_CTX_set_timeout(ctx, RS_TLS_TICKET_LIFETIME_S);
	return 0;
}
