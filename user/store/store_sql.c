/* SPDX-License-Identifier: Apache-2.0 */
/* store_sql.c - every SQL statement the store runs, written once for all
 * backends.
 *
 * Portable by construction: PostgreSQL-style $n placeholders (SQLite takes
 * "$1" as a named parameter; its backend binds by name), BIGINT for every
 * integer (SQLite gives it INTEGER affinity, a signed 64-bit value;
 * PostgreSQL's INTEGER would be 32-bit and too small for milliseconds),
 * INSERT ... ON CONFLICT ... DO UPDATE (SQLite >= 3.24, PostgreSQL >= 9.5),
 * no ORDER BY on text (collations differ; the caller sorts by bytes).
 * One catalog read has a spelling per dialect (sqlite_sql, backend.h).
 * The one part that is not portable is flagged notify: PostgreSQL's
 * change notification (triggers calling pg_notify), run only by a backend
 * with a watch hook.
 *
 * Liveness, the same predicate everywhere (store_internal.h states it in C),
 * schema version 2:
 *   gateway live:   heartbeat_ms >= now - ttl
 *   session counts: state = 1 (active: it lives with its gateway's row), or
 *                   state = 0 AND expires_ms >= now (an unexpired
 *                   reservation), on a live gateway.
 * A session row's own heartbeat_ms is when it was written (for an active
 * row: attached at); nothing refreshes it.  The load of a live gateway is
 * gateways.attached (its active rows, kept by the C code in the same
 * transaction as every session write) plus its unexpired pending rows (a
 * range of the sessions_pending index): no statement on the admission,
 * steer or heartbeat path reads active session rows but the member's own.
 * Statements that need it take $1 = now - ttl ("live since") and $2 = now. */
#include "backend.h"

#define SESSION_COLS "s.member_id, s.instance_id, s.epoch, s.gateway_id, s.sandboxes, s.source, " \
		     "s.heartbeat_ms, s.expires_ms, s.state"
#define SESSION_COUNTS "(s.state = 1 OR (s.state = 0 AND s.expires_ms >= $2))"
#define GATEWAY_COLS "id, peer, state, heartbeat_ms, attached"

const struct rs_stmt_def rs_store_stmts[RS_STMT_COUNT] = {
	[RS_STMT_CREATE_VERSION] = {
		"CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)", 0, 0 },
	[RS_STMT_CREATE_GATEWAYS] = {
		"CREATE TABLE IF NOT EXISTS gateways ("
		" id TEXT PRIMARY KEY,"
		" peer TEXT NOT NULL,"
		" state BIGINT NOT NULL,"
		" heartbeat_ms BIGINT NOT NULL)", 0, 0 },
	[RS_STMT_CREATE_SESSIONS] = {
		"CREATE TABLE IF NOT EXISTS sessions ("
		" member_id TEXT PRIMARY KEY,"
		" instance_id TEXT NOT NULL,"
		" epoch BIGINT NOT NULL,"
		" gateway_id TEXT NOT NULL,"
		" sandboxes BIGINT NOT NULL,"
		" source TEXT NOT NULL,"
		" heartbeat_ms BIGINT NOT NULL,"
		" expires_ms BIGINT NOT NULL,"
		" state BIGINT NOT NULL)", 0, 0 },
	/* Covers the load count (an index-only scan in gateway order, no sort,
	 * no table reads) and serves every lookup by gateway. */
	[RS_STMT_CREATE_SESSIONS_LOAD] = {
		"CREATE INDEX IF NOT EXISTS sessions_load ON sessions (gateway_id, state, heartbeat_ms, expires_ms)",
		0, 0 },
	/* Schema version 2: a gateway's active rows counted in its own row
	 * (the C code keeps it: store_internal.h, rs_store_attached_move), and
	 * pending rows found by expiry without reading active ones.  The
	 * migration runs once, in the open's write transaction, and the fill
	 * is one UPDATE from a COUNT, so a store migrated with rows in it has
	 * its counts right. */
	/* -> 1 when gateways has its attached column (a catalog read: the one
	 * statement written per dialect), so the migration is idempotent even
	 * on a store whose version row was lost. */
	[RS_STMT_GATEWAYS_ATTACHED_COLUMN] = {
		"SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = current_schema()"
		" AND table_name = 'gateways' AND column_name = 'attached'", 0, 1, false,
		"SELECT COUNT(*) FROM pragma_table_info('gateways') WHERE name = 'attached'" },
	[RS_STMT_ADD_GATEWAYS_ATTACHED] = {
		"ALTER TABLE gateways ADD COLUMN attached BIGINT NOT NULL DEFAULT 0", 0, 0 },
	[RS_STMT_FILL_GATEWAYS_ATTACHED] = {
		"UPDATE gateways SET attached = (SELECT COUNT(*) FROM sessions s"
		" WHERE s.gateway_id = gateways.id AND s.state = 1)", 0, 0 },
	/* Covers the pending load count: an index-only range over state = 0
	 * and unexpired, in neither table's order (the caller groups). */
	[RS_STMT_CREATE_SESSIONS_PENDING] = {
		"CREATE INDEX IF NOT EXISTS sessions_pending ON sessions (state, expires_ms, gateway_id)", 0, 0 },
	/* -> version */
	[RS_STMT_VERSION_SELECT] = { "SELECT version FROM schema_version", 0, 1 },
	/* $1 version */
	[RS_STMT_VERSION_INSERT] = { "INSERT INTO schema_version (version) VALUES ($1)", 1, 0 },
	/* $1 version */
	[RS_STMT_VERSION_UPDATE] = { "UPDATE schema_version SET version = $1", 1, 0 },

	/* Change notification (schema version 1 on PostgreSQL): one
	 * notification on channel "ringsteer", payload the table's name, for
	 * each change that matters to placement: rows inserted or deleted, and
	 * updates of what a placement or a pin reads.  Heartbeat-only updates
	 * (every gateway, several times a second) notify nothing: they would
	 * storm the listeners.  PostgreSQL folds identical notifications of one
	 * transaction into one.  Expiry by TTL writes nothing and so notifies
	 * nothing: listeners keep a slow poll.  Each trigger is replaced if
	 * there (DO: one statement; CREATE OR REPLACE TRIGGER needs 14), so
	 * the migration is idempotent. */
	[RS_STMT_CREATE_NOTIFY_FN] = {
		"CREATE OR REPLACE FUNCTION ringsteer_notify() RETURNS trigger LANGUAGE plpgsql AS"
		" $fn$ BEGIN PERFORM pg_notify('ringsteer', TG_TABLE_NAME); RETURN NULL; END $fn$",
		0, 0, true },
	[RS_STMT_CREATE_GATEWAYS_NOTIFY] = {
		"DO $do$ BEGIN DROP TRIGGER IF EXISTS gateways_notify ON gateways;"
		" CREATE TRIGGER gateways_notify AFTER INSERT OR DELETE ON gateways"
		" FOR EACH ROW EXECUTE FUNCTION ringsteer_notify(); END $do$", 0, 0, true },
	[RS_STMT_CREATE_GATEWAYS_NOTIFY_UPDATE] = {
		"DO $do$ BEGIN DROP TRIGGER IF EXISTS gateways_notify_update ON gateways;"
		" CREATE TRIGGER gateways_notify_update AFTER UPDATE ON gateways FOR EACH ROW"
		" WHEN (OLD.id IS DISTINCT FROM NEW.id OR OLD.peer IS DISTINCT FROM NEW.peer"
		" OR OLD.state IS DISTINCT FROM NEW.state)"
		" EXECUTE FUNCTION ringsteer_notify(); END $do$", 0, 0, true },
	[RS_STMT_CREATE_SESSIONS_NOTIFY] = {
		"DO $do$ BEGIN DROP TRIGGER IF EXISTS sessions_notify ON sessions;"
		" CREATE TRIGGER sessions_notify AFTER INSERT OR DELETE ON sessions"
		" FOR EACH ROW EXECUTE FUNCTION ringsteer_notify(); END $do$", 0, 0, true },
	[RS_STMT_CREATE_SESSIONS_NOTIFY_UPDATE] = {
		"DO $do$ BEGIN DROP TRIGGER IF EXISTS sessions_notify_update ON sessions;"
		" CREATE TRIGGER sessions_notify_update AFTER UPDATE ON sessions FOR EACH ROW"
		" WHEN (OLD.member_id IS DISTINCT FROM NEW.member_id OR OLD.gateway_id IS DISTINCT FROM NEW.gateway_id"
		" OR OLD.state IS DISTINCT FROM NEW.state OR OLD.epoch IS DISTINCT FROM NEW.epoch"
		" OR OLD.sandboxes IS DISTINCT FROM NEW.sandboxes OR OLD.source IS DISTINCT FROM NEW.source)"
		" EXECUTE FUNCTION ringsteer_notify(); END $do$", 0, 0, true },

	/* $1 id, $2 peer, $3 state, $4 heartbeat_ms */
	[RS_STMT_GATEWAY_UPSERT] = {
		"INSERT INTO gateways (id, peer, state, heartbeat_ms) VALUES ($1, $2, $3, $4)"
		" ON CONFLICT (id) DO UPDATE SET peer = excluded.peer, state = excluded.state,"
		" heartbeat_ms = excluded.heartbeat_ms", 4, 0 },
	/* $1 id, $2 peer, $3 state, $4 heartbeat_ms: as RS_STMT_GATEWAY_UPSERT,
	 * and no session attached (with RS_STMT_GATEWAY_ACTIVE_DELETE) */
	[RS_STMT_GATEWAY_START] = {
		"INSERT INTO gateways (id, peer, state, heartbeat_ms, attached) VALUES ($1, $2, $3, $4, 0)"
		" ON CONFLICT (id) DO UPDATE SET peer = excluded.peer, state = excluded.state,"
		" heartbeat_ms = excluded.heartbeat_ms, attached = 0", 4, 0 },
	/* $1 id, $2 heartbeat_ms */
	[RS_STMT_GATEWAY_TOUCH] = { "UPDATE gateways SET heartbeat_ms = $2 WHERE id = $1", 2, 0 },
	/* $1 id, $2 delta (+1 or -1) */
	[RS_STMT_GATEWAY_ATTACHED_ADD] = { "UPDATE gateways SET attached = attached + $2 WHERE id = $1", 2, 0 },
	/* $1 id, $2 state */
	[RS_STMT_GATEWAY_SET_STATE] = { "UPDATE gateways SET state = $2 WHERE id = $1", 2, 0 },
	/* $1 id */
	[RS_STMT_GATEWAY_DELETE] = { "DELETE FROM gateways WHERE id = $1", 1, 0 },
	/* $1 gateway id */
	[RS_STMT_GATEWAY_SESSIONS_DELETE] = { "DELETE FROM sessions WHERE gateway_id = $1", 1, 0 },
	/* $1 gateway id (the sessions_load index) */
	[RS_STMT_GATEWAY_ACTIVE_DELETE] = { "DELETE FROM sessions WHERE gateway_id = $1 AND state = 1", 1, 0 },
	/* $1 gateway id -> member_id, epoch of its active rows (the sessions_load index) */
	[RS_STMT_GATEWAY_ACTIVE_KEYS] = {
		"SELECT member_id, epoch FROM sessions WHERE gateway_id = $1 AND state = 1", 1, 2 },
	/* $1 id, $2 attached */
	[RS_STMT_GATEWAY_ATTACHED_SET] = { "UPDATE gateways SET attached = $2 WHERE id = $1", 2, 0 },
	/* -> GATEWAY_COLS */
	[RS_STMT_GATEWAYS_ALL] = { "SELECT " GATEWAY_COLS " FROM gateways", 0, 5 },
	/* $1 live since -> GATEWAY_COLS */
	[RS_STMT_GATEWAYS_LIVE] = { "SELECT " GATEWAY_COLS " FROM gateways WHERE heartbeat_ms >= $1", 1, 5 },
	/* $1 id -> GATEWAY_COLS */
	[RS_STMT_GATEWAY_GET] = { "SELECT " GATEWAY_COLS " FROM gateways WHERE id = $1", 1, 5 },
	/* $1 now -> gateway_id, unexpired pending rows (gateway liveness is the
	 * caller's: it joins with its live gateways; the sessions_pending index) */
	[RS_STMT_PENDING_LOADS] = {
		"SELECT s.gateway_id, COUNT(*) FROM sessions s WHERE s.state = 0 AND s.expires_ms >= $1"
		" GROUP BY s.gateway_id", 1, 2 },
	/* $1 now, $2 gateway id -> as RS_STMT_PENDING_LOADS, that gateway only
	 * (no row when it has none) */
	[RS_STMT_GATEWAY_PENDING_LOAD] = {
		"SELECT s.gateway_id, COUNT(*) FROM sessions s WHERE s.state = 0 AND s.expires_ms >= $1"
		" AND s.gateway_id = $2 GROUP BY s.gateway_id", 2, 2 },

	/* $1 member_id -> session columns */
	[RS_STMT_SESSION_GET] = { "SELECT " SESSION_COLS " FROM sessions s WHERE s.member_id = $1", 1, 9 },
	/* $1..$9 session columns in SESSION_COLS order */
	[RS_STMT_SESSION_UPSERT] = {
		"INSERT INTO sessions (member_id, instance_id, epoch, gateway_id, sandboxes, source,"
		" heartbeat_ms, expires_ms, state) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
		" ON CONFLICT (member_id) DO UPDATE SET instance_id = excluded.instance_id,"
		" epoch = excluded.epoch, gateway_id = excluded.gateway_id, sandboxes = excluded.sandboxes,"
		" source = excluded.source, heartbeat_ms = excluded.heartbeat_ms,"
		" expires_ms = excluded.expires_ms, state = excluded.state", 9, 0 },
	/* $1 member_id, $2 epoch, $3 gateway_id, $4 sandboxes */
	[RS_STMT_SESSION_SANDBOXES] = {
		"UPDATE sessions SET sandboxes = $4 WHERE member_id = $1 AND epoch = $2 AND gateway_id = $3",
		4, 0 },
	/* $1 member_id, $2 epoch, $3 gateway_id */
	[RS_STMT_SESSION_DELETE] = {
		"DELETE FROM sessions WHERE member_id = $1 AND epoch = $2 AND gateway_id = $3", 3, 0 },
	/* $1 member_id, $2 gateway_id, $3 expires_ms: that very pending
	 * reservation, not one written since nor the member's attachment */
	[RS_STMT_RESERVATION_DELETE] = {
		"DELETE FROM sessions WHERE member_id = $1 AND gateway_id = $2 AND expires_ms = $3 AND state = 0",
		3, 0 },
	/* -> session columns, then the gateway's heartbeat_ms (NULL: no gateway row) */
	[RS_STMT_SESSIONS_ALL] = {
		"SELECT " SESSION_COLS ", g.heartbeat_ms FROM sessions s LEFT JOIN gateways g ON g.id = s.gateway_id",
		0, 10 },
	/* $1 live since, $2 now -> as RS_STMT_SESSIONS_ALL, counted sessions only */
	[RS_STMT_SESSIONS_LIVE] = {
		"SELECT " SESSION_COLS ", g.heartbeat_ms FROM sessions s JOIN gateways g ON g.id = s.gateway_id"
		" WHERE g.heartbeat_ms >= $1 AND " SESSION_COUNTS, 2, 10 },

	/* A batch's member rows in one round trip each way (backend.h,
	 * read_sessions and write_sessions; PostgreSQL's arrays, so flagged
	 * arrays and run by no other backend). */
	/* $1 member ids (text[]) -> session columns, the rows there are */
	[RS_STMT_SESSIONS_GET_MANY] = {
		"SELECT " SESSION_COLS " FROM sessions s WHERE s.member_id = ANY ($1::text[])", 1, 9, false, NULL,
		true },
	/* $1..$8 the session columns but heartbeat_ms, as parallel arrays
	 * (member ids distinct), $9 heartbeat_ms; $10 gateway ids, $11 deltas
	 * (parallel arrays) added to those gateways' attached counts.  One
	 * statement: the upsert a CTE (it runs whatever the outer UPDATE
	 * touches), each row exactly RS_STMT_SESSION_UPSERT's. */
	[RS_STMT_SESSIONS_WRITE_MANY] = {
		"WITH d (member_id, instance_id, epoch, gateway_id, sandboxes, source, expires_ms, state) AS"
		" (SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::bigint[], $6::text[],"
		" $7::bigint[], $8::bigint[])),"
		" w AS (INSERT INTO sessions (member_id, instance_id, epoch, gateway_id, sandboxes, source,"
		" heartbeat_ms, expires_ms, state) SELECT member_id, instance_id, epoch, gateway_id, sandboxes, source,"
		" $9::bigint, expires_ms, state FROM d"
		" ON CONFLICT (member_id) DO UPDATE SET instance_id = excluded.instance_id,"
		" epoch = excluded.epoch, gateway_id = excluded.gateway_id, sandboxes = excluded.sandboxes,"
		" source = excluded.source, heartbeat_ms = excluded.heartbeat_ms,"
		" expires_ms = excluded.expires_ms, state = excluded.state)"
		" UPDATE gateways g SET attached = g.attached + a.delta"
		" FROM unnest($10::text[], $11::bigint[]) AS a (id, delta) WHERE g.id = a.id", 11, 0, false, NULL,
		true },
};
