/* drain.c - the gateway's drain: the row turns draining (no placement
 * targets it, /readyz fails), membership is re-read until another serving
 * gateway is seen (bounded), then attached supervisors are handed off by
 * the store's handoff transaction and REDIRECT {drain}, at the pacer's
 * adaptive pace (user/drain/pacer.c: N supervisors fit the budget, with a
 * bound on handoffs under way); each old link stays until its supervisor
 * leaves (accepted at the target: make before break) or its deadline
 * passes; the budget closes what is left.
 *
 * Every store call runs on the store worker: the handoffs due at one tick
 * are queued together and decided in one transaction.  The tick's counts
 * are kept as connections change, and the next one to hand off is found
 * from a cursor over the connection list, so a tick costs what it sends,
 * not the number of connections.  All times here are monotonic: a step of
 * the wall clock neither cuts a drain short nor stretches it (the pacing
 * reads gw->clock through rs_drain_step; handoff deadlines are libevent
 * timers, which run on the monotonic clock).
 *
 * With the store unavailable nobody can be handed off: membership is not
 * read (the wait runs out), nothing is queued, the heartbeat keeps probing,
 * and the drain either resumes when the store answers or ends at its
 * budget, closing whoever is left (counted abandoned).  Our row's draining
 * state is written when the store answers again. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "gateway.h"
#include "ringsteer/logfmt.h"
#include "ringsteer/mstime.h"

struct membership_call {
	struct gw_call call;
	struct gateway *gw;
	bool found; /* out */
};

static int membership_run(struct rs_store *st, struct gw_call *call)
{
	struct membership_call *m = (struct membership_call *)call;
	struct rs_gateway_row *rows = NULL;
	size_t n = 0;
	int err;

	err = rs_store_list_gateways(st, rs_wall_ms(), false, &rows, &n);
	for (size_t i = 0; i < n && !m->found; i++)
		m->found = rows[i].state == RS_GATEWAY_SERVING && strcmp(rows[i].id, m->gw->cfg.id) != 0;
	free(rows);
	return err;
}

static void membership_done(struct gw_call *call, int err)
{
	struct membership_call *m = (struct membership_call *)call;
	struct gateway *gw = m->gw;

	gw->membership_in_flight = false;
	gw_store_outcome(gw, err);
	if (err)
		gw->counters.store_errors++;
	else
		gw->others_serving = gw->others_serving || m->found;
	free(m);
}

/* Asks the store whether another live, serving gateway is there: the
 * replacement of a rolling update must be in view before anyone is handed
 * off.  The answer arrives for a later tick. */
static void membership_read(struct gateway *gw)
{
	struct membership_call *m;

	if (gw->membership_in_flight || !gw_store_usable(gw))
		return;
	m = calloc(1, sizeof(*m));
	if (!m)
		return;
	m->call = (struct gw_call){ membership_run, membership_done };
	m->gw = gw;
	if (gw_store_call(gw, &m->call) != 0) {
		free(m);
		return;
	}
	gw->membership_in_flight = true;
}

static void handed_off(struct gw_admit_job *job, int err)
{
	struct gateway *gw = job->gw;
	struct gw_conn *c = job->conn;
	const struct rs_admit *a = &job->a;
	struct rs_frame f = { .version = RS_PROTO_VERSION, .type = RS_FRAME_REDIRECT };
	struct timeval deadline = rs_ms_timeval(gw->cfg.handoff_timeout_ms);

	if (a->deferred)
		gw->n_deferred_jobs--;
	else
		gw->n_handoff_jobs--;
	gw->counters.store_batched++;
	gw_store_outcome(gw, err);
	if (err && err != -ESTALE && err != -ENOENT) {
		gw->counters.store_errors++;
		rs_log(stderr, "error", gw->who, "event", "store_error", "op", "handoff", "member", job->member_id,
		       "error", strerror(-err), NULL);
	}
	/* A deferred placement the store could not decide is asked again
	 * (it was never decided, so it still moves at most once). */
	if (a->deferred && c && c->state == CONN_ATTACHED && err && gw_store_unavailable(err))
		gw_deferred_mark(c);
	/* Gone meanwhile (its row is a reservation at the target now: it
	 * lapses), closed, or not placed: nothing to send.  -ENOENT (nobody
	 * takes it now) and store errors leave it waiting for a later slot. */
	if (!c || c->state != CONN_ATTACHED || err == -ENOENT || (err && err != -ESTALE))
		goto cleanup;
	if (err == -ESTALE) {
		/* Its row moved on while we held the link: it is someone else's. */
		gw_conn_supersede(c, "handoff");
		goto cleanup;
	}
	gw_conn_log_decision(c, a, false);
	if (a->deferred && a->accepted)
		goto cleanup; /* the rule keeps it here: nothing moves */
	/* REDIRECT {drain} for a deferred placement too: the supervisor keeps
	 * this link until the target accepts it (make before break). */
	f.u.redirect.reason = RS_REDIRECT_DRAIN;
	snprintf(f.u.redirect.gateway_id, sizeof(f.u.redirect.gateway_id), "%s", a->target_id);
	snprintf(f.u.redirect.peer, sizeof(f.u.redirect.peer), "%s", a->target_peer);
	gw_conn_send(c, &f);
	if (a->deferred)
		gw->counters.redirects_deferred++;
	else
		gw->counters.redirects_drain++;
	c->deferred = a->deferred;
	c->state = CONN_HANDOFF;
	c->redirected = true;
	c->in_flight = true;
	gw->n_handoff_conns++;
	gw_conn_timer_add(c, &deadline);
cleanup:
	free(job);
}

int gw_drain_hand_off(struct gw_conn *c, bool deferred)
{
	struct gateway *gw = c->gw;
	struct gw_admit_job *job;
	int err;

	/* The handoff needs the member's row here: a degraded session is
	 * recorded first (its claim's answer makes it eligible). */
	if (c->unrecorded) {
		gw_conn_claim(c);
		return -EAGAIN;
	}
	job = gw_admit_job_new(c->member_id, "", "");
	if (!job)
		return -ENOMEM;
	job->gw = gw;
	job->conn = c;
	job->done = handed_off;
	job->a.epoch = c->epoch;
	job->a.handoff = !deferred;
	job->a.deferred = deferred;
	job->a.sandboxes = c->sandboxes;
	err = gw_admit_submit(job);
	if (err) {
		free(job);
		return err;
	}
	if (deferred)
		gw->n_deferred_jobs++;
	else
		gw->n_handoff_jobs++;
	return 0;
}

void gw_drain_handoff_expired(struct gw_conn *c)
{
	struct gateway *gw = c->gw;

	gw->counters.handoffs_timed_out++;
	c->handoff_ended = true;
	gw_conn_handoff_settle(c);
	rs_log(stderr, "warn", gw->who, "event", "handoff_timeout", "member", c->member_id, NULL);
	gw_conn_goodbye(c, RS_GOODBYE_SHUTDOWN, "handoff deadline passed");
}

/* Queues up to n handoffs of attached supervisors with no store job in
 * flight, walking on from the cursor, at most one lap; returns how many.
 * Connections ahead of the cursor are mostly waiting ones (those behind it
 * were handed off), so a walk costs about what it sends. */
static size_t hand_off_some(struct gateway *gw, size_t n)
{
	struct gw_conn *start = gw->drain_cursor ? gw->drain_cursor : gw->conns, *c = start;
	size_t sent = 0;

	while (c && sent < n) {
		if (c->state == CONN_ATTACHED && !c->job_ref && gw_drain_hand_off(c, false) == 0)
			sent++;
		c = c->next ? c->next : gw->conns;
		if (c == start)
			break;
	}
	gw->drain_cursor = c;
	return sent;
}

static void drained(struct gateway *gw)
{
	char n[24];

	snprintf(n, sizeof(n), "%llu", (unsigned long long)gw->counters.handoffs_completed);
	rs_log(stderr, "info", gw->who, "event", "drained", "handed_off", n, NULL);
	if (!gw->stopping)
		return; /* asked by ringsteerctl: stay up, draining */
	/* Our row goes with every session row on it once the worker has run
	 * what is queued (main): no session is ended one by one. */
	gw->exiting = true;
	gw->remove_on_exit = true;
	gw_conn_close_all(gw, RS_GOODBYE_SHUTDOWN);
	event_base_loopexit(gw->base, NULL);
}

void gw_drain_tick(evutil_socket_t fd, short what, void *arg)
{
	struct gateway *gw = arg;
	int64_t now = 0, delay = 0;
	size_t in_flight = gw->n_handoff_jobs + gw->n_handoff_conns, count = 0, waiting;
	struct timeval tv;

	(void)fd;
	(void)what;
	waiting = gw->n_attached > in_flight ? gw->n_attached - in_flight : 0;
	if (!gw->drain.membership_seen && waiting > 0)
		membership_read(gw);
	switch (rs_drain_step(&gw->drain, gw->clock, waiting, in_flight, gw->others_serving, &now, &delay, &count)) {
	case RS_DRAIN_DONE:
		drained(gw);
		return;
	case RS_DRAIN_CLOSE_REST:
		gw_conn_goodbye_rest(gw);
		drained(gw);
		return;
	case RS_DRAIN_HAND_OFF:
		/* The store away: nothing is queued; the slots pass and the
		 * budget ends the drain if it never returns. */
		if (gw_store_usable(gw))
			hand_off_some(gw, count);
		rs_drain_sent(&gw->drain, now, count);
		break;
	case RS_DRAIN_WAIT:
		break;
	}
	tv = rs_ms_timeval((uint64_t)delay);
	evtimer_add(gw->drain_ev, &tv);
}

struct record_call {
	struct gw_call call;
	struct gateway *gw;
};

static int record_run(struct rs_store *st, struct gw_call *call)
{
	const struct gw_config *cfg = &((struct record_call *)call)->gw->cfg;

	return rs_store_gateway_register(st, cfg->id, cfg->advertise_peer, RS_GATEWAY_DRAINING, rs_wall_ms());
}

static void record_done(struct gw_call *call, int err)
{
	struct gateway *gw = ((struct record_call *)call)->gw;

	gw_store_outcome(gw, err);
	if (err) {
		gw->counters.store_errors++;
		rs_log(stderr, "error", gw->who, "event", "store_error", "op", "drain", "error", strerror(-err), NULL);
	} else {
		gw->drain_unrecorded = false;
	}
	free(call);
}

void gw_drain_record(struct gateway *gw)
{
	struct record_call *r;

	if (!gw_store_usable(gw))
		return; /* the heartbeat writes it once the store answers */
	r = calloc(1, sizeof(*r));
	if (!r)
		return;
	r->call = (struct gw_call){ record_run, record_done };
	r->gw = gw;
	if (gw_store_call(gw, &r->call) != 0)
		free(r);
}

void gw_drain_start(struct gateway *gw, bool exit_after)
{
	static const struct timeval now = { 0, 0 };

	gw->stopping = gw->stopping || exit_after;
	if (gw->draining) {
		/* Already draining (ringsteerctl drain): a SIGTERM now only
		 * adds the exit; if nobody is left, leave at once. */
		if (!evtimer_pending(gw->drain_ev, NULL))
			evtimer_add(gw->drain_ev, &now);
		return;
	}
	gw->draining = true;
	gw->drain_unrecorded = true;
	gw_drain_record(gw);
	rs_log(stderr, "info", gw->who, "event", "draining", "exit_after", exit_after ? "1" : "0", "recorded",
	       gw_store_usable(gw) ? "1" : "0", NULL);
	rs_drain_start_on(&gw->drain, &gw->cfg.drain, gw->clock);
	gw->drain_cursor = gw->conns;
	evtimer_add(gw->drain_ev, &now);
}
