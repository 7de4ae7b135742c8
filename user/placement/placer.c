/* SPDX-License-Identifier: Apache-2.0 */
/* placer.c - the placement rule with its search indexed.
 *
 * Two successor bitsets over ring positions answer the rule's two questions
 * in O(log points): `below` holds the points of active gateways whose load
 * is below `index_cap` (the first eligible point clockwise), `active` the
 * points of active gateways (the owner fallback).  A gateway's 128 bits flip
 * only when its eligibility changes; a decision whose cap differs from
 * index_cap re-derives eligibility for every gateway first (the cap moves
 * once per G arrivals when filling, never in steady churn).
 *
 * Invariants: for every gateway g, eligible[g] == (g active && load < index_cap)
 * and its points are in `below` iff eligible[g]; its points are in `active`
 * iff g is active; members == sum of live loads; n_active == active count. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ring/point_hash.h"
#include "ringsteer/placer.h"
#include "rule.h"
#include "succ_bitset.h"

struct rs_placer {
	const struct rs_ring *ring;
	size_t n_gw;
	struct rs_gateway_load *gws;
	bool *eligible;
	size_t *first_pos;  /* gateway g's positions: pos_of[first_pos[g] .. first_pos[g+1]) */
	uint32_t *pos_of;
	struct rs_succ_bitset below;
	struct rs_succ_bitset active;
	uint32_t index_cap;
	uint64_t members;
	uint32_t n_active;
	struct rs_point_hasher hasher; /* fetched once: most of a decision is the hash */
};

static void mark_points(struct rs_placer *p, struct rs_succ_bitset *set, size_t gw, bool on)
{
	for (size_t k = p->first_pos[gw]; k < p->first_pos[gw + 1]; k++) {
		if (on)
			rs_succ_bitset_set(set, p->pos_of[k]);
		else
			rs_succ_bitset_clear(set, p->pos_of[k]);
	}
}

static void refresh_eligible(struct rs_placer *p, size_t gw)
{
	bool want = rs_rule_active(&p->gws[gw]) && p->gws[gw].load < p->index_cap;

	if (want != p->eligible[gw]) {
		p->eligible[gw] = want;
		mark_points(p, &p->below, gw, want);
	}
}

static void use_cap(struct rs_placer *p, uint32_t cap)
{
	if (cap == p->index_cap)
		return;
	p->index_cap = cap;
	for (size_t g = 0; g < p->n_gw; g++)
		refresh_eligible(p, g);
}

void rs_placer_free(struct rs_placer *p)
{
	if (!p)
		return;
	rs_succ_bitset_fini(&p->below);
	rs_succ_bitset_fini(&p->active);
	rs_point_hasher_fini(&p->hasher);
	free(p->gws);
	free(p->eligible);
	free(p->first_pos);
	free(p->pos_of);
	free(p);
}

int rs_placer_new(const struct rs_ring *ring, struct rs_placer **out)
{
	size_t n_points = rs_ring_point_count(ring);
	struct rs_placer *p = calloc(1, sizeof(*p));
	size_t *fill = NULL;
	int err = -ENOMEM;

	if (!p)
		return -ENOMEM;
	p->ring = ring;
	p->n_gw = rs_ring_gateway_count(ring);
	p->gws = calloc(p->n_gw ? p->n_gw : 1, sizeof(*p->gws));
	p->eligible = calloc(p->n_gw ? p->n_gw : 1, sizeof(*p->eligible));
	p->first_pos = calloc(p->n_gw + 1, sizeof(*p->first_pos));
	p->pos_of = calloc(n_points ? n_points : 1, sizeof(*p->pos_of));
	fill = calloc(p->n_gw ? p->n_gw : 1, sizeof(*fill));
	if (!p->gws || !p->eligible || !p->first_pos || !p->pos_of || !fill)
		goto cleanup;
	err = rs_succ_bitset_init(&p->below, n_points);
	if (!err)
		err = rs_succ_bitset_init(&p->active, n_points);
	if (!err)
		err = rs_point_hasher_init(&p->hasher);
	if (err)
		goto cleanup;

	for (size_t i = 0; i < n_points; i++)
		p->first_pos[rs_ring_point_gateway(ring, i) + 1]++;
	for (size_t g = 0; g < p->n_gw; g++) {
		p->first_pos[g + 1] += p->first_pos[g];
		fill[g] = p->first_pos[g];
	}
	for (size_t i = 0; i < n_points; i++)
		p->pos_of[fill[rs_ring_point_gateway(ring, i)]++] = (uint32_t)i;

	/* Every gateway starts live, not draining, empty: all points in both sets. */
	p->n_active = (uint32_t)p->n_gw;
	p->index_cap = rs_cap(1, p->n_active);
	for (size_t g = 0; g < p->n_gw; g++) {
		p->gws[g].live = true;
		mark_points(p, &p->active, g, true);
		refresh_eligible(p, g);
	}
	*out = p;
	p = NULL;
	err = 0;
cleanup:
	free(fill);
	rs_placer_free(p);
	return err;
}

int rs_placer_set(struct rs_placer *p, uint32_t gw, const struct rs_gateway_load *st)
{
	struct rs_gateway_load *cur;
	bool was_active, now_active;

	if (gw >= p->n_gw)
		return -EINVAL;
	cur = &p->gws[gw];
	was_active = rs_rule_active(cur);
	now_active = rs_rule_active(st);
	if (cur->live)
		p->members -= cur->load;
	if (st->live)
		p->members += st->load;
	p->n_active += (uint32_t)now_active - (uint32_t)was_active;
	*cur = *st;
	if (was_active != now_active)
		mark_points(p, &p->active, gw, now_active);
	refresh_eligible(p, gw);
	return 0;
}

int rs_placer_get(const struct rs_placer *p, uint32_t gw, struct rs_gateway_load *st)
{
	if (gw >= p->n_gw)
		return -EINVAL;
	*st = p->gws[gw];
	return 0;
}

int rs_placer_add_load(struct rs_placer *p, uint32_t gw, int32_t delta)
{
	struct rs_gateway_load st;
	int64_t load;

	if (gw >= p->n_gw)
		return -EINVAL;
	st = p->gws[gw];
	load = (int64_t)st.load + delta;
	if (load < 0 || load > UINT32_MAX)
		return -ERANGE;
	st.load = (uint32_t)load;
	return rs_placer_set(p, gw, &st);
}

int rs_placer_decide(struct rs_placer *p, const struct rs_arrival *a, struct rs_decision *out)
{
	size_t n_points = rs_ring_point_count(p->ring), pos, hit;
	bool uncount_stale;
	uint64_t point;
	uint32_t cap;
	int err;

	err = rs_rule_check_arrival(a, p->gws, p->n_gw);
	if (err)
		return err;
	uncount_stale = rs_rule_stale_counted(a, p->gws);
	cap = rs_cap(p->members - uncount_stale + 1, p->n_active);
	if (rs_rule_try_stay(a, p->gws, cap, out))
		return 0;
	if (p->n_active == 0 || n_points == 0)
		return -ENOENT;
	err = rs_rule_member_point(a, &p->hasher, &point);
	if (err)
		return err;

	/* The member's own old record must not make its gateway look full:
	 * take it out of the load for the search, then put it back. */
	if (uncount_stale)
		rs_placer_add_load(p, (uint32_t)a->stale, -1);
	use_cap(p, cap);
	pos = rs_ring_successor(p->ring, point);
	hit = rs_succ_bitset_next_wrap(&p->below, pos);
	if (hit != RS_SUCC_NONE)
		rs_rule_placed(a, rs_ring_point_gateway(p->ring, hit), cap, false, out);
	else
		rs_rule_placed(a, rs_ring_point_gateway(p->ring, rs_succ_bitset_next_wrap(&p->active, pos)),
			       cap, true, out);
	if (uncount_stale)
		rs_placer_add_load(p, (uint32_t)a->stale, +1);
	return 0;
}

int rs_placer_place(struct rs_placer *p, const struct rs_arrival *a, struct rs_decision *out)
{
	int err = rs_placer_decide(p, a, out);

	if (err)
		return err;
	if (a->stale >= 0 && p->gws[a->stale].load > 0)
		rs_placer_add_load(p, (uint32_t)a->stale, -1);
	return rs_placer_add_load(p, out->gateway, +1);
}

uint64_t rs_placer_members(const struct rs_placer *p)
{
	return p->members;
}

uint32_t rs_placer_active(const struct rs_placer *p)
{
	return p->n_active;
}
