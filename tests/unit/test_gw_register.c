/* SPDX-License-Identifier: Apache-2.0 */
/* test_gw_register.c - a gateway process that could not register at its
 * start (the store away) makes the row an earlier process left its own on
 * its first heartbeat: the heartbeat request, run by rs_gw_store_run() over
 * the ledger, writes the row (serving), where a plain heartbeat would only
 * touch it and read its old state back.  Found by the simulator (seed
 * 4439, docs/SIMULATION.md): a fleet whose gateways all exited draining
 * while the store was away came back draining for ever.  On SQLite, then
 * on PostgreSQL when RS_TEST_PG_URL is set. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ringsteer/gateway_store.h"
#include "ringsteer/store.h"
#include "store_fixture.h"

#define T0 1700000000000LL

static struct rs_store *open_store(const struct store_fixture *f)
{
	static const char *const ids[] = { "gw-a", "gw-b" };
	const struct rs_store_options opt = { .ttl_ms = 15000, .reservation_ms = 5000 };

	return store_fixture_open(f, &opt, ids, 2, T0);
}

static struct rs_gw_store_req heartbeat(bool register_row, bool check_drain)
{
	return (struct rs_gw_store_req){
		.op = RS_GW_STORE_HEARTBEAT,
		.gateway_id = "gw-a",
		.peer = "10.0.0.1:7001",
		.u.heartbeat = { .register_row = register_row, .check_drain = check_drain },
	};
}

/* The row an exiting process left (draining; its removal failed). */
static void leave_draining_row(struct rs_store *st)
{
	assert_int_equal(rs_store_gateway_register(st, "gw-a", "10.0.0.1:7001", RS_GATEWAY_DRAINING, T0), 0);
	assert_int_equal(store_fixture_gateway(st, "gw-a", T0).state, RS_GATEWAY_DRAINING);
}

static void test_registering_heartbeat_writes_row(void **state)
{
	struct store_fixture *f = *state;
	struct rs_store *st = open_store(f);
	struct rs_gw_store_req r = heartbeat(true, false);

	leave_draining_row(st);
	assert_int_equal(rs_gw_store_run(rs_gw_store_ops_ledger(), st, &r, T0 + 1000), 0);
	assert_true(r.u.heartbeat.registered);
	assert_false(r.u.heartbeat.told_drain);
	assert_int_equal(store_fixture_gateway(st, "gw-a", T0 + 1000).state, RS_GATEWAY_SERVING);
	assert_int_equal(store_fixture_gateway(st, "gw-a", T0 + 1000).heartbeat_ms, T0 + 1000);
	rs_store_close(st);
}

/* What went wrong before: a plain heartbeat keeps the old row's state and
 * reads it back as a drain asked of us. */
static void test_plain_heartbeat_reads_old_state(void **state)
{
	struct store_fixture *f = *state;
	struct rs_store *st = open_store(f);
	struct rs_gw_store_req r = heartbeat(false, true);

	leave_draining_row(st);
	assert_int_equal(rs_gw_store_run(rs_gw_store_ops_ledger(), st, &r, T0 + 1000), 0);
	assert_false(r.u.heartbeat.registered);
	assert_true(r.u.heartbeat.told_drain);
	assert_int_equal(store_fixture_gateway(st, "gw-a", T0 + 1000).state, RS_GATEWAY_DRAINING);
	rs_store_close(st);
}

/* A registering heartbeat of a draining process writes it draining. */
static void test_registering_heartbeat_keeps_our_drain(void **state)
{
	struct store_fixture *f = *state;
	struct rs_store *st = open_store(f);
	struct rs_gw_store_req r = heartbeat(true, false);

	r.u.heartbeat.draining = true;
	assert_int_equal(rs_gw_store_run(rs_gw_store_ops_ledger(), st, &r, T0 + 1000), 0);
	assert_true(r.u.heartbeat.registered);
	assert_int_equal(store_fixture_gateway(st, "gw-a", T0 + 1000).state, RS_GATEWAY_DRAINING);
	rs_store_close(st);
}

#define REG_TEST(fn, pg_url) \
	cmocka_unit_test_prestate_setup_teardown(fn, store_fixture_setup, store_fixture_teardown, pg_url)
#define REG_TESTS(pg_url)                                        \
	REG_TEST(test_registering_heartbeat_writes_row, pg_url), \
	REG_TEST(test_plain_heartbeat_reads_old_state, pg_url),  \
	REG_TEST(test_registering_heartbeat_keeps_our_drain, pg_url)

int main(void)
{
	static char sqlite_url[1] = "", pg_url[700];
	const struct CMUnitTest sqlite_tests[] = { REG_TESTS(sqlite_url) };
	const struct CMUnitTest pg_tests[] = { REG_TESTS(pg_url) };
	const char *base = getenv("RS_TEST_PG_URL");
	char sql[128];
	int failed;

	failed = cmocka_run_group_tests_name("gateway registration (sqlite)", sqlite_tests, NULL, NULL);
	if (!base || !base[0]) {
		printf("# gateway registration (postgres): SKIPPED, RS_TEST_PG_URL is not set\n");
		return failed;
	}
	snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS rs_gwreg_%ld WITH (FORCE)", (long)getpid());
	if (store_fixture_pg_exec(base, sql) != 0)
		return failed + 1;
	snprintf(sql, sizeof(sql), "CREATE DATABASE rs_gwreg_%ld", (long)getpid());
	if (store_fixture_pg_exec(base, sql) != 0)
		return failed + 1;
	snprintf(pg_url, sizeof(pg_url), "%s%sdbname=rs_gwreg_%ld", base, strchr(base, '?') ? "&" : "?",
		 (long)getpid());
	failed += cmocka_run_group_tests_name("gateway registration (postgres)", pg_tests, NULL, NULL);
	snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS rs_gwreg_%ld WITH (FORCE)", (long)getpid());
	store_fixture_pg_exec(base, sql);
	return failed;
}
