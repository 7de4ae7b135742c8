/* SPDX-License-Identifier: Apache-2.0 */
/* gateway.c - a simulated gateway process: the I/O shell around the real
 * gateway core, doing for it what user/gateway/ does (conn.c, store_call.c,
 * core_timer.c, main.c) over the simulated network and store.
 *
 * As there: every event is given to the core with the node's clocks; its
 * frames go out on the link, encoded; a close is flushed, then reported
 * FLUSHED; a peer's FIN or RST is LOST; three heartbeats without a byte
 * read is IDLE; resume() feeds what waited; the timer is armed for
 * rs_gw_core_next_wake() after each event; the store callback queues the
 * request on the node's worker (store_link.c).  SIGTERM drains and exits;
 * a second one leaves at once; on exit the node removes its row, as
 * main.c does.  A crash frees the core calling nothing back but the
 * answers of its queued store calls (which the core must take back to
 * free them), and resets its connections unless its host went with it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vopr/world.h"

struct rs_gw_time gw_time(const struct world *w, const struct gw_node *g)
{
	return (struct rs_gw_time){ clock_mono(w, &g->clk), clock_wall(w, &g->clk) };
}

static void unlink_link(struct gw_node *g, struct conn *c)
{
	if (c->gprev)
		c->gprev->gnext = c->gnext;
	else if (g->links == c)
		g->links = c->gnext;
	if (c->gnext)
		c->gnext->gprev = c->gprev;
	c->gnext = c->gprev = NULL;
}

/* The core is told the link ended (how); the socket is closed (a FIN
 * toward the member unless the core already closed it). */
static void link_end(struct world *w, struct conn *c, enum rs_gw_link_end end)
{
	struct gw_node *g = &w->gw[c->gw];
	struct rs_gw_link *gl = c->gl;

	if (!c->g_open)
		return;
	if (!c->g_closing && end != RS_GW_LINK_FLUSHED)
		net_send(w, c, TO_MB, SEG_FIN, NULL, 0, false);
	c->g_open = false;
	c->gl = NULL;
	c->in_len[TO_GW] = 0;
	unlink_link(g, c);
	trace(w, "%s link %u ended %s", g->id, c->id,
	      end == RS_GW_LINK_FLUSHED ? "flushed" : end == RS_GW_LINK_IDLE ? "idle" : "lost");
	rs_gw_core_link_closed(g->core, gl, end, gw_time(w, g));
	dirty_gw(w, g);
}

/* ---- the core's callbacks ---- */

static void cb_send(void *user, void *link_user, const struct rs_frame *f)
{
	struct gw_node *g = user;
	struct world *w = g->w;
	struct conn *c = link_user;
	uint8_t buf[RS_FRAME_V1_MAX];
	size_t len = 0;

	if (g->dying || !c->g_open)
		return;
	if (rs_frame_encode(f, buf, sizeof(buf), &len) != 0) {
		invariant_failed(w, "frames_encode", "%s could not encode a %s frame", g->id,
				 rs_frame_type_name(f->type));
		return;
	}
	if (f->type == RS_FRAME_REDIRECT && f->u.redirect.reason == RS_REDIRECT_DRAIN) {
		/* A move's cause, as the member will see it: only a drain or a
		 * deferred placement (of a link accepted degraded, or of its
		 * member's redial here that kept its mark) sends one. */
		if (!g->draining && !g->stopping && !c->g_degraded)
			invariant_failed(w, "moves_have_causes",
					 "%s hands m-%u off, neither draining nor having accepted it degraded", g->id,
					 c->member);
		c->redirect_drain = true;
		/* The cause is the decision, whether or not the REDIRECT gets
		 * through: the row it left (a reservation at the target) moves
		 * the member's next arrival too. */
		if (c->mlife == w->mb[c->member].life && c->id == w->mb[c->member].last_conn)
			mb_cause(w, &w->mb[c->member], c->g_degraded ? "deferred placement" : "drain");
	}
	if (f->type != RS_FRAME_HEARTBEAT)
		trace(w, "%s link %u send %s", g->id, c->id, rs_frame_type_name(f->type));
	/* Now and then in two segments: the member core must take a frame cut in two. */
	if (len > 8 && chance(&w->rng, 10)) {
		net_send(w, c, TO_MB, SEG_DATA, buf, len / 2, f->type == RS_FRAME_HEARTBEAT);
		net_send(w, c, TO_MB, SEG_DATA, buf + len / 2, len - len / 2, f->type == RS_FRAME_HEARTBEAT);
		return;
	}
	net_send(w, c, TO_MB, SEG_DATA, buf, len, f->type == RS_FRAME_HEARTBEAT);
}

static void cb_close(void *user, void *link_user)
{
	struct gw_node *g = user;
	struct world *w = g->w;
	struct conn *c = link_user;

	if (g->dying || !c->g_open || c->g_closing)
		return;
	c->g_closing = true;
	net_send(w, c, TO_MB, SEG_FIN, NULL, 0, false);
	/* Flushed as soon as it is handed to the network: never from inside
	 * the callback (the core and its caller still hold the link). */
	ev_push(w, w->now, EV_GW_FLUSHED, c->id, 0);
}

static void cb_resume(void *user, void *link_user)
{
	struct gw_node *g = user;
	struct conn *c = link_user;

	if (!g->dying)
		ev_push(g->w, g->w->now, EV_GW_FEED, c->id, 0);
}

static int cb_store(void *user, struct rs_gw_store_req *req)
{
	struct gw_node *g = user;

	return store_submit(g->w, g, req);
}

static void cb_log(void *user, const char *level, const char *const *kv)
{
	struct gw_node *g = user;
	struct world *w = g->w;
	char line[768];
	size_t n = 0;

	if (!tracing(w) || !w->opt->verbose_trace)
		return;
	for (size_t i = 0; kv[i] && kv[i + 1] && n < sizeof(line); i += 2) {
		int k = snprintf(line + n, sizeof(line) - n, " %s=%s", kv[i], kv[i + 1]);

		if (k < 0)
			break;
		n += (size_t)k;
	}
	trace(w, "%s log %s%s", g->id, level, n ? line : "");
}

static void cb_exit(void *user)
{
	struct gw_node *g = user;

	if (!g->dying)
		ev_push(g->w, g->w->now, EV_GW_EXIT, g->idx, g->inc);
}

static const struct rs_gw_callbacks callbacks = {
	.send = cb_send,
	.close = cb_close,
	.resume = cb_resume,
	.store = cb_store,
	.log = cb_log,
	.exit = cb_exit,
};

/* ---- links ---- */

void gw_link_accept(struct world *w, struct gw_node *g, struct conn *c)
{
	char source[RS_ENDPOINT_MAX + 1];

	snprintf(source, sizeof(source), "10.2.%u.%u:%u", c->member / 250, c->member % 250 + 1,
		 40000 + c->id % 20000);
	if (rs_gw_core_link_open(g->core, c, source, w->cfg.tls, gw_time(w, g), &c->gl) != 0) {
		net_send(w, c, TO_MB, SEG_RST, NULL, 0, false);
		return;
	}
	c->g_open = true;
	c->g_closing = false;
	c->ginc = g->inc;
	c->g_last_read = w->now;
	c->g_state = rs_gw_link_state(c->gl);
	c->gnext = g->links;
	c->gprev = NULL;
	if (g->links)
		g->links->gprev = c;
	g->links = c;
	ev_push(w, w->now + 3 * (int64_t)w->cfg.heartbeat_ms, EV_GW_IDLE, c->id, 0);
	trace(w, "%s link %u accepted from m-%u", g->id, c->id, c->member);
	dirty_gw(w, g);
}

void gw_feed(struct world *w, struct conn *c)
{
	struct gw_node *g;
	size_t used = 0;

	if (!c->g_open || c->g_closing || c->in_len[TO_GW] == 0)
		return;
	g = &w->gw[c->gw];
	rs_gw_core_link_recv(g->core, c->gl, c->in[TO_GW], c->in_len[TO_GW], &used, gw_time(w, g));
	dirty_gw(w, g);
	if (!c->g_open)
		return;
	if (used > c->in_len[TO_GW])
		used = c->in_len[TO_GW];
	memmove(c->in[TO_GW], c->in[TO_GW] + used, c->in_len[TO_GW] - used);
	c->in_len[TO_GW] -= used;
}

void gw_link_secured(struct world *w, struct conn *c)
{
	if (!c->g_open || c->g_closing)
		return;
	rs_gw_core_link_secured(w->gw[c->gw].core, c->gl);
	dirty_gw(w, &w->gw[c->gw]);
}

void gw_link_lost(struct world *w, struct conn *c)
{
	if (c->g_open && !c->g_closing)
		link_end(w, c, RS_GW_LINK_LOST);
}

void gw_on_flushed(struct world *w, struct conn *c)
{
	if (c->g_open && c->gw >= 0 && w->gw[c->gw].inc == c->ginc)
		link_end(w, c, RS_GW_LINK_FLUSHED);
}

void gw_on_idle(struct world *w, struct conn *c)
{
	int64_t due;

	if (!c->g_open || c->g_closing || w->gw[c->gw].inc != c->ginc)
		return;
	due = c->g_last_read + 3 * (int64_t)w->cfg.heartbeat_ms;
	if (w->now < due) {
		ev_push(w, due, EV_GW_IDLE, c->id, 0);
		return;
	}
	link_end(w, c, RS_GW_LINK_IDLE);
}

void gw_observe(struct world *w, struct gw_node *g)
{
	for (struct conn *c = g->links; c; c = c->gnext) {
		struct mb_node *m = &w->mb[c->member];

		c->g_state = rs_gw_link_state(c->gl);
		if (c->g_state == RS_GW_DEGRADED) {
			c->g_degraded = true;
			g->degraded_inc[c->member] = g->inc;
		}
		/* Marked for a deferred placement without having been degraded:
		 * a redial here keeping the mark of its member's earlier link
		 * (D9's fix), which this process must have accepted degraded. */
		if (c->g_state == RS_GW_DEFER_DUE && !c->g_degraded && g->degraded_inc[c->member] == g->inc)
			c->g_degraded = true;
		/* A move asked of the store is a cause from here, whether or not
		 * its REDIRECT is ever sent: the link may be gone when the
		 * answer comes, and the row it wrote moves the next arrival. */
		if ((c->g_state == RS_GW_DEFER_ASKED || c->g_state == RS_GW_HANDOFF_ASKED) && c->mlife == m->life &&
		    c->id == m->last_conn)
			mb_cause(w, m, c->g_state == RS_GW_DEFER_ASKED ? "deferred placement" : "drain");
	}
}

/* ---- the process ---- */

void gw_settle(struct world *w, struct gw_node *g)
{
	int64_t next, at;

	if (!g->up || !g->core)
		return;
	next = rs_gw_core_next_wake(g->core);
	at = next == INT64_MAX ? W_NEVER : next - g->clk.mono_off;
	if (at == g->wake_at)
		return;
	g->wake_at = at;
	g->wake_gen++;
	if (at != W_NEVER)
		ev_push(w, at, EV_GW_WAKE, g->idx, g->wake_gen);
}

void gw_on_wake(struct world *w, struct gw_node *g, uint64_t gen)
{
	if (!g->up || gen != g->wake_gen)
		return;
	g->wake_at = W_NEVER;
	rs_gw_core_tick(g->core, gw_time(w, g));
	dirty_gw(w, g);
}

void gw_store_done(struct world *w, struct gw_node *g, struct rs_gw_store_req *req, int err)
{
	rs_gw_core_store_done(g->core, req, err, gw_time(w, g));
	dirty_gw(w, g);
}

void gw_store_stalled(struct world *w, struct gw_node *g)
{
	trace(w, "%s store stalled", g->id);
	rs_gw_core_store_stalled(g->core, gw_time(w, g));
	dirty_gw(w, g);
}

void gw_start(struct world *w, struct gw_node *g)
{
	const struct wconfig *k = &w->cfg;
	bool registered;
	int err;

	if (g->up)
		return;
	g->inc++;
	g->up = true;
	g->host_down = false;
	g->dying = false;
	g->draining = g->stopping = g->killed = false;
	g->restart_on_exit = false;
	g->store_settled = false;
	g->wake_at = W_NEVER;
	g->links = NULL;
	g->degraded_seen = 0;
	g->over_cap_seen = 0;
	/* main.c: the one store call made on the loop, before serving. */
	registered = store_gateway_start(w, g) == 0;
	/* What an unregistered start leaves behind until its first heartbeat
	 * registers: an earlier process's rows (D3, fixed; the invariants
	 * name them should any outlive it). */
	for (int m = 0; m < W_MEMBERS; m++) {
		const struct ledger_session *s = &w->store.cur.s[m];

		g->stale_epoch[m] = !registered && s->present && s->state == RS_SESSION_ACTIVE && s->gateway == g->idx
					    ? s->epoch
					    : 0;
	}
	g->cfg = (struct rs_gw_core_config){
		.id = g->id,
		.advertise_peer = g->peer,
		.secret = &w->secret,
		.heartbeat_ms = k->heartbeat_ms,
		.ttl_ms = k->ttl_ms,
		.hello_timeout_ms = k->hello_timeout_ms,
		.handoff_timeout_ms = k->handoff_timeout_ms,
		.home_grace_ms = k->home_grace_ms,
		.token_ttl_s = k->token_ttl_s,
		.max_frame = RS_FRAME_MAX,
		.limit_retry_ms = 5000,
		.admit_batch_max = k->admit_batch_max,
		.registered = registered,
		.drain = k->drain,
	};
	err = rs_gw_core_new(&g->cfg, &callbacks, g, gw_time(w, g), &g->core);
	if (err) {
		w->oom = true;
		g->up = false;
		return;
	}
	trace(w, "%s started (incarnation %u, %s)", g->id, g->inc, registered ? "registered" : "not registered");
	/* Ready, then in the Service's endpoints. */
	ev_push(w, w->now + draw(&w->rng, 200, 1500), EV_GW_SERVICE, g->idx, ((uint64_t)g->inc << 1) | 1);
	dirty_gw(w, g);
}

/* Adds the core's counters to the run's totals. */
static void count(struct world *w, const struct rs_gw_core *core)
{
	const struct rs_gw_counters *k = rs_gw_core_counters(core);
	struct vopr_core_totals *t = &w->res->cores;

	t->accepts += k->accepts;
	t->redirects += k->redirects_placement;
	t->over_cap += k->over_cap_accepts;
	t->claims += k->claims_recorded;
	t->claims_superseded += k->claims_superseded;
	t->handoffs_timed_out += k->handoffs_timed_out;
	t->abandoned += k->handoffs_abandoned;
	t->superseded_closed += k->superseded_closed;
	t->store_cancelled += k->store_cancelled;
	for (int i = 0; i < RS_GW_REJECT_COUNT; i++)
		t->rejects += k->rejects[i];
	w->res->deferred += k->redirects_deferred;
}

void gw_teardown(struct world *w, struct gw_node *g)
{
	g->dying = true;
	store_drop_worker(w, g);
	count(w, g->core);
	rs_gw_core_free(g->core);
	g->core = NULL;
	g->up = false;
	g->wake_at = W_NEVER;
	g->wake_gen++;
}

void gw_crash(struct world *w, struct gw_node *g, bool host)
{
	if (!g->up)
		return;
	trace(w, "%s crashed%s", g->id, host ? " with its host" : "");
	if (g->draining)
		inv_drain_ended(w, g, false);
	/* The kernel resets its connections, unless the host went too. */
	for (struct conn *c = g->links, *next; c; c = next) {
		next = c->gnext;
		c->g_open = false;
		c->gl = NULL;
		c->gnext = c->gprev = NULL;
		if (!host)
			net_send(w, c, TO_MB, SEG_RST, NULL, 0, false);
	}
	g->links = NULL;
	gw_teardown(w, g);
	g->host_down = host;
	ev_push(w, w->now + draw(&w->rng, 500, 3000), EV_GW_SERVICE, g->idx, (uint64_t)g->inc << 1);
}

void gw_sigterm(struct world *w, struct gw_node *g)
{
	struct rs_gw_gauges gg;

	if (!g->up)
		return;
	rs_gw_core_gauges(g->core, &gg);
	if (gg.stopping) {
		/* main.c, on_stop: a second signal leaves now. */
		trace(w, "%s SIGTERM again: leaving now", g->id);
		g->killed = true;
		rs_gw_core_stop_now(g->core, RS_GOODBYE_SHUTDOWN);
		ev_push(w, w->now, EV_GW_EXIT, g->idx, g->inc);
		dirty_gw(w, g);
		return;
	}
	trace(w, "%s SIGTERM: draining", g->id);
	inv_drain_started(w, g, true);
	rs_gw_core_drain(g->core, true, gw_time(w, g));
	/* A terminating pod leaves the Service's endpoints soon. */
	ev_push(w, w->now + draw(&w->rng, 100, 2000), EV_GW_SERVICE, g->idx, (uint64_t)g->inc << 1);
	dirty_gw(w, g);
}

void gw_on_exit(struct world *w, struct gw_node *g, uint32_t inc)
{
	if (!g->up || inc != g->inc)
		return;
	trace(w, "%s exits", g->id);
	/* main.c's cleanup: GOODBYE to whoever is left, every connection
	 * flushed and freed, the worker's queue, our row removed. */
	rs_gw_core_stop_now(g->core, RS_GOODBYE_SHUTDOWN);
	while (g->links)
		link_end(w, g->links, RS_GW_LINK_FLUSHED);
	inv_drain_ended(w, g, true);
	gw_teardown(w, g);
	store_gateway_remove(w, g);
	g->in_service = false;
	if (g->restart_on_exit)
		ev_push(w, w->now + draw(&w->rng, 500, 3000), EV_GW_START, g->idx, (uint64_t)g->held_by + 1);
}
