/* SPDX-License-Identifier: Apache-2.0 */
/* endpoint.c - strict parsing of numeric endpoints: no name resolution, so
 * a typo fails at start instead of resolving somewhere unexpected. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/endpoint.h"

static int parse_port(const char *text, unsigned *port)
{
	char *end;
	unsigned long v;

	if (*text < '0' || *text > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(text, &end, 10);
	if (errno || *end || v == 0 || v > 65535)
		return -EINVAL;
	*port = (unsigned)v;
	return 0;
}

static int parse_addr(const char *host, unsigned port, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons((uint16_t)port);
		*len = sizeof(*in4);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*in6);
		return 0;
	}
	return -EINVAL;
}

int rs_endpoint_parse(const char *text, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *colon;
	unsigned port;
	size_t host_len;

	if (!text)
		return -EINVAL;
	if (text[0] == '[') {
		const char *close = strchr(text, ']');

		if (!close || close[1] != ':')
			return -EINVAL;
		host_len = (size_t)(close - text - 1);
		if (host_len == 0 || host_len >= sizeof(host))
			return -EINVAL;
		memcpy(host, text + 1, host_len);
		host[host_len] = '\0';
		colon = close + 1;
		if (!strchr(host, ':'))
			return -EINVAL; /* brackets are for IPv6 only */
	} else {
		colon = strrchr(text, ':');
		if (!colon)
			return -EINVAL;
		host_len = (size_t)(colon - text);
		if (host_len == 0 || host_len >= sizeof(host) || memchr(text, ':', host_len))
			return -EINVAL; /* bare IPv6 is ambiguous: it needs brackets */
		memcpy(host, text, host_len);
		host[host_len] = '\0';
	}
	if (parse_port(colon + 1, &port))
		return -EINVAL;
	return parse_addr(host, port, ss, len);
}

int rs_address_parse(const char *text, struct sockaddr_storage *ss, socklen_t *len)
{
	if (!text || !*text)
		return -EINVAL;
	return parse_addr(text, 0, ss, len);
}

int rs_endpoint_format(const struct sockaddr *sa, char *out, size_t cap)
{
	char host[INET6_ADDRSTRLEN];
	int n;

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in4 = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &in4->sin_addr, host, sizeof(host));
		n = snprintf(out, cap, "%s:%u", host, ntohs(in4->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		n = snprintf(out, cap, "[%s]:%u", host, ntohs(in6->sin6_port));
	} else {
		return -EAFNOSUPPORT;
	}
	return n < 0 || (size_t)n >= cap ? -ENOSPC : 0;
}
