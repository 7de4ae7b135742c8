/* SPDX-License-Identifier: Apache-2.0 */
/* admission.h - the admission decision: where an arriving member goes, by
 * the placement rule and the overrides that belong to how it arrived, as
 * one pure function over a placer (no store, no I/O).
 *
 * Why one function: the rule (placement.h) says where a member goes from
 * nowhere; an admission also knows how the member came (through the
 * Service, asking to stay, after a redirect, handed off by a draining
 * gateway, placed once after a degraded accept) and what its own counted
 * row is (an attachment, or a reservation that already holds a place).
 * Both store backends, the what-if and the tests decide through this, so
 * the answer to "where does it go" exists once.  The caller reads the
 * snapshot into the placer and writes the member's row; everything in
 * between is here.
 *
 * The overrides, in the order they apply (docs/ARCHITECTURE.md, store.h):
 * - reserved here: through the Service, landing where its own reservation
 *   is, at a serving gateway: accepted there (RS_REASON_RESERVED when the
 *   rule would now say otherwise);
 * - goes home: through the Service, its reservation at another live
 *   serving gateway that is below the cap without it: sent there
 *   (RS_REASON_RESERVED; the reservation counted all along);
 * - Service fallback: asking to stay, not after a redirect, while its
 *   reservation is at another gateway (the redirect target it could not
 *   reach): decided over the ring without that target, the stay honored
 *   while the deciding gateway serves and is below that cap, or above it
 *   with liveness (over_cap); and asking to stay, not after a redirect,
 *   while its row is a lapsed reservation (RS_RECORD_LAPSED: sent
 *   somewhere, never arrived, holding no place), likewise, over the whole
 *   ring;
 * - handoff: the deciding gateway out of the search, placed from nowhere
 *   (RS_REASON_DRAIN_HANDOFF while its row counts);
 * - deferred: placed from nowhere over the whole ring; it stays (nothing to
 *   write) when the rule keeps it or the deciding gateway, counting it, is
 *   not above the cap. */
#ifndef RINGSTEER_ADMISSION_H
#define RINGSTEER_ADMISSION_H

#include <stdbool.h>

#include "ringsteer/placement.h"
#include "ringsteer/placer.h"

#include "ringsteer/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How the member arrived at the deciding gateway. */
enum rs_arrival_kind {
	RS_ARRIVE_SERVICE,    /* through the Service, no stay asked */
	RS_ARRIVE_STAY,       /* asks to stay, not after a redirect: a redial, a
			       * blip, a token refresh, or a Service fallback */
	RS_ARRIVE_REDIRECTED, /* dialing a redirect's target, asking to stay */
	RS_ARRIVE_HANDOFF,    /* a draining gateway hands its attached member off */
	RS_ARRIVE_DEFERRED,   /* a serving gateway places its degraded-then-claimed
			       * member by the rule, once */
};

/* What the member's own row is to the rule: a row that counts in a live
 * gateway's load, or none (no row, an expired reservation, a dead
 * gateway's row). */
enum rs_record_kind {
	RS_RECORD_NONE,
	RS_RECORD_ATTACHED, /* an active session at record_at */
	RS_RECORD_RESERVED, /* an unexpired pending reservation at record_at */
	RS_RECORD_LAPSED,   /* a pending reservation that counts nowhere (expired,
			     * or its gateway gone): the member was sent to
			     * record_at (-1: a gateway gone) and never arrived */
};

struct rs_admit_input {
	const char *member_id;
	enum rs_arrival_kind kind;
	int at;                     /* the deciding gateway (ring index), where it
				     * landed; -1 only for RS_ARRIVE_SERVICE (a
				     * what-if: landing nowhere in particular) */
	enum rs_record_kind record;
	int record_at;              /* ring index of the gateway whose load counts
				     * the row (its stale record), or of the lapsed
				     * reservation's; -1 for RS_RECORD_NONE, and
				     * for a lapsed one at a gateway gone */
	bool liveness;              /* RS_ARRIVE_STAY: this member's fallbacks were
				     * refused here twice in a row: honor the stay
				     * above the cap (ignored for other kinds) */
};

struct rs_admit_outcome {
	struct rs_decision decision; /* the final answer: gateway, reason, cap */
	bool fallback;               /* decided as a Service fallback */
	bool over_cap;               /* a fallback's stay honored at or above the cap */
	bool stays;                  /* RS_ARRIVE_DEFERRED: kept at `at` as it was
				      * (decision is the rule's, maybe elsewhere) */
};

/* Decides in->member_id's admission over p's loads (the member's own row
 * counted in them at record_at), leaving p as it was.  Returns 0 and *out
 * (zeroed on an error), -EINVAL (a bad member id; kind, at or record out
 * of range, or a record its load does not hold), -ENOENT (no active
 * gateway to place on), -EIO (the placer chose an excluded gateway:
 * cannot be). */
RS_EXPORT int rs_admit_decide(struct rs_placer *p, const struct rs_admit_input *in, struct rs_admit_outcome *out);

#ifdef __cplusplus
}
#endif

#endif
