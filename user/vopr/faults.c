/* SPDX-License-Identifier: Apache-2.0 */
/* faults.c - the faults a seed chooses, and what each does when it starts
 * and when it heals: gateway crashes (the process, or its host) and their
 * restarts, SIGTERM drains (one or several gateways at once, now and then
 * a second SIGTERM mid-drain), joins, supervisor restarts (graceful,
 * crashed, or with the host), token refreshes, blips (a reset), half-open
 * connections, store outages (refusing or hanging), a store failover that
 * loses what was not acknowledged, a slow store, partitions (a gateway and
 * a member, a gateway and every member, a gateway and the store), and
 * clock steps (a gateway's, a member's or the store's wall clock, small or
 * hours, put back when it heals, as NTP would).
 *
 * The plan is drawn from its own generator before the run (rng_plan), so
 * it is the same whatever the network draws.  A fault that finds nothing
 * to act on (its gateway already down, its member not attached) is
 * skipped and counts for nothing. */
#include <stdio.h>
#include <string.h>

#include "vopr/world.h"

static const char *const names[F_KIND_COUNT] = {
	[F_GW_CRASH] = "gateway-crash",     [F_GW_SIGTERM] = "sigterm-drain",   [F_GW_KILL_DRAIN] = "sigterm-twice",
	[F_GW_JOIN] = "gateway-join",       [F_MB_RESTART] = "member-restart",  [F_MB_REFRESH] = "token-refresh",
	[F_MB_BLIP] = "blip",               [F_HALF_OPEN] = "half-open",        [F_STORE_OUTAGE] = "store-outage",
	[F_STORE_FAILOVER] = "store-failover", [F_STORE_SLOW] = "store-slow",   [F_PARTITION] = "partition",
	[F_CLOCK_STEP] = "clock-step",
};

const char *fault_name(enum fault_kind k)
{
	return k < F_KIND_COUNT ? names[k] : "?";
}

const char *vopr_fault_name(unsigned kind)
{
	return kind < F_KIND_COUNT ? names[kind] : NULL;
}

/* How likely each kind is, out of the sum. */
static const uint32_t weights[F_KIND_COUNT] = {
	[F_GW_CRASH] = 10,   [F_GW_SIGTERM] = 9,   [F_GW_KILL_DRAIN] = 2, [F_GW_JOIN] = 4,
	[F_MB_RESTART] = 12, [F_MB_REFRESH] = 6,   [F_MB_BLIP] = 10,      [F_HALF_OPEN] = 5,
	[F_STORE_OUTAGE] = 8, [F_STORE_FAILOVER] = 5, [F_STORE_SLOW] = 4, [F_PARTITION] = 10,
	[F_CLOCK_STEP] = 6,
};

static enum fault_kind draw_kind(struct sim_rng *r)
{
	uint32_t sum = 0, x;

	for (int k = 0; k < F_KIND_COUNT; k++)
		sum += weights[k];
	x = sim_rng_below(r, sum);
	for (int k = 0; k < F_KIND_COUNT; k++) {
		if (x < weights[k])
			return (enum fault_kind)k;
		x -= weights[k];
	}
	return F_MB_BLIP;
}

void faults_plan(struct world *w)
{
	struct sim_rng *r = &w->rng_plan;
	const struct wconfig *k = &w->cfg;
	uint32_t joins = k->gateways;
	int64_t aftermath = 4 * (int64_t)k->heartbeat_ms;

	w->n_faults = 0;
	for (uint32_t i = 0; i < k->n_faults && w->n_faults < W_FAULTS; i++) {
		struct fault f = { .at = draw(r, 3000, k->faults_until), .kind = draw_kind(r) };

		switch (f.kind) {
		case F_GW_CRASH:
			f.a = (int)sim_rng_below(r, k->slots);
			f.b = chance(r, 30);
			f.dur = draw(r, 500, 40000);
			break;
		case F_GW_SIGTERM:
			f.a = 1 << sim_rng_below(r, k->slots);
			if (chance(r, 30))
				f.a |= 1 << sim_rng_below(r, k->slots); /* several at once */
			f.dur = draw(r, 1000, 20000);
			break;
		case F_GW_KILL_DRAIN:
			f.a = (int)sim_rng_below(r, k->slots);
			f.c = draw(r, 50, 5000); /* the second SIGTERM, after the first */
			f.dur = f.c + draw(r, 1000, 10000);
			break;
		case F_GW_JOIN:
			if (joins >= k->slots)
				continue;
			f.a = (int)joins++;
			f.dur = aftermath;
			break;
		case F_MB_RESTART:
			f.a = (int)sim_rng_below(r, k->members);
			f.b = (int)sim_rng_below(r, 3);
			f.dur = aftermath + 5000;
			break;
		case F_MB_REFRESH:
		case F_MB_BLIP:
		case F_HALF_OPEN:
			f.a = (int)sim_rng_below(r, k->members);
			f.dur = aftermath;
			break;
		case F_STORE_OUTAGE:
			f.b = chance(r, 50);
			f.dur = draw(r, 500, 30000);
			break;
		case F_STORE_FAILOVER:
			f.dur = draw(r, 200, 8000);
			break;
		case F_STORE_SLOW:
			f.dur = draw(r, 1000, 15000);
			break;
		case F_PARTITION:
			f.b = chance(r, 25) ? PART_GW_STORE : PART_GW_MB;
			f.a = (int)sim_rng_below(r, k->slots);
			f.c = f.b == PART_GW_MB && chance(r, 60) ? (int64_t)sim_rng_below(r, k->members) : -1;
			f.dur = draw(r, 500, 40000);
			break;
		case F_CLOCK_STEP:
			f.a = (int)sim_rng_below(r, k->slots + k->members + 1); /* the last: the store */
			f.c = chance(r, 50) ? draw(r, 1, 1500) : draw(r, 60000, 3 * 3600 * 1000);
			if (chance(r, 50))
				f.c = -f.c;
			f.dur = draw(r, 2000, 60000);
			break;
		case F_KIND_COUNT:
			continue;
		}
		w->faults[w->n_faults++] = f;
	}
	for (uint32_t i = 0; i < w->n_faults; i++) {
		ev_push(w, w->faults[i].at, EV_FAULT, i, FAULT_START);
		ev_push(w, w->faults[i].at + w->faults[i].dur, EV_FAULT, i, FAULT_END);
	}
}

bool fault_active(const struct world *w, enum fault_kind k, int a)
{
	for (uint32_t i = 0; i < w->n_faults; i++)
		if (w->faults[i].active && w->faults[i].kind == k && (a < 0 || w->faults[i].a == a))
			return true;
	return false;
}

/* The wall clock a step of node n moves: gateway n, member n - slots, or
 * (the last) the store's. */
static int64_t *stepped_clock(struct world *w, int n)
{
	int slots = (int)w->cfg.slots, members = (int)w->cfg.members;

	if (n < slots)
		return &w->gw[n].clk.wall_off;
	if (n < slots + members)
		return &w->mb[n - slots].clk.wall_off;
	return &w->store.wall_off;
}

/* Whether node n is there for its clock to be stepped. */
static bool clock_there(const struct world *w, int n)
{
	int slots = (int)w->cfg.slots, members = (int)w->cfg.members;

	if (n < slots)
		return w->gw[n].exists;
	if (n < slots + members)
		return w->mb[n - slots].up;
	return true;
}

static int free_partition(struct world *w)
{
	for (int i = 0; i < W_PARTITIONS; i++)
		if (!w->parts[i].on)
			return i;
	return -1;
}

/* Starts fault f; false when it finds nothing to act on. */
static bool start(struct world *w, uint32_t i)
{
	struct fault *f = &w->faults[i];
	struct gw_node *g = &w->gw[f->a >= 0 && f->a < W_GATEWAYS ? f->a : 0];
	struct mb_node *m = &w->mb[f->a >= 0 && f->a < W_MEMBERS ? f->a : 0];
	struct conn *c;
	int p;

	switch (f->kind) {
	case F_GW_CRASH:
		if (!g->exists || !g->up)
			return false;
		inv_fault_started(w, f);
		gw_crash(w, g, f->b);
		g->held_by = (int)i;
		return true;
	case F_GW_SIGTERM: {
		bool any = false;

		for (int k = 0; k < W_GATEWAYS; k++) {
			struct gw_node *t = &w->gw[k];

			if (!(f->a & (1 << k)) || !t->exists || !t->up || t->stopping)
				continue;
			if (!any)
				inv_fault_started(w, f);
			any = true;
			t->held_by = (int)i;
			gw_sigterm(w, t);
		}
		return any;
	}
	case F_GW_KILL_DRAIN:
		if (!g->exists || !g->up || g->stopping)
			return false;
		inv_fault_started(w, f);
		g->held_by = (int)i;
		gw_sigterm(w, g);
		ev_push(w, w->now + f->c, EV_FAULT, i, FAULT_SECOND_SIGTERM);
		return true;
	case F_GW_JOIN:
		if (g->exists)
			return false;
		inv_fault_started(w, f);
		g->exists = true;
		gw_start(w, g);
		return true;
	case F_MB_RESTART:
		if (!m->up)
			return false;
		inv_fault_started(w, f);
		mb_restart(w, m, f->b);
		return true;
	case F_MB_REFRESH:
		if (!m->up)
			return false;
		inv_fault_started(w, f);
		mb_refresh(w, m);
		return true;
	case F_MB_BLIP:
	case F_HALF_OPEN:
		c = mb_attached_conn(w, m);
		if (!c || !c->synced)
			return false;
		inv_fault_started(w, f);
		trace(w, "%s on m-%u conn %u", fault_name(f->kind), m->idx, c->id);
		if (f->kind == F_HALF_OPEN) {
			c->blackhole = true;
		} else {
			net_send(w, c, TO_GW, SEG_RST, NULL, 0, false);
			net_send(w, c, TO_MB, SEG_RST, NULL, 0, false);
		}
		return true;
	case F_STORE_OUTAGE:
		if (w->store.mode != STORE_UP)
			return false;
		inv_fault_started(w, f);
		w->store.mode = f->b ? STORE_HANGING : STORE_REFUSING;
		return true;
	case F_STORE_FAILOVER:
		if (w->store.mode != STORE_UP)
			return false;
		inv_fault_started(w, f);
		store_failover(w);
		w->store.mode = STORE_REFUSING;
		return true;
	case F_STORE_SLOW:
		if (w->store.slow)
			return false;
		inv_fault_started(w, f);
		w->store.slow = true;
		return true;
	case F_PARTITION:
		p = free_partition(w);
		if (p < 0 || !g->exists)
			return false;
		inv_fault_started(w, f);
		w->parts[p] = (struct partition){ .on = true, .until = f->at + f->dur, .kind = f->b, .a = f->a,
						  .b = (int)f->c };
		f->d = p;
		return true;
	case F_CLOCK_STEP:
		if (!clock_there(w, f->a))
			return false;
		inv_fault_started(w, f);
		*stepped_clock(w, f->a) += f->c;
		return true;
	case F_KIND_COUNT:
		break;
	}
	return false;
}

/* Heals fault i; false when its healing waits (a drain not over yet: the
 * gateway starts again once it exits, and the fault ends then). */
static bool heal(struct world *w, uint32_t i)
{
	struct fault *f = &w->faults[i];
	struct gw_node *g = &w->gw[f->a >= 0 && f->a < W_GATEWAYS ? f->a : 0];
	bool now = true;

	switch (f->kind) {
	case F_GW_CRASH:
		if (g->held_by == (int)i && !g->up) {
			g->held_by = -1;
			gw_start(w, g);
		}
		break;
	case F_GW_SIGTERM:
	case F_GW_KILL_DRAIN:
		for (int k = 0; k < W_GATEWAYS; k++) {
			struct gw_node *t = &w->gw[k];

			if (!t->exists || t->held_by != (int)i)
				continue;
			if (t->up) {
				t->restart_on_exit = true; /* still draining */
				now = false;
				continue;
			}
			t->held_by = -1;
			gw_start(w, t);
		}
		break;
	case F_STORE_OUTAGE:
	case F_STORE_FAILOVER:
		w->store.mode = STORE_UP;
		break;
	case F_STORE_SLOW:
		w->store.slow = false;
		break;
	case F_PARTITION:
		w->parts[f->d].on = false;
		break;
	case F_CLOCK_STEP:
		*stepped_clock(w, f->a) -= f->c;
		break;
	default:
		break;
	}
	return now;
}

void fault_on(struct world *w, uint32_t i, int phase)
{
	struct fault *f = &w->faults[i];

	switch (phase) {
	case FAULT_START:
		if (!start(w, i))
			return;
		f->active = true;
		w->faults_active++;
		w->res->applied[f->kind]++;
		trace(w, "fault %u %s starts (a=%d b=%d c=%lld) for %lld ms", i, fault_name(f->kind), f->a, f->b,
		      (long long)f->c, (long long)f->dur);
		return;
	case FAULT_SECOND_SIGTERM:
		if (f->active && w->gw[f->a].up && w->gw[f->a].held_by == (int)i)
			gw_sigterm(w, &w->gw[f->a]);
		return;
	case FAULT_END:
		if (!f->active || !heal(w, i))
			return;
		break;
	case FAULT_RESTARTED:
		/* A drained gateway held by it started again: ended when none is left. */
		if (!f->active)
			return;
		for (int k = 0; k < W_GATEWAYS; k++)
			if (w->gw[k].held_by == (int)i)
				return;
		break;
	default:
		return;
	}
	f->active = false;
	w->faults_active--;
	w->last_heal = w->now;
	if (!w->faults_active)
		w->settled_at = w->now + 2 * w->cfg.heartbeat_ms + w->cfg.delay_max_ms; /* heartbeats since, both ways */
	trace(w, "fault %u %s heals", i, fault_name(f->kind));
}
