/* SPDX-License-Identifier: Apache-2.0 */
/* claim.c - a session accepted while the store did not answer (degraded),
 * recorded once it does, so the ledger learns it without the supervisor
 * reconnecting.  The store decides by epoch: a newer one means the
 * supervisor has reconnected elsewhere meanwhile, and this link is closed
 * as superseded.  A degraded session stays where it landed unless its
 * claim finds this gateway above the cap: then it is placed by the rule
 * once (move.c), paced one per drain pace, so an outage's excess does not
 * redial in one instant.
 *
 * Right after an outage the store's ring is not the fleet's: every
 * gateway's heartbeat failed meanwhile, so rows past the TTL look dead
 * until their next heartbeat.  So a claim within one TTL of the store's
 * return marks its link whatever its answer, and no deferred placement is
 * decided before one TTL has passed since the return; the placement
 * itself moves the member only if this gateway is above the cap with it
 * (rs_admit.deferred), over the real ring.  A draining gateway drops the
 * marks: its drain hands everyone off.  A marked link that ends first
 * leaves its mark for its member's next link here (marks.c). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gwcore.h"

void gwc_claim(struct rs_gw_link *l)
{
	struct rs_gw_core *core = l->core;
	struct gwc_req *req;

	if (l->state != RS_GW_DEGRADED || l->req)
		return;
	req = gwc_req_new(core, RS_GW_STORE_CLAIM);
	if (!req)
		return; /* tried again at the next heartbeat */
	snprintf(req->member_id, sizeof(req->member_id), "%s", l->member_id);
	snprintf(req->instance_id, sizeof(req->instance_id), "%s", l->instance_id);
	snprintf(req->source, sizeof(req->source), "%s", l->source);
	req->pub.u.claim = (struct rs_session_claim){
		.gateway_id = core->cfg.id,
		.member_id = req->member_id,
		.instance_id = req->instance_id,
		.epoch = l->epoch,
		.sandboxes = l->sandboxes,
		.source = req->source,
	};
	req->link = l;
	if (gwc_req_submit(core, req) != 0)
		return;
	l->sandboxes_stored = l->sandboxes;
	l->req = req;
	gwc_set_state(l, RS_GW_CLAIMING);
}

bool gwc_deferred_view_settled(const struct rs_gw_core *core)
{
	return core->now.mono_ms - core->store_back_ms >= (int64_t)core->cfg.ttl_ms;
}

void gwc_deferred_mark(struct rs_gw_link *l)
{
	struct rs_gw_core *core = l->core;

	if (l->state != RS_GW_ATTACHED || core->draining)
		return;
	gwc_set_state(l, RS_GW_DEFER_DUE);
	if (core->deferred_wake_ms == GWC_WAKE_NEVER)
		core->deferred_wake_ms = core->now.mono_ms;
}

void gwc_claim_answered(struct rs_gw_core *core, struct gwc_req *req, int err)
{
	const struct rs_session_claim *k = &req->pub.u.claim;
	struct rs_gw_link *l = req->link;
	char epoch[24], load[12], cap[12];

	snprintf(epoch, sizeof(epoch), "%llu", (unsigned long long)k->epoch);
	if (l)
		l->req = NULL;
	if (err == 0) {
		core->counters.claims_recorded++;
		snprintf(load, sizeof(load), "%u", k->load);
		snprintf(cap, sizeof(cap), "%u", k->cap);
		gwc_log(core, "info", "event", "claim", "member", k->member_id, "epoch", epoch, "result", "recorded",
			"load", load, "cap", cap, NULL);
		if (!l) {
			gwc_end_session(core, k->member_id, k->epoch, true); /* it left meanwhile */
			/* The mark it would have had waits for its next link here. */
			if (k->above_cap || !gwc_deferred_view_settled(core))
				gwc_marks_left(core, k->member_id, k->epoch);
			return;
		}
		gwc_set_state(l, RS_GW_ATTACHED);
		if (l->sandboxes != k->sandboxes) {
			l->sandboxes_owed = true;
			core->sandboxes_owed = true;
		}
		if (l->rewrite) {
			/* Its row written again after a take-back: marked only if
			 * it was (admission.c), for the rule placed it here. */
			if (l->rewrite_marked)
				gwc_deferred_mark(l);
			l->rewrite = l->rewrite_marked = false;
		} else if (k->above_cap || !gwc_deferred_view_settled(core)) {
			gwc_deferred_mark(l);
		}
	} else if (err == -ESTALE) {
		core->counters.claims_superseded++;
		gwc_log(core, "info", "event", "claim", "member", k->member_id, "epoch", epoch, "result", "superseded",
			NULL);
		if (l) {
			gwc_set_state(l, RS_GW_DEGRADED); /* nothing of it is owed to the store */
			gwc_supersede(l, "claim");
		}
	} else {
		/* Away again, or our row gone (the heartbeat registers again):
		 * it stays unrecorded and served, claimed later. */
		core->counters.store_errors++;
		core->counters.store_errors_kind[rs_store_error_kind(err)]++;
		gwc_log(core, "warn", "event", "store_error", "op", "claim", "member", k->member_id, "epoch", epoch,
			"error", strerror(-err), NULL);
		if (l)
			gwc_set_state(l, RS_GW_DEGRADED);
	}
}

void gwc_deferred_step(struct rs_gw_core *core)
{
	core->deferred_wake_ms = GWC_WAKE_NEVER;
	if (core->n_state[RS_GW_DEFER_DUE] == 0)
		return;
	if (core->draining) {
		for (struct rs_gw_link *l = core->links; l; l = l->next)
			if (l->state == RS_GW_DEFER_DUE)
				gwc_set_state(l, RS_GW_ATTACHED);
		return;
	}
	if (!gwc_deferred_view_settled(core)) {
		core->deferred_wake_ms = core->store_back_ms + core->cfg.ttl_ms;
		return;
	}
	/* A walk from the head per step: the marked are the few an outage left
	 * above the cap, and a step runs only while some are. */
	if (gwc_store_usable(core))
		for (struct rs_gw_link *l = core->links; l; l = l->next)
			if (l->state == RS_GW_DEFER_DUE) {
				gwc_move_ask(l, true);
				break;
			}
	if (core->n_state[RS_GW_DEFER_DUE])
		core->deferred_wake_ms = core->now.mono_ms + core->cfg.drain.pace_ms;
}
