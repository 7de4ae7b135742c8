/* SPDX-License-Identifier: Apache-2.0 */
/* cidr.c - address prefixes for allow lists.  Guarantees: parsing is
 * strict (numeric addresses only, a canonical decimal prefix length, no
 * bits set past the prefix), so a typo is an error rather than a wider
 * allowance; an IPv4 peer matches the same prefixes whether it arrives as
 * AF_INET or as an IPv4-mapped AF_INET6 address.
 *
 * The one rule for IPv4-mapped addresses (::ffff:0:0/96): they are IPv4.
 * A mapped prefix of /96 or longer ("::ffff:198.18.0.0/111") is stored as
 * the IPv4 prefix it denotes (198.18.0.0/15); a mapped peer address is
 * compared as the IPv4 address it carries.  So IPv4 prefixes match IPv4
 * peers however they arrive, and IPv6 prefixes match only IPv6 peers that
 * are not mapped: "::/0" does not admit IPv4 peers, "0.0.0.0/0" does. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "util/cidr.h"

static const uint8_t mapped_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

/* A prefix length: 1 to 3 decimal digits, no sign, no leading zero (so
 * "/08" and "/+8" are refused), at most max. */
static int parse_prefix(const char *text, unsigned max, unsigned *out)
{
	unsigned v = 0;
	size_t n = 0;

	for (; text[n]; n++) {
		if (text[n] < '0' || text[n] > '9' || n == 3)
			return -EINVAL;
		v = v * 10 + (unsigned)(text[n] - '0');
	}
	if (n == 0 || (n > 1 && text[0] == '0') || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* Whether the first prefix bits of a and b agree. */
static bool same_prefix(const uint8_t *a, const uint8_t *b, unsigned prefix)
{
	unsigned whole = prefix / 8, rest = prefix % 8;

	if (memcmp(a, b, whole) != 0)
		return false;
	if (rest == 0)
		return true;
	return ((a[whole] ^ b[whole]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

/* Whether any bit past prefix is set in addr (of len bytes). */
static bool host_bits_set(const uint8_t *addr, size_t len, unsigned prefix)
{
	unsigned whole = prefix / 8, rest = prefix % 8;

	if (rest && (addr[whole] & (uint8_t)(0xff >> rest)))
		return true;
	for (size_t i = whole + (rest ? 1 : 0); i < len; i++)
		if (addr[i])
			return true;
	return false;
}

int rs_cidr_parse(const char *text, struct rs_cidr *out)
{
	char host[INET6_ADDRSTRLEN];
	const char *slash;
	struct rs_cidr c;
	size_t host_len;
	unsigned max, prefix;

	if (!text || !out)
		return -EINVAL;
	slash = strchr(text, '/');
	host_len = slash ? (size_t)(slash - text) : strlen(text);
	if (host_len == 0 || host_len >= sizeof(host))
		return -EINVAL;
	memcpy(host, text, host_len);
	host[host_len] = '\0';
	memset(&c, 0, sizeof(c));
	/* inet_pton takes no whitespace, names or zone ids ("fe80::1%eth0"),
	 * which is the strictness wanted here. */
	if (inet_pton(AF_INET, host, c.addr) == 1) {
		c.family = AF_INET;
		max = 32;
	} else if (inet_pton(AF_INET6, host, c.addr) == 1) {
		c.family = AF_INET6;
		max = 128;
	} else {
		return -EINVAL;
	}
	prefix = max;
	if (slash && parse_prefix(slash + 1, max, &prefix) < 0)
		return -EINVAL;
	if (host_bits_set(c.addr, max / 8, prefix))
		return -EINVAL;
	c.prefix = (uint8_t)prefix;
	if (c.family == AF_INET6 && c.prefix >= 96 && memcmp(c.addr, mapped_prefix, sizeof(mapped_prefix)) == 0) {
		memmove(c.addr, c.addr + 12, 4);
		memset(c.addr + 4, 0, 12);
		c.family = AF_INET;
		c.prefix = (uint8_t)(c.prefix - 96);
	}
	*out = c;
	return 0;
}

bool rs_cidr_contains(const struct rs_cidr *c, const struct sockaddr *sa)
{
	const uint8_t *addr;
	sa_family_t family;

	if (!c || !sa)
		return false;
	if (sa->sa_family == AF_INET) {
		addr = (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr;
		family = AF_INET;
	} else if (sa->sa_family == AF_INET6) {
		addr = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
		family = AF_INET6;
		if (memcmp(addr, mapped_prefix, sizeof(mapped_prefix)) == 0) {
			addr += 12;
			family = AF_INET;
		}
	} else {
		return false;
	}
	return c->family == family && same_prefix(c->addr, addr, c->prefix);
}

bool rs_cidr_list_contains(const struct rs_cidr *list, size_t n, const struct sockaddr *sa)
{
	for (size_t i = 0; i < n; i++)
		if (rs_cidr_contains(&list[i], sa))
			return true;
	return false;
}
