/* SPDX-License-Identifier: Apache-2.0 */
/* test_swarm_gap.c - the swarm's gap bookkeeping (user/swarm/gap.c): a
 * gap runs from the first loss to the next accept, a failed redial does
 * not restart it, a make-before-break move (no loss) counts nothing, and
 * a gap still open counts toward the longest. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "swarm/gap.h"

static void test_make_before_break_is_no_gap(void **state)
{
	struct swarm_gaps g = { 0 };
	uint64_t lost = 0;

	(void)state;
	swarm_gap_close(&g, &lost, 5000); /* accepted, nothing lost before */
	assert_int_equal(g.count, 0);
	assert_int_equal(g.max_us, 0);
	assert_int_equal(swarm_gap_longest(&g, lost, 9000), 0);
}

static void test_gap_from_first_loss_to_accept(void **state)
{
	struct swarm_gaps g = { 0 };
	uint64_t lost = 0;

	(void)state;
	swarm_gap_open(&lost, 1000);
	swarm_gap_open(&lost, 1700); /* the redial failed too: same gap */
	assert_int_equal(lost, 1000);
	swarm_gap_close(&g, &lost, 3500);
	assert_int_equal(lost, 0);
	assert_int_equal(g.count, 1);
	assert_int_equal(g.max_us, 2500);
	/* A shorter one later leaves the longest alone. */
	swarm_gap_open(&lost, 10000);
	swarm_gap_close(&g, &lost, 10100);
	assert_int_equal(g.count, 2);
	assert_int_equal(g.max_us, 2500);
}

static void test_open_gap_counts_toward_longest(void **state)
{
	struct swarm_gaps g = { .max_us = 300, .count = 1 };
	uint64_t lost = 0;

	(void)state;
	swarm_gap_open(&lost, 2000);
	assert_int_equal(swarm_gap_longest(&g, lost, 2100), 300);
	assert_int_equal(swarm_gap_longest(&g, lost, 4000), 2000);
	assert_int_equal(g.count, 1); /* counted when it ends, not before */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_make_before_break_is_no_gap),
		cmocka_unit_test(test_gap_from_first_loss_to_accept),
		cmocka_unit_test(test_open_gap_counts_toward_longest),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
