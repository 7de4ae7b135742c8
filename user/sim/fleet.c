/* SPDX-License-Identifier: Apache-2.0 */
/* fleet.c - the simulated fleet: gateway slots, which supervisor is attached
 * where, and for the ring policies a ring and placer kept in step with the
 * slots.
 *
 * Invariants (checked by sim_fleet_check): a gateway's load is the number of
 * supervisors attached to it; only live gateways have supervisors; the ring
 * holds exactly the slots that were added and not removed (a killed gateway
 * stays on it, not live, as a dead store row would); the placer's record of
 * each ring gateway equals its slot.  The placer borrows the ring, so it is
 * freed before any ring change and rebuilt after, carrying loads over by id
 * (ring indices follow id byte order and shift when ids come and go). */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

static bool uses_ring(enum sim_policy p)
{
	return p == SIM_RING || p == SIM_BOUNDED_RING;
}

static struct rs_gateway_load slot_state(const struct sim_gateway *g)
{
	return (struct rs_gateway_load){ .load = g->load, .live = g->live, .draining = g->draining };
}

/* Re-derives slot <-> ring index maps and a fresh placer after the ring
 * changed (the old placer must already be freed). */
static int sync_ring(struct sim_fleet *f)
{
	size_t n_ring;
	uint32_t mapped = 0;
	int err;

	if (!f->ring)
		return 0;
	assert(!f->placer);
	n_ring = rs_ring_gateway_count(f->ring);
	for (uint32_t slot = 0; slot < f->n_gws; slot++) {
		int idx = rs_ring_find(f->ring, f->gws[slot].id);

		f->ring_of[slot] = SIM_NONE;
		if (idx < 0)
			continue;
		if ((size_t)idx >= n_ring)
			return -EPROTO;
		f->ring_of[slot] = (uint32_t)idx;
		f->slot_of[idx] = slot;
		mapped++;
	}
	if (mapped != n_ring)
		return -EPROTO;
	if (f->policy != SIM_BOUNDED_RING)
		return 0;

	err = rs_placer_new(f->ring, &f->placer);
	if (err)
		return err;
	for (uint32_t idx = 0; idx < mapped; idx++) {
		struct rs_gateway_load st = slot_state(&f->gws[f->slot_of[idx]]);

		err = rs_placer_set(f->placer, idx, &st);
		if (err)
			return err;
	}
	return 0;
}

/* Tells the placer (if any) that slot's state changed. */
static int mirror_slot(struct sim_fleet *f, uint32_t slot)
{
	struct rs_gateway_load st;

	if (!f->placer || f->ring_of[slot] == SIM_NONE)
		return 0;
	st = slot_state(&f->gws[slot]);
	return rs_placer_set(f->placer, f->ring_of[slot], &st);
}

static void name_gateway(struct sim_gateway *g, uint64_t generation, uint32_t i)
{
	snprintf(g->id, sizeof(g->id), "gw-%" PRIu64 "-%" PRIu32, generation, i);
}

void sim_fleet_free(struct sim_fleet *f)
{
	if (!f)
		return;
	rs_placer_free(f->placer);
	rs_ring_free(f->ring);
	free(f->gws);
	free(f->member_ids);
	free(f->at);
	free(f->start);
	free(f->slot_of);
	free(f->ring_of);
	free(f->scratch);
	free(f);
}

int sim_fleet_new(const struct sim_fleet_config *cfg, struct sim_fleet **out)
{
	struct sim_fleet *f;
	const char **ids = NULL;
	int err = -EINVAL;

	if (cfg->policy >= SIM_POLICY_COUNT || cfg->gateways < 1 || cfg->gateways > SIM_GATEWAYS_MAX ||
	    cfg->supervisors > SIM_SUPERVISORS_MAX)
		return -EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->policy = cfg->policy;
	sim_rng_seed(&f->rng, cfg->seed);
	f->gws_cap = 2 * cfg->gateways;
	f->n_gws = cfg->gateways;
	f->n_sups = cfg->supervisors;

	err = -ENOMEM;
	f->gws = calloc(f->gws_cap, sizeof(*f->gws));
	f->slot_of = calloc(f->gws_cap, sizeof(*f->slot_of));
	f->ring_of = calloc(f->gws_cap, sizeof(*f->ring_of));
	f->scratch = calloc(f->gws_cap, sizeof(*f->scratch));
	f->member_ids = calloc(f->n_sups ? f->n_sups : 1, SIM_MEMBER_ID_MAX);
	f->at = calloc(f->n_sups ? f->n_sups : 1, sizeof(*f->at));
	f->start = calloc(f->n_sups ? f->n_sups : 1, sizeof(*f->start));
	ids = calloc(f->n_gws, sizeof(*ids));
	if (!f->gws || !f->slot_of || !f->ring_of || !f->scratch || !f->member_ids || !f->at || !f->start || !ids)
		goto cleanup;

	for (uint32_t slot = 0; slot < f->n_gws; slot++) {
		name_gateway(&f->gws[slot], cfg->generation, slot);
		f->gws[slot].live = true;
		ids[slot] = f->gws[slot].id;
	}
	for (uint32_t s = 0; s < f->n_sups; s++) {
		snprintf(f->member_ids + (size_t)s * SIM_MEMBER_ID_MAX, SIM_MEMBER_ID_MAX, "sup-%" PRIu64,
			 cfg->member_base + s);
		f->at[s] = SIM_NONE;
		f->start[s] = SIM_NONE;
	}
	if (uses_ring(f->policy)) {
		err = rs_ring_new(ids, f->n_gws, &f->ring);
		if (err)
			goto cleanup;
		err = sync_ring(f);
		if (err)
			goto cleanup;
	}
	*out = f;
	f = NULL;
	err = 0;
cleanup:
	free(ids);
	sim_fleet_free(f);
	return err;
}

const char *sim_fleet_member(const struct sim_fleet *f, uint32_t s)
{
	assert(s < f->n_sups);
	return f->member_ids + (size_t)s * SIM_MEMBER_ID_MAX;
}

bool sim_fleet_active(const struct sim_fleet *f, uint32_t slot)
{
	return slot < f->n_gws && f->gws[slot].live && !f->gws[slot].draining;
}

void sim_fleet_move(struct sim_fleet *f, uint32_t s, uint32_t slot)
{
	uint32_t old = f->at[s];

	assert(slot < f->n_gws && f->gws[slot].live);
	if (old != SIM_NONE) {
		assert(f->gws[old].load > 0);
		f->gws[old].load--;
	}
	f->at[s] = slot;
	f->gws[slot].load++;
	if (f->gws[slot].load > f->peak)
		f->peak = f->gws[slot].load;
}

void sim_fleet_detach(struct sim_fleet *f, uint32_t s)
{
	uint32_t old = f->at[s];

	if (old == SIM_NONE)
		return;
	assert(f->gws[old].load > 0);
	f->gws[old].load--;
	f->at[s] = SIM_NONE;
}

int sim_fleet_add_gateway(struct sim_fleet *f, uint64_t generation, uint32_t i, uint32_t *slot)
{
	struct sim_gateway *g;
	int err;

	if (f->n_gws == f->gws_cap)
		return -ENOSPC;
	g = &f->gws[f->n_gws];
	memset(g, 0, sizeof(*g));
	name_gateway(g, generation, i);
	g->live = true;
	if (f->ring) {
		rs_placer_free(f->placer);
		f->placer = NULL;
		err = rs_ring_add(f->ring, g->id);
		if (err)
			return err;
	}
	*slot = f->n_gws++;
	return sync_ring(f);
}

int sim_fleet_set_draining(struct sim_fleet *f, uint32_t slot)
{
	if (slot >= f->n_gws || !f->gws[slot].live)
		return -EINVAL;
	f->gws[slot].draining = true;
	return mirror_slot(f, slot);
}

int sim_fleet_remove_gateway(struct sim_fleet *f, uint32_t slot)
{
	int err;

	if (slot >= f->n_gws || !f->gws[slot].live || f->gws[slot].load != 0)
		return -EINVAL;
	f->gws[slot].live = false;
	f->gws[slot].draining = false;
	if (!f->ring)
		return 0;
	rs_placer_free(f->placer);
	f->placer = NULL;
	err = rs_ring_remove(f->ring, f->gws[slot].id);
	if (err)
		return err;
	return sync_ring(f);
}

int sim_fleet_kill(struct sim_fleet *f, uint32_t slot, uint32_t *victims, uint32_t *n)
{
	*n = 0;
	if (slot >= f->n_gws || !f->gws[slot].live)
		return -EINVAL;
	for (uint32_t s = 0; s < f->n_sups; s++) {
		if (f->at[s] != slot)
			continue;
		f->at[s] = SIM_NONE;
		victims[(*n)++] = s;
	}
	assert(*n == f->gws[slot].load);
	f->gws[slot].load = 0;
	f->gws[slot].live = false;
	f->gws[slot].draining = false;
	return mirror_slot(f, slot);
}

void sim_fleet_begin(struct sim_fleet *f)
{
	memcpy(f->start, f->at, (size_t)f->n_sups * sizeof(*f->at));
	f->peak = 0;
	for (uint32_t slot = 0; slot < f->n_gws; slot++)
		if (f->gws[slot].live && f->gws[slot].load > f->peak)
			f->peak = f->gws[slot].load;
	f->handoffs = 0;
}

int sim_fleet_check(const struct sim_fleet *f)
{
	uint32_t *count = calloc(f->n_gws, sizeof(*count));
	int err = -EPROTO;

	if (!count)
		return -ENOMEM;
	for (uint32_t s = 0; s < f->n_sups; s++) {
		uint32_t slot = f->at[s];

		if (slot >= f->n_gws || !f->gws[slot].live)
			goto cleanup;
		count[slot]++;
	}
	for (uint32_t slot = 0; slot < f->n_gws; slot++)
		if (count[slot] != f->gws[slot].load)
			goto cleanup;
	if (f->placer) {
		size_t n_ring = rs_ring_gateway_count(f->ring);

		for (uint32_t idx = 0; idx < n_ring; idx++) {
			const struct sim_gateway *g = &f->gws[f->slot_of[idx]];
			struct rs_gateway_load st;

			if (rs_placer_get(f->placer, idx, &st))
				goto cleanup;
			if (st.load != g->load || st.live != g->live || st.draining != g->draining)
				goto cleanup;
		}
	}
	err = 0;
cleanup:
	free(count);
	return err;
}

void sim_fleet_measure(const struct sim_fleet *f, struct sim_measure *m)
{
	uint32_t max = 0, min = UINT32_MAX, live = 0, moved = 0;

	for (uint32_t slot = 0; slot < f->n_gws; slot++) {
		const struct sim_gateway *g = &f->gws[slot];

		if (!g->live)
			continue;
		live++;
		if (g->load > max)
			max = g->load;
		if (g->load < min)
			min = g->load;
	}
	for (uint32_t s = 0; s < f->n_sups; s++)
		moved += f->at[s] != f->start[s];
	m->max = max;
	m->mean = live ? (double)f->n_sups / live : 0;
	m->spread = live ? max - min : 0;
	m->peak = f->peak > max ? f->peak : max;
	m->moved = moved;
	m->handoffs = (double)f->handoffs;
}
