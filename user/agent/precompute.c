/* SPDX-License-Identifier: Apache-2.0 */
/* precompute.c - where each known supervisor without a live session would be
 * placed if it arrived through the Service now (precompute.h).
 *
 * One placer per pass, loaded from the listing, answers every member in
 * O(log points): the rule's "first eligible point clockwise" is a successor
 * search in the placer's index, whatever the loads, where a walk per member
 * would visit ~G gateways each (every gateway but one full in steady churn).
 * Decisions leave the loads as listed: each member is placed as if it were
 * the only one arriving, which is what the connect it is pinned for will
 * meet (the gateway's own decision counts the others as they arrive). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "precompute.h"
#include "ringsteer/placer.h"

void agent_ring_cache_free(struct agent_ring_cache *rc)
{
	rs_ring_free(rc->ring);
	free(rc->ids);
	*rc = (struct agent_ring_cache){ 0 };
}

static bool cache_holds(const struct agent_ring_cache *rc, const struct rs_gateway_row *gws, size_t n)
{
	if (!rc->ring || rc->n != n)
		return false;
	for (size_t g = 0; g < n; g++)
		if (strcmp(rc->ids[g], gws[g].id) != 0)
			return false;
	return true;
}

/* The ring of gws, rebuilt only when their ids changed (hashing 128 points
 * per gateway is most of a rebuild). */
static int ring_of(struct agent_ring_cache *rc, const struct rs_gateway_row *gws, size_t n, struct rs_ring **out)
{
	const char **ids = NULL;
	char (*copy)[RS_ID_MAX + 1] = NULL;
	struct rs_ring *ring = NULL;
	int err = -ENOMEM;

	if (cache_holds(rc, gws, n)) {
		*out = rc->ring;
		return 0;
	}
	ids = calloc(n, sizeof(*ids));
	copy = calloc(n, sizeof(*copy));
	if (!ids || !copy)
		goto cleanup;
	for (size_t g = 0; g < n; g++) {
		ids[g] = gws[g].id;
		snprintf(copy[g], sizeof(copy[g]), "%s", gws[g].id);
	}
	err = rs_ring_new(ids, n, &ring);
	if (err)
		goto cleanup;
	agent_ring_cache_free(rc);
	rc->ring = ring;
	rc->ids = copy;
	rc->n = n;
	copy = NULL;
	*out = ring;
cleanup:
	free(copy);
	free(ids);
	return err;
}

/* The placer over ring with each gateway's state from gws and its load
 * counted from the live rows. */
static int placer_of(const struct rs_ring *ring, const struct rs_gateway_row *gws, size_t n_gws,
		     const struct rs_session_row *rows, size_t n, struct rs_placer **out)
{
	size_t n_ring = rs_ring_gateway_count(ring);
	struct rs_gateway_load *loads = calloc(n_ring ? n_ring : 1, sizeof(*loads));
	const char *last_gw = NULL;
	int last = -1, err;

	if (!loads)
		return -ENOMEM;
	for (size_t g = 0; g < n_gws; g++) {
		int idx = rs_ring_find(ring, gws[g].id);

		if (idx >= 0)
			loads[idx] = (struct rs_gateway_load){ .live = true,
							       .draining = gws[g].state == RS_GATEWAY_DRAINING };
	}
	for (size_t i = 0; i < n; i++) {
		if (!rows[i].live)
			continue;
		/* Rows come sorted by gateway: one search per gateway. */
		if (!last_gw || strcmp(last_gw, rows[i].gateway_id) != 0) {
			last_gw = rows[i].gateway_id;
			last = rs_ring_find(ring, last_gw);
		}
		if (last >= 0)
			loads[last].load++;
	}
	err = rs_placer_new(ring, out);
	for (size_t g = 0; !err && g < n_ring; g++)
		err = rs_placer_set(*out, (uint32_t)g, &loads[g]);
	if (err && *out) {
		rs_placer_free(*out);
		*out = NULL;
	}
	free(loads);
	return err;
}

int agent_precompute(struct agent_ring_cache *rc, const struct agent_known_set *s, const struct rs_gateway_row *gws,
		     size_t n_gws, const struct rs_session_row *rows, size_t n, agent_placed_fn fn, void *ctx)
{
	struct rs_placer *p = NULL;
	struct rs_ring *ring;
	int err;

	if (!n_gws || !s->n)
		return 0;
	err = ring_of(rc, gws, n_gws, &ring);
	if (err)
		return err;
	err = placer_of(ring, gws, n_gws, rows, n, &p);
	if (err)
		return err;
	for (size_t i = 0; i < s->n; i++) {
		const struct agent_known *k = &s->e[i];
		struct rs_arrival arr = { .member_id = k->member_id, .at = -1, .stale = -1, .has_point = true,
					  .point = k->point };
		struct rs_decision d;
		int rc_place;

		if (k->live)
			continue;
		rc_place = rs_placer_decide(p, &arr, &d);
		if (rc_place == -ENOENT)
			break; /* no gateway takes anyone: nothing to precompute */
		if (rc_place)
			continue; /* an id the rule refuses: not placed, as rs_place */
		err = fn(ctx, k, rs_ring_gateway_id(ring, d.gateway));
		if (err)
			break;
	}
	rs_placer_free(p);
	return err;
}
