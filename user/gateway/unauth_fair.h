/* SPDX-License-Identifier: Apache-2.0 */
/* unauth_fair.h - who gets a place in the unauthenticated pool, as a pure
 * function of the counts (unauth_fair.c), so that it can be tested alone.
 * First come, first served let a few sources holding silent sockets
 * refuse everybody else for as long as they kept reconnecting; now each
 * source holding connections is entitled to the pool's size over their
 * number (counting the arrival's), and an arrival under that share takes
 * the place of a connection of a source over it. */
#ifndef RS_GATEWAY_UNAUTH_FAIR_H
#define RS_GATEWAY_UNAUTH_FAIR_H

#include <stddef.h>
#include <stdint.h>

enum gw_unauth_verdict {
	GW_UNAUTH_OK,
	GW_UNAUTH_PER_SOURCE, /* this source holds max_per_source already */
	GW_UNAUTH_TOTAL,      /* the pool is full and this source has its share */
	GW_UNAUTH_EVICT,      /* the pool is full, this source is under its share and the
			       * largest source over it: the largest gives up its oldest */
};

/* What the decision looks at. */
struct gw_unauth_counts {
	uint32_t max_total;      /* the pool's size */
	uint32_t max_per_source;
	size_t total;            /* connections in the pool now */
	size_t sources;          /* sources holding at least one */
	uint32_t mine;           /* the arrival's source holds this many */
	uint32_t largest;        /* the most any source holds */
};

/* The arrival's fate (per source first: the more specific reason). */
enum gw_unauth_verdict gw_unauth_fair(const struct gw_unauth_counts *c);

/* A source's share of the pool once an arrival from a source holding mine
 * is counted in (0 when there are more sources than places). */
uint32_t gw_unauth_share(const struct gw_unauth_counts *c);

#endif
