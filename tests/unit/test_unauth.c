/* SPDX-License-Identifier: Apache-2.0 */
/* test_unauth.c - the unauthenticated pool (user/gateway/unauth.c) and its
 * fairness (unauth_fair.c): a source's share is the pool over the sources
 * in it, counting the arrival's; a full pool refuses a source at its share
 * and lets one under it evict the oldest connection of the largest source;
 * the per-source limit comes first; counts and the largest source follow
 * insertions and removals; pools hashing under different keys find the
 * same sources, and a full pool of addresses from one /64 keeps every
 * hash chain short. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/unauth.h"

static enum gw_unauth_verdict fair(uint32_t max_total, uint32_t per, size_t total, size_t sources, uint32_t mine,
				   uint32_t largest)
{
	struct gw_unauth_counts c = { .max_total = max_total, .max_per_source = per, .total = total,
				      .sources = sources, .mine = mine, .largest = largest };

	return gw_unauth_fair(&c);
}

static void test_fair_decisions(void **state)
{
	(void)state;
	/* Room left: first come, first served. */
	assert_int_equal(fair(256, 8, 255, 40, 0, 8), GW_UNAUTH_OK);
	/* The per-source limit first, full pool or not. */
	assert_int_equal(fair(256, 8, 100, 20, 8, 8), GW_UNAUTH_PER_SOURCE);
	assert_int_equal(fair(256, 8, 256, 32, 8, 8), GW_UNAUTH_PER_SOURCE);
	/* The case: 32 sources x 8 hold 256; a 33rd's share is 7 and
	 * the largest holds 8: it evicts. */
	assert_int_equal(fair(256, 8, 256, 32, 0, 8), GW_UNAUTH_EVICT);
	/* One of the 32 reconnecting (at 7 after losing one): its share is
	 * 256 / 33 = 7, it is not under it: refused, it cannot win back. */
	assert_int_equal(fair(256, 8, 256, 33, 7, 8), GW_UNAUTH_TOTAL);
	/* Every source at its share: nobody to take from. */
	assert_int_equal(fair(8, 8, 8, 4, 2, 2), GW_UNAUTH_TOTAL); /* 4 x 2, one of them again: share 2 */
	assert_int_equal(fair(8, 8, 8, 4, 0, 2), GW_UNAUTH_EVICT); /* a 5th: share 8 / 5 = 1, largest 2 */
	assert_int_equal(fair(8, 8, 8, 8, 0, 1), GW_UNAUTH_TOTAL); /* share 8 / 9 = 0: more sources than places */
	/* A source already in, under its share, with one hogging the pool. */
	assert_int_equal(fair(10, 10, 10, 2, 1, 9), GW_UNAUTH_EVICT); /* share 5 */
	assert_int_equal(fair(10, 10, 10, 2, 5, 5), GW_UNAUTH_TOTAL);
}

static void test_fair_share(void **state)
{
	struct gw_unauth_counts c = { .max_total = 256, .max_per_source = 8, .total = 256, .sources = 32 };

	(void)state;
	assert_int_equal(gw_unauth_share(&c), 7); /* a newcomer counts itself in */
	c.mine = 3;
	assert_int_equal(gw_unauth_share(&c), 8);
}

static struct gw_unauth_key key(uint8_t last)
{
	struct gw_unauth_key k = { { 0 } };

	k.addr[10] = 0xff;
	k.addr[11] = 0xff;
	k.addr[12] = 127;
	k.addr[15] = last;
	return k;
}

static void test_pool_evicts_oldest_of_largest(void **state)
{
	struct gw_unauth t;
	struct gw_unauth_node n[8] = { 0 }, late = { 0 };
	struct gw_unauth_node *victim;
	struct gw_unauth_key a = key(1), b = key(2), c = key(3);

	(void)state;
	assert_int_equal(gw_unauth_init(&t, 6, 4), 0);
	/* a holds 4 (n[0] oldest), b holds 2: the pool (6) is full. */
	for (int i = 0; i < 4; i++)
		assert_int_equal(gw_unauth_insert(&t, &a, &n[i]), 0);
	assert_int_equal(gw_unauth_insert(&t, &b, &n[4]), 0);
	assert_int_equal(gw_unauth_insert(&t, &b, &n[5]), 0);
	assert_int_equal(t.total, 6);
	assert_int_equal(t.sources, 2);
	assert_int_equal(t.largest, 4);
	/* b (share 6 / 2 = 3, holds 2) evicts a's oldest. */
	assert_int_equal(gw_unauth_admit(&t, &b, &victim), GW_UNAUTH_EVICT);
	assert_ptr_equal(victim, &n[0]);
	/* c, new (share 6 / 3 = 2): the same victim. */
	assert_int_equal(gw_unauth_admit(&t, &c, &victim), GW_UNAUTH_EVICT);
	assert_ptr_equal(victim, &n[0]);
	gw_unauth_remove(&t, victim);
	assert_int_equal(gw_unauth_count(&t, &a), 3);
	assert_int_equal(gw_unauth_admit(&t, &c, &victim), GW_UNAUTH_OK);
	assert_int_equal(gw_unauth_insert(&t, &c, &late), 0);
	/* a (3, share 2 with c in) gets nothing back by reconnecting. */
	gw_unauth_remove(&t, &n[1]);
	assert_int_equal(gw_unauth_insert(&t, &a, &n[1]), 0);
	assert_int_equal(gw_unauth_admit(&t, &a, &victim), GW_UNAUTH_TOTAL);
	assert_null(victim);
	/* Past a limit, insert refuses and changes nothing. */
	assert_int_equal(gw_unauth_insert(&t, &c, &n[6]), -ENOSPC);
	assert_int_equal(t.total, 6);
	gw_unauth_free(&t);
}

static void test_pool_counts_follow_removals(void **state)
{
	struct gw_unauth t;
	struct gw_unauth_node n[3] = { 0 };
	struct gw_unauth_key a = key(1), b = key(2);
	struct gw_unauth_node *victim;

	(void)state;
	assert_int_equal(gw_unauth_init(&t, 8, 2), 0);
	assert_int_equal(gw_unauth_insert(&t, &a, &n[0]), 0);
	assert_int_equal(gw_unauth_insert(&t, &a, &n[1]), 0);
	assert_int_equal(gw_unauth_admit(&t, &a, &victim), GW_UNAUTH_PER_SOURCE);
	assert_int_equal(gw_unauth_insert(&t, &b, &n[2]), 0);
	assert_int_equal(t.largest, 2);
	gw_unauth_remove(&t, &n[1]);
	assert_int_equal(t.largest, 1);
	gw_unauth_remove(&t, &n[1]); /* twice: the second is nothing */
	gw_unauth_remove(&t, &n[0]);
	gw_unauth_remove(&t, &n[2]);
	assert_int_equal(t.total, 0);
	assert_int_equal(t.sources, 0);
	assert_int_equal(t.largest, 0);
	assert_int_equal(gw_unauth_count(&t, &a), 0);
	gw_unauth_free(&t);
}

/* Many sources come and go through a small pool: entries are reused, the
 * table never holds more than max_total, counts stay exact. */
static void test_pool_churn(void **state)
{
	struct gw_unauth t;
	struct gw_unauth_node n[4] = { 0 };

	(void)state;
	assert_int_equal(gw_unauth_init(&t, 4, 1), 0);
	for (unsigned i = 0; i < 10000; i++) {
		struct gw_unauth_key k = key(0);

		memcpy(k.addr, &i, sizeof(i));
		gw_unauth_remove(&t, &n[i % 4]);
		assert_int_equal(gw_unauth_insert(&t, &k, &n[i % 4]), 0);
		assert_int_equal(gw_unauth_count(&t, &k), 1);
	}
	assert_int_equal(t.total, 4);
	assert_int_equal(t.sources, 4);
	gw_unauth_free(&t);
}

/* 2001:db8::/64 with interface id i: a peer with one /64 has 2^64 of them. */
static struct gw_unauth_key in_one_64(uint64_t i)
{
	struct gw_unauth_key k = { { 0x20, 0x01, 0x0d, 0xb8 } };

	for (int b = 0; b < 8; b++)
		k.addr[15 - b] = (uint8_t)(i >> (8 * b));
	return k;
}

/* A flood: GW_UNAUTH_MAX sources from one /64 into two pools whose hashes
 * have different keys.  Both find every source and nothing else; the pool
 * is full; no hash chain is long (uthash doubles its buckets when a chain
 * reaches 10, and gives up doubling when that does not spread them, so a
 * hash the keys defeat shows as one chain of thousands); emptied, the
 * pools hold nothing. */
static void test_pool_keys_and_flood(void **state)
{
	struct gw_unauth pool[2];
	struct gw_unauth_node *nodes[2];
	struct gw_unauth_node *victim;

	(void)state;
	for (int p = 0; p < 2; p++) {
		assert_int_equal(gw_unauth_init(&pool[p], GW_UNAUTH_MAX, 1), 0);
		memset(pool[p].hash_key.b, p ? 0x5a : 0x00, sizeof(pool[p].hash_key.b));
		nodes[p] = calloc(GW_UNAUTH_MAX, sizeof(*nodes[p]));
		assert_non_null(nodes[p]);
	}
	for (uint64_t i = 0; i < GW_UNAUTH_MAX; i++) {
		struct gw_unauth_key k = in_one_64(i);

		for (int p = 0; p < 2; p++)
			assert_int_equal(gw_unauth_insert(&pool[p], &k, &nodes[p][i]), 0);
	}
	for (int p = 0; p < 2; p++) {
		struct gw_unauth_key absent = in_one_64(GW_UNAUTH_MAX);
		struct gw_unauth_node extra = { 0 };

		assert_int_equal(pool[p].sources, GW_UNAUTH_MAX);
		for (uint64_t i = 0; i < GW_UNAUTH_MAX; i++) {
			struct gw_unauth_key k = in_one_64(i);

			assert_int_equal(gw_unauth_count(&pool[p], &k), 1);
		}
		assert_int_equal(gw_unauth_count(&pool[p], &absent), 0);
		assert_int_equal(gw_unauth_admit(&pool[p], &absent, &victim), GW_UNAUTH_TOTAL);
		assert_int_equal(gw_unauth_insert(&pool[p], &absent, &extra), -ENOSPC);
		assert_in_range(gw_unauth_chain_max(&pool[p]), 1, 32);
		for (uint64_t i = 0; i < GW_UNAUTH_MAX; i++)
			gw_unauth_remove(&pool[p], &nodes[p][i]);
		assert_int_equal(pool[p].sources, 0);
		assert_int_equal(pool[p].total, 0);
		assert_int_equal(gw_unauth_chain_max(&pool[p]), 0);
		gw_unauth_free(&pool[p]);
		free(nodes[p]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fair_decisions),
		cmocka_unit_test(test_fair_share),
		cmocka_unit_test(test_pool_evicts_oldest_of_largest),
		cmocka_unit_test(test_pool_counts_follow_removals),
		cmocka_unit_test(test_pool_churn),
		cmocka_unit_test(test_pool_keys_and_flood),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
