/* SPDX-License-Identifier: Apache-2.0 */
/* test_store_commit_lost.c - a COMMIT whose answer is lost is resolved by
 * reading back, not assumed failed (issue 25, hole "PostgreSQL failover").
 * The backend's test seam (store_pg_hook.h) runs between sending an
 * admission's COMMIT and reading its answer: the test waits there until
 * the server has committed (the row is visible from a connection of its
 * own), terminates the store's backend and puts a dead socket in place of
 * the store's, so the answer never arrives.  The admission must be
 * reported done (accepted, its row there), and the store keep working.
 * PostgreSQL only: runs when RS_TEST_PG_URL names a server (its database
 * emptied for the test). */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include "ringsteer/store.h"
#include "store/store_pg_hook.h"
#include "store_fixture.h"

#define T0 1700000000000LL

struct breaker {
	const char *url;     /* the test's own connection's */
	const char *member;  /* whose row the COMMIT writes */
	int calls;
	bool committed_seen; /* the row was visible before the break */
};

/* The text of sql's single value on url (a static buffer), or "". */
static const char *pg_value(const char *url, const char *sql)
{
	static char out[64];
	PGconn *c = PQconnectdb(url);
	PGresult *res = PQstatus(c) == CONNECTION_OK ? PQexec(c, sql) : NULL;

	out[0] = '\0';
	if (res && PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
		snprintf(out, sizeof(out), "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	PQfinish(c);
	return out;
}

/* The seam: the COMMIT is on its way.  Waits for the server to have
 * committed it, kills the store's backend, and swaps the store's socket
 * for one whose peer is gone: the answer is lost. */
static void break_after_commit(void *ctx, int fd)
{
	struct breaker *b = ctx;
	char sql[160];
	int pair[2];

	b->calls++;
	snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM sessions WHERE member_id = '%s'", b->member);
	for (int tries = 0; tries < 500 && !b->committed_seen; tries++) {
		b->committed_seen = strcmp(pg_value(b->url, sql), "1") == 0;
		if (!b->committed_seen)
			poll(NULL, 0, 10);
	}
	store_fixture_pg_exec(b->url, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
				      " WHERE application_name = 'ringsteer' AND pid <> pg_backend_pid()");
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) == 0) {
		close(pair[1]);
		dup2(pair[0], fd);
		close(pair[0]);
	}
}

static void test_commit_answer_lost(void **state)
{
	struct store_fixture *f = *state;
	const char *ids[] = { "gw-a" };
	struct breaker b = { .url = f->url, .member = "m-1" };
	struct rs_admit a = { .gateway_id = "gw-a", .member_id = "m-1", .instance_id = "i-1", .epoch = 1,
			      .sandboxes = 1, .source = "10.1.0.9:40000", .now_ms = T0 + 1000 };
	struct rs_session_row row;
	struct rs_store *st = store_fixture_open(f, NULL, ids, 1, T0);
	int err;

	assert_int_equal(rs_store_pg_set_commit_hook(st, break_after_commit, &b), 0);
	err = rs_store_admit(st, &a);
	assert_int_equal(rs_store_pg_set_commit_hook(st, NULL, NULL), 0);
	printf("# admission: %d (%s), accepted %d, hook ran %d, committed before the break %d\n", err,
	       strerror(-err), a.accepted, b.calls, b.committed_seen);
	assert_int_equal(b.calls, 1);
	assert_true(b.committed_seen);
	assert_int_equal(err, 0);
	assert_true(a.accepted);
	assert_true(store_fixture_row(st, "m-1", T0 + 1000, &row));
	assert_string_equal(row.gateway_id, "gw-a");
	assert_int_equal(row.state, RS_SESSION_ACTIVE);
	/* The store goes on: the next write works. */
	assert_int_equal(rs_store_heartbeat(st, "gw-a", T0 + 2000), 0);
	rs_store_close(st);
}

int main(void)
{
	const char *pg = getenv("RS_TEST_PG_URL");
	char url[700];
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate_setup_teardown(test_commit_answer_lost, store_fixture_setup,
							 store_fixture_teardown, url),
	};

	if (!pg || !pg[0]) {
		printf("# store_commit_lost: SKIPPED, RS_TEST_PG_URL is not set\n");
		return 0;
	}
	snprintf(url, sizeof(url), "%s", pg);
	return cmocka_run_group_tests_name("store_commit_lost (postgres)", tests, NULL, NULL);
}
