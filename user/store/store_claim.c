/* store_claim.c - rs_store_session_claim: a gateway that accepted a
 * supervisor while the store was unavailable (degraded) tells the store
 * about it once it answers again, so nobody has to reconnect for the ledger
 * to be right.
 *
 * The member's row is read and written inside one write transaction, and
 * write transactions are serialized across every handle (backend.h), so
 * comparing epochs in C is as safe as a conditional upsert and needs no
 * statement of its own.  Epochs decide, as everywhere: while the store was
 * away the supervisor may have reconnected elsewhere, and whichever gateway
 * claims first, the newer epoch ends in the row and the older connection
 * learns it is superseded (from its claim, or from its next heartbeat).
 *
 * A claim is not a placement: the member stays where it landed, even above
 * the cap (the degraded accept already happened; nothing moves anyone but a
 * drain). */
#include <errno.h>
#include <string.h>

#include "ringsteer/proto.h"
#include "store_internal.h"
#include "store_snapshot.h"

/* Writes c's row: active at c->gateway_id, live for a TTL from now. */
static int write_row(struct rs_store *st, const struct rs_session_claim *c)
{
	const struct rs_db_value params[] = {
		rs_db_text(c->member_id),
		rs_db_text(c->instance_id ? c->instance_id : ""),
		rs_db_int((int64_t)c->epoch),
		rs_db_text(c->gateway_id),
		rs_db_int(c->sandboxes),
		rs_db_text(c->source ? c->source : ""),
		rs_db_int(c->now_ms),
		rs_db_int(rs_store_time_add(c->now_ms, st->opt.ttl_ms)),
		rs_db_int(RS_SESSION_ACTIVE),
	};

	return st->be->exec(st->db, RS_STMT_SESSION_UPSERT, params, NULL, NULL, NULL);
}

static int claim(struct rs_store *st, void *arg)
{
	const struct rs_session_claim *c = arg;
	struct rs_member_row m;
	int err;

	/* -ENOENT when we have no row: a session on a gateway the store does
	 * not know would count for nothing; the heartbeat registers first. */
	err = rs_store_gateway_touch(st, c->gateway_id, c->now_ms);
	if (err)
		return err;
	err = rs_store_member_row(st, c->member_id, &m);
	if (err)
		return err;
	/* An equal epoch is this very connection (a claim retried after a
	 * commit whose answer was lost): fine here, never somewhere else. */
	if (m.found && (m.row.epoch > c->epoch ||
			(m.row.epoch == c->epoch && strcmp(m.row.gateway_id, c->gateway_id) != 0)))
		return -ESTALE;
	return write_row(st, c);
}

int rs_store_session_claim(struct rs_store *st, const struct rs_session_claim *c)
{
	if (!st || !c || !rs_store_id_ok(c->gateway_id) || !rs_store_id_ok(c->member_id) || c->epoch > INT64_MAX ||
	    (c->instance_id && !rs_store_text_ok(c->instance_id, RS_INSTANCE_MAX)) ||
	    (c->source && !rs_store_text_ok(c->source, RS_ENDPOINT_MAX)))
		return -EINVAL;
	return rs_store_txn(st, RS_TXN_WRITE, claim, (void *)c);
}
