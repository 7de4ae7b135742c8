/* SPDX-License-Identifier: Apache-2.0 */
/* store_snapshot.c - reading the placement snapshot inside the caller's
 * transaction (store_snapshot.h): the live gateways, the ring and placer
 * over them (cached in the handle), their loads, a member's row and its
 * stale record, and writing a member's row with the attached counts kept.
 *
 * Guarantee: the loads never read an active session row.  A live
 * gateway's load is its attached count (its row) plus its unexpired
 * reservations (one range of the sessions_pending index), so reading it
 * costs the same with ten sessions or a hundred thousand. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ringsteer/placer.h"
#include "store_internal.h"
#include "store_snapshot.h"

static int on_member_row(void *ctx, const struct rs_db_value *cols, size_t n)
{
	struct rs_member_row *m = ctx;

	if (m->found)
		return -EIO; /* member_id is the primary key */
	if (rs_row_session(cols, n, &m->row) != 0)
		return -EIO;
	m->found = true;
	return 0;
}

/* Makes room for n gateways in the per-gateway scratch arrays. */
static int reserve_scratch(struct rs_store *st, size_t n)
{
	const char **ids;
	uint32_t *loads;

	if (n <= st->scratch_cap)
		return 0;
	ids = realloc(st->ids, n * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	st->ids = ids;
	loads = realloc(st->loads, n * sizeof(*loads));
	if (!loads)
		return -ENOMEM;
	st->loads = loads;
	st->scratch_cap = n;
	return 0;
}

/* Makes st->ring the ring of the live gateways in st->live (sorted by id),
 * rebuilding it and its placer only if the id set changed.  Both orders are
 * byte order, so afterwards st->live.rows[i] is ring gateway i. */
static int ensure_ring(struct rs_store *st)
{
	size_t n = st->live.n;
	struct rs_ring *ring = NULL;
	struct rs_placer *placer = NULL;
	bool same;
	int err;

	err = reserve_scratch(st, n);
	if (err)
		return err;
	same = st->ring && rs_ring_gateway_count(st->ring) == n;
	for (size_t i = 0; same && i < n; i++)
		same = strcmp(rs_ring_gateway_id(st->ring, i), st->live.rows[i].id) == 0;
	if (same)
		return 0;

	for (size_t i = 0; i < n; i++)
		st->ids[i] = st->live.rows[i].id;
	err = rs_ring_new(st->ids, n, &ring);
	if (err)
		goto cleanup;
	if (rs_ring_gateway_count(ring) != n) {
		err = -EIO; /* an empty or repeated id got past the decoder */
		goto cleanup;
	}
	err = rs_placer_new(ring, &placer);
	if (err)
		goto cleanup;
	rs_placer_free(st->placer);
	rs_ring_free(st->ring);
	st->ring = ring;
	st->placer = placer;
	return 0;
cleanup:
	rs_placer_free(placer);
	rs_ring_free(ring);
	return err;
}

/* Adds a live gateway's unexpired reservations to its load. */
static int on_pending_load(void *ctx, const struct rs_db_value *cols, size_t n)
{
	struct rs_store *st = ctx;
	char id[RS_ID_MAX + 1];
	const struct rs_gateway_row *row;
	uint32_t *load;
	int64_t count;

	if (n < 2 || rs_row_text(&cols[0], true, id, sizeof(id)) != 0 ||
	    rs_row_int(&cols[1], 0, UINT32_MAX, &count) != 0)
		return -EIO;
	row = rs_gateway_list_find(&st->live, id);
	if (!row)
		return 0; /* a dead gateway: its sessions count for nothing */
	load = &st->loads[row - st->live.rows];
	if ((uint64_t)*load + (uint64_t)count > UINT32_MAX)
		return -EIO;
	*load += (uint32_t)count;
	return 0;
}

/* Reads the counted sessions per live gateway into st->loads and the placer. */
static int load_placer(struct rs_store *st, int64_t now)
{
	const struct rs_db_value param = rs_db_int(now);
	int err;

	for (size_t i = 0; i < st->live.n; i++)
		st->loads[i] = st->live.rows[i].attached;
	err = rs_store_exec(st, RS_STMT_PENDING_LOADS, &param, on_pending_load, st, NULL);
	if (err)
		return err;
	for (size_t i = 0; i < st->live.n; i++) {
		const struct rs_gateway_load load = {
			.load = st->loads[i],
			.live = true,
			.draining = st->live.rows[i].state == RS_GATEWAY_DRAINING,
		};

		err = rs_placer_set(st->placer, (uint32_t)i, &load);
		if (err)
			return err;
	}
	return 0;
}

int rs_store_member_row(struct rs_store *st, const char *member_id, struct rs_member_row *m)
{
	const struct rs_db_value member = rs_db_text(member_id);

	*m = (struct rs_member_row){ 0 };
	return rs_store_exec(st, RS_STMT_SESSION_GET, &member, on_member_row, m, NULL);
}

int rs_store_read_live(struct rs_store *st, int64_t live_since)
{
	const struct rs_db_value since = rs_db_int(live_since);
	int err;

	st->live.n = 0;
	err = rs_store_exec(st, RS_STMT_GATEWAYS_LIVE, &since, rs_row_collect_gateway, &st->live, NULL);
	if (err)
		return err;
	rs_gateway_list_sort(&st->live);
	return 0;
}

int rs_store_load_placer(struct rs_store *st, int64_t now)
{
	int err = ensure_ring(st);

	if (err)
		return err;
	return load_placer(st, now);
}

bool rs_store_live_session(const struct rs_store *st, const struct rs_member_row *m)
{
	return m->found && m->row.state == RS_SESSION_ACTIVE && rs_gateway_list_find(&st->live, m->row.gateway_id);
}

int rs_store_stale_record(struct rs_store *st, const struct rs_member_row *m, int64_t now, int *stale)
{
	*stale = -1;
	if (m->found && rs_store_session_counts(&m->row, now)) {
		const struct rs_gateway_row *old = rs_gateway_list_find(&st->live, m->row.gateway_id);

		if (old) {
			*stale = (int)(old - st->live.rows);
			if (st->loads[*stale] == 0)
				return -EIO; /* the count query missed a row it must see */
		}
	}
	return 0;
}

enum rs_record_kind rs_store_record_kind(const struct rs_member_row *m, int stale)
{
	if (stale < 0)
		return RS_RECORD_NONE;
	return m->row.state == RS_SESSION_PENDING ? RS_RECORD_RESERVED : RS_RECORD_ATTACHED;
}

void rs_store_lapsed_record(const struct rs_store *st, const struct rs_member_row *m, enum rs_record_kind *kind,
			    int *at)
{
	const struct rs_gateway_row *g;

	if (!m->found || m->row.state != RS_SESSION_PENDING)
		return;
	g = rs_gateway_list_find(&st->live, m->row.gateway_id);
	*kind = RS_RECORD_LAPSED;
	*at = g ? (int)(g - st->live.rows) : -1;
}

int rs_store_member_write(struct rs_store *st, const struct rs_member_row *before, const struct rs_session_row *r,
			  int64_t now_ms)
{
	const struct rs_db_value params[] = {
		rs_db_text(r->member_id),
		rs_db_text(r->instance_id),
		rs_db_int((int64_t)r->epoch),
		rs_db_text(r->gateway_id),
		rs_db_int(r->sandboxes),
		rs_db_text(r->source),
		rs_db_int(now_ms),
		rs_db_int(r->expires_ms),
		rs_db_int(r->state),
	};
	int err;

	err = rs_store_exec(st, RS_STMT_SESSION_UPSERT, params, NULL, NULL, NULL);
	if (err)
		return err;
	return rs_store_attached_move(st, before->found ? &before->row : NULL, r);
}
