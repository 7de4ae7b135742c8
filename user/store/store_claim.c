/* SPDX-License-Identifier: Apache-2.0 */
/* store_claim.c - rs_store_session_claim: a gateway that accepted a
 * supervisor while the store was unavailable (degraded) tells the store
 * about it once it answers again, so nobody has to reconnect for the ledger
 * to be right.
 *
 * The member's row is read and written inside one write transaction, and
 * write transactions are serialized across every handle (backend.h), so
 * comparing epochs in C is as safe as a conditional upsert and needs no
 * statement of its own.  Epochs decide, as everywhere (against the member's
 * live session only, store_snapshot.h): while the store was
 * away the supervisor may have reconnected elsewhere, and whichever gateway
 * claims first, the newer epoch ends in the row and the older connection
 * learns it is superseded (from its claim, or when the supervisor's newer
 * connection ends it).
 *
 * A claim is not a placement: the member stays where it landed.  The claim
 * says whether its gateway is now above the cap, read in the same
 * transaction after the row is written, so that the gateway can place the
 * member by the rule once (a deferred placement, rs_admit.deferred): a
 * member never placed by the rule then moves at most once, and only when
 * its gateway is above the cap with it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ringsteer/proto.h"
#include "store_internal.h"
#include "store_snapshot.h"

/* Writes c's row: active at c->gateway_id, attached now; before is the
 * member's row as read (the attached counts follow it). */
static int write_row(struct rs_store *st, const struct rs_session_claim *c, const struct rs_member_row *before)
{
	struct rs_session_row r = {
		.epoch = c->epoch,
		.sandboxes = c->sandboxes,
		.expires_ms = rs_store_time_add(rs_store_now(st, c->now_ms), st->opt.ttl_ms),
		.state = RS_SESSION_ACTIVE,
	};

	snprintf(r.member_id, sizeof(r.member_id), "%s", c->member_id);
	snprintf(r.instance_id, sizeof(r.instance_id), "%s", c->instance_id ? c->instance_id : "");
	snprintf(r.gateway_id, sizeof(r.gateway_id), "%s", c->gateway_id);
	snprintf(r.source, sizeof(r.source), "%s", c->source ? c->source : "");
	return rs_store_member_write(st, before, &r, rs_store_now(st, c->now_ms));
}

/* The claiming gateway's load and the cap, over the live snapshot read
 * after the row is written (the attached counts are in the gateway rows). */
static int read_cap(struct rs_store *st, struct rs_session_claim *c)
{
	const struct rs_gateway_row *here;
	uint64_t n = 0, g = 0;
	int err;

	err = rs_store_read_live(st, rs_store_time_sub(rs_store_now(st, c->now_ms), st->opt.ttl_ms));
	if (!err)
		err = rs_store_load_placer(st, rs_store_now(st, c->now_ms));
	if (err)
		return err;
	here = rs_gateway_list_find(&st->live, c->gateway_id);
	if (!here)
		return -EIO; /* its heartbeat was just written: it must be live */
	for (size_t i = 0; i < st->live.n; i++) {
		n += st->loads[i];
		g += st->live.rows[i].state == RS_GATEWAY_SERVING;
	}
	c->load = st->loads[here - st->live.rows];
	c->cap = (uint32_t)(g ? (n + g - 1) / g : n);
	c->above_cap = c->load > c->cap;
	return 0;
}

/* Sets *live to whether m is the member's live session
 * (rs_store_live_session).  The live gateways are read only for an active
 * row at another gateway: the claiming one was just touched, so the usual
 * claim costs no statement more. */
static int live_session(struct rs_store *st, const struct rs_session_claim *c, const struct rs_member_row *m,
			bool *live)
{
	int err;

	*live = m->found && m->row.state == RS_SESSION_ACTIVE;
	if (!*live || strcmp(m->row.gateway_id, c->gateway_id) == 0)
		return 0;
	err = rs_store_read_live(st, rs_store_time_sub(rs_store_now(st, c->now_ms), st->opt.ttl_ms));
	if (err)
		return err;
	*live = rs_store_live_session(st, m);
	return 0;
}

static int claim(struct rs_store *st, void *arg)
{
	struct rs_session_claim *c = arg;
	struct rs_member_row m;
	bool live;
	int err;

	/* -ENOENT when we have no row: a session on a gateway the store does
	 * not know would count for nothing; the heartbeat registers first. */
	err = rs_store_gateway_touch(st, c->gateway_id, rs_store_now(st, c->now_ms));
	if (err)
		return err;
	err = rs_store_member_row(st, c->member_id, &m);
	if (!err)
		err = live_session(st, c, &m, &live);
	if (err)
		return err;
	/* Only the member's live session orders it by epoch (as in an
	 * admission: a dead or left row with any epoch is overwritten).  An
	 * equal epoch is this very connection (a claim retried after a commit
	 * whose answer was lost): fine here, never somewhere else. */
	if (live && (m.row.epoch > c->epoch ||
		     (m.row.epoch == c->epoch && strcmp(m.row.gateway_id, c->gateway_id) != 0)))
		return -ESTALE;
	err = write_row(st, c, &m);
	return err ? err : read_cap(st, c);
}

int rs_store_session_claim(struct rs_store *st, struct rs_session_claim *c)
{
	if (c) {
		c->load = c->cap = 0;
		c->above_cap = false;
	}
	if (!st || !c || !rs_store_id_ok(c->gateway_id) || !rs_store_id_ok(c->member_id) || c->epoch > INT64_MAX ||
	    (c->instance_id && !rs_store_text_ok(c->instance_id, RS_INSTANCE_MAX)) ||
	    (c->source && !rs_store_text_ok(c->source, RS_ENDPOINT_MAX)))
		return -EINVAL;
	return rs_store_txn(st, RS_TXN_WRITE, claim, c);
}
