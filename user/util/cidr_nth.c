/* SPDX-License-Identifier: Apache-2.0 */
/* cidr_nth.c - the n-th address of a prefix, wrapping: how a load
 * generator gives each of its members its own source address (a gateway
 * limits unauthenticated connections per source address, and a real fleet
 * has one address per pod).  The offset is added to the low 64 bits only;
 * since the bits past the prefix are zero and the offset stays below the
 * prefix's size, the sum never carries into the prefix. */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "util/cidr.h"

/* Adds off to the big-endian integer in the last 8 bytes of addr. */
static void add_low64(uint8_t *addr16_tail8, uint64_t off)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | addr16_tail8[i];
	v += off;
	for (int i = 7; i >= 0; i--) {
		addr16_tail8[i] = (uint8_t)v;
		v >>= 8;
	}
}

int rs_cidr_nth(const struct rs_cidr *c, uint64_t n, struct sockaddr_storage *out, socklen_t *len)
{
	unsigned bits = c->family == AF_INET ? 32 : c->family == AF_INET6 ? 128 : 0;
	unsigned host;
	uint64_t off;

	if (!bits || c->prefix > bits)
		return -EINVAL;
	host = bits - c->prefix;
	off = host >= 64 ? n : n & ((UINT64_C(1) << host) - 1);
	memset(out, 0, sizeof(*out));
	if (c->family == AF_INET) {
		struct sockaddr_in *in4 = (struct sockaddr_in *)out;
		uint8_t a[8] = { 0 };

		memcpy(a + 4, c->addr, 4);
		add_low64(a, off);
		in4->sin_family = AF_INET;
		memcpy(&in4->sin_addr, a + 4, 4);
		*len = sizeof(*in4);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)out;

		in6->sin6_family = AF_INET6;
		memcpy(&in6->sin6_addr, c->addr, 16);
		add_low64(in6->sin6_addr.s6_addr + 8, off);
		*len = sizeof(*in6);
	}
	return 0;
}
