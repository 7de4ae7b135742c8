/* SPDX-License-Identifier: Apache-2.0 */
/* unauth.h - connections accepted but not yet past a valid HELLO and
 * token ("unauthenticated"), counted per source address and in total, so
 * that one peer, or many, cannot hold every descriptor and every HELLO
 * deadline of a gateway; the pool is shared fairly among the sources in it
 * (unauth_fair.h).  Private to the gateway.
 *
 * Only sources with at least one such connection have an entry, and there
 * are at most max_total of those: the entries are allocated once, at init,
 * and a flood from many addresses meets the total limit, not an
 * allocation.  Each source keeps its connections oldest first (the one an
 * eviction takes), and the sources are also kept by count, so that the
 * largest is found at once. */
#ifndef RS_GATEWAY_UNAUTH_H
#define RS_GATEWAY_UNAUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sys/socket.h>

#include "unauth_fair.h"
#include "util/keyed_hash.h"

#define GW_UNAUTH_MAX 65536 /* largest max_total accepted */

/* A source: its IP address, IPv4 as IPv4-mapped IPv6 so both families
 * share one key space.  The port is not part of it. */
struct gw_unauth_key {
	uint8_t addr[16];
};

struct gw_unauth_source;

/* One connection in the pool, embedded in it by the caller. */
struct gw_unauth_node {
	struct gw_unauth_node *prev, *next;  /* its source's, oldest first */
	struct gw_unauth_source *src;        /* NULL: not in the pool */
};

struct gw_unauth {
	struct gw_unauth_source *by_key;     /* uthash by address, SipHash under hash_key */
	struct gw_unauth_source *entries;    /* max_total of them, allocated at init */
	struct gw_unauth_source *unused;     /* those holding nothing */
	struct gw_unauth_source **by_count;  /* [n]: the sources holding n, n <= count_max */
	uint32_t count_max;                  /* min(max_total, max_per_source) */
	uint32_t largest;                    /* the highest n with a source; 0: empty */
	size_t total;                        /* unauthenticated connections now */
	size_t sources;                      /* sources holding at least one */
	uint32_t max_total;
	uint32_t max_per_source;
	struct rs_hash_key hash_key;         /* random at init: a peer cannot pick colliding addresses */
};

/* Allocates the pool for max_total (1..GW_UNAUTH_MAX) connections, at
 * most max_per_source (>= 1) per source, its hash under a random key of
 * its own (a test may set hash_key before the first insert).  Returns 0,
 * -EINVAL, -ENOMEM. */
int gw_unauth_init(struct gw_unauth *t, uint32_t max_total, uint32_t max_per_source);

/* Frees the pool; a zeroed one is allowed. */
void gw_unauth_free(struct gw_unauth *t);

/* The key of a peer address; an address of another family (which a TCP
 * listener does not produce) maps to the all-zero key. */
struct gw_unauth_key gw_unauth_key_of(const struct sockaddr *sa);

/* Whether a connection from k may join (nothing changes): with
 * GW_UNAUTH_EVICT, *victim is the connection to close first (the oldest
 * of the largest source); removing it makes room for k. */
enum gw_unauth_verdict gw_unauth_admit(const struct gw_unauth *t, const struct gw_unauth_key *k,
				       struct gw_unauth_node **victim);

/* Counts node, a connection from k, after gw_unauth_admit said OK (or
 * after its victim was removed).  Returns 0, -ENOSPC (past a limit:
 * nothing changes) or -ENOMEM (the hash table could not grow). */
int gw_unauth_insert(struct gw_unauth *t, const struct gw_unauth_key *k, struct gw_unauth_node *node);

/* Counts node out (it authenticated, or closed); one not counted is left. */
void gw_unauth_remove(struct gw_unauth *t, struct gw_unauth_node *node);

/* Connections from k now (for tests and logs). */
uint32_t gw_unauth_count(const struct gw_unauth *t, const struct gw_unauth_key *k);

/* The most sources in one bucket of the hash (for tests: addresses the
 * hash fails to spread show here, as lookups that walk long chains). */
uint32_t gw_unauth_chain_max(const struct gw_unauth *t);

#endif
