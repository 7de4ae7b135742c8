/* SPDX-License-Identifier: Apache-2.0 */
/* gap.c - the gap bookkeeping of gap.h: when a member lost its session,
 * and the longest time any member went without one. */
#include "gap.h"

void swarm_gap_open(uint64_t *lost_at_us, uint64_t now_us)
{
	if (*lost_at_us == 0)
		*lost_at_us = now_us ? now_us : 1;
}

void swarm_gap_close(struct swarm_gaps *g, uint64_t *lost_at_us, uint64_t now_us)
{
	uint64_t gap;

	if (*lost_at_us == 0)
		return;
	/* The clock is monotonic; the guard only keeps a caller's mistake
	 * from reading as a gap of 584,000 years. */
	gap = now_us > *lost_at_us ? now_us - *lost_at_us : 0;
	g->count++;
	if (gap > g->max_us)
		g->max_us = gap;
	*lost_at_us = 0;
}

uint64_t swarm_gap_longest(const struct swarm_gaps *g, uint64_t lost_at_us, uint64_t now_us)
{
	uint64_t open = lost_at_us && now_us > lost_at_us ? now_us - lost_at_us : 0;

	return open > g->max_us ? open : g->max_us;
}
