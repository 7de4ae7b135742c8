/* SPDX-License-Identifier: Apache-2.0 */
/* bench_agent_precompute.c - one agent sync pass's precomputation (the
 * known supervisors noted from the sessions listing, and a placement for
 * each one without a live session) at 100 gateways and 65,000 known
 * supervisors, against the precomputation before the indexed placer, in
 * the same process on the same listing:
 *
 *   walk:    the known members' sources rewritten from every row, the ring
 *            built from the listing, live member ids sorted, then per known
 *            member a binary search in them and rs_place (SHA-256 of its
 *            id, a successor walk);
 *   indexed: agent_known_note + agent_known_forget + agent_precompute (ring
 *            kept while the gateway ids stay, points hashed once, one
 *            rs_placer per pass).
 *
 * The listing is the walk's worst case: loads placed by the rule itself at
 * eps = 0 with every gateway at cap but one (steady churn), so a walk
 * visits about half the gateways per member.  Both must answer the same;
 * figures are per pass (median of the runs) and their ratio, never
 * asserted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/precompute.h"
#include "ringsteer/placement.h"
#include "ringsteer/placer.h"

#define GATEWAYS 100
#define MEMBERS 65000
#define RUNS 15

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int dbl_cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

static int strcmp_ptr(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* Answers as member -> gateway index in the listing (sorted ids). */
struct tally {
	const struct rs_gateway_row *gws;
	size_t n_gws;
	uint32_t *gw_of; /* per known member, in known order */
	size_t n;
};

static int tally_gw(const struct tally *t, const char *id)
{
	size_t lo = 0, hi = t->n_gws;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(t->gws[mid].id, id);

		if (!c)
			return (int)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static int indexed_answer(void *ctx, const struct agent_known *k, const char *gateway_id)
{
	struct tally *t = ctx;

	(void)k;
	t->gw_of[t->n++] = (uint32_t)tally_gw(t, gateway_id);
	return 0;
}

/* The known supervisors before this change: sorted by member id, the source
 * rewritten from every row each pass. */
struct old_known {
	char member_id[RS_ID_MAX + 1];
	char source[RS_ENDPOINT_MAX + 1];
};

static int old_known_cmp(const void *x, const void *y)
{
	return strcmp(((const struct old_known *)x)->member_id, ((const struct old_known *)y)->member_id);
}

/* Its update in steady state (every member known already). */
static void old_known_update(struct old_known *known, size_t n_known, const struct rs_session_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct old_known probe, *k;

		if (!rows[i].source[0])
			continue;
		snprintf(probe.member_id, sizeof(probe.member_id), "%s", rows[i].member_id);
		k = bsearch(&probe, known, n_known, sizeof(*k), old_known_cmp);
		if (k)
			snprintf(k->source, sizeof(k->source), "%s", rows[i].source);
	}
}

/* The precomputation before the placer (user/agent/sync.c before it moved to
 * precompute.c), its map writes left out as they are here. */
static int walk_pass(struct old_known *known, size_t n_known, const struct rs_gateway_row *gws, size_t n_gws,
		     const struct rs_session_row *rows, size_t n, struct tally *t)
{
	const char *ids[GATEWAYS];
	struct rs_gateway_load loads[GATEWAYS] = { 0 };
	const char **live = malloc(n * sizeof(*live));
	struct rs_ring *ring = NULL;
	size_t n_live = 0;
	int err;

	if (!live)
		return -1;
	old_known_update(known, n_known, rows, n);
	for (size_t g = 0; g < n_gws; g++)
		ids[g] = gws[g].id;
	err = rs_ring_new(ids, n_gws, &ring);
	if (err)
		goto cleanup;
	for (size_t g = 0; g < n_gws; g++) {
		int idx = rs_ring_find(ring, gws[g].id);

		loads[idx] = (struct rs_gateway_load){ .live = true, .draining = gws[g].state == RS_GATEWAY_DRAINING };
	}
	for (size_t i = 0; i < n; i++) {
		int idx;

		if (!rows[i].live)
			continue;
		live[n_live++] = rows[i].member_id;
		idx = rs_ring_find(ring, rows[i].gateway_id);
		if (idx >= 0)
			loads[idx].load++;
	}
	qsort(live, n_live, sizeof(*live), strcmp_ptr);
	for (size_t i = 0; i < n_known; i++) {
		const char *key = known[i].member_id;
		struct rs_arrival arr = { .member_id = key, .at = -1, .stale = -1 };
		struct rs_decision d;

		if (bsearch(&key, live, n_live, sizeof(*live), strcmp_ptr))
			continue;
		if (rs_place(ring, loads, &arr, &d) != 0)
			break;
		t->gw_of[t->n++] = (uint32_t)tally_gw(t, rs_ring_gateway_id(ring, d.gateway));
	}
cleanup:
	rs_ring_free(ring);
	free(live);
	return err;
}

static int row_cmp(const void *x, const void *y)
{
	const struct rs_session_row *a = x, *b = y;
	int c = strcmp(a->gateway_id, b->gateway_id);

	return c ? c : strcmp(a->member_id, b->member_id);
}

/* 100 serving gateways and MEMBERS session rows, half live: the live half
 * placed one by one by the rule (so loads are what the rule makes), then
 * filled to every gateway at cap but one.  The other half are rows past
 * their TTL: known, without a live session, each to be precomputed. */
static int listing(struct rs_gateway_row *gws, struct rs_session_row **rows_out, size_t *n_out)
{
	const char *ids[GATEWAYS];
	struct rs_session_row *rows = calloc(MEMBERS, sizeof(*rows));
	struct rs_ring *ring = NULL;
	struct rs_placer *p = NULL;
	size_t n_live = (MEMBERS / 2 / GATEWAYS) * GATEWAYS + GATEWAYS - 1; /* all at cap but one */
	int err = -1;

	if (!rows)
		return -1;
	for (size_t g = 0; g < GATEWAYS; g++) {
		gws[g] = (struct rs_gateway_row){ .live = true, .state = RS_GATEWAY_SERVING };
		snprintf(gws[g].id, sizeof(gws[g].id), "gateway-%03zu", g);
		ids[g] = gws[g].id;
	}
	if (rs_ring_new(ids, GATEWAYS, &ring) || rs_placer_new(ring, &p))
		goto cleanup;
	for (size_t i = 0; i < MEMBERS; i++) {
		struct rs_session_row *r = &rows[i];

		snprintf(r->member_id, sizeof(r->member_id), "sup-%06zu", i);
		snprintf(r->source, sizeof(r->source), "10.%zu.%zu.%zu:40000", i >> 16, (i >> 8) & 255, i & 255);
		r->live = i < n_live;
		if (r->live) {
			struct rs_arrival arr = { .member_id = r->member_id, .at = -1, .stale = -1 };
			struct rs_decision d;

			if (rs_placer_place(p, &arr, &d))
				goto cleanup;
			snprintf(r->gateway_id, sizeof(r->gateway_id), "%s", rs_ring_gateway_id(ring, d.gateway));
		} else {
			snprintf(r->gateway_id, sizeof(r->gateway_id), "gateway-gone");
		}
	}
	qsort(rows, MEMBERS, sizeof(*rows), row_cmp); /* as the store lists them */
	*rows_out = rows;
	*n_out = MEMBERS;
	rows = NULL;
	err = 0;
cleanup:
	rs_placer_free(p);
	rs_ring_free(ring);
	free(rows);
	return err;
}

int main(void)
{
	static struct rs_gateway_row gws[GATEWAYS];
	struct rs_session_row *rows = NULL;
	struct old_known *old = NULL;
	struct agent_known_set known = { 0 };
	struct agent_ring_cache rc = { 0 };
	struct tally ti = { .gws = gws, .n_gws = GATEWAYS }, tw = { .gws = gws, .n_gws = GATEWAYS };
	double t_idx[RUNS], t_walk[RUNS], first_ms, t0;
	size_t n = 0;
	int64_t now = 1700000000000;
	int rc_main = 1;

	if (listing(gws, &rows, &n)) {
		fprintf(stderr, "bench: cannot build the listing\n");
		return 1;
	}
	ti.gw_of = calloc(MEMBERS, sizeof(*ti.gw_of));
	tw.gw_of = calloc(MEMBERS, sizeof(*tw.gw_of));
	old = calloc(MEMBERS, sizeof(*old));
	if (!ti.gw_of || !tw.gw_of || !old)
		goto cleanup;
	for (size_t i = 0; i < n; i++)
		snprintf(old[i].member_id, sizeof(old[i].member_id), "%s", rows[i].member_id);
	qsort(old, n, sizeof(*old), old_known_cmp);

	/* The first pass learns every member (hashes 65,000 ids) and builds
	 * the ring: once per agent start, or per member's first row. */
	t0 = now_ms();
	if (agent_known_note(&known, rows, n, now) ||
	    agent_precompute(&rc, &known, gws, GATEWAYS, rows, n, indexed_answer, &ti))
		goto cleanup;
	first_ms = now_ms() - t0;

	for (int r = 0; r < RUNS; r++) {
		now += 1000;
		ti.n = 0;
		t0 = now_ms();
		if (agent_known_note(&known, rows, n, now))
			goto cleanup;
		agent_known_forget(&known, now, 600000);
		if (agent_precompute(&rc, &known, gws, GATEWAYS, rows, n, indexed_answer, &ti))
			goto cleanup;
		t_idx[r] = now_ms() - t0;

		tw.n = 0;
		t0 = now_ms();
		if (walk_pass(old, n, gws, GATEWAYS, rows, n, &tw))
			goto cleanup;
		t_walk[r] = now_ms() - t0;
	}
	if (ti.n != tw.n || memcmp(ti.gw_of, tw.gw_of, ti.n * sizeof(*ti.gw_of)) != 0) {
		fprintf(stderr, "bench: the indexed precomputation and the walk disagree (%zu vs %zu answers)\n", ti.n,
			tw.n);
		goto cleanup;
	}
	qsort(t_idx, RUNS, sizeof(double), dbl_cmp);
	qsort(t_walk, RUNS, sizeof(double), dbl_cmp);
	printf("agent sync pass, precomputation: %d gateways, %zu known supervisors, %zu without a live session\n"
	       "(loads at eps = 0, every gateway at cap but one: the walk's worst case); median of %d passes\n",
	       GATEWAYS, known.n, ti.n, RUNS);
	printf("  indexed (note + forget + placer): %8.2f ms per pass (min %.2f, max %.2f)\n", t_idx[RUNS / 2],
	       t_idx[0], t_idx[RUNS - 1]);
	printf("  walk (update + ring + rs_place):  %8.2f ms per pass (min %.2f, max %.2f)\n", t_walk[RUNS / 2],
	       t_walk[0], t_walk[RUNS - 1]);
	printf("  ratio walk / indexed:             %8.1fx\n", t_walk[RUNS / 2] / t_idx[RUNS / 2]);
	printf("  first pass (learns every member, hashes their ids, builds the ring): %.2f ms\n", first_ms);
	printf("  answers: identical (%zu)\n", ti.n);
	rc_main = 0;
cleanup:
	if (rc_main)
		fprintf(stderr, "bench: failed\n");
	agent_known_free(&known);
	agent_ring_cache_free(&rc);
	free(ti.gw_of);
	free(tw.gw_of);
	free(old);
	free(rows);
	return rc_main;
}
