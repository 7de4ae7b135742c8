/* SPDX-License-Identifier: Apache-2.0 */
/* scenario.c - the policy model's scenarios (user/sim/scenario.c), run by
 * the real cores: a calm world (no loss, no faults but the scenario's
 * own, small fixed timings), the members started one by one (the fill),
 * then what the scenario does, spaced so that each step settles before the
 * next as the model's sequential arrivals do.  The scenario's actions are
 * faults of the ordinary kinds, so the invariants judge them as they judge
 * any other; the measure is the model's (struct sim_measure), taken from
 * the gateways' attached links once every member is attached again.
 *
 * - fill: member i starts at FILL_FIRST + i * FILL_STEP;
 * - restart: each member in a shuffled order stops (GOODBYE) and starts
 *   again (its process's 0.3-5 s away), RESTART_STEP apart;
 * - rolling: for each original gateway i, a replacement joins slot G + i,
 *   three heartbeats later (every row seen live) gateway i is SIGTERMed;
 *   the next one a drain's budget later.  The drained gateways start again
 *   only after the measure (their fault's end), so that they end removed;
 * - kill: one gateway, drawn by the seed, crashes (its process: RSTs) and
 *   stays down until after the measure. */
#include "vopr/world.h"

#define FILL_FIRST_MS 1000
#define FILL_STEP_MS 250
#define SETTLE_MS 5000    /* after a step: a redirect, a dial, the store's answers */
#define RESTART_STEP_MS 7000
#define REMEASURE_MS 1000 /* a measure finding members still away looks again */

bool scenario_on(const struct world *w)
{
	return w->opt->scenario != VOPR_SCENARIO_NONE;
}

void scenario_configure(struct world *w)
{
	struct wconfig *k = &w->cfg;
	uint32_t g = w->opt->scenario_gateways;

	k->gateways = g;
	k->slots = w->opt->scenario == VOPR_SCENARIO_ROLLING ? 2 * g : g;
	k->members = w->opt->scenario_members;
	k->heartbeat_ms = 1000;
	k->ttl_ms = 3 * k->heartbeat_ms;
	k->reservation_ms = 3000;
	k->hello_timeout_ms = 5000;
	k->handoff_timeout_ms = 3000;
	k->home_grace_ms = k->ttl_ms;
	k->store_timeout_ms = 1000;
	k->token_ttl_s = 3600;
	k->dial_timeout_ms = 2000;
	k->admit_batch_max = 128;
	k->drain = (struct rs_drain_config){
		.pace_ms = 10,
		.budget_ms = 20000,
		.membership_wait_ms = 5000,
		.max_in_flight = 64,
	};
	k->delay_min_ms = 1;
	k->delay_max_ms = 5;
	k->loss_pct = 0;
	k->store_lat_min_ms = 1;
	k->store_lat_max_ms = 5;
	k->tls = false;
	k->n_faults = 0;
}

int64_t scenario_member_start(const struct world *w, uint32_t m)
{
	(void)w;
	return FILL_FIRST_MS + (int64_t)m * FILL_STEP_MS;
}

static void add(struct world *w, struct fault f)
{
	if (w->n_faults < W_FAULTS)
		w->faults[w->n_faults++] = f;
}

void scenario_plan(struct world *w)
{
	struct scenario *s = &w->scn;
	const struct wconfig *k = &w->cfg;
	int64_t t, aftermath = 4 * (int64_t)k->heartbeat_ms;
	uint32_t order[W_MEMBERS];

	w->n_faults = 0;
	s->begin_at = scenario_member_start(w, k->members) + SETTLE_MS;
	t = s->begin_at + 1000;
	switch (w->opt->scenario) {
	case VOPR_SCENARIO_RESTART:
		for (uint32_t i = 0; i < k->members; i++)
			order[i] = i;
		for (uint32_t i = k->members; i > 1; i--) { /* Fisher-Yates, from the plan's generator */
			uint32_t j = sim_rng_below(&w->rng_plan, i), x = order[i - 1];

			order[i - 1] = order[j];
			order[j] = x;
		}
		for (uint32_t i = 0; i < k->members; i++, t += RESTART_STEP_MS)
			add(w, (struct fault){ .at = t, .dur = aftermath, .kind = F_MB_RESTART, .a = (int)order[i] });
		s->measure_at = t + SETTLE_MS;
		break;
	case VOPR_SCENARIO_ROLLING: {
		int64_t see = 3 * (int64_t)k->heartbeat_ms;
		int64_t step = see + k->drain.budget_ms + SETTLE_MS;

		s->measure_at = t + (int64_t)k->gateways * step + SETTLE_MS;
		for (uint32_t i = 0; i < k->gateways; i++, t += step) {
			add(w, (struct fault){ .at = t, .dur = aftermath, .kind = F_GW_JOIN, .a = (int)(k->gateways + i) });
			add(w, (struct fault){ .at = t + see, .dur = s->measure_at + 1000 - (t + see),
					       .kind = F_GW_SIGTERM, .a = 1 << i });
		}
		break;
	}
	case VOPR_SCENARIO_KILL:
		s->victim = (int)sim_rng_below(&w->rng_plan, k->gateways);
		s->measure_at = t + 30000;
		add(w, (struct fault){ .at = t, .dur = s->measure_at + 1000 - t, .kind = F_GW_CRASH, .a = s->victim });
		break;
	default:
		s->measure_at = s->begin_at;
		break;
	}
	w->cfg.faults_until = s->measure_at;
	for (uint32_t i = 0; i < w->n_faults; i++) {
		ev_push(w, w->faults[i].at, EV_FAULT, i, FAULT_START);
		ev_push(w, w->faults[i].at + w->faults[i].dur, EV_FAULT, i, FAULT_END);
	}
	ev_push(w, s->begin_at, EV_SCENARIO, SCENARIO_BEGIN, 0);
	ev_push(w, s->measure_at, EV_SCENARIO, SCENARIO_MEASURE, 0);
}

/* Whether g takes members now: the fleet's, running, neither draining nor stopping. */
static bool serving(const struct gw_node *g)
{
	return g->exists && g->up && !g->draining && !g->stopping;
}

/* The links g's core holds attached: what its gauge says. */
static uint32_t attached_at(const struct gw_node *g)
{
	uint32_t n = 0;

	if (!g->up)
		return 0;
	for (const struct conn *c = g->links; c; c = c->gnext)
		n += gw_state_attached(c->g_state);
	return n;
}

/* The gateway member m is attached at, or -1. */
static int attached_gw(struct world *w, struct mb_node *m)
{
	struct conn *c = mb_attached_conn(w, m);

	return c && c->synced && c->gw >= 0 ? c->gw : -1;
}

static void begin(struct world *w)
{
	struct scenario *s = &w->scn;

	for (uint32_t i = 0; i < w->cfg.members; i++)
		s->start_gw[i] = (int16_t)attached_gw(w, &w->mb[i]);
	s->handoffs_before = w->res->handoffs;
	s->begun = true;
	trace(w, "scenario begins");
}

/* Measures once every member is attached at a serving gateway, each
 * counted once; else looks again a little later. */
static void measure(struct world *w)
{
	struct scenario *s = &w->scn;
	struct vopr_scenario_measure *m = &w->res->scenario;
	uint32_t live = 0, total = 0, max = 0, min = UINT32_MAX, moved = 0, handoffs = 0;

	for (uint32_t i = 0; i < w->cfg.members; i++) {
		int g = attached_gw(w, &w->mb[i]);

		if (g < 0 || !serving(&w->gw[g])) {
			ev_push(w, w->now + REMEASURE_MS, EV_SCENARIO, SCENARIO_MEASURE, 0);
			return;
		}
		moved += g != s->start_gw[i];
		handoffs += w->opt->scenario == VOPR_SCENARIO_KILL && s->start_gw[i] == s->victim;
	}
	for (uint32_t i = 0; i < w->cfg.slots; i++) {
		uint32_t n;

		if (!serving(&w->gw[i]))
			continue;
		n = attached_at(&w->gw[i]);
		live++;
		total += n;
		max = n > max ? n : max;
		min = n < min ? n : min;
	}
	if (total != w->cfg.members) { /* a link not yet closed somewhere */
		ev_push(w, w->now + REMEASURE_MS, EV_SCENARIO, SCENARIO_MEASURE, 0);
		return;
	}
	if (w->opt->scenario == VOPR_SCENARIO_ROLLING)
		handoffs = (uint32_t)(w->res->handoffs - s->handoffs_before);
	*m = (struct vopr_scenario_measure){
		.done = true,
		.max = max,
		.mean = (double)total / live,
		.spread = max - min,
		.peak = s->peak,
		.moved = moved,
		.handoffs = handoffs,
	};
	s->measured = true;
	trace(w, "scenario measured: max %u min %u over %u gateways, peak %u, moved %u, handoffs %u", max, min, live,
	      s->peak, moved, handoffs);
}

void scenario_on_event(struct world *w, uint64_t what)
{
	if (what == SCENARIO_BEGIN)
		begin(w);
	else if (!w->scn.measured)
		measure(w);
}

void scenario_observe(struct world *w)
{
	struct scenario *s = &w->scn;

	if (!s->begun || s->measured)
		return;
	for (uint32_t i = 0; i < w->cfg.slots; i++) {
		uint32_t n = attached_at(&w->gw[i]);

		if (n > s->peak)
			s->peak = n;
	}
}
