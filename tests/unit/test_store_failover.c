/* SPDX-License-Identifier: Apache-2.0 */
/* test_store_failover.c - a PostgreSQL store whose URL names several hosts
 * writes to the writable one (issue 25, hole "PostgreSQL failover"): with a
 * read-only server named first, the store opens on the second; a server
 * that turns read-only under an open store (a primary demoted) fails one
 * call with -EROFS and the next lands on the other host, instead of
 * failing on the kept connection for good.
 *
 * Two throwaway servers of its own (tests/pg/pg_server.sh, run from the
 * source tree), started when RS_TEST_PG_URL says PostgreSQL tests are
 * wanted.  A read-only server is one with default_transaction_read_only on
 * (ALTER SYSTEM, reload): it answers writes 25006 as a hot standby does and
 * libpq's target_session_attrs=read-write refuses it the same way. */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include "ringsteer/store.h"
#include "store_fixture.h"

#define T0 1700000000000LL

struct servers {
	char dir[2][64];
	char url[2][160];  /* each server's own database ringsteer */
	char both[400];    /* both hosts, first then second */
};

static int run(const char *fmt, const char *arg)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), fmt, arg);
	return system(cmd) == 0 ? 0 : -1;
}

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

/* Makes server i read-only, as a standby answers, and waits until it is. */
static void make_read_only(const struct servers *s, int i)
{
	assert_int_equal(store_fixture_pg_exec(s->url[i], "ALTER SYSTEM SET default_transaction_read_only = on"), 0);
	assert_int_equal(store_fixture_pg_exec(s->url[i], "SELECT pg_reload_conf()"), 0);
	for (int tries = 0; strcmp(pg_value(s->url[i], "SHOW default_transaction_read_only"), "on") != 0; tries++) {
		assert_true(tries < 500);
		poll(NULL, 0, 10);
	}
}

static bool has_gateway(const char *url, const char *id)
{
	char sql[128];

	snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM gateways WHERE id = '%s'", id);
	return strcmp(pg_value(url, sql), "1") == 0;
}

static int servers_setup(void **state)
{
	struct servers *s = calloc(1, sizeof(*s));

	if (!s)
		return -1;
	for (int i = 0; i < 2; i++) {
		char dir[sizeof(s->dir[i])]; /* a local copy: -O1 cannot tell s's arrays apart (-Werror=restrict) */

		snprintf(dir, sizeof(dir), "/tmp/rs-fo%d-XXXXXX", i);
		if (!mkdtemp(dir) || run("tests/pg/pg_server.sh start %s >/dev/null", dir) != 0)
			return -1;
		memcpy(s->dir[i], dir, sizeof(dir));
		snprintf(s->url[i], sizeof(s->url[i]), "postgres:///ringsteer?host=%s", dir);
	}
	snprintf(s->both, sizeof(s->both), "postgres:///ringsteer?host=%s,%s", s->dir[0], s->dir[1]);
	*state = s;
	return 0;
}

static int servers_teardown(void **state)
{
	struct servers *s = *state;

	for (int i = 0; s && i < 2; i++)
		if (s->dir[i][0])
			run("tests/pg/pg_server.sh stop %s", s->dir[i]);
	free(s);
	return 0;
}

/* The read-only server named first: the store opens, and writes, on the
 * second. */
static void test_read_only_first(void **state)
{
	struct servers *s = *state;
	struct rs_store *st = NULL;

	make_read_only(s, 0);
	assert_int_equal(rs_store_open(s->both, NULL, &st), 0);
	assert_int_equal(rs_store_gateway_register(st, "gw-a", "10.0.0.1:7001", RS_GATEWAY_SERVING, T0), 0);
	rs_store_close(st);
	assert_true(has_gateway(s->url[1], "gw-a"));
}

/* Both writable, the store on the first; the first turns read-only (its
 * standby, the second, promoted): one call fails -EROFS, the next writes on
 * the second. */
static void test_turns_read_only(void **state)
{
	struct servers *s = *state;
	struct rs_store *st = NULL;
	int err = 0, calls = 0;

	/* The second holds the schema, as a promoted standby would. */
	assert_int_equal(rs_store_open(s->url[1], NULL, &st), 0);
	rs_store_close(st);
	assert_int_equal(rs_store_open(s->both, NULL, &st), 0);
	assert_int_equal(rs_store_gateway_register(st, "gw-a", "10.0.0.1:7001", RS_GATEWAY_SERVING, T0), 0);
	assert_true(has_gateway(s->url[0], "gw-a"));
	make_read_only(s, 0);
	do {
		err = rs_store_gateway_register(st, "gw-a", "10.0.0.1:7001", RS_GATEWAY_SERVING, T0 + 1000);
		calls++;
		if (err)
			printf("# call %d: %d (%s)\n", calls, err, strerror(-err));
	} while (err && calls < 3);
	assert_int_equal(err, 0);
	assert_true(calls <= 2);
	assert_true(has_gateway(s->url[1], "gw-a"));
	rs_store_close(st);
}

int main(void)
{
	const char *pg = getenv("RS_TEST_PG_URL");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_read_only_first, servers_setup, servers_teardown),
		cmocka_unit_test_setup_teardown(test_turns_read_only, servers_setup, servers_teardown),
	};

	if (!pg || !pg[0]) {
		printf("# store_failover: SKIPPED, RS_TEST_PG_URL is not set (two servers of its own are started "
		       "when it is)\n");
		return 0;
	}
	return cmocka_run_group_tests_name("store_failover (postgres)", tests, NULL, NULL);
}
