/* SPDX-License-Identifier: Apache-2.0 */
/* drain.h - the handoff plan of a stopping gateway: each of its supervisors,
 * in the order given, goes where the placement rule sends it over the ring
 * without the stopping gateway, counting the plan's earlier assignments as
 * load.  Pacing and the make-before-break execution live with the gateway. */
#ifndef RINGSTEER_DRAIN_H
#define RINGSTEER_DRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "ringsteer/placer.h"

#include <stdbool.h>

#include "ringsteer/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Marks gateway stopping as draining in p and plans the handoff of the n
 * members attached to it (each counted in its load): targets[i] receives
 * member i's gateway index.  p ends holding the loads after the handoff.
 * Returns 0, -EINVAL (stopping out of range, its load below n, or a bad
 * member id; p is then unchanged), -ENOENT when no other gateway is active
 * (p is then unchanged but for the draining flag). */
RS_EXPORT int rs_drain_plan(struct rs_placer *p, uint32_t stopping, const char *const *members, size_t n,
			    uint32_t *targets);

/* The drain's pacing, as a pure state machine the gateway drives from its
 * event loop: it says what to do now and when to ask again.  The pace
 * adapts to the work: one REDIRECT per pace_ms while that fits, faster
 * when the supervisors still waiting would not all be sent within the
 * first four fifths of the budget at that pace (the last fifth is left for
 * the last ones to reach their targets), and never more than
 * max_in_flight handoffs redirected and not yet gone, so the receiving
 * gateways are not flooded. */
struct rs_drain_config {
	uint32_t pace_ms;            /* the gentlest pace: between two REDIRECTs while
				      * it fits the budget (default 50) */
	uint32_t budget_ms;          /* whole drain, then close the rest (default 25000) */
	uint32_t membership_wait_ms; /* longest wait to see another serving gateway (default 5000) */
	uint32_t max_in_flight;      /* handoffs under way at once, at most (default 64) */
};

enum rs_drain_action {
	RS_DRAIN_WAIT,       /* nothing to do before *wake_ms */
	RS_DRAIN_HAND_OFF,   /* redirect the next *count waiting supervisors, then call rs_drain_sent() */
	RS_DRAIN_CLOSE_REST, /* the budget is spent: close whatever is still attached */
	RS_DRAIN_DONE,       /* nobody left */
};

struct rs_drain {
	struct rs_drain_config cfg;
	int64_t started_ms;
	int64_t next_us;      /* the next send slot, microseconds of the caller's clock */
	int64_t step_us;      /* the interval rs_drain_next() last chose */
	bool sent_any;
	bool membership_seen; /* another serving gateway was seen, or the wait ran out */
};

/* Starts a drain at now with cfg (zero fields take the defaults). */
RS_EXPORT void rs_drain_start(struct rs_drain *d, const struct rs_drain_config *cfg, int64_t now_ms);

/* Decides the next step at now, given how many supervisors still wait for
 * their REDIRECT, how many are under way (handoff decided or redirected,
 * still attached), and whether another live, serving gateway is known.
 * *wake_ms is when to ask again (for every action but DONE); *count, for
 * HAND_OFF, how many to hand off now (1..waiting). */
RS_EXPORT enum rs_drain_action rs_drain_next(struct rs_drain *d, int64_t now_ms, size_t waiting, size_t in_flight,
					     bool others_serving, int64_t *wake_ms, size_t *count);

/* Records that count REDIRECTs (or attempts the store refused) were made at now. */
RS_EXPORT void rs_drain_sent(struct rs_drain *d, int64_t now_ms, size_t count);

#ifdef __cplusplus
}
#endif

#endif
