/* SPDX-License-Identifier: Apache-2.0 */
/* test_reg_limit.c - the member socket's per-key and per-uid limits
 * (user/agent/reg_limit.c): a key gets REG_LIMIT_BURST registrations then
 * one per REG_LIMIT_REFILL_MS, an episode of refusals is reported once, a
 * key holds one reservation (a newer member's replaces it and hands the
 * old one back), reservations come back when due and not before, idle keys
 * are forgotten, and a uid holds at most its cap. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "agent/reg_limit.h"

static struct reg_reservation res(const char *member, const char *gw, int64_t end)
{
	struct reg_reservation r = { .expires_ms = end };

	snprintf(r.member_id, sizeof(r.member_id), "%s", member);
	snprintf(r.gateway, sizeof(r.gateway), "%s", gw);
	return r;
}

static void test_burst_then_refill(void **state)
{
	struct reg_limits l;

	(void)state;
	reg_limit_init(&l, 0);
	for (int i = 0; i < REG_LIMIT_BURST; i++)
		assert_int_equal(reg_limit_take(&l, 1, 7, 1000), REG_TAKE_OK);
	assert_int_equal(reg_limit_take(&l, 1, 7, 1000), REG_TAKE_LIMITED_FIRST);
	assert_int_equal(reg_limit_take(&l, 1, 7, 1001), REG_TAKE_LIMITED); /* logged once */
	/* Another key is not affected. */
	assert_int_equal(reg_limit_take(&l, 1, 8, 1001), REG_TAKE_OK);
	assert_int_equal(reg_limit_take(&l, 2, 7, 1001), REG_TAKE_OK);
	assert_int_equal(reg_limit_take(&l, 1, 7, 1000 + REG_LIMIT_REFILL_MS - 1), REG_TAKE_LIMITED);
	assert_int_equal(reg_limit_take(&l, 1, 7, 1000 + REG_LIMIT_REFILL_MS), REG_TAKE_OK);
	assert_int_equal(reg_limit_take(&l, 1, 7, 1000 + REG_LIMIT_REFILL_MS), REG_TAKE_LIMITED_FIRST);
	/* A clock going back refills nothing. */
	assert_int_equal(reg_limit_take(&l, 1, 7, 0), REG_TAKE_LIMITED);
	/* Long idle: a full burst again, never more. */
	for (int i = 0; i < REG_LIMIT_BURST; i++)
		assert_int_equal(reg_limit_take(&l, 1, 7, 1000000), REG_TAKE_OK);
	assert_int_equal(reg_limit_take(&l, 1, 7, 1000000), REG_TAKE_LIMITED_FIRST);
	reg_limit_free(&l);
}

static void test_one_reservation_per_key(void **state)
{
	struct reg_limits l;
	struct reg_reservation old, r, due[4];

	(void)state;
	reg_limit_init(&l, 0);
	r = res("m-a", "gw-1", 5000);
	/* A key forgotten meanwhile (steered again at a sync) is tracked again. */
	assert_int_equal(reg_limit_reserve(&l, 1, 7, &r, &old, 0), 0);
	assert_int_equal(l.n_keys, 1);
	for (int i = 0; i < REG_LIMIT_BURST; i++) /* with a full bucket */
		assert_int_equal(reg_limit_take(&l, 1, 7, 0), REG_TAKE_OK);
	/* The same member again: the same store row, nothing to withdraw. */
	r = res("m-a", "gw-1", 6000);
	assert_int_equal(reg_limit_reserve(&l, 1, 7, &r, &old, 0), 0);
	/* Another member from the same key replaces it: the old one back. */
	r = res("m-b", "gw-2", 7000);
	assert_int_equal(reg_limit_reserve(&l, 1, 7, &r, &old, 0), 1);
	assert_string_equal(old.member_id, "m-a");
	assert_string_equal(old.gateway, "gw-1");
	assert_int_equal(old.expires_ms, 6000);
	/* Not due before its end; due exactly once at it. */
	assert_int_equal(reg_limit_due(&l, 6999, 0, due, 4), 0);
	assert_int_equal(reg_limit_due(&l, 7000, 0, due, 4), 1);
	assert_string_equal(due[0].member_id, "m-b");
	assert_int_equal(reg_limit_due(&l, 9000, 0, due, 4), 0);
	reg_limit_free(&l);
}

static void test_due_bounded_and_idle_forgotten(void **state)
{
	struct reg_limits l;
	struct reg_reservation r, due[2];
	size_t total = 0, n;

	(void)state;
	reg_limit_init(&l, 0);
	for (uint64_t id = 1; id <= 5; id++) {
		char m[16];

		snprintf(m, sizeof(m), "m-%llu", (unsigned long long)id);
		assert_int_equal(reg_limit_take(&l, 1, id, 0), REG_TAKE_OK);
		r = res(m, "gw-1", 100);
		assert_int_equal(reg_limit_reserve(&l, 1, id, &r, &due[0], 0), 0);
	}
	assert_int_equal(l.n_keys, 5);
	while ((n = reg_limit_due(&l, 100, 0, due, 2)) > 0)
		total += n;
	assert_int_equal(total, 5);
	/* Their buckets are not full yet: still tracked (a burst cannot be
	 * renewed by waiting out the reservation alone). */
	assert_int_equal(l.n_keys, 5);
	assert_int_equal(reg_limit_due(&l, 100, REG_LIMIT_REFILL_MS, due, 2), 0);
	assert_int_equal(l.n_keys, 0);
	reg_limit_free(&l);
}

static void test_uid_cap(void **state)
{
	struct reg_limits l;

	(void)state;
	reg_limit_init(&l, 2);
	assert_int_equal(reg_limit_uid_hold(&l, 1000), 0);
	assert_int_equal(reg_limit_uid_hold(&l, 1000), 0);
	assert_int_equal(reg_limit_uid_hold(&l, 1000), -EDQUOT);
	assert_int_equal(reg_limit_uid_hold(&l, 0), 0); /* another uid: its own share */
	assert_int_equal(reg_limit_uid_count(&l, 1000), 2);
	reg_limit_uid_release(&l, 1000);
	assert_int_equal(reg_limit_uid_hold(&l, 1000), 0);
	reg_limit_uid_release(&l, 1000);
	reg_limit_uid_release(&l, 1000);
	reg_limit_uid_release(&l, 1000); /* not held: nothing */
	assert_int_equal(reg_limit_uid_count(&l, 1000), 0);
	reg_limit_free(&l);
	reg_limit_init(&l, 0);
	assert_int_equal(l.uid_max, REG_LIMIT_UID_DEFAULT);
	reg_limit_free(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_burst_then_refill),
		cmocka_unit_test(test_one_reservation_per_key),
		cmocka_unit_test(test_due_bounded_and_idle_forgotten),
		cmocka_unit_test(test_uid_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
