/* store_admit.c - the placement transaction (rs_store_admit_batch, and
 * rs_store_admit, a batch of one): arrivals at one gateway decided by the
 * library's placement rule over the store's live state, and the members'
 * rows written, all in one write transaction.
 *
 * Guarantees: each decision is exactly rs_placer_decide() (hence
 * rs_place()) over the snapshot read inside the transaction: ring = live
 * gateway ids, load = counted sessions per live gateway (attached count
 * plus unexpired reservations), draining from the gateway rows, the
 * member's own counted row as its stale record, at = the deciding gateway.
 * Write transactions are serialized across handles (backend.h), so two
 * gateways deciding at once see each other's rows and reservations.
 * Nothing is written unless the whole batch commits; on an error the
 * caller's outputs say "not accepted".
 *
 * A batch reads the snapshot once and keeps it current in memory as it
 * writes each item's row (the old row's count leaves its gateway, the new
 * one's joins the target), which is exactly what re-reading it would
 * give: the time is one for the whole batch, so no gateway's liveness and
 * no reservation's expiry changes within it, and the loads count nothing
 * but rows (store_sql.c).  Each item reads its member's row afresh, so an
 * item sees the rows of the items before it.  Hence a batch decides what
 * its items admitted one at a time in order would (tests/unit compares).
 *
 * A handoff (a->handoff) is one step of a draining gateway's plan, decided
 * exactly as rs_drain_plan() decides it over the same snapshot: the
 * deciding gateway is out of the search, the member comes from nowhere
 * (at -1, no stay) with its counted row here as the stale record, and its
 * row becomes a reservation at the target that the next step counts.
 *
 * The ring and its placer are cached in the handle and rebuilt only when the
 * set of live gateway ids changes (128 SHA-256 per gateway is most of the
 * cost otherwise); loads are reset from the snapshot on every batch.
 *
 * Reading that snapshot is shared with rs_store_whatif() (store_whatif.c)
 * and rs_store_steer() (store_steer.c) through store_snapshot.h, so a
 * what-if decides over exactly what an admission would. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringsteer/placer.h"
#include "ringsteer/proto.h"
#include "store_internal.h"
#include "store_snapshot.h"

/* A batch in its transaction.  Decisions go straight to the items' out
 * fields; they count only once the batch commits (cleared otherwise). */
struct batch {
	struct rs_admit *a;
	size_t n;
	int *errs;
	int64_t now_ms, live_since;
	size_t written; /* items whose rows were written */
};

/* The body's "nothing was written: roll back" (positive, never an errno). */
#define BATCH_NOTHING_WRITTEN 1

/* What the member's row says about the member itself: the arrival's
 * HELLO, or for a handoff the row it had. */
struct member_facts {
	const char *instance_id;
	uint32_t sandboxes;
	const char *source;
};

static int write_member_row(struct rs_store *st, const struct rs_admit *a, const struct rs_member_row *before,
			    const struct member_facts *facts, const char *gateway_id, enum rs_session_state state,
			    int64_t expires_ms)
{
	struct rs_session_row r = { .epoch = a->epoch, .sandboxes = facts->sandboxes, .expires_ms = expires_ms,
				    .state = (uint8_t)state };

	snprintf(r.member_id, sizeof(r.member_id), "%s", a->member_id);
	snprintf(r.instance_id, sizeof(r.instance_id), "%s", facts->instance_id);
	snprintf(r.gateway_id, sizeof(r.gateway_id), "%s", gateway_id);
	snprintf(r.source, sizeof(r.source), "%s", facts->source);
	return rs_store_member_write(st, before, &r, a->now_ms);
}

/* Whether the member's row m lets arrival a be decided: 0, or -ESTALE when
 * this connection is superseded.  A handoff needs the row to be exactly
 * its attachment here (this gateway, this epoch); an arrival needs no newer
 * epoch, and an equal one only where it was accepted. */
static int check_member_row(const struct rs_admit *a, const struct rs_member_row *m)
{
	if (a->handoff || a->deferred) {
		if (!m->found || m->row.epoch != a->epoch || strcmp(m->row.gateway_id, a->gateway_id) != 0)
			return -ESTALE;
		return 0;
	}
	if (m->found && m->row.epoch > a->epoch)
		return -ESTALE;
	/* An equal epoch is this connection decided again: fine where it was
	 * accepted, superseded if another gateway holds it. */
	if (m->found && m->row.epoch == a->epoch && m->row.state == RS_SESSION_ACTIVE &&
	    strcmp(m->row.gateway_id, a->gateway_id) != 0)
		return -ESTALE;
	return 0;
}

/* A gateway taken out of the search for one decision (its placer entry
 * as it was, to put back). */
struct exclusion {
	int gw; /* -1: none */
	struct rs_gateway_load saved;
};

/* Takes gateway gw out of the search and out of G for this decision only
 * (restore() puts it back before the next item): a handing-off gateway,
 * whatever its row says (it drains by contract), or a redirect target the
 * member could not reach.  Its supervisors still count in N. */
static int exclude_gateway(struct rs_store *st, uint32_t gw, struct exclusion *x)
{
	struct rs_gateway_load load;
	int err = rs_placer_get(st->placer, gw, &load);

	if (err)
		return err;
	x->gw = (int)gw;
	x->saved = load;
	load.draining = true;
	return rs_placer_set(st->placer, gw, &load);
}

static void restore(struct rs_store *st, const struct exclusion *x)
{
	if (x->gw >= 0)
		rs_placer_set(st->placer, (uint32_t)x->gw, &x->saved); /* in range: it was got */
}

/* Moves one counted row in the snapshot's loads: from ring gateway `from`
 * (-1: it counted nowhere) to `to`.  What the next item would read back. */
int rs_store_move_load(struct rs_store *st, int from, int to)
{
	int err = 0;

	if (from == to)
		return 0;
	if (from >= 0) {
		if (st->loads[from] == 0)
			return -EIO;
		st->loads[from]--;
		err = rs_placer_add_load(st->placer, (uint32_t)from, -1);
	}
	if (!err && to >= 0) {
		if (st->loads[to] == UINT32_MAX)
			return -EIO;
		st->loads[to]++;
		err = rs_placer_add_load(st->placer, (uint32_t)to, 1);
	}
	return err == -ERANGE ? -EIO : err;
}

/* Decides item a (deciding gateway: ring index at) and writes its row.
 * Returns 0, -ESTALE or -ENOENT (the item's own outcome, nothing written
 * for it), or an error that ends the batch. */
static int admit_one(struct rs_store *st, struct rs_admit *a, int at)
{
	const struct rs_gateway_row *here = &st->live.rows[at], *target;
	struct exclusion x = { .gw = -1 };
	struct rs_member_row m;
	bool fallback, reserved_here;
	struct rs_arrival arrival = { .member_id = a->member_id, .stay = a->stay, .stale = -1, .at = at };
	struct member_facts facts = {
		.instance_id = a->instance_id ? a->instance_id : "",
		.sandboxes = a->sandboxes,
		.source = a->source ? a->source : "",
	};
	struct rs_decision d;
	int err;

	err = rs_store_member_row(st, a->member_id, &m);
	if (err)
		return err;
	err = check_member_row(a, &m);
	if (err)
		return err;
	err = rs_store_stale_record(st, &m, a->now_ms, &arrival.stale);
	if (err)
		return err;
	if (a->handoff) {
		/* Placed from nowhere, never kept here.  Its row (here, this
		 * epoch) is its stale record while it counts. */
		err = exclude_gateway(st, (uint32_t)at, &x);
		if (err)
			return err;
		arrival.at = -1;
		arrival.stay = false;
		arrival.handoff = arrival.stale >= 0;
		facts = (struct member_facts){ m.row.instance_id, m.row.sandboxes, m.row.source };
	}
	if (a->deferred) {
		/* From nowhere, over the whole serving ring (this gateway too):
		 * its row here is its stale record. */
		arrival.at = -1;
		arrival.stay = false;
		facts = (struct member_facts){ m.row.instance_id, m.row.sandboxes, m.row.source };
	}
	/* A Service fallback after a failed redirect: its reservation at the
	 * target it could not reach is its stale record (store.h). */
	fallback = a->stay && !a->redirected && !a->handoff && !a->deferred && m.found && m.row.state == RS_SESSION_PENDING &&
		   arrival.stale >= 0 && arrival.stale != at;
	if (fallback) {
		err = exclude_gateway(st, (uint32_t)arrival.stale, &x);
		if (err)
			return err;
		arrival.stay = false;
	}
	/* Arrived where its pending reservation is: the rule chose this gateway
	 * when the reservation was written (by a node agent steering the
	 * member's connect, or by a redirect whose target it reached through
	 * the Service), and the reservation has counted in its load since.
	 * Accepted as a redirect's target is, unless draining, so the kernel's
	 * choice and the gateway's agree even when loads moved in between. */
	reserved_here = !a->stay && !a->handoff && !a->deferred && m.found && m.row.state == RS_SESSION_PENDING &&
			arrival.stale >= 0 && arrival.stale == at;
	err = rs_placer_decide(st->placer, &arrival, &d);
	restore(st, &x);
	if (err)
		return err;
	if (d.gateway >= st->live.n)
		return -EIO;
	if (reserved_here && here->state == RS_GATEWAY_SERVING && d.gateway != (uint32_t)at) {
		d.gateway = (uint32_t)at;
		d.reason = RS_REASON_RESERVED;
		d.full = false;
	}
	/* Arrived elsewhere while its reservation holds a place: it goes
	 * there (a restart goes home; the reservation counted all along). */
	if (!a->stay && !a->handoff && !a->deferred && !reserved_here && d.gateway != (uint32_t)arrival.stale &&
	    rs_store_goes_home(st, &m, arrival.stale, d.cap)) {
		d.gateway = (uint32_t)arrival.stale;
		d.reason = RS_REASON_RESERVED;
		d.full = false;
	}
	if (fallback && here->state == RS_GATEWAY_SERVING && (st->loads[at] < d.cap || a->liveness)) {
		a->over_cap = st->loads[at] >= d.cap;
		d.gateway = (uint32_t)at;
		d.reason = RS_REASON_STAY;
		d.full = false;
	}
	target = &st->live.rows[d.gateway];
	if (a->handoff && target == here)
		return -EIO; /* the placer searched without it: cannot be */
	if (a->deferred && (target == here || st->loads[at] <= d.cap)) {
		/* Not above the cap (any more), or the rule keeps it: it stays,
		 * its attachment as it was. */
		a->accepted = true;
		a->decision = d;
		memcpy(a->target_id, here->id, sizeof(a->target_id));
		memcpy(a->target_peer, here->peer, sizeof(a->target_peer));
		return 0;
	}
	if (target == here)
		err = write_member_row(st, a, &m, &facts, target->id, RS_SESSION_ACTIVE,
				       rs_store_time_add(a->now_ms, st->opt.ttl_ms));
	else
		err = write_member_row(st, a, &m, &facts, target->id, RS_SESSION_PENDING,
				       rs_store_time_add(a->now_ms, st->opt.reservation_ms));
	if (!err)
		err = rs_store_move_load(st, arrival.stale, (int)d.gateway);
	if (err)
		return err;
	a->accepted = target == here;
	a->fallback = fallback;
	a->decision = d;
	memcpy(a->target_id, target->id, sizeof(a->target_id));
	memcpy(a->target_peer, target->peer, sizeof(a->target_peer));
	return 0;
}

static int admit_batch(struct rs_store *st, void *arg)
{
	struct batch *b = arg;
	const struct rs_gateway_row *here;
	int err;

	err = rs_store_gateway_touch(st, b->a[0].gateway_id, b->now_ms);
	if (err)
		return err;
	err = rs_store_read_live(st, b->live_since);
	if (err)
		return err;
	here = rs_gateway_list_find(&st->live, b->a[0].gateway_id);
	if (!here)
		return -EIO; /* its heartbeat was just written: it must be live */
	err = rs_store_load_placer(st, b->now_ms);
	if (err)
		return err;
	for (size_t i = 0; i < b->n; i++) {
		err = admit_one(st, &b->a[i], (int)(here - st->live.rows));
		if (err && err != -ESTALE && err != -ENOENT)
			return err;
		b->errs[i] = err;
		b->written += err == 0;
	}
	/* n admissions that all failed would have written nothing, not even
	 * the heartbeat: so neither does the batch. */
	return b->written ? 0 : BATCH_NOTHING_WRITTEN;
}

static void clear_outputs(struct rs_admit *a)
{
	a->accepted = false;
	a->fallback = false;
	a->over_cap = false;
	a->target_id[0] = '\0';
	a->target_peer[0] = '\0';
	memset(&a->decision, 0, sizeof(a->decision));
}

static bool admit_ok(const struct rs_admit *a, const struct rs_admit *first)
{
	return rs_store_id_ok(a->gateway_id) && rs_store_id_ok(a->member_id) && a->epoch <= INT64_MAX &&
	       !(a->handoff && a->deferred) &&
	       (!a->instance_id || rs_store_text_ok(a->instance_id, RS_INSTANCE_MAX)) &&
	       (!a->source || rs_store_text_ok(a->source, RS_ENDPOINT_MAX)) &&
	       strcmp(a->gateway_id, first->gateway_id) == 0 && a->now_ms == first->now_ms;
}

int rs_store_admit_batch(struct rs_store *st, struct rs_admit *a, size_t n, int *errs)
{
	struct batch b = { .a = a, .n = n, .errs = errs };
	int err = 0;

	if (!a || !errs || n == 0)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		clear_outputs(&a[i]);
	if (!st || !rs_store_id_ok(a[0].gateway_id))
		err = -EINVAL;
	for (size_t i = 0; !err && i < n; i++)
		if (!admit_ok(&a[i], &a[0]))
			err = -EINVAL;
	if (!err) {
		b.now_ms = a[0].now_ms;
		b.live_since = rs_store_time_sub(b.now_ms, st->opt.ttl_ms);
		err = rs_store_txn(st, RS_TXN_WRITE, admit_batch, &b);
		if (err == BATCH_NOTHING_WRITTEN)
			return 0; /* errs[] says why, item by item */
	}
	if (err)
		for (size_t i = 0; i < n; i++) {
			clear_outputs(&a[i]);
			errs[i] = err;
		}
	return err;
}

int rs_store_admit(struct rs_store *st, struct rs_admit *a)
{
	int item = 0, err;

	err = rs_store_admit_batch(st, a, a ? 1 : 0, &item);
	if (!err && item)
		clear_outputs(a);
	return err ? err : item;
}
