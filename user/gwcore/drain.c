/* SPDX-License-Identifier: Apache-2.0 */
/* drain.c - the gateway's drain: its row turns draining (no placement
 * targets it), membership is re-read until another serving gateway is in
 * view (bounded: the replacement of a rolling update must be there before
 * anyone is handed off), then attached supervisors are handed off (move.c)
 * at rs_drain_next()'s adaptive pace, with a bound on handoffs under way;
 * the budget closes whoever is left, counted abandoned.  With the store
 * away nobody can be handed off: the slots pass, and the drain resumes
 * when it answers or ends at its budget.  The next link to hand off is
 * found from a cursor, so a step costs what it sends. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gwcore.h"

void gwc_record_answered(struct rs_gw_core *core, int err)
{
	if (err) {
		core->counters.store_errors++;
		core->counters.store_errors_kind[rs_store_error_kind(err)]++;
		gwc_log(core, "error", "event", "store_error", "op", "drain", "error", strerror(-err), NULL);
		return;
	}
	core->drain_unrecorded = false;
}

void gwc_drain_record(struct rs_gw_core *core)
{
	struct gwc_req *req;

	if (!gwc_store_usable(core))
		return; /* the heartbeat writes it once the store answers */
	req = gwc_req_new(core, RS_GW_STORE_DRAINING);
	if (req)
		gwc_req_submit(core, req);
}

void gwc_membership_answered(struct rs_gw_core *core, struct gwc_req *req, int err)
{
	core->membership_in_flight = false;
	if (err) {
		core->counters.store_errors++;
		core->counters.store_errors_kind[rs_store_error_kind(err)]++;
	} else {
		core->others_serving = core->others_serving || req->pub.u.membership.others_serving;
	}
}

static void membership_read(struct rs_gw_core *core)
{
	struct gwc_req *req;

	if (core->membership_in_flight || !gwc_store_usable(core))
		return;
	req = gwc_req_new(core, RS_GW_STORE_MEMBERSHIP);
	if (req && gwc_req_submit(core, req) == 0)
		core->membership_in_flight = true;
}

void gwc_leave_now(struct rs_gw_core *core, uint8_t reason)
{
	struct rs_gw_link *l, *next;

	/* Our row goes with every session row on it (the caller removes it):
	 * no session is ended one by one. */
	core->exiting = true;
	for (l = core->links; l; l = next) {
		next = l->next;
		if (l->state == RS_GW_CLOSING)
			continue;
		if (gwc_attached_state(l->state))
			gwc_goodbye(l, reason, "gateway stopping");
		else
			gwc_close(l, false);
	}
}

static void drained(struct rs_gw_core *core)
{
	char n[24];

	core->drain_wake_ms = GWC_WAKE_NEVER;
	snprintf(n, sizeof(n), "%llu", (unsigned long long)core->counters.handoffs_completed);
	gwc_log(core, "info", "event", "drained", "handed_off", n, NULL);
	if (!core->stopping || core->exited)
		return; /* asked by ringsteerctl: stay up, draining (or left already) */
	gwc_leave_now(core, RS_GOODBYE_SHUTDOWN);
	core->exited = true;
	core->cb.exit(core->user);
}

static void goodbye_rest(struct rs_gw_core *core)
{
	struct rs_gw_link *l, *next;

	for (l = core->links; l; l = next) {
		next = l->next;
		if (!gwc_attached_state(l->state))
			continue;
		core->counters.handoffs_abandoned++;
		gwc_log(core, "warn", "event", "handoff_abandoned", "member", l->member_id, NULL);
		gwc_goodbye(l, RS_GOODBYE_SHUTDOWN, "drain budget spent");
	}
}

/* Asks up to n handoffs of links with nothing in flight, walking on from
 * the cursor, at most one lap; returns how many.  A degraded one is
 * claimed first (the handoff needs its row). */
static size_t hand_off_some(struct rs_gw_core *core, size_t n)
{
	struct rs_gw_link *start = core->drain_cursor ? core->drain_cursor : core->links, *l = start;
	size_t sent = 0;

	while (l && sent < n) {
		if (l->state == RS_GW_DEGRADED)
			gwc_claim(l);
		else if ((l->state == RS_GW_ATTACHED || l->state == RS_GW_DEFER_DUE) && gwc_move_ask(l, false) == 0)
			sent++;
		l = l->next ? l->next : core->links;
		if (l == start)
			break;
	}
	core->drain_cursor = l;
	return sent;
}

void gwc_drain_step(struct rs_gw_core *core)
{
	size_t in_flight = core->n_state[RS_GW_HANDOFF_ASKED] + core->n_state[RS_GW_HANDOFF] +
			   core->n_state[RS_GW_DEFER_MOVED];
	size_t attached = gwc_n_attached(core), count = 0;
	size_t waiting = attached > in_flight ? attached - in_flight : 0;
	int64_t wake = core->now.mono_ms;

	if (!core->drain.membership_seen && !core->others_serving && waiting > 0)
		membership_read(core);
	switch (rs_drain_next(&core->drain, core->now.mono_ms, waiting, in_flight, core->others_serving, &wake,
			      &count)) {
	case RS_DRAIN_DONE:
		drained(core);
		return;
	case RS_DRAIN_CLOSE_REST:
		goodbye_rest(core);
		drained(core);
		return;
	case RS_DRAIN_HAND_OFF:
		if (gwc_store_usable(core))
			hand_off_some(core, count);
		rs_drain_sent(&core->drain, core->now.mono_ms, count);
		break;
	case RS_DRAIN_WAIT:
		break;
	}
	core->drain_wake_ms = wake;
}

void gwc_drain_start(struct rs_gw_core *core, bool exit_after)
{
	core->stopping = core->stopping || exit_after;
	if (core->draining) {
		/* Already draining (ringsteerctl drain): a SIGTERM only adds the
		 * exit; if nobody is left, leave at once. */
		if (core->drain_wake_ms == GWC_WAKE_NEVER)
			core->drain_wake_ms = core->now.mono_ms;
		return;
	}
	core->draining = true;
	core->drain_unrecorded = true;
	gwc_drain_record(core);
	gwc_log(core, "info", "event", "draining", "exit_after", exit_after ? "1" : "0", "recorded",
		gwc_store_usable(core) ? "1" : "0", NULL);
	rs_drain_start(&core->drain, &core->cfg.drain, core->now.mono_ms);
	core->drain_cursor = core->links;
	core->drain_wake_ms = core->now.mono_ms;
	if (core->n_state[RS_GW_DEFER_DUE])
		core->deferred_wake_ms = core->now.mono_ms; /* its step drops the marks */
}
