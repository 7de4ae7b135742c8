/* SPDX-License-Identifier: Apache-2.0 */
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
	size_t waiting = 10, in_flight = 0, n = 0, count = 0;

	(void)state;
	rs_drain_start(&d, &cfg, now);
	/* Nobody else serving yet: wait, re-looking each pace interval. */
	assert_int_equal(rs_drain_next(&d, now, waiting, 0, false, &wake, &count), RS_DRAIN_WAIT);
	assert_int_equal(wake, now + 50);
	now += 120; /* the replacement shows up */
	while (waiting > 0) {
		enum rs_drain_action a = rs_drain_next(&d, now, waiting, in_flight, true, &wake, &count);

		if (a == RS_DRAIN_HAND_OFF) {
			assert_int_equal(count, 1); /* 10 fit the budget at the gentle pace */
			sends[n++] = now;
			rs_drain_sent(&d, now, 1);
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
	assert_int_equal(rs_drain_next(&d, now, 0, 3, true, &wake, &count), RS_DRAIN_WAIT);
	assert_int_equal(rs_drain_next(&d, now, 0, 0, true, &wake, &count), RS_DRAIN_DONE);
}

static void test_membership_wait_is_bounded(void **state)
{
	struct rs_drain d;
	int64_t wake = 0;
	size_t count = 0;

	(void)state;
	rs_drain_start(&d, NULL, 0); /* defaults: 50 ms pace, 5 s wait, 25 s budget */
	assert_int_equal(rs_drain_next(&d, 4999, 1, 0, false, &wake, &count), RS_DRAIN_WAIT);
	assert_int_equal(wake, 5000);
	/* The wait ran out with nobody seen: go anyway (the store decides). */
	assert_int_equal(rs_drain_next(&d, 5000, 1, 0, false, &wake, &count), RS_DRAIN_HAND_OFF);
}

static void test_budget_closes_the_rest(void **state)
{
	struct rs_drain d;
	struct rs_drain_config cfg = { .pace_ms = 50, .budget_ms = 1000, .membership_wait_ms = 200 };
	int64_t wake = 0;
	size_t count = 0;

	(void)state;
	rs_drain_start(&d, &cfg, 0);
	assert_int_equal(rs_drain_next(&d, 0, 5, 0, true, &wake, &count), RS_DRAIN_HAND_OFF);
	rs_drain_sent(&d, 0, 1);
	assert_int_equal(rs_drain_next(&d, 10, 4, 1, true, &wake, &count), RS_DRAIN_WAIT);
	assert_int_equal(wake, 50);
	assert_int_equal(rs_drain_next(&d, 990, 0, 1, true, &wake, &count), RS_DRAIN_WAIT);
	assert_true(wake <= 1000);
	assert_int_equal(rs_drain_next(&d, 1000, 0, 1, true, &wake, &count), RS_DRAIN_CLOSE_REST);
	assert_int_equal(rs_drain_next(&d, 1000, 0, 0, true, &wake, &count), RS_DRAIN_DONE);
}

/* 2,500 supervisors, a 15 s budget: the pace adapts so that every one is
 * sent within the first four fifths of it, never more than max_in_flight
 * under way; each handoff takes 40 ms to complete (the supervisor reaches
 * its target and leaves), and the clock ticks when the pacer asks. */
static void test_adapts_to_fit_budget(void **state)
{
	struct rs_drain d;
	struct rs_drain_config cfg = { .pace_ms = 50, .budget_ms = 15000, .membership_wait_ms = 5000,
				       .max_in_flight = 32 };
	enum { N = 2500, TAKES = 40 };
	static int64_t leaves[N];
	int64_t now = 0, wake = 0, last_send = -1;
	size_t waiting = N, sent = 0, gone = 0, count = 0, most_in_flight = 0;

	(void)state;
	rs_drain_start(&d, &cfg, now);
	for (int guard = 0; guard < 100000; guard++) {
		size_t in_flight;
		enum rs_drain_action a;

		while (gone < sent && leaves[gone] <= now)
			gone++;
		in_flight = sent - gone;
		a = rs_drain_next(&d, now, waiting, in_flight, true, &wake, &count);
		if (a == RS_DRAIN_DONE)
			break;
		assert_int_not_equal(a, RS_DRAIN_CLOSE_REST);
		if (a == RS_DRAIN_HAND_OFF) {
			assert_true(count >= 1 && count <= waiting);
			assert_true(in_flight + count <= cfg.max_in_flight);
			for (size_t i = 0; i < count; i++)
				leaves[sent++] = now + TAKES;
			waiting -= count;
			last_send = now;
			rs_drain_sent(&d, now, count);
			if (in_flight + count > most_in_flight)
				most_in_flight = in_flight + count;
		}
		assert_true(wake > now);
		now = wake;
	}
	assert_int_equal(waiting, 0);
	assert_int_equal(gone, N);
	assert_true(last_send <= 12000 + 5);
	assert_true(last_send >= 10000); /* spread out, not a burst at the start */
	assert_true(most_in_flight <= 32);
}

/* The in-flight bound holds the pace back: with a bound of 2 and handoffs
 * that never complete, two are sent and then nothing until one leaves. */
static void test_in_flight_bound(void **state)
{
	struct rs_drain d;
	struct rs_drain_config cfg = { .pace_ms = 1, .budget_ms = 10000, .membership_wait_ms = 1,
				       .max_in_flight = 2 };
	int64_t wake = 0;
	size_t count = 0;

	(void)state;
	rs_drain_start(&d, &cfg, 0);
	assert_int_equal(rs_drain_next(&d, 0, 10, 0, true, &wake, &count), RS_DRAIN_HAND_OFF);
	assert_int_equal(count, 1);
	rs_drain_sent(&d, 0, 1);
	assert_int_equal(rs_drain_next(&d, 1, 9, 1, true, &wake, &count), RS_DRAIN_HAND_OFF);
	rs_drain_sent(&d, 1, count);
	assert_int_equal(rs_drain_next(&d, 50, 8, 2, true, &wake, &count), RS_DRAIN_WAIT);
	assert_int_equal(count, 0);
	assert_true(wake > 50 && wake <= 55);
	assert_int_equal(rs_drain_next(&d, 60, 8, 1, true, &wake, &count), RS_DRAIN_HAND_OFF);
	assert_int_equal(count, 1); /* the catch-up is bounded by the room */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paced_until_done),
		cmocka_unit_test(test_membership_wait_is_bounded),
		cmocka_unit_test(test_budget_closes_the_rest),
		cmocka_unit_test(test_adapts_to_fit_budget),
		cmocka_unit_test(test_in_flight_bound),
	};

	return cmocka_run_group_tests_name("drain_pacer", tests, NULL, NULL);
}
