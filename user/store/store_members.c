/* SPDX-License-Identifier: Apache-2.0 */
/* store_members.c - a batch's member rows in memory (store_members.h): one
 * read before the batch decides, one write at its end.
 *
 * Where the backend has batch hooks (backend.h: PostgreSQL, where every
 * statement is a round trip) each way is one statement whatever the
 * batch's size; otherwise (SQLite, in process) the same table is read and
 * written a row at a time through the statements a single admission uses.
 * Either way the decisions are taken over this table, so both backends
 * decide exactly alike.
 *
 * A member repeated in the batch has one slot: a later item reads what the
 * earlier one left, and only its last row is written (ON CONFLICT may
 * touch a row once per statement).  Its attached count moves once, from
 * its row before the batch to that last row, which is the sum of the
 * moves each intermediate write would have made. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store_members.h"

static int slot_cmp(const void *a, const void *b)
{
	return strcmp(((const struct rs_member_slot *)a)->member_id, ((const struct rs_member_slot *)b)->member_id);
}

/* bsearch's key against a slot: the key is the member id itself. */
static int key_cmp(const void *key, const void *slot)
{
	return strcmp(key, ((const struct rs_member_slot *)slot)->member_id);
}

struct rs_member_slot *rs_member_table_find(const struct rs_member_table *t, const char *member_id)
{
	if (t->n == 0)
		return NULL; /* slots may be NULL then, which bsearch must not get */
	return bsearch(member_id, t->slots, t->n, sizeof(*t->slots), key_cmp);
}

/* An rs_db_row_fn filing one session row under its member's slot: a row
 * of a member not asked for, or a second row of one, is -EIO (member_id
 * is the primary key). */
static int on_slot_row(void *ctx, const struct rs_db_value *cols, size_t n)
{
	struct rs_member_table *t = ctx;
	struct rs_session_row row;
	struct rs_member_slot *slot;

	if (rs_row_session(cols, n, &row) != 0)
		return -EIO;
	slot = rs_member_table_find(t, row.member_id);
	if (!slot || slot->before.found)
		return -EIO;
	slot->before.found = true;
	slot->before.row = row;
	return 0;
}

/* Reads the slots' rows in one statement through the backend's hook. */
static int read_at_once(struct rs_store *st, struct rs_member_table *t)
{
	const char **ids = malloc(t->n * sizeof(*ids));
	int err;

	if (!ids)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++)
		ids[i] = t->slots[i].member_id;
	st->statements++;
	err = st->be->read_sessions(st->db, ids, t->n, on_slot_row, t);
	free(ids);
	return err;
}

int rs_member_table_read(struct rs_store *st, struct rs_member_table *t, const char *const *ids, size_t n)
{
	size_t kept = 0;
	int err = 0;

	rs_member_table_free(t);
	if (n == 0)
		return 0;
	t->slots = calloc(n, sizeof(*t->slots));
	if (!t->slots)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		size_t len = strnlen(ids[i], sizeof(t->slots[i].member_id));

		if (len == 0 || len >= sizeof(t->slots[i].member_id))
			return -EINVAL; /* the caller checks ids: a bug */
		memcpy(t->slots[i].member_id, ids[i], len + 1);
	}
	qsort(t->slots, n, sizeof(*t->slots), slot_cmp);
	for (size_t i = 0; i < n; i++)
		if (kept == 0 || strcmp(t->slots[kept - 1].member_id, t->slots[i].member_id) != 0)
			t->slots[kept++] = t->slots[i];
	t->n = kept;
	if (st->be->read_sessions)
		err = read_at_once(st, t);
	else
		for (size_t i = 0; !err && i < t->n; i++)
			err = rs_store_member_row(st, t->slots[i].member_id, &t->slots[i].before);
	if (err)
		return err;
	for (size_t i = 0; i < t->n; i++)
		t->slots[i].row = t->slots[i].before;
	return 0;
}

void rs_member_table_set(struct rs_member_slot *slot, const struct rs_session_row *r, int64_t now_ms)
{
	slot->row.found = true;
	slot->row.row = *r;
	slot->row.row.heartbeat_ms = now_ms;
	slot->row.row.live = false; /* as a row read back says (store_rows.c) */
	slot->written = true;
}

static int delta_cmp(const void *a, const void *b)
{
	return strcmp(((const struct rs_attached_delta *)a)->gateway_id,
		      ((const struct rs_attached_delta *)b)->gateway_id);
}

/* The attached-count moves of the written slots, one per gateway, none of
 * zero: each slot's as rs_store_attached_move() would make it from its row
 * before to its last row.  d has room for twice the written slots.
 * Returns how many. */
static size_t attached_deltas(const struct rs_member_table *t, struct rs_attached_delta *d)
{
	size_t n = 0, kept = 0;

	for (size_t i = 0; i < t->n; i++) {
		const struct rs_member_slot *s = &t->slots[i];
		const char *from, *to;

		if (!s->written)
			continue;
		from = s->before.found && s->before.row.state == RS_SESSION_ACTIVE ? s->before.row.gateway_id : NULL;
		to = s->row.row.state == RS_SESSION_ACTIVE ? s->row.row.gateway_id : NULL;
		if (from && to && strcmp(from, to) == 0)
			continue; /* still attached there */
		if (from)
			d[n++] = (struct rs_attached_delta){ from, -1 };
		if (to)
			d[n++] = (struct rs_attached_delta){ to, 1 };
	}
	if (n > 1)
		qsort(d, n, sizeof(*d), delta_cmp);
	for (size_t i = 0; i < n; i++) {
		if (kept && strcmp(d[kept - 1].gateway_id, d[i].gateway_id) == 0)
			d[kept - 1].delta += d[i].delta;
		else
			d[kept++] = d[i];
	}
	n = kept;
	kept = 0;
	for (size_t i = 0; i < n; i++)
		if (d[i].delta != 0)
			d[kept++] = d[i];
	return kept;
}

/* Writes the written slots in one statement through the backend's hook. */
static int write_at_once(struct rs_store *st, const struct rs_member_table *t, size_t written, int64_t now_ms)
{
	struct rs_session_row *rows = NULL;
	struct rs_attached_delta *deltas = NULL;
	size_t n = 0, n_deltas;
	int err = -ENOMEM;

	if (written > SIZE_MAX / 2)
		return -ENOMEM;
	rows = malloc(written * sizeof(*rows));
	deltas = malloc(2 * written * sizeof(*deltas));
	if (!rows || !deltas)
		goto cleanup;
	for (size_t i = 0; i < t->n; i++)
		if (t->slots[i].written)
			rows[n++] = t->slots[i].row.row;
	n_deltas = attached_deltas(t, deltas);
	st->statements++;
	err = st->be->write_sessions(st->db, rows, n, now_ms, deltas, n_deltas);
cleanup:
	free(rows);
	free(deltas);
	return err;
}

int rs_member_table_write(struct rs_store *st, const struct rs_member_table *t, int64_t now_ms)
{
	size_t written = 0;
	int err = 0;

	for (size_t i = 0; i < t->n; i++)
		written += t->slots[i].written;
	if (written == 0)
		return 0;
	if (st->be->write_sessions)
		return write_at_once(st, t, written, now_ms);
	for (size_t i = 0; !err && i < t->n; i++)
		if (t->slots[i].written)
			err = rs_store_member_write(st, &t->slots[i].before, &t->slots[i].row.row, now_ms);
	return err;
}

void rs_member_table_free(struct rs_member_table *t)
{
	free(t->slots);
	t->slots = NULL;
	t->n = 0;
}
