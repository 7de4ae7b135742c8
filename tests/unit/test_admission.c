/* SPDX-License-Identifier: Apache-2.0 */
/* test_admission.c - the admission decision (admission.h) against what is
 * known without it: the independent placement vectors, hand-worked cases
 * for every override (their clockwise orders taken from the independent
 * ring vectors, so each expected value follows from the comment beside
 * it), and seeded randomized states checked against the reference walk
 * (rs_place), alone for an arrival through the Service with no row, and
 * with the overrides as store.h states them for every kind.  Every
 * decision also checks that the placer is left as it was. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ringsteer/admission.h"
#include "ringsteer/placement.h"
#include "ringsteer/placer.h"
#include "ringsteer/ring.h"
#include "testutil.h"

/* A ring, a placer over it and the same state as a plain snapshot (what
 * rs_place reads and what the placer must still hold after a decision). */
struct fleet {
	size_t n;
	struct rs_ring *ring;
	struct rs_placer *placer;
	struct rs_gateway_load *snap;
};

static void fleet_init(struct fleet *f, const char *const *ids, size_t n)
{
	f->n = n;
	assert_int_equal(rs_ring_new(ids, n, &f->ring), 0);
	assert_int_equal(rs_ring_gateway_count(f->ring), n);
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
	free(f->snap);
}

static void fleet_set(struct fleet *f, uint32_t gw, struct rs_gateway_load st)
{
	f->snap[gw] = st;
	assert_int_equal(rs_placer_set(f->placer, gw, &st), 0);
}

static void assert_placer_is_snapshot(const struct fleet *f)
{
	uint64_t members = 0;
	uint32_t active = 0;

	for (uint32_t g = 0; g < f->n; g++) {
		struct rs_gateway_load st;

		assert_int_equal(rs_placer_get(f->placer, g, &st), 0);
		assert_int_equal(st.load, f->snap[g].load);
		assert_int_equal(st.live, f->snap[g].live);
		assert_int_equal(st.draining, f->snap[g].draining);
		members += st.live ? st.load : 0;
		active += st.live && !st.draining;
	}
	assert_true(rs_placer_members(f->placer) == members);
	assert_int_equal(rs_placer_active(f->placer), active);
}

/* rs_admit_decide, then: the placer is as it was, and an error zeroed *out. */
static int decide(struct fleet *f, const struct rs_admit_input *in, struct rs_admit_outcome *out)
{
	int err;

	memset(out, 0xa5, sizeof(*out));
	err = rs_admit_decide(f->placer, in, out);
	assert_placer_is_snapshot(f);
	if (err) {
		static const struct rs_admit_outcome zero;

		assert_memory_equal(out, &zero, sizeof(zero));
	}
	return err;
}

/* ---- (a) the placement vectors --------------------------------------- */

/* Each case's loads leave the arriving member out, so cap = ceil((sum + 1)
 * / G) gives G * cap > sum: some gateway is below the cap, the rule never
 * falls back to the owner, and the reason is always "placed".  Where the
 * member landed does not matter to an arrival through the Service. */
static void test_vectors(void **state)
{
	json_t *root = test_load_vectors("placement-bounded.json");
	json_t *c;
	size_t ci, decisions = 0;

	(void)state;
	json_array_foreach(json_object_get(root, "cases"), ci, c) {
		json_t *gws = json_object_get(c, "gateways"), *loads = json_object_get(c, "loads");
		const char *expect = json_string_value(json_object_get(c, "expect"));
		uint32_t cap = (uint32_t)json_integer_value(json_object_get(c, "cap"));
		size_t n = json_array_size(gws);
		const char **ids = calloc(n, sizeof(*ids));
		struct fleet f;
		struct rs_arrival walk_in = { .member_id = json_string_value(json_object_get(c, "member_id")),
					      .at = -1, .stale = -1 };
		struct rs_decision walk;
		int want;

		assert_non_null(ids);
		for (size_t i = 0; i < n; i++)
			ids[i] = json_string_value(json_array_get(gws, i));
		fleet_init(&f, ids, n);
		for (size_t i = 0; i < n; i++)
			fleet_set(&f, (uint32_t)rs_ring_find(f.ring, ids[i]),
				  (struct rs_gateway_load){
					  .load = (uint32_t)json_integer_value(json_object_get(loads, ids[i])),
					  .live = true });
		want = rs_ring_find(f.ring, expect);
		assert_true(want >= 0);
		assert_true(json_integer_value(json_object_get(loads, expect)) < cap);
		assert_int_equal(rs_place(f.ring, f.snap, &walk_in, &walk), 0);
		for (int at = -1; at < (int)n; at++) {
			struct rs_admit_input in = { .member_id = walk_in.member_id, .kind = RS_ARRIVE_SERVICE,
						     .at = at, .record = RS_RECORD_NONE, .record_at = -1 };
			struct rs_admit_outcome o;

			assert_int_equal(decide(&f, &in, &o), 0);
			assert_int_equal(o.decision.gateway, want);
			assert_int_equal(o.decision.reason, RS_REASON_PLACED);
			assert_int_equal(o.decision.cap, cap);
			assert_false(o.decision.full);
			assert_false(o.fallback || o.over_cap || o.stays);
			assert_int_equal(o.decision.gateway, walk.gateway);
			assert_int_equal(o.decision.reason, walk.reason);
			assert_int_equal(o.decision.cap, walk.cap);
			decisions++;
		}
		fleet_fini(&f);
		free(ids);
	}
	printf("# admission vectors: %zu cases, %zu decisions\n", ci, decisions);
	assert_true(ci > 0);
	json_decref(root);
}

/* ---- (b) the overrides, by hand --------------------------------------- */

/* Three gateways named by their clockwise order from one member's point,
 * as the ring vectors give it: cw[0] is the member's ring owner, then
 * cw[1], then cw[2].  Loads below are per clockwise position and count the
 * member's own row where it has one.  Reminder: N = live loads - the
 * member's counted row + 1, G = live non-draining gateways, cap =
 * ceil(N / G); the rule takes the first gateway clockwise below the cap
 * (the member's own row not counted in its gateway's load). */
struct scene {
	struct fleet f;
	const char *member;
	int cw[3]; /* ring index of the k-th gateway clockwise */
	json_t *root;
};

static void scene_init(struct scene *s)
{
	json_t *set, *c, *gws, *cw;
	const char *ids[3];

	s->root = test_load_vectors("ring-sha256-be64.json");
	set = json_array_get(json_object_get(s->root, "sets"), 1);
	gws = json_object_get(set, "gateways");
	assert_int_equal(json_array_size(gws), 3);
	for (size_t i = 0; i < 3; i++)
		ids[i] = json_string_value(json_array_get(gws, i));
	fleet_init(&s->f, ids, 3);
	c = json_array_get(json_object_get(set, "cases"), 0);
	s->member = json_string_value(json_object_get(c, "member_id"));
	cw = json_object_get(c, "clockwise");
	assert_int_equal(json_array_size(cw), 3);
	for (size_t k = 0; k < 3; k++) {
		s->cw[k] = rs_ring_find(s->f.ring, json_string_value(json_array_get(cw, k)));
		assert_true(s->cw[k] >= 0);
	}
}

static void scene_fini(struct scene *s)
{
	fleet_fini(&s->f);
	json_decref(s->root);
}

/* Sets the loads of cw[0], cw[1], cw[2]: all live, not draining. */
static void scene_loads(struct scene *s, uint32_t l0, uint32_t l1, uint32_t l2)
{
	const uint32_t loads[3] = { l0, l1, l2 };

	for (int k = 0; k < 3; k++)
		fleet_set(&s->f, (uint32_t)s->cw[k], (struct rs_gateway_load){ .load = loads[k], .live = true });
}

static void scene_drain(struct scene *s, int k)
{
	struct rs_gateway_load st = s->f.snap[s->cw[k]];

	st.draining = true;
	fleet_set(&s->f, (uint32_t)s->cw[k], st);
}

/* The ring index at clockwise position k, or -1 for k == -1. */
static int cwi(const struct scene *s, int k)
{
	return k < 0 ? -1 : s->cw[k];
}

/* An input landing at clockwise position at_k, its row (if any) at rec_k. */
static struct rs_admit_input input(const struct scene *s, enum rs_arrival_kind kind, int at_k,
				   enum rs_record_kind record, int rec_k)
{
	return (struct rs_admit_input){ .member_id = s->member, .kind = kind, .at = cwi(s, at_k), .record = record,
					.record_at = cwi(s, rec_k) };
}

static void expect(const struct scene *s, const struct rs_admit_outcome *o, int k, enum rs_reason reason,
		   uint32_t cap)
{
	assert_int_equal(o->decision.gateway, s->cw[k]);
	assert_int_equal(o->decision.reason, reason);
	assert_int_equal(o->decision.cap, cap);
	assert_false(o->decision.full);
}

static void test_goes_home(void **state)
{
	struct scene s;
	struct rs_admit_outcome o;
	struct rs_admit_input in;

	(void)state;
	scene_init(&s);
	/* Reserved at cw2; loads 1, 1, 2: N = 4 - 1 + 1 = 4, cap = ceil(4/3)
	 * = 2.  The rule: cw0 holds 1 < 2, so cw0.  cw2 without the member
	 * holds 1 < 2 and serves: it goes home, reason reserved.  Wherever it
	 * landed (cw0, cw1), and for a what-if (landing nowhere). */
	scene_loads(&s, 1, 1, 2);
	for (int at = -1; at < 2; at++) {
		in = input(&s, RS_ARRIVE_SERVICE, at, RS_RECORD_RESERVED, 2);
		assert_int_equal(decide(&s.f, &in, &o), 0);
		expect(&s, &o, 2, RS_REASON_RESERVED, 2);
		assert_false(o.fallback || o.over_cap || o.stays);
	}
	/* Loads 1, 1, 3: N = 5 - 1 + 1 = 5, cap = 2; cw2 without the member
	 * holds 2, at the cap: no home; the rule's cw0 (1 < 2), placed. */
	scene_loads(&s, 1, 1, 3);
	in = input(&s, RS_ARRIVE_SERVICE, 0, RS_RECORD_RESERVED, 2);
	assert_int_equal(decide(&s.f, &in, &o), 0);
	expect(&s, &o, 0, RS_REASON_PLACED, 2);
	/* Loads 1, 1, 1 with cw2 draining: N = 3 - 1 + 1 = 3 (a draining
	 * gateway's supervisors count), G = 2, cap = 2; cw2 drains: no home;
	 * the rule's cw0 (1 < 2), placed. */
	scene_loads(&s, 1, 1, 1);
	scene_drain(&s, 2);
	in = input(&s, RS_ARRIVE_SERVICE, 0, RS_RECORD_RESERVED, 2);
	assert_int_equal(decide(&s.f, &in, &o), 0);
	expect(&s, &o, 0, RS_REASON_PLACED, 2);
	/* An attachment is no reservation: attached at cw2, loads 1, 1, 2:
	 * cap 2 as above, the rule's cw0, placed. */
	scene_loads(&s, 1, 1, 2);
	in = input(&s, RS_ARRIVE_SERVICE, 0, RS_RECORD_ATTACHED, 2);
	assert_int_equal(decide(&s.f, &in, &o), 0);
	expect(&s, &o, 0, RS_REASON_PLACED, 2);
	/* Asking to stay, it is no Service arrival: a redial at cw0 reserved
	 * at cw2 after a redirect stays at cw0 (stay, cap 2). */
	in = input(&s, RS_ARRIVE_REDIRECTED, 0, RS_RECORD_RESERVED, 2);
	assert_int_equal(decide(&s.f, &in, &o), 0);
	expect(&s, &o, 0, RS_REASON_STAY, 2);
	scene_fini(&s);
}

static void test_reserved_here(void **state)
{
	struct scene s;
	struct rs_admit_outcome o;
	struct rs_admit_input in;

	(void)state;
	scene_init(&s);
	/* Landed at cw2 where it is reserved; loads 0, 0, 3: N = 3 - 1 + 1 =
	 * 3, cap = 1.  The rule says cw0 (0 < 1), but cw2 serves and holds
	 * the place the rule gave it: cw2, reserved, cap 1. */
	scene_loads(&s, 0, 0, 3);
	in = input(&s, RS_ARRIVE_SERVICE, 2, RS_RECORD_RESERVED, 2);
	assert_int_equal(decide(&s.f, &in, &o), 0);
	expect(&s, &o, 2, RS_REASON_RESERVED, 1);
	assert_false(o.fallback || o.over_cap || o.stays);
	/* Loads 1, 1, 1: N = 3, cap 1; cw0 and cw1 are at 1, cw2 without the
	 * member at 0 < 1: the rule itself says cw2, placed. */
	scene_loads(&s, 1, 1, 1);
	in = input(&s, RS_ARRIVE_SERVICE, 2, RS_RECORD_RESERVED, 2);
	assert_int_equal(decide(&s.f, &in, &o), 0);
	expect(&s, &o, 2, RS_REASON_PLACED, 1);
	/* Loads 0, 0, 3 with cw2 draining: N = 3, G = 2, cap 2: a draining
	 * gateway keeps no one; the rule's cw0 (0 < 2), placed. */
	scene_loads(&s, 0, 0, 3);
	scene_drain(&s, 2);
	in = input(&s, RS_ARRIVE_SERVICE, 2, RS_RECORD_RESERVED, 2);
	assert_int_equal(decide(&s.f, &in, &o), 0);
	expect(&s, &o, 0, RS_REASON_PLACED, 2);
	scene_fini(&s);
}

static void test_service_fallback(void **state)
{
	struct scene s;
	struct rs_admit_outcome o;
	struct rs_admit_input in;

	(void)state;
	scene_init(&s);
	/* Redirected to cw0 (its reservation there), it could not reach it
	 * and came back through the Service to cw1 asking to stay.  Loads 3,
	 * 0, 0: without cw0, G = 2, N = 3 - 1 + 1 = 3, cap = 2; cw1 holds 0
	 * < 2: the stay is honored, not over the cap. */
	scene_loads(&s, 3, 0, 0);
	in = input(&s, RS_ARRIVE_STAY, 1, RS_RECORD_RESERVED, 0);
	assert_int_equal(decide(&s.f, &in, &o), 0);
	expect(&s, &o, 1, RS_REASON_STAY, 2);
	assert_true(o.fallback);
	assert_false(o.over_cap || o.stays);
	/* Loads 1, 1, 0: without cw0, G = 2, N = 2 - 1 + 1 = 2, cap = 1; cw1
	 * holds 1, at the cap: refused, placed by the rule over cw1, cw2
	 * (cw0 out): cw1 at 1 is not below 1, cw2 at 0 is: cw2, placed,
	 * never back to cw0 (the owner). */
	scene_loads(&s, 1, 1, 0);
	assert_int_equal(decide(&s.f, &in, &o), 0);
	expect(&s, &o, 2, RS_REASON_PLACED, 1);
	assert_true(o.fallback);
	assert_false(o.over_cap);
	/* The same with liveness: honored at cw1 though at the cap (1 >= 1). */
	in.liveness = true;
	assert_int_equal(decide(&s.f, &in, &o), 0);
	expect(&s, &o, 1, RS_REASON_STAY, 1);
	assert_true(o.fallback && o.over_cap);
	/* Liveness is for a stay that serves: cw1 draining, loads 1, 1, 0:
	 * without cw0 and cw1, G = 1, N = 2, cap = 2; cw2, placed. */
	scene_drain(&s, 1);
	assert_int_equal(decide(&s.f, &in, &o), 0);
	expect(&s, &o, 2, RS_REASON_PLACED, 2);
	assert_true(o.fallback);
	assert_false(o.over_cap);
	/* Every gateway but the unreachable one draining: nowhere to go. */
	scene_drain(&s, 2);
	assert_int_equal(decide(&s.f, &in, &o), -ENOENT);
	/* Not a fallback: reserved where it stays (loads 1, 1, 0, at cw1
	 * reserved at cw1: N = 2, G = 3, cap 1), a plain stay, honored at the
	 * cap; and a plain stay with no row. */
	scene_loads(&s, 1, 1, 0);
	in = input(&s, RS_ARRIVE_STAY, 1, RS_RECORD_RESERVED, 1);
	assert_int_equal(decide(&s.f, &in, &o), 0);
	expect(&s, &o, 1, RS_REASON_STAY, 1);
	assert_false(o.fallback);
	in = input(&s, RS_ARRIVE_STAY, 1, RS_RECORD_NONE, -1);
	assert_int_equal(decide(&s.f, &in, &o), 0);
	expect(&s, &o, 1, RS_REASON_STAY, 1); /* N = 2 + 1, cap ceil(3/3) */
	assert_false(o.fallback);
	/* Its reservation at cw2 lapsed (counted nowhere), at cw1 without
	 * liveness, loads 2, 2, 0: N = 4 + 1 = 5, over the whole ring G = 3,
	 * cap 2: cw1 at 2 refuses, and the rule's first below 2 clockwise is
	 * cw2 (the target it may not have reached: by now it may reach it). */
	scene_loads(&s, 2, 2, 0);
	in = input(&s, RS_ARRIVE_STAY, 1, RS_RECORD_LAPSED, 2);
	assert_int_equal(decide(&s.f, &in, &o), 0);
	expect(&s, &o, 2, RS_REASON_PLACED, 2);
	assert_true(o.fallback);
	assert_false(o.over_cap);
	/* With loads 1, 1, 0 (cap 1) cw1 refuses too; at cw2 itself (0 < 1)
	 * it is honored. */
	scene_loads(&s, 1, 1, 0);
	in = input(&s, RS_ARRIVE_STAY, 2, RS_RECORD_LAPSED, 2);
	assert_int_equal(decide(&s.f, &in, &o), 0);
	expect(&s, &o, 2, RS_REASON_STAY, 1);
	assert_true(o.fallback);
	/* Its lapsed reservation at a gateway gone (record_at -1): a fallback
	 * over the whole ring.  Loads 1, 1, 0 at cw1: N = 3, G = 3, cap 1;
	 * cw1 at 1 refuses, the rule's cw2 (0 < 1) takes it; with liveness
	 * cw1 honors the stay at the cap. */
	scene_loads(&s, 1, 1, 0);
	in = input(&s, RS_ARRIVE_STAY, 1, RS_RECORD_LAPSED, -1);
	assert_int_equal(decide(&s.f, &in, &o), 0);
	expect(&s, &o, 2, RS_REASON_PLACED, 1);
	assert_true(o.fallback);
	in.liveness = true;
	assert_int_equal(decide(&s.f, &in, &o), 0);
	expect(&s, &o, 1, RS_REASON_STAY, 1);
	assert_true(o.fallback && o.over_cap);
	scene_loads(&s, 1, 1, 0);
	/* Nor is a stay whose row is an attachment elsewhere (a redial whose
	 * old connection cw0 still counts): at cw1, attached at cw0, loads 1,
	 * 1, 0: N = 2, G = 3, cap 1, a plain stay at cw1 at the cap. */
	in = input(&s, RS_ARRIVE_STAY, 1, RS_RECORD_ATTACHED, 0);
	assert_int_equal(decide(&s.f, &in, &o), 0);
	expect(&s, &o, 1, RS_REASON_STAY, 1);
	assert_false(o.fallback);
	/* Dialing a redirect's target is never a fallback, whatever its row
	 * says: at cw1 reserved at cw0, loads 1, 1, 0: a plain stay at cw1
	 * (N = 2 - 1 + 1 = 2, G = 3, cap 1), nobody excluded. */
	in = input(&s, RS_ARRIVE_REDIRECTED, 1, RS_RECORD_RESERVED, 0);
	assert_int_equal(decide(&s.f, &in, &o), 0);
	expect(&s, &o, 1, RS_REASON_STAY, 1);
	assert_false(o.fallback || o.over_cap);
	scene_fini(&s);
}

static void test_handoff(void **state)
{
	struct scene s;
	struct rs_admit_outcome o;
	struct rs_admit_input in;

	(void)state;
	scene_init(&s);
	/* cw0 (the owner) hands off its attached member; its row says it
	 * serves (the exclusion is the decision's, whatever the row says).
	 * Loads 1, 0, 0: without cw0, G = 2, N = 1 - 1 + 1 = 1, cap 1; cw1
	 * at 0 < 1: cw1, drain-handoff.  Asking to stay changes nothing. */
	scene_loads(&s, 1, 0, 0);
	in = input(&s, RS_ARRIVE_HANDOFF, 0, RS_RECORD_ATTACHED, 0);
	in.liveness = true;
	assert_int_equal(decide(&s.f, &in, &o), 0);
	expect(&s, &o, 1, RS_REASON_DRAIN_HANDOFF, 1);
	assert_false(o.fallback || o.over_cap || o.stays);
	/* Loads 2, 1, 1 with cw0 draining: G = 2, N = 4 - 1 + 1 = 4, cap 2;
	 * cw1 at 1 < 2: cw1, drain-handoff. */
	scene_loads(&s, 2, 1, 1);
	scene_drain(&s, 0);
	in = input(&s, RS_ARRIVE_HANDOFF, 0, RS_RECORD_ATTACHED, 0);
	assert_int_equal(decide(&s.f, &in, &o), 0);
	expect(&s, &o, 1, RS_REASON_DRAIN_HANDOFF, 2);
	/* Its row no longer counts (an expired reservation): from nowhere
	 * without cw0, loads 0, 0, 0: G = 2, N = 1, cap 1; cw1, placed. */
	scene_loads(&s, 0, 0, 0);
	in = input(&s, RS_ARRIVE_HANDOFF, 0, RS_RECORD_NONE, -1);
	assert_int_equal(decide(&s.f, &in, &o), 0);
	expect(&s, &o, 1, RS_REASON_PLACED, 1);
	/* cw1 and cw2 draining: nowhere to hand it to. */
	scene_loads(&s, 1, 0, 0);
	scene_drain(&s, 1);
	scene_drain(&s, 2);
	in = input(&s, RS_ARRIVE_HANDOFF, 0, RS_RECORD_ATTACHED, 0);
	assert_int_equal(decide(&s.f, &in, &o), -ENOENT);
	scene_fini(&s);
}

static void test_deferred(void **state)
{
	struct scene s;
	struct rs_admit_outcome o;
	struct rs_admit_input in;

	(void)state;
	scene_init(&s);
	/* Accepted degraded at cw2, claimed: loads 0, 0, 1 (itself): N = 1 -
	 * 1 + 1 = 1, cap 1.  The rule from nowhere says cw0 (0 < 1), but cw2
	 * holding 1 is not above the cap: it stays (the rule's answer kept
	 * for the record). */
	scene_loads(&s, 0, 0, 1);
	in = input(&s, RS_ARRIVE_DEFERRED, 2, RS_RECORD_ATTACHED, 2);
	assert_int_equal(decide(&s.f, &in, &o), 0);
	expect(&s, &o, 0, RS_REASON_PLACED, 1);
	assert_true(o.stays);
	assert_false(o.fallback || o.over_cap);
	/* Loads 0, 0, 3: N = 3, cap 1; cw2 holds 3 > 1: it moves to the
	 * rule's cw0, placed. */
	scene_loads(&s, 0, 0, 3);
	assert_int_equal(decide(&s.f, &in, &o), 0);
	expect(&s, &o, 0, RS_REASON_PLACED, 1);
	assert_false(o.stays);
	/* Loads 1, 1, 3: N = 5 - 1 + 1 = 5, cap 2; cw2 holds 3 > 2; cw0 at 1
	 * < 2: moves to cw0. */
	scene_loads(&s, 1, 1, 3);
	assert_int_equal(decide(&s.f, &in, &o), 0);
	expect(&s, &o, 0, RS_REASON_PLACED, 2);
	assert_false(o.stays);
	/* Loads 2, 2, 3: N = 7 - 1 + 1 = 7, cap 3; cw2 holds 3, not above:
	 * stays, though the rule (cw0 at 2 < 3) says cw0. */
	scene_loads(&s, 2, 2, 3);
	assert_int_equal(decide(&s.f, &in, &o), 0);
	expect(&s, &o, 0, RS_REASON_PLACED, 3);
	assert_true(o.stays);
	/* At the owner cw0, loads 2, 1, 1: N = 4, cap 2; the rule keeps it
	 * (cw0 without it at 1 < 2): stays. */
	scene_loads(&s, 2, 1, 1);
	in = input(&s, RS_ARRIVE_DEFERRED, 0, RS_RECORD_ATTACHED, 0);
	assert_int_equal(decide(&s.f, &in, &o), 0);
	expect(&s, &o, 0, RS_REASON_PLACED, 2);
	assert_true(o.stays);
	scene_fini(&s);
}

static void test_bad_input(void **state)
{
	struct scene s;
	struct rs_admit_outcome o;
	struct rs_admit_input in;

	(void)state;
	scene_init(&s);
	scene_loads(&s, 1, 0, 0);
	in = input(&s, RS_ARRIVE_SERVICE, 0, RS_RECORD_NONE, -1);
	in.kind = (enum rs_arrival_kind)(RS_ARRIVE_DEFERRED + 1);
	assert_int_equal(decide(&s.f, &in, &o), -EINVAL);
	in = input(&s, RS_ARRIVE_SERVICE, 0, RS_RECORD_NONE, -1);
	in.record = (enum rs_record_kind)(RS_RECORD_LAPSED + 1);
	assert_int_equal(decide(&s.f, &in, &o), -EINVAL);
	in = input(&s, RS_ARRIVE_SERVICE, 0, RS_RECORD_NONE, 0); /* none, yet an index */
	assert_int_equal(decide(&s.f, &in, &o), -EINVAL);
	in = input(&s, RS_ARRIVE_SERVICE, 0, RS_RECORD_RESERVED, -1); /* a row, no index */
	assert_int_equal(decide(&s.f, &in, &o), -EINVAL);
	in = input(&s, RS_ARRIVE_SERVICE, 0, RS_RECORD_ATTACHED, 1); /* cw1's load 0 holds no row */
	assert_int_equal(decide(&s.f, &in, &o), -EINVAL);
	in = input(&s, RS_ARRIVE_SERVICE, 0, RS_RECORD_NONE, -1);
	in.at = 3;
	assert_int_equal(decide(&s.f, &in, &o), -EINVAL);
	in.at = -2;
	assert_int_equal(decide(&s.f, &in, &o), -EINVAL);
	in = input(&s, RS_ARRIVE_SERVICE, 0, RS_RECORD_ATTACHED, 0);
	in.record_at = 3;
	assert_int_equal(decide(&s.f, &in, &o), -EINVAL);
	in = input(&s, RS_ARRIVE_SERVICE, 0, RS_RECORD_NONE, -1);
	in.member_id = "";
	assert_int_equal(decide(&s.f, &in, &o), -EINVAL);
	/* Only an arrival through the Service may land nowhere. */
	for (enum rs_arrival_kind k = RS_ARRIVE_STAY; k <= RS_ARRIVE_DEFERRED; k++) {
		in = input(&s, k, -1, RS_RECORD_ATTACHED, 0);
		assert_int_equal(decide(&s.f, &in, &o), -EINVAL);
	}
	scene_fini(&s);
}

/* ---- (c) randomized, against the walk --------------------------------- */

/* Random gateway states: loads, dead and draining gateways (a draining one
 * with many supervisors, so that every active gateway can be full). */
static void randomize(struct test_rng *r, struct fleet *f)
{
	uint32_t spread = 1 + (uint32_t)test_rng_below(r, 12);

	for (int k = 0; k < 3; k++) {
		uint32_t gw = (uint32_t)test_rng_below(r, f->n);
		bool draining = test_rng_below(r, 6) == 0;

		fleet_set(f, gw,
			  (struct rs_gateway_load){
				  .load = (uint32_t)test_rng_below(r, draining ? spread * 4 * f->n : spread),
				  .live = test_rng_below(r, 10) != 0,
				  .draining = draining,
			  });
	}
}

static void fleet_of_size(struct fleet *f, size_t n)
{
	char (*names)[32] = calloc(n, sizeof(*names));
	const char **ids = calloc(n, sizeof(*ids));

	assert_true(names && ids);
	for (size_t i = 0; i < n; i++) {
		snprintf(names[i], sizeof(names[i]), "gw-%zu", i);
		ids[i] = names[i];
	}
	fleet_init(f, ids, n); /* the ring copies the ids */
	free(ids);
	free(names);
}

static const size_t sizes[] = { 1, 2, 3, 5, 17, 64 };

/* Through the Service with no row, wherever it landed: the walk's answer,
 * error included (-ENOENT when no gateway is active). */
static void test_service_equals_walk(void **state)
{
	struct test_rng r;
	size_t cases = 0;

	(void)state;
	test_rng_seed(&r, "admission: service vs walk", 31);
	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		struct fleet f;

		fleet_of_size(&f, sizes[si]);
		for (int round = 0; round < 1500; round++) {
			char member[32];
			struct rs_arrival a = { .member_id = member, .at = -1, .stale = -1 };
			struct rs_admit_input in = { .member_id = member, .kind = RS_ARRIVE_SERVICE,
						     .record = RS_RECORD_NONE, .record_at = -1 };
			struct rs_admit_outcome o;
			struct rs_decision walk;
			int err_walk, err;

			randomize(&r, &f);
			snprintf(member, sizeof(member), "sup-%llu", (unsigned long long)test_rng_below(&r, 1000000));
			in.at = (int)test_rng_below(&r, f.n + 1) - 1;
			in.liveness = test_rng_below(&r, 2);
			err_walk = rs_place(f.ring, f.snap, &a, &walk);
			err = decide(&f, &in, &o);
			assert_int_equal(err, err_walk);
			if (err)
				continue;
			assert_int_equal(o.decision.gateway, walk.gateway);
			assert_int_equal(o.decision.reason, walk.reason);
			assert_int_equal(o.decision.cap, walk.cap);
			assert_int_equal(o.decision.full, walk.full);
			assert_false(o.fallback || o.over_cap || o.stays);
			cases++;
		}
		fleet_fini(&f);
	}
	printf("# admission service vs walk: %zu decisions\n", cases);
	assert_true(cases > 0);
}

static bool model_serving(const struct rs_gateway_load *gws, int g)
{
	return g >= 0 && gws[g].live && !gws[g].draining;
}

static void model_override(struct rs_decision *d, int gw, enum rs_reason reason)
{
	d->gateway = (uint32_t)gw;
	d->reason = reason;
	d->full = false;
}

/* The admission as store.h states it, decided by the walk over a copy of
 * the snapshot (a gateway out of the search: the copy marks it draining). */
static int model(const struct fleet *f, const struct rs_admit_input *in, struct rs_admit_outcome *out)
{
	struct rs_gateway_load *gws = calloc(f->n, sizeof(*gws));
	bool reserved = in->record == RS_RECORD_RESERVED, lapsed = in->record == RS_RECORD_LAPSED;
	struct rs_arrival a = { .member_id = in->member_id, .at = -1, .stale = lapsed ? -1 : in->record_at };
	uint32_t here = in->at >= 0 ? f->snap[in->at].load : 0;
	int err;

	assert_non_null(gws);
	memcpy(gws, f->snap, f->n * sizeof(*gws));
	*out = (struct rs_admit_outcome){ 0 };
	switch (in->kind) {
	case RS_ARRIVE_SERVICE:
		/* The rule; then at its reservation here (serving) it stays,
		 * else its reservation elsewhere (serving, below cap without
		 * it) takes it. */
		err = rs_place(f->ring, gws, &a, &out->decision);
		if (err)
			break;
		if (reserved && in->record_at == in->at) {
			if (model_serving(gws, in->at) && out->decision.gateway != (uint32_t)in->at)
				model_override(&out->decision, in->at, RS_REASON_RESERVED);
		} else if (reserved && model_serving(gws, in->record_at) &&
			   out->decision.gateway != (uint32_t)in->record_at &&
			   gws[in->record_at].load - 1 < out->decision.cap) {
			model_override(&out->decision, in->record_at, RS_REASON_RESERVED);
		}
		break;
	case RS_ARRIVE_STAY:
		if ((reserved && in->record_at != in->at) || lapsed) {
			/* A Service fallback: the ring without its target; once
			 * its reservation lapsed, the whole ring. */
			out->fallback = true;
			if (reserved)
				gws[in->record_at].draining = true;

			err = rs_place(f->ring, gws, &a, &out->decision);
			if (!err && model_serving(f->snap, in->at) && (here < out->decision.cap || in->liveness)) {
				out->over_cap = here >= out->decision.cap;
				model_override(&out->decision, in->at, RS_REASON_STAY);
			}
			break;
		}
		/* fall through - a plain stay */
	case RS_ARRIVE_REDIRECTED:
		a.stay = true;
		a.at = in->at;
		err = rs_place(f->ring, gws, &a, &out->decision);
		break;
	case RS_ARRIVE_HANDOFF:
		gws[in->at].draining = true;
		a.handoff = in->record_at >= 0 && !lapsed;
		err = rs_place(f->ring, gws, &a, &out->decision);
		if (!err)
			assert_int_not_equal(out->decision.gateway, in->at);
		break;
	case RS_ARRIVE_DEFERRED:
		err = rs_place(f->ring, gws, &a, &out->decision);
		out->stays = !err && (out->decision.gateway == (uint32_t)in->at || here <= out->decision.cap);
		break;
	default:
		err = -EINVAL;
	}
	free(gws);
	if (err)
		*out = (struct rs_admit_outcome){ 0 };
	return err;
}

/* Every kind, every kind of row (counted at a live gateway, as the store
 * gives it): the model's answer. */
static void test_kinds_equal_model(void **state)
{
	struct test_rng r;
	size_t cases = 0, by_reason[RS_REASON_RESERVED + 1] = { 0 }, fallbacks = 0, over = 0, stays = 0;

	(void)state;
	test_rng_seed(&r, "admission: kinds vs model", 32);
	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		struct fleet f;

		fleet_of_size(&f, sizes[si]);
		for (int round = 0; round < 3000; round++) {
			char member[32];
			struct rs_admit_input in = { .member_id = member };
			struct rs_admit_outcome o, want;
			int err_want, err;

			randomize(&r, &f);
			snprintf(member, sizeof(member), "sup-%llu", (unsigned long long)test_rng_below(&r, 1000000));
			in.kind = (enum rs_arrival_kind)test_rng_below(&r, RS_ARRIVE_DEFERRED + 1);
			in.at = (int)test_rng_below(&r, f.n);
			if (in.kind == RS_ARRIVE_SERVICE && test_rng_below(&r, 4) == 0)
				in.at = -1;
			in.record = (enum rs_record_kind)test_rng_below(&r, RS_RECORD_LAPSED + 1);
			if (in.kind == RS_ARRIVE_STAY && test_rng_below(&r, 2))
				in.record = RS_RECORD_RESERVED; /* a fallback more often */
			in.record_at = -1;
			if (in.record != RS_RECORD_NONE) {
				/* Often where it landed, as a reservation here or a
				 * handoff's own row; else anywhere. */
				int g = in.at >= 0 && test_rng_below(&r, 2) ? in.at : (int)test_rng_below(&r, f.n);

				if (in.record == RS_RECORD_LAPSED && test_rng_below(&r, 4) == 0)
					in.record_at = -1; /* at a gateway gone */
				else if (f.snap[g].live && (f.snap[g].load > 0 || in.record == RS_RECORD_LAPSED))
					in.record_at = g;
				else
					in.record = RS_RECORD_NONE;
			}
			in.liveness = test_rng_below(&r, 2);
			err_want = model(&f, &in, &want);
			err = decide(&f, &in, &o);
			assert_int_equal(err, err_want);
			if (err) {
				assert_int_equal(err, -ENOENT);
				continue;
			}
			assert_int_equal(o.decision.gateway, want.decision.gateway);
			assert_int_equal(o.decision.reason, want.decision.reason);
			assert_int_equal(o.decision.cap, want.decision.cap);
			assert_int_equal(o.decision.full, want.decision.full);
			assert_int_equal(o.fallback, want.fallback);
			assert_int_equal(o.over_cap, want.over_cap);
			assert_int_equal(o.stays, want.stays);
			cases++;
			by_reason[o.decision.reason]++;
			fallbacks += o.fallback;
			over += o.over_cap;
			stays += o.stays;
		}
		fleet_fini(&f);
	}
	printf("# admission kinds vs model: %zu decisions (placed %zu, owner-fallback %zu, stay %zu, "
	       "drain-handoff %zu, reserved %zu; fallbacks %zu, over cap %zu, deferred stays %zu)\n",
	       cases, by_reason[RS_REASON_PLACED], by_reason[RS_REASON_OWNER_FALLBACK], by_reason[RS_REASON_STAY],
	       by_reason[RS_REASON_DRAIN_HANDOFF], by_reason[RS_REASON_RESERVED], fallbacks, over, stays);
	/* Every path was taken. */
	for (int reason = RS_REASON_PLACED; reason <= RS_REASON_RESERVED; reason++)
		if (reason != RS_REASON_OWNER_FALLBACK) /* unreachable from a consistent snapshot */
			assert_true(by_reason[reason] > 0);
	assert_true(fallbacks > 0 && over > 0 && stays > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_goes_home),
		cmocka_unit_test(test_reserved_here),
		cmocka_unit_test(test_service_fallback),
		cmocka_unit_test(test_handoff),
		cmocka_unit_test(test_deferred),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_service_equals_walk),
		cmocka_unit_test(test_kinds_equal_model),
	};

	return cmocka_run_group_tests_name("admission", tests, NULL, NULL);
}
