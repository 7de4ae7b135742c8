/* SPDX-License-Identifier: Apache-2.0 */
/* store_reservation.c - rs_store_reservation_withdraw: a node agent takes
 * back the pending reservation its steer wrote for a caller that did not
 * arrive.
 *
 * Guarantees: only the row that reservation wrote is deleted (member, its
 * gateway, its exact end, still pending), in one statement, so an arrival
 * that made it active, a newer reservation, or a departure's grace is
 * never touched.  A pending row counts in no attached count (loads count
 * unexpired pending rows by query), so nothing else is adjusted. */
#include <errno.h>

#include "store_internal.h"

struct withdraw {
	const char *member_id, *gateway_id;
	int64_t expires_ms;
	uint64_t changes;
};

static int withdraw_run(struct rs_store *st, void *arg)
{
	struct withdraw *w = arg;
	const struct rs_db_value params[] = {
		rs_db_text(w->member_id),
		rs_db_text(w->gateway_id),
		rs_db_int(w->expires_ms),
	};

	return rs_store_exec(st, RS_STMT_RESERVATION_DELETE, params, NULL, NULL, &w->changes);
}

int rs_store_reservation_withdraw(struct rs_store *st, const char *member_id, const char *gateway_id,
				  int64_t expires_ms)
{
	struct withdraw w = { .member_id = member_id, .gateway_id = gateway_id, .expires_ms = expires_ms };
	int err;

	if (!st || !rs_store_id_ok(member_id) || !rs_store_id_ok(gateway_id))
		return -EINVAL;
	err = rs_store_txn(st, RS_TXN_WRITE, withdraw_run, &w);
	if (err)
		return err;
	return w.changes ? 1 : 0;
}
