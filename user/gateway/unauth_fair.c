/* SPDX-License-Identifier: Apache-2.0 */
/* unauth_fair.c - see unauth_fair.h.  When the pool is full and the
 * arrival's source holds fewer than its share, some source holds more
 * than the share (the others average above it), so the largest is over
 * it; taking from the largest brings the counts together fastest, and a
 * source at or over its share can only wait: reconnecting gains it
 * nothing. */
#include "unauth_fair.h"

uint32_t gw_unauth_share(const struct gw_unauth_counts *c)
{
	size_t n = c->sources + (c->mine == 0 ? 1 : 0);

	return n ? (uint32_t)(c->max_total / n) : c->max_total;
}

enum gw_unauth_verdict gw_unauth_fair(const struct gw_unauth_counts *c)
{
	uint32_t share;

	if (c->mine >= c->max_per_source)
		return GW_UNAUTH_PER_SOURCE;
	if (c->total < c->max_total)
		return GW_UNAUTH_OK;
	share = gw_unauth_share(c);
	if (c->mine < share && c->largest > share)
		return GW_UNAUTH_EVICT;
	return GW_UNAUTH_TOTAL;
}
