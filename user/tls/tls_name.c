/* SPDX-License-Identifier: Apache-2.0 */
/* tls_name.c - tying a certificate to a protocol identity, and saying why a
 * handshake failed.  Guarantees: a name matches exactly (ignoring case) or
 * not at all - no wildcard in a certificate widens it, and no pattern in
 * the name we are given (".test" would otherwise match every subdomain of
 * test) widens it either; a client told to expect a name fails its
 * handshake unless the server's certificate names it. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include "tls/tls.h"

/* Whether name is an IPv4 or IPv6 address literal. */
static bool is_ip_literal(const char *name)
{
	unsigned char addr[sizeof(struct in6_addr)];

	return inet_pton(AF_INET, name, addr) == 1 || inet_pton(AF_INET6, name, addr) == 1;
}

/* Ids are plain names.  OpenSSL reads a leading '.' in the name being
 * checked as "any subdomain of", and with wildcards off it compares a '*'
 * literally, so "*.test" would match a certificate that says "*.test";
 * neither is an id, and both are refused before OpenSSL sees them. */
static bool usable_name(const char *name)
{
	if (!name || !*name || name[0] == '.')
		return false;
	for (const char *p = name; *p; p++)
		if (*p == '*' || (unsigned char)*p <= ' ' || *p == 0x7f)
			return false;
	return true;
}

int rs_tls_expect_name(SSL *ssl, const char *name)
{
	X509_VERIFY_PARAM *param;
	int ok;

	if (!ssl || !usable_name(name))
		return -EINVAL;
	param = SSL_get0_param(ssl);
	X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_WILDCARDS);
	if (is_ip_literal(name))
		ok = X509_VERIFY_PARAM_set1_host(param, NULL, 0) == 1 &&
		     X509_VERIFY_PARAM_set1_ip_asc(param, name) == 1;
	else
		ok = X509_VERIFY_PARAM_set1_host(param, name, 0) == 1;
	ERR_clear_error();
	if (!ok)
		return -EINVAL;
	/* The name check runs inside certificate verification, so without
	 * SSL_VERIFY_PEER a mismatch would be recorded and then ignored. */
	SSL_set_verify(ssl, SSL_get_verify_mode(ssl) | SSL_VERIFY_PEER, SSL_get_verify_callback(ssl));
	return 0;
}

bool rs_tls_cert_names(X509 *cert, const char *name)
{
	int rc;

	if (!cert || !usable_name(name))
		return false;
	if (is_ip_literal(name))
		rc = X509_check_ip_asc(cert, name, 0);
	else
		rc = X509_check_host(cert, name, 0, X509_CHECK_FLAG_NO_WILDCARDS, NULL);
	ERR_clear_error();
	return rc == 1; /* 0 is "no", negative is "could not tell": both are no */
}

void rs_tls_describe_failure(const SSL *ssl, unsigned long err, char *buf, size_t len)
{
	long verdict;

	if (!buf || len == 0)
		return;
	verdict = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
	if (verdict == X509_V_ERR_HOSTNAME_MISMATCH || verdict == X509_V_ERR_IP_ADDRESS_MISMATCH) {
		/* SSL_get0_param takes a non-const SSL only because the param it
		 * returns is mutable; nothing here writes to it. */
		X509_VERIFY_PARAM *param = SSL_get0_param((SSL *)ssl);
		const char *host = X509_VERIFY_PARAM_get0_host(param, 0);
		char *ip = host ? NULL : X509_VERIFY_PARAM_get1_ip_asc(param);

		if (host || ip)
			snprintf(buf, len, "certificate does not name %s", host ? host : ip);
		else
			snprintf(buf, len, "certificate does not name the expected peer");
		OPENSSL_free(ip);
		return;
	}
	if (verdict != X509_V_OK) {
		snprintf(buf, len, "certificate verification failed: %s", X509_verify_cert_error_string(verdict));
		return;
	}
	if (err != 0) {
		const char *reason = ERR_reason_error_string(err);

		if (reason)
			snprintf(buf, len, "%s", reason);
		else
			ERR_error_string_n(err, buf, len);
		return;
	}
	snprintf(buf, len, "handshake failed");
}

bool rs_tls_peer_refused(const SSL *ssl)
{
	/* X509_V_OK also when no verification ran (no certificate asked for,
	 * or the connection failed first): then nothing was refused. */
	return ssl && SSL_get_verify_result(ssl) != X509_V_OK;
}
