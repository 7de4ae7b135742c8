/* store_steer.c - rs_store_steer: the gateway a node agent sends a
 * registered supervisor's next Service connect to, decided and reserved in
 * one write transaction.
 *
 * Guarantees: the choice is the one rs_store_admit() would make for the
 * same member arriving through the Service (no stay, not redirected) over
 * the same snapshot (store_snapshot.h, the same placer), and it is written
 * as that member's pending reservation at the target, exactly as a redirect
 * writes one: concurrent registrations and arrivals count it, and when the
 * member arrives at the target the gateway's own decision takes the
 * reservation as the member's stale record and finds the same answer.  A
 * member whose row already counts at a live serving gateway (attached
 * there, or reserved there by an earlier registration or redirect) is sent
 * there and nothing is written: a restart or a blip goes home, and a
 * repeated registration moves nobody.  A member attached to a draining
 * gateway gets the rule's answer and no reservation: its row stays the
 * attachment the drain hands off. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ringsteer/placer.h"
#include "store_internal.h"
#include "store_snapshot.h"

struct steer {
	const char *member_id;
	int64_t now_ms, live_since;
	struct rs_store_steer *out;
};

static int steer(struct rs_store *st, void *arg)
{
	struct steer *s = arg;
	struct rs_arrival arrival = { .member_id = s->member_id, .at = -1, .stale = -1 };
	struct rs_member_row m;
	struct rs_decision d;
	struct rs_session_row r = { 0 };
	const struct rs_gateway_row *target;
	int err;

	err = rs_store_member_row(st, s->member_id, &m);
	if (!err)
		err = rs_store_read_live(st, s->live_since);
	if (err)
		return err;
	if (st->live.n == 0)
		return -ENOENT;
	err = rs_store_load_placer(st, s->now_ms);
	if (!err)
		err = rs_store_stale_record(st, &m, s->now_ms, &arrival.stale);
	if (err)
		return err;
	if (arrival.stale >= 0 && st->live.rows[arrival.stale].state == RS_GATEWAY_SERVING) {
		target = &st->live.rows[arrival.stale];
		s->out->home = m.row.state == RS_SESSION_ACTIVE;
		s->out->reserved = false;
		goto done;
	}
	err = rs_placer_decide(st->placer, &arrival, &d);
	if (err)
		return err;
	if (d.gateway >= st->live.n)
		return -EIO;
	target = &st->live.rows[d.gateway];
	if (arrival.stale >= 0 && m.row.state == RS_SESSION_ACTIVE) {
		/* Attached to a draining gateway: its drain hands it off (make-
		 * before-break); a reservation here would supersede that link. */
		s->out->home = false;
		s->out->reserved = false;
		goto done;
	}
	if (m.found)
		r = m.row; /* keep its epoch and facts: its next HELLO is no older */
	snprintf(r.member_id, sizeof(r.member_id), "%s", s->member_id);
	snprintf(r.gateway_id, sizeof(r.gateway_id), "%s", target->id);
	r.state = RS_SESSION_PENDING;
	r.expires_ms = rs_store_time_add(s->now_ms, st->opt.reservation_ms);
	err = rs_store_member_write(st, &m, &r, s->now_ms);
	if (err)
		return err;
	s->out->home = false;
	s->out->reserved = true;
done:
	memcpy(s->out->gateway_id, target->id, sizeof(s->out->gateway_id));
	memcpy(s->out->peer, target->peer, sizeof(s->out->peer));
	return 0;
}

int rs_store_steer(struct rs_store *st, const char *member_id, int64_t now_ms, struct rs_store_steer *out)
{
	struct steer s = { .member_id = member_id, .now_ms = now_ms };
	struct rs_store_steer local;
	int err;

	if (!st || !out || !rs_store_id_ok(member_id))
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	s.out = &local;
	s.live_since = rs_store_time_sub(now_ms, st->opt.ttl_ms);
	err = rs_store_txn(st, RS_TXN_WRITE, steer, &s);
	if (err)
		return err;
	*out = local;
	return 0;
}
