/* SPDX-License-Identifier: Apache-2.0 */
/* unauth.h - connections accepted but not yet past a valid HELLO and
 * token ("unauthenticated"), counted per source address and in total, so
 * that one peer, or many, cannot hold every descriptor and every HELLO
 * deadline of a gateway.  Private to the gateway.
 *
 * Only sources with at least one such connection have a slot, and there are
 * at most max_total of those, so the table is sized once from max_total
 * (twice over, rounded up to a power of two) and never grows or fills,
 * however many distinct sources come and go: a flood from many addresses
 * meets the total limit, not an allocation. */
#ifndef RS_GATEWAY_UNAUTH_H
#define RS_GATEWAY_UNAUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sys/socket.h>

#define GW_UNAUTH_MAX 65536 /* largest max_total accepted: the table is 2^17 slots (2.5 MiB) then */

/* A source: its IP address, IPv4 as IPv4-mapped IPv6 so both families
 * share one key space.  The port is not part of it. */
struct gw_unauth_key {
	uint8_t addr[16];
};

struct gw_unauth_slot {
	struct gw_unauth_key key;
	uint32_t count; /* 0: empty */
};

struct gw_unauth {
	struct gw_unauth_slot *slots;
	size_t mask;              /* slots - 1 */
	size_t total;             /* unauthenticated connections now */
	uint32_t max_total;
	uint32_t max_per_source;
	uint64_t seed;            /* keys the hash: a peer cannot pick colliding addresses */
};

enum gw_unauth_verdict {
	GW_UNAUTH_OK,
	GW_UNAUTH_PER_SOURCE, /* this source holds max_per_source already */
	GW_UNAUTH_TOTAL,      /* the gateway holds max_total already */
};

/* Allocates the table for max_total (1..GW_UNAUTH_MAX) connections, at
 * most max_per_source (>= 1) per source.  Returns 0, -EINVAL, -ENOMEM. */
int gw_unauth_init(struct gw_unauth *t, uint32_t max_total, uint32_t max_per_source);

/* Frees the table; a zeroed one is allowed. */
void gw_unauth_free(struct gw_unauth *t);

/* The key of a peer address; an address of another family (which a TCP
 * listener does not produce) maps to the all-zero key. */
struct gw_unauth_key gw_unauth_key_of(const struct sockaddr *sa);

/* Counts one more connection from k, unless a limit is reached (per source
 * first: the more specific reason); nothing changes when refused. */
enum gw_unauth_verdict gw_unauth_add(struct gw_unauth *t, const struct gw_unauth_key *k);

/* Counts one connection from k less (it authenticated, or closed). */
void gw_unauth_remove(struct gw_unauth *t, const struct gw_unauth_key *k);

/* Connections from k now (for tests and logs). */
uint32_t gw_unauth_count(const struct gw_unauth *t, const struct gw_unauth_key *k);

#endif
