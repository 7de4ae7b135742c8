/* SPDX-License-Identifier: Apache-2.0 */
/* admission.c - from HELLO to ACCEPT or REDIRECT.  A HELLO's token (and,
 * with mTLS, the peer's identity) is checked, then its admission is
 * queued for the store's transaction (store_queue.c); frames after HELLO
 * wait unread until the answer.  The store away: a serving gateway
 * accepts the arrival where it landed, unrecorded (claim.c records it
 * later); a draining one refuses it.  An arrival that would be attached
 * beyond max_sessions is refused with REJECT LIMIT and a retry hint, on
 * every accept path.  Under overload an arrival is refused with REJECT
 * LIMIT and a retry hint instead (overload.c): shed at once when the queue
 * would outlast its member's patience, or still queued at its deadline. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gwcore.h"

/* Closes other attached links of the same member with an older epoch:
 * this gateway sees the newer one first-hand. */
static void supersede_local(struct rs_gw_link *fresh)
{
	struct rs_gw_link *l = gwc_member_first(fresh->core, fresh->member_id), *next;

	for (; l; l = next) {
		next = l->member_next;
		if (l != fresh && l->epoch < fresh->epoch)
			gwc_supersede(l, "local");
	}
}

/* Whether this gateway holds an attached link of fresh's member at epoch or later. */
static bool local_newer(const struct rs_gw_link *fresh, uint64_t epoch)
{
	for (const struct rs_gw_link *l = gwc_member_first(fresh->core, fresh->member_id); l; l = l->member_next)
		if (l != fresh && l->epoch >= epoch)
			return true;
	return false;
}

/* Whether this gateway holds an attached link of fresh's member at exactly
 * fresh's epoch. */
static bool local_same_epoch(const struct rs_gw_link *fresh)
{
	for (const struct rs_gw_link *l = gwc_member_first(fresh->core, fresh->member_id); l; l = l->member_next)
		if (l != fresh && l->epoch == fresh->epoch)
			return true;
	return false;
}

/* Whether attaching fresh would pass max_sessions.  A member already
 * attached here does not add one: its new link replaces the old. */
static bool sessions_full(const struct rs_gw_link *fresh)
{
	const struct rs_gw_core *core = fresh->core;

	if (core->cfg.max_sessions == 0 || gwc_n_attached(core) < core->cfg.max_sessions)
		return false;
	for (const struct rs_gw_link *l = gwc_member_first(core, fresh->member_id); l; l = l->member_next)
		if (l != fresh)
			return false;
	return true;
}

static void reject_sessions_full(struct rs_gw_link *l)
{
	char text[64];

	snprintf(text, sizeof(text), "gateway at its session limit (%u)", l->core->cfg.max_sessions);
	gwc_reject_retry(l, RS_GW_REJECT_SESSIONS, RS_REJECT_LIMIT, l->core->cfg.limit_retry_ms, text);
}

/* Attaches l here in state s (ATTACHED, or DEGRADED): ACCEPT, and any
 * older link of its member here is closed. */
static void attach(struct rs_gw_link *l, enum rs_gw_session_state s)
{
	struct rs_gw_core *core = l->core;
	struct rs_frame f = { .version = RS_PROTO_VERSION, .type = RS_FRAME_ACCEPT };

	gwc_deadline_clear(l);
	gwc_set_state(l, s);
	gwc_timing_admitted(l);
	snprintf(f.u.accept.gateway_id, sizeof(f.u.accept.gateway_id), "%s", core->cfg.id);
	snprintf(f.u.accept.peer, sizeof(f.u.accept.peer), "%s", core->cfg.advertise_peer);
	f.u.accept.heartbeat_ms = core->cfg.heartbeat_ms;
	gwc_send(l, &f);
	supersede_local(l);
}

void gwc_placement_failed(struct rs_gw_link *l, int err, bool tried)
{
	struct rs_gw_core *core = l->core;
	char epoch[24];

	if (err == -ESTALE || (rs_gw_store_unavailable(err) && !core->draining && local_newer(l, l->epoch))) {
		/* The store's verdict, or what it would have said, known first-hand. */
		gwc_reject(l, RS_GW_REJECT_SUPERSEDED, RS_REJECT_SUPERSEDED, "a newer epoch of this member is attached");
		return;
	}
	if (!rs_gw_store_unavailable(err) || core->draining) {
		gwc_reject(l, RS_GW_REJECT_UNAVAILABLE, RS_REJECT_UNAVAILABLE, "placement store unavailable");
		return;
	}
	if (sessions_full(l)) {
		reject_sessions_full(l);
		return;
	}
	/* Accepted where it landed, without placement, recorded once the store
	 * answers again (claim.c). */
	snprintf(epoch, sizeof(epoch), "%llu", (unsigned long long)l->epoch);
	core->counters.degraded_accepts++;
	gwc_log(core, "warn", "event", "degraded_accept", "member", l->member_id, "epoch", epoch, "stay",
		l->hello_flags & RS_HELLO_STAY ? "1" : "0", "source", l->source, "error",
		tried ? strerror(-err) : "store down (not tried)", NULL);
	attach(l, RS_GW_DEGRADED);
	core->cb.resume(core->user, l->user);
}

/* The store accepted member_id here at epoch and that attachment is being
 * taken back: the admission overwrote the row of the member's older link
 * here, and the take-back deletes it.  Each such link (recorded and not
 * being moved) is written again with its own epoch by a claim, after the
 * take-back in the store's order; meanwhile it is unrecorded, served as a
 * degraded one is, and claimed again at each heartbeat until the store
 * answers (or closed as superseded if a newer epoch of its member is
 * recorded by then). */
static void rewrite_older(struct rs_gw_core *core, const char *member_id, uint64_t epoch)
{
	for (struct rs_gw_link *l = gwc_member_first(core, member_id); l; l = l->member_next) {
		if (l->epoch >= epoch || (l->state != RS_GW_ATTACHED && l->state != RS_GW_DEFER_DUE))
			continue;
		l->rewrite = true;
		l->rewrite_marked = l->state == RS_GW_DEFER_DUE;
		gwc_set_state(l, RS_GW_DEGRADED);
		/* An owed take-back goes out before the heartbeat's claims
		 * (heartbeat.c): a claim now could overtake it. */
		if (gwc_store_usable(core) && !core->owed)
			gwc_claim(l);
	}
}

/* Takes back an attachment of member_id at epoch that nobody will use
 * (its link left, or was refused): its row is deleted, place not kept,
 * and the member's older link here, whose row it overwrote, is recorded
 * again. */
static void take_back(struct rs_gw_core *core, const char *member_id, uint64_t epoch)
{
	gwc_end_session(core, member_id, epoch, false);
	rewrite_older(core, member_id, epoch);
}

void gwc_admission_answered(struct rs_gw_core *core, struct gwc_item *it, const struct rs_admit *a, int err)
{
	struct rs_gw_link *l = it->link;
	struct rs_frame f = { .version = RS_PROTO_VERSION };

	if (err && err != -ESTALE) {
		core->counters.store_errors++;
		core->counters.store_errors_kind[rs_store_error_kind(err)]++;
		gwc_log(core, "error", "event", "store_error", "op", "admit", "member", it->member_id, "error",
			strerror(-err), NULL);
	}
	if (!l) {
		/* It left while the store decided (its member gave up waiting):
		 * an attachment here is taken back, its place not kept, for it
		 * never heard its ACCEPT (a redirect's reservation lapses on
		 * its own). */
		if (!err && a->accepted)
			take_back(core, it->member_id, a->epoch);
		return;
	}
	l->req = NULL;
	if (err) {
		gwc_placement_failed(l, err, true);
		return;
	}
	/* A link of this member attached here at this epoch or a later one: an
	 * epoch grows with every connection, so the newcomer is a replay or a
	 * copy, and is refused rather than attached beside it (the store takes
	 * an equal epoch here for the same connection decided again, so
	 * nothing else would close either).  At an equal epoch the row is the
	 * attached link's and stays; one written for an older newcomer (the
	 * newer link here unrecorded, degraded) is taken back. */
	if (a->accepted && local_newer(l, a->epoch)) {
		if (!local_same_epoch(l))
			gwc_end_session(core, a->member_id, a->epoch, false);
		gwc_reject(l, RS_GW_REJECT_SUPERSEDED, RS_REJECT_SUPERSEDED,
			   "this member is attached here at this epoch or a later one");
		return;
	}
	/* Placement chose this gateway, but it is full: the limit is hard
	 * where the cap is soft.  The row is taken back. */
	if (a->accepted && sessions_full(l)) {
		gwc_end_session(core, a->member_id, a->epoch, false);
		reject_sessions_full(l);
		return;
	}
	gwc_log_decision(l, a, it->stay_asked);
	core->counters.owner_fallbacks += a->decision.full;
	if (a->over_cap) {
		char rounds[12];

		snprintf(rounds, sizeof(rounds), "%u", gwc_rounds_get(core, a->member_id) + 1);
		core->counters.over_cap_accepts++;
		gwc_log(core, "warn", "event", "over_cap_accept", "member", a->member_id, "rounds", rounds, "text",
			"every redirect target unreachable: accepted above the cap (liveness)", NULL);
	}
	if (a->fallback && !a->accepted)
		gwc_rounds_refused(core, a->member_id);
	else
		gwc_rounds_end(core, a->member_id);
	if (!a->accepted) {
		core->counters.redirects_placement++;
		f.type = RS_FRAME_REDIRECT;
		snprintf(f.u.redirect.gateway_id, sizeof(f.u.redirect.gateway_id), "%s", a->target_id);
		snprintf(f.u.redirect.peer, sizeof(f.u.redirect.peer), "%s", a->target_peer);
		f.u.redirect.reason = RS_REDIRECT_PLACEMENT;
		gwc_timing_admitted(l);
		gwc_send(l, &f);
		gwc_close(l, true);
		return;
	}
	core->counters.accepts++;
	core->counters.stays += a->decision.reason == RS_REASON_STAY;
	core->counters.reserved += a->decision.reason == RS_REASON_RESERVED;
	attach(l, RS_GW_ATTACHED);
	/* Its member's last link here was marked for a deferred placement and
	 * ended first (a blip): a stay, honored whatever the cap, keeps the
	 * mark, or the excess it was marked for stays for good; an arrival
	 * the rule placed here drops it (marks.c). */
	if (gwc_marks_take(core, l->member_id, l->epoch) && it->stay_asked)
		gwc_deferred_mark(l);
	/* Frames that arrived while it waited are still the caller's to feed. */
	core->cb.resume(core->user, l->user);
}

void gwc_hello(struct rs_gw_link *l, const struct rs_hello *h)
{
	struct rs_gw_core *core = l->core;
	uint64_t expiry;
	int err;

	l->hello_ms = core->now.mono_ms;
	snprintf(l->member_id, sizeof(l->member_id), "%s", h->member_id);
	snprintf(l->instance_id, sizeof(l->instance_id), "%s", h->instance_id);
	err = gwc_token_verify(core, h->token, h->member_id, &expiry);
	if (err) {
		gwc_reject(l, RS_GW_REJECT_BAD_TOKEN, RS_REJECT_BAD_TOKEN,
			   err == -EKEYEXPIRED ? "token expired" :
			   err == -ERANGE      ? "token expires too far ahead" : "token invalid for this member");
		return;
	}
	/* mTLS: the token says who may attach, the certificate who speaks. */
	if (core->cb.peer_is && !core->cb.peer_is(core->user, l->user, h->member_id)) {
		gwc_reject(l, RS_GW_REJECT_CLIENT_CERT, RS_REJECT_BAD_TOKEN, "client certificate does not name this member");
		return;
	}
	l->epoch = h->epoch;
	l->sandboxes = h->sandboxes;
	l->hello_flags = h->flags;
	/* Two fallbacks of this member refused here in a row: this third is
	 * accepted above the cap if it is one (the store recognises it). */
	l->liveness = (h->flags & RS_HELLO_STAY) && !(h->flags & RS_HELLO_REDIRECTED) &&
		      gwc_rounds_get(core, h->member_id) >= 2;
	gwc_deadline_clear(l);
	gwc_set_state(l, RS_GW_PLACING);
	if (!gwc_store_usable(core)) {
		if (core->store_up)
			core->counters.store_queue_full++; /* deep, not down: degraded all the same */
		gwc_placement_failed(l, -EIO, false);
		return;
	}
	/* A queue the store would not clear before this member gives up:
	 * refused now with a hint, rather than admitted after it left. */
	if (gwc_pace_would_shed(core)) {
		gwc_pace_refuse(l, true);
		return;
	}
	gwc_deadline_set(&core->admit_dl, l, core->now.mono_ms + core->cfg.admit_deadline_ms);
	gwc_admit_enqueue(l);
}
