/* SPDX-License-Identifier: Apache-2.0 */
/* test_succ_bitset.c - the successor index against a plain array, across
 * sizes that give one to four levels and word-boundary edges. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

#include "placement/succ_bitset.h"
#include "testutil.h"

static size_t naive_next(const bool *set, size_t n, size_t from)
{
	for (size_t i = from; i < n; i++)
		if (set[i])
			return i;
	return RS_SUCC_NONE;
}

static void test_matches_naive(void **state)
{
	static const size_t sizes[] = { 1, 63, 64, 65, 4095, 4096, 4097, 300000 };
	struct test_rng r;

	(void)state;
	test_rng_seed(&r, "succ bitset", 31);
	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		size_t n = sizes[si];
		bool *set = calloc(n, sizeof(*set));
		struct rs_succ_bitset s;

		assert_non_null(set);
		assert_int_equal(rs_succ_bitset_init(&s, n), 0);
		assert_int_equal(rs_succ_bitset_next_wrap(&s, 0), RS_SUCC_NONE);
		assert_int_equal(rs_succ_bitset_next(&s, n), RS_SUCC_NONE);
		for (int step = 0; step < (n > 10000 ? 600 : 20000); step++) {
			/* Sparse sets make the climb reach the top levels. */
			size_t i = (size_t)test_rng_below(&r, n), from = (size_t)test_rng_below(&r, n);
			size_t want;

			if (test_rng_below(&r, 3) == 0) {
				rs_succ_bitset_set(&s, i);
				set[i] = true;
			} else {
				rs_succ_bitset_clear(&s, i);
				set[i] = false;
			}
			assert_int_equal(rs_succ_bitset_next(&s, from), naive_next(set, n, from));
			want = naive_next(set, n, from);
			if (want == RS_SUCC_NONE)
				want = naive_next(set, n, 0);
			assert_int_equal(rs_succ_bitset_next_wrap(&s, from), want);
		}
		rs_succ_bitset_fini(&s);
		free(set);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matches_naive),
	};

	return cmocka_run_group_tests_name("succ_bitset", tests, NULL, NULL);
}
