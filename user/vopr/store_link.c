/* SPDX-License-Identifier: Apache-2.0 */
/* store_link.c - the gateways' calls to the store, as the reference
 * gateway makes them (user/gateway/store_call.c): one worker per gateway
 * runs its requests one at a time, in order, with rs_gw_store_run() over
 * the store's table at the gateway's wall clock, and answers each to the
 * core.  A call takes a latency out and back; the store commits it when it
 * arrives.
 *
 * What can go wrong, each chosen by the seed (faults.c):
 * - an outage: the store refuses (-EIO at once) or hangs (-ETIMEDOUT
 *   after the store timeout, now and then past twice it, which the watch
 *   reports as a stall: rs_gw_core_store_stalled);
 * - slowness: calls that commit, but answer past twice the timeout;
 * - a partition between one gateway and the store: its calls time out, and
 *   a call committed before the partition loses its answer;
 * - a failover: the primary is lost with every commit not yet
 *   acknowledged (synchronous replication of what was acknowledged: the
 *   standby holds exactly that), and the calls in flight fail.
 * The durable state is a copy of the ledger as of the last acknowledged
 * commit: an answer delivered acknowledges its commit and every one
 * before it (a log is replicated in order). */
#include <errno.h>
#include <stdlib.h>

#include "vopr/world.h"

int64_t store_wall(const struct world *w)
{
	return w->now + w->store.wall_off;
}

bool store_reachable(const struct world *w, int g)
{
	return w->store.mode == STORE_UP && !net_store_blocked(w, g);
}

/* The error a call that cannot reach the store ends with. */
static int unreachable_err(const struct world *w, int g)
{
	return w->store.mode == STORE_REFUSING && !net_store_blocked(w, g) ? -EIO : -ETIMEDOUT;
}

static struct job *head_job(struct world *w, uint32_t g, uint64_t id)
{
	struct gw_node *n = &w->gw[g];

	return n->up && n->jobs && n->jobs->id == id ? n->jobs : NULL;
}

/* How long a call that gets no answer runs: the store timeout, and now
 * and then up to two and a half of it (a PostgreSQL write begin may take
 * two; past two the watch calls it stalled). */
static int64_t timeout_ms(struct world *w)
{
	int64_t t = w->cfg.store_timeout_ms;

	return chance(&w->rng, 20) ? t * draw(&w->rng, 200, 250) / 100 : t;
}

static void start_job(struct world *w, struct gw_node *g, struct job *j)
{
	int64_t lat = draw(&w->rng, w->cfg.store_lat_min_ms, w->cfg.store_lat_max_ms);

	j->started = w->now;
	ev_push(w, w->now + 2 * (int64_t)w->cfg.store_timeout_ms + 50, EV_STORE_WATCH, g->idx, j->id);
	if (!store_reachable(w, g->idx)) {
		j->err = unreachable_err(w, g->idx);
		ev_push(w, w->now + (j->err == -EIO ? lat : timeout_ms(w)), EV_STORE_ANSWER, g->idx, j->id);
		return;
	}
	ev_push(w, w->now + lat / 2, EV_STORE_COMMIT, g->idx, j->id);
}

int store_submit(struct world *w, struct gw_node *g, struct rs_gw_store_req *req)
{
	struct job *j;

	if (g->dying || !g->up)
		return -ESHUTDOWN;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->id = ++g->next_job;
	j->req = req;
	j->quiet = req->op == RS_GW_STORE_HEARTBEAT;
	w->store_inflight += !j->quiet;
	if (g->jobs_tail)
		g->jobs_tail->next = j;
	else
		g->jobs = j;
	g->jobs_tail = j;
	if (g->jobs == j)
		start_job(w, g, j);
	return 0;
}

void store_on_commit(struct world *w, uint32_t gi, uint64_t id)
{
	struct job *j = head_job(w, gi, id);
	struct gw_node *g = &w->gw[gi];
	struct store *s = &w->store;
	int64_t lat;

	if (!j || j->committed || j->err)
		return;
	if (!store_reachable(w, gi)) {
		/* It never reached the store: no answer until the timeout. */
		j->err = unreachable_err(w, gi);
		ev_push(w, j->err == -EIO ? w->now : j->started + timeout_ms(w), EV_STORE_ANSWER, gi, id);
		return;
	}
	s->ctx.store_wall_ms = store_wall(w);
	j->err = rs_gw_store_run(ledger_ops(), &s->ctx, j->req, clock_wall(w, &g->clk));
	j->committed = true;
	j->commit_seq = ++s->seq;
	s->unacked[gi] = s->cur;
	s->unacked_seq[gi] = j->commit_seq;
	trace_mix(w, (uint64_t)(int64_t)j->err);
	lat = draw(&w->rng, w->cfg.store_lat_min_ms, w->cfg.store_lat_max_ms);
	if (s->slow)
		lat = 2 * (int64_t)w->cfg.store_timeout_ms + draw(&w->rng, 100, (int64_t)w->cfg.store_timeout_ms);
	ev_push(w, w->now + lat - lat / 2, EV_STORE_ANSWER, gi, id);
}

/* An answer delivered: its commit, and all before it, are durable. */
static void acknowledge(struct world *w, uint32_t gi, const struct job *j)
{
	struct store *s = &w->store;

	if (!j->committed || s->unacked_seq[gi] != j->commit_seq)
		return;
	if (j->commit_seq > s->durable_seq) {
		s->durable = s->unacked[gi];
		s->durable_seq = j->commit_seq;
	}
	s->unacked_seq[gi] = 0;
}

void store_on_answer(struct world *w, uint32_t gi, uint64_t id)
{
	struct job *j = head_job(w, gi, id);
	struct gw_node *g = &w->gw[gi];

	if (!j)
		return;
	if (j->committed && !j->err && !store_reachable(w, gi) && w->store.mode == STORE_UP) {
		/* Committed, but the answer cannot come back (a partition):
		 * the call fails at its timeout; the commit stands. */
		j->err = -ETIMEDOUT;
		j->committed = false;
		if (j->started + (int64_t)w->cfg.store_timeout_ms > w->now) {
			ev_push(w, j->started + w->cfg.store_timeout_ms, EV_STORE_ANSWER, gi, id);
			return;
		}
	}
	acknowledge(w, gi, j);
	g->jobs = j->next;
	if (!g->jobs)
		g->jobs_tail = NULL;
	w->store_inflight -= !j->quiet;
	if (j->quiet)
		g->store_settled = j->err == 0;
	else if (j->err && rs_gw_store_unavailable(j->err))
		g->store_settled = false;
	/* The next call starts before the core hears this answer: a request
	 * the answer makes queues behind it (or starts, the queue empty). */
	if (g->jobs)
		start_job(w, g, g->jobs);
	gw_store_done(w, g, j->req, j->err);
	free(j);
}

void store_on_watch(struct world *w, uint32_t gi, uint64_t id)
{
	struct job *j = head_job(w, gi, id);

	if (j)
		gw_store_stalled(w, &w->gw[gi]);
}

void store_drop_worker(struct world *w, struct gw_node *g)
{
	struct job *j = g->jobs, *next;

	/* The core takes its requests back, told they failed, before it is
	 * freed: as the reference gateway's worker answers what was queued. */
	g->jobs = g->jobs_tail = NULL;
	for (; j; j = next) {
		next = j->next;
		w->store_inflight -= !j->quiet;
		if (g->core)
			rs_gw_core_store_done(g->core, j->req, -EIO, gw_time(w, g));
		free(j);
	}
	w->store.unacked_seq[g->idx] = 0;
}

/* A direct call, acknowledged at once (made on the loop, not the worker). */
static void acknowledge_now(struct store *s)
{
	s->durable = s->cur;
	s->durable_seq = ++s->seq;
	for (int i = 0; i < W_GATEWAYS; i++)
		s->unacked_seq[i] = 0; /* earlier in the log: durable too */
}

int store_gateway_start(struct world *w, struct gw_node *g)
{
	struct store *s = &w->store;
	int err;

	if (!store_reachable(w, g->idx))
		return -EIO;
	s->ctx.store_wall_ms = store_wall(w);
	err = ledger_gateway_start(&s->ctx, g->id, g->peer, RS_GATEWAY_SERVING, clock_wall(w, &g->clk));
	if (!err)
		acknowledge_now(s);
	return err;
}

void store_gateway_remove(struct world *w, struct gw_node *g)
{
	struct store *s = &w->store;

	if (!store_reachable(w, g->idx))
		return; /* the row stays, and dies at its TTL */
	if (ledger_gateway_remove(&s->ctx, g->id) == 0)
		acknowledge_now(s);
}

void store_failover(struct world *w)
{
	struct store *s = &w->store;

	s->cur = s->durable;
	for (int i = 0; i < W_GATEWAYS; i++) {
		struct gw_node *g = &w->gw[i];

		s->unacked_seq[i] = 0;
		/* A call the old primary committed and did not answer: lost. */
		if (g->up && g->jobs && g->jobs->committed) {
			g->jobs->committed = false;
			g->jobs->err = -EIO;
			ev_push(w, w->now + draw(&w->rng, 1, 20), EV_STORE_ANSWER, g->idx, g->jobs->id);
		}
	}
}

void store_init(struct world *w)
{
	struct store *s = &w->store;

	s->ctx = (struct ledger_ctx){ .l = &s->cur, .ttl_ms = w->cfg.ttl_ms, .reservation_ms = w->cfg.reservation_ms,
				      .observe = inv_decision, .observe_user = w };
	s->mode = STORE_UP;
}

void store_fini(struct world *w)
{
	ledger_ctx_fini(&w->store.ctx);
}
