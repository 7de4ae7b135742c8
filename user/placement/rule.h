/* SPDX-License-Identifier: Apache-2.0 */
/* rule.h - the parts of the placement rule that the reference walk
 * (placement.c) and the indexed placer (placer.c) share, so the two can
 * differ only in how they find the first eligible point. */
#ifndef RS_PLACEMENT_RULE_H
#define RS_PLACEMENT_RULE_H

#include <stdbool.h>
#include <stddef.h>

#include "ring/point_hash.h"
#include "ringsteer/placement.h"

/* Checks a against a snapshot of n gateways (gws).  Returns 0 or -EINVAL. */
int rs_rule_check_arrival(const struct rs_arrival *a, const struct rs_gateway_load *gws, size_t n);

/* Returns whether gateway st takes new supervisors at all. */
static inline bool rs_rule_active(const struct rs_gateway_load *st)
{
	return st->live && !st->draining;
}

/* Returns whether a's stale record is counted in a live gateway's load and
 * must therefore be left out of N and of that gateway's load. */
static inline bool rs_rule_stale_counted(const struct rs_arrival *a, const struct rs_gateway_load *gws)
{
	return a->stale >= 0 && gws[a->stale].live;
}

/* Fills *out when a asks to stay and may (not a handoff; landed on an active
 * gateway).  Returns whether it did. */
bool rs_rule_try_stay(const struct rs_arrival *a, const struct rs_gateway_load *gws, uint32_t cap,
		      struct rs_decision *out);

/* Stores a's ring point in *point: the cached one, else SHA-256 of its id
 * through h (or a one-shot digest when h is NULL).  Returns 0 or -EIO. */
int rs_rule_member_point(const struct rs_arrival *a, struct rs_point_hasher *h, uint64_t *point);

/* Fills *out for a rule placement on gw; full says whether it is the owner
 * fallback. */
void rs_rule_placed(const struct rs_arrival *a, uint32_t gw, uint32_t cap, bool full, struct rs_decision *out);

#endif
