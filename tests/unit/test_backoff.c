/* SPDX-License-Identifier: Apache-2.0 */
/* test_backoff.c - the retry and refresh delays the supervisor and the
 * swarm share (rs_retry_delay_ms, rs_refresh_delay_ms): jitter bounds, the
 * doubling and its ceiling, a REJECT's floor and its cap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ringsteer/backoff.h"

static void test_retry_doubles_within_jitter(void **state)
{
	uint64_t rng = 42;
	uint32_t backoff = 0;
	uint64_t base = RS_BACKOFF_FIRST_MS;

	(void)state;
	for (int i = 0; i < 12; i++) {
		uint64_t d = rs_retry_delay_ms(&backoff, 0, &rng);

		assert_in_range(d, base - base / 5, base + base / 5);
		base = base * 2 > RS_BACKOFF_MAX_MS ? RS_BACKOFF_MAX_MS : base * 2;
		assert_int_equal(backoff, base);
	}
}

static void test_retry_floor(void **state)
{
	uint64_t rng = 7;
	uint32_t backoff = 0;

	(void)state;
	for (int i = 0; i < 100; i++) {
		backoff = 0;
		assert_in_range(rs_retry_delay_ms(&backoff, 5000, &rng), 5000, 6000);
	}
	backoff = 0;
	assert_in_range(rs_retry_delay_ms(&backoff, UINT32_MAX, &rng), RS_RETRY_HINT_MAX_MS,
			RS_RETRY_HINT_MAX_MS + RS_RETRY_HINT_MAX_MS / 5);
	/* A floor below the backoff changes nothing. */
	backoff = 16000;
	assert_in_range(rs_retry_delay_ms(&backoff, 10, &rng), 12800, 19200);
}

static void test_refresh_near_80_percent(void **state)
{
	uint64_t rng = 1;

	(void)state;
	for (int i = 0; i < 100; i++)
		assert_in_range(rs_refresh_delay_ms(100000, &rng), 75000, 85000);
	assert_int_equal(rs_refresh_delay_ms(0, &rng), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_retry_doubles_within_jitter),
		cmocka_unit_test(test_retry_floor),
		cmocka_unit_test(test_refresh_near_80_percent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
