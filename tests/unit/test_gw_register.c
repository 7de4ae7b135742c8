/* SPDX-License-Identifier: Apache-2.0 */
/* test_gw_register.c - a gateway process that could not register at its
 * start (the store away) makes the row an earlier process left its own on
 * its first heartbeat: the heartbeat request, run by rs_gw_store_run() over
 * the ledger, writes the row (serving), where a plain heartbeat would only
 * touch it and read its old state back.  Found by the simulator (seed
 * 4439, docs/SIMULATION.md): a fleet whose gateways all exited draining
 * while the store was away came back draining for ever.  That heartbeat
 * also ends the active rows the earlier process left, as the start would
 * have, keeping those this process holds (D3, seeds 3349 and 2862: they
 * stayed counted at the gateway until each member was admitted again,
 * and a stale epoch locked a member out).  On SQLite, then
 * on PostgreSQL when RS_TEST_PG_URL is set. */
#include <errno.h>
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

/* An active row of member at gw at epoch, attached at now (a claim). */
static void attach_row(struct rs_store *st, const char *gw, const char *member, uint64_t epoch, int64_t now)
{
	struct rs_session_claim c = { .gateway_id = gw, .member_id = member, .instance_id = "i", .epoch = epoch,
				      .sandboxes = 1, .source = "", .now_ms = now };

	assert_int_equal(rs_store_session_claim(st, &c), 0);
}

static bool row_is(struct rs_store *st, const char *member, const char *gw, uint64_t epoch, enum rs_session_state s)
{
	struct rs_session_row row;

	return store_fixture_row(st, member, T0 + 1000, &row) && strcmp(row.gateway_id, gw) == 0 &&
	       row.epoch == epoch && row.state == s;
}

/* D3 (seeds 3349 and 2862): a start that could not register, its
 * registration deferred to the first heartbeat, ends there the active rows
 * the earlier process left, as the start would have, and keeps those this
 * process holds (admitted before that heartbeat), its reservations, and
 * other gateways' rows.  The rows are told apart by the held list, not by
 * their attach times: those of this process's own below are written
 * *before* the earlier one's on purpose (a clock stepped back). */
static void test_registering_heartbeat_ends_earlier_rows(void **state)
{
	struct store_fixture *f = *state;
	struct rs_store *st = open_store(f);
	const struct rs_session_key held[] = { { "m-ours", 7 }, { "m-new", 4 }, { "m-gone", 2 } };
	struct rs_gw_store_req r = heartbeat(true, false);
	struct rs_gateway_row row;

	/* What the earlier process left: m-old attached, m-new's previous
	 * life at a higher epoch than its new one (2862), m-grace left with
	 * its place kept; m-b at the other gateway. */
	attach_row(st, "gw-a", "m-old", 5, T0 + 500);
	attach_row(st, "gw-a", "m-new", 9, T0 + 500);
	attach_row(st, "gw-a", "m-grace", 3, T0 + 500);
	assert_int_equal(rs_store_session_leave(st, "gw-a", "m-grace", 3, T0 + 500, 5000), 0);
	attach_row(st, "gw-b", "m-b", 6, T0 + 500);
	/* This process's own, admitted before its first heartbeat. */
	attach_row(st, "gw-a", "m-ours", 7, T0);
	assert_int_equal(store_fixture_gateway(st, "gw-a", T0).attached, 3);

	r.u.heartbeat.held = held;
	r.u.heartbeat.n_held = 3;
	assert_int_equal(rs_gw_store_run(rs_gw_store_ops_ledger(), st, &r, T0 + 1000), 0);
	assert_true(r.u.heartbeat.registered);
	assert_false(store_fixture_row(st, "m-old", T0 + 1000, &(struct rs_session_row){ 0 }));
	assert_false(store_fixture_row(st, "m-new", T0 + 1000, &(struct rs_session_row){ 0 }));
	assert_true(row_is(st, "m-ours", "gw-a", 7, RS_SESSION_ACTIVE));
	assert_true(row_is(st, "m-grace", "gw-a", 3, RS_SESSION_PENDING));
	assert_true(row_is(st, "m-b", "gw-b", 6, RS_SESSION_ACTIVE));
	row = store_fixture_gateway(st, "gw-a", T0 + 1000);
	assert_int_equal(row.state, RS_GATEWAY_SERVING);
	assert_int_equal(row.attached, 1);    /* m-ours */
	assert_int_equal(row.supervisors, 2); /* and m-grace's reservation */
	assert_int_equal(store_fixture_gateway(st, "gw-b", T0 + 1000).attached, 1);
	rs_store_close(st);
}

/* Holding nothing, it ends every active row, as a start does; a held list
 * without its array is refused, nothing written. */
static void test_registering_heartbeat_holding_nothing(void **state)
{
	struct store_fixture *f = *state;
	struct rs_store *st = open_store(f);
	struct rs_gw_store_req r = heartbeat(true, false);

	attach_row(st, "gw-a", "m-old", 5, T0);
	assert_int_equal(rs_store_gateway_start_holding(st, "gw-a", "10.0.0.1:7001", RS_GATEWAY_SERVING, T0, NULL, 1),
			 -EINVAL);
	/* An id that fills its array with no NUL, and an empty one: refused
	 * before anything is read past them or written. */
	struct rs_session_key bad = { .epoch = 1 };

	memset(bad.member_id, 'm', sizeof(bad.member_id));
	assert_int_equal(rs_store_gateway_start_holding(st, "gw-a", "10.0.0.1:7001", RS_GATEWAY_SERVING, T0, &bad, 1),
			 -EINVAL);
	bad.member_id[0] = '\0';
	assert_int_equal(rs_store_gateway_start_holding(st, "gw-a", "10.0.0.1:7001", RS_GATEWAY_SERVING, T0, &bad, 1),
			 -EINVAL);
	assert_true(row_is(st, "m-old", "gw-a", 5, RS_SESSION_ACTIVE));
	assert_int_equal(rs_gw_store_run(rs_gw_store_ops_ledger(), st, &r, T0 + 1000), 0);
	assert_false(store_fixture_row(st, "m-old", T0 + 1000, &(struct rs_session_row){ 0 }));
	assert_int_equal(store_fixture_gateway(st, "gw-a", T0 + 1000).attached, 0);
	rs_store_close(st);
}

#define REG_TEST(fn, pg_url) \
	cmocka_unit_test_prestate_setup_teardown(fn, store_fixture_setup, store_fixture_teardown, pg_url)
#define REG_TESTS(pg_url)                                               \
	REG_TEST(test_registering_heartbeat_writes_row, pg_url),        \
	REG_TEST(test_plain_heartbeat_reads_old_state, pg_url),         \
	REG_TEST(test_registering_heartbeat_keeps_our_drain, pg_url),   \
	REG_TEST(test_registering_heartbeat_ends_earlier_rows, pg_url), \
	REG_TEST(test_registering_heartbeat_holding_nothing, pg_url)

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
