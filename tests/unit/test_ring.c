/* SPDX-License-Identifier: Apache-2.0 */
/* test_ring.c - the ring against the independent vectors, and its
 * properties: order independence, incremental add/remove equal to a
 * rebuild, and removal moving only the removed gateway's keys. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ringsteer/ring.h"
#include "testutil.h"

static void assert_rings_equal(const struct rs_ring *a, const struct rs_ring *b)
{
	assert_int_equal(rs_ring_gateway_count(a), rs_ring_gateway_count(b));
	assert_int_equal(rs_ring_point_count(a), rs_ring_point_count(b));
	for (size_t g = 0; g < rs_ring_gateway_count(a); g++)
		assert_string_equal(rs_ring_gateway_id(a, g), rs_ring_gateway_id(b, g));
	for (size_t i = 0; i < rs_ring_point_count(a); i++) {
		assert_true(rs_ring_point_value(a, i) == rs_ring_point_value(b, i));
		assert_int_equal(rs_ring_point_gateway(a, i), rs_ring_point_gateway(b, i));
	}
}

static struct rs_ring *ring_of(const char *const *ids, size_t n)
{
	struct rs_ring *ring = NULL;

	assert_int_equal(rs_ring_new(ids, n, &ring), 0);
	return ring;
}

static void test_vectors(void **state)
{
	json_t *root = test_load_vectors("ring-sha256-be64.json");
	json_t *set, *c;
	size_t si, ci, checked = 0;

	(void)state;
	json_array_foreach(json_object_get(root, "sets"), si, set) {
		json_t *gws = json_object_get(set, "gateways");
		size_t n = json_array_size(gws);
		const char **ids = calloc(n, sizeof(*ids));
		uint32_t *order = calloc(n, sizeof(*order));
		struct rs_ring *ring;

		assert_non_null(ids);
		assert_non_null(order);
		assert_int_equal(json_integer_value(json_object_get(set, "vnodes")), RS_RING_VNODES);
		for (size_t i = 0; i < n; i++)
			ids[i] = json_string_value(json_array_get(gws, i));
		ring = ring_of(ids, n);
		json_array_foreach(json_object_get(set, "cases"), ci, c) {
			const char *member = json_string_value(json_object_get(c, "member_id"));
			json_t *cw = json_object_get(c, "clockwise");
			uint64_t point;
			int owner;

			assert_int_equal(rs_ring_point(member, strlen(member), &point), 0);
			assert_true(point == test_json_u64(json_object_get(c, "point")));
			owner = rs_ring_owner(ring, member);
			assert_true(owner >= 0);
			assert_string_equal(rs_ring_gateway_id(ring, (size_t)owner),
					    json_string_value(json_object_get(c, "owner")));
			assert_int_equal(rs_ring_walk(ring, member, order, n), (int)json_array_size(cw));
			for (size_t k = 0; k < json_array_size(cw); k++)
				assert_string_equal(rs_ring_gateway_id(ring, order[k]),
						    json_string_value(json_array_get(cw, k)));
			checked++;
		}
		rs_ring_free(ring);
		free(order);
		free(ids);
	}
	printf("# ring vectors: %zu cases\n", checked);
	assert_true(checked > 0);
	json_decref(root);
}

static char **make_ids(size_t n, const char *prefix)
{
	char **ids = calloc(n, sizeof(*ids));

	assert_non_null(ids);
	for (size_t i = 0; i < n; i++) {
		ids[i] = malloc(32);
		assert_non_null(ids[i]);
		snprintf(ids[i], 32, "%s-%zu", prefix, i);
	}
	return ids;
}

static void free_ids(char **ids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
}

static void test_order_duplicates_empty(void **state)
{
	struct test_rng r;
	char **ids = make_ids(40, "gw");
	const char *with_noise[44];
	struct rs_ring *a, *b;

	(void)state;
	test_rng_seed(&r, "ring order", 11);
	a = ring_of((const char *const *)ids, 40);
	assert_int_equal(rs_ring_gateway_count(a), 40);
	assert_int_equal(rs_ring_point_count(a), 40 * RS_RING_VNODES);
	for (int round = 0; round < 5; round++) {
		for (size_t i = 0; i < 40; i++)
			with_noise[i] = ids[i];
		with_noise[40] = "";      /* ignored */
		with_noise[41] = ids[3];  /* repeated: counts once */
		with_noise[42] = ids[17];
		with_noise[43] = "";
		test_shuffle(&r, (void **)with_noise, 44);
		b = ring_of(with_noise, 44);
		assert_rings_equal(a, b);
		rs_ring_free(b);
	}
	/* Points are in strictly increasing (point, gateway) order. */
	for (size_t i = 1; i < rs_ring_point_count(a); i++) {
		uint64_t p = rs_ring_point_value(a, i - 1), q = rs_ring_point_value(a, i);

		assert_true(p < q || (p == q && rs_ring_point_gateway(a, i - 1) < rs_ring_point_gateway(a, i)));
	}
	rs_ring_free(a);
	free_ids(ids, 40);
}

static void test_bad_ids_and_empty_ring(void **state)
{
	char long_id[RS_ID_MAX + 2];
	const char *ids[] = { "ok", long_id };
	const char *only_empty[] = { "", "" };
	struct rs_ring *ring = NULL;
	uint32_t out[2];

	(void)state;
	memset(long_id, 'a', sizeof(long_id) - 1);
	long_id[sizeof(long_id) - 1] = '\0';
	assert_int_equal(rs_ring_new(ids, 2, &ring), -EINVAL);
	ring = ring_of(only_empty, 2);
	assert_int_equal(rs_ring_gateway_count(ring), 0);
	assert_int_equal(rs_ring_owner(ring, "member"), -ENOENT);
	assert_int_equal(rs_ring_walk(ring, "member", out, 2), 0);
	assert_int_equal(rs_ring_add(ring, ""), -EINVAL);
	assert_int_equal(rs_ring_add(ring, long_id), -EINVAL);
	assert_int_equal(rs_ring_remove(ring, "absent"), -ENOENT);
	assert_int_equal(rs_ring_add(ring, "a"), 0);
	assert_int_equal(rs_ring_add(ring, "a"), -EEXIST);
	assert_int_equal(rs_ring_owner(ring, "member"), 0);
	assert_null(rs_ring_gateway_id(ring, 1));
	assert_int_equal(rs_ring_find(ring, "a"), 0);
	assert_int_equal(rs_ring_find(ring, "b"), -ENOENT);
	rs_ring_free(ring);
}

static void test_add_remove_match_rebuild(void **state)
{
	struct test_rng r;
	char **ids = make_ids(64, "node");
	const char *present[64];
	size_t n_present = 0;
	struct rs_ring *inc, *full;

	(void)state;
	test_rng_seed(&r, "ring add/remove", 12);
	inc = ring_of(NULL, 0);
	for (int step = 0; step < 200; step++) {
		size_t pick = (size_t)test_rng_below(&r, 64);
		int at = rs_ring_find(inc, ids[pick]);

		if (at >= 0) {
			assert_int_equal(rs_ring_remove(inc, ids[pick]), 0);
			for (size_t i = 0; i < n_present; i++)
				if (present[i] == ids[pick])
					present[i] = present[--n_present];
		} else {
			assert_int_equal(rs_ring_add(inc, ids[pick]), 0);
			present[n_present++] = ids[pick];
		}
		full = ring_of(present, n_present);
		assert_rings_equal(inc, full);
		rs_ring_free(full);
	}
	rs_ring_free(inc);
	free_ids(ids, 64);
}

static void test_removal_moves_only_its_keys(void **state)
{
	struct test_rng r;
	char **ids = make_ids(25, "gateway");
	struct rs_ring *ring, *without, *rebuilt;
	size_t moved = 0, owned = 0;

	(void)state;
	test_rng_seed(&r, "ring removal", 13);
	ring = ring_of((const char *const *)ids, 25);
	for (int round = 0; round < 5; round++) {
		const char *gone = ids[test_rng_below(&r, 25)];

		assert_int_equal(rs_ring_without(ring, gone, &without), 0);
		assert_int_equal(rs_ring_gateway_count(without), 24);
		assert_int_equal(rs_ring_find(without, gone), -ENOENT);
		/* without == a ring built from the other ids */
		{
			const char *rest[24];
			size_t k = 0;

			for (size_t i = 0; i < 25; i++)
				if (ids[i] != gone)
					rest[k++] = ids[i];
			rebuilt = ring_of(rest, 24);
			assert_rings_equal(without, rebuilt);
			rs_ring_free(rebuilt);
		}
		for (int key = 0; key < 2000; key++) {
			char member[32];
			const char *before, *after;

			snprintf(member, sizeof(member), "sup-%llu", (unsigned long long)test_rng_next(&r));
			before = rs_ring_gateway_id(ring, (size_t)rs_ring_owner(ring, member));
			after = rs_ring_gateway_id(without, (size_t)rs_ring_owner(without, member));
			if (strcmp(before, gone) == 0) {
				owned++;
				moved += strcmp(after, gone) != 0;
			} else {
				assert_string_equal(before, after);
			}
		}
		rs_ring_free(without);
	}
	assert_int_equal(moved, owned);
	assert_true(owned > 0);
	/* Removing an absent id copies. */
	assert_int_equal(rs_ring_without(ring, "absent", &without), 0);
	assert_rings_equal(ring, without);
	rs_ring_free(without);
	rs_ring_free(ring);
	free_ids(ids, 25);
}

static void test_successor_wraps(void **state)
{
	const char *ids[] = { "a", "b", "c" };
	struct rs_ring *ring = ring_of(ids, 3);
	size_t last = rs_ring_point_count(ring) - 1;

	(void)state;
	assert_int_equal(rs_ring_successor(ring, 0), 0);
	assert_int_equal(rs_ring_successor(ring, rs_ring_point_value(ring, last)), last);
	assert_int_equal(rs_ring_successor(ring, rs_ring_point_value(ring, last) + 1), 0);
	assert_int_equal(rs_ring_successor(ring, rs_ring_point_value(ring, 5)), 5);
	assert_int_equal(rs_ring_successor(ring, rs_ring_point_value(ring, 5) + 1), 6);
	rs_ring_free(ring);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_order_duplicates_empty),
		cmocka_unit_test(test_bad_ids_and_empty_ring),
		cmocka_unit_test(test_add_remove_match_rebuild),
		cmocka_unit_test(test_removal_moves_only_its_keys),
		cmocka_unit_test(test_successor_wraps),
	};

	return cmocka_run_group_tests_name("ring", tests, NULL, NULL);
}
