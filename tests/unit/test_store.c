/* SPDX-License-Identifier: Apache-2.0 */
/* test_store.c - the store over SQLite, each test in a fresh temp dir: URLs,
 * schema and reopen, registration and listings, TTL expiry, the placement
 * transaction against the reference rule (rs_place over the same snapshot,
 * read back through the listings), reservations, stale records, stay,
 * epochs, heartbeats, departures, gateway state and single-row reads, drain
 * handoffs against the drain plan (rs_drain_plan over the same snapshot),
 * two handles and two processes sharing one file, busy and dead stores, and
 * corrupt rows, and 200 arrivals at four gateways at once.
 *
 * The whole suite runs on SQLite, then again on PostgreSQL when
 * RS_TEST_PG_URL names a server (a base URL as tests/pg/pg_server.sh start
 * prints; `make pg-test` starts one), each test on an empty schema, with
 * PostgreSQL's own tests after it: concurrent openers, reconnection after
 * the server drops the connection, and the LISTEN/NOTIFY watch. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <libpq-fe.h>
#include <sqlite3.h>

#include "ringsteer/drain.h"
#include "ringsteer/placement.h"
#include "ringsteer/placer.h"
#include "ringsteer/ring.h"
#include "ringsteer/store.h"
#include "store_fixture.h"
#include "testutil.h"

#define T0 1700000000000LL /* a realistic wall clock, ms */
#define TTL 15000
#define RESERVATION 5000

static void pg_quiet(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

/* The backend a pass runs on: SQLite (a file in the test's temp dir), or
 * PostgreSQL (RS_TEST_PG_URL, a base URL from tests/pg/pg_server.sh: the
 * pass makes a database of its own there, rs_test_<pid>, and every test
 * starts from an empty schema in it). */
struct backend_env {
	bool pg;
	char url[512]; /* PostgreSQL: the pass's database */
};

struct fixture {
	const struct backend_env *env;
	char dir[64];
	char path[128]; /* SQLite: the database file */
	char url[600];
};

static int64_t monotonic_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* A raw connection to a store URL (libpq takes the URL itself). */
static PGconn *pg_connect_raw(const char *url)
{
	PGconn *c = PQconnectdb(url);

	if (PQstatus(c) != CONNECTION_OK)
		fail_msg("cannot connect to %s: %s", url, PQerrorMessage(c));
	PQsetNoticeProcessor(c, pg_quiet, NULL);
	return c;
}

/* Runs sql (one or more statements) on c, failing the test on error. */
static void pg_exec_raw(PGconn *c, const char *sql)
{
	PGresult *res = PQexec(c, sql);
	ExecStatusType st = PQresultStatus(res);

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		fail_msg("%s: %s", sql, PQerrorMessage(c));
	PQclear(res);
}

/* The one integer sql returns. */
static int64_t pg_int(PGconn *c, const char *sql)
{
	PGresult *res = PQexec(c, sql);
	int64_t v;

	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
		fail_msg("%s: %s", sql, PQerrorMessage(c));
	v = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	return v;
}

static int make_dir(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	f->env = *state;
	snprintf(f->dir, sizeof(f->dir), "/tmp/rs-store-XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	snprintf(f->path, sizeof(f->path), "%s/ringsteer.db", f->dir);
	if (f->env->pg) {
		PGconn *c;

		snprintf(f->url, sizeof(f->url), "%s", f->env->url);
		c = pg_connect_raw(f->url);
		/* An empty store: no tables, no triggers, no function. */
		pg_exec_raw(c, "DROP SCHEMA IF EXISTS public CASCADE; CREATE SCHEMA public");
		PQfinish(c);
	} else {
		snprintf(f->url, sizeof(f->url), "sqlite:%s", f->path);
	}
	*state = f;
	return 0;
}

static int remove_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	(void)type;
	(void)ftw;
	chmod(path, 0700);
	return remove(path);
}

static int remove_dir(void **state)
{
	struct fixture *f = *state;
	int rc;

	chmod(f->dir, 0700);
	rc = nftw(f->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return rc;
}

static struct rs_store *open_store(const struct fixture *f)
{
	const struct rs_store_options opt = { .ttl_ms = TTL, .reservation_ms = RESERVATION,
					      .busy_timeout_ms = 20000 };
	struct rs_store *st = NULL;

	assert_int_equal(rs_store_open(f->url, &opt, &st), 0);
	assert_non_null(st);
	return st;
}

/* Runs sql on the store directly (what a corrupting hand or another tool
 * does), on either backend. */
static void raw_sql(const struct fixture *f, const char *sql)
{
	sqlite3 *db = NULL;

	if (f->env->pg) {
		PGconn *c = pg_connect_raw(f->url);

		pg_exec_raw(c, sql);
		PQfinish(c);
		return;
	}
	assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	sqlite3_close(db);
}

#define SCHEMA_VERSION 2 /* RS_STORE_SCHEMA_VERSION (user/store/backend.h) */

/* Returns the rows of schema_version holding SCHEMA_VERSION, failing on others. */
static int version_rows(const struct fixture *f)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	int n = 0;

	if (f->env->pg) {
		PGconn *c = pg_connect_raw(f->url);
		int64_t other = pg_int(c, "SELECT COUNT(*) FROM schema_version WHERE version <> 2");

		assert_int_equal(other, 0);
		n = (int)pg_int(c, "SELECT COUNT(*) FROM schema_version");
		PQfinish(c);
		return n;
	}
	assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT version FROM schema_version", -1, &s, NULL), SQLITE_OK);
	while (sqlite3_step(s) == SQLITE_ROW) {
		assert_int_equal(sqlite3_column_int64(s, 0), SCHEMA_VERSION);
		n++;
	}
	sqlite3_finalize(s);
	sqlite3_close(db);
	return n;
}

static void register_gw(struct rs_store *st, const char *id, enum rs_gateway_state state, int64_t now)
{
	char peer[64];

	snprintf(peer, sizeof(peer), "10.0.0.%zu:7443", strlen(id) + (size_t)id[strlen(id) - 1]);
	assert_int_equal(rs_store_gateway_register(st, id, peer, state, now), 0);
}

/* A store with gw-a and gw-b registered, both serving, at T0. */
static struct rs_store *open_store_ab(const struct fixture *f)
{
	struct rs_store *st = open_store(f);

	register_gw(st, "gw-a", RS_GATEWAY_SERVING, T0);
	register_gw(st, "gw-b", RS_GATEWAY_SERVING, T0);
	return st;
}

static struct rs_admit arrival(const char *gw, const char *member, uint64_t epoch, bool stay, int64_t now)
{
	return (struct rs_admit){
		.gateway_id = gw, .member_id = member, .instance_id = "inst-1", .epoch = epoch,
		.stay = stay, .sandboxes = 3, .source = "10.1.0.9:40000", .now_ms = now,
	};
}

/* The supervisors counted on gateway id at now (0 if it is not live). */
static uint32_t load_of(struct rs_store *st, const char *id, int64_t now)
{
	struct rs_gateway_row *rows;
	uint32_t load = 0;
	size_t n;

	assert_int_equal(rs_store_list_gateways(st, now, true, &rows, &n), 0);
	for (size_t i = 0; i < n; i++)
		if (strcmp(rows[i].id, id) == 0)
			load = rows[i].supervisors;
	free(rows);
	return load;
}

/* Finds member's row among every row; returns whether it exists. */
static bool session_of(struct rs_store *st, const char *member, int64_t now, struct rs_session_row *out)
{
	struct rs_session_row *rows;
	bool found = false;
	size_t n;

	assert_int_equal(rs_store_list_sessions(st, now, true, &rows, &n), 0);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(rows[i].member_id, member) == 0) {
			*out = rows[i];
			found = true;
		}
	}
	free(rows);
	return found;
}

/* What the reference rule says about arrival a, over the snapshot the
 * listings show once the deciding gateway's heartbeat is refreshed (the
 * admission's first step).  Returns rs_place()'s result. */
struct snapshot_info {
	size_t dead_gateways; /* snapshots with a registered gateway not live */
	size_t stale;         /* arrivals with a counted stale record */
	size_t draining;      /* snapshots with a live gateway draining */
};

/* The ring index of member a's reservation that counts nowhere (-1: at a
 * gateway off the ring), or -2 when its row is none such. */
static int lapsed_reservation(struct rs_store *st, const struct rs_admit *a, const struct rs_ring *ring)
{
	struct rs_session_row *all;
	size_t n;
	int at = -2;

	assert_int_equal(rs_store_list_sessions(st, a->now_ms, true, &all, &n), 0);
	for (size_t i = 0; i < n; i++)
		if (strcmp(all[i].member_id, a->member_id) == 0 && all[i].state == RS_SESSION_PENDING)
			at = rs_ring_find(ring, all[i].gateway_id);
	free(all);
	return at;
}

static int oracle(struct rs_store *st, const struct rs_admit *a, struct rs_decision *d, char *target,
		  struct snapshot_info *info)
{
	size_t n_all;
	bool any_draining = false;
	struct rs_gateway_row *gws;
	struct rs_session_row *sessions;
	struct rs_gateway_load *loads;
	struct rs_ring *ring;
	const char **ids;
	size_t n_gws, n_sessions;
	struct rs_arrival arr = { .member_id = a->member_id, .stay = a->stay, .stale = -1 };
	int err;

	assert_int_equal(rs_store_heartbeat(st, a->gateway_id, a->now_ms), 0);
	assert_int_equal(rs_store_list_gateways(st, a->now_ms, true, &gws, &n_all), 0);
	free(gws);
	assert_int_equal(rs_store_list_gateways(st, a->now_ms, false, &gws, &n_gws), 0);
	assert_int_equal(rs_store_list_sessions(st, a->now_ms, false, &sessions, &n_sessions), 0);
	if (info)
		info->dead_gateways += n_all > n_gws;
	ids = calloc(n_gws + 1, sizeof(*ids));
	loads = calloc(n_gws + 1, sizeof(*loads));
	assert_non_null(ids);
	assert_non_null(loads);
	for (size_t i = 0; i < n_gws; i++)
		ids[i] = gws[i].id;
	assert_int_equal(rs_ring_new(ids, n_gws, &ring), 0);
	for (size_t i = 0; i < n_gws; i++) {
		int g = rs_ring_find(ring, gws[i].id);

		assert_true(gws[i].live);
		loads[g] = (struct rs_gateway_load){ .load = gws[i].supervisors, .live = true,
						     .draining = gws[i].state == RS_GATEWAY_DRAINING };
		any_draining |= loads[g].draining;
	}
	if (info)
		info->draining += any_draining;
	bool pending = false;

	for (size_t i = 0; i < n_sessions; i++) {
		assert_true(sessions[i].live);
		if (strcmp(sessions[i].member_id, a->member_id) == 0) {
			arr.stale = rs_ring_find(ring, sessions[i].gateway_id);
			pending = sessions[i].state == RS_SESSION_PENDING;
		}
	}
	if (info)
		info->stale += arr.stale >= 0;
	arr.at = rs_ring_find(ring, a->gateway_id);
	assert_true(arr.at >= 0);
	/* A Service fallback after a failed redirect (store.h): decided without
	 * the unreachable target; the stay holds only below that cap. */
	bool fallback = a->stay && !a->redirected && pending && arr.stale >= 0 && arr.stale != arr.at;
	/* Once that reservation lapsed (expired, or its gateway gone), the
	 * same over the whole ring. */
	int lapsed_at = -2; /* -2: no lapsed reservation */

	if (arr.stale < 0)
		lapsed_at = lapsed_reservation(st, a, ring);
	if (a->stay && !a->redirected && lapsed_at > -2) {
		fallback = true;
		arr.stay = false;
	} else if (fallback) {
		loads[arr.stale].draining = true;
		arr.stay = false;
	}
	/* Arrived where its reservation is (store_admit.c): accepted unless
	 * draining, whatever the rule says now. */
	bool reserved_here = !a->stay && !a->handoff && pending && arr.stale >= 0 && arr.stale == arr.at;

	err = rs_place(ring, loads, &arr, d);
	if (!err && fallback && !loads[arr.at].draining && loads[arr.at].load < d->cap) {
		d->gateway = (uint32_t)arr.at;
		d->reason = RS_REASON_STAY;
		d->full = false;
	}
	if (!err && reserved_here && !loads[arr.at].draining && d->gateway != (uint32_t)arr.at) {
		d->gateway = (uint32_t)arr.at;
		d->reason = RS_REASON_RESERVED;
		d->full = false;
	}
	/* Its reservation elsewhere holds its place (store.h): sent there while
	 * that gateway serves and, without this member, is below cap. */
	if (!err && !a->stay && !a->handoff && pending && !reserved_here && arr.stale >= 0 &&
	    d->gateway != (uint32_t)arr.stale && !loads[arr.stale].draining && loads[arr.stale].load - 1 < d->cap) {
		d->gateway = (uint32_t)arr.stale;
		d->reason = RS_REASON_RESERVED;
		d->full = false;
	}
	if (!err)
		snprintf(target, RS_ID_MAX + 1, "%s", rs_ring_gateway_id(ring, d->gateway));
	rs_ring_free(ring);
	free(loads);
	free(ids);
	free(sessions);
	free(gws);
	return err;
}

/* Admits a and asserts the store decided exactly what the rule says. */
static int admit_checked_info(struct rs_store *st, struct rs_admit *a, struct snapshot_info *info)
{
	struct rs_decision want;
	char target[RS_ID_MAX + 1];
	int want_err = oracle(st, a, &want, target, info), err;

	err = rs_store_admit(st, a);
	assert_int_equal(err, want_err);
	if (err)
		return err;
	assert_string_equal(a->target_id, target);
	assert_int_equal(a->decision.reason, want.reason);
	assert_int_equal(a->decision.cap, want.cap);
	assert_int_equal(a->decision.full, want.full);
	assert_int_equal(a->accepted, strcmp(target, a->gateway_id) == 0);
	return 0;
}

static int admit_checked(struct rs_store *st, struct rs_admit *a)
{
	return admit_checked_info(st, a, NULL);
}

/* ---- tests ---- */

static void test_urls(void **state)
{
	struct fixture *f = *state;
	struct rs_store *st = (struct rs_store *)&st;
	char long_url[RS_STORE_URL_MAX + 16];

	assert_int_equal(rs_store_open(NULL, NULL, &st), -EINVAL);
	assert_null(st);
	assert_int_equal(rs_store_open("", NULL, &st), -EINVAL);
	assert_int_equal(rs_store_open("no-scheme-here", NULL, &st), -EINVAL);
	assert_int_equal(rs_store_open("/var/lib/x.db", NULL, &st), -EINVAL);
	assert_int_equal(rs_store_open("1sqlite:x", NULL, &st), -EINVAL);
	assert_int_equal(rs_store_open("sq lite:x", NULL, &st), -EINVAL);
	assert_int_equal(rs_store_open("sqlite:", NULL, &st), -EINVAL);
	/* PostgreSQL takes libpq URIs only, under either scheme. */
	assert_int_equal(rs_store_open("postgres:", NULL, &st), -EINVAL);
	assert_int_equal(rs_store_open("postgres:ringsteer", NULL, &st), -EINVAL);
	assert_int_equal(rs_store_open("postgresql:/x", NULL, &st), -EINVAL);
	assert_int_equal(rs_store_open("postgres://h/db?nosuchparameter=1", NULL, &st), -EINVAL);
	assert_int_equal(rs_store_open("postgres://[::1/db", NULL, &st), -EINVAL);
	assert_null(st);
	/* No server there: -EIO, at once (a socket directory without a socket). */
	char pg_url[200];
	int64_t t0 = monotonic_us();

	snprintf(pg_url, sizeof(pg_url), "postgresql:///ringsteer?host=%s", f->dir);
	assert_int_equal(rs_store_open(pg_url, NULL, &st), -EIO);
	assert_null(st);
	assert_true(monotonic_us() - t0 < 3000000);
	assert_int_equal(rs_store_open("mysql:x", NULL, &st), -EPROTONOSUPPORT);
	assert_int_equal(rs_store_open("sqlitex:/tmp/x", NULL, &st), -EPROTONOSUPPORT);
	memset(long_url, 'a', sizeof(long_url) - 1);
	long_url[sizeof(long_url) - 1] = '\0';
	memcpy(long_url, "sqlite:/tmp/", 12);
	assert_int_equal(rs_store_open(long_url, NULL, &st), -EINVAL);
	assert_null(st);
	rs_store_close(NULL);

	/* The scheme is case-insensitive; defaults are filled in. */
	char url[sizeof(f->url) + 8];

	if (f->env->pg)
		snprintf(url, sizeof(url), "PostgreSQL%s", strchr(f->url, ':'));
	else
		snprintf(url, sizeof(url), "SQLite:%s", f->path);
	assert_int_equal(rs_store_open(url, NULL, &st), 0);
	assert_int_equal(rs_store_options(st)->ttl_ms, 15000);
	assert_int_equal(rs_store_options(st)->reservation_ms, 5000);
	assert_int_equal(rs_store_options(st)->busy_timeout_ms, 5000);
	/* Only PostgreSQL notifies changes. */
	if (f->env->pg) {
		assert_true(rs_store_watch(st) >= 0);
	} else {
		assert_int_equal(rs_store_watch(st), -EOPNOTSUPP);
		assert_int_equal(rs_store_watch_consume(st), -EOPNOTSUPP);
	}
	assert_int_equal(rs_store_watch(NULL), -EINVAL);
	rs_store_close(st);
}

static void test_schema_and_reopen(void **state)
{
	struct fixture *f = *state;
	struct rs_store *st = open_store(f);
	struct rs_gateway_row *rows;
	sqlite3 *db;
	sqlite3_stmt *s;
	size_t n;

	assert_int_equal(rs_store_options(st)->ttl_ms, TTL);
	register_gw(st, "gw-a", RS_GATEWAY_SERVING, T0);
	rs_store_close(st);

	/* One version row, SCHEMA_VERSION; SQLite: WAL journal; PostgreSQL: the triggers. */
	assert_int_equal(version_rows(f), 1);
	if (f->env->pg) {
		PGconn *c = pg_connect_raw(f->url);

		assert_int_equal(pg_int(c, "SELECT COUNT(*) FROM pg_trigger WHERE tgname LIKE '%_notify%'"), 4);
		PQfinish(c);
	} else {
		assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
		assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &s, NULL), SQLITE_OK);
		assert_int_equal(sqlite3_step(s), SQLITE_ROW);
		assert_string_equal((const char *)sqlite3_column_text(s, 0), "wal");
		sqlite3_finalize(s);
		sqlite3_close(db);
	}

	/* Reopen: the row is still there, the version row not repeated. */
	st = open_store(f);
	assert_int_equal(rs_store_list_gateways(st, T0, false, &rows, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(rows[0].id, "gw-a");
	free(rows);
	rs_store_close(st);
	assert_int_equal(version_rows(f), 1);

	/* A store written by a newer schema version is refused, read-only too,
	 * and left as it is; a damaged version table is an I/O error. */
	raw_sql(f, "UPDATE schema_version SET version = 3");
	st = (struct rs_store *)&st;
	assert_int_equal(rs_store_open(f->url, NULL, &st), -EPROTO);
	assert_null(st);
	assert_int_equal(rs_store_open(f->url, &(struct rs_store_options){ .read_only = true }, &st), -EPROTO);
	raw_sql(f, "UPDATE schema_version SET version = 2; INSERT INTO schema_version (version) VALUES (2)");
	assert_int_equal(rs_store_open(f->url, NULL, &st), -EIO);
	raw_sql(f, "DELETE FROM schema_version; INSERT INTO schema_version (version) VALUES (0)");
	assert_int_equal(rs_store_open(f->url, NULL, &st), -EIO);
	/* A store with its tables and no version row (none was ever written
	 * without the other) is completed, keeping its rows. */
	raw_sql(f, "DELETE FROM schema_version");
	st = open_store(f);
	assert_int_equal(rs_store_list_gateways(st, T0, false, &rows, &n), 0);
	assert_int_equal(n, 1);
	free(rows);
	rs_store_close(st);
	assert_int_equal(version_rows(f), 1);
}

static void test_register_and_list(void **state)
{
	struct fixture *f = *state;
	struct rs_store *st = open_store(f);
	struct rs_gateway_row *rows;
	struct rs_admit a;
	size_t n;

	register_gw(st, "gw-c", RS_GATEWAY_SERVING, T0);
	register_gw(st, "gw-a", RS_GATEWAY_SERVING, T0);
	register_gw(st, "gw-b", RS_GATEWAY_DRAINING, T0);
	assert_int_equal(rs_store_gateway_register(st, "gw-a", "[fd00::1]:7443", RS_GATEWAY_SERVING, T0 + 10), 0);
	assert_int_equal(rs_store_list_gateways(st, T0 + 10, false, &rows, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(rows[0].id, "gw-a");
	assert_string_equal(rows[0].peer, "[fd00::1]:7443");
	assert_int_equal(rows[0].heartbeat_ms, T0 + 10);
	assert_string_equal(rows[1].id, "gw-b");
	assert_int_equal(rows[1].state, RS_GATEWAY_DRAINING);
	assert_string_equal(rows[2].id, "gw-c");
	for (size_t i = 0; i < n; i++) {
		assert_true(rows[i].live);
		assert_int_equal(rows[i].supervisors, 0);
	}
	free(rows);

	/* Bad arguments. */
	assert_int_equal(rs_store_gateway_register(st, "", "x:1", RS_GATEWAY_SERVING, T0), -EINVAL);
	assert_int_equal(rs_store_gateway_register(st, NULL, "x:1", RS_GATEWAY_SERVING, T0), -EINVAL);
	assert_int_equal(rs_store_gateway_register(st, "gw-a", NULL, RS_GATEWAY_SERVING, T0), -EINVAL);
	assert_int_equal(rs_store_gateway_register(st, "gw-a", "x:1", (enum rs_gateway_state)7, T0), -EINVAL);
	char big[RS_ENDPOINT_MAX + 2];

	memset(big, '1', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(rs_store_gateway_register(st, "gw-a", big, RS_GATEWAY_SERVING, T0), -EINVAL);
	char long_id[RS_ID_MAX + 2];

	memset(long_id, 'g', sizeof(long_id) - 1);
	long_id[sizeof(long_id) - 1] = '\0';
	assert_int_equal(rs_store_gateway_register(st, long_id, "x:1", RS_GATEWAY_SERVING, T0), -EINVAL);
	long_id[RS_ID_MAX] = '\0';
	assert_int_equal(rs_store_gateway_register(st, long_id, "x:1", RS_GATEWAY_SERVING, T0), 0);
	assert_int_equal(rs_store_gateway_remove(st, long_id), 0);

	/* Removing a gateway removes its sessions, and only its own. */
	a = arrival("gw-a", "m-1", 1, true, T0 + 20);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_true(a.accepted);
	a = arrival("gw-c", "m-2", 1, true, T0 + 20);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_int_equal(load_of(st, "gw-a", T0 + 20), 1);
	assert_int_equal(rs_store_gateway_remove(st, "gw-a"), 0);
	assert_int_equal(rs_store_gateway_remove(st, "gw-a"), -ENOENT);
	struct rs_session_row row;

	assert_false(session_of(st, "m-1", T0 + 20, &row));
	assert_true(session_of(st, "m-2", T0 + 20, &row));
	assert_int_equal(rs_store_list_gateways(st, T0 + 20, true, &rows, &n), 0);
	assert_int_equal(n, 2);
	free(rows);
	rs_store_close(st);
}

static void test_ttl_expiry(void **state)
{
	struct fixture *f = *state;
	struct rs_store *st = open_store(f);
	struct rs_gateway_row *rows;
	struct rs_session_row *sessions, row;
	struct rs_admit a;
	size_t n;

	register_gw(st, "gw-a", RS_GATEWAY_SERVING, T0);
	register_gw(st, "gw-b", RS_GATEWAY_SERVING, T0 + 100);
	a = arrival("gw-a", "m-1", 1, true, T0);
	assert_int_equal(rs_store_admit(st, &a), 0);

	/* Live up to and including now - ttl. */
	assert_int_equal(rs_store_list_gateways(st, T0 + TTL, false, &rows, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(rows[0].supervisors, 1);
	free(rows);
	assert_int_equal(rs_store_list_gateways(st, T0 + TTL + 1, false, &rows, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(rows[0].id, "gw-b");
	free(rows);
	assert_int_equal(rs_store_list_gateways(st, T0 + TTL + 1, true, &rows, &n), 0);
	assert_int_equal(n, 2);
	assert_false(rows[0].live);
	assert_int_equal(rows[0].supervisors, 0);
	assert_true(rows[1].live);
	free(rows);

	assert_int_equal(rs_store_list_sessions(st, T0 + TTL, false, &sessions, &n), 0);
	assert_int_equal(n, 1);
	assert_true(sessions[0].live);
	assert_int_equal(sessions[0].expires_ms, T0 + TTL);
	free(sessions);
	assert_int_equal(rs_store_list_sessions(st, T0 + TTL + 1, false, &sessions, &n), 0);
	assert_int_equal(n, 0);
	free(sessions);
	assert_true(session_of(st, "m-1", T0 + TTL + 1, &row));
	assert_false(row.live);

	/* An active session lives exactly as long as its gateway's row: its
	 * own heartbeat_ms (attached at) and expires_ms say nothing. */
	assert_int_equal(rs_store_heartbeat(st, "gw-a", T0 + 2 * TTL), 0);
	assert_true(session_of(st, "m-1", T0 + 3 * TTL, &row));
	assert_true(row.live);
	assert_int_equal(row.heartbeat_ms, T0);
	assert_int_equal(load_of(st, "gw-a", T0 + 3 * TTL), 1);
	assert_true(session_of(st, "m-1", T0 + 3 * TTL + 1, &row));
	assert_false(row.live);
	/* Registering again (the same process) keeps it. */
	assert_int_equal(rs_store_gateway_register(st, "gw-a", "x:1", RS_GATEWAY_SERVING, T0 + 1000), 0);
	assert_true(session_of(st, "m-1", T0 + TTL + 1001, &row));
	assert_false(row.live);
	assert_true(session_of(st, "m-1", T0 + 1000 + TTL, &row));
	assert_true(row.live);
	rs_store_close(st);
}

/* A random walk of arrivals, state changes and time, every admission
 * checked against rs_place over the same snapshot. */
static void test_admit_matches_rule(void **state)
{
	struct fixture *f = *state;
	struct rs_store *st = open_store(f);
	static const char *const gws[] = { "gw-0", "gw-1", "gw-2", "gw-3", "gw-4" };
	const size_t n_gws = sizeof(gws) / sizeof(gws[0]);
	uint64_t epochs[60] = { 0 };
	struct test_rng rng;
	int64_t now = T0;
	size_t admitted = 0, redirected = 0, refused = 0;
	struct snapshot_info info = { 0 };

	test_rng_seed(&rng, "store admit", 42);
	for (size_t g = 0; g < n_gws; g++)
		register_gw(st, gws[g], RS_GATEWAY_SERVING, now);
	for (int step = 0; step < 600; step++) {
		/* One gateway per phase of 100 steps is down (no arrivals, no
		 * heartbeats): it dies, its sessions stop counting, it comes back. */
		size_t down = (size_t)(step / 100) % n_gws;
		size_t g = (down + 1 + (size_t)test_rng_below(&rng, n_gws - 1)) % n_gws;
		uint64_t r = test_rng_below(&rng, 100);

		if (r < 70) {
			size_t m = (size_t)test_rng_below(&rng, 60);
			char member[32];
			struct rs_admit a;
			int err;

			snprintf(member, sizeof(member), "member-%zu", m);
			a = arrival(gws[g], member, ++epochs[m], test_rng_below(&rng, 4) == 0, now);
			err = admit_checked_info(st, &a, &info);
			if (err) {
				assert_int_equal(err, -ENOENT);
				refused++;
				continue;
			}
			admitted++;
			if (!a.accepted) {
				char target[RS_ID_MAX + 1];

				redirected++;
				snprintf(target, sizeof(target), "%s", a.target_id);
				if (test_rng_below(&rng, 2)) {
					/* It follows the redirect, asking to stay. */
					a = arrival(target, member, ++epochs[m], true, now + 1);
					assert_int_equal(admit_checked_info(st, &a, &info), 0);
					assert_true(a.accepted);
					assert_int_equal(a.decision.reason, RS_REASON_STAY);
				}
			}
		} else if (r < 75) {
			register_gw(st, gws[g], test_rng_below(&rng, 3) == 0 ? RS_GATEWAY_DRAINING : RS_GATEWAY_SERVING,
				    now);
		} else if (r < 85) {
			assert_int_equal(rs_store_heartbeat(st, gws[g], now), 0);
		} else {
			now += (int64_t)test_rng_below(&rng, 4000);
		}
	}
	printf("# store admit: %zu admitted (%zu redirected), %zu refused; snapshots: %zu with a dead gateway, "
	       "%zu with one draining, %zu stale records\n",
	       admitted, redirected, refused, info.dead_gateways, info.draining, info.stale);
	assert_true(admitted > 200);
	assert_true(redirected > 20);
	assert_true(info.dead_gateways > 10);
	assert_true(info.stale > 50);
	assert_true(info.draining > 50);
	rs_store_close(st);
}

/* rs_store_whatif() answers what rs_store_admit() then decides for an
 * arrival through the Service (no stay), over random states with dead,
 * draining and returning gateways and stale records; it writes nothing, and
 * works on a read-only handle of the same file. */
static void test_whatif_matches_admit(void **state)
{
	struct fixture *f = *state;
	struct rs_store *st = open_store(f), *ro = NULL;
	const struct rs_store_options ro_opt = { .ttl_ms = TTL, .reservation_ms = RESERVATION, .read_only = true };
	static const char *const gws[] = { "gw-0", "gw-1", "gw-2", "gw-3" };
	const size_t n_gws = sizeof(gws) / sizeof(gws[0]);
	uint64_t epochs[40] = { 0 };
	struct test_rng rng;
	int64_t now = T0;
	size_t compared = 0, stale = 0, reserved = 0, home = 0;

	test_rng_seed(&rng, "store whatif", 7);
	for (size_t g = 0; g < n_gws; g++)
		register_gw(st, gws[g], RS_GATEWAY_SERVING, now);
	assert_int_equal(rs_store_open(f->url, &ro_opt, &ro), 0);
	for (int step = 0; step < 400; step++) {
		size_t g = (size_t)test_rng_below(&rng, n_gws);
		uint64_t r = test_rng_below(&rng, 100);

		if (r < 70) {
			size_t m = (size_t)test_rng_below(&rng, 40);
			struct rs_session_row before, after;
			struct rs_decision d;
			char member[32], target[RS_ID_MAX + 1];
			struct rs_admit a;
			bool had;
			int want, err;

			snprintf(member, sizeof(member), "member-%zu", m);
			/* The admission's first step, so both see the same snapshot. */
			assert_int_equal(rs_store_heartbeat(st, gws[g], now), 0);
			had = session_of(st, member, now, &before);
			stale += had && before.live;
			want = rs_store_whatif(test_rng_below(&rng, 2) ? ro : st, member, now, &d, target);
			assert_int_equal(session_of(st, member, now, &after), had);
			if (had)
				assert_memory_equal(&before, &after, sizeof(before));
			a = arrival(gws[g], member, ++epochs[m], false, now);
			err = rs_store_admit(st, &a);
			assert_int_equal(want, err);
			if (err) {
				assert_int_equal(err, -ENOENT);
				continue;
			}
			/* Landing where its own reservation is binds the admission
			 * (reason reserved): the what-if answers for a landing
			 * anywhere else. */
			if (a.decision.reason == RS_REASON_RESERVED)
				assert_true(had && before.live && before.state == RS_SESSION_PENDING);
			if (a.decision.reason == RS_REASON_RESERVED && strcmp(before.gateway_id, gws[g]) == 0) {
				reserved++;
				continue;
			}
			/* Sent to its reservation elsewhere: the what-if says so too. */
			if (a.decision.reason == RS_REASON_RESERVED) {
				assert_string_equal(before.gateway_id, a.target_id);
				home++;
			}
			assert_string_equal(target, a.target_id);
			assert_int_equal(d.gateway, a.decision.gateway);
			assert_int_equal(d.reason, a.decision.reason);
			assert_int_equal(d.cap, a.decision.cap);
			assert_int_equal(d.full, a.decision.full);
			compared++;
		} else if (r < 78) {
			register_gw(st, gws[g], test_rng_below(&rng, 3) == 0 ? RS_GATEWAY_DRAINING : RS_GATEWAY_SERVING,
				    now);
		} else if (r < 88) {
			assert_int_equal(rs_store_heartbeat(st, gws[g], now), 0);
		} else {
			now += (int64_t)test_rng_below(&rng, 6000);
		}
	}
	printf("# store whatif: %zu decisions compared, %zu with a live row of the member, %zu bound by a reservation, "
	       "%zu sent to one\n",
	       compared, stale, reserved, home);
	assert_true(compared > 150);
	assert_true(stale > 50);
	assert_int_equal(rs_store_whatif(st, "", now, &(struct rs_decision){ 0 }, (char[RS_ID_MAX + 1]){ 0 }),
			 -EINVAL);
	/* Nobody live: nobody takes anyone. */
	{
		struct rs_decision d;
		char target[RS_ID_MAX + 1];

		assert_int_equal(rs_store_whatif(ro, "member-1", now + 10 * TTL, &d, target), -ENOENT);
	}
	rs_store_close(ro);
	rs_store_close(st);
}

/* PostgreSQL: the store is the schema in the database.  no_create and
 * read_only find none in an empty database (-ENOENT) and create nothing. */
static void read_only_pg(const struct fixture *f, struct rs_store **st, struct rs_store **ro)
{
	const struct rs_store_options ro_opt = { .read_only = true }, nc_opt = { .no_create = true };
	PGconn *c = pg_connect_raw(f->url);

	assert_int_equal(rs_store_open(f->url, &ro_opt, ro), -ENOENT);
	assert_null(*ro);
	assert_int_equal(rs_store_open(f->url, &nc_opt, st), -ENOENT);
	assert_int_equal(pg_int(c, "SELECT COUNT(*) FROM pg_tables WHERE schemaname = 'public'"), 0);
	PQfinish(c);
	*st = open_store(f);
	rs_store_close(*st);
	assert_int_equal(rs_store_open(f->url, &nc_opt, st), 0);
}

/* no_create and read_only never create the file; read_only needs the
 * schema, never writes, and reads what others wrote. */
static void test_read_only(void **state)
{
	struct fixture *f = *state;
	const struct rs_store_options ro_opt = { .read_only = true }, nc_opt = { .no_create = true };
	struct rs_store *st = NULL, *ro = NULL;
	struct rs_gateway_row *rows;
	struct stat sb;
	size_t n;
	int fd;

	if (f->env->pg) {
		read_only_pg(f, &st, &ro);
		goto opened;
	}
	assert_int_equal(rs_store_open(f->url, &ro_opt, &ro), -ENOENT);
	assert_null(ro);
	assert_int_equal(rs_store_open(f->url, &nc_opt, &st), -ENOENT);
	assert_int_equal(stat(f->path, &sb), -1);

	/* An empty file: no schema, and the read-only handle writes none. */
	fd = open(f->path, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(rs_store_open(f->url, &ro_opt, &ro), -EIO);
	assert_int_equal(stat(f->path, &sb), 0);
	assert_int_equal(sb.st_size, 0);
	/* no_create opens an existing file and completes its schema. */
	assert_int_equal(rs_store_open(f->url, &nc_opt, &st), 0);
opened:
	register_gw(st, "gw-a", RS_GATEWAY_SERVING, T0);

	assert_int_equal(rs_store_open(f->url, &ro_opt, &ro), 0);
	assert_int_equal(rs_store_list_gateways(ro, T0, false, &rows, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(rows[0].id, "gw-a");
	free(rows);
	assert_int_equal(rs_store_gateway_register(ro, "gw-b", "10.0.0.2:7443", RS_GATEWAY_SERVING, T0), -EROFS);
	assert_int_equal(rs_store_gateway_set_state(ro, "gw-a", RS_GATEWAY_DRAINING), -EROFS);
	/* It sees what a writer commits after it opened. */
	register_gw(st, "gw-c", RS_GATEWAY_SERVING, T0);
	assert_int_equal(rs_store_list_gateways(ro, T0, false, &rows, &n), 0);
	assert_int_equal(n, 2);
	free(rows);
	rs_store_close(ro);
	rs_store_close(st);
}


static void test_reservation(void **state)
{
	struct fixture *f = *state;
	struct rs_store *st = open_store_ab(f);
	const char *const ids[] = { "gw-a", "gw-b" };
	struct rs_session_row row;
	char first[32], second[32];
	struct rs_admit a;

	/* gw-a holds one.  A member owned by gw-a arriving there finds N = 2,
	 * cap 1, gw-a full: it is redirected to gw-b, which gets a reservation. */
	a = arrival("gw-a", "holder", 1, true, T0);
	assert_int_equal(rs_store_admit(st, &a), 0);
	store_fixture_member_owned_by(ids, 2, "gw-a", "first", first, sizeof(first));
	a = arrival("gw-a", first, 1, false, T0 + 10);
	assert_int_equal(admit_checked(st, &a), 0);
	assert_false(a.accepted);
	assert_string_equal(a.target_id, "gw-b");
	assert_string_equal(a.target_peer, "10.0.0.102:7443");
	assert_int_equal(a.decision.reason, RS_REASON_PLACED);
	assert_int_equal(a.decision.cap, 1);
	assert_true(session_of(st, first, T0 + 10, &row));
	assert_int_equal(row.state, RS_SESSION_PENDING);
	assert_string_equal(row.gateway_id, "gw-b");
	assert_int_equal(row.expires_ms, T0 + 10 + RESERVATION);
	assert_true(row.live);
	assert_int_equal(row.epoch, 1);
	assert_int_equal(row.sandboxes, 3);
	assert_string_equal(row.instance_id, "inst-1");
	assert_string_equal(row.source, "10.1.0.9:40000");
	assert_int_equal(load_of(st, "gw-b", T0 + 10), 1);

	/* A concurrent arrival counts the reservation: N = 3, cap 2, and
	 * whichever gateway it is owned by has room (1 < 2). */
	store_fixture_member_owned_by(ids, 2, "gw-b", "second", second, sizeof(second));
	a = arrival("gw-a", second, 1, false, T0 + 20);
	assert_int_equal(admit_checked(st, &a), 0);
	assert_int_equal(a.decision.cap, 2);
	assert_string_equal(a.target_id, "gw-b");
	assert_int_equal(load_of(st, "gw-b", T0 + 20), 2);

	/* The reservation lapses at its end: still counted at expires, not after. */
	assert_int_equal(rs_store_heartbeat(st, "gw-b", T0 + 10 + RESERVATION), 0);
	assert_int_equal(load_of(st, "gw-b", T0 + 10 + RESERVATION), 2);
	assert_int_equal(load_of(st, "gw-b", T0 + 10 + RESERVATION + 1), 1);
	assert_true(session_of(st, first, T0 + 10 + RESERVATION + 1, &row));
	assert_false(row.live);
	assert_int_equal(load_of(st, "gw-b", T0 + 20 + RESERVATION + 1), 0);

	/* The redirected member arrives where it was sent, asking to stay:
	 * its reservation is its stale record, so the load is unchanged. */
	a = arrival("gw-b", second, 2, true, T0 + 30);
	assert_int_equal(admit_checked(st, &a), 0);
	assert_true(a.accepted);
	assert_int_equal(a.decision.reason, RS_REASON_STAY);
	assert_int_equal(load_of(st, "gw-b", T0 + 30), 2);
	assert_true(session_of(st, second, T0 + 30, &row));
	assert_int_equal(row.state, RS_SESSION_ACTIVE);
	assert_int_equal(row.expires_ms, T0 + 30 + TTL);
	rs_store_close(st);
}

/* rs_store_steer: the node agent's choice for a registered member is the
 * rule's for a Service arrival, written as a reservation; a member attached
 * or already reserved goes there with nothing written; the reservation
 * binds the gateway's own decision when the member arrives, even after
 * loads moved; a member attached to a draining gateway gets no reservation
 * (its row stays the attachment the drain hands off). */
static void test_steer(void **state)
{
	struct fixture *f = *state;
	struct rs_store *st = open_store_ab(f);
	const char *const ids[] = { "gw-a", "gw-b" };
	struct rs_store_steer out;
	struct rs_session_row row;
	struct rs_decision d;
	char member[32], other[32], want[RS_ID_MAX + 1];
	struct rs_admit a;

	/* gw-a holds one; a member owned by gw-a is steered as the rule
	 * places it through the Service: gw-a is full at cap 1, so gw-b. */
	a = arrival("gw-a", "holder", 1, true, T0);
	assert_int_equal(rs_store_admit(st, &a), 0);
	store_fixture_member_owned_by(ids, 2, "gw-a", "m", member, sizeof(member));
	assert_int_equal(rs_store_whatif(st, member, T0 + 1, &d, want), 0);
	assert_int_equal(rs_store_steer(st, member, T0 + 1, &out), 0);
	assert_string_equal(out.gateway_id, want);
	assert_string_equal(out.gateway_id, "gw-b");
	assert_string_equal(out.peer, "10.0.0.102:7443");
	assert_true(out.reserved);
	assert_false(out.home);
	assert_true(session_of(st, member, T0 + 1, &row));
	assert_int_equal(row.state, RS_SESSION_PENDING);
	assert_string_equal(row.gateway_id, "gw-b");
	assert_int_equal(row.expires_ms, T0 + 1 + RESERVATION);
	assert_int_equal(load_of(st, "gw-b", T0 + 1), 1);

	/* Again: the same answer, nothing written (the reservation stays). */
	assert_int_equal(rs_store_steer(st, member, T0 + 2, &out), 0);
	assert_string_equal(out.gateway_id, "gw-b");
	assert_false(out.reserved);
	assert_true(session_of(st, member, T0 + 2, &row));
	assert_int_equal(row.expires_ms, T0 + 1 + RESERVATION);

	/* The holder leaves gw-a: the rule alone would now take the member to
	 * its owner, gw-a, but its reservation holds its place at gw-b (what-if
	 * says so, reason reserved).  Arriving at gw-b, where it is reserved,
	 * without asking to stay, it is accepted there (reason reserved). */
	assert_int_equal(rs_store_session_end(st, "gw-a", "holder", 1), 0);
	assert_int_equal(rs_store_whatif(st, member, T0 + 3, &d, want), 0);
	assert_string_equal(want, "gw-b");
	assert_int_equal(d.reason, RS_REASON_RESERVED);
	a = arrival("gw-b", member, 1, false, T0 + 3);
	assert_int_equal(admit_checked(st, &a), 0);
	assert_true(a.accepted);
	assert_int_equal(a.decision.reason, RS_REASON_RESERVED);

	/* Attached: steered home, nothing written. */
	assert_int_equal(rs_store_steer(st, member, T0 + 4, &out), 0);
	assert_string_equal(out.gateway_id, "gw-b");
	assert_true(out.home);
	assert_false(out.reserved);

	/* Attached to a draining gateway: the rule's answer, no reservation. */
	register_gw(st, "gw-b", RS_GATEWAY_DRAINING, T0 + 5);
	assert_int_equal(rs_store_steer(st, member, T0 + 6, &out), 0);
	assert_string_equal(out.gateway_id, "gw-a");
	assert_false(out.home);
	assert_false(out.reserved);
	assert_true(session_of(st, member, T0 + 6, &row));
	assert_int_equal(row.state, RS_SESSION_ACTIVE);
	assert_string_equal(row.gateway_id, "gw-b");

	/* A reservation at a draining gateway binds nothing: placed by the rule. */
	register_gw(st, "gw-b", RS_GATEWAY_SERVING, T0 + 7);
	store_fixture_member_owned_by(ids, 2, "gw-b", "o", other, sizeof(other));
	assert_int_equal(rs_store_steer(st, other, T0 + 8, &out), 0);
	register_gw(st, "gw-b", RS_GATEWAY_DRAINING, T0 + 9);
	a = arrival("gw-b", other, 1, false, T0 + 10);
	assert_int_equal(admit_checked(st, &a), 0);
	assert_false(a.accepted);

	/* No live gateway at all: -ENOENT; bad member: -EINVAL. */
	assert_int_equal(rs_store_steer(st, "late", T0 + 10 * TTL, &out), -ENOENT);
	assert_int_equal(rs_store_steer(st, "", T0 + 11, &out), -EINVAL);
	rs_store_close(st);
}

/* rs_store_reservation_withdraw: the node agent takes back exactly the
 * reservation its steer wrote; one claimed by the member's arrival, or
 * rewritten since, is left alone. */
static void test_reservation_withdraw(void **state)
{
	struct fixture *f = *state;
	struct rs_store *st = open_store_ab(f);
	struct rs_store_steer out;
	struct rs_session_row row;
	struct rs_admit a;

	assert_int_equal(rs_store_steer(st, "m-w", T0 + 1, &out), 0);
	assert_true(out.reserved);
	assert_int_equal(out.expires_ms, T0 + 1 + RESERVATION);
	assert_int_equal(load_of(st, out.gateway_id, T0 + 1), 1);
	/* Another end, another gateway: not that reservation. */
	assert_int_equal(rs_store_reservation_withdraw(st, "m-w", out.gateway_id, out.expires_ms + 1), 0);
	assert_int_equal(rs_store_reservation_withdraw(st, "m-w", strcmp(out.gateway_id, "gw-a") ? "gw-a" : "gw-b",
						       out.expires_ms), 0);
	assert_true(session_of(st, "m-w", T0 + 1, &row));
	assert_int_equal(rs_store_reservation_withdraw(st, "m-w", out.gateway_id, out.expires_ms), 1);
	assert_false(session_of(st, "m-w", T0 + 1, &row));
	assert_int_equal(load_of(st, out.gateway_id, T0 + 1), 0);
	assert_int_equal(rs_store_reservation_withdraw(st, "m-w", out.gateway_id, out.expires_ms), 0);

	/* Claimed: the member arrived, its row is active; nothing withdrawn. */
	assert_int_equal(rs_store_steer(st, "m-c", T0 + 2, &out), 0);
	assert_true(out.reserved);
	a = arrival(out.gateway_id, "m-c", 1, false, T0 + 3);
	assert_int_equal(admit_checked(st, &a), 0);
	assert_true(a.accepted);
	assert_int_equal(rs_store_reservation_withdraw(st, "m-c", out.gateway_id, out.expires_ms), 0);
	assert_true(session_of(st, "m-c", T0 + 3, &row));
	assert_int_equal(row.state, RS_SESSION_ACTIVE);
	assert_int_equal(rs_store_reservation_withdraw(st, "", "gw-a", 1), -EINVAL);
	rs_store_close(st);
}

static void test_stale_record_excluded(void **state)
{
	struct fixture *f = *state;
	struct rs_store *st = open_store_ab(f);
	const char *const ids[] = { "gw-a", "gw-b" };
	char member[32];
	struct rs_admit a;

	/* member sits on gw-a though gw-b owns it; gw-b holds another. */
	store_fixture_member_owned_by(ids, 2, "gw-b", "m", member, sizeof(member));
	a = arrival("gw-a", member, 1, true, T0);
	assert_int_equal(rs_store_admit(st, &a), 0);
	a = arrival("gw-b", "other", 1, true, T0);
	assert_int_equal(rs_store_admit(st, &a), 0);

	/* It reconnects to gw-a (full at cap 1) without asking to stay.  Counting
	 * its old row would make N = 3, cap 2, and send it to gw-b (its owner,
	 * 1 < 2); without it N = 2, cap 1, gw-b is full and gw-a has room. */
	a = arrival("gw-a", member, 2, false, T0 + 100);
	assert_int_equal(admit_checked(st, &a), 0);
	assert_true(a.accepted);
	assert_int_equal(a.decision.reason, RS_REASON_PLACED);
	assert_int_equal(a.decision.cap, 1);
	assert_int_equal(load_of(st, "gw-a", T0 + 100), 1);
	assert_int_equal(load_of(st, "gw-b", T0 + 100), 1);

	/* Once its old row is dead it is no stale record: a fresh arrival. */
	assert_int_equal(rs_store_heartbeat(st, "gw-b", T0 + 100 + TTL + 1), 0);
	a = arrival("gw-b", member, 3, false, T0 + 100 + TTL + 1);
	assert_int_equal(admit_checked(st, &a), 0);
	rs_store_close(st);
}

static void test_stay(void **state)
{
	struct fixture *f = *state;
	struct rs_store *st = open_store_ab(f);
	struct rs_admit a;
	char member[32];

	/* Stay is honored over cap: five on gw-a, none on gw-b. */
	for (int i = 0; i < 5; i++) {
		snprintf(member, sizeof(member), "m-%d", i);
		a = arrival("gw-a", member, 1, true, T0);
		assert_int_equal(admit_checked(st, &a), 0);
		assert_true(a.accepted);
		assert_int_equal(a.decision.reason, RS_REASON_STAY);
	}
	assert_int_equal(load_of(st, "gw-a", T0), 5);

	/* Refused when the deciding gateway drains: placed elsewhere. */
	register_gw(st, "gw-a", RS_GATEWAY_DRAINING, T0 + 1);
	a = arrival("gw-a", "m-new", 1, true, T0 + 2);
	assert_int_equal(admit_checked(st, &a), 0);
	assert_false(a.accepted);
	assert_string_equal(a.target_id, "gw-b");
	assert_int_equal(a.decision.reason, RS_REASON_PLACED);

	/* Nobody takes anyone: -ENOENT, nothing written. */
	register_gw(st, "gw-b", RS_GATEWAY_DRAINING, T0 + 3);
	a = arrival("gw-a", "m-none", 1, true, T0 + 4);
	assert_int_equal(rs_store_admit(st, &a), -ENOENT);
	assert_false(a.accepted);
	struct rs_session_row row;

	assert_false(session_of(st, "m-none", T0 + 4, &row));

	/* An unregistered deciding gateway: -ENOENT. */
	a = arrival("gw-x", "m-x", 1, false, T0 + 4);
	assert_int_equal(rs_store_admit(st, &a), -ENOENT);
	rs_store_close(st);
}

/* A Service fallback after a failed redirect (stay, not redirected, its row
 * a reservation at the target it could not reach) is decided without that
 * target: the stay is honored below that cap, else the rule places it, and
 * never back to the unreachable target. */
static void test_fallback_after_failed_redirect(void **state)
{
	struct fixture *f = *state;
	struct rs_store *st = open_store_ab(f);
	const char *ids[] = { "gw-a", "gw-b", "gw-c" };
	struct rs_session_row row;
	struct rs_admit a;
	char member[32], x[32];

	register_gw(st, "gw-c", RS_GATEWAY_SERVING, T0);
	for (int g = 0; g < 3; g++)
		for (int i = 0; i < 3; i++) {
			snprintf(member, sizeof(member), "m-%d-%d", g, i);
			a = arrival(ids[g], member, 1, true, T0);
			assert_int_equal(rs_store_admit(st, &a), 0);
			assert_true(a.accepted);
		}
	/* x is owned by gw-c: at gw-a it is redirected there (3/3/3, cap 4). */
	store_fixture_member_owned_by(ids, 3, "gw-c", "x", x, sizeof(x));
	a = arrival("gw-a", x, 1, false, T0 + 1);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_false(a.accepted);
	assert_string_equal(a.target_id, "gw-c");

	/* gw-c is unreachable: back through the Service to gw-b with STAY.
	 * Without gw-c, cap = ceil(10 / 2) = 5 and gw-b holds 3: stays. */
	a = arrival("gw-b", x, 2, true, T0 + 2);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_true(a.accepted);
	assert_int_equal(a.decision.reason, RS_REASON_STAY);
	assert_int_equal(a.decision.cap, 5);
	assert_true(session_of(st, x, T0 + 2, &row));
	assert_string_equal(row.gateway_id, "gw-b");

	/* Again, now with gw-b at that cap: the rule places it on gw-a, the
	 * only gateway below cap without gw-c, never back on gw-c.  With x
	 * gone from gw-b: a 3, b 7, c 3 + x's reservation; cap ceil(14 / 2). */
	for (int i = 3; i < 7; i++) {
		snprintf(member, sizeof(member), "m-1-%d", i);
		a = arrival("gw-b", member, 1, true, T0 + 3);
		assert_int_equal(rs_store_admit(st, &a), 0);
	}
	assert_int_equal(load_of(st, "gw-b", T0 + 3), 8); /* x and seven */
	a = arrival("gw-a", x, 3, false, T0 + 4);       /* x restarts: redirected to gw-c again */
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_false(a.accepted);
	assert_string_equal(a.target_id, "gw-c");
	a = arrival("gw-b", x, 4, true, T0 + 5);        /* fallback lands on the full gw-b */
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_false(a.accepted);
	assert_string_equal(a.target_id, "gw-a");
	assert_int_equal(a.decision.reason, RS_REASON_PLACED);
	assert_int_equal(a.decision.cap, 7);

	/* Arriving at a redirect's target (REDIRECTED) is an ordinary stay,
	 * honored over the cap. */
	a = arrival("gw-b", x, 5, true, T0 + 6);
	a.redirected = true;
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_true(a.accepted);
	assert_int_equal(a.decision.reason, RS_REASON_STAY);
	rs_store_close(st);
}

/* A stay whose reservation lapsed while its backoff ran (docs/SIMULATION.md,
 * D1) holds no place: it is decided as a fallback over the whole ring, the
 * stay honored below the cap, else the rule places it. */
static void test_stay_after_reservation_lapsed(void **state)
{
	struct fixture *f = *state;
	struct rs_store *st = open_store_ab(f);
	const char *ids[] = { "gw-a", "gw-b", "gw-c" };
	struct rs_admit a;
	char member[32], x[32];

	register_gw(st, "gw-c", RS_GATEWAY_SERVING, T0);
	for (int g = 0; g < 3; g++)
		for (int i = 0; i < (g == 1 ? 7 : 3); i++) {
			snprintf(member, sizeof(member), "m-%d-%d", g, i);
			a = arrival(ids[g], member, 1, true, T0);
			assert_int_equal(rs_store_admit(st, &a), 0);
			assert_true(a.accepted);
		}
	/* Loads 3, 7, 3; x, owned by gw-c, arrives at gw-a: N = 14, cap
	 * ceil(14 / 3) = 5, gw-c at 3 takes it: redirected there. */
	store_fixture_member_owned_by(ids, 3, "gw-c", "x", x, sizeof(x));
	a = arrival("gw-a", x, 1, false, T0 + 1);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_false(a.accepted);
	assert_string_equal(a.target_id, "gw-c");
	/* gw-c never answered; the reservation lapses (RESERVATION after
	 * T0 + 1) and x lands on gw-b asking to stay.  It holds no place:
	 * over the whole ring N = 14, G = 3, cap 5; gw-b holds 7: refused (an
	 * ordinary stay would have made it 8), and the rule's gw-c (3 < 5)
	 * takes it, reachable again or not (then the next round, and after
	 * two refused there, liveness). */
	a = arrival("gw-b", x, 2, true, T0 + 1 + RESERVATION + 1);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_false(a.accepted);
	assert_true(a.fallback);
	assert_string_equal(a.target_id, "gw-c");
	assert_int_equal(a.decision.reason, RS_REASON_PLACED);
	assert_int_equal(a.decision.cap, 5);
	assert_int_equal(load_of(st, "gw-b", T0 + RESERVATION + 2), 7);
	/* At gw-a, below that cap (3 < 5), the same stay is honored. */
	a = arrival("gw-a", x, 3, true, T0 + 1 + 2 * RESERVATION + 2);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_true(a.accepted);
	assert_int_equal(a.decision.reason, RS_REASON_STAY);
	rs_store_close(st);
}

static void test_epochs(void **state)
{
	struct fixture *f = *state;
	struct rs_store *st = open_store_ab(f);
	struct rs_session_row row;
	struct rs_admit a;

	a = arrival("gw-a", "m", 5, true, T0);
	assert_int_equal(rs_store_admit(st, &a), 0);

	/* An older epoch is superseded; nothing written. */
	a = arrival("gw-b", "m", 4, true, T0 + 1);
	assert_int_equal(rs_store_admit(st, &a), -ESTALE);
	assert_false(a.accepted);
	assert_true(session_of(st, "m", T0 + 1, &row));
	assert_int_equal(row.epoch, 5);
	assert_string_equal(row.gateway_id, "gw-a");
	/* The same epoch active on another gateway is superseded too ... */
	a = arrival("gw-b", "m", 5, true, T0 + 1);
	assert_int_equal(rs_store_admit(st, &a), -ESTALE);
	/* ... and re-decided where it is. */
	a = arrival("gw-a", "m", 5, true, T0 + 2);
	assert_int_equal(admit_checked(st, &a), 0);
	assert_true(a.accepted);
	assert_int_equal(load_of(st, "gw-a", T0 + 2), 1);

	/* Epochs are stored as signed 64-bit: the largest one is kept exactly. */
	a = arrival("gw-a", "m", (uint64_t)INT64_MAX, true, T0 + 3);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_true(session_of(st, "m", T0 + 3, &row));
	assert_true(row.epoch == (uint64_t)INT64_MAX);
	a = arrival("gw-a", "m", (uint64_t)INT64_MAX + 1, true, T0 + 4);
	assert_int_equal(rs_store_admit(st, &a), -EINVAL);
	a = arrival("gw-a", "", 1, true, T0 + 4);
	assert_int_equal(rs_store_admit(st, &a), -EINVAL);
	a = arrival("gw-a", "m2", 1, true, T0 + 4);
	a.instance_id = "i-000000000000000000000000000000000000000000000000000000000000000000000";
	assert_int_equal(rs_store_admit(st, &a), -EINVAL);
	assert_int_equal(rs_store_admit(st, NULL), -EINVAL);
	rs_store_close(st);
}

/* A heartbeat is one write, whatever the gateway's sessions: they live
 * with its row, counted while it heartbeats and not once it lapses. */
static void test_heartbeat(void **state)
{
	struct fixture *f = *state;
	struct rs_store *st = open_store_ab(f);
	struct rs_session_row row;
	struct rs_admit a;
	uint64_t before;

	a = arrival("gw-a", "m", 1, true, T0);
	assert_int_equal(rs_store_admit(st, &a), 0);
	a = arrival("gw-a", "n", 1, true, T0);
	assert_int_equal(rs_store_admit(st, &a), 0);
	/* m reconnects to gw-b with a newer epoch. */
	a = arrival("gw-b", "m", 2, true, T0 + 100);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_true(a.accepted);
	assert_int_equal(load_of(st, "gw-a", T0 + 100), 1);

	/* gw-a heartbeats for three TTLs; n's row is never written again. */
	for (int64_t t = T0 + 1000; t <= T0 + 3 * TTL; t += TTL / 3) {
		before = rs_store_statements(st);
		assert_int_equal(rs_store_heartbeat(st, "gw-a", t), 0);
		assert_int_equal(rs_store_statements(st) - before, 3); /* begin, touch, commit */
		assert_true(session_of(st, "n", t, &row));
		assert_true(row.live);
		assert_int_equal(row.heartbeat_ms, T0);
		assert_int_equal(load_of(st, "gw-a", t), 1);
	}
	assert_true(session_of(st, "n", T0 + 3 * TTL, &row));
	assert_int_equal(row.sandboxes, 3);
	assert_int_equal(row.state, RS_SESSION_ACTIVE);
	/* gw-b stopped heartbeating: m no longer counts, though its row is
	 * younger than n's. */
	assert_true(session_of(st, "m", T0 + 3 * TTL, &row));
	assert_false(row.live);
	assert_int_equal(load_of(st, "gw-b", T0 + 3 * TTL), 0);
	/* gw-a lapses: n with it. */
	int64_t last = T0 + 1000 + 8 * (TTL / 3);

	assert_true(session_of(st, "n", last + TTL, &row));
	assert_true(row.live);
	assert_true(session_of(st, "n", last + TTL + 1, &row));
	assert_false(row.live);
	assert_int_equal(load_of(st, "gw-a", last + TTL + 1), 0);

	/* A gateway with no row: -ENOENT; bad arguments. */
	assert_int_equal(rs_store_heartbeat(st, "gw-x", T0), -ENOENT);
	assert_int_equal(rs_store_heartbeat(st, "", T0), -EINVAL);
	assert_int_equal(rs_store_heartbeat(NULL, "gw-a", T0), -EINVAL);

	/* Sandbox counts follow the (gateway, epoch) the row still has. */
	assert_int_equal(rs_store_session_sandboxes(st, "gw-b", "m", 2, 42), 0);
	assert_true(session_of(st, "m", T0 + 1000, &row));
	assert_int_equal(row.sandboxes, 42);
	assert_int_equal(rs_store_session_sandboxes(st, "gw-a", "m", 1, 1), -ESTALE);
	assert_int_equal(rs_store_session_sandboxes(st, "gw-b", "m", 1, 1), -ESTALE);
	assert_int_equal(rs_store_session_sandboxes(st, "gw-b", "nobody", 1, 1), -ESTALE);
	rs_store_close(st);
}

static void test_session_end(void **state)
{
	struct fixture *f = *state;
	struct rs_store *st = open_store_ab(f);
	struct rs_session_row row;
	struct rs_admit a;

	a = arrival("gw-a", "m", 3, true, T0);
	assert_int_equal(rs_store_admit(st, &a), 0);
	/* Another epoch or gateway: the row has moved on; nothing deleted. */
	assert_int_equal(rs_store_session_end(st, "gw-a", "m", 2), 0);
	assert_int_equal(rs_store_session_end(st, "gw-b", "m", 3), 0);
	assert_true(session_of(st, "m", T0, &row));
	assert_int_equal(rs_store_session_end(st, "gw-a", "m", 3), 0);
	assert_false(session_of(st, "m", T0, &row));
	assert_int_equal(rs_store_session_end(st, "gw-a", "m", 3), 0);
	assert_int_equal(load_of(st, "gw-a", T0), 0);
	assert_int_equal(rs_store_session_end(st, "gw-a", "", 3), -EINVAL);
	rs_store_close(st);
}

static void test_gateway_state_and_get(void **state)
{
	struct fixture *f = *state;
	struct rs_store *st = open_store(f);
	struct rs_gateway_row row, *rows;
	struct rs_admit a;
	char long_id[RS_ID_MAX + 2];
	size_t n;

	register_gw(st, "gw-a", RS_GATEWAY_SERVING, T0);
	register_gw(st, "gw-b", RS_GATEWAY_SERVING, T0 + 5);
	assert_int_equal(rs_store_gateway_get(st, "gw-a", T0 + 10, &row), 0);
	assert_string_equal(row.id, "gw-a");
	assert_string_equal(row.peer, "10.0.0.101:7443");
	assert_int_equal(row.state, RS_GATEWAY_SERVING);
	assert_int_equal(row.heartbeat_ms, T0);
	assert_true(row.live);
	assert_int_equal(row.supervisors, 0);

	/* Two attached on gw-a, and a reservation at gw-a made by gw-b. */
	a = arrival("gw-a", "m-1", 1, true, T0 + 10);
	assert_int_equal(rs_store_admit(st, &a), 0);
	a = arrival("gw-a", "m-2", 1, true, T0 + 10);
	assert_int_equal(rs_store_admit(st, &a), 0);
	register_gw(st, "gw-b", RS_GATEWAY_DRAINING, T0 + 10);
	a = arrival("gw-b", "m-3", 1, true, T0 + 20);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_false(a.accepted);
	assert_string_equal(a.target_id, "gw-a");
	assert_int_equal(rs_store_gateway_get(st, "gw-a", T0 + 20, &row), 0);
	assert_int_equal(row.supervisors, 3);
	register_gw(st, "gw-b", RS_GATEWAY_SERVING, T0 + 20);

	/* set_state changes the state and nothing else (the heartbeat above
	 * all: asking a gateway to drain must not keep it alive). */
	assert_int_equal(rs_store_gateway_set_state(st, "gw-a", RS_GATEWAY_DRAINING), 0);
	assert_int_equal(rs_store_gateway_get(st, "gw-a", T0 + 30, &row), 0);
	assert_int_equal(row.state, RS_GATEWAY_DRAINING);
	assert_int_equal(row.heartbeat_ms, T0 + 10); /* its admissions' refresh */
	assert_string_equal(row.peer, "10.0.0.101:7443");
	assert_int_equal(row.supervisors, 3);
	/* Again: same state, still 0 (the row is there). */
	assert_int_equal(rs_store_gateway_set_state(st, "gw-a", RS_GATEWAY_DRAINING), 0);
	assert_int_equal(rs_store_gateway_set_state(st, "gw-a", RS_GATEWAY_SERVING), 0);
	assert_int_equal(rs_store_gateway_get(st, "gw-a", T0 + 30, &row), 0);
	assert_int_equal(row.state, RS_GATEWAY_SERVING);
	assert_int_equal(rs_store_gateway_set_state(st, "gw-a", RS_GATEWAY_DRAINING), 0);

	/* get agrees with the listing, row for row, live and dead: gw-a's
	 * heartbeat lapses first, its sessions then count for nothing. */
	for (int64_t now = T0 + 30; now <= T0 + 20 + TTL + 10; now += TTL / 2 + 1) {
		assert_int_equal(rs_store_list_gateways(st, now, true, &rows, &n), 0);
		assert_int_equal(n, 2);
		for (size_t i = 0; i < n; i++) {
			memset(&row, 0xa5, sizeof(row));
			assert_int_equal(rs_store_gateway_get(st, rows[i].id, now, &row), 0);
			assert_string_equal(row.id, rows[i].id);
			assert_string_equal(row.peer, rows[i].peer);
			assert_int_equal(row.state, rows[i].state);
			assert_int_equal(row.heartbeat_ms, rows[i].heartbeat_ms);
			assert_int_equal(row.live, rows[i].live);
			assert_int_equal(row.supervisors, rows[i].supervisors);
		}
		free(rows);
	}
	assert_int_equal(rs_store_gateway_get(st, "gw-a", T0 + 20 + TTL + 1, &row), 0);
	assert_false(row.live);
	assert_int_equal(row.supervisors, 0);
	assert_int_equal(row.state, RS_GATEWAY_DRAINING);

	/* Unknown ids: -ENOENT, and nothing is created. */
	assert_int_equal(rs_store_gateway_set_state(st, "gw-x", RS_GATEWAY_DRAINING), -ENOENT);
	assert_int_equal(rs_store_gateway_get(st, "gw-x", T0, &row), -ENOENT);
	assert_int_equal(rs_store_list_gateways(st, T0, true, &rows, &n), 0);
	assert_int_equal(n, 2);
	free(rows);
	/* A removed gateway is unknown. */
	assert_int_equal(rs_store_gateway_remove(st, "gw-b"), 0);
	assert_int_equal(rs_store_gateway_get(st, "gw-b", T0, &row), -ENOENT);
	assert_int_equal(rs_store_gateway_set_state(st, "gw-b", RS_GATEWAY_SERVING), -ENOENT);

	/* Bad arguments. */
	memset(long_id, 'g', sizeof(long_id) - 1);
	long_id[sizeof(long_id) - 1] = '\0';
	assert_int_equal(rs_store_gateway_set_state(NULL, "gw-a", RS_GATEWAY_DRAINING), -EINVAL);
	assert_int_equal(rs_store_gateway_set_state(st, NULL, RS_GATEWAY_DRAINING), -EINVAL);
	assert_int_equal(rs_store_gateway_set_state(st, "", RS_GATEWAY_DRAINING), -EINVAL);
	assert_int_equal(rs_store_gateway_set_state(st, long_id, RS_GATEWAY_DRAINING), -EINVAL);
	assert_int_equal(rs_store_gateway_set_state(st, "gw-a", (enum rs_gateway_state)7), -EINVAL);
	assert_int_equal(rs_store_gateway_get(NULL, "gw-a", T0, &row), -EINVAL);
	assert_int_equal(rs_store_gateway_get(st, NULL, T0, &row), -EINVAL);
	assert_int_equal(rs_store_gateway_get(st, "", T0, &row), -EINVAL);
	assert_int_equal(rs_store_gateway_get(st, long_id, T0, &row), -EINVAL);
	assert_int_equal(rs_store_gateway_get(st, "gw-a", T0, NULL), -EINVAL);
	assert_int_equal(rs_store_gateway_get(st, "gw-a", T0, &row), 0);
	assert_int_equal(row.state, RS_GATEWAY_DRAINING);
	rs_store_close(st);
}

/* A handoff of member (row: gw, epoch) by gw at now. */
static struct rs_admit handoff(const char *gw, const char *member, uint64_t epoch, int64_t now)
{
	return (struct rs_admit){
		.gateway_id = gw, .member_id = member, .epoch = epoch, .handoff = true, .now_ms = now,
	};
}

/* The live sessions at now, asserting that the listing of sessions and the
 * gateways' counts agree (each member counted once, where its row is). */
static size_t live_sessions(struct rs_store *st, int64_t now)
{
	struct rs_gateway_row *gws;
	struct rs_session_row *sessions;
	size_t n_gws, n_sessions, total = 0;

	assert_int_equal(rs_store_list_gateways(st, now, false, &gws, &n_gws), 0);
	for (size_t i = 0; i < n_gws; i++)
		total += gws[i].supervisors;
	free(gws);
	assert_int_equal(rs_store_list_sessions(st, now, false, &sessions, &n_sessions), 0);
	free(sessions);
	assert_int_equal(total, n_sessions);
	return total;
}

#define DRAIN_GWS 5
#define DRAIN_MEMBERS 48

/* The handoffs of a draining gateway, one rs_store_admit each, go exactly
 * where rs_drain_plan sends them over the same snapshot, every reservation
 * counting for the next; the supervisors then arrive at their targets and
 * stay.  Nobody is counted twice at any step. */
static void test_handoff_matches_plan(void **state)
{
	struct fixture *f = *state;
	struct rs_store *st = open_store(f);
	static const char *const gws[DRAIN_GWS] = { "gw-0", "gw-1", "gw-2", "gw-3", "gw-4" };
	const char *const stopping = "gw-2";
	struct rs_gateway_row *rows;
	struct rs_session_row *sessions, row;
	struct rs_gateway_load loads[DRAIN_GWS];
	struct rs_placer *placer;
	struct rs_ring *ring;
	struct test_rng rng;
	char *members[DRAIN_MEMBERS];
	uint64_t epochs[DRAIN_MEMBERS];
	uint32_t sandboxes[DRAIN_MEMBERS], targets[DRAIN_MEMBERS], plan_cap;
	size_t n_rows, n_sessions, n = 0, total, unfollowed = 0;
	int64_t now = T0;
	int drained_idx;

	test_rng_seed(&rng, "store handoff", 7);
	for (size_t g = 0; g < DRAIN_GWS; g++)
		register_gw(st, gws[g], RS_GATEWAY_SERVING, now);
	/* A fleet placed by the rule (some redirects followed, some not: their
	 * reservations still count), with extra stays on the stopping gateway
	 * so that it holds more than its share. */
	for (int i = 0; i < 60; i++) {
		char member[32];
		struct rs_admit a;
		bool to_stopping = i % 3 == 0;

		snprintf(member, sizeof(member), "member-%02d", i);
		a = arrival(to_stopping ? stopping : gws[test_rng_below(&rng, DRAIN_GWS)], member, 1, to_stopping,
			    now);
		a.sandboxes = (uint32_t)i;
		assert_int_equal(rs_store_admit(st, &a), 0);
		if (!a.accepted && test_rng_below(&rng, 3) == 0) {
			unfollowed++; /* its reservation counts until it lapses */
		} else if (!a.accepted) {
			char target[RS_ID_MAX + 1];

			snprintf(target, sizeof(target), "%s", a.target_id);
			a = arrival(target, member, 2, true, now);
			a.sandboxes = (uint32_t)i;
			assert_int_equal(rs_store_admit(st, &a), 0);
			assert_true(a.accepted);
		}
		now += 10;
	}
	total = live_sessions(st, now);
	assert_int_equal(total, 60);

	/* Ask the stopping gateway to drain; snapshot the store as the plan's
	 * input: ring of live gateways, their loads and states. */
	assert_int_equal(rs_store_gateway_set_state(st, stopping, RS_GATEWAY_DRAINING), 0);
	assert_int_equal(rs_store_heartbeat(st, stopping, now), 0);
	assert_int_equal(rs_store_list_gateways(st, now, false, &rows, &n_rows), 0);
	assert_int_equal(n_rows, DRAIN_GWS);
	assert_int_equal(rs_ring_new(gws, DRAIN_GWS, &ring), 0);
	assert_int_equal(rs_placer_new(ring, &placer), 0);
	for (size_t i = 0; i < n_rows; i++) {
		int g = rs_ring_find(ring, rows[i].id);

		assert_true(g >= 0);
		loads[g] = (struct rs_gateway_load){ .load = rows[i].supervisors, .live = rows[i].live,
						     .draining = rows[i].state == RS_GATEWAY_DRAINING };
		assert_int_equal(rs_placer_set(placer, (uint32_t)g, &loads[g]), 0);
	}
	free(rows);
	drained_idx = rs_ring_find(ring, stopping);
	assert_true(drained_idx >= 0);
	assert_int_equal(rs_store_list_sessions(st, now, false, &sessions, &n_sessions), 0);
	for (size_t i = 0; i < n_sessions; i++) {
		if (strcmp(sessions[i].gateway_id, stopping) != 0)
			continue;
		assert_true(n < DRAIN_MEMBERS);
		members[n] = strdup(sessions[i].member_id);
		assert_non_null(members[n]);
		epochs[n] = sessions[i].epoch;
		sandboxes[n] = sessions[i].sandboxes;
		n++;
	}
	free(sessions);
	assert_int_equal(n, loads[drained_idx].load);
	assert_true(n >= 20);
	/* Any order: the plan and the store follow the same one. */
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = (size_t)test_rng_below(&rng, i + 1);
		char *m = members[i];
		uint64_t e = epochs[i];
		uint32_t s = sandboxes[i];

		members[i] = members[j];
		members[j] = m;
		epochs[i] = epochs[j];
		epochs[j] = e;
		sandboxes[i] = sandboxes[j];
		sandboxes[j] = s;
	}
	assert_int_equal(rs_drain_plan(placer, (uint32_t)drained_idx, (const char *const *)members, n, targets), 0);
	plan_cap = rs_cap(total, DRAIN_GWS - 1);

	/* The handoffs, one transaction each, within every reservation's life. */
	for (size_t i = 0; i < n; i++) {
		const char *want = rs_ring_gateway_id(ring, targets[i]);
		struct rs_admit a = handoff(stopping, members[i], epochs[i], now + (int64_t)i);
		uint32_t before = load_of(st, want, a.now_ms), here_before = load_of(st, stopping, a.now_ms);

		assert_int_equal(rs_store_admit(st, &a), 0);
		assert_false(a.accepted);
		assert_string_equal(a.target_id, want);
		assert_string_not_equal(a.target_id, stopping);
		assert_int_equal(a.decision.gateway, targets[i]);
		assert_int_equal(a.decision.reason, RS_REASON_DRAIN_HANDOFF);
		assert_int_equal(a.decision.cap, rs_cap(total, DRAIN_GWS - 1));
		assert_false(a.decision.full);
		/* Its row: a reservation at the target, same epoch, its own
		 * instance, sandboxes and source (not the handoff's). */
		assert_true(session_of(st, members[i], a.now_ms, &row));
		assert_string_equal(row.gateway_id, want);
		assert_int_equal(row.state, RS_SESSION_PENDING);
		assert_int_equal(row.epoch, epochs[i]);
		assert_int_equal(row.sandboxes, sandboxes[i]);
		assert_string_equal(row.instance_id, "inst-1");
		assert_string_equal(row.source, "10.1.0.9:40000");
		assert_int_equal(row.expires_ms, a.now_ms + RESERVATION);
		assert_true(row.live);
		/* Moved, not copied: the next handoff counts it at the target. */
		assert_int_equal(load_of(st, want, a.now_ms), before + 1);
		assert_int_equal(load_of(st, stopping, a.now_ms), here_before - 1);
		assert_int_equal(live_sessions(st, a.now_ms), total);
		/* Done once: handing it off again finds its row gone from here. */
		a = handoff(stopping, members[i], epochs[i], now + (int64_t)i);
		assert_int_equal(rs_store_admit(st, &a), -ESTALE);
	}
	now += (int64_t)n;
	/* The store ends where the plan's placer ends, every target within
	 * ceil(N / (G - 1)). */
	assert_int_equal(load_of(st, stopping, now), 0);
	for (size_t g = 0; g < DRAIN_GWS; g++) {
		struct rs_gateway_load after;

		assert_int_equal(rs_placer_get(placer, (uint32_t)g, &after), 0);
		assert_int_equal(load_of(st, gws[g], now), after.load);
		assert_true(after.load <= plan_cap || (int)g == drained_idx);
	}

	/* Each supervisor arrives at its target with a newer epoch, asking to
	 * stay: accepted there, its reservation its stale record. */
	for (size_t i = 0; i < n; i++) {
		const char *want = rs_ring_gateway_id(ring, targets[i]);
		struct rs_admit a = arrival(want, members[i], epochs[i] + 1, true, now + (int64_t)i);
		uint32_t before = load_of(st, want, a.now_ms);

		a.sandboxes = sandboxes[i];
		assert_int_equal(admit_checked(st, &a), 0);
		assert_true(a.accepted);
		assert_int_equal(a.decision.reason, RS_REASON_STAY);
		assert_true(session_of(st, members[i], a.now_ms, &row));
		assert_string_equal(row.gateway_id, want);
		assert_int_equal(row.state, RS_SESSION_ACTIVE);
		assert_int_equal(row.epoch, epochs[i] + 1);
		assert_int_equal(load_of(st, want, a.now_ms), before);
		assert_int_equal(live_sessions(st, a.now_ms), total);
		/* The old attachment is superseded now. */
		a = handoff(stopping, members[i], epochs[i], a.now_ms);
		assert_int_equal(rs_store_admit(st, &a), -ESTALE);
	}
	now += (int64_t)n;
	for (size_t g = 0; g < DRAIN_GWS; g++) {
		struct rs_gateway_load after;

		assert_int_equal(rs_placer_get(placer, (uint32_t)g, &after), 0);
		assert_int_equal(load_of(st, gws[g], now), after.load);
	}
	/* Past every reservation's end only the fleet's unfollowed redirects
	 * are gone: every handed-off supervisor is active at its target. */
	printf("# handoff: %zu handed off, %zu unfollowed reservations in the fleet\n", n, unfollowed);
	assert_int_equal(live_sessions(st, now + RESERVATION + 1), total - unfollowed);

	for (size_t i = 0; i < n; i++)
		free(members[i]);
	rs_placer_free(placer);
	rs_ring_free(ring);
	rs_store_close(st);
}

/* The handoff's row check: only the attachment the draining gateway holds
 * (its gateway, its epoch) is handed off; anything else is -ESTALE with
 * nothing written. */
static void test_handoff_stale(void **state)
{
	struct fixture *f = *state;
	struct rs_store *st = open_store_ab(f);
	struct rs_session_row row;
	struct rs_admit a;

	register_gw(st, "gw-c", RS_GATEWAY_SERVING, T0);
	a = arrival("gw-a", "m", 3, true, T0);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_int_equal(rs_store_gateway_set_state(st, "gw-a", RS_GATEWAY_DRAINING), 0);

	a = handoff("gw-a", "m", 2, T0 + 1); /* the row is newer */
	assert_int_equal(rs_store_admit(st, &a), -ESTALE);
	assert_false(a.accepted);
	assert_string_equal(a.target_id, "");
	a = handoff("gw-a", "m", 4, T0 + 1); /* the row is older: not this attachment */
	assert_int_equal(rs_store_admit(st, &a), -ESTALE);
	a = handoff("gw-b", "m", 3, T0 + 1); /* another gateway's */
	assert_int_equal(rs_store_admit(st, &a), -ESTALE);
	a = handoff("gw-a", "nobody", 1, T0 + 1); /* no row at all */
	assert_int_equal(rs_store_admit(st, &a), -ESTALE);
	assert_false(session_of(st, "nobody", T0 + 1, &row));
	assert_true(session_of(st, "m", T0 + 1, &row));
	assert_string_equal(row.gateway_id, "gw-a");
	assert_int_equal(row.state, RS_SESSION_ACTIVE);
	assert_int_equal(row.epoch, 3);
	assert_int_equal(row.heartbeat_ms, T0);

	/* The member reconnected elsewhere meanwhile (newer epoch, another
	 * gateway): the draining gateway's handoff is superseded. */
	a = arrival("gw-b", "m", 4, true, T0 + 2);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_true(a.accepted);
	a = handoff("gw-a", "m", 3, T0 + 3);
	assert_int_equal(rs_store_admit(st, &a), -ESTALE);
	assert_true(session_of(st, "m", T0 + 3, &row));
	assert_string_equal(row.gateway_id, "gw-b");
	assert_int_equal(row.epoch, 4);
	assert_int_equal(row.state, RS_SESSION_ACTIVE);
	assert_int_equal(live_sessions(st, T0 + 3), 1);

	/* Bad arguments as for any arrival. */
	a = handoff("gw-a", "", 3, T0 + 3);
	assert_int_equal(rs_store_admit(st, &a), -EINVAL);
	a = handoff("gw-a", "m", (uint64_t)INT64_MAX + 1, T0 + 3);
	assert_int_equal(rs_store_admit(st, &a), -EINVAL);
	rs_store_close(st);
}

/* Where no other gateway takes anyone, the handoff is -ENOENT and the
 * member stays where it is. */
static void test_handoff_nowhere(void **state)
{
	struct fixture *f = *state;
	struct rs_store *st = open_store_ab(f);
	struct rs_session_row row;
	struct rs_admit a;
	int64_t later = T0 + TTL + 1000;

	a = arrival("gw-a", "m", 1, true, T0);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_int_equal(rs_store_gateway_set_state(st, "gw-a", RS_GATEWAY_DRAINING), 0);
	assert_int_equal(rs_store_gateway_set_state(st, "gw-b", RS_GATEWAY_DRAINING), 0);
	a = handoff("gw-a", "m", 1, T0 + 1);
	assert_int_equal(rs_store_admit(st, &a), -ENOENT);
	assert_false(a.accepted);
	assert_true(session_of(st, "m", T0 + 1, &row));
	assert_string_equal(row.gateway_id, "gw-a");
	assert_int_equal(row.state, RS_SESSION_ACTIVE);

	/* The only serving one is dead. */
	assert_int_equal(rs_store_gateway_set_state(st, "gw-b", RS_GATEWAY_SERVING), 0);
	assert_int_equal(rs_store_heartbeat(st, "gw-a", later), 0);
	a = handoff("gw-a", "m", 1, later);
	assert_int_equal(rs_store_admit(st, &a), -ENOENT);
	assert_true(session_of(st, "m", later, &row));
	assert_string_equal(row.gateway_id, "gw-a");
	assert_true(row.live);

	/* It comes back: the handoff goes there. */
	assert_int_equal(rs_store_heartbeat(st, "gw-b", later), 0);
	a = handoff("gw-a", "m", 1, later + 1);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_false(a.accepted);
	assert_string_equal(a.target_id, "gw-b");
	assert_int_equal(a.decision.reason, RS_REASON_DRAIN_HANDOFF);
	assert_int_equal(a.decision.cap, 1);

	/* An unregistered deciding gateway: -ENOENT as for any arrival. */
	a = handoff("gw-x", "m", 1, later + 2);
	assert_int_equal(rs_store_admit(st, &a), -ENOENT);
	rs_store_close(st);
}

/* A handoff never lands on the gateway handing off, not even where that
 * gateway would be the rule's pick if it were active: it owns the member
 * and is below the cap it would have. */
static void test_handoff_never_here(void **state)
{
	struct fixture *f = *state;
	static const char *const ids[] = { "gw-a", "gw-b", "gw-c" };
	enum rs_gateway_state states[] = { RS_GATEWAY_DRAINING, RS_GATEWAY_SERVING };

	for (size_t s = 0; s < 2; s++) {
		struct rs_store *st;
		struct rs_admit a;
		struct rs_session_row row;
		char member[32], name[32];
		int64_t now = T0;

		raw_sql(f, "DROP TABLE IF EXISTS sessions; DROP TABLE IF EXISTS gateways;"
			   " DROP TABLE IF EXISTS schema_version");
		st = open_store(f);
		for (size_t g = 0; g < 3; g++)
			register_gw(st, ids[g], RS_GATEWAY_SERVING, now);
		/* gw-a holds two members it owns; gw-b and gw-c three each. */
		for (int i = 0; i < 2; i++) {
			snprintf(name, sizeof(name), "own%d", i);
			store_fixture_member_owned_by(ids, 3, "gw-a", name, member, sizeof(member));
			a = arrival("gw-a", member, 1, true, now);
			assert_int_equal(rs_store_admit(st, &a), 0);
		}
		for (int i = 0; i < 6; i++) {
			snprintf(member, sizeof(member), "other-%d", i);
			a = arrival(ids[1 + i % 2], member, 1, true, now);
			assert_int_equal(rs_store_admit(st, &a), 0);
		}
		/* Active, gw-a would take it back (N = 8, cap 3, 1 < 3). */
		store_fixture_member_owned_by(ids, 3, "gw-a", "own0", member, sizeof(member));
		a = arrival("gw-b", member, 2, false, now + 1);
		assert_int_equal(admit_checked(st, &a), 0);
		assert_string_equal(a.target_id, "gw-a");
		assert_false(a.accepted);
		a = arrival("gw-a", member, 3, true, now + 1);
		assert_int_equal(rs_store_admit(st, &a), 0);
		assert_true(a.accepted);

		/* Draining (s = 0), or its row still serving (s = 1: the drain
		 * has not reached the store, yet the handoff leaves gw-a out all
		 * the same): both members go to the others, cap ceil(8 / 2). */
		if (states[s] == RS_GATEWAY_DRAINING)
			assert_int_equal(rs_store_gateway_set_state(st, "gw-a", RS_GATEWAY_DRAINING), 0);
		for (int i = 0; i < 2; i++) {
			snprintf(name, sizeof(name), "own%d", i);
			store_fixture_member_owned_by(ids, 3, "gw-a", name, member, sizeof(member));
			a = handoff("gw-a", member, i == 0 ? 3 : 1, now + 2);
			assert_int_equal(rs_store_admit(st, &a), 0);
			assert_false(a.accepted);
			assert_string_not_equal(a.target_id, "gw-a");
			assert_int_equal(a.decision.reason, RS_REASON_DRAIN_HANDOFF);
			assert_int_equal(a.decision.cap, 4);
			assert_true(session_of(st, member, now + 2, &row));
			assert_string_not_equal(row.gateway_id, "gw-a");
			assert_int_equal(row.state, RS_SESSION_PENDING);
		}
		assert_int_equal(load_of(st, "gw-a", now + 2), 0);
		assert_int_equal(live_sessions(st, now + 2), 8);
		/* The mark was the handoff's alone: gw-a's row is as it was. */
		struct rs_gateway_row gw;

		assert_int_equal(rs_store_gateway_get(st, "gw-a", now + 2, &gw), 0);
		assert_int_equal(gw.state, states[s]);
		rs_store_close(st);
	}
}

/* A row the draining gateway holds counts as long as that gateway's row
 * lives, however old the session row (nothing refreshes it): the handoff
 * takes it as its stale record (reason drain-handoff) and reserves the
 * member at the target with the row's facts. */
static void test_handoff_row_lives_with_gateway(void **state)
{
	struct fixture *f = *state;
	struct rs_store *st = open_store_ab(f);
	struct rs_session_row row;
	struct rs_admit a;
	int64_t later = T0 + TTL + 1;

	a = arrival("gw-a", "m", 2, true, T0);
	a.sandboxes = 11;
	assert_int_equal(rs_store_admit(st, &a), 0);
	a = arrival("gw-b", "n", 1, true, T0);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_int_equal(rs_store_gateway_set_state(st, "gw-a", RS_GATEWAY_DRAINING), 0);
	/* Both gateways stay alive past the sessions' own TTL: both still
	 * count (nothing refreshes a session row; it lives with its gateway). */
	assert_int_equal(rs_store_heartbeat(st, "gw-a", later), 0);
	assert_int_equal(rs_store_heartbeat(st, "gw-b", later), 0);
	assert_int_equal(load_of(st, "gw-a", later), 1);
	assert_int_equal(live_sessions(st, later), 2);

	a = handoff("gw-a", "m", 2, later);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_false(a.accepted);
	assert_string_equal(a.target_id, "gw-b");
	assert_int_equal(a.decision.reason, RS_REASON_DRAIN_HANDOFF);
	assert_int_equal(a.decision.cap, 2); /* N = n + m (its row its stale record), G = 1 */
	assert_true(session_of(st, "m", later, &row));
	assert_string_equal(row.gateway_id, "gw-b");
	assert_int_equal(row.state, RS_SESSION_PENDING);
	assert_int_equal(row.epoch, 2);
	assert_int_equal(row.sandboxes, 11);
	assert_int_equal(row.expires_ms, later + RESERVATION);
	assert_int_equal(live_sessions(st, later), 2);
	rs_store_close(st);
}

/* Admits member at gateway gw through st and, if redirected, at the target
 * with STAY (a newer epoch): what a supervisor does. */
static int admit_and_follow(struct rs_store *st, const char *gw, const char *member, int64_t now)
{
	struct rs_admit a = arrival(gw, member, 1, false, now);
	char target[RS_ID_MAX + 1];
	int err = rs_store_admit(st, &a);

	if (err || a.accepted)
		return err;
	snprintf(target, sizeof(target), "%s", a.target_id);
	a = arrival(target, member, 2, true, now);
	err = rs_store_admit(st, &a);
	if (!err && !a.accepted)
		return -EPROTO;
	return err;
}

static const char *const four[] = { "gw-0", "gw-1", "gw-2", "gw-3" };

static void test_two_handles(void **state)
{
	struct fixture *f = *state;
	struct rs_store *h[2] = { open_store(f), open_store(f) };
	struct rs_gateway_row *rows;
	size_t n;

	for (size_t g = 0; g < 4; g++)
		register_gw(h[g % 2], four[g], RS_GATEWAY_SERVING, T0);
	for (int i = 0; i < 40; i++) {
		char member[32];

		snprintf(member, sizeof(member), "member-%d", i);
		assert_int_equal(admit_and_follow(h[i % 2], four[(i / 2) % 4], member, T0 + i), 0);
	}
	assert_int_equal(rs_store_list_gateways(h[0], T0 + 40, false, &rows, &n), 0);
	assert_int_equal(n, 4);
	for (size_t g = 0; g < n; g++)
		assert_int_equal(rows[g].supervisors, 10);
	free(rows);
	rs_store_close(h[0]);
	rs_store_close(h[1]);
}

/* Every committed state of serialized bounded-load admissions has each
 * gateway at or below ceil(N / G).  Returns 0 or -ERANGE. */
static int check_bounded(struct rs_store *st, int64_t now)
{
	struct rs_gateway_row *rows;
	uint64_t total = 0;
	uint32_t most = 0;
	size_t n;
	int err = rs_store_list_gateways(st, now, false, &rows, &n);

	if (err)
		return err;
	for (size_t g = 0; g < n; g++) {
		total += rows[g].supervisors;
		most = rows[g].supervisors > most ? rows[g].supervisors : most;
	}
	free(rows);
	return most <= rs_cap(total, (uint32_t)n) ? 0 : -ERANGE;
}

static void test_two_processes(void **state)
{
	struct fixture *f = *state;
	struct rs_store *st = open_store(f);
	struct rs_gateway_row *rows;
	int64_t spans[2][2];
	int start[2], report[2];
	uint32_t total = 0;
	pid_t pids[2];
	size_t n;

	for (size_t g = 0; g < 4; g++)
		register_gw(st, four[g], RS_GATEWAY_SERVING, T0);
	/* No SQLite connection may cross a fork: each child opens its own. */
	rs_store_close(st);
	assert_int_equal(pipe(start), 0);
	assert_int_equal(pipe(report), 0);
	fflush(NULL);
	for (int p = 0; p < 2; p++) {
		pids[p] = fork();
		assert_true(pids[p] >= 0);
		if (pids[p] == 0) {
			const struct rs_store_options opt = { .ttl_ms = TTL, .busy_timeout_ms = 20000 };
			struct rs_store *mine = NULL;
			int64_t span[3] = { p };
			char go;
			int err;

			close(start[1]);
			err = rs_store_open(f->url, &opt, &mine);
			/* Both start together: the parent closes the pipe. */
			if (read(start[0], &go, 1) != 0)
				_exit(2);
			span[1] = monotonic_us();
			for (int i = 0; !err && i < 100; i++) {
				char member[32];

				snprintf(member, sizeof(member), "p%d-member-%d", p, i);
				err = admit_and_follow(mine, four[(i + p) % 4], member, T0 + 1000);
				if (!err)
					err = check_bounded(mine, T0 + 1000);
			}
			span[2] = monotonic_us();
			rs_store_close(mine);
			if (write(report[1], span, sizeof(span)) != (ssize_t)sizeof(span))
				_exit(3);
			_exit(err ? 100 - err : 0);
		}
	}
	close(start[0]);
	close(start[1]);
	close(report[1]);
	for (int p = 0; p < 2; p++) {
		int64_t span[3];

		assert_int_equal(read(report[0], span, sizeof(span)), (ssize_t)sizeof(span));
		assert_true(span[0] == 0 || span[0] == 1);
		spans[span[0]][0] = span[1];
		spans[span[0]][1] = span[2];
	}
	close(report[0]);
	for (int p = 0; p < 2; p++) {
		int status;

		assert_int_equal(waitpid(pids[p], &status, 0), pids[p]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	printf("# two processes: %lld us and %lld us, overlapping %lld us\n",
	       (long long)(spans[0][1] - spans[0][0]), (long long)(spans[1][1] - spans[1][0]),
	       (long long)((spans[0][1] < spans[1][1] ? spans[0][1] : spans[1][1]) -
			   (spans[0][0] > spans[1][0] ? spans[0][0] : spans[1][0])));
	st = open_store(f);
	assert_int_equal(rs_store_list_gateways(st, T0 + 1000, false, &rows, &n), 0);
	assert_int_equal(n, 4);
	for (size_t g = 0; g < n; g++) {
		assert_true(rows[g].supervisors <= 50);
		total += rows[g].supervisors;
	}
	assert_int_equal(total, 200);
	free(rows);
	rs_store_close(st);
}

static void test_busy(void **state)
{
	struct fixture *f = *state;
	const struct rs_store_options opt = { .busy_timeout_ms = 100 };
	struct rs_store *st = NULL;
	struct rs_gateway_row *rows;
	struct rs_admit a;
	sqlite3 *db = NULL;
	PGconn *c = NULL;
	int64_t t0;
	size_t n;

	assert_int_equal(rs_store_open(f->url, &opt, &st), 0);
	register_gw(st, "gw-a", RS_GATEWAY_SERVING, T0);
	a = arrival("gw-a", "s", 1, true, T0);
	assert_int_equal(rs_store_admit(st, &a), 0); /* a session whose count is written below */
	/* Another writer holds the lock past our timeout (PostgreSQL: the
	 * writers' advisory lock, "ringster"). */
	if (f->env->pg) {
		c = pg_connect_raw(f->url);
		pg_exec_raw(c, "BEGIN; SELECT pg_advisory_xact_lock(x'72696e6773746572'::bigint)");
	} else {
		assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
		assert_int_equal(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
	}
	t0 = monotonic_us();
	a = arrival("gw-a", "m", 1, true, T0);
	assert_int_equal(rs_store_admit(st, &a), -EBUSY);
	assert_int_equal(rs_store_gateway_register(st, "gw-a", "x:1", RS_GATEWAY_SERVING, T0), -EBUSY);
	assert_int_equal(rs_store_gateway_set_state(st, "gw-a", RS_GATEWAY_DRAINING), -EBUSY);
	/* A session's sandbox count is one row no placement reads: PostgreSQL
	 * writes it without the writers' lock (a fleet's reports never queue
	 * behind admissions); SQLite has one write lock for the file. */
	assert_int_equal(rs_store_session_sandboxes(st, "gw-a", "s", 1, 9), f->env->pg ? 0 : -EBUSY);
	assert_true(monotonic_us() - t0 < 4 * 1000000); /* at most four waits of 100 ms */
	/* Readers are not blocked (WAL; PostgreSQL's snapshots). */
	assert_int_equal(rs_store_list_gateways(st, T0, false, &rows, &n), 0);
	assert_int_equal(n, 1);
	free(rows);
	struct rs_gateway_row row;

	assert_int_equal(rs_store_gateway_get(st, "gw-a", T0, &row), 0);
	assert_int_equal(row.state, RS_GATEWAY_SERVING);
	if (c) {
		pg_exec_raw(c, "COMMIT");
		PQfinish(c);
	} else {
		assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
		sqlite3_close(db);
	}
	assert_int_equal(rs_store_admit(st, &a), 0);
	rs_store_close(st);
}

/* PostgreSQL: no database of that name, or no server at all, is -EIO,
 * within the connect timeout. */
static void dead_store_pg(const struct fixture *f)
{
	struct rs_store *st = (struct rs_store *)&st;
	char url[sizeof(f->url) + sizeof(f->dir) + 32];
	int64_t t0 = monotonic_us();

	snprintf(url, sizeof(url), "%s&dbname=rs_no_such_database", f->url);
	assert_int_equal(rs_store_open(url, NULL, &st), -EIO);
	assert_null(st);
	assert_int_equal(rs_store_open(url, &(struct rs_store_options){ .no_create = true }, &st), -EIO);
	snprintf(url, sizeof(url), "%s&host=%s", f->url, f->dir);
	assert_int_equal(rs_store_open(url, NULL, &st), -EIO);
	assert_true(monotonic_us() - t0 < 3000000);
}

static void test_dead_store(void **state)
{
	struct fixture *f = *state;
	struct rs_store *st = (struct rs_store *)&st;
	char url[256], path[200];
	pid_t pid;
	int status, fd;

	if (f->env->pg) {
		dead_store_pg(f);
		return;
	}

	/* The directory is not created for the caller. */
	snprintf(url, sizeof(url), "sqlite:%s/missing/ringsteer.db", f->dir);
	assert_int_equal(rs_store_open(url, NULL, &st), -EIO);
	assert_null(st);
	/* A parent that is a file. */
	snprintf(path, sizeof(path), "%s/file", f->dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "not a database, not at all: just some text here", 48), 48);
	close(fd);
	snprintf(url, sizeof(url), "sqlite:%s/file/ringsteer.db", f->dir);
	assert_int_equal(rs_store_open(url, NULL, &st), -EIO);
	/* A file that is not a database: damaged, not absent (issue 25). */
	snprintf(url, sizeof(url), "sqlite:%s/file", f->dir);
	assert_int_equal(rs_store_open(url, NULL, &st), -EUCLEAN);

	/* A directory without permission, as an unprivileged user (dropping
	 * to nobody when the tests run as root, who ignores permissions). */
	snprintf(path, sizeof(path), "%s/locked", f->dir);
	assert_int_equal(mkdir(path, 0000), 0);
	snprintf(url, sizeof(url), "sqlite:%s/locked/ringsteer.db", f->dir);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rs_store *child = NULL;
		int err;

		if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
			_exit(3);
		err = rs_store_open(url, NULL, &child);
		rs_store_close(child);
		_exit(err == -EIO ? 0 : 4);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* Rows another tool wrote wrongly are -EIO for every reader, never copied
 * past their arrays. */
static void test_corrupt_rows(void **state)
{
	struct fixture *f = *state;
	static const char *const corruptions[] = {
		"UPDATE gateways SET id = printf('%.300c', 'g') WHERE id = 'gw-b'",
		"UPDATE gateways SET peer = printf('%.65c', '1') WHERE id = 'gw-b'",
		"UPDATE gateways SET state = 7 WHERE id = 'gw-b'",
		"UPDATE gateways SET heartbeat_ms = 'soon' WHERE id = 'gw-b'",
		"UPDATE gateways SET peer = CAST(x'31003a31' AS TEXT) WHERE id = 'gw-b'",
		"UPDATE sessions SET epoch = -1",
		"UPDATE sessions SET sandboxes = 4294967296",
		"UPDATE sessions SET instance_id = printf('%.65c', 'i')",
		"UPDATE sessions SET source = NULL",
		"UPDATE sessions SET member_id = ''",
		"UPDATE sessions SET state = 2",
		"UPDATE sessions SET expires_ms = 1.5",
		"UPDATE sessions SET gateway_id = x'6777'",
	};
	/* PostgreSQL's types refuse most of those: wrong types come from
	 * altered columns instead. */
	static const char *const pg_corruptions[] = {
		"UPDATE gateways SET id = repeat('g', 300) WHERE id = 'gw-b'",
		"UPDATE gateways SET peer = repeat('1', 65) WHERE id = 'gw-b'",
		"UPDATE gateways SET state = 7 WHERE id = 'gw-b'",
		"UPDATE gateways SET state = -1 WHERE id = 'gw-b'",
		"ALTER TABLE gateways ALTER COLUMN heartbeat_ms TYPE numeric",
		"DROP TRIGGER gateways_notify_update ON gateways;"
		" ALTER TABLE gateways ALTER COLUMN state TYPE text USING state::text",
		"UPDATE sessions SET epoch = -1",
		"UPDATE sessions SET sandboxes = 4294967296",
		"UPDATE sessions SET instance_id = repeat('i', 65)",
		"UPDATE sessions SET source = NULL",
		"UPDATE sessions SET member_id = ''",
		"UPDATE sessions SET state = 2",
		"ALTER TABLE sessions ALTER COLUMN expires_ms TYPE double precision",
		"DROP TRIGGER sessions_notify_update ON sessions;"
		" ALTER TABLE sessions ALTER COLUMN gateway_id TYPE bytea USING gateway_id::bytea",
	};
	const char *const *list = f->env->pg ? pg_corruptions : corruptions;
	size_t count = f->env->pg ? sizeof(pg_corruptions) / sizeof(pg_corruptions[0])
				  : sizeof(corruptions) / sizeof(corruptions[0]);

	for (size_t i = 0; i < count; i++) {
		struct rs_store *st;
		struct rs_gateway_row *gws = NULL;
		struct rs_session_row *sessions = NULL;
		struct rs_admit a;
		size_t n = 9;
		bool gateway = strstr(list[i], " gateways ") != NULL;

		raw_sql(f, "DROP TABLE IF EXISTS sessions; DROP TABLE IF EXISTS gateways;"
			   " DROP TABLE IF EXISTS schema_version");
		st = open_store_ab(f);
		a = arrival("gw-b", "m", 1, true, T0);
		assert_int_equal(rs_store_admit(st, &a), 0);
		/* NOT NULL refuses the NULL: the schema guards too. */
		if (strstr(list[i], "NULL")) {
			if (f->env->pg) {
				PGconn *c = pg_connect_raw(f->url);
				PGresult *res = PQexec(c, list[i]);

				assert_int_equal(PQresultStatus(res), PGRES_FATAL_ERROR);
				PQclear(res);
				PQfinish(c);
			} else {
				sqlite3 *db;

				assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
				assert_int_not_equal(sqlite3_exec(db, list[i], NULL, NULL, NULL), SQLITE_OK);
				sqlite3_close(db);
			}
			rs_store_close(st);
			continue;
		}
		raw_sql(f, list[i]);
		if (gateway) {
			assert_int_equal(rs_store_list_gateways(st, T0, true, &gws, &n), -EIO);
			assert_null(gws);
			assert_int_equal(n, 0);
			/* Read alone, the row is refused just the same (unless the
			 * corruption renamed it away). */
			struct rs_gateway_row row;

			assert_int_equal(rs_store_gateway_get(st, "gw-b", T0, &row),
					 strstr(list[i], "SET id") ? -ENOENT : -EIO);
			a = arrival("gw-a", "m2", 1, false, T0);
			assert_int_equal(rs_store_admit(st, &a), -EIO);
		} else {
			assert_int_equal(rs_store_list_sessions(st, T0, true, &sessions, &n), -EIO);
			assert_null(sessions);
			/* m's own row is read unless the corruption renamed it. */
			a = arrival("gw-a", "m", 2, false, T0);
			if (!strstr(list[i], "member_id"))
				assert_int_equal(rs_store_admit(st, &a), -EIO);
		}
		rs_store_close(st);
	}
}

/* ---- concurrency, reconnection and the watch ---- */

/* Four gateways, each a thread with its own handle, take 200 arrivals
 * released at once (a barrier); each arrival that is redirected follows
 * with REDIRECTED and STAY to its target, through the same handle (as the
 * target gateway).  Serialized placements leave no gateway above
 * ceil(200 / 4) = 50 accepted rows. */
#define ARRIVALS 200

struct arrivals_thread {
	const struct fixture *f;
	pthread_barrier_t *barrier;
	size_t gw;
	int err;          /* first error, or 0 */
	unsigned redirected;
};

static void *arrivals_run(void *arg)
{
	struct arrivals_thread *t = arg;
	const struct rs_store_options opt = { .ttl_ms = TTL, .reservation_ms = RESERVATION,
					      .busy_timeout_ms = 60000 };
	struct rs_store *st = NULL;
	int err = rs_store_open(t->f->url, &opt, &st);

	pthread_barrier_wait(t->barrier);
	for (size_t i = t->gw; !err && i < ARRIVALS; i += 4) {
		char member[32], target[RS_ID_MAX + 1];
		struct rs_admit a;

		snprintf(member, sizeof(member), "burst-%zu", i);
		a = arrival(four[t->gw], member, 1, false, T0 + 1000);
		err = rs_store_admit(st, &a);
		if (err || a.accepted)
			continue;
		t->redirected++;
		snprintf(target, sizeof(target), "%s", a.target_id);
		a = arrival(target, member, 2, true, T0 + 1000);
		a.redirected = true;
		err = rs_store_admit(st, &a);
		if (!err && !a.accepted)
			err = -EPROTO;
	}
	rs_store_close(st);
	t->err = err;
	return NULL;
}

static void test_concurrent_arrivals(void **state)
{
	struct fixture *f = *state;
	struct rs_store *st = open_store(f);
	struct arrivals_thread threads[4];
	struct rs_session_row *rows;
	pthread_barrier_t barrier;
	pthread_t tids[4];
	uint32_t active[4] = { 0 };
	unsigned redirected = 0;
	size_t n;

	for (size_t g = 0; g < 4; g++)
		register_gw(st, four[g], RS_GATEWAY_SERVING, T0 + 1000);
	assert_int_equal(pthread_barrier_init(&barrier, NULL, 4), 0);
	for (size_t g = 0; g < 4; g++) {
		threads[g] = (struct arrivals_thread){ .f = f, .barrier = &barrier, .gw = g };
		assert_int_equal(pthread_create(&tids[g], NULL, arrivals_run, &threads[g]), 0);
	}
	for (size_t g = 0; g < 4; g++) {
		assert_int_equal(pthread_join(tids[g], NULL), 0);
		assert_int_equal(threads[g].err, 0);
		redirected += threads[g].redirected;
	}
	pthread_barrier_destroy(&barrier);
	assert_int_equal(rs_store_list_sessions(st, T0 + 1000, true, &rows, &n), 0);
	assert_int_equal(n, ARRIVALS);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(rows[i].state, RS_SESSION_ACTIVE);
		for (size_t g = 0; g < 4; g++)
			active[g] += strcmp(rows[i].gateway_id, four[g]) == 0;
	}
	free(rows);
	printf("# concurrent arrivals (%s): %u %u %u %u accepted per gateway (cap 50), %u redirected\n",
	       f->env->pg ? "postgres" : "sqlite", active[0], active[1], active[2], active[3], redirected);
	for (size_t g = 0; g < 4; g++)
		assert_true(active[g] <= ARRIVALS / 4);
	rs_store_close(st);
}

/* Many gateways starting at once on an empty store (PostgreSQL): exactly
 * one creates the schema, the others find it (one version row), all open. */
struct opener {
	const char *url;
	pthread_barrier_t *barrier;
	int err;
};

static void *open_run(void *arg)
{
	struct opener *o = arg;
	struct rs_store *st = NULL;

	pthread_barrier_wait(o->barrier);
	o->err = rs_store_open(o->url, &(struct rs_store_options){ .busy_timeout_ms = 60000 }, &st);
	rs_store_close(st);
	return NULL;
}

static void test_concurrent_open(void **state)
{
	struct fixture *f = *state;
	struct opener openers[8];
	pthread_barrier_t barrier;
	pthread_t tids[8];

	assert_int_equal(pthread_barrier_init(&barrier, NULL, 8), 0);
	for (size_t i = 0; i < 8; i++) {
		openers[i] = (struct opener){ .url = f->url, .barrier = &barrier };
		assert_int_equal(pthread_create(&tids[i], NULL, open_run, &openers[i]), 0);
	}
	for (size_t i = 0; i < 8; i++) {
		assert_int_equal(pthread_join(tids[i], NULL), 0);
		if (openers[i].err)
			fail_msg("opener %zu: %d", i, openers[i].err);
	}
	pthread_barrier_destroy(&barrier);
	assert_int_equal(version_rows(f), 1);
}

/* Ends every server connection of the store's handles (application_name
 * ringsteer), as a server restart or an operator would, and waits (up to
 * 10 s) until their backends are gone: a backend leaves pg_stat_activity
 * after it sent its client the FATAL that ends the connection, so the next
 * call on the handle finds it whatever the host's speed.  Returns how many
 * were ended. */
static int64_t pg_kill_handles(const struct fixture *f)
{
	static const char live[] = "SELECT COUNT(*) FROM pg_stat_activity"
				   " WHERE application_name = 'ringsteer' AND datname = current_database()";
	PGconn *c = pg_connect_raw(f->url);
	int64_t n = pg_int(c, "SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity"
			      " WHERE application_name = 'ringsteer' AND datname = current_database()");
	int64_t deadline = monotonic_us() + 10 * 1000000;

	while (pg_int(c, live) > 0) {
		if (monotonic_us() > deadline)
			fail_msg("the terminated backends are still there after 10 s");
		poll(NULL, 0, 5); /* the server offers no wait for another backend's exit */
	}
	PQfinish(c);
	return n;
}

/* A connection the server drops fails the next call with -EIO; the call
 * after reconnects by itself (no reopen), prepared statements and all. */
static void test_pg_reconnect(void **state)
{
	struct fixture *f = *state;
	struct rs_store *st = open_store_ab(f);
	struct rs_gateway_row *rows;
	struct rs_admit a;
	size_t n;

	a = arrival("gw-a", "m-1", 1, true, T0);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_true(pg_kill_handles(f) >= 1);
	a = arrival("gw-a", "m-2", 1, true, T0);
	assert_int_equal(rs_store_admit(st, &a), -EIO);
	assert_false(a.accepted);
	a = arrival("gw-a", "m-2", 1, true, T0);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_true(a.accepted);
	/* A reader finds it the same way. */
	assert_true(pg_kill_handles(f) >= 1);
	assert_int_equal(rs_store_list_gateways(st, T0, false, &rows, &n), -EIO);
	assert_null(rows);
	assert_int_equal(rs_store_list_gateways(st, T0, false, &rows, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(rows[0].supervisors, 2);
	free(rows);
	rs_store_close(st);
}

/* Waits up to ms for fd to be readable; returns whether it is. */
static bool readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1 && (p.revents & (POLLIN | POLLHUP | POLLERR));
}

/* Waits for a notification on st's watch (up to 5 s); returns how many. */
static int wait_notified(struct rs_store *st, int fd)
{
	int64_t deadline = monotonic_us() + 5000000;
	int n = 0;

	while (n == 0 && monotonic_us() < deadline) {
		if (!readable(fd, 100))
			continue;
		n = rs_store_watch_consume(st);
		assert_true(n >= 0);
	}
	return n;
}

/* Changes that matter to placement reach a watcher through LISTEN/NOTIFY;
 * heartbeat-only updates notify nothing; a lost watch connection is -EIO
 * and rs_store_watch() makes a new one. */
static void test_pg_watch(void **state)
{
	struct fixture *f = *state;
	struct rs_store *writer = open_store_ab(f), *watcher = open_store(f), *ro = NULL;
	struct rs_admit a;
	int fd;

	fd = rs_store_watch(watcher);
	assert_true(fd >= 0);
	assert_int_equal(rs_store_watch(watcher), fd);
	assert_int_equal(rs_store_watch_consume(watcher), 0);

	register_gw(writer, "gw-c", RS_GATEWAY_SERVING, T0);
	assert_true(wait_notified(watcher, fd) > 0);
	a = arrival("gw-a", "m-1", 1, true, T0);
	assert_int_equal(rs_store_admit(writer, &a), 0);
	assert_true(wait_notified(watcher, fd) > 0);

	/* Heartbeats, and a re-registration that changes nothing but the
	 * heartbeat: silence. */
	for (int i = 1; i <= 5; i++)
		assert_int_equal(rs_store_heartbeat(writer, "gw-a", T0 + i * 300), 0);
	register_gw(writer, "gw-c", RS_GATEWAY_SERVING, T0 + 2000);
	assert_false(readable(fd, 300));
	assert_int_equal(rs_store_watch_consume(watcher), 0);

	/* What a pin or a placement reads: sandboxes, state, a departure. */
	assert_int_equal(rs_store_session_sandboxes(writer, "gw-a", "m-1", 1, 4), 0);
	assert_true(wait_notified(watcher, fd) > 0);
	assert_int_equal(rs_store_gateway_set_state(writer, "gw-b", RS_GATEWAY_DRAINING), 0);
	assert_true(wait_notified(watcher, fd) > 0);
	assert_int_equal(rs_store_session_end(writer, "gw-a", "m-1", 1), 0);
	assert_true(wait_notified(watcher, fd) > 0);

	/* A read-only handle watches too. */
	assert_int_equal(rs_store_open(f->url, &(struct rs_store_options){ .read_only = true }, &ro), 0);
	int ro_fd = rs_store_watch(ro);

	assert_true(ro_fd >= 0);
	assert_int_equal(rs_store_gateway_remove(writer, "gw-c"), 0);
	assert_true(wait_notified(ro, ro_fd) > 0);
	rs_store_close(ro);
	assert_true(wait_notified(watcher, fd) > 0);

	/* The watch connection lost: -EIO, then a new watch. */
	assert_true(pg_kill_handles(f) >= 1);
	assert_true(readable(fd, 2000));
	assert_int_equal(rs_store_watch_consume(watcher), -EIO);
	assert_int_equal(rs_store_watch_consume(watcher), -EIO); /* until watched again */
	fd = rs_store_watch(watcher);
	assert_true(fd >= 0);
	/* The writer's connection was cut too: its next call fails, then works. */
	assert_int_equal(rs_store_gateway_set_state(writer, "gw-b", RS_GATEWAY_SERVING), -EIO);
	assert_int_equal(rs_store_gateway_set_state(writer, "gw-b", RS_GATEWAY_SERVING), 0);
	assert_true(wait_notified(watcher, fd) > 0);
	rs_store_close(watcher);
	rs_store_close(writer);
}

#define STORE_TEST(fn, env) cmocka_unit_test_prestate_setup_teardown(fn, make_dir, remove_dir, env)

/* The whole suite, on the backend env describes. */
#define STORE_TESTS(env)                                            \
	STORE_TEST(test_urls, env),                                 \
	STORE_TEST(test_schema_and_reopen, env),                    \
	STORE_TEST(test_register_and_list, env),                    \
	STORE_TEST(test_ttl_expiry, env),                           \
	STORE_TEST(test_admit_matches_rule, env),                   \
	STORE_TEST(test_reservation, env),                          \
	STORE_TEST(test_steer, env),                                \
	STORE_TEST(test_reservation_withdraw, env),                 \
	STORE_TEST(test_stale_record_excluded, env),                \
	STORE_TEST(test_stay, env),                                 \
	STORE_TEST(test_fallback_after_failed_redirect, env),       \
	STORE_TEST(test_stay_after_reservation_lapsed, env),        \
	STORE_TEST(test_epochs, env),                               \
	STORE_TEST(test_heartbeat, env),                            \
	STORE_TEST(test_session_end, env),                          \
	STORE_TEST(test_gateway_state_and_get, env),                \
	STORE_TEST(test_handoff_matches_plan, env),                 \
	STORE_TEST(test_handoff_stale, env),                        \
	STORE_TEST(test_handoff_nowhere, env),                      \
	STORE_TEST(test_handoff_never_here, env),                   \
	STORE_TEST(test_handoff_row_lives_with_gateway, env),             \
	STORE_TEST(test_two_handles, env),                          \
	STORE_TEST(test_two_processes, env),                        \
	STORE_TEST(test_busy, env),                                 \
	STORE_TEST(test_dead_store, env),                           \
	STORE_TEST(test_corrupt_rows, env),                         \
	STORE_TEST(test_whatif_matches_admit, env),                 \
	STORE_TEST(test_read_only, env),                            \
	STORE_TEST(test_concurrent_arrivals, env)

/* Runs one statement on the server at base; returns 0 or -1 (said). */
static int pg_admin(const char *base, const char *sql)
{
	PGconn *c = PQconnectdb(base);
	PGresult *res = NULL;
	int ok = PQstatus(c) == CONNECTION_OK;

	PQsetNoticeProcessor(c, pg_quiet, NULL);
	if (ok) {
		res = PQexec(c, sql);
		ok = PQresultStatus(res) == PGRES_COMMAND_OK;
	}
	if (!ok)
		fprintf(stderr, "store: RS_TEST_PG_URL=%s: %s: %s", base, sql, PQerrorMessage(c));
	PQclear(res);
	PQfinish(c);
	return ok ? 0 : -1;
}

/* Makes the pass's own database on the server at base (so two passes, or
 * two builds, never share tables) and points env at it. */
static int pg_pass_begin(const char *base, struct backend_env *env)
{
	char sql[96];

	snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS rs_test_%ld", (long)getpid());
	if (pg_admin(base, sql) != 0)
		return -1;
	snprintf(sql, sizeof(sql), "CREATE DATABASE rs_test_%ld", (long)getpid());
	if (pg_admin(base, sql) != 0)
		return -1;
	snprintf(env->url, sizeof(env->url), "%s%sdbname=rs_test_%ld", base, strchr(base, '?') ? "&" : "?",
		 (long)getpid());
	return 0;
}

static void pg_pass_end(const char *base)
{
	char sql[96];

	snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS rs_test_%ld WITH (FORCE)", (long)getpid());
	pg_admin(base, sql);
}

int main(void)
{
	struct backend_env sqlite_env = { .pg = false }, pg_env = { .pg = true };
	const struct CMUnitTest sqlite_tests[] = {
		STORE_TESTS(&sqlite_env),
		/* Once failed about 1 run in 60: PRAGMA journal_mode=WAL on a
		 * file being created by several openers answered busy without
		 * the busy handler (store_sqlite.c now retries it). */
		STORE_TEST(test_concurrent_open, &sqlite_env),
	};
	const struct CMUnitTest pg_tests[] = {
		STORE_TESTS(&pg_env),
		STORE_TEST(test_concurrent_open, &pg_env),
		STORE_TEST(test_pg_reconnect, &pg_env),
		STORE_TEST(test_pg_watch, &pg_env),
	};
	const char *pg_base = getenv("RS_TEST_PG_URL");
	int failed;

	failed = cmocka_run_group_tests_name("store (sqlite)", sqlite_tests, NULL, NULL);
	if (!pg_base || !pg_base[0]) {
		printf("# store (postgres): SKIPPED, RS_TEST_PG_URL is not set "
		       "(tests/pg/pg_server.sh start DIR prints one; make pg-test does it all)\n");
		return failed;
	}
	if (pg_pass_begin(pg_base, &pg_env) != 0)
		return failed + 1;
	failed += cmocka_run_group_tests_name("store (postgres)", pg_tests, NULL, NULL);
	pg_pass_end(pg_base);
	return failed;
}
