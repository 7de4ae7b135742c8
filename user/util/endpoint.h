/* SPDX-License-Identifier: Apache-2.0 */
/* endpoint.h - "ADDR:PORT" endpoints as the command lines and the protocol
 * carry them: IPv4 "a.b.c.d:port", IPv6 "[addr]:port". */
#ifndef RINGSTEER_ENDPOINT_H
#define RINGSTEER_ENDPOINT_H

#include <stddef.h>
#include <sys/socket.h>

/* Parses text into *ss and *len.  Returns 0 or -EINVAL (no port, port 0 or
 * above 65535, not a numeric address). */
int rs_endpoint_parse(const char *text, struct sockaddr_storage *ss, socklen_t *len);

/* Parses an address without a port ("127.0.2.1", "::1") with port 0.
 * Returns 0 or -EINVAL. */
int rs_address_parse(const char *text, struct sockaddr_storage *ss, socklen_t *len);

/* Formats sa as "ADDR:PORT" into out (room for cap).  Returns 0 or -ENOSPC,
 * -EAFNOSUPPORT. */
int rs_endpoint_format(const struct sockaddr *sa, char *out, size_t cap);

/* Writes the address part of endpoint ("ADDR" of "ADDR:PORT", "V6" of
 * "[V6]:PORT") into out (room for cap; truncated to fit): the name a
 * Service's certificate carries when no other is given (an IP SAN).  A
 * text without ':' is copied whole (endpoint_host.c). */
void rs_endpoint_host(const char *endpoint, char *out, size_t cap);

#endif
