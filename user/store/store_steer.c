/* SPDX-License-Identifier: Apache-2.0 */
/* store_steer.c - rs_store_steer_batch (and rs_store_steer, a batch of
 * one): the gateway a node agent sends a registered supervisor's next
 * Service connect to, decided and reserved in one write transaction for
 * every member of the batch: a storm of registrations costs one commit per
 * batch, not one per member.
 *
 * Guarantees: the choice is the one rs_store_admit() would make for the
 * same member arriving through the Service (no stay, not redirected) over
 * the same snapshot (store_snapshot.h, rs_admit_decide()), and it is written
 * as that member's pending reservation at the target, exactly as a redirect
 * writes one: concurrent registrations and arrivals count it, and when the
 * member arrives at the target the gateway's own decision takes the
 * reservation as the member's stale record and finds the same answer.  A
 * member whose row already counts at a live serving gateway (attached
 * there, or reserved there by an earlier registration or redirect) is sent
 * there and nothing is written: a restart or a blip goes home, and a
 * repeated registration moves nobody.  A batch decides what its members
 * steered one at a time in order would (the snapshot is read once and its
 * loads follow each write, as rs_store_admit_batch keeps them).  A member attached to a draining
 * gateway gets the rule's answer and no reservation: its row stays the
 * attachment the drain hands off. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ringsteer/admission.h"
#include "store_internal.h"
#include "store_snapshot.h"

struct steer {
	const char *const *member_ids;
	size_t n;
	int64_t now_ms; /* the caller's (the body reads it on the store's clock) */
	struct rs_store_steer *outs;
	int *errs;
};

/* Decides one member over the loaded snapshot and writes its reservation;
 * the snapshot's loads follow the write, so the next member of the batch
 * sees it as a separate transaction would. */
static int steer_one(struct rs_store *st, const char *member_id, int64_t now_ms, struct rs_store_steer *out)
{
	struct rs_admit_input in = { .member_id = member_id, .kind = RS_ARRIVE_SERVICE, .at = -1 };
	struct rs_admit_outcome o;
	struct rs_member_row m;
	struct rs_session_row r = { 0 };
	const struct rs_gateway_row *target;
	int err;

	err = rs_store_member_row(st, member_id, &m);
	if (!err)
		err = rs_store_stale_record(st, &m, now_ms, &in.record_at);
	if (err)
		return err;
	in.record = rs_store_record_kind(&m, in.record_at);
	if (in.record_at >= 0 && st->live.rows[in.record_at].state == RS_GATEWAY_SERVING) {
		target = &st->live.rows[in.record_at];
		out->home = in.record == RS_RECORD_ATTACHED;
		out->reserved = false;
		goto done;
	}
	/* Its row, if it counts, is at a draining gateway: no override
	 * applies, and the answer is the rule's. */
	err = rs_admit_decide(st->placer, &in, &o);
	if (err)
		return err;
	if (o.decision.gateway >= st->live.n)
		return -EIO;
	target = &st->live.rows[o.decision.gateway];
	if (in.record == RS_RECORD_ATTACHED) {
		/* Attached to a draining gateway: its drain hands it off (make-
		 * before-break); a reservation here would supersede that link. */
		out->home = false;
		out->reserved = false;
		goto done;
	}
	if (m.found)
		r = m.row; /* keep its epoch and facts: its next HELLO is no older */
	snprintf(r.member_id, sizeof(r.member_id), "%s", member_id);
	snprintf(r.gateway_id, sizeof(r.gateway_id), "%s", target->id);
	r.state = RS_SESSION_PENDING;
	r.expires_ms = rs_store_time_add(now_ms, st->opt.reservation_ms);
	err = rs_store_member_write(st, &m, &r, now_ms);
	if (!err)
		err = rs_store_move_load(st, in.record_at, (int)o.decision.gateway);
	if (err)
		return err;
	out->home = false;
	out->reserved = true;
	out->expires_ms = r.expires_ms;
done:
	memcpy(out->gateway_id, target->id, sizeof(out->gateway_id));
	memcpy(out->peer, target->peer, sizeof(out->peer));
	return 0;
}

static int steer_batch(struct rs_store *st, void *arg)
{
	struct steer *s = arg;
	int64_t now = rs_store_now(st, s->now_ms);
	int err;

	err = rs_store_read_live(st, rs_store_time_sub(now, st->opt.ttl_ms));
	if (err)
		return err;
	if (st->live.n == 0)
		return -ENOENT;
	err = rs_store_load_placer(st, now);
	for (size_t i = 0; !err && i < s->n; i++)
		err = steer_one(st, s->member_ids[i], now, &s->outs[i]);
	return err;
}

int rs_store_steer_batch(struct rs_store *st, const char *const *member_ids, size_t n, int64_t now_ms,
			 struct rs_store_steer *outs, int *errs)
{
	struct steer s = { .member_ids = member_ids, .n = n, .now_ms = now_ms, .outs = outs, .errs = errs };
	int err = 0;

	if (!member_ids || !outs || !errs || n == 0)
		return -EINVAL;
	memset(outs, 0, n * sizeof(*outs));
	if (!st)
		err = -EINVAL;
	for (size_t i = 0; !err && i < n; i++)
		if (!rs_store_id_ok(member_ids[i]))
			err = -EINVAL;
	if (!err)
		err = rs_store_txn(st, RS_TXN_WRITE, steer_batch, &s);
	if (err)
		memset(outs, 0, n * sizeof(*outs));
	for (size_t i = 0; i < n; i++)
		errs[i] = err;
	return err;
}

int rs_store_steer(struct rs_store *st, const char *member_id, int64_t now_ms, struct rs_store_steer *out)
{
	int item;

	return rs_store_steer_batch(st, &member_id, 1, now_ms, out, &item);
}
