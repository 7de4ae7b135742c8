/* SPDX-License-Identifier: Apache-2.0 */
/* store_admit.c - the placement transaction (rs_store_admit_batch, and
 * rs_store_admit, a batch of one): arrivals at one gateway decided by the
 * library's placement rule over the store's live state, and the members'
 * rows written, all in one write transaction.
 *
 * Guarantees: each decision is exactly rs_admit_decide() (admission.h:
 * the rule, then the overrides of the arrival's kind) over the snapshot
 * read inside the transaction: ring = live gateway ids, load = counted
 * sessions per live gateway (attached count plus unexpired reservations),
 * draining from the gateway rows, the member's own counted row as its
 * record, at = the deciding gateway.  This file reads the snapshot, maps
 * struct rs_admit's flags to the arrival kind (in kind_of(), only there)
 * and writes the member's row; it decides nothing itself.
 * Write transactions are serialized across handles (backend.h), so two
 * gateways deciding at once see each other's rows and reservations.
 * Nothing is written unless the whole batch commits; on an error the
 * caller's outputs say "not accepted".  An item that is not valid
 * (admit_ok) fails alone, -EINVAL in its errs[]: never its batch.
 *
 * A batch reads the snapshot once and keeps it current in memory as it
 * decides each item's row (the old row's count leaves its gateway, the new
 * one's joins the target), which is exactly what re-reading it would
 * give: the time is one for the whole batch, so no gateway's liveness and
 * no reservation's expiry changes within it, and the loads count nothing
 * but rows (store_sql.c).  Its members' rows are read together before
 * the first decision and written together after the last
 * (store_members.h: one statement each way on PostgreSQL, whatever the
 * batch's size); each item reads its member's row from that table as the
 * items before it left it.  Hence a batch decides what its items admitted
 * one at a time in order would (tests/unit compares).
 *
 * A handoff (a->handoff) is one step of a draining gateway's plan, decided
 * exactly as rs_drain_plan() decides it over the same snapshot (the
 * deciding gateway out of the search, the member from nowhere with its
 * counted row here as the stale record), and its row becomes a
 * reservation at the target that the next step counts.
 *
 * The ring and its placer are cached in the handle and rebuilt only when the
 * set of live gateway ids changes (128 SHA-256 per gateway is most of the
 * cost otherwise); loads are reset from the snapshot on every batch.
 *
 * Reading that snapshot is shared with rs_store_whatif() (store_whatif.c)
 * and rs_store_steer() (store_steer.c) through store_snapshot.h, and they
 * decide with rs_admit_decide() too, so a what-if decides over exactly
 * what an admission would, exactly as it would. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringsteer/admission.h"
#include "ringsteer/placer.h"
#include "ringsteer/proto.h"
#include "store_internal.h"
#include "store_members.h"
#include "store_snapshot.h"

/* A batch in its transaction.  Decisions go straight to the items' out
 * fields; they count only once the batch commits (cleared otherwise). */
struct batch {
	struct rs_admit *a;
	size_t n;
	int *errs;
	int64_t now_ms; /* the caller's (the body reads it on the store's clock) */
	size_t written; /* items whose rows were set (written at the end) */
	struct rs_member_table members; /* the valid items' members' rows */
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

/* Sets the member's row in the batch's table (written when the batch
 * ends): what a later item of the member reads. */
static void set_member_row(struct rs_member_slot *slot, const struct rs_admit *a,
			   const struct member_facts *facts, const char *gateway_id, enum rs_session_state state,
			   int64_t now, int64_t expires_ms)
{
	struct rs_session_row r = { .epoch = a->epoch, .sandboxes = facts->sandboxes, .expires_ms = expires_ms,
				    .state = (uint8_t)state };

	snprintf(r.member_id, sizeof(r.member_id), "%s", a->member_id);
	snprintf(r.instance_id, sizeof(r.instance_id), "%s", facts->instance_id);
	snprintf(r.gateway_id, sizeof(r.gateway_id), "%s", gateway_id);
	snprintf(r.source, sizeof(r.source), "%s", facts->source);
	rs_member_table_set(slot, &r, now);
}

/* The arrival kind a's flags say (admit_ok() refuses handoff with
 * deferred): the one place struct rs_admit's booleans are read as such. */
static enum rs_arrival_kind kind_of(const struct rs_admit *a)
{
	if (a->handoff)
		return RS_ARRIVE_HANDOFF;
	if (a->deferred)
		return RS_ARRIVE_DEFERRED;
	if (!a->stay)
		return RS_ARRIVE_SERVICE;
	return a->redirected ? RS_ARRIVE_REDIRECTED : RS_ARRIVE_STAY;
}

/* Whether the member's row m lets arrival a (of kind kind) be decided at
 * st's live snapshot: 0, or -ESTALE when this connection is superseded.  A
 * handoff or a deferred placement needs the row to be exactly its
 * attachment here (this gateway, this epoch).  An arrival is compared only
 * with the member's live session (rs_store_live_session): a newer epoch
 * there supersedes it, an equal one too unless it is here.  Any other row
 * (left, reserved, lapsed, on a dead gateway) is overwritten whatever its
 * epoch: nothing deletes such rows, so an epoch of 2^63-1 left in one would
 * otherwise refuse every later connection of the member. */
static int check_member_row(const struct rs_store *st, enum rs_arrival_kind kind, const struct rs_admit *a,
			    const struct rs_member_row *m)
{
	if (kind == RS_ARRIVE_HANDOFF || kind == RS_ARRIVE_DEFERRED) {
		if (!m->found || m->row.epoch != a->epoch || strcmp(m->row.gateway_id, a->gateway_id) != 0)
			return -ESTALE;
		return 0;
	}
	if (!rs_store_live_session(st, m))
		return 0;
	if (m->row.epoch > a->epoch)
		return -ESTALE;
	/* An equal epoch is this connection decided again: fine where it was
	 * accepted, superseded if another gateway holds it. */
	if (m->row.epoch == a->epoch && strcmp(m->row.gateway_id, a->gateway_id) != 0)
		return -ESTALE;
	return 0;
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

/* Decides item a (deciding gateway: ring index at) and sets its row in
 * the batch's table.  Returns 0, -ESTALE or -ENOENT (the item's own
 * outcome, nothing set for it), or an error that ends the batch. */
static int admit_one(struct rs_store *st, struct rs_member_table *members, struct rs_admit *a, int at)
{
	const struct rs_gateway_row *here = &st->live.rows[at], *target;
	struct rs_admit_input in = { .member_id = a->member_id, .kind = kind_of(a), .at = at, .liveness = a->liveness };
	struct rs_admit_outcome o;
	struct rs_member_slot *slot = rs_member_table_find(members, a->member_id);
	int64_t now = rs_store_now(st, a->now_ms);
	struct rs_member_row m;
	int counted_at; /* where the member's row counts (-1: nowhere) */
	struct member_facts facts = {
		.instance_id = a->instance_id ? a->instance_id : "",
		.sandboxes = a->sandboxes,
		.source = a->source ? a->source : "",
	};
	int err;

	if (!slot)
		return -EIO; /* every valid item's member was read */
	m = slot->row;
	err = check_member_row(st, in.kind, a, &m);
	if (!err)
		err = rs_store_stale_record(st, &m, now, &in.record_at);
	if (err)
		return err;
	in.record = rs_store_record_kind(&m, in.record_at);
	counted_at = in.record_at;
	if (in.record == RS_RECORD_NONE)
		rs_store_lapsed_record(st, &m, &in.record, &in.record_at);
	if (in.kind == RS_ARRIVE_HANDOFF || in.kind == RS_ARRIVE_DEFERRED)
		facts = (struct member_facts){ m.row.instance_id, m.row.sandboxes, m.row.source }; /* the row it had */
	err = rs_admit_decide(st->placer, &in, &o);
	if (err)
		return err;
	if (o.decision.gateway >= st->live.n)
		return -EIO;
	a->over_cap = o.over_cap;
	if (o.stays) {
		/* A deferred member kept here: its attachment as it was. */
		a->accepted = true;
		a->decision = o.decision;
		memcpy(a->target_id, here->id, sizeof(a->target_id));
		memcpy(a->target_peer, here->peer, sizeof(a->target_peer));
		return 0;
	}
	target = &st->live.rows[o.decision.gateway];
	err = rs_store_move_load(st, counted_at, (int)o.decision.gateway);
	if (err)
		return err;
	if (target == here)
		set_member_row(slot, a, &facts, target->id, RS_SESSION_ACTIVE, now,
			       rs_store_time_add(now, st->opt.ttl_ms));
	else
		set_member_row(slot, a, &facts, target->id, RS_SESSION_PENDING, now,
			       rs_store_time_add(now, st->opt.reservation_ms));
	a->accepted = target == here;
	a->fallback = o.fallback;
	a->decision = o.decision;
	memcpy(a->target_id, target->id, sizeof(a->target_id));
	memcpy(a->target_peer, target->peer, sizeof(a->target_peer));
	return 0;
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

/* Whether item a may be decided in a batch whose first item is first: one
 * that may not fails alone (-EINVAL in its errs[]), never its batch. */
static bool admit_ok(const struct rs_admit *a, const struct rs_admit *first)
{
	return rs_store_id_ok(a->gateway_id) && rs_store_id_ok(a->member_id) && a->epoch <= INT64_MAX &&
	       !(a->handoff && a->deferred) &&
	       (!a->instance_id || rs_store_text_ok(a->instance_id, RS_INSTANCE_MAX)) &&
	       (!a->source || rs_store_text_ok(a->source, RS_ENDPOINT_MAX)) &&
	       strcmp(a->gateway_id, first->gateway_id) == 0 && a->now_ms == first->now_ms;
}

/* Reads the members of b's valid items into b->members.  (n pointers fit
 * where the caller's n items do.) */
static int read_members(struct rs_store *st, struct batch *b)
{
	const char **ids = malloc(b->n * sizeof(*ids));
	size_t n = 0;
	int err;

	if (!ids)
		return -ENOMEM;
	for (size_t i = 0; i < b->n; i++)
		if (admit_ok(&b->a[i], &b->a[0]))
			ids[n++] = b->a[i].member_id;
	err = rs_member_table_read(st, &b->members, ids, n);
	free(ids);
	return err;
}

static int admit_batch(struct rs_store *st, void *arg)
{
	struct batch *b = arg;
	const struct rs_gateway_row *here;
	int64_t now = rs_store_now(st, b->now_ms);
	int err;

	b->written = 0; /* a body run again after a rollback starts afresh */
	err = rs_store_gateway_touch(st, b->a[0].gateway_id, now);
	if (err)
		return err;
	err = rs_store_read_live(st, rs_store_time_sub(now, st->opt.ttl_ms));
	if (err)
		return err;
	here = rs_gateway_list_find(&st->live, b->a[0].gateway_id);
	if (!here)
		return -EIO; /* its heartbeat was just written: it must be live */
	err = rs_store_load_placer(st, now);
	if (!err)
		err = read_members(st, b);
	if (err)
		return err;
	for (size_t i = 0; i < b->n; i++) {
		/* Judged again, not remembered from errs[]: a body run again
		 * after a rollback finds errs[] holding its last run's outcomes. */
		if (!admit_ok(&b->a[i], &b->a[0])) {
			b->errs[i] = -EINVAL;
			continue;
		}
		err = admit_one(st, &b->members, &b->a[i], (int)(here - st->live.rows));
		if (err && err != -ESTALE && err != -ENOENT)
			return err;
		b->errs[i] = err;
		b->written += err == 0;
	}
	/* n admissions that all failed would have written nothing, not even
	 * the heartbeat: so neither does the batch. */
	if (!b->written)
		return BATCH_NOTHING_WRITTEN;
	return rs_member_table_write(st, &b->members, now);
}

int rs_store_admit_batch(struct rs_store *st, struct rs_admit *a, size_t n, int *errs)
{
	struct batch b = { .a = a, .n = n, .errs = errs };
	size_t ok = 0;
	int err = 0;

	if (!a || !errs || n == 0)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		clear_outputs(&a[i]);
	/* The first item's gateway and time are the batch's (the deciding
	 * gateway's heartbeat, the snapshot's now); any other item is judged
	 * on its own, so one arrival's hostile epoch or malformed id never
	 * fails the others queued with it. */
	if (!st || !rs_store_id_ok(a[0].gateway_id))
		err = -EINVAL;
	for (size_t i = 0; i < n; i++) {
		errs[i] = err ? err : admit_ok(&a[i], &a[0]) ? 0 : -EINVAL;
		ok += errs[i] == 0;
	}
	if (err || ok == 0)
		return err; /* nothing to decide: errs[] says why */
	b.now_ms = a[0].now_ms;
	err = rs_store_txn(st, RS_TXN_WRITE, admit_batch, &b);
	rs_member_table_free(&b.members);
	if (err == BATCH_NOTHING_WRITTEN)
		return 0; /* errs[] says why, item by item */
	if (err)
		for (size_t i = 0; i < n; i++) {
			clear_outputs(&a[i]);
			if (admit_ok(&a[i], &a[0]))
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
