/* SPDX-License-Identifier: Apache-2.0 */
/* testutil.h - what the unit tests share: a seeded generator (the seed is
 * printed, and RS_TEST_SEED replays a run) and the vector files. */
#ifndef RS_TESTUTIL_H
#define RS_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct test_rng {
	uint64_t state;
};

/* Seeds r from RS_TEST_SEED, else from fallback; prints the seed used. */
void test_rng_seed(struct test_rng *r, const char *suite, uint64_t fallback);

/* Returns the next 64 random bits (splitmix64). */
uint64_t test_rng_next(struct test_rng *r);

/* Returns a uniform value in [0, bound), bound > 0. */
uint64_t test_rng_below(struct test_rng *r, uint64_t bound);

/* Loads RS_TEST_DATA/name (default tests/data) as JSON; fails the test on error. */
json_t *test_load_vectors(const char *name);

/* Returns an unsigned 64-bit vector value (an integer, or a quoted big one). */
uint64_t test_json_u64(const json_t *v);

/* Shuffles n pointers in place. */
void test_shuffle(struct test_rng *r, void **items, size_t n);

#endif
