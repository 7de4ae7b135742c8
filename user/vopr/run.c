/* SPDX-License-Identifier: Apache-2.0 */
/* run.c - one run of the simulator: the world its seed makes (the
 * fleet's size, its timings, the network's and the store's, the fault
 * plan), then the loop: the next event, the cores it concerns, their timers
 * re-armed and their links observed, every invariant checked.
 *
 * The seed feeds two generators: rng_plan draws the configuration and the
 * fault plan before anything runs, rng everything the run draws as it goes
 * (delays, the Service's picks, latencies, the members' jitter seeds).
 * Nothing else is random and no real clock is read, so a seed is a replay. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vopr/mutants.h"
#include "vopr/world.h"

#define WALL_BASE_MS 1767225600000LL /* 2026-01-01: where the wall clocks start */
#define MAX_EVENTS_DEFAULT 20000000ULL

static void configure(struct world *w)
{
	struct sim_rng *r = &w->rng_plan;
	struct wconfig *k = &w->cfg;

	k->gateways = (uint32_t)draw(r, 2, 5);
	k->slots = k->gateways + (chance(r, 40) ? (uint32_t)draw(r, 1, 2) : 0);
	if (k->slots > W_GATEWAYS)
		k->slots = W_GATEWAYS;
	k->members = (uint32_t)draw(r, 3, 40);
	k->heartbeat_ms = 500 * (uint32_t)draw(r, 2, 10);
	k->ttl_ms = 3 * k->heartbeat_ms;
	k->reservation_ms = (uint32_t)draw(r, 2000, 5000);
	k->hello_timeout_ms = 5000;
	k->handoff_timeout_ms = (uint32_t)draw(r, 2000, 5000);
	k->home_grace_ms = k->ttl_ms;
	k->store_timeout_ms = (uint32_t)draw(r, 300, 1000);
	k->token_ttl_s = (uint32_t)draw(r, 120, 3600);
	k->dial_timeout_ms = 2000;
	k->admit_batch_max = chance(r, 20) ? (uint32_t)draw(r, 1, 4) : 128;
	k->drain = (struct rs_drain_config){
		.pace_ms = (uint32_t)draw(r, 10, 100),
		.budget_ms = (uint32_t)draw(r, 8000, 25000),
		.membership_wait_ms = 5000,
		.max_in_flight = chance(r, 30) ? (uint32_t)draw(r, 1, 4) : 64,
	};
	k->delay_min_ms = (uint32_t)draw(r, 1, 5);
	k->delay_max_ms = k->delay_min_ms + (uint32_t)draw(r, 0, 50);
	k->loss_pct = chance(r, 30) ? (uint32_t)draw(r, 1, 5) : 0;
	k->store_lat_min_ms = (uint32_t)draw(r, 1, 5);
	k->store_lat_max_ms = k->store_lat_min_ms + (uint32_t)draw(r, 0, 40);
	k->tls = chance(r, 50);
	k->faults_until = draw(r, 30000, 150000);
	k->n_faults = chance(r, 10) ? 0 : (uint32_t)draw(r, 1, 14);
}

/* The run ends once the last fault has healed (a drain's restart at most
 * its budget later) and the liveness bound has passed. */
static int64_t end_of_run(const struct world *w)
{
	int64_t last = w->cfg.faults_until;

	for (uint32_t i = 0; i < w->n_faults; i++) {
		const struct fault *f = &w->faults[i];
		int64_t end = f->at + f->dur;

		if (f->kind == F_GW_SIGTERM || f->kind == F_GW_KILL_DRAIN)
			end += w->cfg.drain.budget_ms + 5000;
		if (end > last)
			last = end;
	}
	return last + inv_liveness_bound_ms(w) + 10000;
}

static void setup(struct world *w)
{
	struct wconfig *k = &w->cfg;
	uint64_t x = w->seed;

	if (scenario_on(w))
		scenario_configure(w);
	else
		configure(w);
	w->secret.len = 32;
	for (size_t i = 0; i < w->secret.len; i++)
		w->secret.key[i] = (uint8_t)sim_splitmix64(&x);
	store_init(w);
	w->store.ctx.admit = mutant_admit(w->opt->mutant);
	w->store.wall_off = WALL_BASE_MS + draw(&w->rng_plan, -200, 200);
	w->feeding = UINT32_MAX;
	for (uint32_t i = 0; i < W_GATEWAYS; i++)
		w->gw[i].held_by = -1; /* no fault holds a slot, used or not */
	for (uint32_t i = 0; i < k->slots; i++) {
		struct gw_node *g = &w->gw[i];

		g->w = w;
		g->idx = (uint16_t)i;
		snprintf(g->id, sizeof(g->id), "gw-%u", i);
		snprintf(g->peer, sizeof(g->peer), "10.1.0.%u:7001", i + 1);
		g->exists = i < k->gateways;
		g->wake_at = W_NEVER;
		g->clk.mono_off = draw(&w->rng_plan, 1000000, 900000000);
		g->clk.wall_off = WALL_BASE_MS + draw(&w->rng_plan, -300, 300);
		if (g->exists)
			ev_push(w, 0, EV_GW_START, i, 0);
	}
	for (uint32_t i = 0; i < k->members; i++) {
		struct mb_node *m = &w->mb[i];

		m->w = w;
		m->idx = (uint16_t)i;
		snprintf(m->id, sizeof(m->id), "m-%u", i);
		m->last_gw = -1;
		m->last_conn = UINT32_MAX;
		m->double_since = W_NEVER;
		m->detached_since = 0;
		m->wake_at = W_NEVER;
		m->sandboxes = (uint32_t)draw(&w->rng_plan, 0, 20);
		m->clk.mono_off = draw(&w->rng_plan, 1000000, 900000000);
		m->clk.wall_off = WALL_BASE_MS + draw(&w->rng_plan, -300, 300);
		ev_push(w, scenario_on(w) ? scenario_member_start(w, i) : draw(&w->rng_plan, 0, 5000), EV_MB_START,
			i, 0);
		ev_push(w, draw(&w->rng_plan, 10000, 120000), EV_SANDBOXES, i, 0);
	}
	if (scenario_on(w))
		scenario_plan(w);
	else
		faults_plan(w);
	k->end = end_of_run(w);
	ev_push(w, k->end, EV_END, 0, 0);
}

static void dispatch(struct world *w, const struct ev *e)
{
	struct conn *c = NULL;
	struct gw_node *g = &w->gw[e->a < W_GATEWAYS ? e->a : 0];
	int f;

	switch (e->type) {
	case EV_DNS:
	case EV_SYN:
	case EV_SYNACK:
	case EV_SEG:
	case EV_GW_FEED:
	case EV_GW_FLUSHED:
	case EV_GW_IDLE:
		c = conn_get(w, e->a);
		if (!c)
			return;
		break;
	default:
		break;
	}
	switch (e->type) {
	case EV_GW_WAKE: gw_on_wake(w, g, e->b); break;
	case EV_MB_WAKE: mb_on_wake(w, &w->mb[e->a], e->b); break;
	case EV_DNS: net_on_dns(w, c); break;
	case EV_SYN: net_on_syn(w, c); break;
	case EV_SYNACK: net_on_synack(w, c); break;
	case EV_SEG: net_on_seg(w, c, (enum dir)e->b); break;
	case EV_GW_FEED: gw_feed(w, c); break;
	case EV_GW_FLUSHED: gw_on_flushed(w, c); break;
	case EV_GW_IDLE: gw_on_idle(w, c); break;
	case EV_STORE_COMMIT: store_on_commit(w, e->a, e->b); break;
	case EV_STORE_ANSWER: store_on_answer(w, e->a, e->b); break;
	case EV_STORE_WATCH: store_on_watch(w, e->a, e->b); break;
	case EV_GW_EXIT: gw_on_exit(w, g, (uint32_t)e->b); break;
	case EV_GW_START:
		f = (int)e->b - 1;
		if (!g->up && (f < 0 || g->held_by == f)) {
			g->held_by = -1;
			gw_start(w, g);
		}
		if (f >= 0)
			fault_on(w, (uint32_t)f, FAULT_RESTARTED);
		break;
	case EV_GW_SERVICE:
		if ((uint32_t)(e->b >> 1) == g->inc)
			g->in_service = (e->b & 1) && g->up && !g->stopping;
		break;
	case EV_MB_START: mb_start(w, &w->mb[e->a]); break;
	case EV_FAULT: fault_on(w, e->a, (int)e->b); break;
	case EV_SANDBOXES:
		mb_set_sandboxes(w, &w->mb[e->a]);
		ev_push(w, w->now + draw(&w->rng, 10000, 120000), EV_SANDBOXES, e->a, 0);
		break;
	case EV_SCENARIO: scenario_on_event(w, e->a); break;
	case EV_END: break;
	}
}

/* The cores that ran: their timers re-armed, their links observed. */
static void settle(struct world *w)
{
	for (uint32_t i = 0; w->dirty_gw; i++)
		if (w->dirty_gw & (1u << i)) {
			w->dirty_gw &= ~(1u << i);
			gw_settle(w, &w->gw[i]);
			if (w->gw[i].up)
				gw_observe(w, &w->gw[i]);
		}
	for (uint32_t i = 0; w->dirty_mb; i++)
		if (w->dirty_mb & (1ull << i)) {
			w->dirty_mb &= ~(1ull << i);
			mb_settle(w, &w->mb[i]);
		}
}

static void teardown_all(struct world *w)
{
	for (int i = 0; i < W_GATEWAYS; i++)
		if (w->gw[i].core)
			gw_teardown(w, &w->gw[i]);
	for (int i = 0; i < W_MEMBERS; i++)
		if (w->mb[i].mc) {
			w->mb[i].dying = true;
			rs_mc_free(w->mb[i].mc);
			w->mb[i].mc = NULL;
		}
}

int vopr_run(uint64_t seed, const struct vopr_options *opt, struct vopr_result *out)
{
	struct world *w = calloc(1, sizeof(*w));
	uint64_t max = opt->max_events ? opt->max_events : MAX_EVENTS_DEFAULT;
	struct ev e;
	int err = 0;

	*out = (struct vopr_result){ .seed = seed };
	if (!w)
		return -ENOMEM;
	w->seed = seed;
	w->opt = opt;
	w->res = out;
	w->hash = 0xcbf29ce484222325ull;
	sim_rng_seed(&w->rng_plan, sim_seed_mix(seed, 1));
	sim_rng_seed(&w->rng, sim_seed_mix(seed, 2));
	setup(w);
	if (tracing(w))
		fprintf(opt->trace,
			"seed %llu: %u gateways (%u slots), %u members, heartbeat %u ms, ttl %u ms, %u faults planned, "
			"end %lld ms%s%s\n",
			(unsigned long long)seed, w->cfg.gateways, w->cfg.slots, w->cfg.members, w->cfg.heartbeat_ms,
			w->cfg.ttl_ms, w->n_faults, (long long)w->cfg.end, w->cfg.tls ? ", tls" : "",
			opt->mutant ? ", mutant" : "");
	while (!w->failed && !w->oom && ev_pop(w, &e)) {
		w->now = e.at;
		w->events++;
		trace_event(w, &e);
		if (e.type == EV_END) {
			invariants_final(w);
			break;
		}
		dispatch(w, &e);
		settle(w);
		invariants_check(w);
		if (scenario_on(w))
			scenario_observe(w);
		if (w->events >= max)
			invariant_failed(w, "runaway", "%llu events and not at the end", (unsigned long long)w->events);
	}
	if (w->oom)
		err = -ENOMEM;
	out->events = w->events;
	out->sim_ms = w->now;
	out->trace_hash = w->hash;
	out->gateways = w->cfg.gateways;
	out->members = w->cfg.members;
	out->faults = w->n_faults;
	w->muted = true;
	teardown_all(w);
	net_fini(w);
	ev_fini(w);
	store_fini(w);
	free(w);
	return err;
}
