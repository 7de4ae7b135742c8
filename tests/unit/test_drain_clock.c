/* SPDX-License-Identifier: Apache-2.0 */
/* test_drain_clock.c - the drain's schedule is made on the monotonic clock
 * only (user/drain/step.c, what the gateway's drain timer calls): a test
 * clock whose wall side steps an hour forward or back in the middle of a
 * drain (an NTP step; never the machine's clock) yields the very same
 * schedule as a clock that does not step, for a paced drain and for one
 * that runs into its budget. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "drain/drain_clock.h"
#include "util/mstime.h"

/* The test's clock: both sides advance together unless stepped. */
struct test_clock {
	struct rs_clock c;
	int64_t mono, wall;
};

static int64_t test_mono(const struct rs_clock *c)
{
	return ((const struct test_clock *)c->ctx)->mono;
}

static int64_t test_wall(const struct rs_clock *c)
{
	return ((const struct test_clock *)c->ctx)->wall;
}

static void advance(struct test_clock *t, int64_t ms)
{
	t->mono += ms;
	t->wall += ms;
}

#define STEPS_MAX 65536
#define SENT_MAX 4096

/* One step the drain took: when (monotonic), what, how many, how long the
 * loop's timer was to wait after it. */
struct step {
	int64_t at;
	enum rs_drain_action action;
	size_t count;
	int64_t delay;
};

/* Runs a drain of waiting supervisors to its end on a fresh test clock whose
 * wall side jumps by wall_step_ms at the step_at-th step; handed-off ones
 * leave after leave_ms (never, when negative: the budget ends the drain).
 * Fills steps[] and returns how many. */
static size_t run(size_t waiting, int64_t leave_ms, size_t step_at, int64_t wall_step_ms, struct step *steps)
{
	struct test_clock t = { .mono = 1000000, .wall = 1764600000000 };
	struct rs_drain_config cfg = { .pace_ms = 50, .budget_ms = 25000, .membership_wait_ms = 5000,
				       .max_in_flight = 64 };
	struct rs_drain d;
	int64_t left_at[SENT_MAX];
	size_t n = 0, in_flight = 0, n_left = 0, sent = 0;

	t.c = (struct rs_clock){ test_mono, test_wall, &t };
	rs_drain_start_on(&d, &cfg, &t.c);
	for (;;) {
		struct step *s;

		assert_true(n < STEPS_MAX);
		if (n == step_at)
			t.wall += wall_step_ms;
		/* the supervisors whose time has come leave */
		while (n_left < sent && leave_ms >= 0 && left_at[n_left] <= t.mono) {
			n_left++;
			in_flight--;
		}
		s = &steps[n++];
		s->count = 0;
		s->action = rs_drain_step(&d, &t.c, waiting, in_flight, true, &s->at, &s->delay, &s->count);
		if (s->action == RS_DRAIN_DONE || s->action == RS_DRAIN_CLOSE_REST)
			return n;
		if (s->action == RS_DRAIN_HAND_OFF) {
			assert_true(sent + s->count <= SENT_MAX);
			for (size_t i = 0; i < s->count; i++)
				left_at[sent++] = t.mono + leave_ms;
			waiting -= s->count;
			in_flight += s->count;
			rs_drain_sent(&d, s->at, s->count);
		}
		assert_true(s->delay >= 0);
		advance(&t, s->delay > 0 ? s->delay : 1);
	}
}

static void same_schedule(size_t waiting, int64_t leave_ms)
{
	static struct step plain[STEPS_MAX], forward[STEPS_MAX], back[STEPS_MAX];
	size_t n = run(waiting, leave_ms, 0, 0, plain);

	assert_true(n > 10);
	for (size_t at = 1; at < n; at += n / 7 + 1) {
		size_t nf = run(waiting, leave_ms, at, 3600 * 1000, forward);
		size_t nb = run(waiting, leave_ms, at, -3600 * 1000, back);

		assert_int_equal(nf, n);
		assert_int_equal(nb, n);
		for (size_t i = 0; i < n; i++) {
			assert_int_equal(forward[i].at, plain[i].at);
			assert_int_equal(forward[i].action, plain[i].action);
			assert_int_equal(forward[i].count, plain[i].count);
			assert_int_equal(forward[i].delay, plain[i].delay);
			assert_int_equal(back[i].at, plain[i].at);
			assert_int_equal(back[i].action, plain[i].action);
			assert_int_equal(back[i].count, plain[i].count);
			assert_int_equal(back[i].delay, plain[i].delay);
		}
	}
}

/* 300 supervisors, each gone 30 ms after its REDIRECT: paced to the end. */
static void test_paced_drain_ignores_wall_steps(void **state)
{
	static struct step s[STEPS_MAX];
	size_t n;

	(void)state;
	same_schedule(300, 30);
	n = run(300, 30, 0, 0, s);
	assert_int_equal(s[n - 1].action, RS_DRAIN_DONE);
}

/* 3,000 supervisors that never leave: the budget ends it, 25 s after the
 * start by the monotonic clock whatever the wall clock did. */
static void test_budget_ignores_wall_steps(void **state)
{
	static struct step s[STEPS_MAX];
	size_t n;

	(void)state;
	same_schedule(3000, -1);
	n = run(3000, -1, 0, 0, s);
	assert_int_equal(s[n - 1].action, RS_DRAIN_CLOSE_REST);
	assert_int_equal(s[n - 1].at - s[0].at, 25000);
	n = run(3000, -1, 5, 3600 * 1000, s);
	assert_int_equal(s[n - 1].at - s[0].at, 25000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paced_drain_ignores_wall_steps),
		cmocka_unit_test(test_budget_ignores_wall_steps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
