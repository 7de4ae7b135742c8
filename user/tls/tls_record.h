/* SPDX-License-Identifier: Apache-2.0 */
/* tls_record.h - the TLS 1.3 record layer of an established connection,
 * without OpenSSL's SSL object.  Under OpenSSL 3.0 an SSL holds about 13 KB
 * for as long as it lives (the struct alone is 7.6 KB; cipher contexts,
 * session, locks, the handshake's leftovers the rest, counted per
 * allocation site through CRYPTO_set_mem_functions), and
 * a supervisor's link lives for hours carrying a frame a second.  Once the
 * handshake is done, the application traffic secrets are all a link needs:
 * from them, per direction, a key, an IV and a sequence number (RFC 8446
 * section 5), about 110 bytes, with one cipher context per process shared
 * by every link (the key is set per record).  The secrets are learnt from
 * the keylog callback (SSL_CTX_set_keylog_callback), the one OpenSSL 3.0
 * interface that hands them out. */
#ifndef RINGSTEER_TLS_RECORD_H
#define RINGSTEER_TLS_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/buffer.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>

#define RS_TLS_SECRET_MAX 48     /* SHA-384's output */
#define RS_TLS_RECORD_HEADER 5   /* type, legacy version, length */
#define RS_TLS_PLAIN_MAX 16384   /* 2^14 */
#define RS_TLS_CIPHERTEXT_MAX (RS_TLS_PLAIN_MAX + 256)
/* Records per key and direction: AES-GCM's limit is 2^24.5 (RFC 8446
 * section 5.5), and these records never change keys (no KeyUpdate), so a
 * link that reaches it (about 190 days at a frame a second) fails and its
 * supervisor dials again. */
#define RS_TLS_RECORDS_MAX (1ULL << 24)

/* What the keylog callback saw of one handshake's application secrets. */
struct rs_tls_secrets {
	uint8_t client[RS_TLS_SECRET_MAX], server[RS_TLS_SECRET_MAX];
	size_t client_len, server_len;
};

/* Records the secret a keylog line carries (CLIENT_TRAFFIC_SECRET_0,
 * SERVER_TRAFFIC_SECRET_0; other lines are ignored) into s. */
void rs_tls_secrets_note(struct rs_tls_secrets *s, const char *line);

enum rs_tls_suite { RS_TLS_CHACHA20, RS_TLS_AES128, RS_TLS_AES256, RS_TLS_SUITES };

struct rs_tls_dir {
	uint8_t key[32];
	uint8_t iv[12];
	uint64_t seq;
};

/* One established link's record state, the server's view. */
struct rs_tls_records {
	struct rs_tls_dir rx, tx;
	uint8_t suite; /* enum rs_tls_suite */
};

/* What every link of a process shares: one cipher context and the
 * ciphers, fetched once. */
struct rs_tls_scratch {
	EVP_CIPHER_CTX *ctx;
	EVP_CIPHER *cipher[RS_TLS_SUITES];
};

int rs_tls_scratch_init(struct rs_tls_scratch *sc);
void rs_tls_scratch_fini(struct rs_tls_scratch *sc);

/* Whether ssl (a server, its handshake just done) can be left for records:
 * TLS 1.3 under one of the three suites, no byte of the peer's read past
 * the handshake, no record of ours sent after it (no session ticket), both
 * secrets known.  Then fills r (secrets cleansed) and returns 0; else
 * -ENOTSUP and r is untouched. */
int rs_tls_records_take(SSL *ssl, struct rs_tls_secrets *s, struct rs_tls_records *r);

/* Appends plaintext (n bytes, any length) to out as application-data
 * records.  Returns 0 or -EIO (also past RS_TLS_RECORDS_MAX). */
int rs_tls_seal(struct rs_tls_records *r, struct rs_tls_scratch *sc, const uint8_t *p, size_t n, struct evbuffer *out);

/* Opens one record in place: rec holds RS_TLS_RECORD_HEADER + its length
 * bytes.  Returns the inner content type (23 application data, 21 alert,
 * 22 handshake) with *plain and *plain_len inside rec, or -EBADMSG (a
 * record that does not authenticate or is malformed, or one past
 * RS_TLS_RECORDS_MAX). */
int rs_tls_open(struct rs_tls_records *r, struct rs_tls_scratch *sc, uint8_t *rec, size_t rec_len, uint8_t **plain,
		size_t *plain_len);

/* The length of the record at the head of hdr (RS_TLS_RECORD_HEADER bytes
 * seen), header included, or -EBADMSG for one that is not a TLS 1.3
 * ciphertext record. */
int rs_tls_record_len(const uint8_t *hdr);

#endif
