/* SPDX-License-Identifier: Apache-2.0 */
/* policy.c - where each policy sends a supervisor that arrives through the
 * Service.  Every policy chooses among active gateways only (live, not
 * draining).  The load-aware ones (least connections, two choices) are given
 * exact global counts, which a per-node kube-proxy never has: they are the
 * best such a balancer could do, not what one does.  The ring policies use
 * the library: rs_ring_owner / rs_ring_walk for the plain ring, struct
 * rs_placer for the bounded ring, so the figures are the library's own. */
#include <assert.h>
#include <errno.h>

#include "sim.h"

const char *sim_policy_name(enum sim_policy p)
{
	switch (p) {
	case SIM_RANDOM:
		return "random";
	case SIM_ROUND_ROBIN:
		return "round-robin";
	case SIM_LEAST_CONN:
		return "least-conn";
	case SIM_TWO_CHOICES:
		return "two-choices";
	case SIM_RING:
		return "ring";
	case SIM_BOUNDED_RING:
		return "bounded-ring";
	case SIM_POLICY_COUNT:
		break;
	}
	return "unknown";
}

/* Lists the active slots in f->scratch; returns how many. */
static uint32_t list_active(struct sim_fleet *f)
{
	uint32_t n = 0;

	for (uint32_t slot = 0; slot < f->n_gws; slot++)
		if (sim_fleet_active(f, slot))
			f->scratch[n++] = slot;
	return n;
}

static int pick_random(struct sim_fleet *f, uint32_t *slot)
{
	uint32_t n = list_active(f);

	if (n == 0)
		return -ENOENT;
	*slot = f->scratch[sim_rng_below(&f->rng, n)];
	return 0;
}

static int pick_round_robin(struct sim_fleet *f, uint32_t *slot)
{
	for (uint32_t k = 0; k < f->n_gws; k++) {
		uint32_t c = (f->cursor + k) % f->n_gws;

		if (sim_fleet_active(f, c)) {
			*slot = c;
			f->cursor = (c + 1) % f->n_gws;
			return 0;
		}
	}
	return -ENOENT;
}

static int pick_least_conn(struct sim_fleet *f, uint32_t *slot)
{
	uint32_t best = SIM_NONE;

	for (uint32_t c = 0; c < f->n_gws; c++)
		if (sim_fleet_active(f, c) && (best == SIM_NONE || f->gws[c].load < f->gws[best].load))
			best = c;
	if (best == SIM_NONE)
		return -ENOENT;
	*slot = best;
	return 0;
}

static int pick_two_choices(struct sim_fleet *f, uint32_t *slot)
{
	uint32_t n = list_active(f), i, j;

	if (n == 0)
		return -ENOENT;
	i = sim_rng_below(&f->rng, n);
	if (n == 1) {
		*slot = f->scratch[i];
		return 0;
	}
	j = sim_rng_below(&f->rng, n - 1);
	j += j >= i; /* a second, distinct gateway */
	i = f->scratch[i];
	j = f->scratch[j];
	*slot = f->gws[j].load < f->gws[i].load ? j : i;
	return 0;
}

/* The ring owner among active gateways: the owner, or when it is inactive
 * (draining, dead) the next distinct gateway clockwise that is active -
 * the owner on the ring without the inactive ones. */
static int pick_ring(struct sim_fleet *f, uint32_t s, uint32_t *slot)
{
	const char *member = sim_fleet_member(f, s);
	int owner = rs_ring_owner(f->ring, member);
	size_t n;

	if (owner < 0)
		return owner;
	if (sim_fleet_active(f, f->slot_of[owner])) {
		*slot = f->slot_of[owner];
		return 0;
	}
	n = rs_ring_walk(f->ring, member, f->scratch, f->gws_cap);
	for (size_t k = 0; k < n; k++) {
		if (sim_fleet_active(f, f->slot_of[f->scratch[k]])) {
			*slot = f->slot_of[f->scratch[k]];
			return 0;
		}
	}
	return -ENOENT;
}

/* The bounded ring: a Service arrival; an old session of the same member
 * still counted on a live gateway is its stale record. */
static int place_bounded(struct sim_fleet *f, uint32_t s)
{
	uint32_t old = f->at[s];
	struct rs_arrival a = {
		.member_id = sim_fleet_member(f, s),
		.at = -1,
		.stale = -1,
	};
	struct rs_decision d;
	int err;

	if (old != SIM_NONE && f->gws[old].live && f->ring_of[old] != SIM_NONE)
		a.stale = (int)f->ring_of[old];
	err = rs_placer_place(f->placer, &a, &d);
	if (err)
		return err;
	if (d.gateway >= rs_ring_gateway_count(f->ring))
		return -EPROTO;
	sim_fleet_move(f, s, f->slot_of[d.gateway]);
	return 0;
}

int sim_policy_place(struct sim_fleet *f, uint32_t s)
{
	uint32_t slot = SIM_NONE;
	int err = -EINVAL;

	if (f->policy == SIM_BOUNDED_RING)
		return place_bounded(f, s);

	/* The old session ends before the new one is counted anywhere. */
	sim_fleet_detach(f, s);
	switch (f->policy) {
	case SIM_RANDOM:
		err = pick_random(f, &slot);
		break;
	case SIM_ROUND_ROBIN:
		err = pick_round_robin(f, &slot);
		break;
	case SIM_LEAST_CONN:
		err = pick_least_conn(f, &slot);
		break;
	case SIM_TWO_CHOICES:
		err = pick_two_choices(f, &slot);
		break;
	case SIM_RING:
		err = pick_ring(f, s, &slot);
		break;
	case SIM_BOUNDED_RING:
	case SIM_POLICY_COUNT:
		break;
	}
	if (err)
		return err;
	assert(sim_fleet_active(f, slot));
	sim_fleet_move(f, s, slot);
	return 0;
}
