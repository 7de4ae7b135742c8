/* SPDX-License-Identifier: Apache-2.0 */
/* resolve.h - "NAME:PORT" endpoints: a Service given by its DNS name, as
 * every Kubernetes client dials one.  resolve.c splits and checks them and
 * asks getaddrinfo (glibc: /etc/hosts, then DNS as /etc/resolv.conf says,
 * A and AAAA) on the calling thread; resolver.c does the same on a thread
 * of its own and posts the answers back to an event loop, so that a loop
 * never waits on DNS.  Numeric endpoints ("ADDR:PORT", "[V6]:PORT") keep
 * going through util/endpoint.h without any lookup. */
#ifndef RS_RESOLVE_H
#define RS_RESOLVE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#define RS_RESOLVE_MAX 16   /* answers kept per lookup, in getaddrinfo's order */
#define RS_RESOLVE_HOST_MAX 253

/* A lookup's answers (the port set in each). */
struct rs_resolved {
	size_t n;
	struct sockaddr_storage addr[RS_RESOLVE_MAX];
	socklen_t len[RS_RESOLVE_MAX];
};

/* Whether text is "NAME:PORT": a host name of [A-Za-z0-9.-_] (at most
 * RS_RESOLVE_HOST_MAX bytes, not a numeric address) and a port 1..65535. */
bool rs_endpoint_is_name(const char *text);

/* Whether text is a numeric endpoint or a "NAME:PORT" (what --service takes). */
bool rs_endpoint_ok(const char *text);

/* Resolves endpoint (numeric or "NAME:PORT") on the calling thread: every
 * TCP address of the name, IPv4 and IPv6, at most RS_RESOLVE_MAX, no two
 * the same.  Returns 0 (out->n >= 1), -EINVAL (not an endpoint),
 * -ENOENT (no such name, or no address), -EAGAIN (a temporary failure: the
 * DNS server did not answer), or another -errno; *why (when not NULL) then
 * says what failed in words (gai_strerror's, a static string). */
int rs_resolve_now(const char *endpoint, struct rs_resolved *out, const char **why);

#endif
