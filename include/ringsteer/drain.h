/* drain.h - the handoff plan of a stopping gateway: each of its supervisors,
 * in the order given, goes where the placement rule sends it over the ring
 * without the stopping gateway, counting the plan's earlier assignments as
 * load.  Pacing and the make-before-break execution live with the gateway. */
#ifndef RINGSTEER_DRAIN_H
#define RINGSTEER_DRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "ringsteer/placer.h"

/* Marks gateway stopping as draining in p and plans the handoff of the n
 * members attached to it (each counted in its load): targets[i] receives
 * member i's gateway index.  p ends holding the loads after the handoff.
 * Returns 0, -EINVAL (stopping out of range, its load below n, or a bad
 * member id; p is then unchanged), -ENOENT when no other gateway is active
 * (p is then unchanged but for the draining flag). */
int rs_drain_plan(struct rs_placer *p, uint32_t stopping, const char *const *members, size_t n,
		  uint32_t *targets);

#endif
