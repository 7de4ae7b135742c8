/* SPDX-License-Identifier: Apache-2.0 */
/* test_store_scale.c - the store's work per event does not grow with its
 * sessions (issue 15): schema version 2 migrated from a hand-made version
 * 1 store with rows in it (loads right, idempotent), a restarted gateway
 * holding no sessions (rs_store_gateway_start), statements per heartbeat
 * and per admission counted and equal with few and many rows, batched
 * admission against a sequential oracle on 200 random states (two stores
 * built alike, one batch vs one admission at a time, every decision and
 * every final row compared), the attached counts against the rows after
 * random operations, and on PostgreSQL a server that stops answering
 * (SIGSTOP): -ETIMEDOUT within about the busy timeout, then service again.
 *
 * Runs on SQLite, then on PostgreSQL when RS_TEST_PG_URL names a server
 * (tests/pg/pg_server.sh start; `make pg-test` does it), in databases of
 * its own (rs_scale_<pid>_a and _b), each test on empty schemas. */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <libpq-fe.h>
#include <sqlite3.h>

#include "ringsteer/store.h"
#include "store_fixture.h"
#include "testutil.h"

#define T0 1700000000000LL
#define TTL 15000
#define RESERVATION 5000

struct backend_env {
	bool pg;
	char base[512];   /* PostgreSQL: the server's base URL */
	char url[2][600]; /* PostgreSQL: the pass's two databases */
};

/* Two stores (the batch and its sequential oracle, or any two). */
struct fixture {
	const struct backend_env *env;
	struct store_fixture s[2];
};






static int make_dir(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	int k;

	if (!f)
		return -1;
	f->env = *state;
	for (k = 0; k < 2; k++)
		if (store_fixture_make(&f->s[k], "scale", f->env->pg ? f->env->url[k] : NULL) != 0)
			break;
	if (k < 2) {
		while (k-- > 0)
			store_fixture_remove(&f->s[k]);
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int remove_dir(void **state)
{
	struct fixture *f = *state;
	int rc = store_fixture_remove(&f->s[0]) | store_fixture_remove(&f->s[1]);

	free(f);
	return rc;
}

static void pg_exec_raw(const char *url, const char *sql)
{
	assert_int_equal(store_fixture_pg_exec(url, sql), 0);
}

/* Runs sql on store k directly, on either backend. */
static void raw_sql(const struct fixture *f, int k, const char *sql)
{
	sqlite3 *db = NULL;

	if (f->env->pg) {
		pg_exec_raw(f->s[k].url, sql);
		return;
	}
	assert_int_equal(sqlite3_open(f->s[k].path, &db), SQLITE_OK);
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	sqlite3_close(db);
}

/* The one integer sql returns on store k. */
static int64_t raw_int(const struct fixture *f, int k, const char *sql)
{
	int64_t v = -1;

	if (f->env->pg) {
		PGconn *c = PQconnectdb(f->s[k].url);
		PGresult *res = PQexec(c, sql);

		if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
			fail_msg("%s: %s", sql, PQerrorMessage(c));
		v = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
		PQclear(res);
		PQfinish(c);
		return v;
	}
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;

	assert_int_equal(sqlite3_open(f->s[k].path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(db);
	return v;
}

static struct rs_store *open_store(const struct fixture *f, int k)
{
	const struct rs_store_options opt = { .ttl_ms = TTL, .reservation_ms = RESERVATION,
					      .busy_timeout_ms = 20000 };
	struct rs_store *st = NULL;

	assert_int_equal(rs_store_open(f->s[k].url, &opt, &st), 0);
	return st;
}

static void register_gw(struct rs_store *st, const char *id, int64_t now)
{
	char peer[64];

	snprintf(peer, sizeof(peer), "10.0.0.%zu:7443", (size_t)(unsigned char)id[strlen(id) - 1]);
	assert_int_equal(rs_store_gateway_register(st, id, peer, RS_GATEWAY_SERVING, now), 0);
}


static struct rs_session_claim claim_of(const char *gw, const char *member, uint64_t epoch, int64_t now)
{
	return (struct rs_session_claim){ .gateway_id = gw, .member_id = member, .instance_id = "i",
					  .epoch = epoch, .sandboxes = 2, .source = "", .now_ms = now };
}

static int claim(struct rs_store *st, const char *gw, const char *member, uint64_t epoch, int64_t now)
{
	struct rs_session_claim c = claim_of(gw, member, epoch, now);

	return rs_store_session_claim(st, &c);
}

/* Asserts every gateway's attached count equals its active rows, and that
 * a live gateway's supervisors are those plus its unexpired reservations. */
static void check_attached(struct rs_store *st, int64_t now)
{
	struct rs_gateway_row *gws;
	struct rs_session_row *rows;
	size_t n_gws, n_rows;

	assert_int_equal(rs_store_list_gateways(st, now, true, &gws, &n_gws), 0);
	assert_int_equal(rs_store_list_sessions(st, now, true, &rows, &n_rows), 0);
	for (size_t g = 0; g < n_gws; g++) {
		uint32_t active = 0, pending = 0;

		for (size_t i = 0; i < n_rows; i++) {
			if (strcmp(rows[i].gateway_id, gws[g].id) != 0)
				continue;
			active += rows[i].state == RS_SESSION_ACTIVE;
			pending += rows[i].state == RS_SESSION_PENDING && rows[i].expires_ms >= now;
		}
		if (gws[g].attached != active)
			fail_msg("%s: attached %u, active rows %u", gws[g].id, gws[g].attached, active);
		assert_int_equal(gws[g].supervisors, gws[g].live ? active + pending : 0);
	}
	free(gws);
	free(rows);
}

/* ---- migration ---- */

/* The version 1 schema exactly as version 1 wrote it (no triggers: they
 * are PostgreSQL's notification part, which version 2 leaves alone). */
static const char v1_ddl[] =
	"CREATE TABLE schema_version (version BIGINT NOT NULL);"
	"INSERT INTO schema_version (version) VALUES (1);"
	"CREATE TABLE gateways (id TEXT PRIMARY KEY, peer TEXT NOT NULL, state BIGINT NOT NULL,"
	" heartbeat_ms BIGINT NOT NULL);"
	"CREATE TABLE sessions (member_id TEXT PRIMARY KEY, instance_id TEXT NOT NULL, epoch BIGINT NOT NULL,"
	" gateway_id TEXT NOT NULL, sandboxes BIGINT NOT NULL, source TEXT NOT NULL,"
	" heartbeat_ms BIGINT NOT NULL, expires_ms BIGINT NOT NULL, state BIGINT NOT NULL);"
	"CREATE INDEX sessions_load ON sessions (gateway_id, state, heartbeat_ms, expires_ms);";

static void test_migrate_v1(void **state)
{
	struct fixture *f = *state;
	char sql[2048];
	struct rs_store *st;
	int64_t now = T0 + 1000;

	raw_sql(f, 0, v1_ddl);
	/* gw-a: 3 active, 1 pending live, 1 pending lapsed; gw-b: 1 active and
	 * dead; gw-c: nothing. */
	snprintf(sql, sizeof(sql),
		 "INSERT INTO gateways VALUES ('gw-a', '10.0.0.1:1', 0, %lld);"
		 "INSERT INTO gateways VALUES ('gw-b', '10.0.0.2:1', 0, %lld);"
		 "INSERT INTO gateways VALUES ('gw-c', '10.0.0.3:1', 1, %lld);"
		 "INSERT INTO sessions VALUES ('m1', 'i', 1, 'gw-a', 1, '', %lld, %lld, 1);"
		 "INSERT INTO sessions VALUES ('m2', 'i', 1, 'gw-a', 1, '', %lld, %lld, 1);"
		 "INSERT INTO sessions VALUES ('m3', 'i', 1, 'gw-a', 1, '', %lld, %lld, 1);"
		 "INSERT INTO sessions VALUES ('p1', 'i', 1, 'gw-a', 0, '', %lld, %lld, 0);"
		 "INSERT INTO sessions VALUES ('p2', 'i', 1, 'gw-a', 0, '', %lld, %lld, 0);"
		 "INSERT INTO sessions VALUES ('m4', 'i', 1, 'gw-b', 1, '', %lld, %lld, 1);",
		 (long long)T0, (long long)(T0 - 2 * TTL), (long long)T0,
		 (long long)(T0 - TTL), (long long)T0,                       /* m1 */
		 (long long)T0, (long long)(T0 + TTL),                       /* m2 */
		 (long long)T0, (long long)(T0 + TTL),                       /* m3 */
		 (long long)T0, (long long)(T0 + RESERVATION),               /* p1 */
		 (long long)(T0 - 2 * RESERVATION), (long long)(T0 - RESERVATION), /* p2 */
		 (long long)T0, (long long)(T0 + TTL));                      /* m4 */
	raw_sql(f, 0, sql);

	for (int pass = 0; pass < 3; pass++) {
		st = open_store(f, 0);
		assert_int_equal(raw_int(f, 0, "SELECT COUNT(*) FROM schema_version"), 1);
		assert_int_equal(raw_int(f, 0, "SELECT version FROM schema_version"), 2);
		/* Active rows live with their gateway now, however old (m1's own
		 * heartbeat is a TTL old: version 1 counted it dead). */
		assert_int_equal(store_fixture_gateway(st, "gw-a", now).attached, 3);
		assert_int_equal(store_fixture_gateway(st, "gw-a", now).supervisors, 4);
		assert_int_equal(store_fixture_gateway(st, "gw-b", now).attached, 1);
		assert_int_equal(store_fixture_gateway(st, "gw-b", now).supervisors, 0); /* dead */
		assert_int_equal(store_fixture_gateway(st, "gw-c", now).attached, 0);
		check_attached(st, now);
		rs_store_close(st);
		/* Idempotent: a store whose version row was lost is completed
		 * again (the column is not added twice, the counts refilled). */
		if (pass == 1)
			raw_sql(f, 0, "DELETE FROM schema_version");
	}
	/* The pending index is there. */
	if (f->env->pg)
		assert_int_equal(raw_int(f, 0, "SELECT COUNT(*) FROM pg_indexes WHERE indexname = 'sessions_pending'"),
				 1);
	else
		assert_int_equal(raw_int(f, 0, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'sessions_pending'"),
				 1);
}

/* ---- a gateway process starting ---- */

static void test_gateway_start(void **state)
{
	struct fixture *f = *state;
	struct rs_store *st = open_store(f, 0);
	struct rs_store_steer s;
	struct rs_session_row *rows;
	size_t n;

	register_gw(st, "gw-a", T0);
	register_gw(st, "gw-b", T0);
	assert_int_equal(claim(st, "gw-a", "m1", 1, T0), 0);
	assert_int_equal(claim(st, "gw-a", "m2", 1, T0), 0);
	assert_int_equal(claim(st, "gw-b", "m3", 1, T0), 0);
	/* A reservation at gw-a (steered: the rule's pick, whichever it is). */
	char member[16];
	int i = 0;

	do {
		snprintf(member, sizeof(member), "p%d", i++);
		assert_int_equal(rs_store_steer(st, member, T0, &s), 0);
	} while (strcmp(s.gateway_id, "gw-a") != 0);
	assert_int_equal(store_fixture_gateway(st, "gw-a", T0).attached, 2);
	uint32_t before_b = store_fixture_gateway(st, "gw-b", T0).supervisors;

	/* gw-a restarts within the TTL: without the start its old sessions
	 * would count forever (nothing refreshes or expires them). */
	assert_int_equal(rs_store_gateway_start(st, "gw-a", "10.0.0.9:1", RS_GATEWAY_SERVING, T0 + 100), 0);
	struct rs_gateway_row a = store_fixture_gateway(st, "gw-a", T0 + 100);

	assert_int_equal(a.attached, 0);
	assert_int_equal(a.supervisors, 1); /* the reservation stays */
	assert_string_equal(a.peer, "10.0.0.9:1");
	assert_int_equal(a.heartbeat_ms, T0 + 100);
	assert_int_equal(store_fixture_gateway(st, "gw-b", T0 + 100).supervisors, before_b);
	assert_int_equal(rs_store_list_sessions(st, T0 + 100, true, &rows, &n), 0);
	for (size_t k = 0; k < n; k++)
		assert_false(strcmp(rows[k].gateway_id, "gw-a") == 0 && rows[k].state == RS_SESSION_ACTIVE);
	free(rows);
	check_attached(st, T0 + 100);
	/* A new gateway starts as register would; draining too; bad args. */
	assert_int_equal(rs_store_gateway_start(st, "gw-c", "10.0.0.3:1", RS_GATEWAY_DRAINING, T0 + 100), 0);
	assert_int_equal(store_fixture_gateway(st, "gw-c", T0 + 100).state, RS_GATEWAY_DRAINING);
	assert_int_equal(rs_store_gateway_start(st, "", "x:1", RS_GATEWAY_SERVING, T0), -EINVAL);
	assert_int_equal(rs_store_gateway_start(st, "gw-a", NULL, RS_GATEWAY_SERVING, T0), -EINVAL);
	assert_int_equal(rs_store_gateway_start(NULL, "gw-a", "x:1", RS_GATEWAY_SERVING, T0), -EINVAL);
	rs_store_close(st);
}

/* ---- statements per event ---- */

/* Fills st with rows sessions on gw-0..gw-3 (every fifth a reservation). */
static void fill_rows(struct rs_store *st, int rows, int64_t now)
{
	static const char *const gws[] = { "gw-0", "gw-1", "gw-2", "gw-3" };
	char member[32];

	for (int i = 0; i < rows; i++) {
		struct rs_store_steer s;

		snprintf(member, sizeof(member), "fill-%d", i);
		if (i % 5 == 4)
			assert_int_equal(rs_store_steer(st, member, now, &s), 0);
		else
			assert_int_equal(claim(st, gws[i % 4], member, 1, now), 0);
	}
}

struct costs {
	uint64_t heartbeat, admit_accept, admit_redirect, batch4;
};

static struct costs measure(const struct fixture *f, int k, int rows)
{
	struct rs_store *st = open_store(f, k);
	struct costs c;
	uint64_t t;
	int64_t now = T0 + 10;

	for (int g = 0; g < 4; g++) {
		char id[16];

		snprintf(id, sizeof(id), "gw-%d", g);
		register_gw(st, id, T0);
	}
	fill_rows(st, rows, T0);

	t = rs_store_statements(st);
	assert_int_equal(rs_store_heartbeat(st, "gw-0", now), 0);
	c.heartbeat = rs_store_statements(st) - t;

	/* A stay (accepted where it landed) and a plain arrival redirected
	 * (found by trying members until one is). */
	struct rs_admit a = { .gateway_id = "gw-0", .member_id = "new-stay", .epoch = 1, .stay = true,
			      .now_ms = now };

	t = rs_store_statements(st);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_true(a.accepted);
	c.admit_accept = rs_store_statements(st) - t;
	c.admit_redirect = 0;
	for (int i = 0; i < 64 && !c.admit_redirect; i++) {
		char member[32];

		snprintf(member, sizeof(member), "new-%d", i);
		a = (struct rs_admit){ .gateway_id = "gw-0", .member_id = member, .epoch = 1, .now_ms = now };
		t = rs_store_statements(st);
		assert_int_equal(rs_store_admit(st, &a), 0);
		if (!a.accepted)
			c.admit_redirect = rs_store_statements(st) - t;
	}
	struct rs_admit batch[4];
	int errs[4];

	for (int i = 0; i < 4; i++)
		batch[i] = (struct rs_admit){ .gateway_id = "gw-1", .member_id = "batch-m", .epoch = (uint64_t)i + 1,
					      .stay = true, .now_ms = now };
	t = rs_store_statements(st);
	assert_int_equal(rs_store_admit_batch(st, batch, 4, errs), 0);
	c.batch4 = rs_store_statements(st) - t;
	for (int i = 0; i < 4; i++)
		assert_int_equal(errs[i], 0);
	check_attached(st, now);
	rs_store_close(st);
	return c;
}

static void test_statements_constant(void **state)
{
	struct fixture *f = *state;
	struct costs few = measure(f, 0, 10), many = measure(f, 1, 1000);

	printf("# statements (%s): heartbeat %llu, admit accepted %llu, redirected %llu, batch of 4 %llu"
	       " (10 and 1000 rows alike)\n",
	       f->env->pg ? "postgres" : "sqlite", (unsigned long long)few.heartbeat,
	       (unsigned long long)few.admit_accept, (unsigned long long)few.admit_redirect,
	       (unsigned long long)few.batch4);
	assert_int_equal(few.heartbeat, many.heartbeat);
	assert_int_equal(few.heartbeat, 3); /* begin, touch, commit */
	assert_int_equal(few.admit_accept, many.admit_accept);
	assert_int_equal(few.admit_redirect, many.admit_redirect);
	assert_true(few.admit_redirect > 0);
	assert_true(few.admit_accept <= 10);
	assert_int_equal(few.batch4, many.batch4);
	/* A batch pays the snapshot once: less than four admissions. */
	assert_true(few.batch4 < 4 * few.admit_accept);

	/* And an admission with no rows at all costs what it does with 2000. */
	raw_sql(f, 0, f->env->pg ? "DROP SCHEMA public CASCADE; CREATE SCHEMA public" :
				   "DROP TABLE sessions; DROP TABLE gateways; DROP TABLE schema_version");
	raw_sql(f, 1, f->env->pg ? "DROP SCHEMA public CASCADE; CREATE SCHEMA public" :
				   "DROP TABLE sessions; DROP TABLE gateways; DROP TABLE schema_version");
	struct costs none = measure(f, 0, 0), lots = measure(f, 1, 2000);

	assert_int_equal(none.heartbeat, lots.heartbeat);
	assert_int_equal(none.admit_accept, lots.admit_accept);
	assert_int_equal(none.admit_redirect, lots.admit_redirect);
	assert_int_equal(none.batch4, lots.batch4);
}

/* ---- batched admission against one admission at a time ---- */

#define ORACLE_GWS 6
#define ORACLE_MEMBERS 14

static const char *const oracle_gws[ORACLE_GWS] = { "gw-0", "gw-1", "gw-2", "gw-3", "gw-4", "gw-5" };

static const char *member_name(unsigned i)
{
	static const char *const names[ORACLE_MEMBERS] = { "m-00", "m-01", "m-02", "m-03", "m-04", "m-05", "m-06",
							   "m-07", "m-08", "m-09", "m-10", "m-11", "m-12", "m-13" };
	return names[i % ORACLE_MEMBERS];
}

/* Builds the same random state in both stores from r's next draws:
 * gateways (some dead, some draining), active rows, reservations (some
 * lapsed) with random epochs.  Returns the time arrivals come at. */
static int64_t build_state(struct rs_store *st[2], struct test_rng *r, size_t *n_gws)
{
	size_t n = 2 + (size_t)test_rng_below(r, ORACLE_GWS - 1);
	int64_t now = T0 + 8000;
	unsigned rows = (unsigned)test_rng_below(r, ORACLE_MEMBERS + 1);
	int64_t hb[ORACLE_GWS];
	bool draining[ORACLE_GWS];

	for (size_t g = 0; g < n; g++) {
		int kind = (int)test_rng_below(r, 6); /* 0: dead, 1: draining, else serving */

		hb[g] = kind == 0 ? now - TTL - 1 - (int64_t)test_rng_below(r, 5000)
				  : now - (int64_t)test_rng_below(r, TTL);
		draining[g] = kind == 1;
	}
	for (int k = 0; k < 2; k++)
		for (size_t g = 0; g < n; g++)
			register_gw(st[k], oracle_gws[g], T0);
	for (unsigned i = 0; i < rows; i++) {
		unsigned m = (unsigned)test_rng_below(r, ORACLE_MEMBERS);
		uint64_t epoch = 1 + test_rng_below(r, 4);
		size_t g = (size_t)test_rng_below(r, n);
		bool pending = test_rng_below(r, 3) == 0;
		int64_t t = T0 + (int64_t)test_rng_below(r, 8000);

		for (int k = 0; k < 2; k++) {
			if (pending) {
				struct rs_store_steer s;
				/* Steer writes a reservation where the rule says (or
				 * nothing where the row counts already). */
				int err = rs_store_steer(st[k], member_name(m), t, &s);

				assert_true(err == 0 || err == -ENOENT);
			} else {
				int err = claim(st[k], oracle_gws[g], member_name(m), epoch, t);

				assert_true(err == 0 || err == -ESTALE);
			}
		}
	}
	for (int k = 0; k < 2; k++)
		for (size_t g = 0; g < n; g++) {
			assert_int_equal(rs_store_heartbeat(st[k], oracle_gws[g], hb[g]), 0);
			if (draining[g])
				assert_int_equal(rs_store_gateway_set_state(st[k], oracle_gws[g], RS_GATEWAY_DRAINING), 0);
		}
	*n_gws = n;
	return now;
}

static void random_batch(struct test_rng *r, struct rs_admit *a, size_t n, const char *gw, int64_t now)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t roll = test_rng_below(r, 10);

		a[i] = (struct rs_admit){
			.gateway_id = gw,
			.member_id = member_name((unsigned)test_rng_below(r, ORACLE_MEMBERS)),
			.instance_id = "inst",
			.epoch = 1 + test_rng_below(r, 6),
			.stay = roll < 4,
			.redirected = roll == 2 || roll == 3,
			.handoff = roll == 9,
			.sandboxes = (uint32_t)test_rng_below(r, 9),
			.source = "10.1.0.1:4000",
			.now_ms = now,
		};
	}
}

static void compare_rows(struct rs_store *x, struct rs_store *y, int64_t now)
{
	struct rs_gateway_row *ga, *gb;
	struct rs_session_row *sa, *sb;
	size_t na, nb;

	assert_int_equal(rs_store_list_gateways(x, now, true, &ga, &na), 0);
	assert_int_equal(rs_store_list_gateways(y, now, true, &gb, &nb), 0);
	assert_int_equal(na, nb);
	for (size_t i = 0; i < na; i++) {
		assert_string_equal(ga[i].id, gb[i].id);
		assert_int_equal(ga[i].heartbeat_ms, gb[i].heartbeat_ms);
		assert_int_equal(ga[i].state, gb[i].state);
		assert_int_equal(ga[i].attached, gb[i].attached);
		assert_int_equal(ga[i].supervisors, gb[i].supervisors);
	}
	free(ga);
	free(gb);
	assert_int_equal(rs_store_list_sessions(x, now, true, &sa, &na), 0);
	assert_int_equal(rs_store_list_sessions(y, now, true, &sb, &nb), 0);
	assert_int_equal(na, nb);
	for (size_t i = 0; i < na; i++) {
		assert_string_equal(sa[i].member_id, sb[i].member_id);
		assert_string_equal(sa[i].gateway_id, sb[i].gateway_id);
		assert_string_equal(sa[i].instance_id, sb[i].instance_id);
		assert_int_equal(sa[i].epoch, sb[i].epoch);
		assert_int_equal(sa[i].state, sb[i].state);
		assert_int_equal(sa[i].sandboxes, sb[i].sandboxes);
		assert_int_equal(sa[i].heartbeat_ms, sb[i].heartbeat_ms);
		assert_int_equal(sa[i].expires_ms, sb[i].expires_ms);
		assert_int_equal(sa[i].live, sb[i].live);
	}
	free(sa);
	free(sb);
}

static void test_batch_matches_sequential(void **state)
{
	struct fixture *f = *state;
	struct test_rng r;
	unsigned seeds = f->env->pg ? 40 : 200;
	size_t decided = 0, accepted = 0, stale = 0, none = 0, failed_alone = 0;
	size_t steered = 0, steer_reserved = 0, steer_home = 0;

	test_rng_seed(&r, "store batch", 15);
	for (unsigned seed = 0; seed < seeds; seed++) {
		struct rs_store *st[2];
		size_t n_gws;
		int64_t now;

		if (seed) { /* fresh stores for every state */
			for (int k = 0; k < 2; k++) {
				if (f->env->pg)
					raw_sql(f, k, "DROP SCHEMA public CASCADE; CREATE SCHEMA public");
				else
					raw_sql(f, k, "DROP TABLE sessions; DROP TABLE gateways; DROP TABLE schema_version");
			}
		}
		st[0] = open_store(f, 0);
		st[1] = open_store(f, 1);
		now = build_state(st, &r, &n_gws);
		for (int round = 0; round < 3; round++) {
			struct rs_admit batch[16], one[16];
			int errs[16];
			size_t n = 1 + (size_t)test_rng_below(&r, 16);
			const char *gw = oracle_gws[test_rng_below(&r, n_gws)]; /* a dead one comes back */
			int err;

			random_batch(&r, batch, n, gw, now);
			memcpy(one, batch, sizeof(batch));
			err = rs_store_admit_batch(st[0], batch, n, errs);
			assert_int_equal(err, 0);
			for (size_t i = 0; i < n; i++) {
				int want = rs_store_admit(st[1], &one[i]);

				if (errs[i] != want)
					fail_msg("seed %u round %d item %zu (%s epoch %llu%s%s%s): batch %d, one by one %d",
						 seed, round, i, batch[i].member_id, (unsigned long long)batch[i].epoch,
						 batch[i].stay ? " stay" : "", batch[i].redirected ? " redirected" : "",
						 batch[i].handoff ? " handoff" : "", errs[i], want);
				assert_int_equal(batch[i].accepted, one[i].accepted);
				assert_int_equal(batch[i].decision.reason, one[i].decision.reason);
				assert_int_equal(batch[i].decision.cap, one[i].decision.cap);
				assert_int_equal(batch[i].decision.full, one[i].decision.full);
				assert_int_equal(batch[i].decision.gateway, one[i].decision.gateway);
				assert_string_equal(batch[i].target_id, one[i].target_id);
				assert_string_equal(batch[i].target_peer, one[i].target_peer);
				decided++;
				accepted += errs[i] == 0 && batch[i].accepted;
				stale += errs[i] == -ESTALE;
				none += errs[i] == -ENOENT;
			}
			compare_rows(st[0], st[1], now);
			check_attached(st[0], now);

			/* A node agent's registrations steered together, and one at a
			 * time (repeats included: a later one sees the earlier one's
			 * reservation). */
			const char *ids[16];
			struct rs_store_steer outs[16], want_out;
			size_t k = 1 + (size_t)test_rng_below(&r, 16);

			for (size_t i = 0; i < k; i++)
				ids[i] = member_name((unsigned)test_rng_below(&r, ORACLE_MEMBERS));
			err = rs_store_steer_batch(st[0], ids, k, now + 1, outs, errs);
			for (size_t i = 0; i < k; i++) {
				int want = rs_store_steer(st[1], ids[i], now + 1, &want_out);

				if (errs[i] != want)
					fail_msg("seed %u round %d steer %zu (%s): batch %d, one by one %d", seed, round, i,
						 ids[i], errs[i], want);
				assert_int_equal(errs[i], err);
				assert_string_equal(outs[i].gateway_id, want_out.gateway_id);
				assert_string_equal(outs[i].peer, want_out.peer);
				assert_int_equal(outs[i].home, want_out.home);
				assert_int_equal(outs[i].reserved, want_out.reserved);
				steered++;
				steer_reserved += errs[i] == 0 && outs[i].reserved;
				steer_home += errs[i] == 0 && !outs[i].reserved;
			}
			compare_rows(st[0], st[1], now + 1);
			check_attached(st[0], now + 1);
			now += (int64_t)test_rng_below(&r, 3000);
		}
		/* A transaction-level failure: every item says it, nothing written. */
		struct rs_admit bad[2];
		int errs[2];

		random_batch(&r, bad, 2, "gw-nobody", now);
		assert_int_equal(rs_store_admit_batch(st[0], bad, 2, errs), -ENOENT);
		assert_int_equal(errs[0], -ENOENT);
		assert_int_equal(errs[1], -ENOENT);
		assert_false(bad[0].accepted);
		/* An item of another gateway fails alone (issue 25, "Hostile
		 * epochs": one bad arrival never fails another in its batch). */
		random_batch(&r, bad, 2, "gw-0", now);
		bad[1].gateway_id = "gw-1";
		failed_alone += rs_store_admit_batch(st[0], bad, 2, errs) == 0 && errs[1] == -EINVAL;
		assert_int_not_equal(errs[0], -EINVAL);
		assert_false(bad[1].accepted);
		rs_store_close(st[0]);
		rs_store_close(st[1]);
	}
	assert_int_equal(failed_alone, seeds);
	printf("# batch vs one by one (%s): %u states, %zu items: %zu accepted, %zu superseded, %zu no gateway\n",
	       f->env->pg ? "postgres" : "sqlite", seeds, decided, accepted, stale, none);
	printf("# steer batch vs one by one (%s): %zu steers: %zu reserved, %zu sent where they count\n",
	       f->env->pg ? "postgres" : "sqlite", steered, steer_reserved, steer_home);
	assert_true(stale > 0);
	assert_true(accepted > 0);
	assert_true(steer_reserved > 0);
	assert_true(steer_home > 0);
}

/* ---- large batches: fixed round trips, one by one's outcome ---- */

#define LARGE_BATCH 256
#define LARGE_POOL 320

/* Members for large batches: the states' own (rows there), fresh ones,
 * and ids an array literal must quote (PostgreSQL's batch statements):
 * quotes, backslashes, braces, commas, spaces, the word NULL. */
static const char *large_member(unsigned i, char *buf, size_t size)
{
	static const char *const odd[] = { "NULL", "a\"b", "a\\b", "{x,y}", " sp ", "c,d", "\\\"", "e}" };

	i %= LARGE_POOL;
	if (i < ORACLE_MEMBERS)
		return member_name(i);
	if (i < ORACLE_MEMBERS + sizeof(odd) / sizeof(odd[0]))
		return odd[i - ORACLE_MEMBERS];
	snprintf(buf, size, "fresh-%u", i);
	return buf;
}

static void test_large_batch_matches_sequential(void **state)
{
	struct fixture *f = *state;
	static struct rs_admit batch[LARGE_BATCH], one[LARGE_BATCH];
	static char names[LARGE_BATCH][32];
	static int errs[LARGE_BATCH];
	struct test_rng r;
	unsigned seeds = f->env->pg ? 6 : 16;
	size_t decided = 0, accepted = 0, repeats = 0;
	uint64_t cost_min = UINT64_MAX, cost_max = 0;

	test_rng_seed(&r, "store large batch", 27);
	for (unsigned seed = 0; seed < seeds; seed++) {
		struct rs_store *st[2];
		size_t n_gws;
		int64_t now;

		if (seed) {
			for (int k = 0; k < 2; k++) {
				if (f->env->pg)
					raw_sql(f, k, "DROP SCHEMA public CASCADE; CREATE SCHEMA public");
				else
					raw_sql(f, k, "DROP TABLE sessions; DROP TABLE gateways; DROP TABLE schema_version");
			}
		}
		st[0] = open_store(f, 0);
		st[1] = open_store(f, 1);
		now = build_state(st, &r, &n_gws);
		for (int round = 0; round < 3; round++) {
			/* Sizes up to 256, the largest every state; members from a
			 * pool small enough that most batches repeat some. */
			size_t n = round == 0 ? LARGE_BATCH : 1 + (size_t)test_rng_below(&r, LARGE_BATCH);
			unsigned pool = 16 + (unsigned)test_rng_below(&r, LARGE_POOL - 16);
			const char *gw = oracle_gws[test_rng_below(&r, n_gws)];
			bool written = false;
			uint64_t before;
			int err;

			random_batch(&r, batch, n, gw, now);
			for (size_t i = 0; i < n; i++) {
				batch[i].member_id = large_member((unsigned)test_rng_below(&r, pool), names[i],
								  sizeof(names[i]));
				for (size_t j = 0; j < i; j++)
					if (strcmp(batch[j].member_id, batch[i].member_id) == 0) {
						repeats++;
						break;
					}
			}
			memcpy(one, batch, n * sizeof(*batch));
			before = rs_store_statements(st[0]);
			err = rs_store_admit_batch(st[0], batch, n, errs);
			assert_int_equal(err, 0);
			for (size_t i = 0; i < n; i++)
				written = written || errs[i] == 0;
			if (written) {
				uint64_t cost = rs_store_statements(st[0]) - before;

				cost_min = cost < cost_min ? cost : cost_min;
				cost_max = cost > cost_max ? cost : cost_max;
			}
			for (size_t i = 0; i < n; i++) {
				int want = rs_store_admit(st[1], &one[i]);

				if (errs[i] != want)
					fail_msg("seed %u round %d item %zu of %zu (%s epoch %llu%s%s%s): batch %d, one by one %d",
						 seed, round, i, n, batch[i].member_id, (unsigned long long)batch[i].epoch,
						 batch[i].stay ? " stay" : "", batch[i].redirected ? " redirected" : "",
						 batch[i].handoff ? " handoff" : "", errs[i], want);
				assert_int_equal(batch[i].accepted, one[i].accepted);
				assert_int_equal(batch[i].fallback, one[i].fallback);
				assert_int_equal(batch[i].over_cap, one[i].over_cap);
				assert_int_equal(batch[i].decision.reason, one[i].decision.reason);
				assert_int_equal(batch[i].decision.cap, one[i].decision.cap);
				assert_int_equal(batch[i].decision.full, one[i].decision.full);
				assert_int_equal(batch[i].decision.gateway, one[i].decision.gateway);
				assert_string_equal(batch[i].target_id, one[i].target_id);
				assert_string_equal(batch[i].target_peer, one[i].target_peer);
				decided++;
				accepted += errs[i] == 0 && batch[i].accepted;
			}
			compare_rows(st[0], st[1], now);
			check_attached(st[0], now);
			now += (int64_t)test_rng_below(&r, 3000);
		}
		rs_store_close(st[0]);
		rs_store_close(st[1]);
	}
	printf("# large batches vs one by one (%s): %u states, %zu items (%zu repeated members), %zu accepted;"
	       " statements per written batch %llu..%llu\n",
	       f->env->pg ? "postgres" : "sqlite", seeds, decided, repeats, accepted,
	       (unsigned long long)cost_min, (unsigned long long)cost_max);
	assert_true(accepted > 0);
	assert_true(repeats > 0);
	/* PostgreSQL: begin, heartbeat, live gateways, pending loads, the
	 * members' rows, their write, commit - whatever the batch's size. */
	if (f->env->pg) {
		assert_int_equal(cost_min, 7);
		assert_int_equal(cost_max, 7);
	}
}

/* ---- attached counts after random operations ---- */

static void test_attached_invariant(void **state)
{
	struct fixture *f = *state;
	struct rs_store *st = open_store(f, 0);
	struct test_rng r;
	int64_t now = T0;
	unsigned ops = f->env->pg ? 300 : 1500, counted[8] = { 0 };

	test_rng_seed(&r, "store attached", 16);
	for (size_t g = 0; g < 4; g++)
		register_gw(st, oracle_gws[g], now);
	for (unsigned i = 0; i < ops; i++) {
		const char *gw = oracle_gws[test_rng_below(&r, 4)];
		const char *member = member_name((unsigned)test_rng_below(&r, ORACLE_MEMBERS));
		uint64_t epoch = 1 + test_rng_below(&r, 5);
		unsigned op = (unsigned)test_rng_below(&r, 8);
		struct rs_admit a;
		struct rs_store_steer s;
		int err = 0;

		now += (int64_t)test_rng_below(&r, 400);
		switch (op) {
		case 0: /* admissions, a batch of them, handoffs among them */
		case 1: {
			struct rs_admit batch[4];
			int errs[4];
			size_t n = 1 + (size_t)test_rng_below(&r, 4);

			random_batch(&r, batch, n, gw, now);
			err = rs_store_admit_batch(st, batch, n, errs);
			break;
		}
		case 2:
			err = claim(st, gw, member, epoch, now);
			break;
		case 3:
			err = rs_store_session_end(st, gw, member, epoch);
			break;
		case 4:
			err = rs_store_session_sandboxes(st, gw, member, epoch, 7);
			break;
		case 5:
			err = test_rng_below(&r, 4) ? rs_store_steer(st, member, now, &s)
						     : rs_store_gateway_remove(st, gw);
			break;
		case 6:
			err = rs_store_gateway_start(st, gw, "10.0.0.1:1", RS_GATEWAY_SERVING, now);
			break;
		default:
			a = (struct rs_admit){ .gateway_id = gw, .member_id = member, .epoch = epoch,
					       .stay = true, .now_ms = now };
			err = rs_store_admit(st, &a);
			break;
		}
		assert_true(err == 0 || err == -ESTALE || err == -ENOENT);
		counted[op] += err == 0;
		/* A removed gateway comes back (a fresh process). */
		for (size_t g = 0; g < 4; g++) {
			struct rs_gateway_row row;

			if (rs_store_gateway_get(st, oracle_gws[g], now, &row) == -ENOENT)
				assert_int_equal(rs_store_gateway_start(st, oracle_gws[g], "10.0.0.1:1",
									RS_GATEWAY_SERVING, now), 0);
			else if (!row.live)
				assert_int_equal(rs_store_heartbeat(st, oracle_gws[g], now), 0);
		}
		check_attached(st, now);
	}
	for (unsigned op = 0; op < 8; op++)
		assert_true(counted[op] > 0);
	rs_store_close(st);
}

/* ---- PostgreSQL: a server that stops answering ---- */

static int64_t monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The throwaway server's processes (tests/pg/pg_server.sh: the postmaster's
 * pid heads DIR/data/postmaster.pid, DIR the URL's host), its children
 * with it; returns how many (0: not found). */
static size_t server_pids(const char *base, pid_t *pids, size_t max)
{
	const char *host = strstr(base, "host=");
	char path[600], line[64];
	FILE *fp;
	DIR *proc;
	struct dirent *e;
	size_t n = 0;

	if (!host)
		return 0;
	snprintf(path, sizeof(path), "%.*s/data/postmaster.pid", (int)strcspn(host + 5, "&"), host + 5);
	fp = fopen(path, "r");
	if (!fp)
		return 0;
	if (fgets(line, sizeof(line), fp))
		pids[n++] = (pid_t)atol(line);
	fclose(fp);
	proc = opendir("/proc");
	while (proc && (e = readdir(proc)) != NULL && n < max) {
		char stat_path[300], buf[512], *close_paren;
		long ppid;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(stat_path, sizeof(stat_path), "/proc/%s/stat", e->d_name);
		fp = fopen(stat_path, "r");
		if (!fp)
			continue;
		close_paren = fgets(buf, sizeof(buf), fp) ? strrchr(buf, ')') : NULL;
		fclose(fp);
		if (close_paren && sscanf(close_paren + 2, "%*c %ld", &ppid) == 1 && ppid == pids[0])
			pids[n++] = (pid_t)atol(e->d_name);
	}
	if (proc)
		closedir(proc);
	return n > 0 && pids[0] > 0 ? n : 0;
}

static void signal_all(const pid_t *pids, size_t n, int sig)
{
	for (size_t i = 0; i < n; i++)
		kill(pids[i], sig);
}

static void test_pg_stopped_server(void **state)
{
	struct fixture *f = *state;
	const struct rs_store_options opt = { .ttl_ms = TTL, .busy_timeout_ms = 500 };
	struct rs_store *st = NULL;
	pid_t pids[256];
	size_t n;
	int64_t t0, took;
	int err, again;

	assert_int_equal(rs_store_open(f->s[0].url, &opt, &st), 0);
	register_gw(st, "gw-a", T0);
	n = server_pids(f->env->base, pids, 256);
	if (n == 0 || kill(pids[0], 0) != 0) {
		rs_store_close(st);
		skip(); /* not our server to signal */
	}
	signal_all(pids, n, SIGSTOP);
	t0 = monotonic_ms();
	err = rs_store_heartbeat(st, "gw-a", T0 + 1);
	took = monotonic_ms() - t0;
	/* Resume before judging: a failed assertion must not leave the server
	 * stopped for every later test. */
	signal_all(pids, n, SIGCONT);
	printf("# stopped server: heartbeat %d after %lld ms (busy timeout 500 ms)\n", err, (long long)took);
	assert_int_equal(err, -ETIMEDOUT);
	/* A write begin may wait twice the busy timeout (backend.h); generous. */
	assert_true(took >= 500);
	assert_true(took < 3 * 1000);
	/* Served again: the next call reconnects. */
	again = rs_store_heartbeat(st, "gw-a", T0 + 2);
	assert_int_equal(again, 0);
	assert_int_equal(store_fixture_gateway(st, "gw-a", T0 + 2).heartbeat_ms, T0 + 2);

	/* A reader times out alike (the server has a new backend for the
	 * new connection: stop it too). */
	n = server_pids(f->env->base, pids, 256);
	assert_true(n > 0);
	signal_all(pids, n, SIGSTOP);
	t0 = monotonic_ms();
	struct rs_gateway_row *rows = NULL;
	size_t n_rows;

	err = rs_store_list_gateways(st, T0 + 2, true, &rows, &n_rows);
	took = monotonic_ms() - t0;
	signal_all(pids, n, SIGCONT);
	assert_int_equal(err, -ETIMEDOUT);
	assert_null(rows);
	assert_true(took < 3 * 500);
	assert_int_equal(rs_store_list_gateways(st, T0 + 2, true, &rows, &n_rows), 0);
	assert_int_equal(n_rows, 1);
	free(rows);
	rs_store_close(st);
}

#define SCALE_TEST(fn, env) cmocka_unit_test_prestate_setup_teardown(fn, make_dir, remove_dir, env)
#define SCALE_TESTS(env)                                   \
	SCALE_TEST(test_migrate_v1, env),                  \
	SCALE_TEST(test_gateway_start, env),               \
	SCALE_TEST(test_statements_constant, env),         \
	SCALE_TEST(test_batch_matches_sequential, env),    \
	SCALE_TEST(test_large_batch_matches_sequential, env), \
	SCALE_TEST(test_attached_invariant, env)


/* Two databases of the pass's own: rs_scale_<pid>_0 and _1. */
static int pg_pass(const char *base, struct backend_env *env, bool begin)
{
	char sql[128];

	for (int k = 0; k < 2; k++) {
		snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS rs_scale_%ld_%d WITH (FORCE)", (long)getpid(), k);
		if (store_fixture_pg_exec(base, sql) != 0)
			return -1;
		if (!begin)
			continue;
		snprintf(sql, sizeof(sql), "CREATE DATABASE rs_scale_%ld_%d", (long)getpid(), k);
		if (store_fixture_pg_exec(base, sql) != 0)
			return -1;
		snprintf(env->url[k], sizeof(env->url[k]), "%s%sdbname=rs_scale_%ld_%d", base,
			 strchr(base, '?') ? "&" : "?", (long)getpid(), k);
	}
	return 0;
}

int main(void)
{
	struct backend_env sqlite_env = { .pg = false }, pg_env = { .pg = true };
	const struct CMUnitTest sqlite_tests[] = { SCALE_TESTS(&sqlite_env) };
	const struct CMUnitTest pg_tests[] = {
		SCALE_TESTS(&pg_env),
		SCALE_TEST(test_pg_stopped_server, &pg_env),
	};
	const char *pg_base = getenv("RS_TEST_PG_URL");
	int failed;

	failed = cmocka_run_group_tests_name("store scale (sqlite)", sqlite_tests, NULL, NULL);
	if (!pg_base || !pg_base[0]) {
		printf("# store scale (postgres): SKIPPED, RS_TEST_PG_URL is not set "
		       "(tests/pg/pg_server.sh start DIR prints one; make pg-test does it all)\n");
		return failed;
	}
	snprintf(pg_env.base, sizeof(pg_env.base), "%s", pg_base);
	if (pg_pass(pg_base, &pg_env, true) != 0)
		return failed + 1;
	failed += cmocka_run_group_tests_name("store scale (postgres)", pg_tests, NULL, NULL);
	pg_pass(pg_base, &pg_env, false);
	return failed;
}
