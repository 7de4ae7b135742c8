/* SPDX-License-Identifier: Apache-2.0 */
/* scenario.c - the events the simulator puts a filled fleet through: every
 * supervisor restarting, a surge-first rolling restart of every gateway, and
 * the death of one gateway.  Each ends with sim_fleet_check(), so a figure
 * is only printed for a fleet whose books balance. */
#include <errno.h>
#include <stdlib.h>

#include "ringsteer/drain.h"
#include "sim.h"

const char *sim_scenario_title(enum sim_scenario sc)
{
	switch (sc) {
	case SIM_FILL:
		return "fill: S supervisors arrive one by one";
	case SIM_RESTART_SUPERVISORS:
		return "restart every supervisor: each in turn leaves and arrives again";
	case SIM_ROLLING_RESTART:
		return "surge-first rolling restart of every gateway: add a replacement, drain the old one, remove it";
	case SIM_KILL_GATEWAY:
		return "kill one gateway: its supervisors reconnect through the Service";
	case SIM_SCENARIO_COUNT:
		break;
	}
	return "unknown";
}

int sim_fill(struct sim_fleet *f)
{
	for (uint32_t s = 0; s < f->n_sups; s++) {
		int err = sim_policy_place(f, s);

		if (err)
			return err;
	}
	return 0;
}

/* Scratch space for moving the supervisors of one gateway. */
struct sim_batch {
	uint32_t *sups;        /* supervisor indices */
	const char **members;  /* their member ids (drain plan) */
	uint32_t *targets;     /* ring indices (drain plan) */
	uint32_t n;
};

static int batch_init(struct sim_batch *b, uint32_t cap)
{
	size_t room = cap ? cap : 1;

	b->n = 0;
	b->sups = calloc(room, sizeof(*b->sups));
	b->members = calloc(room, sizeof(*b->members));
	b->targets = calloc(room, sizeof(*b->targets));
	return b->sups && b->members && b->targets ? 0 : -ENOMEM;
}

static void batch_fini(struct sim_batch *b)
{
	free(b->sups);
	free(b->members);
	free(b->targets);
}

/* Drains slot and removes it: every supervisor on it is handed off, by
 * rs_drain_plan for the bounded ring and by the policy otherwise. */
static int drain_gateway(struct sim_fleet *f, uint32_t slot, struct sim_batch *b)
{
	int err;

	b->n = 0;
	for (uint32_t s = 0; s < f->n_sups; s++) {
		if (f->at[s] != slot)
			continue;
		b->members[b->n] = sim_fleet_member(f, s);
		b->sups[b->n++] = s;
	}
	err = sim_fleet_set_draining(f, slot);
	if (err)
		return err;
	if (f->policy == SIM_BOUNDED_RING) {
		err = rs_drain_plan(f->placer, f->ring_of[slot], b->members, b->n, b->targets);
		if (err)
			return err;
		for (uint32_t i = 0; i < b->n; i++)
			sim_fleet_move(f, b->sups[i], f->slot_of[b->targets[i]]);
	} else {
		for (uint32_t i = 0; i < b->n; i++) {
			err = sim_policy_place(f, b->sups[i]);
			if (err)
				return err;
		}
	}
	f->handoffs += b->n;
	return sim_fleet_remove_gateway(f, slot);
}

static int rolling_restart(struct sim_fleet *f, uint64_t generation, struct sim_batch *b)
{
	uint32_t old = f->n_gws;

	for (uint32_t i = 0; i < old; i++) {
		uint32_t fresh;
		int err;

		if (!f->gws[i].live)
			continue;
		err = sim_fleet_add_gateway(f, generation, i, &fresh);
		if (!err)
			err = drain_gateway(f, i, b);
		if (err)
			return err;
	}
	return 0;
}

/* Shuffles a[0..n) uniformly (Fisher-Yates). */
static void shuffle(uint32_t *a, uint32_t n, uint64_t seed)
{
	struct sim_rng r;

	sim_rng_seed(&r, seed);
	for (uint32_t i = n; i > 1; i--) {
		uint32_t j = sim_rng_below(&r, i), t = a[i - 1];

		a[i - 1] = a[j];
		a[j] = t;
	}
}

static int restart_supervisors(struct sim_fleet *f, uint64_t order_seed, struct sim_batch *b)
{
	for (uint32_t s = 0; s < f->n_sups; s++)
		b->sups[s] = s;
	b->n = f->n_sups;
	shuffle(b->sups, b->n, order_seed);
	for (uint32_t i = 0; i < b->n; i++) {
		int err = sim_policy_place(f, b->sups[i]);

		if (err)
			return err;
	}
	return 0;
}

static int kill_gateway(struct sim_fleet *f, uint32_t victim, uint64_t order_seed, struct sim_batch *b)
{
	int err = sim_fleet_kill(f, victim, b->sups, &b->n);

	if (err)
		return err;
	shuffle(b->sups, b->n, order_seed);
	for (uint32_t i = 0; i < b->n; i++) {
		err = sim_policy_place(f, b->sups[i]);
		if (err)
			return err;
	}
	f->handoffs += b->n;
	return 0;
}

int sim_scenario_run(struct sim_fleet *f, enum sim_scenario sc, const struct sim_events *ev)
{
	struct sim_batch b;
	int err;

	err = batch_init(&b, f->n_sups);
	if (err)
		goto cleanup;
	switch (sc) {
	case SIM_FILL:
		break;
	case SIM_RESTART_SUPERVISORS:
		err = restart_supervisors(f, ev->order_seed, &b);
		break;
	case SIM_ROLLING_RESTART:
		err = rolling_restart(f, ev->next_generation, &b);
		break;
	case SIM_KILL_GATEWAY:
		err = kill_gateway(f, ev->victim, ev->order_seed, &b);
		break;
	case SIM_SCENARIO_COUNT:
		err = -EINVAL;
		break;
	}
	if (!err)
		err = sim_fleet_check(f);
cleanup:
	batch_fini(&b);
	return err;
}
