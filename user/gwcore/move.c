/* SPDX-License-Identifier: Apache-2.0 */
/* move.c - moving an attached supervisor by the store's decision: a
 * drain's handoff (placed by the rule over the ring without this gateway)
 * or a deferred placement (a degraded arrival placed by the rule once it
 * is claimed above the cap, over the whole serving ring).  Either is an
 * admission item of its own kind; its answer sends REDIRECT {drain} and
 * keeps the old link until the supervisor leaves on its own (accepted at
 * the target: make before break) or its deadline passes. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gwcore.h"

int gwc_move_ask(struct rs_gw_link *l, bool deferred)
{
	if (l->req || l->queued)
		return -EBUSY;
	gwc_set_state(l, deferred ? RS_GW_DEFER_ASKED : RS_GW_HANDOFF_ASKED);
	gwc_admit_enqueue(l);
	return 0;
}

void gwc_move_answered(struct rs_gw_core *core, struct gwc_item *it, const struct rs_admit *a, int err)
{
	struct rs_gw_link *l = it->link;
	bool deferred = it->asked == RS_GW_DEFER_ASKED;
	struct rs_frame f = { .version = RS_PROTO_VERSION, .type = RS_FRAME_REDIRECT };

	if (err && err != -ESTALE && err != -ENOENT) {
		core->counters.store_errors++;
		core->counters.store_errors_kind[rs_store_error_kind(err)]++;
		gwc_log(core, "error", "event", "store_error", "op", "handoff", "member", it->member_id, "error",
			strerror(-err), NULL);
	}
	/* Gone meanwhile: its row is a reservation at the target now, and lapses. */
	if (!l)
		return;
	l->req = NULL;
	if (err == -ESTALE) {
		/* Its row moved on while we held the link: someone else's. */
		gwc_set_state(l, RS_GW_ATTACHED);
		gwc_supersede(l, "handoff");
		return;
	}
	if (err) {
		/* A deferred placement the store could not decide is asked again
		 * (never decided, it still moves at most once); a handoff waits
		 * for a later slot. */
		if (deferred && rs_gw_store_unavailable(err) && !core->draining) {
			gwc_set_state(l, RS_GW_DEFER_DUE);
			if (core->deferred_wake_ms == GWC_WAKE_NEVER)
				core->deferred_wake_ms = core->now.mono_ms;
		} else {
			gwc_set_state(l, RS_GW_ATTACHED);
		}
		return;
	}
	gwc_log_decision(l, a, false);
	if (deferred && a->accepted) {
		gwc_set_state(l, RS_GW_ATTACHED); /* the rule keeps it here: nothing moves */
		return;
	}
	f.u.redirect.reason = RS_REDIRECT_DRAIN;
	snprintf(f.u.redirect.gateway_id, sizeof(f.u.redirect.gateway_id), "%s", a->target_id);
	snprintf(f.u.redirect.peer, sizeof(f.u.redirect.peer), "%s", a->target_peer);
	gwc_send(l, &f);
	if (deferred)
		core->counters.redirects_deferred++;
	else
		core->counters.redirects_drain++;
	l->handoff_ms = core->now.mono_ms;
	gwc_set_state(l, deferred ? RS_GW_DEFER_MOVED : RS_GW_HANDOFF);
	gwc_deadline_set(&core->handoff_dl, l, core->now.mono_ms + core->cfg.handoff_timeout_ms);
}
