/* test_drain_pacer.c - the drain's pacing: membership first (bounded),
 * one redirect per pace interval, the budget closes the rest, done when
 * nobody is left; driven by a simulated clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ringsteer/drain.h"

static void test_paced_until_done(void **state)
{
	struct rs_drain d;
	struct rs_drain_config cfg = { .pace_ms = 50, .budget_ms = 25000, .membership_wait_ms = 5000 };
	int64_t now = 1000, wake = 0, sends[10];
	size_t waiting = 10, in_flight = 0, n = 0;

	(void)state;
	rs_drain_start(&d, &cfg, now);
	/* Nobody else serving yet: wait, re-looking each pace interval. */
	assert_int_equal(rs_drain_next(&d, now, waiting, 0, false, &wake), RS_DRAIN_WAIT);
	assert_int_equal(wake, now + 50);
	now += 120; /* the replacement shows up */
	while (waiting > 0) {
		enum rs_drain_action a = rs_drain_next(&d, now, waiting, in_flight, true, &wake);

		if (a == RS_DRAIN_HAND_OFF) {
			sends[n++] = now;
			rs_drain_sent(&d, now);
			waiting--;
			in_flight++;
		} else {
			assert_int_equal(a, RS_DRAIN_WAIT);
			assert_true(wake > now);
			now = wake;
		}
	}
	for (size_t i = 1; i < n; i++)
		assert_true(sends[i] - sends[i - 1] >= 50); /* paced */
	assert_int_equal(sends[0], 1120);
	assert_int_equal(sends[9], 1120 + 9 * 50);
	/* Redirected ones still attached: keep looking, then done. */
	assert_int_equal(rs_drain_next(&d, now, 0, 3, true, &wake), RS_DRAIN_WAIT);
	assert_int_equal(rs_drain_next(&d, now, 0, 0, true, &wake), RS_DRAIN_DONE);
}

static void test_membership_wait_is_bounded(void **state)
{
	struct rs_drain d;
	int64_t wake = 0;

	(void)state;
	rs_drain_start(&d, NULL, 0); /* defaults: 50 ms pace, 5 s wait, 25 s budget */
	assert_int_equal(rs_drain_next(&d, 4999, 1, 0, false, &wake), RS_DRAIN_WAIT);
	assert_int_equal(wake, 5000);
	/* The wait ran out with nobody seen: go anyway (the store decides). */
	assert_int_equal(rs_drain_next(&d, 5000, 1, 0, false, &wake), RS_DRAIN_HAND_OFF);
}

static void test_budget_closes_the_rest(void **state)
{
	struct rs_drain d;
	struct rs_drain_config cfg = { .pace_ms = 50, .budget_ms = 1000, .membership_wait_ms = 200 };
	int64_t wake = 0;

	(void)state;
	rs_drain_start(&d, &cfg, 0);
	assert_int_equal(rs_drain_next(&d, 0, 5, 0, true, &wake), RS_DRAIN_HAND_OFF);
	rs_drain_sent(&d, 0);
	assert_int_equal(rs_drain_next(&d, 10, 4, 1, true, &wake), RS_DRAIN_WAIT);
	assert_int_equal(wake, 50);
	assert_int_equal(rs_drain_next(&d, 990, 0, 1, true, &wake), RS_DRAIN_WAIT);
	assert_true(wake <= 1000);
	assert_int_equal(rs_drain_next(&d, 1000, 0, 1, true, &wake), RS_DRAIN_CLOSE_REST);
	assert_int_equal(rs_drain_next(&d, 1000, 0, 0, true, &wake), RS_DRAIN_DONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paced_until_done),
		cmocka_unit_test(test_membership_wait_is_bounded),
		cmocka_unit_test(test_budget_closes_the_rest),
	};

	return cmocka_run_group_tests_name("drain_pacer", tests, NULL, NULL);
}
