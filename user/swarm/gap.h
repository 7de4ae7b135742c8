/* SPDX-License-Identifier: Apache-2.0 */
/* gap.h - how long swarm members go without an accepted session after
 * having had one (ringsteer_swarm_gap_max_seconds, ringsteer_swarm_gaps_total).
 * Pure bookkeeping over monotonic microseconds the caller passes in, so a
 * unit test can drive it.  Per member one timestamp: when its attached link
 * was lost, 0 while it is not in a gap (the monotonic clock is well past 0
 * once the machine is up).  A make-before-break move (the new link accepted
 * before the old one goes) never opens a gap. */
#ifndef RS_SWARM_GAP_H
#define RS_SWARM_GAP_H

#include <stdint.h>

struct swarm_gaps {
	uint64_t max_us; /* the longest closed gap */
	uint64_t count;  /* gaps closed (each one > 0: it began with a loss) */
};

/* The member's attached link is gone and no other is attached: a gap
 * begins at now_us, unless one is already open (a redial that failed too
 * does not restart it). */
void swarm_gap_open(uint64_t *lost_at_us, uint64_t now_us);

/* The member was accepted at now_us: an open gap closes and is counted;
 * nothing happens when none was open. */
void swarm_gap_close(struct swarm_gaps *g, uint64_t *lost_at_us, uint64_t now_us);

/* The longest of g's closed gaps and of an open one (lost_at_us) as of
 * now_us: what a member stuck without a session has been without so far
 * counts too, or one that never comes back would hide. */
uint64_t swarm_gap_longest(const struct swarm_gaps *g, uint64_t lost_at_us, uint64_t now_us);

#endif
