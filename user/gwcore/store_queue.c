/* SPDX-License-Identifier: Apache-2.0 */
/* store_queue.c - what the core asks of its store.  Requests go out
 * through the caller's store callback and come back through
 * rs_gw_core_store_done(); the core never waits for one.
 *
 * Admissions (arrivals, drain handoffs, deferred placements) are batched
 * here: one batch is in flight at a time, and whatever queued meanwhile
 * goes as the next one (up to cfg.admit_batch_max), decided in one transaction
 * by rs_store_admit_batch, each by the rule with the loads its
 * predecessors left: the decisions of one at a time, at the cost of one.
 *
 * The store's health is the last answer's: after a failure only the
 * heartbeat probes it (heartbeat.c), so an outage costs one store timeout
 * per heartbeat, not one per arrival.  Session ends matter most: an
 * attached row counts while its gateway's row lives and nothing expires
 * it, so an end the store could not be told is owed and sent when it
 * answers again. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gwcore.h"

bool rs_gw_store_unavailable(int err)
{
	/* No answer, and also a full, read-only or damaged store: it records
	 * nothing either, so the gateway accepts degraded and claims once it
	 * writes again.  One list of kinds (rs_store_error_kind), counted apart. */
	return err != 0 && rs_store_error_kind(err) != RS_STORE_ERROR_OTHER;
}

struct gwc_req *gwc_req_new(struct rs_gw_core *core, enum rs_gw_store_op op)
{
	struct gwc_req *req = calloc(1, sizeof(*req));

	if (!req)
		return NULL;
	req->pub.op = op;
	req->pub.gateway_id = core->cfg.id;
	req->pub.peer = core->cfg.advertise_peer;
	req->queued_ms = core->now.mono_ms;
	return req;
}

void gwc_req_free(struct gwc_req *req)
{
	if (!req)
		return;
	free(req->items);
	free(req->a);
	free(req->errs);
	free(req->held);
	free(req);
}

int gwc_req_submit(struct rs_gw_core *core, struct gwc_req *req)
{
	int err = core->cb.store(core->user, &req->pub);

	if (err) {
		gwc_req_free(req);
		return err;
	}
	core->n_requests++;
	if (gwc_store_deep(core) && !core->queue_full) {
		char n[24];

		core->queue_full = true;
		snprintf(n, sizeof(n), "%zu", core->n_requests);
		gwc_log(core, "warn", "event", "store_queue_full", "requests", n, NULL);
	}
	return 0;
}

void gwc_req_forget(struct rs_gw_link *l)
{
	struct rs_gw_core *core = l->core;

	if (l->req) {
		if (l->req->items)
			l->req->items[l->req_slot].link = NULL;
		else
			l->req->link = NULL;
		l->req = NULL;
	}
	if (!l->queued)
		return;
	for (struct rs_gw_link **p = &core->queue_head, *prev = NULL; *p; prev = *p, p = &(*p)->queue_next) {
		if (*p != l)
			continue;
		*p = l->queue_next;
		if (core->queue_tail == l)
			core->queue_tail = prev;
		break;
	}
	l->queue_next = NULL;
	l->queued = false;
	core->n_queued--;
}

bool gwc_store_deep(const struct rs_gw_core *core)
{
	return core->n_requests >= core->cfg.store_queue_max;
}

bool gwc_store_usable(const struct rs_gw_core *core)
{
	return core->store_up && !gwc_store_deep(core);
}

void gwc_store_outcome(struct rs_gw_core *core, int err)
{
	bool up = !rs_gw_store_unavailable(err);

	if (up == core->store_up)
		return;
	core->store_up = up;
	if (up) {
		core->store_back_ms = core->now.mono_ms;
		gwc_log(core, "info", "event", "store_up", NULL);
	} else {
		gwc_log(core, "warn", "event", "store_down", "error", strerror(-err), NULL);
	}
}

void gwc_admit_enqueue(struct rs_gw_link *l)
{
	struct rs_gw_core *core = l->core;

	l->queued = true;
	l->queue_next = NULL;
	if (core->queue_tail)
		core->queue_tail->queue_next = l;
	else
		core->queue_head = l;
	core->queue_tail = l;
	core->n_queued++;
	gwc_admit_flush(core);
}

size_t gwc_admit_take(struct rs_gw_core *core, struct rs_gw_link **out, size_t max)
{
	size_t n = 0;

	while (core->queue_head && n < max) {
		struct rs_gw_link *l = core->queue_head;

		core->queue_head = l->queue_next;
		if (!core->queue_head)
			core->queue_tail = NULL;
		l->queue_next = NULL;
		l->queued = false;
		core->n_queued--;
		out[n++] = l;
	}
	return n;
}

/* Fills item i of req from l. */
static void admit_item(struct rs_gw_core *core, struct gwc_req *req, size_t i, struct rs_gw_link *l)
{
	struct gwc_item *it = &req->items[i];
	struct rs_admit *a = &req->a[i];

	it->link = l;
	it->asked = l->state;
	it->stay_asked = l->hello_flags & RS_HELLO_STAY;
	snprintf(it->member_id, sizeof(it->member_id), "%s", l->member_id);
	a->gateway_id = core->cfg.id;
	a->member_id = it->member_id;
	a->epoch = l->epoch;
	a->sandboxes = l->sandboxes;
	l->sandboxes_stored = l->sandboxes;
	if (l->state == RS_GW_PLACING) {
		snprintf(it->instance_id, sizeof(it->instance_id), "%s", l->instance_id);
		snprintf(it->source, sizeof(it->source), "%s", l->source);
		a->stay = it->stay_asked || core->cfg.no_placement;
		a->redirected = l->hello_flags & RS_HELLO_REDIRECTED;
		a->liveness = l->liveness;
	} else {
		a->handoff = l->state == RS_GW_HANDOFF_ASKED;
		a->deferred = l->state == RS_GW_DEFER_ASKED;
	}
	a->instance_id = it->instance_id;
	a->source = it->source;
	l->req = req;
	l->req_slot = i;
}

void gwc_admit_flush(struct rs_gw_core *core)
{
	struct rs_gw_link **take = NULL;
	struct gwc_req *req;
	size_t n;

	if (core->admit_in_flight || !core->queue_head)
		return;
	req = gwc_req_new(core, RS_GW_STORE_ADMIT);
	n = core->n_queued < core->cfg.admit_batch_max ? core->n_queued : core->cfg.admit_batch_max;
	take = calloc(n, sizeof(*take));
	if (req) {
		req->items = calloc(n, sizeof(*req->items));
		req->a = calloc(n, sizeof(*req->a));
		req->errs = calloc(n, sizeof(*req->errs));
	}
	if (!take || !req || !req->items || !req->a || !req->errs) {
		gwc_req_free(req);
		goto cleanup; /* they wait for the next answer or tick */
	}
	n = gwc_admit_take(core, take, n);
	for (size_t i = 0; i < n; i++)
		admit_item(core, req, i, take[i]);
	req->n = n;
	req->pub.u.admit.a = req->a;
	req->pub.u.admit.errs = req->errs;
	req->pub.u.admit.n = n;
	if (core->cb.store(core->user, &req->pub) != 0) {
		/* Not taken (out of memory, stopping): back at the head of the
		 * queue, in order, for the next tick. */
		for (size_t i = n; i-- > 0;) {
			take[i]->req = NULL;
			take[i]->queued = true;
			take[i]->queue_next = core->queue_head;
			core->queue_head = take[i];
			if (!core->queue_tail)
				core->queue_tail = take[i];
			core->n_queued++;
		}
		gwc_req_free(req);
		goto cleanup;
	}
	/* Handed to the store: from here an arrival waits for its answer, or
	 * for its link to close (its outcome then discarded). */
	for (size_t i = 0; i < n; i++)
		if (take[i]->state == RS_GW_PLACING)
			gwc_deadline_clear(take[i]);
	core->counters.store_batches++;
	core->n_requests++;
	core->admit_in_flight = true;
	core->admit_sent_ms = core->now.mono_ms;
cleanup:
	free(take);
}

void gwc_owe(struct rs_gw_core *core, const char *member_id, uint64_t epoch, bool keep_place)
{
	struct gwc_owed *o = calloc(1, sizeof(*o));

	if (!o) {
		gwc_log(core, "error", "event", "session_end_lost", "member", member_id, "error", "out of memory", NULL);
		return;
	}
	o->epoch = epoch;
	o->keep_place = keep_place;
	snprintf(o->member_id, sizeof(o->member_id), "%s", member_id);
	o->next = core->owed;
	core->owed = o;
}

void gwc_end_session(struct rs_gw_core *core, const char *member_id, uint64_t epoch, bool keep_place)
{
	struct gwc_req *req;

	if (core->exiting)
		return; /* the gateway's row goes with all of its sessions */
	if (!gwc_store_usable(core)) {
		gwc_owe(core, member_id, epoch, keep_place);
		return;
	}
	req = gwc_req_new(core, RS_GW_STORE_LEAVE);
	if (!req) {
		gwc_owe(core, member_id, epoch, keep_place);
		return;
	}
	snprintf(req->member_id, sizeof(req->member_id), "%s", member_id);
	req->keep_place = keep_place;
	req->pub.u.leave.member_id = req->member_id;
	req->pub.u.leave.epoch = epoch;
	/* A draining gateway's departures keep no place here: it will be gone. */
	req->pub.u.leave.grace_ms = keep_place && !core->draining ? core->cfg.home_grace_ms : 0;
	if (gwc_req_submit(core, req) != 0)
		gwc_owe(core, member_id, epoch, keep_place);
}

void gwc_flush_owed(struct rs_gw_core *core)
{
	struct gwc_owed *o = core->owed, *next;

	core->owed = NULL;
	for (; o; o = next) {
		next = o->next;
		gwc_end_session(core, o->member_id, o->epoch, o->keep_place);
		free(o);
	}
}

int gwc_send_sandboxes(struct rs_gw_link *l)
{
	struct rs_gw_core *core = l->core;
	struct gwc_req *req;

	int err;

	if (!gwc_store_usable(core))
		return -EIO;
	req = gwc_req_new(core, RS_GW_STORE_SANDBOXES);
	if (!req)
		return -ENOMEM;
	snprintf(req->member_id, sizeof(req->member_id), "%s", l->member_id);
	req->pub.u.sandboxes.member_id = req->member_id;
	req->pub.u.sandboxes.epoch = l->epoch;
	req->pub.u.sandboxes.count = l->sandboxes;
	err = gwc_req_submit(core, req);
	if (!err) {
		l->sandboxes_next_ms = core->now.mono_ms + core->cfg.heartbeat_ms;
		l->sandboxes_stored = l->sandboxes;
	}
	return err;
}
