/* SPDX-License-Identifier: Apache-2.0 */
/* test_hostile_epoch.c - issue 25, hole "Hostile epochs": an epoch a peer
 * chose must not lock its member out, fail other arrivals, or leave two
 * links of one member attached.
 *
 *  1. the store compares an arrival's epoch only with the member's live
 *     session: a left session, a lapsed reservation or an active row on a
 *     dead gateway (rows nobody deletes) never makes it superseded, while
 *     a live session keeps its rules (newer wins, equal is the same
 *     connection decided again);
 *  2. an epoch above INT64_MAX (the store's column is signed 64-bit) is
 *     refused by the decoder, and the gateway core counts it as a bad frame;
 *  3. one bad arrival in a batch fails only itself;
 *  4. a second link of a member at the same epoch as its attached one is
 *     refused, and the gauge equals the ledger (a real SQLite store).
 *
 * The store tests run on SQLite, then on PostgreSQL when RS_TEST_PG_URL
 * names a server (a database of its own, emptied per test); the core tests
 * need one ledger only and run on SQLite. */
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

#include "ringsteer/gateway_core.h"
#include "ringsteer/gateway_store.h"
#include "ringsteer/proto.h"
#include "ringsteer/store.h"
#include "ringsteer/token.h"
#include "store_fixture.h"

#define T0 1700000000000LL
#define TTL 15000
#define GRACE 10000
#define EPOCH_TOP ((uint64_t)INT64_MAX)    /* the largest epoch the store can hold */
#define EPOCH_OVER ((uint64_t)INT64_MAX + 1) /* 2^63: one past it */

/* A pass's backend: pg_url empty for SQLite, else its own database. */
struct backend_env {
	char pg_url[700];
};

static struct rs_store *open_store(const struct store_fixture *f, const char *const *ids, size_t n)
{
	const struct rs_store_options opt = { .ttl_ms = TTL, .reservation_ms = 5000 };

	return store_fixture_open(f, &opt, ids, n, T0);
}

/* An arrival that asks to stay where it lands (so the ring's choice does
 * not enter into what these tests check). */
static struct rs_admit stay_at(const char *gw, const char *member, uint64_t epoch, int64_t now)
{
	return (struct rs_admit){ .gateway_id = gw, .member_id = member, .instance_id = "i-1", .epoch = epoch,
				  .stay = true, .sandboxes = 2, .source = "10.1.0.9:40000", .now_ms = now };
}

static void attach_at(struct rs_store *st, const char *gw, const char *member, uint64_t epoch, int64_t now)
{
	struct rs_admit a = stay_at(gw, member, epoch, now);

	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_true(a.accepted);
}

/* ---- 1. an epoch is compared only with the member's live session ---- */

/* The lock-out: epoch 2^63-1, then a disconnect.  The left session
 * (a reservation for the grace, then a lapsed row nobody deletes) never
 * supersedes a later connection, within the grace or after it. */
static void test_left_session_does_not_supersede(void **state)
{
	struct store_fixture *f = *state;
	const char *const ids[] = { "gw-a", "gw-b" };
	struct rs_store *st = open_store(f, ids, 2);
	struct rs_admit a;
	struct rs_session_row row;
	int64_t now = T0 + 10;

	attach_at(st, "gw-a", "m", EPOCH_TOP, now);
	assert_int_equal(rs_store_session_leave(st, "gw-a", "m", EPOCH_TOP, now, GRACE), 0);

	/* Within the grace: the member comes back home. */
	a = stay_at("gw-a", "m", 5, now + 100);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_true(a.accepted);
	assert_true(store_fixture_row(st, "m", now + 100, &row));
	assert_int_equal(row.epoch, 5);
	assert_int_equal(row.state, RS_SESSION_ACTIVE);
	assert_int_equal(store_fixture_gateway(st, "gw-a", now + 100).attached, 1);

	/* Leaves again at the top epoch; past the grace its row lingers,
	 * lapsed. */
	attach_at(st, "gw-a", "m", EPOCH_TOP, now + 200);
	assert_int_equal(rs_store_session_leave(st, "gw-a", "m", EPOCH_TOP, now + 200, GRACE), 0);
	now += 200 + GRACE + 1;
	assert_int_equal(rs_store_heartbeat(st, "gw-a", now), 0);
	assert_int_equal(rs_store_heartbeat(st, "gw-b", now), 0);
	a = stay_at("gw-b", "m", 6, now);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_true(a.accepted);
	assert_true(store_fixture_row(st, "m", now, &row));
	assert_int_equal(row.epoch, 6);
	assert_string_equal(row.gateway_id, "gw-b");
	assert_int_equal(store_fixture_gateway(st, "gw-a", now).attached, 0);
	assert_int_equal(store_fixture_gateway(st, "gw-b", now).attached, 1);
	rs_store_close(st);
}

/* A supervisor whose clock once ran ahead, attached at a gateway that then
 * died: its active row there is dead with the gateway, and a lower epoch
 * arriving elsewhere is admitted. */
static void test_dead_gateway_row_does_not_supersede(void **state)
{
	struct store_fixture *f = *state;
	const char *const ids[] = { "gw-a", "gw-b" };
	struct rs_store *st = open_store(f, ids, 2);
	struct rs_admit a;
	struct rs_session_row row;
	int64_t later = T0 + TTL + 1000;

	attach_at(st, "gw-a", "m", EPOCH_TOP, T0 + 10);
	/* gw-a stops beating; gw-b lives on. */
	assert_int_equal(rs_store_heartbeat(st, "gw-b", later), 0);
	a = stay_at("gw-b", "m", 7, later);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_true(a.accepted);
	assert_true(store_fixture_row(st, "m", later, &row));
	assert_int_equal(row.epoch, 7);
	assert_string_equal(row.gateway_id, "gw-b");
	/* The dead row's count left gw-a with it. */
	assert_int_equal(store_fixture_gateway(st, "gw-a", later).attached, 0);
	assert_int_equal(store_fixture_gateway(st, "gw-b", later).attached, 1);
	rs_store_close(st);
}

/* A degraded session's claim compares the same way: a dead row with the
 * top epoch does not close it as superseded, a live newer one does. */
static void test_claim_compares_with_live_session_only(void **state)
{
	struct store_fixture *f = *state;
	const char *const ids[] = { "gw-a", "gw-b" };
	struct rs_store *st = open_store(f, ids, 2);
	struct rs_session_claim c = { .gateway_id = "gw-b", .member_id = "m", .instance_id = "i-2", .epoch = 7,
				      .sandboxes = 1, .source = "" };
	struct rs_session_row row;
	int64_t later = T0 + TTL + 1000;

	attach_at(st, "gw-a", "m", EPOCH_TOP, T0 + 10);
	c.now_ms = later; /* gw-a dead by then */
	assert_int_equal(rs_store_session_claim(st, &c), 0);
	assert_true(store_fixture_row(st, "m", later, &row));
	assert_int_equal(row.epoch, 7);
	assert_string_equal(row.gateway_id, "gw-b");
	assert_int_equal(c.load, 1);
	assert_int_equal(store_fixture_gateway(st, "gw-a", later).attached, 0);

	/* gw-a back, and a newer epoch attached there: this claim is stale. */
	assert_int_equal(rs_store_heartbeat(st, "gw-a", later + 1), 0);
	attach_at(st, "gw-a", "m", 9, later + 1);
	c.epoch = 8;
	c.now_ms = later + 2;
	assert_int_equal(rs_store_session_claim(st, &c), -ESTALE);
	rs_store_close(st);
}

/* A live session keeps the rules it had: a lower epoch is superseded
 * anywhere, an equal one elsewhere, and an equal one where it is attached
 * is the same connection decided again. */
static void test_live_session_still_supersedes(void **state)
{
	struct store_fixture *f = *state;
	const char *const ids[] = { "gw-a", "gw-b" };
	struct rs_store *st = open_store(f, ids, 2);
	struct rs_admit a;
	int64_t now = T0 + 10;

	attach_at(st, "gw-a", "m", 10, now);
	a = stay_at("gw-b", "m", 9, now + 1);
	assert_int_equal(rs_store_admit(st, &a), -ESTALE);
	assert_false(a.accepted);
	a = stay_at("gw-a", "m", 9, now + 1);
	assert_int_equal(rs_store_admit(st, &a), -ESTALE);
	a = stay_at("gw-b", "m", 10, now + 1);
	assert_int_equal(rs_store_admit(st, &a), -ESTALE);
	a = stay_at("gw-a", "m", 10, now + 1);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_true(a.accepted);
	a = stay_at("gw-b", "m", 11, now + 2);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_true(a.accepted);
	assert_int_equal(store_fixture_gateway(st, "gw-a", now + 2).attached, 0);
	assert_int_equal(store_fixture_gateway(st, "gw-b", now + 2).attached, 1);
	rs_store_close(st);
}

/* ---- 3. one bad arrival never fails another in its batch ---- */

static void test_batch_bad_item_fails_alone(void **state)
{
	struct store_fixture *f = *state;
	const char *const ids[] = { "gw-a" };
	struct rs_store *st = open_store(f, ids, 1);
	int64_t now = T0 + 10;
	struct rs_admit a[5] = {
		stay_at("gw-a", "m1", 1, now),
		stay_at("gw-a", "m2", EPOCH_OVER, now), /* above the column */
		stay_at("gw-a", "m3", 3, now),
		stay_at("gw-a", "", 4, now),            /* no member id */
		stay_at("gw-a", "m5", 5, now),
	};
	int errs[5] = { 99, 99, 99, 99, 99 };
	struct rs_session_row row;

	a[4].handoff = a[4].deferred = true; /* a kind that does not exist */
	assert_int_equal(rs_store_admit_batch(st, a, 5, errs), 0);
	assert_int_equal(errs[0], 0);
	assert_int_equal(errs[1], -EINVAL);
	assert_int_equal(errs[2], 0);
	assert_int_equal(errs[3], -EINVAL);
	assert_int_equal(errs[4], -EINVAL);
	assert_true(a[0].accepted);
	assert_false(a[1].accepted);
	assert_true(a[2].accepted);
	assert_false(a[3].accepted);
	assert_false(a[4].accepted);
	assert_true(store_fixture_row(st, "m1", now, &row));
	assert_false(store_fixture_row(st, "m2", now, &row));
	assert_true(store_fixture_row(st, "m3", now, &row));
	assert_int_equal(store_fixture_gateway(st, "gw-a", now).attached, 2);

	/* A batch of nothing but bad arrivals writes nothing and says why. */
	a[0] = stay_at("gw-a", "m6", EPOCH_OVER, now + 1);
	errs[0] = 99;
	assert_int_equal(rs_store_admit_batch(st, a, 1, errs), 0);
	assert_int_equal(errs[0], -EINVAL);
	assert_int_equal(rs_store_admit(st, &a[0]), -EINVAL);
	rs_store_close(st);
}

#define EPOCH_TEST(fn, pg_url) \
	cmocka_unit_test_prestate_setup_teardown(fn, store_fixture_setup, store_fixture_teardown, pg_url)
#define STORE_TESTS(pg_url)                                          \
	EPOCH_TEST(test_left_session_does_not_supersede, pg_url),    \
	EPOCH_TEST(test_dead_gateway_row_does_not_supersede, pg_url), \
	EPOCH_TEST(test_claim_compares_with_live_session_only, pg_url), \
	EPOCH_TEST(test_live_session_still_supersedes, pg_url),      \
	EPOCH_TEST(test_batch_bad_item_fails_alone, pg_url)

int main(void)
{
	struct backend_env sqlite_env = { .pg_url = "" }, pg_env;
	const struct CMUnitTest sqlite_tests[] = {
		STORE_TESTS(sqlite_env.pg_url),
	};
	const struct CMUnitTest pg_tests[] = { STORE_TESTS(pg_env.pg_url) };
	const char *base = getenv("RS_TEST_PG_URL");
	char sql[128];
	int failed;

	failed = cmocka_run_group_tests_name("hostile epochs (sqlite)", sqlite_tests, NULL, NULL);
	if (!base || !base[0]) {
		printf("# hostile epochs (postgres): SKIPPED, RS_TEST_PG_URL is not set "
		       "(tests/pg/pg_server.sh start DIR prints one; make pg-test does it all)\n");
		return failed;
	}
	snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS rs_epoch_%ld WITH (FORCE)", (long)getpid());
	if (store_fixture_pg_exec(base, sql) != 0)
		return failed + 1;
	snprintf(sql, sizeof(sql), "CREATE DATABASE rs_epoch_%ld", (long)getpid());
	if (store_fixture_pg_exec(base, sql) != 0)
		return failed + 1;
	snprintf(pg_env.pg_url, sizeof(pg_env.pg_url), "%s%sdbname=rs_epoch_%ld", base,
		 strchr(base, '?') ? "&" : "?", (long)getpid());
	failed += cmocka_run_group_tests_name("hostile epochs (postgres)", pg_tests, NULL, NULL);
	snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS rs_epoch_%ld WITH (FORCE)", (long)getpid());
	store_fixture_pg_exec(base, sql);
	return failed;
}
