/* SPDX-License-Identifier: Apache-2.0 */
/* test_store_claim.c - rs_store_session_claim over SQLite, each test in a
 * fresh temp dir: a gateway that accepted a supervisor while the store was
 * unavailable records it once the store answers.  On an empty row or over
 * an older epoch the row becomes active at the claiming gateway; under a
 * newer epoch (or the same epoch elsewhere) it is -ESTALE and the row is
 * left as it was; a gateway without a row gets -ENOENT and nothing is
 * written (a session on a gateway the store does not know would count for
 * nothing; the gateway's heartbeat registers it again first); a busy store
 * is -EBUSY.  A claimed session then behaves like an admitted one: counted
 * as load, living with its gateway's row. */
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
#include <sqlite3.h>

#include "ringsteer/store.h"
#include "store_fixture.h"

#define T0 1700000000000LL
#define TTL 15000

/* A store with gw-a and gw-b registered, serving, at T0. */
static struct rs_store *open_store_ab(const struct store_fixture *f, uint32_t busy_timeout_ms)
{
	const struct rs_store_options opt = { .ttl_ms = TTL, .busy_timeout_ms = busy_timeout_ms };
	struct rs_store *st = NULL;

	assert_int_equal(rs_store_open(f->url, &opt, &st), 0);
	assert_int_equal(rs_store_gateway_register(st, "gw-a", "10.0.0.1:7001", RS_GATEWAY_SERVING, T0), 0);
	assert_int_equal(rs_store_gateway_register(st, "gw-b", "10.0.0.2:7001", RS_GATEWAY_SERVING, T0), 0);
	return st;
}

static struct rs_session_claim claim_of(const char *gw, const char *member, uint64_t epoch, int64_t now)
{
	return (struct rs_session_claim){ .gateway_id = gw, .member_id = member, .instance_id = "i-1",
					  .epoch = epoch, .sandboxes = 4, .source = "127.0.2.1:40000",
					  .now_ms = now };
}

static uint32_t load_of(struct rs_store *st, const char *gw, int64_t now)
{
	return store_fixture_gateway(st, gw, now).supervisors;
}

static void test_claim_empty(void **state)
{
	struct store_fixture *f = *state;
	struct rs_store *st = open_store_ab(f, 1000);
	struct rs_session_claim c = claim_of("gw-a", "m", 7, T0 + 100);
	struct rs_session_row row;
	struct rs_gateway_row gw;

	assert_int_equal(rs_store_session_claim(st, &c), 0);
	assert_true(store_fixture_row(st, "m", T0 + 100, &row));
	assert_string_equal(row.gateway_id, "gw-a");
	assert_string_equal(row.instance_id, "i-1");
	assert_string_equal(row.source, "127.0.2.1:40000");
	assert_int_equal(row.epoch, 7);
	assert_int_equal(row.sandboxes, 4);
	assert_int_equal(row.state, RS_SESSION_ACTIVE);
	assert_int_equal(row.heartbeat_ms, T0 + 100);
	assert_int_equal(row.expires_ms, T0 + 100 + TTL);
	assert_true(row.live);
	assert_int_equal(load_of(st, "gw-a", T0 + 100), 1);
	/* The claim refreshed the claiming gateway's heartbeat. */
	assert_int_equal(rs_store_gateway_get(st, "gw-a", T0 + 100, &gw), 0);
	assert_int_equal(gw.heartbeat_ms, T0 + 100);

	/* Claimed, it is an ordinary session: it lives with gw-a's row, past
	 * its own TTL while gw-a heartbeats, and its sandboxes follow. */
	assert_int_equal(rs_store_heartbeat(st, "gw-a", T0 + 1000), 0);
	assert_int_equal(rs_store_heartbeat(st, "gw-a", T0 + 100 + TTL), 0);
	assert_true(store_fixture_row(st, "m", T0 + 100 + 2 * TTL, &row));
	assert_true(row.live);
	assert_int_equal(row.heartbeat_ms, T0 + 100); /* attached at: never refreshed */
	assert_int_equal(load_of(st, "gw-a", T0 + 100 + 2 * TTL), 1);
	assert_true(store_fixture_row(st, "m", T0 + 100 + 2 * TTL + 1, &row));
	assert_false(row.live);
	assert_int_equal(rs_store_session_sandboxes(st, "gw-a", "m", 7, 5), 0);
	assert_true(store_fixture_row(st, "m", T0 + 1000, &row));
	assert_int_equal(row.sandboxes, 5);

	/* Claiming the same connection again (a lost answer) is harmless. */
	c.now_ms = T0 + 2000;
	assert_int_equal(rs_store_session_claim(st, &c), 0);
	assert_true(store_fixture_row(st, "m", T0 + 2000, &row));
	assert_int_equal(row.heartbeat_ms, T0 + 2000);
	rs_store_close(st);
}

static void test_claim_over_older(void **state)
{
	struct store_fixture *f = *state;
	struct rs_store *st = open_store_ab(f, 1000);
	struct rs_admit a = { .gateway_id = "gw-b", .member_id = "m", .instance_id = "old", .epoch = 3,
			      .stay = true, .sandboxes = 1, .source = "", .now_ms = T0 };
	struct rs_session_claim c = claim_of("gw-a", "m", 9, T0 + 500);
	struct rs_session_row row;

	/* m was attached to gw-b at epoch 3 before the store went away. */
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_true(a.accepted);
	assert_int_equal(rs_store_session_claim(st, &c), 0);
	assert_true(store_fixture_row(st, "m", T0 + 500, &row));
	assert_string_equal(row.gateway_id, "gw-a");
	assert_int_equal(row.epoch, 9);
	assert_string_equal(row.instance_id, "i-1");
	assert_int_equal(load_of(st, "gw-a", T0 + 500), 1);
	assert_int_equal(load_of(st, "gw-b", T0 + 500), 0);
	/* gw-b's old connection finds its row moved on (its next write). */
	assert_int_equal(rs_store_session_sandboxes(st, "gw-b", "m", 3, 2), -ESTALE);
	assert_int_equal(rs_store_heartbeat(st, "gw-b", T0 + 600), 0);
	assert_int_equal(load_of(st, "gw-b", T0 + 600), 0);

	/* Over an older pending reservation too. */
	a = (struct rs_admit){ .gateway_id = "gw-a", .member_id = "r", .epoch = 1, .now_ms = T0 };
	assert_int_equal(rs_store_admit(st, &a), 0);
	c = claim_of("gw-b", "r", 2, T0 + 700);
	assert_int_equal(rs_store_session_claim(st, &c), 0);
	assert_true(store_fixture_row(st, "r", T0 + 700, &row));
	assert_string_equal(row.gateway_id, "gw-b");
	assert_int_equal(row.state, RS_SESSION_ACTIVE);
	rs_store_close(st);
}

static void test_claim_under_newer(void **state)
{
	struct store_fixture *f = *state;
	struct rs_store *st = open_store_ab(f, 1000);
	struct rs_session_claim newer = claim_of("gw-b", "m", 20, T0 + 100);
	struct rs_session_claim c = claim_of("gw-a", "m", 10, T0 + 200);
	struct rs_session_row before, after;

	/* m reconnected to gw-b (epoch 20) while gw-a held epoch 10. */
	assert_int_equal(rs_store_session_claim(st, &newer), 0);
	assert_true(store_fixture_row(st, "m", T0 + 200, &before));
	assert_int_equal(rs_store_session_claim(st, &c), -ESTALE);
	assert_true(store_fixture_row(st, "m", T0 + 200, &after));
	assert_memory_equal(&before, &after, sizeof(before));
	assert_string_equal(after.gateway_id, "gw-b");
	assert_int_equal(after.epoch, 20);
	assert_int_equal(load_of(st, "gw-a", T0 + 200), 0);

	/* The same epoch at another gateway is not this connection: stale. */
	c = claim_of("gw-a", "m", 20, T0 + 300);
	assert_int_equal(rs_store_session_claim(st, &c), -ESTALE);
	assert_true(store_fixture_row(st, "m", T0 + 300, &after));
	assert_memory_equal(&before, &after, sizeof(before));
	rs_store_close(st);
}

static void test_claim_unregistered(void **state)
{
	struct store_fixture *f = *state;
	struct rs_store *st = open_store_ab(f, 1000);
	struct rs_session_claim c = claim_of("gw-x", "m", 1, T0);
	struct rs_session_row row;
	struct rs_gateway_row gw;

	assert_int_equal(rs_store_session_claim(st, &c), -ENOENT);
	assert_false(store_fixture_row(st, "m", T0, &row));
	assert_int_equal(rs_store_gateway_get(st, "gw-x", T0, &gw), -ENOENT);
	/* Once registered again, the same claim goes through. */
	assert_int_equal(rs_store_gateway_register(st, "gw-x", "10.0.0.9:7001", RS_GATEWAY_SERVING, T0), 0);
	assert_int_equal(rs_store_session_claim(st, &c), 0);
	assert_true(store_fixture_row(st, "m", T0, &row));
	assert_string_equal(row.gateway_id, "gw-x");
	rs_store_close(st);
}

static void test_claim_bad_args(void **state)
{
	struct store_fixture *f = *state;
	struct rs_store *st = open_store_ab(f, 1000);
	struct rs_session_claim c = claim_of("gw-a", "m", 1, T0);
	char long_id[RS_ID_MAX + 2];
	struct rs_session_row row;

	memset(long_id, 'a', sizeof(long_id) - 1);
	long_id[sizeof(long_id) - 1] = '\0';
	assert_int_equal(rs_store_session_claim(NULL, &c), -EINVAL);
	assert_int_equal(rs_store_session_claim(st, NULL), -EINVAL);
	c.member_id = "";
	assert_int_equal(rs_store_session_claim(st, &c), -EINVAL);
	c.member_id = long_id;
	assert_int_equal(rs_store_session_claim(st, &c), -EINVAL);
	c = claim_of("gw-a", "m", (uint64_t)INT64_MAX + 1, T0);
	assert_int_equal(rs_store_session_claim(st, &c), -EINVAL);
	c = claim_of(NULL, "m", 1, T0);
	assert_int_equal(rs_store_session_claim(st, &c), -EINVAL);
	assert_false(store_fixture_row(st, "m", T0, &row));
	/* instance and source may be absent: stored empty. */
	c = claim_of("gw-a", "m", 1, T0);
	c.instance_id = NULL;
	c.source = NULL;
	assert_int_equal(rs_store_session_claim(st, &c), 0);
	assert_true(store_fixture_row(st, "m", T0, &row));
	assert_string_equal(row.instance_id, "");
	assert_string_equal(row.source, "");
	rs_store_close(st);
}

/* Another writer holds the lock (what t_18 does to simulate an outage). */
static void test_claim_busy(void **state)
{
	struct store_fixture *f = *state;
	struct rs_store *st = open_store_ab(f, 50);
	struct rs_session_claim c = claim_of("gw-a", "m", 1, T0);
	struct rs_session_row row;
	sqlite3 *db = NULL;

	assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(rs_store_session_claim(st, &c), -EBUSY);
	assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	assert_false(store_fixture_row(st, "m", T0, &row));
	assert_int_equal(rs_store_session_claim(st, &c), 0);
	assert_true(store_fixture_row(st, "m", T0, &row));
	rs_store_close(st);
}

/* A claim says whether its gateway is above the cap; a deferred placement
 * (rs_admit.deferred) then moves the member by the rule, once, and only
 * while the gateway is above the cap with it. */
static void test_claim_above_cap_deferred(void **state)
{
	struct store_fixture *f = *state;
	struct rs_store *st = open_store_ab(f, 1000);
	struct rs_session_claim c;
	struct rs_session_row row;
	struct rs_admit a;
	const char *m[] = { "m-1", "m-2", "m-3" };

	/* Three accepted degraded at gw-a, claimed one after the other:
	 * N = 1, 2, 3 over G = 2, so cap 1, 1, 2 against loads 1, 2, 3. */
	c = claim_of("gw-a", m[0], 1, T0 + 10);
	assert_int_equal(rs_store_session_claim(st, &c), 0);
	assert_int_equal(c.load, 1);
	assert_int_equal(c.cap, 1);
	assert_false(c.above_cap);
	c = claim_of("gw-a", m[1], 1, T0 + 20);
	assert_int_equal(rs_store_session_claim(st, &c), 0);
	assert_int_equal(c.load, 2);
	assert_int_equal(c.cap, 1);
	assert_true(c.above_cap);
	c = claim_of("gw-a", m[2], 1, T0 + 30);
	assert_int_equal(rs_store_session_claim(st, &c), 0);
	assert_int_equal(c.load, 3);
	assert_int_equal(c.cap, 2);
	assert_true(c.above_cap);

	/* m-3's deferred placement: gw-a is above the cap with it, the rule
	 * finds room only on gw-b; its row becomes a reservation there, with
	 * its epoch and facts. */
	a = (struct rs_admit){ .gateway_id = "gw-a", .member_id = m[2], .epoch = 1, .deferred = true,
			       .now_ms = T0 + 40 };
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_false(a.accepted);
	assert_string_equal(a.target_id, "gw-b");
	assert_int_equal(a.decision.reason, RS_REASON_PLACED);
	assert_true(store_fixture_row(st, m[2], T0 + 40, &row));
	assert_int_equal(row.state, RS_SESSION_PENDING);
	assert_string_equal(row.gateway_id, "gw-b");
	assert_int_equal(row.epoch, 1);
	assert_int_equal(row.sandboxes, 4);
	assert_int_equal(load_of(st, "gw-a", T0 + 40), 2);
	assert_int_equal(load_of(st, "gw-b", T0 + 40), 1);

	/* m-2's: gw-a holds 2 at cap 2, no longer above it: it stays and
	 * nothing is written. */
	a = (struct rs_admit){ .gateway_id = "gw-a", .member_id = m[1], .epoch = 1, .deferred = true,
			       .now_ms = T0 + 50 };
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_true(a.accepted);
	assert_string_equal(a.target_id, "gw-a");
	assert_true(store_fixture_row(st, m[1], T0 + 50, &row));
	assert_int_equal(row.state, RS_SESSION_ACTIVE);
	assert_string_equal(row.gateway_id, "gw-a");
	assert_int_equal(row.heartbeat_ms, T0 + 20);

	/* Only its attachment here can be placed: another epoch, or a row
	 * elsewhere, is superseded; handoff and deferred exclude each other. */
	a = (struct rs_admit){ .gateway_id = "gw-a", .member_id = m[0], .epoch = 2, .deferred = true,
			       .now_ms = T0 + 60 };
	assert_int_equal(rs_store_admit(st, &a), -ESTALE);
	a = (struct rs_admit){ .gateway_id = "gw-a", .member_id = m[2], .epoch = 1, .deferred = true,
			       .now_ms = T0 + 60 };
	assert_int_equal(rs_store_admit(st, &a), -ESTALE);
	a = (struct rs_admit){ .gateway_id = "gw-a", .member_id = m[0], .epoch = 1, .deferred = true,
			       .handoff = true, .now_ms = T0 + 60 };
	assert_int_equal(rs_store_admit(st, &a), -EINVAL);
	rs_store_close(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_claim_empty, store_fixture_setup, store_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_claim_over_older, store_fixture_setup, store_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_claim_under_newer, store_fixture_setup, store_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_claim_unregistered, store_fixture_setup, store_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_claim_bad_args, store_fixture_setup, store_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_claim_busy, store_fixture_setup, store_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_claim_above_cap_deferred, store_fixture_setup, store_fixture_teardown),
	};

	return cmocka_run_group_tests_name("store_claim", tests, NULL, NULL);
}
