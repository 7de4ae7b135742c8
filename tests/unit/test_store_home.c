/* SPDX-License-Identifier: Apache-2.0 */
/* test_store_home.c - a departure keeps its place (rs_store_session_leave)
 * over SQLite, each test in a fresh temp dir.  The attachment becomes a
 * reservation at the same gateway that counts in its load until the grace
 * ends; the member returning within it goes home from wherever the Service
 * drops it (an admission elsewhere redirects it there, reason reserved; a
 * node agent's steer answers it), while a member gone for good frees its
 * place when the grace ends.  A draining gateway keeps no place (grace 0
 * deletes), and a reservation at a gateway that drains sends nobody there.
 * A whole fleet leaving and coming back through random landings ends where
 * it was, loads unchanged.  Runs on SQLite, then on PostgreSQL when
 * RS_TEST_PG_URL names a server (a database of its own, emptied per test). */
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

#include "ringsteer/store.h"
#include "store_fixture.h"
#include "testutil.h"

#define T0 1700000000000LL
#define TTL 15000
#define GRACE 10000

/* A pass's backend: pg_url empty for SQLite, else its own database. */
struct backend_env {
	char pg_url[700];
};

/* A store with gateways ids[0..n) registered, serving, at T0. */
static struct rs_store *open_store(const struct store_fixture *f, const char *const *ids, size_t n)
{
	const struct rs_store_options opt = { .ttl_ms = TTL, .reservation_ms = 5000 };

	return store_fixture_open(f, &opt, ids, n, T0);
}

static struct rs_admit arrival(const char *gw, const char *member, uint64_t epoch, bool stay, int64_t now)
{
	return (struct rs_admit){ .gateway_id = gw, .member_id = member, .instance_id = "i-1", .epoch = epoch,
				  .stay = stay, .sandboxes = 2, .source = "10.1.0.9:40000", .now_ms = now };
}


/* Arrives at gw through the Service and follows a redirect as a
 * supervisor does (REDIRECTED, no stay).  Returns where it attached. */
static const char *arrive(struct rs_store *st, const char *gw, const char *member, uint64_t epoch, int64_t now,
			  struct rs_admit *a)
{
	*a = arrival(gw, member, epoch, false, now);
	assert_int_equal(rs_store_admit(st, a), 0);
	if (a->accepted)
		return gw;
	{
		char target[RS_ID_MAX + 1];

		snprintf(target, sizeof(target), "%s", a->target_id);
		*a = arrival(target, member, epoch, false, now);
		a->redirected = true;
		assert_int_equal(rs_store_admit(st, a), 0);
		assert_true(a->accepted);
		return a->gateway_id;
	}
}

static void test_leave_keeps_place(void **state)
{
	struct store_fixture *f = *state;
	const char *const ids[] = { "gw-a", "gw-b" };
	struct rs_store *st = open_store(f, ids, 2);
	struct rs_admit a = arrival("gw-a", "m", 1, true, T0 + 10);
	struct rs_session_row row;
	struct rs_gateway_row gw;

	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_true(a.accepted);
	assert_int_equal(store_fixture_gateway(st, "gw-a", T0 + 10).attached, 1);

	assert_int_equal(rs_store_session_leave(st, "gw-a", "m", 1, T0 + 100, GRACE), 0);
	assert_true(store_fixture_row(st, "m", T0 + 100, &row));
	assert_int_equal(row.state, RS_SESSION_PENDING);
	assert_string_equal(row.gateway_id, "gw-a");
	assert_int_equal(row.epoch, 1);
	assert_int_equal(row.sandboxes, 2);
	assert_int_equal(row.expires_ms, T0 + 100 + GRACE);
	/* No longer attached, still counted: its place is held. */
	gw = store_fixture_gateway(st, "gw-a", T0 + 100);
	assert_int_equal(gw.attached, 0);
	assert_int_equal(gw.supervisors, 1);
	assert_int_equal(store_fixture_gateway(st, "gw-a", T0 + 100 + GRACE).supervisors, 1);
	/* The grace ends: the place is free (nothing written; it stops counting). */
	assert_int_equal(rs_store_heartbeat(st, "gw-a", T0 + 100 + GRACE + 1), 0);
	assert_int_equal(store_fixture_gateway(st, "gw-a", T0 + 100 + GRACE + 1).supervisors, 0);

	/* A stale departure (older epoch, or another gateway) changes nothing. */
	a = arrival("gw-b", "n", 5, true, T0 + 200);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_int_equal(rs_store_session_leave(st, "gw-b", "n", 4, T0 + 300, GRACE), 0);
	assert_int_equal(rs_store_session_leave(st, "gw-a", "n", 5, T0 + 300, GRACE), 0);
	assert_true(store_fixture_row(st, "n", T0 + 300, &row));
	assert_int_equal(row.state, RS_SESSION_ACTIVE);
	assert_int_equal(store_fixture_gateway(st, "gw-b", T0 + 300).attached, 1);
	/* Grace 0 (a draining gateway's departures) deletes the row. */
	assert_int_equal(rs_store_session_leave(st, "gw-b", "n", 5, T0 + 300, 0), 0);
	assert_false(store_fixture_row(st, "n", T0 + 300, &row));
	assert_int_equal(store_fixture_gateway(st, "gw-b", T0 + 300).attached, 0);
	/* Leaving twice: the reservation is not a session any more; it goes. */
	assert_int_equal(rs_store_session_leave(st, "gw-a", "m", 1, T0 + 400, GRACE), 0);
	assert_false(store_fixture_row(st, "m", T0 + 400, &row));
	assert_int_equal(rs_store_session_leave(st, "", "m", 1, T0, GRACE), -EINVAL);
	assert_int_equal(rs_store_session_leave(NULL, "gw-a", "m", 1, T0, GRACE), -EINVAL);
	rs_store_close(st);
}

static void test_return_goes_home(void **state)
{
	struct store_fixture *f = *state;
	const char *const ids[] = { "gw-a", "gw-b" };
	struct rs_store *st = open_store(f, ids, 2);
	struct rs_store_steer steer;
	struct rs_session_row row;
	struct rs_decision d;
	char m[32], target[RS_ID_MAX + 1];
	struct rs_admit a;

	/* m's ring owner is gw-b, but it attached at gw-a (asked to stay). */
	store_fixture_member_owned_by(ids, 2, "gw-b", "m", m, sizeof(m));
	a = arrival("gw-a", m, 1, true, T0 + 10);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_true(a.accepted);
	assert_int_equal(rs_store_session_leave(st, "gw-a", m, 1, T0 + 20, GRACE), 0);

	/* The node agent steers it home, writing nothing. */
	assert_int_equal(rs_store_steer(st, m, T0 + 30, &steer), 0);
	assert_string_equal(steer.gateway_id, "gw-a");
	assert_false(steer.reserved);
	assert_int_equal(rs_store_whatif(st, m, T0 + 30, &d, target), 0);
	assert_string_equal(target, "gw-a");
	assert_int_equal(d.reason, RS_REASON_RESERVED);

	/* Restarted, it lands at its owner gw-b, which the rule alone would
	 * keep it at: it is sent home instead, loads unchanged. */
	a = arrival("gw-b", m, 2, false, T0 + 40);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_false(a.accepted);
	assert_string_equal(a.target_id, "gw-a");
	assert_int_equal(a.decision.reason, RS_REASON_RESERVED);
	assert_int_equal(store_fixture_gateway(st, "gw-a", T0 + 40).supervisors, 1);
	assert_int_equal(store_fixture_gateway(st, "gw-b", T0 + 40).supervisors, 0);
	a = arrival("gw-a", m, 2, false, T0 + 50);
	a.redirected = true;
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_true(a.accepted);
	assert_true(store_fixture_row(st, m, T0 + 50, &row));
	assert_int_equal(row.state, RS_SESSION_ACTIVE);
	assert_string_equal(row.gateway_id, "gw-a");
	assert_int_equal(store_fixture_gateway(st, "gw-a", T0 + 50).attached, 1);
	rs_store_close(st);
}

static void test_no_home_when_full_or_draining(void **state)
{
	struct store_fixture *f = *state;
	const char *const ids[] = { "gw-a", "gw-b" };
	struct rs_store *st = open_store(f, ids, 2);
	char m[32], x[32];
	struct rs_admit a;

	store_fixture_member_owned_by(ids, 2, "gw-b", "m", m, sizeof(m));
	store_fixture_member_owned_by(ids, 2, "gw-a", "x", x, sizeof(x));
	a = arrival("gw-a", m, 1, true, T0 + 10);
	assert_int_equal(rs_store_admit(st, &a), 0);
	a = arrival("gw-a", x, 1, true, T0 + 10);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_int_equal(rs_store_session_leave(st, "gw-a", m, 1, T0 + 20, GRACE), 0);
	/* gw-a holds x and m's place: 2 of N = 2, cap 1.  Without m it is at
	 * cap, so m goes where the rule says (gw-b), and its place at gw-a
	 * is freed by the move. */
	a = arrival("gw-b", m, 2, false, T0 + 30);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_true(a.accepted);
	assert_int_equal(a.decision.reason, RS_REASON_PLACED);
	assert_int_equal(store_fixture_gateway(st, "gw-a", T0 + 30).supervisors, 1);

	/* A reservation at a gateway that drains sends nobody there. */
	assert_int_equal(rs_store_session_leave(st, "gw-b", m, 2, T0 + 40, GRACE), 0);
	assert_int_equal(rs_store_gateway_set_state(st, "gw-b", RS_GATEWAY_DRAINING), 0);
	a = arrival("gw-a", m, 3, false, T0 + 50);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_true(a.accepted);
	assert_int_equal(a.decision.reason, RS_REASON_PLACED);
	rs_store_close(st);
}

static void test_expired_place_taken(void **state)
{
	struct store_fixture *f = *state;
	const char *const ids[] = { "gw-a", "gw-b" };
	struct rs_store *st = open_store(f, ids, 2);
	int64_t later = T0 + 20 + GRACE + 1;
	char m[32], y[32], z[32];
	struct rs_admit a;

	/* gw-b holds y; m attached at gw-a and left. */
	store_fixture_member_owned_by(ids, 2, "gw-a", "m", m, sizeof(m));
	store_fixture_member_owned_by(ids, 2, "gw-a", "y", y, sizeof(y));
	store_fixture_member_owned_by(ids, 2, "gw-a", "z", z, sizeof(z));
	a = arrival("gw-a", m, 1, true, T0 + 10);
	assert_int_equal(rs_store_admit(st, &a), 0);
	a = arrival("gw-b", y, 1, true, T0 + 10);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_int_equal(rs_store_session_leave(st, "gw-a", m, 1, T0 + 20, GRACE), 0);

	/* Within the grace, z (owned by gw-a) finds gw-a holding m's place:
	 * N = 3, cap 2, gw-a at 1, so z still fits there; m's place and z
	 * both count. */
	assert_string_equal(arrive(st, "gw-b", z, 1, T0 + 30, &a), "gw-a");
	assert_int_equal(store_fixture_gateway(st, "gw-a", T0 + 30).supervisors, 2);

	/* Past the grace m's place is free: gw-a holds z alone. */
	assert_int_equal(rs_store_heartbeat(st, "gw-a", later), 0);
	assert_int_equal(rs_store_heartbeat(st, "gw-b", later), 0);
	assert_int_equal(store_fixture_gateway(st, "gw-a", later).supervisors, 1);
	/* m coming back now is placed by the rule, not sent home. */
	a = arrival("gw-b", m, 2, false, later);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_int_equal(a.decision.reason, RS_REASON_PLACED);
	rs_store_close(st);
}

/* 40 members on 4 gateways placed by the rule, all leave, all come back
 * landing at random gateways within the grace: every one goes home. */
static void test_fleet_restart(void **state)
{
	struct store_fixture *f = *state;
	const char *const ids[] = { "gw-0", "gw-1", "gw-2", "gw-3" };
	struct rs_store *st = open_store(f, ids, 4);
	struct test_rng rng;
	char names[40][16], home[40][RS_ID_MAX + 1];
	uint32_t before[4], moved = 0;
	struct rs_admit a;

	test_rng_seed(&rng, "store home", 11);
	for (int i = 0; i < 40; i++) {
		snprintf(names[i], sizeof(names[i]), "sup-%d", i);
		snprintf(home[i], sizeof(home[i]), "%s",
			 arrive(st, ids[test_rng_below(&rng, 4)], names[i], 1, T0 + 10, &a));
	}
	for (int g = 0; g < 4; g++) {
		before[g] = store_fixture_gateway(st, ids[g], T0 + 10).attached;
		assert_int_equal(before[g], 10);
	}
	for (int i = 0; i < 40; i++)
		assert_int_equal(rs_store_session_leave(st, home[i], names[i], 1, T0 + 20, GRACE), 0);
	for (int g = 0; g < 4; g++) {
		assert_int_equal(store_fixture_gateway(st, ids[g], T0 + 20).attached, 0);
		assert_int_equal(store_fixture_gateway(st, ids[g], T0 + 20).supervisors, 10);
	}
	for (int i = 0; i < 40; i++)
		moved += strcmp(arrive(st, ids[test_rng_below(&rng, 4)], names[i], 2, T0 + 30, &a), home[i]) != 0;
	printf("# fleet restart: %u of 40 moved\n", moved);
	assert_int_equal(moved, 0);
	for (int g = 0; g < 4; g++)
		assert_int_equal(store_fixture_gateway(st, ids[g], T0 + 30).attached, 10);
	rs_store_close(st);
}

#define HOME_TEST(fn, pg_url) cmocka_unit_test_prestate_setup_teardown(fn, store_fixture_setup, store_fixture_teardown, pg_url)
#define HOME_TESTS(pg_url)                                    \
	HOME_TEST(test_leave_keeps_place, pg_url),              \
	HOME_TEST(test_return_goes_home, pg_url),               \
	HOME_TEST(test_no_home_when_full_or_draining, pg_url),  \
	HOME_TEST(test_expired_place_taken, pg_url),            \
	HOME_TEST(test_fleet_restart, pg_url)

int main(void)
{
	struct backend_env sqlite_env = { .pg_url = "" }, pg_env;
	const struct CMUnitTest sqlite_tests[] = { HOME_TESTS(sqlite_env.pg_url) };
	const struct CMUnitTest pg_tests[] = { HOME_TESTS(pg_env.pg_url) };
	const char *base = getenv("RS_TEST_PG_URL");
	char sql[128];
	int failed;

	failed = cmocka_run_group_tests_name("store home (sqlite)", sqlite_tests, NULL, NULL);
	if (!base || !base[0]) {
		printf("# store home (postgres): SKIPPED, RS_TEST_PG_URL is not set "
		       "(tests/pg/pg_server.sh start DIR prints one; make pg-test does it all)\n");
		return failed;
	}
	snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS rs_home_%ld WITH (FORCE)", (long)getpid());
	if (store_fixture_pg_exec(base, sql) != 0)
		return failed + 1;
	snprintf(sql, sizeof(sql), "CREATE DATABASE rs_home_%ld", (long)getpid());
	if (store_fixture_pg_exec(base, sql) != 0)
		return failed + 1;
	snprintf(pg_env.pg_url, sizeof(pg_env.pg_url), "%s%sdbname=rs_home_%ld", base, strchr(base, '?') ? "&" : "?",
		 (long)getpid());
	failed += cmocka_run_group_tests_name("store home (postgres)", pg_tests, NULL, NULL);
	snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS rs_home_%ld WITH (FORCE)", (long)getpid());
	store_fixture_pg_exec(base, sql);
	return failed;
}
