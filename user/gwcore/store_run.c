/* SPDX-License-Identifier: Apache-2.0 */
/* store_run.c - running a core's store request over a store's table of
 * functions, and the table over the ringsteer ledger (rs_store: SQLite or
 * PostgreSQL).  Times are read by the caller when the request runs, not
 * when it was queued: rows compare wall clocks. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ringsteer/gateway_store.h"

/* The start's registration, deferred (the store was away then): the rows
 * an earlier process left active here end, as they would have at the
 * start, but this process may have admitted sessions since, so those it
 * holds stay.  A store without the entry registers, keeping every row. */
static int start_late(const struct rs_gw_store_ops *ops, void *st, struct rs_gw_store_req *req,
		      enum rs_gateway_state state, int64_t now)
{
	if (!ops->gateway_start_holding)
		return ops->gateway_register(st, req->gateway_id, req->peer, state, now);
	return ops->gateway_start_holding(st, req->gateway_id, req->peer, state, now, req->u.heartbeat.held,
					  req->u.heartbeat.n_held);
}

static int heartbeat(const struct rs_gw_store_ops *ops, void *st, struct rs_gw_store_req *req, int64_t now)
{
	enum rs_gateway_state state = req->u.heartbeat.draining ? RS_GATEWAY_DRAINING : RS_GATEWAY_SERVING;
	struct rs_gateway_row row;
	int err;

	/* Our row is to be written (this process never registered), or is
	 * gone (removed, or expired and swept): register, still draining if
	 * we are. */
	if (req->u.heartbeat.register_row) {
		err = start_late(ops, st, req, state, now);
		req->u.heartbeat.registered = err == 0;
	} else {
		err = ops->heartbeat(st, req->gateway_id, now);
		if (err == -ENOENT) {
			err = ops->gateway_register(st, req->gateway_id, req->peer, state, now);
			req->u.heartbeat.registered = err == 0;
		}
	}
	if (err == 0 && req->u.heartbeat.check_drain && ops->gateway_get(st, req->gateway_id, now, &row) == 0)
		req->u.heartbeat.told_drain = row.state == RS_GATEWAY_DRAINING;
	req->u.heartbeat.statements = ops->statements ? ops->statements(st) : 0;
	if (!ops->clock_skew || ops->clock_skew(st, &req->u.heartbeat.clock_skew_ms) != 0)
		req->u.heartbeat.clock_skew_ms = 0;
	return err;
}

static int membership(const struct rs_gw_store_ops *ops, void *st, struct rs_gw_store_req *req, int64_t now)
{
	struct rs_gateway_row *rows = NULL;
	size_t n = 0;
	int err;

	err = ops->list_gateways(st, now, false, &rows, &n);
	for (size_t i = 0; i < n; i++)
		if (rows[i].state == RS_GATEWAY_SERVING && strcmp(rows[i].id, req->gateway_id) != 0)
			req->u.membership.others_serving = true;
	free(rows);
	return err;
}

static int admit(const struct rs_gw_store_ops *ops, void *st, struct rs_gw_store_req *req, int64_t now)
{
	int err;

	for (size_t i = 0; i < req->u.admit.n; i++)
		req->u.admit.a[i].now_ms = now;
	err = ops->admit_batch(st, req->u.admit.a, req->u.admit.n, req->u.admit.errs);
	for (size_t i = 0; err && i < req->u.admit.n; i++)
		req->u.admit.errs[i] = err;
	return err;
}

static const char *const op_labels[RS_GW_STORE_OP_COUNT] = {
	[RS_GW_STORE_ADMIT] = "admit",           [RS_GW_STORE_CLAIM] = "claim",
	[RS_GW_STORE_LEAVE] = "leave",           [RS_GW_STORE_SANDBOXES] = "sandboxes",
	[RS_GW_STORE_HEARTBEAT] = "heartbeat",   [RS_GW_STORE_MEMBERSHIP] = "membership",
	[RS_GW_STORE_DRAINING] = "draining",
};

const char *rs_gw_store_op_label(enum rs_gw_store_op op)
{
	return (unsigned)op < RS_GW_STORE_OP_COUNT ? op_labels[op] : "unknown";
}

int rs_gw_store_run(const struct rs_gw_store_ops *ops, void *st, struct rs_gw_store_req *req, int64_t now_ms)
{
	switch (req->op) {
	case RS_GW_STORE_ADMIT:
		return admit(ops, st, req, now_ms);
	case RS_GW_STORE_CLAIM:
		req->u.claim.now_ms = now_ms;
		return ops->session_claim(st, &req->u.claim);
	case RS_GW_STORE_LEAVE:
		return ops->session_leave(st, req->gateway_id, req->u.leave.member_id, req->u.leave.epoch, now_ms,
					  req->u.leave.grace_ms);
	case RS_GW_STORE_SANDBOXES:
		return ops->session_sandboxes(st, req->gateway_id, req->u.sandboxes.member_id, req->u.sandboxes.epoch,
					      req->u.sandboxes.count);
	case RS_GW_STORE_HEARTBEAT:
		return heartbeat(ops, st, req, now_ms);
	case RS_GW_STORE_MEMBERSHIP:
		return membership(ops, st, req, now_ms);
	case RS_GW_STORE_DRAINING:
		return ops->gateway_register(st, req->gateway_id, req->peer, RS_GATEWAY_DRAINING, now_ms);
	}
	return -EINVAL;
}

static int l_admit_batch(void *st, struct rs_admit *a, size_t n, int *errs)
{
	return rs_store_admit_batch(st, a, n, errs);
}

static int l_claim(void *st, struct rs_session_claim *c)
{
	return rs_store_session_claim(st, c);
}

static int l_leave(void *st, const char *gw, const char *member, uint64_t epoch, int64_t now, uint32_t grace)
{
	return rs_store_session_leave(st, gw, member, epoch, now, grace);
}

static int l_sandboxes(void *st, const char *gw, const char *member, uint64_t epoch, uint32_t n)
{
	return rs_store_session_sandboxes(st, gw, member, epoch, n);
}

static int l_heartbeat(void *st, const char *gw, int64_t now)
{
	return rs_store_heartbeat(st, gw, now);
}

static int l_register(void *st, const char *id, const char *peer, enum rs_gateway_state state, int64_t now)
{
	return rs_store_gateway_register(st, id, peer, state, now);
}

static int l_get(void *st, const char *id, int64_t now, struct rs_gateway_row *row)
{
	return rs_store_gateway_get(st, id, now, row);
}

static int l_list(void *st, int64_t now, bool all, struct rs_gateway_row **rows, size_t *n)
{
	return rs_store_list_gateways(st, now, all, rows, n);
}

static int l_start_holding(void *st, const char *id, const char *peer, enum rs_gateway_state state, int64_t now,
			   const struct rs_session_key *held, size_t n)
{
	return rs_store_gateway_start_holding(st, id, peer, state, now, held, n);
}

static uint64_t l_statements(const void *st)
{
	return rs_store_statements(st);
}

static int l_clock_skew(const void *st, int64_t *skew_ms)
{
	return rs_store_clock_skew(st, skew_ms);
}

static const struct rs_gw_store_ops ledger = {
	.admit_batch = l_admit_batch,
	.session_claim = l_claim,
	.session_leave = l_leave,
	.session_sandboxes = l_sandboxes,
	.heartbeat = l_heartbeat,
	.gateway_register = l_register,
	.gateway_get = l_get,
	.list_gateways = l_list,
	.statements = l_statements,
	.clock_skew = l_clock_skew,
	.gateway_start_holding = l_start_holding,
};

const struct rs_gw_store_ops *rs_gw_store_ops_ledger(void)
{
	return &ledger;
}
