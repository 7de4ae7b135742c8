/* SPDX-License-Identifier: Apache-2.0 */
/* store_rows.c - turning values read from a backend into the public row
 * structs.  Guarantees: nothing read from the database is copied into a
 * fixed array before its type, length and range are checked; a value that
 * fails a check makes the whole read -EIO (a corrupt or foreign row is an
 * I/O error, never an overflow or a silently truncated id). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ringsteer/proto.h"
#include "store_internal.h"

int rs_row_text(const struct rs_db_value *v, bool nonempty, char *dst, size_t size)
{
	if (v->type != RS_DB_TEXT || (!v->s && v->len))
		return -EIO;
	if (v->len >= size || (nonempty && v->len == 0))
		return -EIO;
	if (v->len && memchr(v->s, '\0', v->len))
		return -EIO;
	if (v->len)
		memcpy(dst, v->s, v->len);
	dst[v->len] = '\0';
	return 0;
}

int rs_row_int(const struct rs_db_value *v, int64_t lo, int64_t hi, int64_t *out)
{
	if (v->type != RS_DB_INT || v->i < lo || v->i > hi)
		return -EIO;
	*out = v->i;
	return 0;
}

int rs_row_gateway(const struct rs_db_value *cols, size_t n, struct rs_gateway_row *out)
{
	int64_t state, attached;
	int err;

	if (n < 5)
		return -EIO;
	memset(out, 0, sizeof(*out));
	err = rs_row_text(&cols[0], true, out->id, sizeof(out->id));
	if (!err)
		err = rs_row_text(&cols[1], false, out->peer, sizeof(out->peer));
	if (!err)
		err = rs_row_int(&cols[2], RS_GATEWAY_SERVING, RS_GATEWAY_DRAINING, &state);
	if (!err)
		err = rs_row_int(&cols[3], INT64_MIN, INT64_MAX, &out->heartbeat_ms);
	if (!err)
		err = rs_row_int(&cols[4], 0, UINT32_MAX, &attached);
	if (err)
		return err;
	out->state = (uint8_t)state;
	out->attached = (uint32_t)attached;
	return 0;
}

int rs_row_session(const struct rs_db_value *cols, size_t n, struct rs_session_row *out)
{
	int64_t epoch, sandboxes, state;
	int err;

	if (n < 9)
		return -EIO;
	memset(out, 0, sizeof(*out));
	err = rs_row_text(&cols[0], true, out->member_id, sizeof(out->member_id));
	if (!err)
		err = rs_row_text(&cols[1], false, out->instance_id, sizeof(out->instance_id));
	if (!err)
		err = rs_row_int(&cols[2], 0, INT64_MAX, &epoch);
	if (!err)
		err = rs_row_text(&cols[3], true, out->gateway_id, sizeof(out->gateway_id));
	if (!err)
		err = rs_row_int(&cols[4], 0, UINT32_MAX, &sandboxes);
	if (!err)
		err = rs_row_text(&cols[5], false, out->source, sizeof(out->source));
	if (!err)
		err = rs_row_int(&cols[6], INT64_MIN, INT64_MAX, &out->heartbeat_ms);
	if (!err)
		err = rs_row_int(&cols[7], INT64_MIN, INT64_MAX, &out->expires_ms);
	if (!err)
		err = rs_row_int(&cols[8], RS_SESSION_PENDING, RS_SESSION_ACTIVE, &state);
	if (err)
		return err;
	out->epoch = (uint64_t)epoch;
	out->sandboxes = (uint32_t)sandboxes;
	out->state = (uint8_t)state;
	return 0;
}

int rs_row_collect_gateway(void *ctx, const struct rs_db_value *cols, size_t n)
{
	struct rs_gateway_list *l = ctx;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		struct rs_gateway_row *rows = realloc(l->rows, cap * sizeof(*rows));

		if (!rows)
			return -ENOMEM;
		l->rows = rows;
		l->cap = cap;
	}
	if (rs_row_gateway(cols, n, &l->rows[l->n]) != 0)
		return -EIO;
	l->n++;
	return 0;
}

static int gateway_cmp(const void *a, const void *b)
{
	return strcmp(((const struct rs_gateway_row *)a)->id, ((const struct rs_gateway_row *)b)->id);
}

void rs_gateway_list_sort(struct rs_gateway_list *l)
{
	if (l->n > 1)
		qsort(l->rows, l->n, sizeof(*l->rows), gateway_cmp);
}

struct rs_gateway_row *rs_gateway_list_find(const struct rs_gateway_list *l, const char *id)
{
	size_t lo = 0, hi = l->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(l->rows[mid].id, id);

		if (c == 0)
			return &l->rows[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}
