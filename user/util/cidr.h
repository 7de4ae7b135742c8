/* SPDX-License-Identifier: Apache-2.0 */
/* cidr.h - address prefixes ("198.18.0.0/15", "fd00::/8", or a bare address
 * for one host): the plaintext supervisor's --redirect-allow list.  An
 * IPv4-mapped IPv6 address ("::ffff:198.18.0.1") matches as the IPv4
 * address it carries: a mapped prefix of /96 or longer parses as the IPv4
 * prefix it denotes, and IPv6 prefixes match only IPv6 addresses that are
 * not mapped ("::/0" admits no IPv4 peer; "0.0.0.0/0" admits them all). */
#ifndef RINGSTEER_CIDR_H
#define RINGSTEER_CIDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct rs_cidr {
	sa_family_t family; /* AF_INET or AF_INET6 */
	uint8_t addr[16];   /* network byte order; bits past prefix are zero */
	uint8_t prefix;     /* 0..32 or 0..128 */
};

/* Parses text into *out.  Returns 0 or -EINVAL (not a numeric address,
 * prefix out of range or not plain decimal - no sign, no leading zero -,
 * bits set past the prefix, e.g. "10.0.0.1/8", so that a typo does not
 * allow more than meant); *out is untouched on failure. */
int rs_cidr_parse(const char *text, struct rs_cidr *out);

/* Whether sa (AF_INET or AF_INET6; anything else: false) lies inside c. */
bool rs_cidr_contains(const struct rs_cidr *c, const struct sockaddr *sa);

/* Whether sa lies inside any of the n prefixes of list (none: false). */
bool rs_cidr_list_contains(const struct rs_cidr *list, size_t n, const struct sockaddr *sa);

/* The n-th address of c (n = 0: the prefix's own first address), wrapping
 * modulo the prefix's size (a /32 or /128 is always its one address; past
 * 2^64 addresses n never wraps), into *out with port 0 and *len: a swarm
 * spreads its members' source addresses over a prefix with it
 * (cidr_nth.c).  Returns 0 or -EINVAL (c not AF_INET or AF_INET6). */
int rs_cidr_nth(const struct rs_cidr *c, uint64_t n, struct sockaddr_storage *out, socklen_t *len);

#endif
