/* SPDX-License-Identifier: Apache-2.0 */
/* test_store_fallback.c - Service fallbacks after failed redirects over
 * SQLite: the admission says it decided one (rs_admit.fallback); at a
 * gateway at the cap the stay is refused and the member is sent to another
 * target, never the one it could not reach; with rs_admit.liveness (the
 * gateway's third round in a row) the stay is honored above the cap
 * (over_cap), while liveness changes nothing for an arrival that is not a
 * fallback. */
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

#define T0 1700000000000LL
#define TTL 15000

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

static struct rs_admit fallback_of(const char *member, uint64_t epoch, int64_t now, bool liveness)
{
	struct rs_admit a = arrival("gw-a", member, epoch, true, now);

	a.liveness = liveness;
	return a;
}

static void test_fallback_rounds(void **state)
{
	struct store_fixture *f = *state;
	const char *const ids[] = { "gw-a", "gw-t", "gw-u" };
	struct rs_store *st = open_store(f, ids, 3);
	struct rs_session_row row;
	struct rs_admit a;
	char first[RS_ID_MAX + 1];

	/* gw-a holds two (they asked to stay); x, arriving there, is sent on. */
	a = arrival("gw-a", "h-1", 1, true, T0 + 10);
	assert_int_equal(rs_store_admit(st, &a), 0);
	a = arrival("gw-a", "h-2", 1, true, T0 + 10);
	assert_int_equal(rs_store_admit(st, &a), 0);
	a = arrival("gw-a", "x", 1, false, T0 + 20);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_false(a.accepted);
	assert_false(a.fallback);
	snprintf(first, sizeof(first), "%s", a.target_id);

	/* Round 1: x could not reach it and comes back with STAY through the
	 * Service: a fallback, refused at the cap (N 3 over the two others:
	 * cap 2), sent to the third gateway. */
	a = fallback_of("x", 2, T0 + 30, false);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_true(a.fallback);
	assert_false(a.accepted);
	assert_false(a.over_cap);
	assert_string_not_equal(a.target_id, first);
	/* Round 2: the same, back to the first target. */
	a = fallback_of("x", 3, T0 + 40, false);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_true(a.fallback);
	assert_false(a.accepted);
	assert_string_equal(a.target_id, first);
	/* Round 3, the gateway's liveness: accepted above the cap. */
	a = fallback_of("x", 4, T0 + 50, true);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_true(a.fallback);
	assert_true(a.accepted);
	assert_true(a.over_cap);
	assert_int_equal(a.decision.reason, RS_REASON_STAY);
	assert_true(store_fixture_row(st, "x", T0 + 50, &row));
	assert_int_equal(row.state, RS_SESSION_ACTIVE);
	assert_string_equal(row.gateway_id, "gw-a");

	/* Liveness on an arrival that is no fallback changes nothing: y, no
	 * stay, is placed by the rule (gw-a, at 3, is above the cap). */
	a = arrival("gw-a", "y", 1, false, T0 + 60);
	a.liveness = true;
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_false(a.fallback);
	assert_false(a.accepted);
	assert_false(a.over_cap);
	rs_store_close(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_fallback_rounds, store_fixture_setup, store_fixture_teardown),
	};

	return cmocka_run_group_tests_name("store_fallback", tests, NULL, NULL);
}
