/* store_admit.c - the placement transaction (rs_store_admit): one arrival
 * decided by the library's placement rule over the store's live state, and
 * the member's row written, all in one write transaction.
 *
 * Guarantees: the decision is exactly rs_placer_decide() (hence rs_place())
 * over the snapshot read inside the transaction: ring = live gateway ids,
 * load = counted sessions per live gateway, draining from the gateway rows,
 * the member's own counted row as its stale record, at = the deciding
 * gateway.  Write transactions are serialized across handles (backend.h), so
 * two gateways deciding at once see each other's rows and reservations.
 * Nothing is written unless the whole decision commits; on an error the
 * caller's outputs say "not accepted".
 *
 * A handoff (a->handoff) is one step of a draining gateway's plan, decided
 * exactly as rs_drain_plan() decides it over the same snapshot: the
 * deciding gateway is out of the search, the member comes from nowhere
 * (at -1, no stay) with its counted row here as the stale record, and its
 * row becomes a reservation at the target that the next step counts.
 *
 * The ring and its placer are cached in the handle and rebuilt only when the
 * set of live gateway ids changes (128 SHA-256 per gateway is most of the
 * cost otherwise); loads are reset from the snapshot on every arrival.
 *
 * Reading that snapshot is shared with rs_store_whatif() (store_whatif.c)
 * through store_snapshot.h, so a what-if decides over exactly what an
 * admission would. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringsteer/placer.h"
#include "ringsteer/proto.h"
#include "store_internal.h"
#include "store_snapshot.h"

/* What the transaction decided, copied to the caller only after commit. */
struct admission {
	const struct rs_admit *in;
	int64_t live_since;
	struct rs_decision decision;
	bool accepted;
	char target_id[RS_ID_MAX + 1];
	char target_peer[RS_ENDPOINT_MAX + 1];
};

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

static int on_live_load(void *ctx, const struct rs_db_value *cols, size_t n)
{
	struct rs_store *st = ctx;
	char id[RS_ID_MAX + 1];
	const struct rs_gateway_row *row;
	int64_t count;

	if (n < 2 || rs_row_text(&cols[0], true, id, sizeof(id)) != 0 ||
	    rs_row_int(&cols[1], 0, UINT32_MAX, &count) != 0)
		return -EIO;
	row = rs_gateway_list_find(&st->live, id);
	if (row) /* else a dead gateway: its sessions count for nothing */
		st->loads[row - st->live.rows] = (uint32_t)count;
	return 0;
}

/* Reads the counted sessions per live gateway into the placer. */
static int load_placer(struct rs_store *st, int64_t live_since, int64_t now)
{
	const struct rs_db_value params[] = { rs_db_int(live_since), rs_db_int(now) };
	int err;

	memset(st->loads, 0, st->live.n * sizeof(*st->loads));
	err = st->be->exec(st->db, RS_STMT_LIVE_LOADS, params, on_live_load, st, NULL);
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
	return st->be->exec(st->db, RS_STMT_SESSION_GET, &member, on_member_row, m, NULL);
}

int rs_store_read_live(struct rs_store *st, int64_t live_since)
{
	const struct rs_db_value since = rs_db_int(live_since);
	int err;

	st->live.n = 0;
	err = st->be->exec(st->db, RS_STMT_GATEWAYS_LIVE, &since, rs_row_collect_gateway, &st->live, NULL);
	if (err)
		return err;
	rs_gateway_list_sort(&st->live);
	return 0;
}

int rs_store_load_placer(struct rs_store *st, int64_t live_since, int64_t now)
{
	int err = ensure_ring(st);

	if (err)
		return err;
	return load_placer(st, live_since, now);
}

int rs_store_stale_record(struct rs_store *st, const struct rs_member_row *m, int64_t live_since, int64_t now,
			  int *stale)
{
	*stale = -1;
	if (m->found && rs_store_session_counts(&m->row, live_since, now)) {
		const struct rs_gateway_row *old = rs_gateway_list_find(&st->live, m->row.gateway_id);

		if (old) {
			*stale = (int)(old - st->live.rows);
			if (st->loads[*stale] == 0)
				return -EIO; /* the count query missed a row it must see */
		}
	}
	return 0;
}

/* What the member's row says about the member itself: the arrival's
 * HELLO, or for a handoff the row it had. */
struct member_facts {
	const char *instance_id;
	uint32_t sandboxes;
	const char *source;
};

int rs_store_member_write(struct rs_store *st, const struct rs_session_row *r, int64_t now_ms)
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

	return st->be->exec(st->db, RS_STMT_SESSION_UPSERT, params, NULL, NULL, NULL);
}

static int write_member_row(struct rs_store *st, const struct rs_admit *a, const struct member_facts *facts,
			    const char *gateway_id, enum rs_session_state state, int64_t expires_ms)
{
	struct rs_session_row r = { .epoch = a->epoch, .sandboxes = facts->sandboxes, .expires_ms = expires_ms,
				    .state = (uint8_t)state };

	snprintf(r.member_id, sizeof(r.member_id), "%s", a->member_id);
	snprintf(r.instance_id, sizeof(r.instance_id), "%s", facts->instance_id);
	snprintf(r.gateway_id, sizeof(r.gateway_id), "%s", gateway_id);
	snprintf(r.source, sizeof(r.source), "%s", facts->source);
	return rs_store_member_write(st, &r, a->now_ms);
}

/* Whether the member's row m lets arrival a be decided: 0, or -ESTALE when
 * this connection is superseded.  A handoff needs the row to be exactly
 * its attachment here (this gateway, this epoch); an arrival needs no newer
 * epoch, and an equal one only where it was accepted. */
static int check_member_row(const struct rs_admit *a, const struct rs_member_row *m)
{
	if (a->handoff) {
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

/* Takes gateway gw out of the search and out of G for this decision only
 * (the mark is the snapshot's, reset by the next load_placer): a handing-off
 * gateway, whatever its row says (it drains by contract), or a redirect
 * target the member could not reach.  Its supervisors still count in N. */
static int exclude_gateway(struct rs_store *st, uint32_t gw)
{
	struct rs_gateway_load load;
	int err = rs_placer_get(st->placer, gw, &load);

	if (err || load.draining)
		return err;
	load.draining = true;
	return rs_placer_set(st->placer, gw, &load);
}

static int admit(struct rs_store *st, void *arg)
{
	struct admission *ad = arg;
	const struct rs_admit *a = ad->in;
	struct rs_member_row m;
	const struct rs_gateway_row *here, *target;
	bool fallback, reserved_here;
	struct rs_arrival arrival = { .member_id = a->member_id, .stay = a->stay, .stale = -1 };
	struct member_facts facts = {
		.instance_id = a->instance_id ? a->instance_id : "",
		.sandboxes = a->sandboxes,
		.source = a->source ? a->source : "",
	};
	int err;

	err = rs_store_gateway_touch(st, a->gateway_id, a->now_ms);
	if (err)
		return err;

	err = rs_store_member_row(st, a->member_id, &m);
	if (err)
		return err;
	err = check_member_row(a, &m);
	if (err)
		return err;

	err = rs_store_read_live(st, ad->live_since);
	if (err)
		return err;
	here = rs_gateway_list_find(&st->live, a->gateway_id);
	if (!here)
		return -EIO; /* its heartbeat was just written: it must be live */
	err = rs_store_load_placer(st, ad->live_since, a->now_ms);
	if (err)
		return err;

	arrival.at = (int)(here - st->live.rows);
	err = rs_store_stale_record(st, &m, ad->live_since, a->now_ms, &arrival.stale);
	if (err)
		return err;
	if (a->handoff) {
		/* Placed from nowhere, never kept here.  Its row (here, this
		 * epoch) is its stale record while it counts; once it no longer
		 * does (a lapsed heartbeat) it is a plain arrival. */
		err = exclude_gateway(st, (uint32_t)arrival.at);
		if (err)
			return err;
		arrival.at = -1;
		arrival.stay = false;
		arrival.handoff = arrival.stale >= 0;
		facts = (struct member_facts){ m.row.instance_id, m.row.sandboxes, m.row.source };
	}
	/* A Service fallback after a failed redirect: its reservation at the
	 * target it could not reach is its stale record (store.h). */
	fallback = a->stay && !a->redirected && !a->handoff && m.found && m.row.state == RS_SESSION_PENDING &&
		   arrival.stale >= 0 && arrival.stale != arrival.at;
	if (fallback) {
		err = exclude_gateway(st, (uint32_t)arrival.stale);
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
	reserved_here = !a->stay && !a->handoff && m.found && m.row.state == RS_SESSION_PENDING &&
			arrival.stale >= 0 && arrival.stale == arrival.at;
	err = rs_placer_decide(st->placer, &arrival, &ad->decision);
	if (err)
		return err;
	if (ad->decision.gateway >= st->live.n)
		return -EIO;
	if (reserved_here && here->state == RS_GATEWAY_SERVING && ad->decision.gateway != (uint32_t)arrival.at) {
		ad->decision.gateway = (uint32_t)arrival.at;
		ad->decision.reason = RS_REASON_RESERVED;
		ad->decision.full = false;
	}
	if (fallback && here->state == RS_GATEWAY_SERVING && st->loads[arrival.at] < ad->decision.cap) {
		ad->decision.gateway = (uint32_t)arrival.at;
		ad->decision.reason = RS_REASON_STAY;
		ad->decision.full = false;
	}
	target = &st->live.rows[ad->decision.gateway];
	if (a->handoff && target == here)
		return -EIO; /* the placer searched without it: cannot be */
	ad->accepted = target == here;
	if (ad->accepted)
		err = write_member_row(st, a, &facts, target->id, RS_SESSION_ACTIVE,
				       rs_store_time_add(a->now_ms, st->opt.ttl_ms));
	else
		err = write_member_row(st, a, &facts, target->id, RS_SESSION_PENDING,
				       rs_store_time_add(a->now_ms, st->opt.reservation_ms));
	if (err)
		return err;
	memcpy(ad->target_id, target->id, sizeof(ad->target_id));
	memcpy(ad->target_peer, target->peer, sizeof(ad->target_peer));
	return 0;
}

int rs_store_admit(struct rs_store *st, struct rs_admit *a)
{
	struct admission ad = { .in = a };
	int err;

	if (!a)
		return -EINVAL;
	a->accepted = false;
	a->target_id[0] = '\0';
	a->target_peer[0] = '\0';
	memset(&a->decision, 0, sizeof(a->decision));
	if (!st || !rs_store_id_ok(a->gateway_id) || !rs_store_id_ok(a->member_id) || a->epoch > INT64_MAX ||
	    (a->instance_id && !rs_store_text_ok(a->instance_id, RS_INSTANCE_MAX)) ||
	    (a->source && !rs_store_text_ok(a->source, RS_ENDPOINT_MAX)))
		return -EINVAL;
	ad.live_since = rs_store_time_sub(a->now_ms, st->opt.ttl_ms);
	err = rs_store_txn(st, RS_TXN_WRITE, admit, &ad);
	if (err)
		return err;
	a->accepted = ad.accepted;
	a->decision = ad.decision;
	memcpy(a->target_id, ad.target_id, sizeof(a->target_id));
	memcpy(a->target_peer, ad.target_peer, sizeof(a->target_peer));
	return 0;
}
