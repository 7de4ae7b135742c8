/* SPDX-License-Identifier: Apache-2.0 */
/* store_pg.c - the PostgreSQL backend ("postgres://..." or
 * "postgresql://...", libpq URIs, e.g. postgres:///db?host=/run/postgresql
 * for a UNIX socket directory): one database shared by the gateways of many
 * nodes.
 *
 * Guarantees:
 * - Writers serialize on one transaction-scoped advisory lock (LOCK_KEY,
 *   released by COMMIT or ROLLBACK, or by the server when a connection
 *   dies) taken right after BEGIN, waiting at most the busy timeout
 *   (SET LOCAL lock_timeout), then -EBUSY.  The transaction is READ
 *   COMMITTED, so once the lock is held every statement sees every earlier
 *   writer's commit: the placement transaction reads counts and writes from
 *   them exactly as on SQLite.  A write of one row that no placement reads
 *   (RS_TXN_WRITE_ROW: a session's sandbox count) takes no advisory lock;
 *   the row's own lock orders it with a placement writing that row, and it
 *   waits for nothing else, so no deadlock can form.  Readers take one REPEATABLE READ READ ONLY
 *   snapshot and never wait for the lock.
 * - Statements are prepared once per connection, lazily, and checked
 *   against the statement table (parameter and column counts).  Parameters
 *   go as text; results come back as text and are typed by the column's
 *   type OID (integers parsed strictly: a value that does not fit is -EIO).
 * - A lost connection is -EIO for the call that finds it; the next begin()
 *   reconnects and statements are prepared again.  A full disk (53100) is
 *   -ENOSPC, a write refused as read-only (25006) -EROFS, damaged data
 *   (XX001, XX002) -EUCLEAN (store_pg_error.h).
 * - Failover: a URL naming several hosts (host=a,b) connects with
 *   target_session_attrs=read-write unless it says otherwise (its own
 *   parameters come last and win), so libpq skips a standby; a connection
 *   whose server answers read-only or in recovery (25006, 57P03, or
 *   in_hot_standby reported on) is -EROFS for that call and dropped at the
 *   next begin(), which connects again: a demoted primary does not keep
 *   the store failing.  A read_only handle asks for read-only sessions
 *   itself and is left alone.
 * - Bounded waits: every round trip (a statement, a prepare, begin, commit)
 *   is sent and read with libpq's asynchronous calls, polling the socket
 *   against a deadline: the busy timeout, or twice it for the write
 *   begin (its lock wait alone may take the busy timeout, which
 *   lock_timeout turns into -EBUSY; the second half is for its answer).
 *   A server that does not answer by then (stopped, a stalled disk) is
 *   -ETIMEDOUT: the statement is cancelled, best effort and without
 *   waiting (store_pg_cancel.h), the connection dropped, and the next
 *   begin() connects again.  Connecting waits connect_timeout: the busy
 *   timeout in whole seconds, at least 2 (libpq's minimum).  Further
 *   timeouts, so a dead network fails the connection itself: TCP
 *   keepalives after 5 s idle, every 2 s, 3 probes, and tcp_user_timeout 10 s (data unacknowledged that long fails the
 *   connection; the kernel would otherwise retransmit for ~15 min) - both
 *   TCP only, a UNIX socket fails at once; statement_timeout = busy timeout
 *   + 10 s and client_connection_check_interval = 1 s, so that the server
 *   itself ends a statement whose client gave up on it.  Parameters given
 *   in the URL win over these (they come after them).
 * - A COMMIT whose answer is lost (the connection broke while it was
 *   outstanding) is read back, not assumed failed (resolve_commit): the
 *   write begin's round trip also returns the transaction's id and WAL
 *   timeline, so normal commits pay no round trip for it.
 * - A write begin's round trip also returns the server's now() (a read
 *   begin's, once a second: SKEW_REFRESH_US): the skew against this
 *   process's wall clock (backend.h, clock) that store.c moves the
 *   callers' times by (store_internal.h, rs_store_now).
 * - Server notices (e.g. "relation already exists, skipping") are counted,
 *   never printed: the gateways log in logfmt.
 * - no_create and read_only never create anything: a database without the
 *   ringsteer schema is -ENOENT ("no store there").  read_only sessions set
 *   default_transaction_read_only, so even a bug cannot write, and never
 *   take the writers' lock.  The database itself is never created.
 * - The watch (LISTEN ringsteer) has a connection of its own: a
 *   notification that arrived while exec() read a result would sit in
 *   libpq's buffer and never make the descriptor readable. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "store_internal.h"
#include "store_pg_cancel.h"
#include "store_pg_error.h"
#include "store_pg_batch.h"
#include "store_pg_hook.h"

/* The writers' advisory lock: "ringster" in ASCII.  Every ringsteer store
 * in one database shares it (only over-serializing, never wrong). */
#define LOCK_KEY 0x72696e6773746572LL

/* Type OIDs (pg_type.h is a server header; these never change). */
#define OID_INT8 20
#define OID_INT2 21
#define OID_INT4 23
#define OID_TEXT 25
#define OID_VARCHAR 1043

#define STATEMENT_TIMEOUT_EXTRA_MS 10000

/* A write transaction's identity, columns 1..3 of its begin's lock
 * statement (no round trip nor statement of its own): its id (xid8, at
 * most 20 digits) and the timeline its WAL is written on (the first 8 hex
 * digits of the WAL file's name), which a lost COMMIT's read-back needs
 * (resolve_commit), and the server's clock. */
#define XACT_COLS "pg_current_xact_id()::text, substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8), " SERVER_MS

/* The server's wall clock in ms: now(), the transaction's start, stamped
 * when BEGIN ran, before any lock wait (so the skew measured from it is
 * not off by the wait). */
#define SERVER_MS "(extract(epoch FROM now()) * 1000)::bigint"
#define XID_MAX_LEN 20
#define TIMELINE_LEN 8

/* A read begin has no statement to fold the clock into: it adds one (in
 * the same round trip) only when the last measure is older than this, so
 * that a stream of reads costs one a second, not one each. */
#define SKEW_REFRESH_US 1000000

/* How often a lost COMMIT still in progress on the server is asked about
 * again, its old backend terminated in between. */
#define RESOLVE_ROUNDS 3

/* Connection keywords we set, then the URL (dbname, expanded) last. */
enum {
	KW_CONNECT_TIMEOUT,
	KW_KEEPALIVES,
	KW_KEEPALIVES_IDLE,
	KW_KEEPALIVES_INTERVAL,
	KW_KEEPALIVES_COUNT,
	KW_TCP_USER_TIMEOUT,
	KW_APPLICATION_NAME,
	KW_OPTIONS,
	KW_TARGET_SESSION_ATTRS,
	KW_DBNAME,
	KW_COUNT
};

struct rs_db {
	PGconn *conn;
	PGconn *watch;
	char *error;        /* the store's reason (backend.h, open): libpq's words */
	bool read_only;
	bool stale;         /* conn answered read-only: dropped at the next begin() */
	bool multi_host;    /* the URL names several hosts (libpq tries them in order) */
	uint32_t busy_timeout_ms;
	bool prepared[RS_STMT_COUNT];
	const char *keys[KW_COUNT + 1];
	const char *vals[KW_COUNT + 1];
	char *url;          /* the URL, scheme lower-cased (libpq wants it so) */
	char options[160];  /* -c settings for every session */
	char connect_timeout[16];
	char *buf;          /* parameter texts of the running statement */
	size_t buf_cap;
	uint64_t notices;
	uint64_t fatal_notices;
	bool committing;    /* the round trip running is a COMMIT */
	char xid[XID_MAX_LEN + 1];       /* the open write transaction's id, "" none */
	char timeline[TIMELINE_LEN + 1]; /* its WAL's timeline */
	int64_t skew_ms;    /* server clock - ours, at the last measure */
	int64_t skew_at_us; /* when (monotonic) */
	bool skew_known;    /* measured on this connection */
	rs_pg_wall_clock_fn wall_clock; /* the test seam (store_pg_hook.h); NULL: CLOCK_REALTIME */
	void *wall_clock_ctx;
	rs_pg_commit_sent_fn commit_sent; /* the test seam (store_pg_hook.h) */
	void *commit_sent_ctx;
};

/* Notices are counted.  An idle connection also gets the server's last
 * words (FATAL: terminated, shutting down) as a notice, maybe before its
 * end of file: on the watch connection, that ends the watch. */
static void on_notice(void *arg, const PGresult *res)
{
	struct rs_db *db = arg;
	const char *severity = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);

	db->notices++;
	if (severity && (strcmp(severity, "FATAL") == 0 || strcmp(severity, "PANIC") == 0))
		db->fatal_notices++;
}

/* Keeps libpq's last message on conn as the store's reason (when it has
 * one: a timeout leaves none). */
static void note_conn(struct rs_db *db, PGconn *conn)
{
	const char *msg = conn ? PQerrorMessage(conn) : NULL;

	if (msg && *msg)
		rs_store_error_set(db->error, "%s", msg);
}

/* Keeps the reason of a failed result (res may be NULL): the server's
 * primary message (no "ERROR:" and no context lines), else libpq's. */
static void note_result(struct rs_db *db, PGconn *conn, const PGresult *res)
{
	const char *primary = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	const char *msg = res ? PQresultErrorMessage(res) : NULL;

	if (primary && *primary)
		rs_store_error_set(db->error, "%s", primary);
	else if (msg && *msg)
		rs_store_error_set(db->error, "%s", msg);
	else
		note_conn(db, conn);
}

/* The error for a failed result (res may be NULL).  A connection found
 * broken is -EIO and stays broken until the next begin() resets it. */
static int result_error(PGconn *conn, const PGresult *res)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

	if (!res)
		return PQstatus(conn) == CONNECTION_OK ? -ENOMEM : -EIO;
	if (PQstatus(conn) != CONNECTION_OK || !state)
		return -EIO;
	return rs_pg_sqlstate_error(state);
}

/* result_error(), and a connection whose server is read-only or in
 * recovery (a standby, a demoted primary: store_pg_error.h) marked stale,
 * so that the next begin() drops it and connects again, where libpq's
 * target_session_attrs=read-write finds the writable host of several.  A
 * read_only handle asked for read-only sessions itself: it keeps them. */
static int judge(struct rs_db *db, PGconn *conn, const PGresult *res)
{
	const char *hot = PQparameterStatus(conn, "in_hot_standby");

	if (conn == db->conn && res && !db->read_only &&
	    (rs_pg_sqlstate_drops(PQresultErrorField(res, PG_DIAG_SQLSTATE)) || (hot && strcmp(hot, "on") == 0)))
		db->stale = true;
	note_result(db, conn, res);
	return result_error(conn, res);
}

static int64_t monotonic_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Polls conn's socket for events until the deadline: 0 (ready, or a
 * signal: the caller looks again), -ETIMEDOUT, -EIO. */
static int wait_socket(PGconn *conn, short events, int64_t deadline_us)
{
	struct pollfd p = { .fd = PQsocket(conn), .events = events };
	int64_t left_ms = (deadline_us - monotonic_us() + 999) / 1000;

	if (p.fd < 0)
		return -EIO;
	if (left_ms <= 0)
		return -ETIMEDOUT;
	if (poll(&p, 1, left_ms > INT_MAX ? INT_MAX : (int)left_ms) < 0 && errno != EINTR)
		return -EIO;
	return 0;
}

/* Sends what libpq still buffers of the round trip just queued. */
static int flush_query(PGconn *conn, int64_t deadline_us)
{
	for (;;) {
		int rc = PQflush(conn), err;

		if (rc == 0)
			return 0;
		if (rc < 0)
			return -EIO;
		err = wait_socket(conn, POLLIN | POLLOUT, deadline_us);
		if (err)
			return err;
		if (!PQconsumeInput(conn)) /* the server may answer before we finish */
			return -EIO;
	}
}

/* Reads until a result can be taken without blocking. */
static int wait_result(PGconn *conn, int64_t deadline_us)
{
	for (;;) {
		int err;

		if (!PQconsumeInput(conn))
			return -EIO;
		if (!PQisBusy(conn))
			return 0;
		err = wait_socket(conn, POLLIN, deadline_us);
		if (err)
			return err;
	}
}

static bool is_error(const PGresult *res)
{
	ExecStatusType st = PQresultStatus(res);

	return st == PGRES_FATAL_ERROR || st == PGRES_BAD_RESPONSE || st == PGRES_NONFATAL_ERROR;
}

/* Drops db's connection conn (db->conn or db->watch) after a round trip
 * timed out, asking the server to cancel what it runs (never waiting). */
static void abandon(struct rs_db *db, PGconn *conn)
{
	rs_pg_cancel_detached(conn);
	PQfinish(conn);
	if (conn == db->conn) {
		db->conn = NULL;
		memset(db->prepared, 0, sizeof(db->prepared));
	} else if (conn == db->watch) {
		db->watch = NULL;
	}
}

/* Completes the round trip just queued on conn (queued: what PQsend*
 * returned): sends it and reads every result, all within wait_ms.  *res
 * receives the result to judge, as PQexec() would return it (the first
 * error, else the last; NULL when none came).  Returns 0, -EIO (not
 * queued, or the connection failed: *res NULL, conn still the caller's) or
 * -ETIMEDOUT (conn abandoned: freed, never to be used again). */
static int round_trip(struct rs_db *db, PGconn *conn, int queued, uint32_t wait_ms, PGresult **res)
{
	int64_t deadline = monotonic_us() + (int64_t)wait_ms * 1000;
	PGresult *r;
	int err;

	*res = NULL;
	if (!queued) {
		note_conn(db, conn);
		return -EIO;
	}
	err = flush_query(conn, deadline);
	if (!err && db->committing && db->commit_sent)
		db->commit_sent(db->commit_sent_ctx, PQsocket(conn));
	while (!err) {
		err = wait_result(conn, deadline);
		if (err)
			break;
		r = PQgetResult(conn);
		if (!r)
			return 0;
		if (*res && is_error(*res)) {
			PQclear(r);
		} else {
			PQclear(*res);
			*res = r;
		}
	}
	PQclear(*res);
	*res = NULL;
	if (err == -ETIMEDOUT)
		abandon(db, conn);
	else
		note_conn(db, conn);
	return err;
}

/* Runs sql (no parameters) on conn within wait_ms and checks it ended with
 * status want. */
static int simple_wait(struct rs_db *db, PGconn *conn, const char *sql, ExecStatusType want, uint32_t wait_ms)
{
	PGresult *res;
	int err = round_trip(db, conn, PQsendQuery(conn, sql), wait_ms, &res);

	if (err)
		return err;
	err = res && PQresultStatus(res) == want ? 0 : judge(db, conn, res);
	PQclear(res);
	return err;
}

static int simple(struct rs_db *db, PGconn *conn, const char *sql, ExecStatusType want)
{
	return simple_wait(db, conn, sql, want, db->busy_timeout_ms);
}

/* A new connection with db's parameters, notices counted, non-blocking
 * (round_trip() waits on it); NULL if none. */
static PGconn *connect_db(struct rs_db *db)
{
	PGconn *conn = PQconnectdbParams(db->keys, db->vals, 1);

	if (!conn)
		return NULL;
	PQsetNoticeReceiver(conn, on_notice, db);
	if (PQstatus(conn) != CONNECTION_OK || PQsetnonblocking(conn, 1) != 0) {
		note_conn(db, conn);
		PQfinish(conn);
		return NULL;
	}
	return conn;
}

/* Makes db->conn usable: reconnects a connection found broken. */
static int ensure_connected(struct rs_db *db)
{
	if (db->conn && PQstatus(db->conn) == CONNECTION_OK && !db->stale)
		return 0;
	db->stale = false;
	db->skew_known = false; /* maybe another server: measured again */
	memset(db->prepared, 0, sizeof(db->prepared));
	if (db->conn)
		PQfinish(db->conn);
	db->conn = connect_db(db);
	return db->conn ? 0 : -EIO;
}

static void pg_close(struct rs_db *db)
{
	if (!db)
		return;
	if (db->conn)
		PQfinish(db->conn);
	if (db->watch)
		PQfinish(db->watch);
	free(db->url);
	free(db->buf);
	free(db);
}

/* Checks url is a libpq URI and copies it with its scheme lower-cased
 * (store.c matched the scheme case-insensitively; libpq does not). */
static int copy_url(const char *url, char *error, char **out, bool *multi_host)
{
	const char *colon = strchr(url, ':');
	PQconninfoOption *parsed;
	char *errmsg = NULL;
	char *copy;

	if (!colon || strncmp(colon, "://", 3) != 0)
		return -EINVAL; /* libpq would take "postgres:x" for a database name */
	copy = strdup(url);
	if (!copy)
		return -ENOMEM;
	for (char *p = copy; *p != ':'; p++)
		*p = (char)tolower((unsigned char)*p);
	parsed = PQconninfoParse(copy, &errmsg);
	if (!parsed) {
		free(copy);
		if (!errmsg)
			return -ENOMEM;
		rs_store_error_set(error, "%s", errmsg);
		PQfreemem(errmsg);
		return -EINVAL;
	}
	for (PQconninfoOption *o = parsed; o->keyword; o++)
		if ((strcmp(o->keyword, "host") == 0 || strcmp(o->keyword, "hostaddr") == 0) && o->val &&
		    strchr(o->val, ','))
			*multi_host = true;
	PQconninfoFree(parsed);
	*out = copy;
	return 0;
}

/* Whether the ringsteer schema is there: 0, -ENOENT, or an error. */
static int schema_present(struct rs_db *db, PGconn *conn)
{
	PGresult *res;
	int err;

	err = round_trip(db, conn, PQsendQuery(conn, "SELECT to_regclass('schema_version') IS NOT NULL"),
			 db->busy_timeout_ms, &res);
	if (err)
		return err == -ETIMEDOUT ? -EIO : err;
	if (!res || PQresultStatus(res) != PGRES_TUPLES_OK)
		err = judge(db, conn, res);
	else if (PQntuples(res) != 1 || PQnfields(res) != 1)
		err = -EIO;
	else
		err = strcmp(PQgetvalue(res, 0, 0), "t") == 0 ? 0 : -ENOENT;
	PQclear(res);
	return err;
}

/* Our connection parameters, then the URL: with expand_dbname libpq
 * expands the URL in place, so what it says overrides these defaults. */
static void set_params(struct rs_db *db)
{
	static const char *const keys[KW_COUNT] = {
		[KW_CONNECT_TIMEOUT] = "connect_timeout",   [KW_KEEPALIVES] = "keepalives",
		[KW_KEEPALIVES_IDLE] = "keepalives_idle",   [KW_KEEPALIVES_INTERVAL] = "keepalives_interval",
		[KW_KEEPALIVES_COUNT] = "keepalives_count", [KW_TCP_USER_TIMEOUT] = "tcp_user_timeout",
		[KW_APPLICATION_NAME] = "application_name", [KW_OPTIONS] = "options",
		[KW_TARGET_SESSION_ATTRS] = "target_session_attrs", [KW_DBNAME] = "dbname",
	};
	const char *vals[KW_COUNT] = {
		[KW_CONNECT_TIMEOUT] = db->connect_timeout, [KW_KEEPALIVES] = "1",          [KW_KEEPALIVES_IDLE] = "5",
		[KW_KEEPALIVES_INTERVAL] = "2", [KW_KEEPALIVES_COUNT] = "3", [KW_TCP_USER_TIMEOUT] = "10000",
		[KW_APPLICATION_NAME] = "ringsteer", [KW_OPTIONS] = db->options,
		/* libpq ignores an empty value: one host, or a read-only handle */
		[KW_TARGET_SESSION_ATTRS] = db->multi_host && !db->read_only ? "read-write" : "",
		[KW_DBNAME] = db->url,
	};
	for (size_t i = 0; i < KW_COUNT; i++) {
		db->keys[i] = keys[i];
		db->vals[i] = vals[i];
	}
}

static int pg_open(const char *url, const struct rs_store_options *opt, char *error, struct rs_db **out)
{
	struct rs_db *db;
	uint64_t statement_ms;
	int err;

	*out = NULL;
	db = calloc(1, sizeof(*db));
	if (!db)
		return -ENOMEM;
	db->error = error;
	err = copy_url(url, error, &db->url, &db->multi_host);
	if (err)
		goto cleanup;
	db->read_only = opt->read_only;
	db->busy_timeout_ms = opt->busy_timeout_ms ? opt->busy_timeout_ms : 1;
	statement_ms = (uint64_t)db->busy_timeout_ms + STATEMENT_TIMEOUT_EXTRA_MS;
	if (statement_ms > INT_MAX)
		statement_ms = INT_MAX;
	snprintf(db->options, sizeof(db->options),
		 "-c statement_timeout=%" PRIu64 " -c client_connection_check_interval=1000%s", statement_ms,
		 db->read_only ? " -c default_transaction_read_only=on" : "");
	snprintf(db->connect_timeout, sizeof(db->connect_timeout), "%" PRIu32,
		 db->busy_timeout_ms < 2000 ? 2 : (db->busy_timeout_ms + 999) / 1000);
	set_params(db);
	db->conn = connect_db(db);
	if (!db->conn) {
		err = -EIO;
		goto cleanup;
	}
	if (opt->no_create || opt->read_only) {
		err = schema_present(db, db->conn);
		if (err)
			goto cleanup;
	}
	*out = db;
	return 0;
cleanup:
	pg_close(db);
	return err;
}

static void pg_rollback(struct rs_db *db)
{
	PGTransactionStatusType ts;

	db->xid[0] = '\0';
	/* A broken connection has nothing to roll back: the server did. */
	if (!db->conn || PQstatus(db->conn) != CONNECTION_OK)
		return;
	ts = PQtransactionStatus(db->conn);
	if (ts == PQTRANS_INTRANS || ts == PQTRANS_INERROR)
		simple(db, db->conn, "ROLLBACK", PGRES_COMMAND_OK);
}

/* Copies column c of res's one row into dst[max + 1]: 1..max characters,
 * each in allowed; -EIO otherwise. */
static int copy_token(const PGresult *res, int c, const char *allowed, char *dst, size_t max)
{
	const char *v;
	int len;

	if (PQntuples(res) != 1 || PQnfields(res) <= c || PQgetisnull(res, 0, c))
		return -EIO;
	v = PQgetvalue(res, 0, c);
	len = PQgetlength(res, 0, c);
	if (!v || len <= 0 || (size_t)len > max || strspn(v, allowed) != (size_t)len)
		return -EIO;
	memcpy(dst, v, (size_t)len);
	dst[len] = '\0';
	return 0;
}

static int parse_int(const char *s, size_t len, int64_t *out);

static int64_t wall_ms(const struct rs_db *db)
{
	struct timespec ts;

	if (db->wall_clock)
		return db->wall_clock(db->wall_clock_ctx);
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Takes the server's clock from column c of a begin's one row against
 * ours when the begin was sent (sent_ms). */
static int read_skew(struct rs_db *db, const PGresult *res, int c, int64_t sent_ms)
{
	int64_t server_ms;

	if (PQntuples(res) != 1 || PQnfields(res) <= c || PQgetisnull(res, 0, c) ||
	    parse_int(PQgetvalue(res, 0, c), (size_t)PQgetlength(res, 0, c), &server_ms) != 0 ||
	    (sent_ms < 0 && server_ms > INT64_MAX + sent_ms) || (sent_ms > 0 && server_ms < INT64_MIN + sent_ms))
		return -EIO;
	db->skew_ms = server_ms - sent_ms;
	db->skew_at_us = monotonic_us();
	db->skew_known = true;
	return 0;
}

static int pg_begin(struct rs_db *db, enum rs_txn kind)
{
	char sql[384];
	PGresult *res;
	int64_t sent_ms;
	bool write = kind != RS_TXN_READ && !db->read_only;
	bool measure;
	int err = ensure_connected(db);

	db->xid[0] = '\0';
	if (err)
		return err;
	measure = write || !db->skew_known || monotonic_us() - db->skew_at_us > SKEW_REFRESH_US;
	if (!write && !measure)
		return simple(db, db->conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", PGRES_COMMAND_OK);
	/* One round trip; the transaction's identity and the server's clock
	 * are the last result. */
	if (!write)
		snprintf(sql, sizeof(sql), "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SELECT " SERVER_MS);
	else if (kind == RS_TXN_WRITE)
		snprintf(sql, sizeof(sql),
			 "BEGIN; SET LOCAL lock_timeout = '%" PRIu32 "ms'; SELECT pg_advisory_xact_lock(%lld), " XACT_COLS,
			 db->busy_timeout_ms, (long long)LOCK_KEY);
	else /* RS_TXN_WRITE_ROW: the same columns, no writers' lock (a NULL in its place) */
		snprintf(sql, sizeof(sql), "BEGIN; SET LOCAL lock_timeout = '%" PRIu32 "ms'; SELECT NULL, " XACT_COLS,
			 db->busy_timeout_ms);
	sent_ms = wall_ms(db);
	/* The lock wait may take the busy timeout (then -EBUSY): its answer
	 * gets as long again before the server counts as not answering. */
	err = round_trip(db, db->conn, PQsendQuery(db->conn, sql),
			 !write ? db->busy_timeout_ms
				: db->busy_timeout_ms > UINT32_MAX / 2 ? UINT32_MAX : 2 * db->busy_timeout_ms, &res);
	if (!err && (!res || PQresultStatus(res) != PGRES_TUPLES_OK))
		err = judge(db, db->conn, res);
	else if (!err && !write)
		err = read_skew(db, res, 0, sent_ms);
	else if (!err && (copy_token(res, 1, "0123456789", db->xid, XID_MAX_LEN) != 0 ||
			  copy_token(res, 2, "0123456789ABCDEF", db->timeline, TIMELINE_LEN) != 0 ||
			  read_skew(db, res, 3, sent_ms) != 0))
		err = -EIO;
	PQclear(res);
	if (err)
		pg_rollback(db);
	return err;
}

static int pg_clock(struct rs_db *db, int64_t *skew_ms)
{
	if (!db->skew_known)
		return -ENOENT;
	*skew_ms = db->skew_ms;
	return 0;
}

/* Runs sql with text params[n] on db->conn: its one row's column 0 into
 * out[size] ("" for NULL), column 1 (if any) into tl[TIMELINE_LEN + 1].
 * Returns 0 or an error. */
static int ask(struct rs_db *db, const char *sql, int n, const char *const *params, char *out, size_t size,
	       char *tl)
{
	PGresult *res;
	int err;

	err = round_trip(db, db->conn, PQsendQueryParams(db->conn, sql, n, NULL, params, NULL, NULL, 0),
			 db->busy_timeout_ms, &res);
	if (err)
		return err;
	if (!res || PQresultStatus(res) != PGRES_TUPLES_OK)
		err = judge(db, db->conn, res);
	else if (PQntuples(res) != 1 || (tl && copy_token(res, 1, "0123456789ABCDEF", tl, TIMELINE_LEN) != 0))
		err = -EIO;
	else if (PQgetisnull(res, 0, 0) || (size_t)PQgetlength(res, 0, 0) >= size)
		out[0] = '\0';
	else
		snprintf(out, size, "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	return err;
}

/* A COMMIT sent on a connection that broke before its answer came: the
 * server may or may not have committed.  Reads the outcome back on a new
 * connection: pg_xact_status(xid) 'committed' is success (0); 'aborted' is
 * the failure it looked like (-EIO).  'in progress' means the old backend
 * has not ended yet (the COMMIT still on its way, or the server not yet
 * aware its client is gone): that backend, found by its pid and this
 * transaction's id both (never a stranger), is terminated, waiting up to a
 * second, and the status asked again; after RESOLVE_ROUNDS it is still
 * unknown and reported -EIO (the caller's degraded path copes with a row
 * that turns up later, as with any write it thinks failed).  The answer
 * counts only from the same WAL timeline the transaction was written on:
 * a promoted standby (a new timeline) may never have had this xid, or
 * have given it to another transaction since, so there nothing is
 * believed (-EIO), nor when no connection can be made, nor on any error
 * (an xid "in the future": the server never saw it). */
static int resolve_commit(struct rs_db *db, int old_pid)
{
	char xid32[16], pid[16], status[16], tl[TIMELINE_LEN + 1];
	const char *params[2] = { db->xid, xid32 };
	const char *kill[2] = { pid, xid32 };
	int err;

	/* backend_xid is the 32-bit xid: the xid8's low half. */
	snprintf(xid32, sizeof(xid32), "%llu", strtoull(db->xid, NULL, 10) & 0xffffffffULL);
	snprintf(pid, sizeof(pid), "%d", old_pid);
	if (ensure_connected(db) != 0)
		return -EIO;
	for (int round = 0; round < RESOLVE_ROUNDS; round++) {
		err = ask(db, "SELECT pg_xact_status($1::xid8), substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8)", 1,
			  params, status, sizeof(status), tl);
		if (err || strcmp(tl, db->timeline) != 0)
			return -EIO;
		if (strcmp(status, "committed") == 0)
			return 0;
		if (strcmp(status, "in progress") != 0)
			return -EIO; /* aborted, or NULL: not known to have committed */
		err = ask(db, "SELECT COUNT(pg_terminate_backend(pid, 1000)) FROM pg_stat_activity"
			      " WHERE pid = $1::int AND backend_xid = $2::xid", 2, kill, status, sizeof(status), NULL);
		if (err)
			return -EIO;
	}
	return -EIO;
}

/* A COMMIT whose answer is lost (the connection broke while it was
 * outstanding) is resolved by reading back (resolve_commit), for a write
 * transaction (a read one has nothing to lose).  One that timed out is
 * not: that server is not answering, and asking it again would make the
 * caller wait the busy timeout once more; it is -ETIMEDOUT as before. */
static int pg_commit(struct rs_db *db)
{
	PGresult *res;
	int pid, err;

	if (!db->conn) {
		db->xid[0] = '\0';
		return -EIO;
	}
	pid = PQbackendPID(db->conn);
	db->committing = true;
	err = round_trip(db, db->conn, PQsendQuery(db->conn, "COMMIT"), db->busy_timeout_ms, &res);
	db->committing = false;
	/* COMMIT of an aborted transaction "succeeds" saying ROLLBACK. */
	if (!err && res && PQresultStatus(res) == PGRES_COMMAND_OK)
		err = strcmp(PQcmdStatus(res), "COMMIT") == 0 ? 0 : -EIO;
	else if (!err)
		err = judge(db, db->conn, res);
	PQclear(res);
	if (err == -EIO && db->xid[0] && db->conn && PQstatus(db->conn) != CONNECTION_OK)
		err = resolve_commit(db, pid);
	else if (err)
		pg_rollback(db);
	db->xid[0] = '\0';
	return err;
}

static void stmt_name(enum rs_stmt id, char *name, size_t size)
{
	snprintf(name, size, "rs_stmt_%u", (unsigned)id);
}

/* Prepares statement id on this connection once, and checks it against
 * the table: a mismatch is a bug, reported as I/O. */
static int prepare(struct rs_db *db, enum rs_stmt id)
{
	const struct rs_stmt_def *def = &rs_store_stmts[id];
	char name[32];
	PGresult *res;
	int err;

	if (db->prepared[id])
		return 0;
	if (def->n_params > RS_STMT_MAX_PARAMS || def->n_cols > RS_STMT_MAX_COLS)
		return -EIO;
	stmt_name(id, name, sizeof(name));
	err = round_trip(db, db->conn, PQsendPrepare(db->conn, name, def->sql, (int)def->n_params, NULL),
			 db->busy_timeout_ms, &res);
	if (err)
		return err;
	err = res && PQresultStatus(res) == PGRES_COMMAND_OK ? 0 : judge(db, db->conn, res);
	PQclear(res);
	if (err)
		return err;
	err = round_trip(db, db->conn, PQsendDescribePrepared(db->conn, name), db->busy_timeout_ms, &res);
	if (err)
		return err;
	if (!res || PQresultStatus(res) != PGRES_COMMAND_OK)
		err = judge(db, db->conn, res);
	else if ((unsigned)PQnparams(res) != def->n_params || (unsigned)PQnfields(res) != def->n_cols)
		err = -EIO;
	PQclear(res);
	if (err)
		return err;
	db->prepared[id] = true;
	return 0;
}

/* Renders params as NUL-terminated texts in db->buf; values[k] points
 * there (NULL for SQL NULL). */
static int param_texts(struct rs_db *db, unsigned n, const struct rs_db_value *params, const char **values)
{
	size_t need = 0, at = 0;

	for (unsigned k = 0; k < n; k++) {
		const struct rs_db_value *v = &params[k];

		if (v->type == RS_DB_INT)
			need += 24;
		else if (v->type == RS_DB_TEXT) {
			/* Text cannot hold a NUL in PostgreSQL; the caller checks ids. */
			if ((!v->s && v->len) || (v->len && memchr(v->s, '\0', v->len)) || v->len > SIZE_MAX / 2)
				return -EINVAL;
			need += v->len + 1;
		} else if (v->type != RS_DB_NULL)
			return -EINVAL;
	}
	if (need > db->buf_cap) {
		char *buf = realloc(db->buf, need);

		if (!buf)
			return -ENOMEM;
		db->buf = buf;
		db->buf_cap = need;
	}
	for (unsigned k = 0; k < n; k++) {
		const struct rs_db_value *v = &params[k];

		values[k] = NULL;
		if (v->type == RS_DB_INT) {
			values[k] = db->buf + at;
			at += (size_t)snprintf(db->buf + at, 24, "%" PRId64, v->i) + 1;
		} else if (v->type == RS_DB_TEXT) {
			values[k] = db->buf + at;
			if (v->len)
				memcpy(db->buf + at, v->s, v->len);
			db->buf[at + v->len] = '\0';
			at += v->len + 1;
		}
	}
	return 0;
}

/* Parses a decimal integer exactly: an optional '-', then 1..19 digits,
 * nothing else, within int64_t. */
static int parse_int(const char *s, size_t len, int64_t *out)
{
	bool neg = len > 0 && s[0] == '-';
	size_t i = neg ? 1 : 0;
	int64_t v = 0; /* accumulated negative: INT64_MIN has no positive twin */

	if (i == len || len - i > 19)
		return -EIO;
	for (; i < len; i++) {
		int d;

		if (s[i] < '0' || s[i] > '9')
			return -EIO;
		d = s[i] - '0';
		if (v < (INT64_MIN + d) / 10)
			return -EIO;
		v = v * 10 - d;
	}
	if (!neg && v == INT64_MIN)
		return -EIO;
	*out = neg ? v : -v;
	return 0;
}

static int read_row(const PGresult *res, int r, unsigned n, struct rs_db_value *cols)
{
	for (unsigned c = 0; c < n; c++) {
		struct rs_db_value *v = &cols[c];
		const char *s = PQgetvalue(res, r, (int)c);
		int len = PQgetlength(res, r, (int)c);

		memset(v, 0, sizeof(*v));
		if (PQgetisnull(res, r, (int)c)) {
			v->type = RS_DB_NULL;
			continue;
		}
		if (!s || len < 0)
			return -EIO;
		switch (PQftype(res, (int)c)) {
		case OID_INT2:
		case OID_INT4:
		case OID_INT8:
			v->type = RS_DB_INT;
			if (parse_int(s, (size_t)len, &v->i) != 0)
				return -EIO;
			break;
		case OID_TEXT:
		case OID_VARCHAR:
			v->type = RS_DB_TEXT;
			v->s = s;
			v->len = (size_t)len;
			break;
		default:
			v->type = RS_DB_OTHER;
			break;
		}
	}
	return 0;
}

static int pg_exec(struct rs_db *db, enum rs_stmt id, const struct rs_db_value *params, rs_db_row_fn on_row,
		   void *ctx, uint64_t *changes)
{
	const struct rs_stmt_def *def;
	const char *values[RS_STMT_MAX_PARAMS];
	struct rs_db_value cols[RS_STMT_MAX_COLS];
	ExecStatusType status;
	PGresult *res;
	char name[32];
	int err;

	if ((unsigned)id >= RS_STMT_COUNT || (rs_store_stmts[id].n_params && !params))
		return -EINVAL;
	def = &rs_store_stmts[id];
	if (!db->conn || PQstatus(db->conn) != CONNECTION_OK) {
		note_conn(db, db->conn);
		return -EIO;
	}
	err = prepare(db, id);
	if (err)
		return err;
	err = param_texts(db, def->n_params, params, values);
	if (err)
		return err;
	stmt_name(id, name, sizeof(name));
	err = round_trip(db, db->conn, PQsendQueryPrepared(db->conn, name, (int)def->n_params, values, NULL, NULL, 0),
			 db->busy_timeout_ms, &res);
	if (err)
		return err;
	status = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
	if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
		err = judge(db, db->conn, res);
		goto cleanup;
	}
	if (status == PGRES_TUPLES_OK && (unsigned)PQnfields(res) != def->n_cols) {
		err = -EIO;
		goto cleanup;
	}
	if (changes) {
		const char *tuples = PQcmdTuples(res);
		int64_t count;

		if (parse_int(tuples, strlen(tuples), &count) != 0 || count < 0) {
			err = -EIO;
			goto cleanup;
		}
		*changes = (uint64_t)count;
	}
	if (status == PGRES_TUPLES_OK && on_row) {
		int rows = PQntuples(res);

		for (int r = 0; !err && r < rows; r++) {
			err = read_row(res, r, def->n_cols, cols);
			if (!err)
				err = on_row(ctx, cols, def->n_cols);
		}
	}
cleanup:
	PQclear(res);
	return err;
}

static int pg_watch(struct rs_db *db)
{
	PGconn *conn;
	int err;

	if (db->watch && PQstatus(db->watch) == CONNECTION_OK)
		return PQsocket(db->watch);
	if (db->watch) {
		PQfinish(db->watch);
		db->watch = NULL;
	}
	conn = connect_db(db);
	if (!conn)
		return -EIO;
	err = simple(db, conn, "LISTEN ringsteer", PGRES_COMMAND_OK);
	if (err == -ETIMEDOUT)
		return -EIO; /* conn abandoned (freed) */
	if (!err && PQsocket(conn) < 0)
		err = -EIO;
	if (err) {
		PQfinish(conn);
		return -EIO;
	}
	db->watch = conn;
	return PQsocket(conn);
}

/* Reads everything the watch socket has now, without blocking.  One read
 * may end at a message boundary with more queued (a server's goodbye is an
 * error message, then end of file): read until the socket is empty, or the
 * connection is found broken.  Returns whether it is still up. */
static bool drain_socket(struct rs_db *db, PGconn *conn)
{
	/* Only this connection reads now: a FATAL counted meanwhile is its. */
	uint64_t fatal_before = db->fatal_notices;

	for (int i = 0; i < 64; i++) {
		struct pollfd p = { .fd = PQsocket(conn), .events = POLLIN };

		if (!PQconsumeInput(conn))
			return false;
		PQisBusy(conn); /* parses what was read: notices, notifications */
		if (PQstatus(conn) != CONNECTION_OK || db->fatal_notices != fatal_before)
			return false;
		if (p.fd < 0 || poll(&p, 1, 0) != 1)
			break;
	}
	return PQstatus(conn) == CONNECTION_OK;
}

static int pg_watch_consume(struct rs_db *db)
{
	PGnotify *note;
	int n = 0;

	if (!db->watch)
		return -EIO;
	if (!drain_socket(db, db->watch)) {
		PQfinish(db->watch);
		db->watch = NULL;
		return -EIO;
	}
	while ((note = PQnotifies(db->watch)) != NULL) {
		PQfreemem(note);
		if (n < INT_MAX)
			n++;
	}
	return n;
}

int rs_store_pg_set_commit_hook(struct rs_store *st, rs_pg_commit_sent_fn fn, void *ctx)
{
	if (!st || st->be != &rs_store_pg_backend)
		return -EINVAL;
	st->db->commit_sent = fn;
	st->db->commit_sent_ctx = ctx;
	return 0;
}

int rs_store_pg_set_wall_clock(struct rs_store *st, rs_pg_wall_clock_fn fn, void *ctx)
{
	if (!st || st->be != &rs_store_pg_backend)
		return -EINVAL;
	st->db->wall_clock = fn;
	st->db->wall_clock_ctx = ctx;
	return 0;
}

const struct rs_store_backend rs_store_pg_backend = {
	.scheme = "postgres",
	.open = pg_open,
	.close = pg_close,
	.begin = pg_begin,
	.commit = pg_commit,
	.rollback = pg_rollback,
	.exec = pg_exec,
	.watch = pg_watch,
	.watch_consume = pg_watch_consume,
	.clock = pg_clock,
	.read_sessions = rs_pg_read_sessions,
	.write_sessions = rs_pg_write_sessions,
};
