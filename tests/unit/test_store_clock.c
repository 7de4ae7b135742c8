/* SPDX-License-Identifier: Apache-2.0 */
/* test_store_clock.c - on PostgreSQL liveness runs on the server's clock
 * (issue 25, hole "Store errors"): three gateways on one server, one with
 * its wall clock right, one stepped 2 x TTL ahead, one 2 x TTL behind (as
 * libfaketime steps a process: the time it passes in and the clock the
 * store reads both move).  Each registers with its own wall clock and
 * lists the live gateways with it: every one sees all three live, none
 * declared dead by mistake, every heartbeat written on the server's
 * clock, and each reads the skew it runs with.  On PostgreSQL when
 * RS_TEST_PG_URL names a server (its database emptied for the test); on
 * SQLite, that there is no skew to read. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "ringsteer/store.h"
#include "store/store_pg_hook.h"
#include "store_fixture.h"

#define TTL 15000
#define N 3

/* One process's wall clock: the real one moved by step_ms. */
struct stepped {
	int64_t step_ms;
};

static int64_t real_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t stepped_ms(void *ctx)
{
	const struct stepped *s = ctx;

	return real_ms() + s->step_ms;
}

static void test_stepped_clocks(void **state)
{
	struct store_fixture *f = *state;
	const struct rs_store_options opt = { .ttl_ms = TTL };
	const char *ids[N] = { "gw-right", "gw-ahead", "gw-behind" };
	struct stepped clocks[N] = { { 0 }, { 2 * TTL }, { -2 * TTL } };
	struct rs_store *st[N];

	for (int i = 0; i < N; i++) {
		char peer[32];

		assert_int_equal(rs_store_open(f->url, &opt, &st[i]), 0);
		assert_int_equal(rs_store_pg_set_wall_clock(st[i], stepped_ms, &clocks[i]), 0);
		snprintf(peer, sizeof(peer), "10.0.0.%d:7001", i + 1);
		assert_int_equal(rs_store_gateway_register(st[i], ids[i], peer, RS_GATEWAY_SERVING,
							   stepped_ms(&clocks[i])),
				 0);
	}
	for (int i = 0; i < N; i++) {
		struct rs_gateway_row *rows = NULL;
		size_t n = 0;

		assert_int_equal(rs_store_heartbeat(st[i], ids[i], stepped_ms(&clocks[i])), 0);
		assert_int_equal(rs_store_list_gateways(st[i], stepped_ms(&clocks[i]), false, &rows, &n), 0);
		printf("# %s (clock %+lld ms) sees %zu live gateways\n", ids[i], (long long)clocks[i].step_ms, n);
		assert_int_equal(n, N);
		/* Every heartbeat is on the server's clock (here: the real one). */
		for (size_t k = 0; k < n; k++)
			assert_true(llabs(rows[k].heartbeat_ms - real_ms()) < 1000);
		free(rows);
	}
	for (int i = 0; i < N; i++) {
		int64_t skew = 0;

		assert_int_equal(rs_store_clock_skew(st[i], &skew), 0);
		printf("# %s: skew %lld ms\n", ids[i], (long long)skew);
		assert_true(llabs(skew + clocks[i].step_ms) < 1000);
	}
	for (int i = 0; i < N; i++)
		rs_store_close(st[i]);
}

/* SQLite has no clock but this machine's: no skew to read. */
static void test_sqlite_no_skew(void **state)
{
	struct store_fixture f;
	struct rs_store *st = NULL;
	int64_t skew = 0;

	(void)state;
	assert_int_equal(store_fixture_make(&f, "clock", NULL), 0);
	assert_int_equal(rs_store_open(f.url, NULL, &st), 0);
	assert_int_equal(rs_store_clock_skew(st, &skew), -EOPNOTSUPP);
	assert_int_equal(rs_store_pg_set_wall_clock(st, NULL, NULL), -EINVAL);
	rs_store_close(st);
	store_fixture_remove(&f);
}

int main(void)
{
	const char *pg = getenv("RS_TEST_PG_URL");
	char url[700];
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate_setup_teardown(test_stepped_clocks, store_fixture_setup,
							 store_fixture_teardown, url),
	};
	const struct CMUnitTest sqlite_tests[] = {
		cmocka_unit_test(test_sqlite_no_skew),
	};
	int rc = cmocka_run_group_tests_name("store_clock (sqlite)", sqlite_tests, NULL, NULL);

	if (!pg || !pg[0]) {
		printf("# store_clock (postgres): SKIPPED, RS_TEST_PG_URL is not set\n");
		return rc;
	}
	snprintf(url, sizeof(url), "%s", pg);
	return rc | cmocka_run_group_tests_name("store_clock (postgres)", tests, NULL, NULL);
}
