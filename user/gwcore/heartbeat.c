/* SPDX-License-Identifier: Apache-2.0 */
/* heartbeat.c - the heartbeat: HEARTBEAT to every attached supervisor
 * (whatever the store does), and one store request that refreshes our row
 * (one write, whatever the number of sessions) and reads whether
 * `ringsteerctl drain` asked us to drain.  It is also the store's probe,
 * the one request made while the store is known to be away, at most one
 * in flight.  When the store answers again, what happened meanwhile is
 * told: degraded sessions claimed, owed ends and sandbox counts sent, a
 * drain started meanwhile written. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gwcore.h"

/* Whether l holds a session this process admitted, claimed or is having
 * decided: its member's row, if active here, is ours. */
static bool holds_session(const struct rs_gw_link *l)
{
	return l->state >= RS_GW_PLACING && l->state < RS_GW_CLOSING && l->member_id[0];
}

/* The sessions this process holds, for a registration deferred from its
 * start: its links' and the ends it owes (their rows are still active
 * here, and their owed ends will close them, keeping a grace where due).
 * Every other active row here is an earlier process's.  Requests run in
 * order, so an admission or claim handed out before this heartbeat has
 * written its row by then, and one after writes it after. */
static int list_held(struct rs_gw_core *core, struct gwc_req *req)
{
	size_t n = 0, k = 0;

	for (const struct rs_gw_link *l = core->links; l; l = l->next)
		n += holds_session(l);
	for (const struct gwc_owed *o = core->owed; o; o = o->next)
		n++;
	if (n == 0)
		return 0;
	req->held = calloc(n, sizeof(*req->held));
	if (!req->held)
		return -ENOMEM;
	for (const struct rs_gw_link *l = core->links; l; l = l->next) {
		if (!holds_session(l))
			continue;
		snprintf(req->held[k].member_id, sizeof(req->held[k].member_id), "%s", l->member_id);
		req->held[k++].epoch = l->epoch;
	}
	for (const struct gwc_owed *o = core->owed; o; o = o->next) {
		snprintf(req->held[k].member_id, sizeof(req->held[k].member_id), "%s", o->member_id);
		req->held[k++].epoch = o->epoch;
	}
	req->pub.u.heartbeat.held = req->held;
	req->pub.u.heartbeat.n_held = k;
	return 0;
}

void gwc_heartbeat(struct rs_gw_core *core)
{
	static const struct rs_frame hb = { .version = RS_PROTO_VERSION, .type = RS_FRAME_HEARTBEAT };
	struct gwc_req *req;

	core->next_heartbeat_ms = core->now.mono_ms + core->cfg.heartbeat_ms;
	for (struct rs_gw_link *l = core->links; l; l = l->next)
		if (gwc_attached_state(l->state))
			gwc_send(l, &hb);
	if (core->heartbeat_in_flight || core->exiting)
		return;
	req = gwc_req_new(core, RS_GW_STORE_HEARTBEAT);
	if (!req)
		return;
	req->pub.u.heartbeat.draining = core->draining;
	/* Not registered yet (the start's registration failed: the store was
	 * away): the row there is an earlier process's, maybe draining as it
	 * exited, and so are the active rows at it that we do not hold.  Ours
	 * is written and those end, as the start would have done, and only
	 * then is its state ours to obey. */
	req->pub.u.heartbeat.register_row = !core->registered;
	req->pub.u.heartbeat.check_drain = !core->draining && core->registered;
	/* Without the list the store would end our own sessions too: wait
	 * for the next heartbeat rather than register without it. */
	if (req->pub.u.heartbeat.register_row && list_held(core, req) != 0) {
		gwc_req_free(req);
		return;
	}
	if (gwc_req_submit(core, req) == 0)
		core->heartbeat_in_flight = true;
}

/* The store answers again: tell it what happened while it did not. */
static void catch_up(struct rs_gw_core *core)
{
	size_t unrecorded = core->n_state[RS_GW_DEGRADED];

	if (core->draining && core->drain_unrecorded)
		gwc_drain_record(core);
	gwc_flush_owed(core);
	if (unrecorded == 0 && !core->sandboxes_owed)
		return;
	core->sandboxes_owed = false;
	for (struct rs_gw_link *l = core->links; l; l = l->next) {
		if (l->state == RS_GW_DEGRADED)
			gwc_claim(l);
		else if (l->state == RS_GW_ATTACHED && l->sandboxes_owed && gwc_send_sandboxes(l) == 0)
			l->sandboxes_owed = false;
	}
}

void gwc_heartbeat_answered(struct rs_gw_core *core, struct gwc_req *req, bool was_up, int err)
{
	char ms[24];

	core->heartbeat_in_flight = false;
	/* Counted whatever the outcome: a failed call ran statements too. */
	core->counters.store_statements = req->pub.u.heartbeat.statements;
	core->store_clock_skew_ms = req->pub.u.heartbeat.clock_skew_ms;
	if (err) {
		core->counters.store_errors++;
		core->counters.store_errors_kind[rs_store_error_kind(err)]++;
		snprintf(ms, sizeof(ms), "%lld", (long long)(core->now.mono_ms - req->queued_ms));
		gwc_log(core, "warn", "event", "store_error", "op", "heartbeat", "error", strerror(-err), "ms", ms, NULL);
		return;
	}
	core->registered = true;
	if (req->pub.u.heartbeat.registered && req->pub.u.heartbeat.draining)
		core->drain_unrecorded = false;
	if (!was_up || core->owed || core->n_state[RS_GW_DEGRADED] || core->sandboxes_owed || core->drain_unrecorded)
		catch_up(core);
	if (req->pub.u.heartbeat.told_drain && !core->draining)
		gwc_drain_start(core, false);
}
