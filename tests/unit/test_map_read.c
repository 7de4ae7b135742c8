/* SPDX-License-Identifier: Apache-2.0 */
/* test_map_read.c - the shared reader of the agent's maps
 * (user/maps/map_read.c) where no kernel map is needed: opening a pin that
 * cannot be opened leaves its fd at -1 (ringsteerctl maps closes what it
 * opened by that fd), and slots out of range or maps not loaded are refused
 * before any lookup.  The reads themselves run against the kernel in
 * tests/kernel (steer_test, kt_tool) and tests/cli. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "maps/map_read.h"

static void test_open_pin_path_too_long(void **state)
{
	static char dir[5000];
	int fd = 42; /* what an uninitialised fd might hold */

	(void)state;
	memset(dir, 'd', sizeof(dir) - 1);
	dir[0] = '/';
	assert_int_equal(rs_map_open_pin(dir, "rs_slots", &fd), -ENAMETOOLONG);
	assert_int_equal(fd, -1);
}

static void test_open_pin_missing(void **state)
{
	int fd = 42;

	(void)state;
	assert_true(rs_map_open_pin("/nonexistent-ringsteer-pins", "rs_slots", &fd) < 0);
	assert_int_equal(fd, -1);
}

static void test_slot_out_of_range(void **state)
{
	struct rs_slot row;
	struct rs_conn_counts c = { .established = 7, .closed = 3 };
	uint64_t cookie = 0;

	(void)state;
	assert_int_equal(rs_map_slot(-1, RS_SLOTS_MAX, &row), -ERANGE);
	assert_int_equal(rs_map_slot_socket(-1, RS_SLOTS_MAX, &cookie), -ERANGE);
	assert_int_equal(rs_map_slot_counts(-1, RS_SLOTS_MAX, &c), -ERANGE);
	assert_int_equal(c.established, 0); /* zeroed on failure */
	assert_int_equal(c.closed, 0);
}

static void test_percpu_sum_not_loaded(void **state)
{
	uint64_t out[3] = { 1, 2, 3 };

	(void)state;
	assert_int_equal(rs_map_percpu_sum(-1, 3, out), -EBADF);
	assert_int_equal(out[0] + out[1] + out[2], 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_pin_path_too_long),
		cmocka_unit_test(test_open_pin_missing),
		cmocka_unit_test(test_slot_out_of_range),
		cmocka_unit_test(test_percpu_sum_not_loaded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
