/* SPDX-License-Identifier: Apache-2.0 */
/* store.c - the store handle and its ledger operations, written once over
 * the backend interface (backend.h): URL dispatch to a backend, options
 * and their defaults, the schema (created or migrated, versioned), the
 * watch for changes,
 * gateway registration, start, state and removal, heartbeats, session
 * updates, and the listings (one gateway's row among them).  The placement
 * transaction is in store_admit.c.  Every statement goes through
 * rs_store_exec(), which counts it (rs_store_statements()).
 *
 * Guarantees: every operation that writes runs in one write transaction
 * (serialized across every handle on the store, see backend.h), so it is
 * all or nothing; arguments are checked before anything is written;
 * returns are 0 or negative errno, never a partial result.  A handle is
 * used by one thread at a time. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ringsteer/proto.h"
#include "store_internal.h"
#include "store_snapshot.h"

/* URL scheme -> backend (libpq takes both spellings of PostgreSQL's). */
static const struct {
	const char *scheme;
	const struct rs_store_backend *be;
} backends[] = {
	{ "sqlite", &rs_store_sqlite_backend },
	{ "postgres", &rs_store_pg_backend },
	{ "postgresql", &rs_store_pg_backend },
};

#define DEFAULT_TTL_MS 15000
#define DEFAULT_RESERVATION_MS 5000
#define DEFAULT_BUSY_TIMEOUT_MS 5000

int64_t rs_store_time_sub(int64_t t, uint32_t ms)
{
	return t < INT64_MIN + (int64_t)ms ? INT64_MIN : t - (int64_t)ms;
}

int64_t rs_store_time_add(int64_t t, uint32_t ms)
{
	return t > INT64_MAX - (int64_t)ms ? INT64_MAX : t + (int64_t)ms;
}

bool rs_store_id_ok(const char *id)
{
	return id && id[0] && strnlen(id, RS_ID_MAX + 1) <= RS_ID_MAX;
}

bool rs_store_text_ok(const char *s, size_t max)
{
	return s && strnlen(s, max + 1) <= max;
}

int rs_store_exec(struct rs_store *st, enum rs_stmt stmt, const struct rs_db_value *params, rs_db_row_fn on_row,
		  void *ctx, uint64_t *changes)
{
	if ((unsigned)stmt < RS_STMT_COUNT && rs_store_stmts[stmt].arrays)
		return -EINVAL; /* a batch hook's own (backend.h) */
	st->statements++;
	return st->be->exec(st->db, stmt, params, on_row, ctx, changes);
}

uint64_t rs_store_statements(const struct rs_store *st)
{
	return st ? st->statements : 0;
}

int64_t rs_store_now(const struct rs_store *st, int64_t now_ms)
{
	if (st->shift_ms < 0)
		return now_ms < INT64_MIN - st->shift_ms ? INT64_MIN : now_ms + st->shift_ms;
	return now_ms > INT64_MAX - st->shift_ms ? INT64_MAX : now_ms + st->shift_ms;
}

int rs_store_clock_skew(const struct rs_store *st, int64_t *skew_ms)
{
	if (!st || !skew_ms)
		return -EINVAL;
	if (!st->be->clock)
		return -EOPNOTSUPP;
	if (!st->skew_known)
		return -ENOENT;
	*skew_ms = st->skew_ms;
	return 0;
}

/* Takes the skew the begin just measured: the body's times follow it. */
static void take_clock(struct rs_store *st)
{
	int64_t skew;

	st->shift_ms = 0;
	if (!st->be->clock || st->be->clock(st->db, &skew) != 0)
		return;
	st->skew_ms = skew;
	st->skew_known = true;
	if (skew > RS_STORE_SKEW_TOLERANCE_MS || skew < -RS_STORE_SKEW_TOLERANCE_MS)
		st->shift_ms = skew;
}

int rs_store_txn(struct rs_store *st, enum rs_txn kind, int (*body)(struct rs_store *st, void *arg), void *arg)
{
	int err;

	st->error[0] = '\0'; /* each call's reason is its own */
	st->statements++;
	err = st->be->begin(st->db, kind);
	if (err)
		return err;
	take_clock(st);
	err = body(st, arg);
	if (err) {
		st->be->rollback(st->db);
		return err;
	}
	st->statements++;
	return st->be->commit(st->db);
}

/* Adds delta to gateway id's attached count.  A gateway without a row has
 * no count to keep (its rows count for nothing, and removing a gateway
 * deletes its rows). */
static int attached_add(struct rs_store *st, const char *id, int64_t delta)
{
	const struct rs_db_value params[] = { rs_db_text(id), rs_db_int(delta) };

	return rs_store_exec(st, RS_STMT_GATEWAY_ATTACHED_ADD, params, NULL, NULL, NULL);
}

int rs_store_attached_move(struct rs_store *st, const struct rs_session_row *before,
			   const struct rs_session_row *after)
{
	const char *from = before && before->state == RS_SESSION_ACTIVE ? before->gateway_id : NULL;
	const char *to = after && after->state == RS_SESSION_ACTIVE ? after->gateway_id : NULL;
	int err = 0;

	if (from && to && strcmp(from, to) == 0)
		return 0; /* still attached there */
	if (from)
		err = attached_add(st, from, -1);
	if (!err && to)
		err = attached_add(st, to, 1);
	return err;
}

int rs_store_gateway_touch(struct rs_store *st, const char *gateway_id, int64_t now_ms)
{
	const struct rs_db_value params[] = { rs_db_text(gateway_id), rs_db_int(now_ms) };
	uint64_t changes = 0;
	int err;

	err = rs_store_exec(st, RS_STMT_GATEWAY_TOUCH, params, NULL, NULL, &changes);
	if (err)
		return err;
	return changes ? 0 : -ENOENT;
}

/* Finds the backend for url's scheme ("scheme:rest", RFC 3986 scheme
 * characters, case-insensitive). */
static int find_backend(const char *url, const struct rs_store_backend **out)
{
	size_t len, n = 0;

	len = strnlen(url, RS_STORE_URL_MAX + 1);
	if (len == 0 || len > RS_STORE_URL_MAX)
		return -EINVAL;
	if (!((url[0] >= 'a' && url[0] <= 'z') || (url[0] >= 'A' && url[0] <= 'Z')))
		return -EINVAL;
	while (url[n] && url[n] != ':') {
		char c = url[n];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' ||
		      c == '-' || c == '.'))
			return -EINVAL;
		n++;
	}
	if (url[n] != ':')
		return -EINVAL;
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
		if (strlen(backends[i].scheme) == n && strncasecmp(url, backends[i].scheme, n) == 0) {
			*out = backends[i].be;
			return 0;
		}
	}
	return -EPROTONOSUPPORT;
}

struct version_check {
	size_t rows;
	int64_t version;
};

static int on_version(void *ctx, const struct rs_db_value *cols, size_t n)
{
	struct version_check *v = ctx;

	if (n < 1 || rs_row_int(&cols[0], INT64_MIN, INT64_MAX, &v->version) != 0)
		return -EIO;
	v->rows++;
	return 0;
}

/* The migrations: migrations[N - 1] takes a store from version N - 1 to
 * N, and a fresh store (version 0: no row) runs them all.  Each is
 * idempotent, so a store whose version row was lost is completed, never
 * refused.  Version 1 is the first schema; its CREATEs say IF NOT EXISTS
 * because stores written before versioned migrations have its tables and
 * no triggers to add (SQLite); the notify statements run only on a backend
 * that can watch (backend.h).  Version 2: gateways.attached, filled from
 * the rows there, and the pending rows' index (store_sql.c). */
static const enum rs_stmt schema_v1[] = {
	RS_STMT_CREATE_GATEWAYS,
	RS_STMT_CREATE_SESSIONS,
	RS_STMT_CREATE_SESSIONS_LOAD,
	RS_STMT_CREATE_NOTIFY_FN,
	RS_STMT_CREATE_GATEWAYS_NOTIFY,
	RS_STMT_CREATE_GATEWAYS_NOTIFY_UPDATE,
	RS_STMT_CREATE_SESSIONS_NOTIFY,
	RS_STMT_CREATE_SESSIONS_NOTIFY_UPDATE,
};

static int migrate_v1(struct rs_store *st)
{
	for (size_t k = 0; k < sizeof(schema_v1) / sizeof(schema_v1[0]); k++) {
		enum rs_stmt stmt = schema_v1[k];
		int err;

		if (rs_store_stmts[stmt].notify && !st->be->watch)
			continue;
		err = rs_store_exec(st, stmt, NULL, NULL, NULL, NULL);
		if (err)
			return err;
	}
	return 0;
}

static int on_count(void *ctx, const struct rs_db_value *cols, size_t n)
{
	return n < 1 ? -EIO : rs_row_int(&cols[0], 0, INT64_MAX, ctx);
}

static int migrate_v2(struct rs_store *st)
{
	int64_t has_column = 0;
	int err;

	err = rs_store_exec(st, RS_STMT_GATEWAYS_ATTACHED_COLUMN, NULL, on_count, &has_column, NULL);
	if (!err && !has_column)
		err = rs_store_exec(st, RS_STMT_ADD_GATEWAYS_ATTACHED, NULL, NULL, NULL, NULL);
	if (!err)
		err = rs_store_exec(st, RS_STMT_FILL_GATEWAYS_ATTACHED, NULL, NULL, NULL, NULL);
	if (!err)
		err = rs_store_exec(st, RS_STMT_CREATE_SESSIONS_PENDING, NULL, NULL, NULL, NULL);
	return err;
}

static int (*const migrations[RS_STORE_SCHEMA_VERSION])(struct rs_store *st) = {
	migrate_v1,
	migrate_v2,
};

/* Brings the schema to RS_STORE_SCHEMA_VERSION inside the open's write
 * transaction: writers are serialized (backend.h), so of many gateways
 * starting at once exactly one creates or migrates and the others find it
 * done.  A read-only handle never writes: its store must be current. */
static int migrate(struct rs_store *st, void *arg)
{
	struct version_check v = { 0 };
	struct rs_db_value version = rs_db_int(RS_STORE_SCHEMA_VERSION);
	int64_t current;
	int err;

	(void)arg;
	if (!st->opt.read_only) {
		err = rs_store_exec(st, RS_STMT_CREATE_VERSION, NULL, NULL, NULL, NULL);
		if (err)
			return err;
	}
	err = rs_store_exec(st, RS_STMT_VERSION_SELECT, NULL, on_version, &v, NULL);
	if (err)
		return err;
	if (v.rows > 1 || (v.rows == 1 && v.version < 1))
		return -EIO; /* a damaged table */
	current = v.rows ? v.version : 0;
	if (current > RS_STORE_SCHEMA_VERSION)
		return -EPROTO; /* a newer ringsteer wrote it: never downgrade */
	if (current == RS_STORE_SCHEMA_VERSION)
		return 0;
	if (st->opt.read_only)
		return -EIO;
	for (int64_t i = current; i < RS_STORE_SCHEMA_VERSION; i++) {
		err = migrations[i](st);
		if (err)
			return err;
	}
	return rs_store_exec(st, v.rows ? RS_STMT_VERSION_UPDATE : RS_STMT_VERSION_INSERT, &version, NULL, NULL,
			    NULL);
}

int rs_store_open(const char *url, const struct rs_store_options *opt, struct rs_store **out)
{
	return rs_store_open_why(url, opt, out, NULL, 0);
}

int rs_store_open_why(const char *url, const struct rs_store_options *opt, struct rs_store **out, char *why,
		      size_t why_size)
{
	const struct rs_store_backend *be = NULL;
	struct rs_store *st = NULL;
	int err;

	if (why && why_size)
		why[0] = '\0';
	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!url)
		return -EINVAL;
	err = find_backend(url, &be);
	if (err)
		return err;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->be = be;
	if (opt)
		st->opt = *opt;
	if (!st->opt.ttl_ms)
		st->opt.ttl_ms = DEFAULT_TTL_MS;
	if (!st->opt.reservation_ms)
		st->opt.reservation_ms = DEFAULT_RESERVATION_MS;
	if (!st->opt.busy_timeout_ms)
		st->opt.busy_timeout_ms = DEFAULT_BUSY_TIMEOUT_MS;
	err = be->open(url, &st->opt, st->error, &st->db);
	if (err)
		goto cleanup;
	err = rs_store_txn(st, RS_TXN_WRITE, migrate, NULL);
	/* open() promises -EIO for a store it cannot open or create, a busy one
	 * included (it could not be created within the timeout). */
	if (err == -EBUSY)
		err = -EIO;
cleanup:
	if (err) {
		if (why && why_size)
			snprintf(why, why_size, "%s", st->error);
		rs_store_close(st);
		return err;
	}
	*out = st;
	return 0;
}

void rs_store_close(struct rs_store *st)
{
	if (!st)
		return;
	if (st->db)
		st->be->close(st->db);
	rs_placer_free(st->placer);
	rs_ring_free(st->ring);
	free(st->live.rows);
	free(st->ids);
	free(st->loads);
	free(st);
}

const struct rs_store_options *rs_store_options(const struct rs_store *st)
{
	return &st->opt;
}

int rs_store_watch(struct rs_store *st)
{
	if (!st)
		return -EINVAL;
	if (!st->be->watch)
		return -EOPNOTSUPP;
	st->error[0] = '\0';
	return st->be->watch(st->db);
}

int rs_store_watch_consume(struct rs_store *st)
{
	if (!st)
		return -EINVAL;
	if (!st->be->watch_consume)
		return -EOPNOTSUPP;
	st->error[0] = '\0';
	return st->be->watch_consume(st->db);
}

/* ---- gateways ---- */

struct gateway_write {
	const char *id;
	const char *peer;
	enum rs_gateway_state state;
	int64_t now_ms;
	bool fresh; /* a starting process: rs_store_gateway_start() */
};

/* Registers (upserts) a gateway's row; a starting process (fresh) holds no
 * connection, so its active rows (of an earlier process) end now, and its
 * count with them.  Reservations stay: they end by themselves, and the
 * supervisors they hold may be on their way here. */
static int gateway_register(struct rs_store *st, void *arg)
{
	const struct gateway_write *w = arg;
	const struct rs_db_value params[] = {
		rs_db_text(w->id),
		rs_db_text(w->peer),
		rs_db_int(w->state),
		rs_db_int(rs_store_now(st, w->now_ms)),
	};
	int err;

	err = rs_store_exec(st, w->fresh ? RS_STMT_GATEWAY_START : RS_STMT_GATEWAY_UPSERT, params, NULL, NULL, NULL);
	if (err || !w->fresh)
		return err;
	return rs_store_exec(st, RS_STMT_GATEWAY_ACTIVE_DELETE, params, NULL, NULL, NULL);
}

static int gateway_write_txn(struct rs_store *st, const struct gateway_write *w)
{
	if (!st || !rs_store_id_ok(w->id) || !rs_store_text_ok(w->peer, RS_ENDPOINT_MAX) ||
	    (w->state != RS_GATEWAY_SERVING && w->state != RS_GATEWAY_DRAINING))
		return -EINVAL;
	return rs_store_txn(st, RS_TXN_WRITE, gateway_register, (void *)w);
}

/* A late start: the gateway's active rows read, those not held ended. */
struct gateway_late {
	struct gateway_write w;
	struct rs_session_key *held; /* sorted (key_cmp) */
	size_t n_held;
	struct rs_session_key *rows; /* the active rows read */
	size_t n_rows, cap_rows;
};

static int key_cmp(const void *a, const void *b)
{
	const struct rs_session_key *x = a, *y = b;
	int c = strcmp(x->member_id, y->member_id);

	if (c)
		return c;
	return x->epoch < y->epoch ? -1 : x->epoch > y->epoch;
}

static int collect_key(void *ctx, const struct rs_db_value *cols, size_t n)
{
	struct gateway_late *g = ctx;
	struct rs_session_key *k;
	int64_t epoch;
	int err;

	if (n < 2)
		return -EIO;
	if (g->n_rows == g->cap_rows) {
		size_t cap = g->cap_rows ? g->cap_rows * 2 : 64;

		k = realloc(g->rows, cap * sizeof(*k));
		if (!k)
			return -ENOMEM;
		g->rows = k;
		g->cap_rows = cap;
	}
	k = &g->rows[g->n_rows];
	err = rs_row_text(&cols[0], true, k->member_id, sizeof(k->member_id));
	if (!err)
		err = rs_row_int(&cols[1], 0, INT64_MAX, &epoch);
	if (err)
		return err;
	k->epoch = (uint64_t)epoch;
	g->n_rows++;
	return 0;
}

/* Registers the row keeping its sessions, then ends the active ones this
 * process does not hold (an earlier process's: nothing else would end
 * them) and sets the count to those left. */
static int gateway_start_late(struct rs_store *st, void *arg)
{
	struct gateway_late *g = arg;
	const struct rs_db_value id[] = { rs_db_text(g->w.id) };
	int64_t kept = 0;
	int err;

	g->n_rows = 0; /* each run of the body reads afresh */
	err = gateway_register(st, &g->w);
	if (!err)
		err = rs_store_exec(st, RS_STMT_GATEWAY_ACTIVE_KEYS, id, collect_key, g, NULL);
	for (size_t i = 0; !err && i < g->n_rows; i++) {
		const struct rs_session_key *k = &g->rows[i];
		const struct rs_db_value del[] = { rs_db_text(k->member_id), rs_db_int((int64_t)k->epoch),
						   rs_db_text(g->w.id) };

		if (g->n_held && bsearch(k, g->held, g->n_held, sizeof(*k), key_cmp))
			kept++;
		else
			err = rs_store_exec(st, RS_STMT_SESSION_DELETE, del, NULL, NULL, NULL);
	}
	if (!err) {
		const struct rs_db_value set[] = { rs_db_text(g->w.id), rs_db_int(kept) };

		err = rs_store_exec(st, RS_STMT_GATEWAY_ATTACHED_SET, set, NULL, NULL, NULL);
	}
	return err;
}

int rs_store_gateway_start_holding(struct rs_store *st, const char *id, const char *peer,
				   enum rs_gateway_state state, int64_t now_ms, const struct rs_session_key *held,
				   size_t n)
{
	struct gateway_late g = { .w = { id, peer, state, now_ms, false }, .n_held = n };
	int err = -ENOMEM;

	if (!st || !rs_store_id_ok(id) || !rs_store_text_ok(peer, RS_ENDPOINT_MAX) || (n && !held) ||
	    (state != RS_GATEWAY_SERVING && state != RS_GATEWAY_DRAINING))
		return -EINVAL;
	/* The list is the caller's: every id ends inside its array. */
	for (size_t i = 0; i < n; i++)
		if (!memchr(held[i].member_id, '\0', sizeof(held[i].member_id)) || !rs_store_id_ok(held[i].member_id))
			return -EINVAL;
	if (n) {
		g.held = malloc(n * sizeof(*g.held));
		if (!g.held)
			goto cleanup;
		memcpy(g.held, held, n * sizeof(*g.held));
		qsort(g.held, n, sizeof(*g.held), key_cmp);
	}
	err = rs_store_txn(st, RS_TXN_WRITE, gateway_start_late, &g);
cleanup:
	free(g.held);
	free(g.rows);
	return err;
}

int rs_store_gateway_register(struct rs_store *st, const char *id, const char *peer, enum rs_gateway_state state,
			      int64_t now_ms)
{
	return gateway_write_txn(st, &(struct gateway_write){ id, peer, state, now_ms, false });
}

int rs_store_gateway_start(struct rs_store *st, const char *id, const char *peer, enum rs_gateway_state state,
			   int64_t now_ms)
{
	return gateway_write_txn(st, &(struct gateway_write){ id, peer, state, now_ms, true });
}

static int gateway_set_state(struct rs_store *st, void *arg)
{
	const struct gateway_write *w = arg;
	const struct rs_db_value params[] = { rs_db_text(w->id), rs_db_int(w->state) };
	uint64_t changes = 0;
	int err;

	err = rs_store_exec(st, RS_STMT_GATEWAY_SET_STATE, params, NULL, NULL, &changes);
	if (err)
		return err;
	return changes ? 0 : -ENOENT;
}

int rs_store_gateway_set_state(struct rs_store *st, const char *id, enum rs_gateway_state state)
{
	struct gateway_write w = { .id = id, .state = state };

	if (!st || !rs_store_id_ok(id) || (state != RS_GATEWAY_SERVING && state != RS_GATEWAY_DRAINING))
		return -EINVAL;
	return rs_store_txn(st, RS_TXN_WRITE, gateway_set_state, &w);
}

static int gateway_remove(struct rs_store *st, void *arg)
{
	const struct rs_db_value id = rs_db_text(arg);
	uint64_t changes = 0;
	int err;

	err = rs_store_exec(st, RS_STMT_GATEWAY_DELETE, &id, NULL, NULL, &changes);
	if (err)
		return err;
	if (changes == 0)
		return -ENOENT;
	return rs_store_exec(st, RS_STMT_GATEWAY_SESSIONS_DELETE, &id, NULL, NULL, NULL);
}

int rs_store_gateway_remove(struct rs_store *st, const char *id)
{
	if (!st || !rs_store_id_ok(id))
		return -EINVAL;
	return rs_store_txn(st, RS_TXN_WRITE, gateway_remove, (void *)id);
}

/* ---- listings ---- */

/* A listing of every gateway (all), the live ones, or gateway id alone. */
struct gateway_listing {
	int64_t now_ms;
	bool all;
	const char *id; /* not NULL: this gateway's row only, live or not */
	struct rs_gateway_list list;
};

static int on_load(void *ctx, const struct rs_db_value *cols, size_t n)
{
	struct gateway_listing *gl = ctx;
	char id[RS_ID_MAX + 1];
	struct rs_gateway_row *row;
	int64_t count;

	if (n < 2 || rs_row_text(&cols[0], true, id, sizeof(id)) != 0 ||
	    rs_row_int(&cols[1], 0, UINT32_MAX, &count) != 0)
		return -EIO;
	row = rs_gateway_list_find(&gl->list, id);
	if (row && row->live) {
		if ((uint64_t)row->supervisors + (uint64_t)count > UINT32_MAX)
			return -EIO;
		row->supervisors += (uint32_t)count;
	}
	return 0;
}

static int list_gateways(struct rs_store *st, void *arg)
{
	struct gateway_listing *gl = arg;
	int64_t now = rs_store_now(st, gl->now_ms), live_since = rs_store_time_sub(now, st->opt.ttl_ms);
	const struct rs_db_value params[] = { rs_db_int(now), rs_db_text(gl->id ? gl->id : ""),
					      rs_db_int(live_since) };
	int err;

	gl->list.n = 0;
	if (gl->id)
		err = rs_store_exec(st, RS_STMT_GATEWAY_GET, &params[1], rs_row_collect_gateway, &gl->list, NULL);
	else if (gl->all)
		err = rs_store_exec(st, RS_STMT_GATEWAYS_ALL, NULL, rs_row_collect_gateway, &gl->list, NULL);
	else
		err = rs_store_exec(st, RS_STMT_GATEWAYS_LIVE, &params[2], rs_row_collect_gateway, &gl->list, NULL);
	if (err)
		return err;
	rs_gateway_list_sort(&gl->list);
	/* A live gateway's supervisors: its attached count, then its
	 * unexpired reservations added (on_load). */
	for (size_t i = 0; i < gl->list.n; i++) {
		struct rs_gateway_row *row = &gl->list.rows[i];

		row->live = rs_store_gateway_live(row->heartbeat_ms, live_since);
		row->supervisors = row->live ? row->attached : 0;
	}
	/* One gateway's count reads only its part of the pending index. */
	if (gl->id)
		return rs_store_exec(st, RS_STMT_GATEWAY_PENDING_LOAD, params, on_load, gl, NULL);
	return rs_store_exec(st, RS_STMT_PENDING_LOADS, params, on_load, gl, NULL);
}

int rs_store_list_gateways(struct rs_store *st, int64_t now_ms, bool all, struct rs_gateway_row **rows, size_t *n)
{
	struct gateway_listing gl = { .now_ms = now_ms, .all = all };
	int err;

	if (!rows || !n)
		return -EINVAL;
	*rows = NULL;
	*n = 0;
	if (!st)
		return -EINVAL;
	err = rs_store_txn(st, RS_TXN_READ, list_gateways, &gl);
	if (err) {
		free(gl.list.rows);
		return err;
	}
	*rows = gl.list.rows;
	*n = gl.list.n;
	return 0;
}

int rs_store_gateway_get(struct rs_store *st, const char *id, int64_t now_ms, struct rs_gateway_row *row)
{
	struct gateway_listing gl = { .now_ms = now_ms, .id = id };
	int err;

	if (!st || !rs_store_id_ok(id) || !row)
		return -EINVAL;
	err = rs_store_txn(st, RS_TXN_READ, list_gateways, &gl);
	if (!err && gl.list.n == 0)
		err = -ENOENT;
	if (!err && gl.list.n > 1)
		err = -EIO; /* id is the primary key */
	if (!err)
		*row = gl.list.rows[0];
	free(gl.list.rows);
	return err;
}

struct session_listing {
	int64_t caller_ms;         /* the caller's time */
	int64_t now_ms, live_since; /* on the store's clock (list_sessions) */
	bool all;
	struct rs_session_row *rows;
	size_t n, cap;
};

static int on_session(void *ctx, const struct rs_db_value *cols, size_t n)
{
	struct session_listing *sl = ctx;
	struct rs_session_row *row;
	int64_t gateway_heartbeat;
	bool gateway_live = false;
	int err;

	if (n < 10)
		return -EIO;
	if (sl->n == sl->cap) {
		size_t cap = sl->cap ? sl->cap * 2 : 64;
		struct rs_session_row *rows = realloc(sl->rows, cap * sizeof(*rows));

		if (!rows)
			return -ENOMEM;
		sl->rows = rows;
		sl->cap = cap;
	}
	row = &sl->rows[sl->n];
	err = rs_row_session(cols, n, row);
	if (err)
		return err;
	if (cols[9].type != RS_DB_NULL) {
		if (rs_row_int(&cols[9], INT64_MIN, INT64_MAX, &gateway_heartbeat) != 0)
			return -EIO;
		gateway_live = rs_store_gateway_live(gateway_heartbeat, sl->live_since);
	}
	row->live = gateway_live && rs_store_session_counts(row, sl->now_ms);
	sl->n++;
	return 0;
}

static int session_cmp(const void *a, const void *b)
{
	const struct rs_session_row *x = a, *y = b;
	int c = strcmp(x->gateway_id, y->gateway_id);

	return c ? c : strcmp(x->member_id, y->member_id);
}

static int list_sessions(struct rs_store *st, void *arg)
{
	struct session_listing *sl = arg;
	struct rs_db_value params[2];

	sl->now_ms = rs_store_now(st, sl->caller_ms);
	sl->live_since = rs_store_time_sub(sl->now_ms, st->opt.ttl_ms);
	params[0] = rs_db_int(sl->live_since);
	params[1] = rs_db_int(sl->now_ms);
	sl->n = 0;
	if (sl->all)
		return rs_store_exec(st, RS_STMT_SESSIONS_ALL, NULL, on_session, sl, NULL);
	return rs_store_exec(st, RS_STMT_SESSIONS_LIVE, params, on_session, sl, NULL);
}

int rs_store_list_sessions(struct rs_store *st, int64_t now_ms, bool all, struct rs_session_row **rows, size_t *n)
{
	struct session_listing sl = { .caller_ms = now_ms, .all = all };
	int err;

	if (!rows || !n)
		return -EINVAL;
	*rows = NULL;
	*n = 0;
	if (!st)
		return -EINVAL;
	err = rs_store_txn(st, RS_TXN_READ, list_sessions, &sl);
	if (err) {
		free(sl.rows);
		return err;
	}
	if (sl.n > 1)
		qsort(sl.rows, sl.n, sizeof(*sl.rows), session_cmp);
	*rows = sl.rows;
	*n = sl.n;
	return 0;
}

/* ---- heartbeats and session updates ---- */

struct heartbeat {
	const char *gateway_id;
	int64_t now_ms;
};

static int heartbeat(struct rs_store *st, void *arg)
{
	const struct heartbeat *hb = arg;

	return rs_store_gateway_touch(st, hb->gateway_id, rs_store_now(st, hb->now_ms));
}

int rs_store_heartbeat(struct rs_store *st, const char *gateway_id, int64_t now_ms)
{
	struct heartbeat hb = { gateway_id, now_ms };

	if (!st || !rs_store_id_ok(gateway_id))
		return -EINVAL;
	return rs_store_txn(st, RS_TXN_WRITE, heartbeat, &hb);
}

struct session_key {
	const char *gateway_id;
	const char *member_id;
	uint64_t epoch;
	uint32_t sandboxes;
};

static int session_sandboxes(struct rs_store *st, void *arg)
{
	const struct session_key *k = arg;
	const struct rs_db_value params[] = {
		rs_db_text(k->member_id),
		rs_db_int((int64_t)k->epoch),
		rs_db_text(k->gateway_id),
		rs_db_int(k->sandboxes),
	};
	uint64_t changes = 0;
	int err;

	err = rs_store_exec(st, RS_STMT_SESSION_SANDBOXES, params, NULL, NULL, &changes);
	if (err)
		return err;
	return changes ? 0 : -ESTALE;
}

int rs_store_session_sandboxes(struct rs_store *st, const char *gateway_id, const char *member_id,
			       uint64_t epoch, uint32_t sandboxes)
{
	struct session_key k = { gateway_id, member_id, epoch, sandboxes };

	if (!st || !rs_store_id_ok(gateway_id) || !rs_store_id_ok(member_id) || epoch > INT64_MAX)
		return -EINVAL;
	/* One row's count, read by no placement: without the writers' lock,
	 * so that a fleet's sandbox reports never queue behind admissions. */
	return rs_store_txn(st, RS_TXN_WRITE_ROW, session_sandboxes, &k);
}

/* Reads the row first: an active row leaving takes its gateway's count. */
static int session_end(struct rs_store *st, void *arg)
{
	const struct session_key *k = arg;
	const struct rs_db_value params[] = {
		rs_db_text(k->member_id),
		rs_db_int((int64_t)k->epoch),
		rs_db_text(k->gateway_id),
	};
	struct rs_member_row m;
	uint64_t changes = 0;
	int err;

	err = rs_store_member_row(st, k->member_id, &m);
	if (err || !m.found || m.row.epoch != k->epoch || strcmp(m.row.gateway_id, k->gateway_id) != 0)
		return err; /* moved on, or gone: nothing to delete */
	err = rs_store_exec(st, RS_STMT_SESSION_DELETE, params, NULL, NULL, &changes);
	if (err || changes != 1)
		return err ? err : -EIO; /* the row just read must be there */
	return rs_store_attached_move(st, &m.row, NULL);
}

int rs_store_session_end(struct rs_store *st, const char *gateway_id, const char *member_id, uint64_t epoch)
{
	struct session_key k = { gateway_id, member_id, epoch, 0 };

	if (!st || !rs_store_id_ok(gateway_id) || !rs_store_id_ok(member_id) || epoch > INT64_MAX)
		return -EINVAL;
	return rs_store_txn(st, RS_TXN_WRITE, session_end, &k);
}

struct leave {
	struct session_key k;
	int64_t now_ms;
	uint32_t grace_ms;
};

/* The attachment becomes a reservation at the same gateway: its count
 * moves from attached to pending (rs_store_member_write keeps the
 * gateway's attached count), and its place holds until now + grace. */
static int session_leave(struct rs_store *st, void *arg)
{
	const struct leave *l = arg;
	struct rs_member_row m;
	struct rs_session_row r;
	int err;

	if (l->grace_ms == 0)
		return session_end(st, (void *)&l->k);
	err = rs_store_member_row(st, l->k.member_id, &m);
	if (err || !m.found || m.row.epoch != l->k.epoch || strcmp(m.row.gateway_id, l->k.gateway_id) != 0)
		return err; /* moved on, or gone: nothing to keep */
	if (m.row.state != RS_SESSION_ACTIVE)
		return session_end(st, (void *)&l->k);
	r = m.row;
	r.state = RS_SESSION_PENDING;
	r.expires_ms = rs_store_time_add(rs_store_now(st, l->now_ms), l->grace_ms);
	return rs_store_member_write(st, &m, &r, rs_store_now(st, l->now_ms));
}

int rs_store_session_leave(struct rs_store *st, const char *gateway_id, const char *member_id, uint64_t epoch,
			   int64_t now_ms, uint32_t grace_ms)
{
	struct leave l = { { gateway_id, member_id, epoch, 0 }, now_ms, grace_ms };

	if (!st || !rs_store_id_ok(gateway_id) || !rs_store_id_ok(member_id) || epoch > INT64_MAX)
		return -EINVAL;
	return rs_store_txn(st, RS_TXN_WRITE, session_leave, &l);
}
