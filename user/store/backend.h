/* SPDX-License-Identifier: Apache-2.0 */
/* backend.h - what a store backend supplies, and all it supplies: a
 * connection, transactions, and execution of the store's named statements.
 *
 * Everything above the backend (URL dispatch, options, row decoding, the
 * placement transaction) is written once in store.c, store_rows.c and
 * store_admit.c.  The SQL is written once too, in store_sql.c, with
 * PostgreSQL-style $n placeholders: SQLite reads "$1" as a named parameter
 * and the SQLite backend binds by name, libpq binds $n natively.  A
 * backend is one file implementing struct rs_store_backend (store_sqlite.c,
 * store_pg.c) and a line per URL scheme in store.c's backend table.
 *
 * Contract for every backend:
 * - begin(RS_TXN_WRITE) serializes writers across every connection to the
 *   same store (SQLite: BEGIN IMMEDIATE; PostgreSQL: BEGIN, then a
 *   transaction-scoped advisory lock), waiting at most the busy timeout and
 *   then failing with -EBUSY.  The placement transaction reads counts and
 *   writes from them, so it relies on this.
 * - begin(RS_TXN_READ) gives one consistent snapshot for several statements.
 * - commit() either commits or rolls back and returns the error; rollback()
 *   never fails (an already-aborted transaction is fine).  A backend whose
 *   COMMIT's answer can be lost reads the outcome back before saying it
 *   failed (PostgreSQL: pg_xact_status).
 * - exec() runs one statement with exactly rs_store_stmts[stmt].n_params
 *   parameters and calls on_row once per result row with exactly
 *   rs_store_stmts[stmt].n_cols columns; values handed to on_row are valid
 *   only during the call.  Integer columns arrive as RS_DB_INT, text as
 *   RS_DB_TEXT (with its length: a corrupt row may hold a NUL or be of any
 *   length, and the caller checks), SQL NULL as RS_DB_NULL; anything else
 *   (a real, a blob) is passed as RS_DB_OTHER for the caller to refuse.
 * - Errors are negative errno: -EBUSY (lock not had within the timeout),
 *   -ETIMEDOUT (a server that did not answer a round trip within the busy
 *   timeout - twice it for a write begin, whose lock wait alone may take
 *   the busy timeout: the backend dropped the connection, cancelling what
 *   it ran where it can without waiting, and the next begin() connects
 *   again), -ENOMEM, -EIO (anything else; the backend may log nothing: the
 *   caller decides).  No call waits on the server longer than that: a
 *   stopped server costs the caller the busy timeout, not forever.  A non-zero return from on_row stops the statement and is
 *   returned as is.
 * - A lost connection (server restarted, backend killed, network gone) is
 *   -EIO for the call that finds it, and the next begin() reconnects (and
 *   re-prepares): the process never has to reopen the store.  A backend
 *   that cannot lose its connection (SQLite's file) has nothing to do.
 * - Statements flagged notify (store_sql.c) are the change-notification
 *   part of the schema: only a backend with a watch hook runs them.
 * - A connection is used by one thread at a time. */
#ifndef RS_STORE_BACKEND_H
#define RS_STORE_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ringsteer/store.h"

enum rs_db_type {
	RS_DB_NULL,
	RS_DB_INT,
	RS_DB_TEXT,
	RS_DB_OTHER,
};

/* One parameter or column value.  Text need not be NUL-terminated. */
struct rs_db_value {
	enum rs_db_type type;
	int64_t i;
	const char *s;
	size_t len;
};

/* The store's statements, one per thing the logic asks of the database.
 * Parameters and columns are listed beside each in store_sql.c. */
enum rs_stmt {
	RS_STMT_CREATE_VERSION,
	RS_STMT_CREATE_GATEWAYS,
	RS_STMT_CREATE_SESSIONS,
	RS_STMT_CREATE_SESSIONS_LOAD,
	RS_STMT_GATEWAYS_ATTACHED_COLUMN,
	RS_STMT_ADD_GATEWAYS_ATTACHED,
	RS_STMT_FILL_GATEWAYS_ATTACHED,
	RS_STMT_CREATE_SESSIONS_PENDING,
	RS_STMT_VERSION_SELECT,
	RS_STMT_VERSION_INSERT,
	RS_STMT_VERSION_UPDATE,
	RS_STMT_CREATE_NOTIFY_FN,
	RS_STMT_CREATE_GATEWAYS_NOTIFY,
	RS_STMT_CREATE_GATEWAYS_NOTIFY_UPDATE,
	RS_STMT_CREATE_SESSIONS_NOTIFY,
	RS_STMT_CREATE_SESSIONS_NOTIFY_UPDATE,
	RS_STMT_GATEWAY_UPSERT,
	RS_STMT_GATEWAY_START,
	RS_STMT_GATEWAY_TOUCH,
	RS_STMT_GATEWAY_ATTACHED_ADD,
	RS_STMT_GATEWAY_SET_STATE,
	RS_STMT_GATEWAY_DELETE,
	RS_STMT_GATEWAY_SESSIONS_DELETE,
	RS_STMT_GATEWAY_ACTIVE_DELETE,
	RS_STMT_GATEWAY_ACTIVE_KEYS,
	RS_STMT_GATEWAY_ATTACHED_SET,
	RS_STMT_GATEWAYS_ALL,
	RS_STMT_GATEWAYS_LIVE,
	RS_STMT_GATEWAY_GET,
	RS_STMT_PENDING_LOADS,
	RS_STMT_GATEWAY_PENDING_LOAD,
	RS_STMT_SESSION_GET,
	RS_STMT_SESSION_UPSERT,
	RS_STMT_SESSION_SANDBOXES,
	RS_STMT_SESSION_DELETE,
	RS_STMT_RESERVATION_DELETE,
	RS_STMT_SESSIONS_ALL,
	RS_STMT_SESSIONS_LIVE,
	RS_STMT_SESSIONS_GET_MANY,
	RS_STMT_SESSIONS_WRITE_MANY,
	RS_STMT_COUNT
};

/* The most parameters or columns any statement has. */
#define RS_STMT_MAX_PARAMS 11
#define RS_STMT_MAX_COLS 10

struct rs_stmt_def {
	const char *sql;     /* portable SQL, parameters $1..$n_params */
	unsigned n_params;
	unsigned n_cols;     /* result columns (0: no rows) */
	bool notify;         /* change notification (PostgreSQL's dialect): run
			      * only by a backend with a watch hook */
	const char *sqlite_sql; /* SQLite's own spelling, for the rare statement
				 * with no portable one (a catalog read); NULL:
				 * sql.  The SQLite backend runs it instead. */
	bool arrays;         /* array parameters (PostgreSQL's dialect, each a
			      * text holding an array literal): run only by a
			      * backend's batch hooks (read_sessions,
			      * write_sessions), never by rs_store_exec() */
};

/* Indexed by enum rs_stmt (store_sql.c). */
extern const struct rs_stmt_def rs_store_stmts[RS_STMT_COUNT];

/* The schema version this code reads and writes (store.c migrates older
 * stores up to it and refuses newer ones). */
#define RS_STORE_SCHEMA_VERSION 2

enum rs_txn {
	RS_TXN_READ,
	RS_TXN_WRITE,
	/* A write of one member's row that changes nothing a placement reads
	 * (no count, no state): the writers' fleet-wide lock is not taken, the
	 * row's own lock serializing it (SQLite: as RS_TXN_WRITE). */
	RS_TXN_WRITE_ROW,
};

/* Called per result row; cols[n_cols].  Non-zero stops the statement. */
typedef int (*rs_db_row_fn)(void *ctx, const struct rs_db_value *cols, size_t n_cols);

struct rs_db; /* a backend's connection */

/* A change of one gateway's attached count (gateways.attached). */
struct rs_attached_delta {
	const char *gateway_id;
	int64_t delta;
};

struct rs_store_backend {
	const char *scheme; /* its name: the main URL scheme it serves (store.c's
			     * table maps every scheme it serves to it) */

	/* Connects to url (the whole URL, scheme included), applying opt (all
	 * filled in).  Returns 0, -EINVAL (malformed location), -EIO, -ENOMEM.
	 * error (may be NULL) is RS_STORE_ERROR_MAX bytes that outlive the
	 * connection: whenever a call fails for a reason the database library
	 * gave (libpq's message, SQLite's), this one or any later, the backend
	 * puts it there with rs_store_error_set(). */
	int (*open)(const char *url, const struct rs_store_options *opt, char *error, struct rs_db **out);
	void (*close)(struct rs_db *db);

	int (*begin)(struct rs_db *db, enum rs_txn kind);
	int (*commit)(struct rs_db *db);
	void (*rollback)(struct rs_db *db);

	/* Runs stmt with params (n_params of them); on_row may be NULL for a
	 * statement with no result columns.  *changes (if not NULL) receives the
	 * rows inserted, updated or deleted. */
	int (*exec)(struct rs_db *db, enum rs_stmt stmt, const struct rs_db_value *params, rs_db_row_fn on_row,
		    void *ctx, uint64_t *changes);

	/* Optional (NULL: rs_store_watch() is -EOPNOTSUPP).  watch() starts
	 * following the store's changes, on a connection of its own so that
	 * exec() never swallows a notification, and returns a descriptor to
	 * poll for readability (again, reconnecting, after a failed consume);
	 * watch_consume() reads what arrived without blocking and returns how
	 * many notifications, or -EIO when the watch connection is lost. */
	int (*watch)(struct rs_db *db);
	int (*watch_consume)(struct rs_db *db);

	/* Optional (NULL: the store's clock is this machine's, as SQLite's
	 * file).  The server's wall clock minus this process's, in ms, as
	 * begin() last measured it (no round trip of its own: the server's
	 * time comes with the begin's answer; a read begin may reuse a measure
	 * up to a second old).  Returns 0, or -ENOENT when no begin() has
	 * measured it on this connection. */
	int (*clock)(struct rs_db *db, int64_t *skew_ms);

	/* Optional, both or neither (NULL: store_members.c runs
	 * RS_STMT_SESSION_GET per member, RS_STMT_SESSION_UPSERT per row and
	 * RS_STMT_GATEWAY_ATTACHED_ADD per gateway, which costs nothing more
	 * than a loop in process: SQLite).  For a server, where every
	 * statement is a round trip, a batch's members in one statement each
	 * way.  read_sessions() calls on_row once per existing session row of
	 * ids[0..n-1] (the session columns of RS_STMT_SESSION_GET, in any
	 * order).  write_sessions() upserts rows[0..n-1] (distinct member ids:
	 * ON CONFLICT touches a row once per statement) with heartbeat now_ms
	 * and adds deltas[0..n_deltas-1] to their gateways' attached counts (a
	 * gateway without a row: nothing), in one statement, so the session
	 * triggers fire per row exactly as n upserts would fire them. */
	int (*read_sessions)(struct rs_db *db, const char *const *ids, size_t n, rs_db_row_fn on_row, void *ctx);
	int (*write_sessions)(struct rs_db *db, const struct rs_session_row *rows, size_t n, int64_t now_ms,
			      const struct rs_attached_delta *deltas, size_t n_deltas);
};

extern const struct rs_store_backend rs_store_sqlite_backend;
extern const struct rs_store_backend rs_store_pg_backend;

/* Writes the reason for a failure, printf-style, into error
 * (RS_STORE_ERROR_MAX bytes; NULL: nothing is written) on one line: runs of
 * white space become one space, or "; " where a line ends (libpq's
 * messages span lines), other control characters '?', cut to fit.  Only the first reason since error was
 * cleared is kept: it explains the failure, and what fails after it (a
 * rollback on a broken connection) follows from it. */
void rs_store_error_set(char *error, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parameter constructors for the callers of exec(). */
static inline struct rs_db_value rs_db_int(int64_t i)
{
	return (struct rs_db_value){ .type = RS_DB_INT, .i = i };
}

/* s must be NUL-terminated; its length is taken. */
static inline struct rs_db_value rs_db_text(const char *s)
{
	return (struct rs_db_value){ .type = RS_DB_TEXT, .s = s, .len = strlen(s) };
}

#endif
