/* SPDX-License-Identifier: Apache-2.0 */
/* test_placement.c - the bounded-load rule: the independent vectors, then
 * seeded randomized properties, each checked on the reference walk
 * (rs_place) and the indexed placer, which must agree on every case. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ringsteer/drain.h"
#include "ringsteer/placement.h"
#include "ringsteer/placer.h"
#include "ringsteer/ring.h"
#include "testutil.h"

struct fleet {
	char **ids;
	size_t n;
	struct rs_ring *ring;
	struct rs_placer *placer;
	struct rs_gateway_load *snap; /* the same state as placer, for rs_place */
};

static void fleet_init(struct fleet *f, size_t n, const char *prefix)
{
	f->n = n;
	f->ids = calloc(n, sizeof(*f->ids));
	assert_non_null(f->ids);
	for (size_t i = 0; i < n; i++) {
		f->ids[i] = malloc(40);
		assert_non_null(f->ids[i]);
		snprintf(f->ids[i], 40, "%s-%zu", prefix, i);
	}
	assert_int_equal(rs_ring_new((const char *const *)f->ids, n, &f->ring), 0);
	assert_int_equal(rs_placer_new(f->ring, &f->placer), 0);
	f->snap = calloc(n, sizeof(*f->snap));
	assert_non_null(f->snap);
	for (size_t g = 0; g < n; g++)
		f->snap[g].live = true;
}

static void fleet_fini(struct fleet *f)
{
	rs_placer_free(f->placer);
	rs_ring_free(f->ring);
	for (size_t i = 0; i < f->n; i++)
		free(f->ids[i]);
	free(f->ids);
	free(f->snap);
}

static void fleet_set(struct fleet *f, uint32_t gw, struct rs_gateway_load st)
{
	f->snap[gw] = st;
	assert_int_equal(rs_placer_set(f->placer, gw, &st), 0);
}

/* Decides with both implementations and asserts they agree; returns the
 * rs_place error or 0. */
static int decide_both(struct fleet *f, const struct rs_arrival *a, struct rs_decision *d)
{
	struct rs_decision walk, indexed;
	int err_walk = rs_place(f->ring, f->snap, a, &walk);
	int err_indexed = rs_placer_decide(f->placer, a, &indexed);

	assert_int_equal(err_walk, err_indexed);
	if (!err_walk) {
		assert_int_equal(walk.gateway, indexed.gateway);
		assert_int_equal(walk.reason, indexed.reason);
		assert_int_equal(walk.cap, indexed.cap);
		assert_int_equal(walk.full, indexed.full);
		*d = walk;
	}
	return err_walk;
}

static void test_vectors(void **state)
{
	json_t *root = test_load_vectors("placement-bounded.json");
	json_t *c;
	size_t ci;

	(void)state;
	json_array_foreach(json_object_get(root, "cases"), ci, c) {
		json_t *gws = json_object_get(c, "gateways"), *loads = json_object_get(c, "loads");
		size_t n = json_array_size(gws);
		const char **ids = calloc(n, sizeof(*ids));
		struct rs_gateway_load *snap = calloc(n, sizeof(*snap));
		struct rs_placer *placer;
		struct rs_ring *ring;
		struct rs_decision d, di;
		struct rs_arrival a = { .member_id = json_string_value(json_object_get(c, "member_id")),
					.at = -1, .stale = -1 };

		assert_non_null(ids);
		assert_non_null(snap);
		for (size_t i = 0; i < n; i++)
			ids[i] = json_string_value(json_array_get(gws, i));
		assert_int_equal(rs_ring_new(ids, n, &ring), 0);
		assert_int_equal(rs_placer_new(ring, &placer), 0);
		for (size_t i = 0; i < n; i++) {
			int gw = rs_ring_find(ring, ids[i]);

			assert_true(gw >= 0);
			snap[gw].live = true;
			snap[gw].load = (uint32_t)json_integer_value(json_object_get(loads, ids[i]));
			assert_int_equal(rs_placer_set(placer, (uint32_t)gw, &snap[gw]), 0);
		}
		assert_int_equal(rs_place(ring, snap, &a, &d), 0);
		assert_int_equal(rs_placer_decide(placer, &a, &di), 0);
		assert_string_equal(rs_ring_gateway_id(ring, d.gateway),
				    json_string_value(json_object_get(c, "expect")));
		assert_int_equal(d.cap, json_integer_value(json_object_get(c, "cap")));
		assert_int_equal(di.gateway, d.gateway);
		assert_int_equal(di.cap, d.cap);
		rs_placer_free(placer);
		rs_ring_free(ring);
		free(snap);
		free(ids);
	}
	printf("# placement vectors: %zu cases\n", ci);
	assert_true(ci > 0);
	json_decref(root);
}

static void test_cap(void **state)
{
	(void)state;
	assert_int_equal(rs_cap(0, 0), 0);
	assert_int_equal(rs_cap(1, 3), 1);
	assert_int_equal(rs_cap(3, 3), 1);
	assert_int_equal(rs_cap(4, 3), 2);
	assert_int_equal(rs_cap(100000, 1000), 100);
	assert_int_equal(rs_cap(100001, 1000), 101);
	assert_string_equal(rs_reason_name(RS_REASON_OWNER_FALLBACK), "owner-fallback");
	assert_string_equal(rs_reason_name(RS_REASON_DRAIN_HANDOFF), "drain-handoff");
}

/* Random states: loads, dead and draining gateways, stale records, stays and
 * handoffs.  The indexed placer must match the walk on every one. */
static void test_index_agrees_with_walk(void **state)
{
	static const size_t sizes[] = { 1, 2, 3, 5, 17, 64 };
	struct test_rng r;
	size_t cases = 0, fallbacks = 0, stays = 0;

	(void)state;
	test_rng_seed(&r, "index vs walk", 21);
	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		struct fleet f;

		fleet_init(&f, sizes[si], "gw");
		for (int round = 0; round < 1500; round++) {
			uint32_t spread = 1 + (uint32_t)test_rng_below(&r, 12);
			struct rs_arrival a = { 0 };
			struct rs_decision d;
			char member[32];
			int err;

			/* Mutate a few gateways, so the index sees every kind of change. */
			for (int k = 0; k < 3; k++) {
				uint32_t gw = (uint32_t)test_rng_below(&r, f.n);
				bool draining = test_rng_below(&r, 8) == 0;
				/* A draining gateway's many supervisors still count in
				 * N: that is how every active gateway ends up full. */
				struct rs_gateway_load st = {
					.load = (uint32_t)test_rng_below(&r, draining ? spread * 4 * f.n : spread),
					.live = test_rng_below(&r, 10) != 0,
					.draining = draining,
				};
				fleet_set(&f, gw, st);
			}
			snprintf(member, sizeof(member), "sup-%llu", (unsigned long long)test_rng_below(&r, 1000000));
			a.member_id = member;
			a.at = test_rng_below(&r, 3) ? (int)test_rng_below(&r, f.n) : -1;
			a.stay = test_rng_below(&r, 3) == 0;
			a.stale = -1;
			if (test_rng_below(&r, 3) == 0) {
				int s = (int)test_rng_below(&r, f.n);

				if (f.snap[s].load > 0 || !f.snap[s].live)
					a.stale = s;
			}
			a.handoff = a.stale >= 0 && test_rng_below(&r, 4) == 0;
			/* Half the time the caller supplies the cached point. */
			a.has_point = test_rng_below(&r, 2);
			if (a.has_point)
				assert_int_equal(rs_ring_point(member, strlen(member), &a.point), 0);
			err = decide_both(&f, &a, &d);
			if (err) {
				assert_int_equal(err, -ENOENT);
				continue;
			}
			cases++;
			fallbacks += d.full;
			stays += d.reason == RS_REASON_STAY;
			assert_true(d.gateway < f.n);
			assert_true(f.snap[d.gateway].live);
			if (d.reason != RS_REASON_STAY)
				assert_false(f.snap[d.gateway].draining);
		}
		fleet_fini(&f);
	}
	printf("# index vs walk: %zu decisions (%zu owner fallbacks, %zu stays)\n", cases, fallbacks, stays);
	/* N counts every live load, so the active gateways hold at most N - 1
	 * and cannot all be at ceil(N / G): the owner fallback is unreachable
	 * from a consistent snapshot (docs/ARCHITECTURE.md). */
	assert_int_equal(fallbacks, 0);
	assert_true(stays > 0);
}

static void test_listing_order_independent(void **state)
{
	struct test_rng r;

	(void)state;
	test_rng_seed(&r, "listing order", 22);
	for (int round = 0; round < 50; round++) {
		size_t n = 2 + (size_t)test_rng_below(&r, 12);
		char ids[16][16];
		const char *order[16];
		uint32_t load_of[16];
		char *first = NULL;

		for (size_t i = 0; i < n; i++) {
			snprintf(ids[i], sizeof(ids[i]), "g%llu", (unsigned long long)test_rng_below(&r, 100000) * 16 + i);
			load_of[i] = (uint32_t)test_rng_below(&r, 8);
			order[i] = ids[i];
		}
		for (int perm = 0; perm < 4; perm++) {
			struct rs_gateway_load snap[16] = { 0 };
			struct rs_decision d;
			struct rs_ring *ring;

			test_shuffle(&r, (void **)order, n);
			assert_int_equal(rs_ring_new(order, n, &ring), 0);
			for (size_t i = 0; i < n; i++) {
				int gw = rs_ring_find(ring, ids[i]);

				snap[gw].load = load_of[i];
				snap[gw].live = true;
			}
			assert_int_equal(rs_place(ring, snap,
						  &(struct rs_arrival){ .member_id = "sup-x", .at = -1, .stale = -1 }, &d),
					 0);
			if (!first)
				first = strdup(rs_ring_gateway_id(ring, d.gateway));
			else
				assert_string_equal(first, rs_ring_gateway_id(ring, d.gateway));
			rs_ring_free(ring);
		}
		free(first);
	}
}

/* Fill from empty with no churn: every gateway ends within one of the others. */
static void test_fill_is_even(void **state)
{
	static const struct { size_t g, n; } runs[] = {
		{ 1, 50 }, { 2, 3 }, { 3, 1000 }, { 7, 7 }, { 10, 12345 }, { 100, 100000 }, { 1000, 100000 }, { 1000, 999 },
	};

	(void)state;
	for (size_t ri = 0; ri < sizeof(runs) / sizeof(runs[0]); ri++) {
		struct fleet f;
		uint32_t max = 0, min = UINT32_MAX;
		size_t checked = 0;

		fleet_init(&f, runs[ri].g, "fill");
		for (size_t m = 0; m < runs[ri].n; m++) {
			char member[32];
			struct rs_arrival a = { .member_id = member, .at = -1, .stale = -1 };
			struct rs_decision d;

			snprintf(member, sizeof(member), "member-%zu", m);
			/* The walk is O(points): cross-check a sample on big rings. */
			if (runs[ri].g * runs[ri].n <= 2000000 || m % 997 == 0) {
				assert_int_equal(decide_both(&f, &a, &d), 0);
				checked++;
			}
			assert_int_equal(rs_placer_place(f.placer, &a, &d), 0);
			assert_int_equal(d.reason, RS_REASON_PLACED);
			f.snap[d.gateway].load++;
		}
		for (size_t g = 0; g < f.n; g++) {
			max = f.snap[g].load > max ? f.snap[g].load : max;
			min = f.snap[g].load < min ? f.snap[g].load : min;
		}
		printf("# fill G=%zu N=%zu: min %u max %u (%zu cross-checked)\n", runs[ri].g, runs[ri].n, min, max,
		       checked);
		assert_true(max - min <= 1);
		assert_int_equal(rs_placer_members(f.placer), runs[ri].n);
		fleet_fini(&f);
	}
}

/* Fills f with n members by the rule; member m sits on at[m]. */
static void fill(struct fleet *f, size_t n, char (*names)[32], uint32_t *at)
{
	for (size_t m = 0; m < n; m++) {
		struct rs_decision d;

		snprintf(names[m], 32, "sup-%zu", m);
		assert_int_equal(rs_placer_place(f->placer,
						 &(struct rs_arrival){ .member_id = names[m], .at = -1, .stale = -1 }, &d),
				 0);
		at[m] = d.gateway;
		f->snap[d.gateway].load++;
	}
}

static void test_drain_moves_only_its_own(void **state)
{
	struct test_rng r;

	(void)state;
	test_rng_seed(&r, "drain", 23);
	for (int round = 0; round < 40; round++) {
		size_t g = 2 + (size_t)test_rng_below(&r, 30), n = (size_t)test_rng_below(&r, 600);
		char (*names)[32] = calloc(n ? n : 1, sizeof(*names));
		uint32_t *at = calloc(n ? n : 1, sizeof(*at)), *targets = calloc(n ? n : 1, sizeof(*targets));
		const char **leaving = calloc(n ? n : 1, sizeof(*leaving));
		uint32_t stopping = (uint32_t)test_rng_below(&r, g), cap;
		size_t n_leaving = 0;
		struct fleet f;

		assert_true(names && at && targets && leaving);
		fleet_init(&f, g, "gw");
		fill(&f, n, names, at);
		for (size_t m = 0; m < n; m++)
			if (at[m] == stopping)
				leaving[n_leaving++] = names[m];
		cap = rs_cap(n, (uint32_t)g - 1);
		assert_int_equal(rs_drain_plan(f.placer, stopping, leaving, n_leaving, targets), 0);
		/* Replay the plan on the snapshot: each step must be what the
		 * walk decides over the loads so far. */
		f.snap[stopping].draining = true;
		for (size_t i = 0; i < n_leaving; i++) {
			struct rs_decision d;

			assert_int_equal(rs_place(f.ring, f.snap,
						  &(struct rs_arrival){ .member_id = leaving[i], .handoff = true, .at = -1,
									.stale = (int)stopping },
						  &d),
					 0);
			assert_int_equal(d.gateway, targets[i]);
			assert_int_equal(d.reason, RS_REASON_DRAIN_HANDOFF);
			assert_int_not_equal(d.gateway, stopping);
			f.snap[stopping].load--;
			f.snap[d.gateway].load++;
		}
		/* Nobody else moved: the others gained exactly the handoffs. */
		for (uint32_t gw = 0; gw < g; gw++) {
			struct rs_gateway_load st;
			uint32_t before = 0, gained = 0;

			for (size_t m = 0; m < n; m++)
				before += at[m] == gw;
			for (size_t i = 0; i < n_leaving; i++)
				gained += targets[i] == gw;
			assert_int_equal(rs_placer_get(f.placer, gw, &st), 0);
			if (gw == stopping) {
				assert_int_equal(st.load, 0);
				continue;
			}
			assert_int_equal(st.load, before + gained);
			assert_int_equal(st.load, f.snap[gw].load);
			assert_true(st.load <= cap);
		}
		fleet_fini(&f);
		free(leaving);
		free(targets);
		free(at);
		free(names);
	}
}

static void test_drain_errors(void **state)
{
	struct fleet f;
	const char *members[] = { "a", "b" };
	uint32_t targets[2];

	(void)state;
	fleet_init(&f, 1, "solo");
	assert_int_equal(rs_drain_plan(f.placer, 5, members, 0, targets), -EINVAL);
	assert_int_equal(rs_drain_plan(f.placer, 0, members, 2, targets), -EINVAL); /* load 0 < 2 */
	assert_int_equal(rs_placer_add_load(f.placer, 0, 2), 0);
	assert_int_equal(rs_drain_plan(f.placer, 0, members, 2, targets), -ENOENT); /* nowhere to go */
	fleet_fini(&f);

	/* A bad id anywhere in the list: nothing is applied. */
	{
		const char *bad[] = { "sup-0", "" };
		struct rs_gateway_load st;

		fleet_init(&f, 3, "gw");
		assert_int_equal(rs_placer_add_load(f.placer, 1, 2), 0);
		assert_int_equal(rs_drain_plan(f.placer, 1, bad, 2, targets), -EINVAL);
		for (uint32_t g = 0; g < 3; g++) {
			assert_int_equal(rs_placer_get(f.placer, g, &st), 0);
			assert_int_equal(st.load, g == 1 ? 2 : 0);
			assert_false(st.draining);
		}
		fleet_fini(&f);
	}
}

static void test_stay_unless_draining(void **state)
{
	struct test_rng r;
	struct fleet f;
	size_t honored = 0, refused = 0;

	(void)state;
	test_rng_seed(&r, "stay", 24);
	fleet_init(&f, 9, "gw");
	for (int round = 0; round < 3000; round++) {
		uint32_t gw = (uint32_t)test_rng_below(&r, f.n);
		struct rs_gateway_load st = { .load = 1 + (uint32_t)test_rng_below(&r, 50), .live = true,
					      .draining = test_rng_below(&r, 4) == 0 };
		struct rs_arrival a = { .member_id = "returning", .stay = true, .at = (int)gw, .stale = (int)gw };
		struct rs_decision d;

		fleet_set(&f, gw, st);
		if (decide_both(&f, &a, &d) != 0)
			continue; /* every gateway draining */
		if (st.draining) {
			assert_int_not_equal(d.gateway, gw);
			assert_int_not_equal(d.reason, RS_REASON_STAY);
			refused++;
		} else {
			/* Far above cap, still honored: the cap is for arrivals. */
			assert_int_equal(d.gateway, gw);
			assert_int_equal(d.reason, RS_REASON_STAY);
			honored++;
		}
	}
	assert_true(honored > 0 && refused > 0);
	/* A handoff never stays, even if it asks. */
	{
		struct rs_decision d;
		struct rs_gateway_load st = { .load = 1, .live = true };

		for (uint32_t g = 0; g < f.n; g++)
			fleet_set(&f, g, st);
		assert_int_equal(decide_both(&f,
					     &(struct rs_arrival){ .member_id = "m", .stay = true, .handoff = true,
								   .at = 0, .stale = 0 },
					     &d),
				 0);
		assert_int_equal(d.reason, RS_REASON_DRAIN_HANDOFF);
	}
	fleet_fini(&f);
}

/* A joining gateway moves nobody: every supervisor that redials its gateway
 * with STAY keeps it, and new arrivals fill the newcomer. */
static void test_join_moves_nobody(void **state)
{
	enum { G = 6, N = 300 };
	char names[N][32];
	uint32_t at[N];
	struct fleet before, after;
	uint32_t newcomer;

	(void)state;
	fleet_init(&before, G, "gw");
	fill(&before, N, names, at);
	fleet_init(&after, G + 1, "gw"); /* the same ids plus gw-6 */
	newcomer = (uint32_t)rs_ring_find(after.ring, "gw-6");
	for (uint32_t g = 0; g < G; g++) {
		uint32_t ng = (uint32_t)rs_ring_find(after.ring, rs_ring_gateway_id(before.ring, g));

		fleet_set(&after, ng, before.snap[g]);
	}
	for (size_t m = 0; m < N; m++) {
		uint32_t ng = (uint32_t)rs_ring_find(after.ring, rs_ring_gateway_id(before.ring, at[m]));
		struct rs_decision d;

		assert_int_equal(decide_both(&after,
					     &(struct rs_arrival){ .member_id = names[m], .stay = true, .at = (int)ng,
								   .stale = (int)ng },
					     &d),
				 0);
		assert_int_equal(d.gateway, ng);
		assert_int_equal(d.reason, RS_REASON_STAY);
	}
	/* cap = ceil(301 / 7) = 43 while the old six hold 50: only the newcomer has room. */
	for (int k = 0; k < 43; k++) {
		char member[24];
		struct rs_decision d;

		snprintf(member, sizeof(member), "new-%d", k);
		assert_int_equal(decide_both(&after, &(struct rs_arrival){ .member_id = member, .at = -1, .stale = -1 },
					     &d),
				 0);
		assert_int_equal(d.gateway, newcomer);
		assert_int_equal(rs_placer_add_load(after.placer, newcomer, 1), 0);
		after.snap[newcomer].load++;
	}
	fleet_fini(&after);
	fleet_fini(&before);
}

static void test_errors(void **state)
{
	struct fleet f;
	struct rs_decision d;
	struct rs_gateway_load st;
	char long_id[RS_ID_MAX + 2];

	(void)state;
	memset(long_id, 'm', sizeof(long_id) - 1);
	long_id[sizeof(long_id) - 1] = '\0';
	fleet_init(&f, 3, "gw");
	assert_int_equal(decide_both(&f, &(struct rs_arrival){ .member_id = "m", .at = 3, .stale = -1 }, &d), -EINVAL);
	assert_int_equal(decide_both(&f, &(struct rs_arrival){ .member_id = "m", .at = -1, .stale = 7 }, &d), -EINVAL);
	assert_int_equal(decide_both(&f, &(struct rs_arrival){ .member_id = "m", .at = -1, .stale = 0 }, &d),
			 -EINVAL); /* its record is not in a zero load */
	assert_int_equal(decide_both(&f, &(struct rs_arrival){ .member_id = "m", .handoff = true, .at = -1, .stale = -1 },
				     &d),
			 -EINVAL);
	assert_int_equal(decide_both(&f, &(struct rs_arrival){ .member_id = "", .at = -1, .stale = -1 }, &d), -EINVAL);
	assert_int_equal(decide_both(&f, &(struct rs_arrival){ .member_id = long_id, .at = -1, .stale = -1 }, &d),
			 -EINVAL);
	assert_int_equal(rs_placer_add_load(f.placer, 0, -1), -ERANGE);
	assert_int_equal(rs_placer_add_load(f.placer, 3, 1), -EINVAL);
	assert_int_equal(rs_placer_get(f.placer, 3, &st), -EINVAL);
	assert_int_equal(rs_placer_set(f.placer, 3, &st), -EINVAL);
	for (uint32_t g = 0; g < 3; g++)
		fleet_set(&f, g, (struct rs_gateway_load){ .load = 4, .live = g != 1, .draining = g == 2 });
	/* Only gw 0 is active; the dead one is not counted, the draining one is. */
	assert_int_equal(decide_both(&f, &(struct rs_arrival){ .member_id = "m", .at = -1, .stale = -1 }, &d), 0);
	assert_int_equal(d.gateway, 0);
	assert_int_equal(d.cap, 9); /* 8 live supervisors + 1, over 1 active */
	fleet_set(&f, 0, (struct rs_gateway_load){ .load = 4, .live = true, .draining = true });
	assert_int_equal(decide_both(&f, &(struct rs_arrival){ .member_id = "m", .at = -1, .stale = -1 }, &d), -ENOENT);
	assert_int_equal(rs_placer_active(f.placer), 0);
	fleet_fini(&f);
}

/* The member's own stale record is not counted: a full gateway holding it
 * has room for it again. */
static void test_stale_record_not_counted(void **state)
{
	struct fleet f;
	struct rs_decision fresh, back;
	uint32_t owner;

	(void)state;
	fleet_init(&f, 4, "gw");
	owner = (uint32_t)rs_ring_owner(f.ring, "sup-stale");
	for (uint32_t g = 0; g < 4; g++)
		fleet_set(&f, g, (struct rs_gateway_load){ .load = 5, .live = true });
	/* 20 + 1 over 4: cap 6, owner has room. */
	assert_int_equal(decide_both(&f, &(struct rs_arrival){ .member_id = "sup-stale", .at = -1, .stale = -1 },
				     &fresh),
			 0);
	assert_int_equal(fresh.gateway, owner);
	fleet_set(&f, owner, (struct rs_gateway_load){ .load = 6, .live = true });
	/* Without its own record the owner holds 5 of cap ceil(21/4) = 6. */
	assert_int_equal(decide_both(&f, &(struct rs_arrival){ .member_id = "sup-stale", .at = -1, .stale = (int)owner },
				     &back),
			 0);
	assert_int_equal(back.gateway, owner);
	assert_int_equal(back.cap, 6);
	/* Counting it would have sent it elsewhere. */
	assert_int_equal(decide_both(&f, &(struct rs_arrival){ .member_id = "sup-stale", .at = -1, .stale = -1 }, &back),
			 0);
	assert_int_not_equal(back.gateway, owner);
	fleet_fini(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_index_agrees_with_walk),
		cmocka_unit_test(test_listing_order_independent),
		cmocka_unit_test(test_fill_is_even),
		cmocka_unit_test(test_drain_moves_only_its_own),
		cmocka_unit_test(test_drain_errors),
		cmocka_unit_test(test_stay_unless_draining),
		cmocka_unit_test(test_join_moves_nobody),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_stale_record_not_counted),
	};

	return cmocka_run_group_tests_name("placement", tests, NULL, NULL);
}
