/* SPDX-License-Identifier: Apache-2.0 */
/* core.c - the gateway core's events (include/ringsteer/gateway_core.h):
 * each sets the time, acts through the files below it, and returns.  The
 * answers of store requests are dispatched here by kind, so that no file
 * below calls back up. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gwcore.h"

int rs_gw_core_new(const struct rs_gw_core_config *cfg, const struct rs_gw_callbacks *cb, void *user,
		   struct rs_gw_time now, struct rs_gw_core **out)
{
	struct rs_gw_core *core;

	*out = NULL;
	if (!cfg || !cb || !cfg->id || !cfg->advertise_peer || !cfg->secret || cfg->heartbeat_ms == 0 ||
	    cfg->max_frame < RS_FRAME_HEADER || cfg->admit_batch_max > RS_GW_ADMIT_BATCH_LIMIT || !cb->send ||
	    !cb->close || !cb->resume || !cb->store || !cb->exit)
		return -EINVAL;
	core = calloc(1, sizeof(*core));
	if (!core)
		return -ENOMEM;
	core->cfg = *cfg;
	/* Never below what this core mints itself, or it would refuse its own. */
	core->token_max_ttl_s = cfg->token_ttl_s > RS_GW_TOKEN_MAX_TTL_DEFAULT ? cfg->token_ttl_s : RS_GW_TOKEN_MAX_TTL_DEFAULT;
	if (!core->cfg.store_queue_max)
		core->cfg.store_queue_max = GWC_STORE_QUEUE_MAX_DEFAULT;
	if (!core->cfg.admit_deadline_ms)
		core->cfg.admit_deadline_ms = RS_GW_ADMIT_DEADLINE_DEFAULT_MS;
	if (!core->cfg.admit_batch_max)
		core->cfg.admit_batch_max = RS_GW_ADMIT_BATCH_DEFAULT;
	core->cb = *cb;
	core->user = user;
	core->now = now;
	core->store_up = true;
	core->store_back_ms = INT64_MIN / 2; /* long ago: the view is settled */
	core->registered = cfg->registered;
	core->next_heartbeat_ms = now.mono_ms + cfg->heartbeat_ms;
	core->drain_wake_ms = GWC_WAKE_NEVER;
	core->deferred_wake_ms = GWC_WAKE_NEVER;
	gwc_timing_init(core);
	*out = core;
	return 0;
}

void rs_gw_core_free(struct rs_gw_core *core)
{
	struct rs_gw_link *l, *next;
	struct gwc_owed *o, *onext;

	if (!core)
		return;
	for (l = core->links; l; l = next) {
		next = l->next;
		if (l->req && l->req->items)
			l->req->items[l->req_slot].link = NULL;
		else if (l->req)
			l->req->link = NULL;
		free(l);
	}
	for (o = core->owed; o; o = onext) {
		onext = o->next;
		free(o);
	}
	gwc_member_free_all(core);
	gwc_rounds_free(core);
	gwc_marks_free(core);
	free(core);
}

int rs_gw_core_link_open(struct rs_gw_core *core, void *link_user, const char *source, bool handshaking,
			 struct rs_gw_time now, struct rs_gw_link **out)
{
	struct rs_gw_link *l = calloc(1, sizeof(*l));

	*out = NULL;
	if (!l)
		return -ENOMEM;
	core->now = now;
	l->core = core;
	l->user = link_user;
	l->state = handshaking ? RS_GW_HANDSHAKE : RS_GW_HELLO;
	core->n_state[l->state]++;
	snprintf(l->source, sizeof(l->source), "%s", source ? source : "");
	l->next = core->links;
	if (core->links)
		core->links->prev = l;
	core->links = l;
	gwc_deadline_set(&core->hello_dl, l, now.mono_ms + core->cfg.hello_timeout_ms);
	*out = l;
	return 0;
}

void rs_gw_core_link_secured(struct rs_gw_core *core, struct rs_gw_link *l)
{
	(void)core;
	if (l->state == RS_GW_HANDSHAKE)
		gwc_set_state(l, RS_GW_HELLO);
}

enum rs_gw_session_state rs_gw_link_state(const struct rs_gw_link *l)
{
	return l->state;
}

/* A supervisor redirected by the drain left on its own: accepted at its target. */
static void handoff_left(struct rs_gw_link *l)
{
	if (l->state == RS_GW_HANDOFF)
		l->core->counters.handoffs_completed++;
}

static void on_sandboxes(struct rs_gw_link *l, uint32_t count)
{
	struct rs_gw_core *core = l->core;
	char n[16];

	l->sandboxes = count; /* the gauge has it at once; the store at most once a heartbeat */
	/* Unrecorded: the claim carries the count (claim.c compares it). */
	if (l->state == RS_GW_DEGRADED || l->state == RS_GW_CLAIMING)
		return;
	/* What the store was last handed, nothing owed: no write.  A
	 * supervisor reports its count on every attach, and in a storm those
	 * writes would double the store's transactions for nothing. */
	if (count == l->sandboxes_stored && !l->sandboxes_owed) {
		core->counters.sandboxes_unchanged++;
		return;
	}
	/* Within a heartbeat of the last write: the heartbeat's catch-up
	 * writes the latest value, so a flood is one write per heartbeat. */
	if (core->now.mono_ms < l->sandboxes_next_ms) {
		core->counters.sandboxes_coalesced++;
		l->sandboxes_owed = true;
		core->sandboxes_owed = true;
		return;
	}
	l->sandboxes_owed = false;
	snprintf(n, sizeof(n), "%u", count);
	gwc_log(core, "info", "event", "sandboxes", "member", l->member_id, "count", n, NULL);
	if (gwc_send_sandboxes(l) != 0) {
		l->sandboxes_owed = true;
		core->sandboxes_owed = true;
	}
}

static void on_refresh(struct rs_gw_link *l)
{
	struct rs_gw_core *core = l->core;
	struct rs_frame f = { .version = RS_PROTO_VERSION, .type = RS_FRAME_TOKEN };
	uint64_t expiry = (uint64_t)(core->now.wall_ms / 1000) + core->cfg.token_ttl_s;

	/* One token per heartbeat a link: a supervisor refreshes at 80% of
	 * its token's life, so more is a loop or a flood, not a need. */
	if (core->now.mono_ms < l->refresh_next_ms) {
		core->counters.refresh_limited++;
		return;
	}
	l->refresh_next_ms = core->now.mono_ms + core->cfg.heartbeat_ms;
	if (gwc_token_mint(core, l->member_id, expiry, f.u.token.token, sizeof(f.u.token.token)) != 0) {
		gwc_log(core, "error", "event", "token_mint_failed", "member", l->member_id, NULL);
		return;
	}
	f.u.token.expiry = expiry;
	gwc_send(l, &f);
	gwc_log(core, "info", "event", "token_refreshed", "member", l->member_id, NULL);
}

/* Acts on one decoded frame. */
static void on_frame(struct rs_gw_link *l, const struct rs_frame *f)
{
	if (l->state == RS_GW_HELLO || l->state == RS_GW_HANDSHAKE) {
		if (f->type != RS_FRAME_HELLO)
			gwc_reject(l, RS_GW_REJECT_BAD_FRAME, RS_REJECT_BAD_FRAME, "expected HELLO");
		else
			gwc_hello(l, &f->u.hello);
		return;
	}
	switch (f->type) { /* attached */
	case RS_FRAME_HEARTBEAT:
		return;
	case RS_FRAME_SANDBOXES:
		on_sandboxes(l, f->u.sandboxes);
		return;
	case RS_FRAME_REFRESH:
		on_refresh(l);
		return;
	case RS_FRAME_GOODBYE:
		gwc_log(l->core, "info", "event", "goodbye", "member", l->member_id, NULL);
		handoff_left(l);
		gwc_close(l, true);
		return;
	default:
		gwc_reject(l, RS_GW_REJECT_BAD_FRAME, RS_REJECT_BAD_FRAME, "unexpected frame");
		return;
	}
}

/* Whether l reads frames now: not while its admission is decided, nor once closing. */
static bool reading(const struct rs_gw_link *l)
{
	return l->state == RS_GW_HANDSHAKE || l->state == RS_GW_HELLO || gwc_attached_state(l->state);
}

int rs_gw_core_link_recv(struct rs_gw_core *core, struct rs_gw_link *l, const uint8_t *buf, size_t len,
			 size_t *consumed, struct rs_gw_time now)
{
	size_t off = 0;

	core->now = now;
	while (reading(l) && off < len) {
		struct rs_frame f;
		size_t total, used;
		int err;

		/* Judged from the length field alone, before the frame is all
		 * here; beyond the protocol's own bound it is a bad frame. */
		if (rs_frame_size(buf + off, len - off, &total) == 0 && total > core->cfg.max_frame) {
			gwc_reject(l, RS_GW_REJECT_FRAME_TOO_LARGE, RS_REJECT_BAD_FRAME, "frame too large");
			break;
		}
		err = rs_frame_decode(buf + off, len - off, &f, &used);
		if (err == -EAGAIN)
			break;
		if (err == -EPROTONOSUPPORT) {
			gwc_reject(l, RS_GW_REJECT_BAD_VERSION, RS_REJECT_BAD_VERSION, "unsupported protocol version");
			break;
		}
		if (err == -EMSGSIZE) {
			gwc_reject(l, RS_GW_REJECT_BAD_FRAME, RS_REJECT_BAD_FRAME, "frame too large");
			break;
		}
		if (err) {
			/* A bad member id in HELLO is the decoder's -EPROTO too. */
			gwc_reject(l, RS_GW_REJECT_BAD_FRAME, RS_REJECT_BAD_FRAME, "malformed frame");
			break;
		}
		off += used;
		on_frame(l, &f);
	}
	*consumed = off;
	return 0;
}

void rs_gw_core_link_closed(struct rs_gw_core *core, struct rs_gw_link *l, enum rs_gw_link_end end,
			    struct rs_gw_time now)
{
	core->now = now;
	if (end == RS_GW_LINK_IDLE)
		gwc_log(core, "info", "event", "idle_timeout", "member", l->member_id, "source", l->source, NULL);
	else if (end == RS_GW_LINK_LOST && gwc_attached_state(l->state))
		gwc_log(core, "info", "event", "disconnected", "member", l->member_id, NULL);
	if (end != RS_GW_LINK_FLUSHED)
		handoff_left(l);
	/* Its member gave up before the store answered: dropped from the
	 * queue unasked, or its answer discarded (gwc_admission_answered). */
	if (l->state == RS_GW_PLACING)
		core->counters.arrivals_expired++;
	if (gwc_attached_state(l->state) && l->state != RS_GW_DEGRADED && l->state != RS_GW_CLAIMING)
		gwc_end_session(core, l->member_id, l->epoch, true);
	gwc_req_forget(l);
	gwc_deadline_clear(l);
	if (l->indexed || l->state == RS_GW_HANDOFF)
		gwc_set_state(l, RS_GW_CLOSING); /* out of the index, and a handoff's end timed */
	core->n_state[l->state]--;
	if (core->drain_cursor == l)
		core->drain_cursor = l->next;
	if (l->prev)
		l->prev->next = l->next;
	else
		core->links = l->next;
	if (l->next)
		l->next->prev = l->prev;
	free(l);
}

static void cancel_queued(struct rs_gw_core *core);

/* Every item of an answered admission batch, by what it asked. */
static void admit_answered(struct rs_gw_core *core, struct gwc_req *req, int err)
{
	core->admit_in_flight = false;
	if (!err)
		gwc_pace_batch_answered(core, req->n, req->queued_ms);
	for (size_t i = 0; i < req->n; i++) {
		int e = err ? err : req->errs[i];

		core->counters.store_batched++;
		if (req->items[i].asked == RS_GW_PLACING)
			gwc_admission_answered(core, &req->items[i], &req->a[i], e);
		else
			gwc_move_answered(core, &req->items[i], &req->a[i], e);
	}
}

static void leave_answered(struct rs_gw_core *core, struct gwc_req *req, int err)
{
	if (!err)
		return;
	core->counters.store_errors++;
	core->counters.store_errors_kind[rs_store_error_kind(err)]++;
	gwc_log(core, "warn", "event", "store_error", "op", "session_end", "member", req->member_id, "error",
		strerror(-err), NULL);
	if (rs_gw_store_unavailable(err))
		gwc_owe(core, req->member_id, req->pub.u.leave.epoch, req->keep_place);
}

static void sandboxes_answered(struct rs_gw_core *core, struct gwc_req *req, int err)
{
	if (err && err != -ESTALE) {
		core->counters.store_errors++;
		core->counters.store_errors_kind[rs_store_error_kind(err)]++;
		gwc_log(core, "warn", "event", "store_error", "op", "sandboxes", "member", req->member_id, "error",
			strerror(-err), NULL);
	}
	if (!rs_gw_store_unavailable(err))
		return;
	/* The link (found by member and epoch, if still here) owes its count. */
	core->sandboxes_owed = true;
	for (struct rs_gw_link *l = gwc_member_first(core, req->member_id); l; l = l->member_next)
		if (l->epoch == req->pub.u.sandboxes.epoch)
			l->sandboxes_owed = true;
}

void rs_gw_core_store_done(struct rs_gw_core *core, struct rs_gw_store_req *pub, int err, struct rs_gw_time now)
{
	struct gwc_req *req = (struct gwc_req *)pub;
	bool was_up = core->store_up;

	core->now = now;
	core->n_requests--;
	if (core->queue_full && core->n_requests <= core->cfg.store_queue_max / 2) {
		core->queue_full = false;
		gwc_log(core, "info", "event", "store_queue_ok", NULL);
	}
	gwc_store_outcome(core, err);
	switch (pub->op) {
	case RS_GW_STORE_ADMIT:
		admit_answered(core, req, err);
		break;
	case RS_GW_STORE_CLAIM:
		gwc_claim_answered(core, req, err);
		break;
	case RS_GW_STORE_LEAVE:
		leave_answered(core, req, err);
		break;
	case RS_GW_STORE_SANDBOXES:
		sandboxes_answered(core, req, err);
		break;
	case RS_GW_STORE_HEARTBEAT:
		gwc_heartbeat_answered(core, req, was_up, err);
		break;
	case RS_GW_STORE_MEMBERSHIP:
		gwc_membership_answered(core, req, err);
		break;
	case RS_GW_STORE_DRAINING:
		gwc_record_answered(core, err);
		break;
	}
	gwc_req_free(req);
	if (!core->store_up)
		cancel_queued(core); /* only the heartbeat probes a store known away */
	gwc_admit_flush(core);
}

/* The store is known away: the queued admissions are answered
 * "unavailable" now (arrivals accepted degraded) instead of waiting behind
 * a call nothing is ending, or going out as a batch to a store known away. */
static void cancel_queued(struct rs_gw_core *core)
{
	struct rs_gw_link *take[GWC_CANCEL_CHUNK];
	struct rs_admit none = { 0 };
	size_t n;

	while ((n = gwc_admit_take(core, take, GWC_CANCEL_CHUNK)) > 0) {
		core->counters.store_cancelled += n;
		for (size_t i = 0; i < n; i++) {
			struct gwc_item it = { .link = take[i], .asked = take[i]->state,
					       .stay_asked = take[i]->hello_flags & RS_HELLO_STAY };

			snprintf(it.member_id, sizeof(it.member_id), "%s", take[i]->member_id);
			if (it.asked == RS_GW_PLACING)
				gwc_admission_answered(core, &it, &none, -ETIMEDOUT);
			else
				gwc_move_answered(core, &it, &none, -ETIMEDOUT);
		}
	}
}

void rs_gw_core_store_stalled(struct rs_gw_core *core, struct rs_gw_time now)
{
	core->now = now;
	gwc_store_outcome(core, -ETIMEDOUT);
	cancel_queued(core);
}

static int64_t earliest(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

int64_t rs_gw_core_next_wake(const struct rs_gw_core *core)
{
	int64_t t = earliest(core->next_heartbeat_ms, earliest(core->drain_wake_ms, core->deferred_wake_ms));

	if (core->hello_dl.head)
		t = earliest(t, core->hello_dl.head->deadline_ms);
	if (core->handoff_dl.head)
		t = earliest(t, core->handoff_dl.head->deadline_ms);
	if (core->admit_dl.head)
		t = earliest(t, core->admit_dl.head->deadline_ms);
	return t;
}

static void deadlines_due(struct rs_gw_core *core)
{
	struct rs_gw_link *l;

	while ((l = core->hello_dl.head) && l->deadline_ms <= core->now.mono_ms) {
		gwc_deadline_clear(l);
		if (l->state == RS_GW_HANDSHAKE) {
			/* No frame can be sent before the handshake: just close. */
			gwc_note_refusal(core, RS_GW_REJECT_HELLO_TIMEOUT, l->source, "",
					 "no TLS handshake within the deadline");
			gwc_close(l, false);
		} else if (l->state == RS_GW_HELLO) {
			gwc_reject(l, RS_GW_REJECT_HELLO_TIMEOUT, RS_REJECT_HELLO_TIMEOUT, "no HELLO within the deadline");
		}
	}
	while ((l = core->handoff_dl.head) && l->deadline_ms <= core->now.mono_ms) {
		gwc_deadline_clear(l);
		core->counters.handoffs_timed_out++;
		gwc_log(core, "warn", "event", "handoff_timeout", "member", l->member_id, NULL);
		gwc_goodbye(l, RS_GOODBYE_SHUTDOWN, "handoff deadline passed");
	}
	/* Still queued at its member's dial deadline: told to come back later
	 * rather than admitted after it has gone. */
	while ((l = core->admit_dl.head) && l->deadline_ms <= core->now.mono_ms) {
		gwc_deadline_clear(l);
		gwc_req_forget(l);
		gwc_pace_refuse(l, false);
	}
}

void rs_gw_core_tick(struct rs_gw_core *core, struct rs_gw_time now)
{
	core->now = now;
	deadlines_due(core);
	if (core->next_heartbeat_ms <= now.mono_ms)
		gwc_heartbeat(core);
	if (core->drain_wake_ms <= now.mono_ms)
		gwc_drain_step(core);
	if (core->deferred_wake_ms <= now.mono_ms)
		gwc_deferred_step(core);
	gwc_admit_flush(core);
}

void rs_gw_core_drain(struct rs_gw_core *core, bool exit_after, struct rs_gw_time now)
{
	core->now = now;
	gwc_drain_start(core, exit_after);
}

void rs_gw_core_stop_now(struct rs_gw_core *core, uint8_t goodbye_reason)
{
	gwc_leave_now(core, goodbye_reason);
}

void rs_gw_core_refused(struct rs_gw_core *core, enum rs_gw_reject why, const char *source, const char *text,
			struct rs_gw_time now)
{
	core->now = now;
	if (why < RS_GW_REJECT_COUNT)
		gwc_note_refusal(core, why, source, "", text);
}

const struct rs_gw_counters *rs_gw_core_counters(const struct rs_gw_core *core)
{
	return &core->counters;
}

void rs_gw_core_gauges(const struct rs_gw_core *core, struct rs_gw_gauges *g)
{
	*g = (struct rs_gw_gauges){
		.supervisors = gwc_n_attached(core),
		.unrecorded = core->n_state[RS_GW_DEGRADED] + core->n_state[RS_GW_CLAIMING],
		.deferred_pending = core->n_state[RS_GW_DEFER_DUE] + core->n_state[RS_GW_DEFER_ASKED],
		.store_queue = core->n_requests,
		.store_up = core->store_up,
		.registered = core->registered,
		.draining = core->draining,
		.stopping = core->stopping,
		.store_clock_skew_ms = core->store_clock_skew_ms,
	};
	for (const struct rs_gw_link *l = core->links; l; l = l->next)
		if (gwc_attached_state(l->state) && l->sandboxes > g->busiest)
			g->busiest = l->sandboxes;
}
