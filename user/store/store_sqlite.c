/* SPDX-License-Identifier: Apache-2.0 */
/* store_sqlite.c - the SQLite backend ("sqlite:PATH"): one database file
 * shared by every gateway process on a host.
 *
 * Guarantees: WAL journal (readers never wait for the writer) with
 * synchronous=NORMAL; write transactions are BEGIN IMMEDIATE, so they take
 * the database's single write lock before reading anything and two
 * gateways deciding at once run one after the other, the second waiting up
 * to the busy timeout (in short sleeps, so waiters interleave with a busy
 * writer instead of starving) and then failing with -EBUSY; a full disk
 * (SQLITE_FULL) is -ENOSPC, a write to a read-only file or handle
 * (SQLITE_READONLY) -EROFS, a damaged file (SQLITE_CORRUPT, SQLITE_NOTADB)
 * -EUCLEAN, so that an operator is told which of them needs a person;
 * every other SQLite failure is -EIO (-ENOMEM for its out-of-memory).  Statements are prepared
 * once per connection and kept.  The file's directory is never created,
 * except the default one (/var/lib/ringsteer, mode 0750), which a fresh
 * host may lack.  With no_create or read_only nothing is created at all (a
 * missing file is -ENOENT); read_only opens the file read-only, leaves its
 * journal mode alone (changing it is a write) and begins every transaction
 * deferred, so an inspecting tool never holds the writers' lock. */
#include <errno.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "backend.h"

enum txn_stmt {
	TXN_BEGIN_READ,
	TXN_BEGIN_WRITE,
	TXN_COMMIT,
	TXN_ROLLBACK,
	TXN_COUNT
};

static const char *const txn_sql[TXN_COUNT] = {
	[TXN_BEGIN_READ] = "BEGIN",
	[TXN_BEGIN_WRITE] = "BEGIN IMMEDIATE",
	[TXN_COMMIT] = "COMMIT",
	[TXN_ROLLBACK] = "ROLLBACK",
};

struct rs_db {
	sqlite3 *db;
	char *error;            /* the store's reason (backend.h, open) */
	bool read_only;
	int64_t busy_timeout_us;
	int64_t busy_since_us;  /* when the current wait for a lock began */
	sqlite3_stmt *stmts[RS_STMT_COUNT];
	int param_index[RS_STMT_COUNT][RS_STMT_MAX_PARAMS]; /* $k is bind index param_index[k - 1] */
	sqlite3_stmt *txn[TXN_COUNT];
};

static int sqlite_error(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_READONLY:
		return -EROFS;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		return -EUCLEAN;
	default:
		return -EIO;
	}
}

/* sqlite_error(rc), SQLite's message for it kept as the store's reason;
 * for a file it could not open or read, with the system's error, which
 * says what "unable to open database file" does not. */
static int sqlite_fail(struct rs_db *db, int rc)
{
	bool os = (rc & 0xff) == SQLITE_CANTOPEN || (rc & 0xff) == SQLITE_IOERR;
	int sys = os && db->db ? sqlite3_system_errno(db->db) : 0;
	const char *msg = db->db ? sqlite3_errmsg(db->db) : sqlite3_errstr(rc);

	if (sys > 0)
		rs_store_error_set(db->error, "%s (%s)", msg, strerror(sys));
	else
		rs_store_error_set(db->error, "%s", msg);
	return sqlite_error(rc);
}

static int64_t monotonic_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Waits for another connection's lock: short sleeps (0.1 ms doubling to
 * 1 ms) until the busy timeout.  SQLite's own handler sleeps up to 100 ms at
 * a time, so a waiter mostly sleeps through the short gaps between another
 * process's transactions and can starve behind a busy writer; short sleeps
 * let two gateways' admissions interleave.  Returns non-zero to retry. */
static int busy_wait(void *ctx, int count)
{
	struct rs_db *db = ctx;
	int64_t now = monotonic_us();
	int64_t sleep_us = count < 4 ? 100LL << count : 1000;

	if (count == 0)
		db->busy_since_us = now;
	if (now - db->busy_since_us >= db->busy_timeout_us)
		return 0;
	if (sleep_us > db->busy_since_us + db->busy_timeout_us - now)
		sleep_us = db->busy_since_us + db->busy_timeout_us - now;
	nanosleep(&(struct timespec){ .tv_sec = sleep_us / 1000000, .tv_nsec = (sleep_us % 1000000) * 1000 }, NULL);
	return 1;
}

/* Creates the default store directory if path lies directly in it. */
static int make_default_dir(const char *path)
{
	const char *def = strchr(RS_STORE_DEFAULT_URL, ':') + 1;
	const char *def_slash = strrchr(def, '/');
	const char *slash = strrchr(path, '/');
	size_t dir_len = (size_t)(def_slash - def);
	char dir[PATH_MAX];

	if (!slash || (size_t)(slash - path) != dir_len || strncmp(path, def, dir_len) != 0)
		return 0;
	if (dir_len >= sizeof(dir))
		return -EIO;
	memcpy(dir, def, dir_len);
	dir[dir_len] = '\0';
	if (mkdir(dir, 0750) != 0 && errno != EEXIST)
		return -EIO;
	return 0;
}

static int run_pragma(struct rs_db *db, const char *sql)
{
	int rc = sqlite3_exec(db->db, sql, NULL, NULL, NULL);

	return rc == SQLITE_OK ? 0 : sqlite_fail(db, rc);
}

/* Switching a new file to WAL takes an exclusive lock for a moment, and
 * SQLite answers SQLITE_BUSY for it without calling the busy handler when
 * another connection is opening the same file (gateways starting together):
 * retry it under the same busy timeout. */
static int run_pragma_waiting(struct rs_db *db, const char *sql)
{
	for (int count = 0;; count++) {
		int rc = sqlite3_exec(db->db, sql, NULL, NULL, NULL);

		if (rc != SQLITE_BUSY && rc != SQLITE_LOCKED)
			return rc == SQLITE_OK ? 0 : sqlite_fail(db, rc);
		if (!busy_wait(db, count))
			return sqlite_fail(db, rc);
	}
}

static void sqlite_close(struct rs_db *db)
{
	if (!db)
		return;
	for (size_t i = 0; i < RS_STMT_COUNT; i++)
		sqlite3_finalize(db->stmts[i]);
	for (size_t i = 0; i < TXN_COUNT; i++)
		sqlite3_finalize(db->txn[i]);
	sqlite3_close_v2(db->db);
	free(db);
}

/* The error for a file SQLite could not open: when it may not be created,
 * -ENOENT if it (or a directory above it) does not exist, which callers
 * report as "no store there"; else -EIO (-ENOMEM for out of memory).  A
 * creating open keeps -EIO for a missing directory (rs_store_open()). */
static int open_error(struct rs_db *db, const char *path, int rc, bool create)
{
	struct stat sb;

	sqlite_fail(db, rc); /* for its reason */
	if (rc == SQLITE_NOMEM)
		return -ENOMEM;
	if (!create && (rc & 0xff) == SQLITE_CANTOPEN && stat(path, &sb) != 0 && errno == ENOENT)
		return -ENOENT;
	return -EIO;
}

static int sqlite_open(const char *url, const struct rs_store_options *opt, char *error, struct rs_db **out)
{
	const char *path = strchr(url, ':');
	bool create = !opt->no_create && !opt->read_only;
	struct rs_db *db = NULL;
	int flags, rc, err;

	*out = NULL;
	if (!path || !path[1])
		return -EINVAL;
	path++;
	if (create) {
		err = make_default_dir(path);
		if (err)
			return err;
	}
	db = calloc(1, sizeof(*db));
	if (!db)
		return -ENOMEM;
	db->error = error;
	db->read_only = opt->read_only;
	flags = opt->read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
	rc = sqlite3_open_v2(path, &db->db, flags | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		err = open_error(db, path, rc, create);
		goto cleanup;
	}
	db->busy_timeout_us = (int64_t)opt->busy_timeout_ms * 1000;
	sqlite3_busy_handler(db->db, busy_wait, db);
	err = db->read_only ? 0 : run_pragma_waiting(db, "PRAGMA journal_mode=WAL");
	if (!err)
		err = run_pragma(db, "PRAGMA synchronous=NORMAL");
	/* Every statement on the hot path reads a handful of pages (gateway
	 * rows, the pending index, one member's row by key), and the file
	 * stays in the OS page cache: SQLite's own cache need not grow with
	 * the session rows (by default to 2 MB per connection, which at 2,500
	 * supervisors a gateway is 800 bytes each of its RSS). */
	if (!err)
		err = run_pragma(db, "PRAGMA cache_size=-256");
	if (err) {
		/* Opening promises -EIO for a store it cannot use, busy included;
		 * a damaged or full file says so (the pragmas read its header). */
		if (err != -ENOMEM && err != -EUCLEAN && err != -ENOSPC && err != -EROFS)
			err = -EIO;
		goto cleanup;
	}
	for (size_t i = 0; i < TXN_COUNT; i++) {
		rc = sqlite3_prepare_v3(db->db, txn_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &db->txn[i], NULL);
		if (rc != SQLITE_OK) {
			err = sqlite_fail(db, rc) == -ENOMEM ? -ENOMEM : -EIO;
			goto cleanup;
		}
	}
	*out = db;
	return 0;
cleanup:
	sqlite_close(db);
	return err;
}

/* Steps a statement of db that returns no rows, then resets it. */
static int step_once(struct rs_db *db, sqlite3_stmt *s)
{
	int rc = sqlite3_step(s), err = rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : sqlite_fail(db, rc);

	sqlite3_reset(s);
	return err;
}

static void sqlite_rollback(struct rs_db *db)
{
	/* SQLite rolls some failures back by itself; then there is nothing to do. */
	if (!sqlite3_get_autocommit(db->db))
		step_once(db, db->txn[TXN_ROLLBACK]);
}

static int sqlite_begin(struct rs_db *db, enum rs_txn kind)
{
	return step_once(db, db->txn[kind != RS_TXN_READ && !db->read_only ? TXN_BEGIN_WRITE : TXN_BEGIN_READ]);
}

static int sqlite_commit(struct rs_db *db)
{
	int err = step_once(db, db->txn[TXN_COMMIT]);

	if (err)
		sqlite_rollback(db);
	return err;
}

/* Returns stmt prepared (once per connection), its parameters mapped. */
static int prepared(struct rs_db *db, enum rs_stmt id, sqlite3_stmt **out)
{
	const struct rs_stmt_def *def = &rs_store_stmts[id];
	sqlite3_stmt *s = NULL;
	int rc;

	if (db->stmts[id]) {
		*out = db->stmts[id];
		return 0;
	}
	if (def->n_params > RS_STMT_MAX_PARAMS || def->n_cols > RS_STMT_MAX_COLS)
		return -EIO;
	rc = sqlite3_prepare_v3(db->db, def->sqlite_sql ? def->sqlite_sql : def->sql, -1, SQLITE_PREPARE_PERSISTENT, &s, NULL);
	if (rc != SQLITE_OK)
		return sqlite_fail(db, rc);
	if ((unsigned)sqlite3_bind_parameter_count(s) != def->n_params ||
	    (unsigned)sqlite3_column_count(s) != def->n_cols)
		goto mismatch;
	for (unsigned k = 1; k <= def->n_params; k++) {
		char name[16];

		snprintf(name, sizeof(name), "$%u", k);
		db->param_index[id][k - 1] = sqlite3_bind_parameter_index(s, name);
		if (db->param_index[id][k - 1] == 0)
			goto mismatch;
	}
	db->stmts[id] = s;
	*out = s;
	return 0;
mismatch:
	/* The statement table disagrees with its SQL: a bug, reported as I/O. */
	sqlite3_finalize(s);
	return -EIO;
}

static int bind(struct rs_db *db, enum rs_stmt id, sqlite3_stmt *s, const struct rs_db_value *params)
{
	for (unsigned k = 0; k < rs_store_stmts[id].n_params; k++) {
		const struct rs_db_value *v = &params[k];
		int idx = db->param_index[id][k], rc;

		switch (v->type) {
		case RS_DB_INT:
			rc = sqlite3_bind_int64(s, idx, v->i);
			break;
		case RS_DB_TEXT:
			if (v->len > INT_MAX)
				return -EINVAL;
			rc = sqlite3_bind_text(s, idx, v->s, (int)v->len, SQLITE_STATIC);
			break;
		case RS_DB_NULL:
			rc = sqlite3_bind_null(s, idx);
			break;
		default:
			return -EINVAL;
		}
		if (rc != SQLITE_OK)
			return sqlite_fail(db, rc);
	}
	return 0;
}

/* Reads the current row's columns into cols. */
static int read_row(sqlite3_stmt *s, unsigned n, struct rs_db_value *cols)
{
	for (unsigned c = 0; c < n; c++) {
		struct rs_db_value *v = &cols[c];

		memset(v, 0, sizeof(*v));
		switch (sqlite3_column_type(s, (int)c)) {
		case SQLITE_INTEGER:
			v->type = RS_DB_INT;
			v->i = sqlite3_column_int64(s, (int)c);
			break;
		case SQLITE_TEXT:
			v->type = RS_DB_TEXT;
			v->s = (const char *)sqlite3_column_text(s, (int)c);
			if (!v->s)
				return -ENOMEM;
			v->len = (size_t)sqlite3_column_bytes(s, (int)c);
			break;
		case SQLITE_NULL:
			v->type = RS_DB_NULL;
			break;
		default:
			v->type = RS_DB_OTHER;
			break;
		}
	}
	return 0;
}

static int sqlite_exec(struct rs_db *db, enum rs_stmt id, const struct rs_db_value *params, rs_db_row_fn on_row,
		       void *ctx, uint64_t *changes)
{
	struct rs_db_value cols[RS_STMT_MAX_COLS];
	sqlite3_stmt *s = NULL; /* set when prepared() succeeds; GCC cannot see it */
	int rc, err;

	if ((unsigned)id >= RS_STMT_COUNT || (rs_store_stmts[id].n_params && !params))
		return -EINVAL;
	err = prepared(db, id, &s);
	if (err)
		return err;
	err = bind(db, id, s, params);
	while (!err) {
		rc = sqlite3_step(s);
		if (rc == SQLITE_DONE) {
			if (changes)
				*changes = (uint64_t)sqlite3_changes64(db->db);
			break;
		}
		if (rc != SQLITE_ROW) {
			err = sqlite_fail(db, rc);
			break;
		}
		if (!on_row)
			continue;
		err = read_row(s, rs_store_stmts[id].n_cols, cols);
		if (!err)
			err = on_row(ctx, cols, rs_store_stmts[id].n_cols);
	}
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return err;
}

const struct rs_store_backend rs_store_sqlite_backend = {
	.scheme = "sqlite",
	.open = sqlite_open,
	.close = sqlite_close,
	.begin = sqlite_begin,
	.commit = sqlite_commit,
	.rollback = sqlite_rollback,
	.exec = sqlite_exec,
};
