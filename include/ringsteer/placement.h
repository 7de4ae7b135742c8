/* SPDX-License-Identifier: Apache-2.0 */
/* placement.h - the bounded-load placement rule as pure functions over a
 * snapshot of gateway loads (no I/O).
 *
 * Rule (docs/ARCHITECTURE.md, "Placement"): cap = ceil(N / G), N = supervisors
 * on live gateways, counting the arriving member once and its own stale record
 * not at all; G = live, non-draining gateways.  Take the first distinct active
 * gateway clockwise from the member's point whose load is below cap; when all
 * are full, the ring owner among active gateways.  A member asking to stay is
 * accepted where it landed unless that gateway drains or is gone. */
#ifndef RINGSTEER_PLACEMENT_H
#define RINGSTEER_PLACEMENT_H

#include <stdbool.h>
#include <stdint.h>

#include "ringsteer/ring.h"

#include "ringsteer/export.h"

#ifdef __cplusplus
extern "C" {
#endif

enum rs_reason {
	RS_REASON_PLACED,         /* first gateway clockwise below cap */
	RS_REASON_OWNER_FALLBACK, /* every active gateway at cap: ring owner */
	RS_REASON_STAY,           /* asked to stay where it landed, honored */
	RS_REASON_DRAIN_HANDOFF,  /* handed off by a stopping gateway */
	RS_REASON_RESERVED,       /* arrived where the rule had reserved its place
				   * (a node agent's connect-time steering, or a
				   * redirect's target reached through the Service) */
};

/* One gateway in a snapshot, indexed like the ring's gateways. */
struct rs_gateway_load {
	uint32_t load;  /* supervisors it serves (active and reserved sessions) */
	bool live;      /* heartbeat within TTL */
	bool draining;  /* stopping: takes no one, its supervisors still count */
};

/* The member being placed. */
struct rs_arrival {
	const char *member_id;
	bool stay;     /* asks to stay on `at` */
	bool handoff;  /* being handed off by the stopping gateway `stale` */
	int at;        /* gateway it connected to, or -1 (what-if, handoff) */
	int stale;     /* gateway whose load includes this member's old record, or -1 */
	bool has_point; /* point below is member_id's ring point, cached by the caller */
	uint64_t point; /* saves the SHA-256 when has_point */
};

struct rs_decision {
	uint32_t gateway;     /* ring gateway index */
	enum rs_reason reason;
	uint32_t cap;         /* the cap the rule used */
	bool full;            /* every active gateway was at cap (owner fallback) */
};

/* Returns the reason's stable lower-case name ("placed", "owner-fallback",
 * "stay", "drain-handoff"), as used in metrics and CLI output. */
RS_EXPORT const char *rs_reason_name(enum rs_reason reason);

/* Returns ceil(members / active), or 0 when active is 0. */
RS_EXPORT uint32_t rs_cap(uint64_t members, uint32_t active);

/* Decides where a arrives, given gws[rs_ring_gateway_count(ring)].  Plain
 * successor walk: O(gateways) to count plus O(points) worst case; the
 * reference that struct rs_placer must agree with.  Returns 0 and *out,
 * -EINVAL for a bad arrival (index out of range, stale gateway with load 0,
 * handoff without a stale gateway), -ENOENT when no gateway is active. */
RS_EXPORT int rs_place(const struct rs_ring *ring, const struct rs_gateway_load *gws,
		       const struct rs_arrival *a, struct rs_decision *out);

#ifdef __cplusplus
}
#endif

#endif
