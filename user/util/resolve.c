/* SPDX-License-Identifier: Apache-2.0 */
/* resolve.c - "NAME:PORT" endpoints resolved on the calling thread
 * (resolve.h).  No AI_ADDRCONFIG: in a network namespace whose only
 * addresses are on lo (the tests', a pod's before its veth is up) glibc
 * would then drop every IPv4 answer, loopback not counting as configured.
 * The answers keep getaddrinfo's order (RFC 6724 sorting), which is the
 * order the programs dial them in. */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/endpoint.h"
#include "util/resolve.h"

/* Splits "NAME:PORT" into host and port.  Returns 0 or -EINVAL. */
static int split(const char *text, char *host, size_t host_cap, char *port, size_t port_cap)
{
	const char *colon = text ? strrchr(text, ':') : NULL;
	size_t host_len, port_len;
	char *end;
	unsigned long v;

	if (!colon || text[0] == '[')
		return -EINVAL;
	host_len = (size_t)(colon - text);
	port_len = strlen(colon + 1);
	if (host_len == 0 || host_len > RS_RESOLVE_HOST_MAX || host_len >= host_cap || port_len == 0 ||
	    port_len >= port_cap)
		return -EINVAL;
	for (size_t i = 0; i < host_len; i++) {
		char c = text[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		      c == '-' || c == '_'))
			return -EINVAL;
	}
	if (text[0] == '.' || text[0] == '-')
		return -EINVAL;
	if (colon[1] < '0' || colon[1] > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(colon + 1, &end, 10);
	if (errno || *end || v == 0 || v > 65535)
		return -EINVAL;
	memcpy(host, text, host_len);
	host[host_len] = '\0';
	snprintf(port, port_cap, "%lu", v);
	return 0;
}

bool rs_endpoint_is_name(const char *text)
{
	char host[RS_RESOLVE_HOST_MAX + 1], port[8];
	struct sockaddr_storage ss;
	socklen_t len;

	if (rs_endpoint_parse(text, &ss, &len) == 0)
		return false;
	if (split(text, host, sizeof(host), port, sizeof(port)) != 0)
		return false;
	/* Digits and dots only is a malformed address ("10.0.0:80"), not a name. */
	return strspn(host, "0123456789.") != strlen(host);
}

bool rs_endpoint_ok(const char *text)
{
	struct sockaddr_storage ss;
	socklen_t len;

	return rs_endpoint_parse(text, &ss, &len) == 0 || rs_endpoint_is_name(text);
}

static int gai_errno(int rc)
{
	switch (rc) {
	case EAI_NONAME:
#ifdef EAI_NODATA
	case EAI_NODATA:
#endif
	case EAI_ADDRFAMILY:
		return -ENOENT;
	case EAI_AGAIN:
		return -EAGAIN;
	case EAI_MEMORY:
		return -ENOMEM;
	case EAI_SYSTEM:
		return errno ? -errno : -EIO;
	default:
		return -EIO;
	}
}

static bool seen(const struct rs_resolved *out, const struct addrinfo *ai)
{
	for (size_t i = 0; i < out->n; i++)
		if (out->len[i] == ai->ai_addrlen && memcmp(&out->addr[i], ai->ai_addr, ai->ai_addrlen) == 0)
			return true;
	return false;
}

int rs_resolve_now(const char *endpoint, struct rs_resolved *out, const char **why)
{
	const struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
					.ai_flags = AI_NUMERICSERV };
	char host[RS_RESOLVE_HOST_MAX + 1], port[8];
	struct addrinfo *res = NULL;
	const char *dummy;
	int rc;

	if (!why)
		why = &dummy;
	out->n = 0;
	if (rs_endpoint_parse(endpoint, &out->addr[0], &out->len[0]) == 0) {
		out->n = 1;
		return 0;
	}
	if (!rs_endpoint_is_name(endpoint) || split(endpoint, host, sizeof(host), port, sizeof(port)) != 0) {
		*why = "not NAME:PORT or a numeric ADDR:PORT";
		return -EINVAL;
	}
	errno = 0;
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0) {
		int err = gai_errno(rc);

		*why = rc == EAI_SYSTEM ? strerror(-err) : gai_strerror(rc);
		return err;
	}
	for (const struct addrinfo *ai = res; ai && out->n < RS_RESOLVE_MAX; ai = ai->ai_next) {
		if ((ai->ai_family != AF_INET && ai->ai_family != AF_INET6) || ai->ai_addrlen > sizeof(out->addr[0]) ||
		    seen(out, ai))
			continue;
		memset(&out->addr[out->n], 0, sizeof(out->addr[0]));
		memcpy(&out->addr[out->n], ai->ai_addr, ai->ai_addrlen);
		out->len[out->n] = (socklen_t)ai->ai_addrlen;
		out->n++;
	}
	freeaddrinfo(res);
	if (out->n == 0) {
		*why = "no IPv4 or IPv6 address";
		return -ENOENT;
	}
	return 0;
}
