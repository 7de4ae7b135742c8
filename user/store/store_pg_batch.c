/* SPDX-License-Identifier: Apache-2.0 */
/* store_pg_batch.c - the PostgreSQL backend's batch hooks: a batch's
 * member rows read in one statement (RS_STMT_SESSIONS_GET_MANY) and
 * written in one (RS_STMT_SESSIONS_WRITE_MANY), so that a batch of 256
 * admissions pays the round trips of one.
 *
 * Each array goes as one text parameter holding an array literal, and the
 * statement casts it ($1::text[]): the statements run through the
 * backend's own exec (prepared once per connection, checked against the
 * statement table, every wait bounded), with no binary array format to
 * get wrong.  Every text element is double-quoted with '"' and '\'
 * escaped, so no id, however odd, can split or end its array (NUL is
 * refused by exec itself: PostgreSQL's text cannot hold one). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_pg_batch.h"

/* One array literal being built. */
struct literal {
	char *s;
	size_t len, cap;
};

static int reserve(struct literal *l, size_t more)
{
	size_t cap;
	char *s;

	if (more > SIZE_MAX / 2 - l->len)
		return -ENOMEM;
	if (l->len + more < l->cap)
		return 0;
	cap = l->cap ? l->cap : 256;
	while (cap <= l->len + more)
		cap *= 2;
	s = realloc(l->s, cap);
	if (!s)
		return -ENOMEM;
	l->s = s;
	l->cap = cap;
	return 0;
}

/* Opens (first) or continues the array: '{' or ','. */
static int put_sep(struct literal *l, bool first)
{
	int err = reserve(l, 1);

	if (!err)
		l->s[l->len++] = first ? '{' : ',';
	return err;
}

static int put_text(struct literal *l, bool first, const char *v)
{
	size_t n = strlen(v);
	int err = put_sep(l, first);

	if (!err && n > SIZE_MAX / 4)
		err = -ENOMEM;
	if (!err)
		err = reserve(l, 2 * n + 2); /* each byte escaped at worst, and the quotes */
	if (err)
		return err;
	l->s[l->len++] = '"';
	for (size_t i = 0; i < n; i++) {
		if (v[i] == '"' || v[i] == '\\')
			l->s[l->len++] = '\\';
		l->s[l->len++] = v[i];
	}
	l->s[l->len++] = '"';
	return 0;
}

static int put_int(struct literal *l, bool first, int64_t v)
{
	int err = put_sep(l, first);

	if (!err)
		err = reserve(l, 24);
	if (!err)
		l->len += (size_t)snprintf(l->s + l->len, 24, "%" PRId64, v);
	return err;
}

/* Closes the array ("{}" when empty) and NUL-terminates it. */
static int put_end(struct literal *l, bool empty)
{
	int err = reserve(l, 3);

	if (err)
		return err;
	if (empty)
		l->s[l->len++] = '{';
	l->s[l->len++] = '}';
	l->s[l->len] = '\0';
	return 0;
}

static struct rs_db_value literal_value(const struct literal *l)
{
	return (struct rs_db_value){ .type = RS_DB_TEXT, .s = l->s, .len = l->len };
}

int rs_pg_read_sessions(struct rs_db *db, const char *const *ids, size_t n, rs_db_row_fn on_row, void *ctx)
{
	struct literal l = { 0 };
	struct rs_db_value param;
	int err = 0;

	for (size_t i = 0; !err && i < n; i++)
		err = put_text(&l, i == 0, ids[i]);
	if (!err)
		err = put_end(&l, n == 0);
	if (err)
		goto cleanup;
	param = literal_value(&l);
	err = rs_store_pg_backend.exec(db, RS_STMT_SESSIONS_GET_MANY, &param, on_row, ctx, NULL);
cleanup:
	free(l.s);
	return err;
}

/* The write's array columns, in RS_STMT_SESSIONS_WRITE_MANY's order. */
enum {
	COL_MEMBER,
	COL_INSTANCE,
	COL_EPOCH,
	COL_GATEWAY,
	COL_SANDBOXES,
	COL_SOURCE,
	COL_EXPIRES,
	COL_STATE,
	ROW_COLS
};

static int put_row(struct literal *l, bool first, const struct rs_session_row *r)
{
	int err = put_text(&l[COL_MEMBER], first, r->member_id);

	if (!err)
		err = put_text(&l[COL_INSTANCE], first, r->instance_id);
	if (!err && r->epoch > INT64_MAX)
		err = -EINVAL; /* the caller checks epochs: a bug */
	if (!err)
		err = put_int(&l[COL_EPOCH], first, (int64_t)r->epoch);
	if (!err)
		err = put_text(&l[COL_GATEWAY], first, r->gateway_id);
	if (!err)
		err = put_int(&l[COL_SANDBOXES], first, r->sandboxes);
	if (!err)
		err = put_text(&l[COL_SOURCE], first, r->source);
	if (!err)
		err = put_int(&l[COL_EXPIRES], first, r->expires_ms);
	if (!err)
		err = put_int(&l[COL_STATE], first, r->state);
	return err;
}

int rs_pg_write_sessions(struct rs_db *db, const struct rs_session_row *rows, size_t n, int64_t now_ms,
			 const struct rs_attached_delta *deltas, size_t n_deltas)
{
	struct literal l[ROW_COLS] = { 0 }, ids = { 0 }, adds = { 0 };
	struct rs_db_value params[ROW_COLS + 3];
	int err = 0;

	for (size_t i = 0; !err && i < n; i++)
		err = put_row(l, i == 0, &rows[i]);
	for (int c = 0; !err && c < ROW_COLS; c++)
		err = put_end(&l[c], n == 0);
	for (size_t i = 0; !err && i < n_deltas; i++) {
		err = put_text(&ids, i == 0, deltas[i].gateway_id);
		if (!err)
			err = put_int(&adds, i == 0, deltas[i].delta);
	}
	if (!err)
		err = put_end(&ids, n_deltas == 0);
	if (!err)
		err = put_end(&adds, n_deltas == 0);
	if (err)
		goto cleanup;
	for (int c = 0; c < ROW_COLS; c++)
		params[c] = literal_value(&l[c]);
	params[ROW_COLS] = rs_db_int(now_ms);
	params[ROW_COLS + 1] = literal_value(&ids);
	params[ROW_COLS + 2] = literal_value(&adds);
	err = rs_store_pg_backend.exec(db, RS_STMT_SESSIONS_WRITE_MANY, params, NULL, NULL, NULL);
cleanup:
	for (int c = 0; c < ROW_COLS; c++)
		free(l[c].s);
	free(ids.s);
	free(adds.s);
	return err;
}
