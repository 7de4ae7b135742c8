/* SPDX-License-Identifier: Apache-2.0 */
/* admission.c - the admission decision (admission.h): the placement rule
 * run by the placer, then the overrides of the member's arrival kind and
 * own row, all over the placer's loads and nothing else.
 *
 * Guarantees: no I/O and no state of its own; the placer is left exactly
 * as it was (a gateway taken out of the search for one decision is put
 * back before returning, whatever the outcome).  Every gateway fact an
 * override needs (serving, load with the member's row counted) is read
 * from the placer before any exclusion, so it is the snapshot's.  With
 * RS_ARRIVE_SERVICE and no row the answer is rs_placer_decide()'s, hence
 * rs_place()'s (tests/unit/test_admission.c checks both). */
#include <errno.h>

#include "ringsteer/admission.h"

/* A gateway taken out of the search and out of G for one decision (its
 * placer entry as it was, to put back).  Its supervisors still count in N. */
struct exclusion {
	int gw; /* -1: none */
	struct rs_gateway_load saved;
};

static int exclude(struct rs_placer *p, int gw, struct exclusion *x)
{
	struct rs_gateway_load load;
	int err = rs_placer_get(p, (uint32_t)gw, &load);

	if (err)
		return err;
	x->gw = gw;
	x->saved = load;
	load.draining = true;
	return rs_placer_set(p, (uint32_t)gw, &load);
}

static void restore(struct rs_placer *p, const struct exclusion *x)
{
	if (x->gw >= 0)
		rs_placer_set(p, (uint32_t)x->gw, &x->saved); /* in range: it was got */
}

/* Whether index gw (-1 allowed when may_be_none) names one of p's gateways. */
static bool index_ok(const struct rs_placer *p, int gw, bool may_be_none)
{
	struct rs_gateway_load st;

	if (gw == -1)
		return may_be_none;
	return gw >= 0 && rs_placer_get(p, (uint32_t)gw, &st) == 0;
}

/* Whether the member's row counts in record_at's load (its stale record). */
static bool counted(const struct rs_admit_input *in)
{
	return in->record == RS_RECORD_ATTACHED || in->record == RS_RECORD_RESERVED;
}

static int check_input(const struct rs_placer *p, const struct rs_admit_input *in)
{
	if ((unsigned)in->kind > RS_ARRIVE_DEFERRED || (unsigned)in->record > RS_RECORD_LAPSED)
		return -EINVAL;
	if ((in->record == RS_RECORD_NONE && in->record_at != -1) || (counted(in) && in->record_at == -1))
		return -EINVAL;
	if (!index_ok(p, in->record_at, true) || !index_ok(p, in->at, in->kind == RS_ARRIVE_SERVICE))
		return -EINVAL;
	return 0;
}

/* Whether gateway gw takes supervisors (live, not draining); *st its entry. */
static bool serving(const struct rs_placer *p, int gw, struct rs_gateway_load *st)
{
	return gw >= 0 && rs_placer_get(p, (uint32_t)gw, st) == 0 && st->live && !st->draining;
}

/* Whether a member reserved at gateway `home` goes there rather than where
 * the rule says: it serves and, without this member, is below cap.  Its
 * load already counts the reservation, so going home changes no load:
 * what a departure's reservation (rs_store_session_leave) keeps for a
 * restart, and a redirect's or a steer's for the member that was sent. */
static bool goes_home(const struct rs_placer *p, int home, uint32_t cap)
{
	struct rs_gateway_load st;

	return serving(p, home, &st) && st.load > 0 && st.load - 1 < cap;
}

static void override(struct rs_decision *d, int gw, enum rs_reason reason)
{
	d->gateway = (uint32_t)gw;
	d->reason = reason;
	d->full = false;
}

int rs_admit_decide(struct rs_placer *p, const struct rs_admit_input *in, struct rs_admit_outcome *out)
{
	struct rs_arrival arrival = {
		.member_id = in->member_id,
		.stay = in->kind == RS_ARRIVE_STAY || in->kind == RS_ARRIVE_REDIRECTED,
		.at = in->at,
		.stale = counted(in) ? in->record_at : -1,
	};
	struct exclusion x = { .gw = -1 };
	struct rs_gateway_load here = { 0 };
	bool here_serves, reserved_here, fallback = false, over_cap = false;
	struct rs_decision d;
	int err;

	*out = (struct rs_admit_outcome){ 0 };
	err = check_input(p, in);
	if (err)
		return err;
	here_serves = serving(p, in->at, &here);
	switch (in->kind) {
	case RS_ARRIVE_HANDOFF:
		/* From nowhere, never kept here; its row here, while it
		 * counts, is its stale record. */
		err = exclude(p, in->at, &x);
		arrival.at = -1;
		arrival.handoff = counted(in);
		break;
	case RS_ARRIVE_DEFERRED:
		/* From nowhere, over the whole serving ring (here too). */
		arrival.at = -1;
		break;
	case RS_ARRIVE_STAY:
		/* A Service fallback after a failed redirect: its reservation
		 * at the target it could not reach is its stale record. */
		fallback = in->record == RS_RECORD_RESERVED && in->record_at != in->at;
		if (fallback) {
			err = exclude(p, in->record_at, &x);
			arrival.stay = false;
		}
		/* The same fallback once that reservation lapsed (its backoff
		 * outlasted it, or its gateway is gone): it holds no place to
		 * keep, so honored as a fallback's is, below the cap or with
		 * liveness, never above the cap for the asking.  Over the
		 * whole ring: by now the target may be reachable again, and
		 * leaving out one of few gateways would raise the cap far past
		 * the fleet's (ringsteer-vopr, seed 311); a target still cut
		 * off costs the member rounds until liveness takes it. */
		if (in->record == RS_RECORD_LAPSED) {
			fallback = true;
			arrival.stay = false;
		}
		break;
	case RS_ARRIVE_SERVICE:
	case RS_ARRIVE_REDIRECTED:
		break;
	}
	/* Landed where its pending reservation is: the rule chose this
	 * gateway when the reservation was written (a node agent's steer, or
	 * a redirect whose target it reached through the Service) and it has
	 * counted in its load since.  Accepted as a redirect's target is,
	 * unless draining, so the kernel's choice and the gateway's agree
	 * even when loads moved in between. */
	reserved_here = in->kind == RS_ARRIVE_SERVICE && in->record == RS_RECORD_RESERVED && in->record_at == in->at;
	if (!err)
		err = rs_placer_decide(p, &arrival, &d);
	restore(p, &x);
	if (err)
		return err;

	if (reserved_here && here_serves && d.gateway != (uint32_t)in->at)
		override(&d, in->at, RS_REASON_RESERVED);
	/* Arrived elsewhere while its reservation holds a place: it goes
	 * there (a restart goes home; the reservation counted all along). */
	if (in->kind == RS_ARRIVE_SERVICE && !reserved_here && in->record == RS_RECORD_RESERVED &&
	    d.gateway != (uint32_t)in->record_at && goes_home(p, in->record_at, d.cap))
		override(&d, in->record_at, RS_REASON_RESERVED);
	/* The fallback's stay: below the cap without the unreachable
	 * target, or above it for liveness. */
	if (fallback && here_serves && (here.load < d.cap || in->liveness)) {
		over_cap = here.load >= d.cap;
		override(&d, in->at, RS_REASON_STAY);
	}
	if (in->kind == RS_ARRIVE_HANDOFF && d.gateway == (uint32_t)in->at)
		return -EIO; /* the placer searched without it: cannot be */
	/* Not above the cap (any more), or the rule keeps it: it stays. */
	out->stays = in->kind == RS_ARRIVE_DEFERRED && (d.gateway == (uint32_t)in->at || here.load <= d.cap);
	out->fallback = fallback;
	out->over_cap = over_cap;
	out->decision = d;
	return 0;
}
