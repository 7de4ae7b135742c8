/* SPDX-License-Identifier: Apache-2.0 */
/* placement.c - the placement rule over a snapshot, by a plain successor
 * walk.  It is the readable statement of the rule and the oracle the indexed
 * placer is tested against; production paths use struct rs_placer. */
#include <errno.h>
#include <string.h>

#include "ringsteer/placement.h"
#include "rule.h"

const char *rs_reason_name(enum rs_reason reason)
{
	switch (reason) {
	case RS_REASON_PLACED:
		return "placed";
	case RS_REASON_OWNER_FALLBACK:
		return "owner-fallback";
	case RS_REASON_STAY:
		return "stay";
	case RS_REASON_DRAIN_HANDOFF:
		return "drain-handoff";
	case RS_REASON_RESERVED:
		return "reserved";
	}
	return "unknown";
}

uint32_t rs_cap(uint64_t members, uint32_t active)
{
	uint64_t cap;

	if (active == 0)
		return 0;
	cap = members / active + (members % active != 0);
	return cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap;
}

int rs_rule_check_arrival(const struct rs_arrival *a, const struct rs_gateway_load *gws, size_t n)
{
	if (!a->member_id || !a->member_id[0] || strlen(a->member_id) > RS_ID_MAX)
		return -EINVAL;
	if (a->at < -1 || (a->at >= 0 && (size_t)a->at >= n))
		return -EINVAL;
	if (a->stale < -1 || (a->stale >= 0 && (size_t)a->stale >= n))
		return -EINVAL;
	if (rs_rule_stale_counted(a, gws) && gws[a->stale].load == 0)
		return -EINVAL; /* the record it claims is not in that load */
	if (a->handoff && a->stale < 0)
		return -EINVAL;
	return 0;
}

bool rs_rule_try_stay(const struct rs_arrival *a, const struct rs_gateway_load *gws, uint32_t cap,
		      struct rs_decision *out)
{
	if (!a->stay || a->handoff || a->at < 0 || !rs_rule_active(&gws[a->at]))
		return false;
	out->gateway = (uint32_t)a->at;
	out->reason = RS_REASON_STAY;
	out->cap = cap;
	out->full = false;
	return true;
}

int rs_rule_member_point(const struct rs_arrival *a, struct rs_point_hasher *h, uint64_t *point)
{
	size_t len = strlen(a->member_id);

	if (a->has_point) {
		*point = a->point;
		return 0;
	}
	return h ? rs_point_hasher_point(h, a->member_id, len, point) : rs_ring_point(a->member_id, len, point);
}

void rs_rule_placed(const struct rs_arrival *a, uint32_t gw, uint32_t cap, bool full, struct rs_decision *out)
{
	out->gateway = gw;
	out->cap = cap;
	out->full = full;
	if (a->handoff)
		out->reason = RS_REASON_DRAIN_HANDOFF;
	else
		out->reason = full ? RS_REASON_OWNER_FALLBACK : RS_REASON_PLACED;
}

int rs_place(const struct rs_ring *ring, const struct rs_gateway_load *gws, const struct rs_arrival *a,
	     struct rs_decision *out)
{
	size_t n = rs_ring_gateway_count(ring), n_points = rs_ring_point_count(ring);
	uint64_t members = 1, point;
	uint32_t active = 0, cap;
	int stale = -1, owner = -1;
	size_t start;
	int err;

	err = rs_rule_check_arrival(a, gws, n);
	if (err)
		return err;
	if (rs_rule_stale_counted(a, gws))
		stale = a->stale;
	for (size_t g = 0; g < n; g++) {
		if (gws[g].live)
			members += gws[g].load;
		active += rs_rule_active(&gws[g]);
	}
	members -= stale >= 0;
	cap = rs_cap(members, active);
	if (rs_rule_try_stay(a, gws, cap, out))
		return 0;
	if (active == 0)
		return -ENOENT;

	err = rs_rule_member_point(a, NULL, &point);
	if (err)
		return err;
	start = rs_ring_successor(ring, point);
	for (size_t i = 0; i < n_points; i++) {
		uint32_t gw = rs_ring_point_gateway(ring, (start + i) % n_points);
		uint32_t load = gws[gw].load - ((int)gw == stale);

		if (!rs_rule_active(&gws[gw]))
			continue;
		if (owner < 0)
			owner = (int)gw;
		if (load < cap) {
			rs_rule_placed(a, gw, cap, false, out);
			return 0;
		}
	}
	rs_rule_placed(a, (uint32_t)owner, cap, true, out);
	return 0;
}
