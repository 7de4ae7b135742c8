/* SPDX-License-Identifier: Apache-2.0 */
/* ledger.c - the store contract of include/ringsteer/store.h in memory
 * (ledger.h): each operation is the rs_store_* function of its name, read
 * from store.h and from what the SQL backends do (user/store/store.c,
 * store_admit.c, store_claim.c), without SQL.
 *
 * A write transaction works on a copy of the ledger and copies it back
 * when it commits, so an error or a batch that writes nothing leaves the
 * ledger as it was (a batch whose items all fail writes not even the
 * deciding gateway's heartbeat, as the real one).  The admission batch
 * keeps its snapshot current in memory as it decides each item (the
 * placer's loads moved with each row), so a batch decides what its items
 * admitted one at a time in order would: store_admit.c's guarantee. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringsteer/placer.h"
#include "ringsteer/ring.h"
#include "vopr/ledger.h"

#define SKEW_TOLERANCE_MS 1000 /* store_internal.h: RS_STORE_SKEW_TOLERANCE_MS */

int ledger_slot(const char *id, const char *prefix, int max)
{
	size_t n = strlen(prefix);
	char *end;
	unsigned long v;

	if (!id || strncmp(id, prefix, n) != 0 || id[n] < '0' || id[n] > '9')
		return -1;
	v = strtoul(id + n, &end, 10);
	if (*end || v >= (unsigned long)max)
		return -1;
	return (int)v;
}

static int gw_slot(const char *id)
{
	return ledger_slot(id, "gw-", LEDGER_GATEWAYS);
}

static int member_slot(const char *id)
{
	return ledger_slot(id, "m-", LEDGER_MEMBERS);
}

/* The caller's time on the store's clock, as PostgreSQL's transactions
 * take it (store.c, take_clock and rs_store_now). */
static int64_t store_now(struct ledger_ctx *c, int64_t caller_ms)
{
	int64_t skew = c->store_wall_ms - caller_ms;

	c->skew_ms = skew;
	c->skew_known = true;
	if (skew > SKEW_TOLERANCE_MS || skew < -SKEW_TOLERANCE_MS)
		return c->store_wall_ms;
	return caller_ms;
}

static bool live_at(const struct ledger_gateway *g, int64_t now, uint32_t ttl_ms)
{
	return g->present && g->heartbeat_ms >= now - (int64_t)ttl_ms;
}

static bool session_counts(const struct ledger_session *s, int64_t now)
{
	return s->present && (s->state == RS_SESSION_ACTIVE || s->expires_ms >= now);
}

/* A live gateway's load: its attached count and its unexpired reservations. */
static uint32_t load_of(const struct ledger *l, int slot, int64_t now)
{
	uint32_t n = l->gw[slot].attached;

	for (int m = 0; m < LEDGER_MEMBERS; m++)
		if (l->s[m].present && l->s[m].gateway == slot && l->s[m].state == RS_SESSION_PENDING &&
		    l->s[m].expires_ms >= now)
			n++;
	return n;
}

uint32_t ledger_load(const struct ledger *l, int slot, int64_t now)
{
	return slot >= 0 && slot < LEDGER_GATEWAYS && l->gw[slot].present ? load_of(l, slot, now) : 0;
}

uint32_t ledger_active_rows(const struct ledger *l, int slot)
{
	uint32_t n = 0;

	for (int m = 0; m < LEDGER_MEMBERS; m++)
		n += l->s[m].present && l->s[m].gateway == slot && l->s[m].state == RS_SESSION_ACTIVE;
	return n;
}

bool ledger_gateway_live(const struct ledger_ctx *c, int slot)
{
	return slot >= 0 && slot < LEDGER_GATEWAYS && live_at(&c->l->gw[slot], c->store_wall_ms, c->ttl_ms);
}

/* rs_store_attached_move: an active row appearing, leaving or changing
 * gateway moves its gateway's count; a gateway without a row has none. */
static void attached_move(struct ledger *l, const struct ledger_session *before, const struct ledger_session *after)
{
	int from = before && before->present && before->state == RS_SESSION_ACTIVE ? before->gateway : -1;
	int to = after && after->present && after->state == RS_SESSION_ACTIVE ? after->gateway : -1;

	if (from == to)
		return;
	if (from >= 0 && l->gw[from].present && l->gw[from].attached > 0)
		l->gw[from].attached--;
	if (to >= 0 && l->gw[to].present)
		l->gw[to].attached++;
}

/* Writes member row m to *after, keeping the attached counts. */
static void row_write(struct ledger *l, int m, const struct ledger_session *after)
{
	struct ledger_session before = l->s[m];

	l->s[m] = *after;
	attached_move(l, &before, after);
}

static int touch(struct ledger *l, int slot, int64_t now)
{
	l->statements++;
	if (slot < 0 || !l->gw[slot].present)
		return -ENOENT;
	l->gw[slot].heartbeat_ms = now;
	return 0;
}

/* ---- the snapshot: live gateways, their ring and placer, their loads ---- */

static int id_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Makes the ring the live gateways' at now (rebuilt only when the id set
 * changed) and loads the placer: what rs_store_load_placer does. */
static int load_snapshot(struct ledger_ctx *c, const struct ledger *l, int64_t now)
{
	const char *ids[LEDGER_GATEWAYS];
	uint32_t set = 0, n = 0;
	struct rs_ring *ring = NULL;
	struct rs_placer *placer = NULL;
	int err;

	for (int g = 0; g < LEDGER_GATEWAYS; g++)
		if (live_at(&l->gw[g], now, c->ttl_ms)) {
			set |= 1u << g;
			ids[n++] = l->gw[g].id;
		}
	c->n_live = n;
	for (int g = 0; g < LEDGER_GATEWAYS; g++)
		c->slot_ring[g] = -1;
	if (n == 0)
		return 0;
	if (set != c->ring_set || !c->ring) {
		qsort(ids, n, sizeof(ids[0]), id_cmp);
		err = rs_ring_new(ids, n, &ring);
		if (!err && rs_ring_gateway_count(ring) != n)
			err = -EIO;
		if (!err)
			err = rs_placer_new(ring, &placer);
		if (err) {
			rs_placer_free(placer);
			rs_ring_free(ring);
			return err;
		}
		rs_placer_free(c->placer);
		rs_ring_free(c->ring);
		c->ring = ring;
		c->placer = placer;
		c->ring_set = set;
		for (uint32_t i = 0; i < n; i++)
			c->ring_slot[i] = gw_slot(rs_ring_gateway_id(ring, i));
	}
	for (uint32_t i = 0; i < n; i++) {
		int g = c->ring_slot[i];
		struct rs_gateway_load load = { .live = true, .draining = l->gw[g].state == RS_GATEWAY_DRAINING };

		c->slot_ring[g] = (int)i;
		c->loads[i] = load.load = load_of(l, g, now);
		err = rs_placer_set(c->placer, i, &load);
		if (err)
			return err;
	}
	return 0;
}

/* Whether member row s is the member's live session (store_snapshot.h). */
static bool live_session(const struct ledger_ctx *c, const struct ledger_session *s)
{
	return s->present && s->state == RS_SESSION_ACTIVE && s->gateway >= 0 && c->slot_ring[s->gateway] >= 0;
}

/* ---- admissions ---- */

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
	return gw_slot(a->gateway_id) >= 0 && member_slot(a->member_id) >= 0 && a->epoch <= INT64_MAX &&
	       !(a->handoff && a->deferred) && (!a->instance_id || strlen(a->instance_id) <= RS_INSTANCE_MAX) &&
	       strcmp(a->gateway_id, first->gateway_id) == 0 && a->now_ms == first->now_ms;
}

/* store_admit.c's check_member_row: whether this connection may be decided. */
static int check_member_row(const struct ledger_ctx *c, enum rs_arrival_kind kind, const struct rs_admit *a,
			    int here, const struct ledger_session *s)
{
	if (kind == RS_ARRIVE_HANDOFF || kind == RS_ARRIVE_DEFERRED) {
		if (!s->present || s->epoch != a->epoch || s->gateway != here)
			return -ESTALE;
		return 0;
	}
	if (!live_session(c, s))
		return 0;
	if (s->epoch > a->epoch)
		return -ESTALE;
	if (s->epoch == a->epoch && s->gateway != here)
		return -ESTALE;
	return 0;
}

/* Moves one counted row in the snapshot (rs_store_move_load). */
static int move_load(struct ledger_ctx *c, int from, int to)
{
	int err = 0;

	if (from == to)
		return 0;
	if (from >= 0) {
		if (c->loads[from] == 0)
			return -EIO;
		c->loads[from]--;
		err = rs_placer_add_load(c->placer, (uint32_t)from, -1);
	}
	if (!err && to >= 0) {
		c->loads[to]++;
		err = rs_placer_add_load(c->placer, (uint32_t)to, 1);
	}
	return err == -ERANGE ? -EIO : err;
}

/* Decides item a at gateway slot here and writes its row into l. */
static int admit_one(struct ledger_ctx *c, struct ledger *l, struct rs_admit *a, int here, int64_t now)
{
	int m = member_slot(a->member_id), record_at = -1, target;
	struct ledger_session *s = &l->s[m], row;
	struct rs_admit_input in = { .member_id = a->member_id, .kind = kind_of(a), .at = c->slot_ring[here],
				     .liveness = a->liveness };
	struct rs_admit_outcome o;
	const char *instance = a->instance_id ? a->instance_id : "";
	uint32_t sandboxes = a->sandboxes;
	int err;

	err = check_member_row(c, in.kind, a, here, s);
	if (err)
		return err;
	if (session_counts(s, now) && s->gateway >= 0 && c->slot_ring[s->gateway] >= 0) {
		record_at = c->slot_ring[s->gateway];
		if (c->loads[record_at] == 0)
			return -EIO; /* the count missed a row it must see */
	}
	in.record_at = record_at;
	in.record = record_at < 0 ? RS_RECORD_NONE : s->state == RS_SESSION_PENDING ? RS_RECORD_RESERVED
										    : RS_RECORD_ATTACHED;
	/* A reservation that counts nowhere has lapsed (store_snapshot.c,
	 * rs_store_lapsed_record). */
	if (record_at < 0 && s->present && s->state == RS_SESSION_PENDING) {
		in.record = RS_RECORD_LAPSED;
		in.record_at = s->gateway >= 0 ? c->slot_ring[s->gateway] : -1;
	}
	if (in.kind == RS_ARRIVE_HANDOFF || in.kind == RS_ARRIVE_DEFERRED) {
		instance = s->instance; /* the row it had */
		sandboxes = s->sandboxes;
	}
	err = c->admit(c->placer, &in, &o);
	if (err)
		return err;
	if (o.decision.gateway >= c->n_live)
		return -EIO;
	a->over_cap = o.over_cap;
	if (o.stays) {
		a->accepted = true;
		a->decision = o.decision;
		snprintf(a->target_id, sizeof(a->target_id), "%s", l->gw[here].id);
		snprintf(a->target_peer, sizeof(a->target_peer), "%s", l->gw[here].peer);
		return 0;
	}
	target = c->ring_slot[o.decision.gateway];
	if (c->observe)
		c->observe(c->observe_user, a, &in, &o, target);
	err = move_load(c, record_at, (int)o.decision.gateway);
	if (err)
		return err;
	row = (struct ledger_session){
		.present = true,
		.state = target == here ? RS_SESSION_ACTIVE : RS_SESSION_PENDING,
		.gateway = (int8_t)target,
		.sandboxes = sandboxes,
		.epoch = a->epoch,
		.heartbeat_ms = now,
		.expires_ms = now + (target == here ? c->ttl_ms : c->reservation_ms),
	};
	snprintf(row.instance, sizeof(row.instance), "%s", instance);
	l->statements++;
	row_write(l, m, &row);
	a->accepted = target == here;
	a->fallback = o.fallback;
	a->decision = o.decision;
	snprintf(a->target_id, sizeof(a->target_id), "%s", l->gw[target].id);
	snprintf(a->target_peer, sizeof(a->target_peer), "%s", l->gw[target].peer);
	return 0;
}

static int op_admit_batch(void *st, struct rs_admit *a, size_t n, int *errs)
{
	struct ledger_ctx *c = st;
	struct ledger work;
	size_t ok = 0, written = 0;
	int here, err = 0;
	int64_t now;

	if (!a || !errs || n == 0)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		clear_outputs(&a[i]);
	here = gw_slot(a[0].gateway_id);
	if (here < 0)
		err = -EINVAL;
	for (size_t i = 0; i < n; i++) {
		errs[i] = err ? err : admit_ok(&a[i], &a[0]) ? 0 : -EINVAL;
		ok += errs[i] == 0;
	}
	if (err || ok == 0)
		return err;
	now = store_now(c, a[0].now_ms);
	work = *c->l;
	err = touch(&work, here, now);
	if (!err)
		err = load_snapshot(c, &work, now);
	if (!err && c->slot_ring[here] < 0)
		err = -EIO; /* its heartbeat was just written: it must be live */
	for (size_t i = 0; !err && i < n; i++) {
		int e;

		if (!admit_ok(&a[i], &a[0])) {
			errs[i] = -EINVAL;
			continue;
		}
		e = admit_one(c, &work, &a[i], here, now);
		if (e && e != -ESTALE && e != -ENOENT) {
			err = e;
			break;
		}
		errs[i] = e;
		written += e == 0;
	}
	if (err) {
		for (size_t i = 0; i < n; i++) {
			clear_outputs(&a[i]);
			if (admit_ok(&a[i], &a[0]))
				errs[i] = err;
		}
		return err;
	}
	if (written)
		*c->l = work; /* commit; else nothing was written, not even the heartbeat */
	return 0;
}

/* ---- claims, departures, counts ---- */

static int op_claim(void *st, struct rs_session_claim *k)
{
	struct ledger_ctx *c = st;
	int here = gw_slot(k->gateway_id), m = member_slot(k->member_id);
	struct ledger work;
	struct ledger_session *s, row;
	uint64_t total = 0, serving = 0;
	int64_t now;
	int err;

	k->load = k->cap = 0;
	k->above_cap = false;
	if (here < 0 || m < 0 || k->epoch > INT64_MAX)
		return -EINVAL;
	now = store_now(c, k->now_ms);
	work = *c->l;
	err = touch(&work, here, now);
	if (!err)
		err = load_snapshot(c, &work, now);
	if (err)
		return err;
	s = &work.s[m];
	if (live_session(c, s) && (s->epoch > k->epoch || (s->epoch == k->epoch && s->gateway != here)))
		return -ESTALE;
	row = (struct ledger_session){ .present = true, .state = RS_SESSION_ACTIVE, .gateway = (int8_t)here,
				       .sandboxes = k->sandboxes, .epoch = k->epoch, .heartbeat_ms = now,
				       .expires_ms = now + c->ttl_ms };
	snprintf(row.instance, sizeof(row.instance), "%s", k->instance_id ? k->instance_id : "");
	work.statements++;
	row_write(&work, m, &row);
	/* The cap over the snapshot read after the row is written. */
	err = load_snapshot(c, &work, now);
	if (!err && c->slot_ring[here] < 0)
		err = -EIO;
	if (err)
		return err;
	for (uint32_t i = 0; i < c->n_live; i++) {
		total += c->loads[i];
		serving += work.gw[c->ring_slot[i]].state == RS_GATEWAY_SERVING;
	}
	k->load = c->loads[c->slot_ring[here]];
	k->cap = (uint32_t)(serving ? (total + serving - 1) / serving : total);
	k->above_cap = k->load > k->cap;
	*c->l = work;
	return 0;
}

static int op_leave(void *st, const char *gateway_id, const char *member_id, uint64_t epoch, int64_t now_ms,
		    uint32_t grace_ms)
{
	struct ledger_ctx *c = st;
	int here = gw_slot(gateway_id), m = member_slot(member_id);
	struct ledger_session *s, row;
	int64_t now;

	if (here < 0 || m < 0 || epoch > INT64_MAX)
		return -EINVAL;
	now = store_now(c, now_ms);
	s = &c->l->s[m];
	c->l->statements++;
	if (!s->present || s->epoch != epoch || s->gateway != here)
		return 0; /* moved on, or gone: nothing to end or keep */
	if (grace_ms == 0 || s->state != RS_SESSION_ACTIVE) {
		row = (struct ledger_session){ .present = false };
		row_write(c->l, m, &row);
		return 0;
	}
	row = *s;
	row.state = RS_SESSION_PENDING;
	row.heartbeat_ms = now;
	row.expires_ms = now + grace_ms;
	row_write(c->l, m, &row);
	return 0;
}

static int op_sandboxes(void *st, const char *gateway_id, const char *member_id, uint64_t epoch, uint32_t count)
{
	struct ledger_ctx *c = st;
	int here = gw_slot(gateway_id), m = member_slot(member_id);
	struct ledger_session *s;

	if (here < 0 || m < 0 || epoch > INT64_MAX)
		return -EINVAL;
	s = &c->l->s[m];
	c->l->statements++;
	if (!s->present || s->epoch != epoch || s->gateway != here)
		return -ESTALE;
	s->sandboxes = count;
	return 0;
}

/* ---- gateways ---- */

static int op_heartbeat(void *st, const char *gateway_id, int64_t now_ms)
{
	struct ledger_ctx *c = st;
	int here = gw_slot(gateway_id);

	if (here < 0)
		return -EINVAL;
	return touch(c->l, here, store_now(c, now_ms));
}

static int gateway_write(struct ledger_ctx *c, const char *id, const char *peer, enum rs_gateway_state state,
			 int64_t now_ms, bool fresh)
{
	int here = gw_slot(id);
	struct ledger_gateway *g;

	if (here < 0 || !peer || strlen(peer) > RS_ENDPOINT_MAX ||
	    (state != RS_GATEWAY_SERVING && state != RS_GATEWAY_DRAINING))
		return -EINVAL;
	g = &c->l->gw[here];
	if (!g->present)
		*g = (struct ledger_gateway){ .present = true };
	snprintf(g->id, sizeof(g->id), "%s", id);
	snprintf(g->peer, sizeof(g->peer), "%s", peer);
	g->state = (uint8_t)state;
	g->heartbeat_ms = store_now(c, now_ms);
	c->l->statements++;
	if (!fresh)
		return 0;
	/* A process starting holds no connection: its active rows end. */
	for (int m = 0; m < LEDGER_MEMBERS; m++)
		if (c->l->s[m].present && c->l->s[m].gateway == here && c->l->s[m].state == RS_SESSION_ACTIVE)
			c->l->s[m].present = false;
	g->attached = 0;
	return 0;
}

static int op_register(void *st, const char *id, const char *peer, enum rs_gateway_state state, int64_t now_ms)
{
	return gateway_write(st, id, peer, state, now_ms, false);
}

static bool held_by(const struct rs_session_key *held, size_t n, int m, uint64_t epoch)
{
	char id[RS_ID_MAX + 1];

	snprintf(id, sizeof(id), "m-%d", m);
	for (size_t i = 0; i < n; i++)
		if (held[i].epoch == epoch && strcmp(held[i].member_id, id) == 0)
			return true;
	return false;
}

/* rs_store_gateway_start_holding: registers keeping the rows, then ends
 * the active ones the process does not hold (an earlier process's), its
 * count those left. */
static int op_start_holding(void *st, const char *id, const char *peer, enum rs_gateway_state state, int64_t now_ms,
			    const struct rs_session_key *held, size_t n)
{
	struct ledger_ctx *c = st;
	int here = gw_slot(id), err;
	uint32_t kept = 0;

	if (n && !held)
		return -EINVAL;
	err = gateway_write(c, id, peer, state, now_ms, false);
	if (err)
		return err;
	for (int m = 0; m < LEDGER_MEMBERS; m++) {
		struct ledger_session *s = &c->l->s[m];

		if (!s->present || s->gateway != here || s->state != RS_SESSION_ACTIVE)
			continue;
		if (held_by(held, n, m, s->epoch))
			kept++;
		else
			s->present = false;
	}
	c->l->gw[here].attached = kept;
	c->l->statements += 2;
	return 0;
}

int ledger_gateway_start(struct ledger_ctx *c, const char *id, const char *peer, enum rs_gateway_state state,
			 int64_t now_ms)
{
	return gateway_write(c, id, peer, state, now_ms, true);
}

int ledger_gateway_remove(struct ledger_ctx *c, const char *id)
{
	int here = gw_slot(id);

	if (here < 0 || !c->l->gw[here].present)
		return -ENOENT;
	c->l->gw[here].present = false;
	for (int m = 0; m < LEDGER_MEMBERS; m++)
		if (c->l->s[m].present && c->l->s[m].gateway == here)
			c->l->s[m].present = false;
	c->l->statements++;
	return 0;
}

/* A row as the listings give it: live and supervisors at now. */
static void row_of(const struct ledger_ctx *c, int g, int64_t now, struct rs_gateway_row *out)
{
	const struct ledger_gateway *r = &c->l->gw[g];

	*out = (struct rs_gateway_row){ .state = r->state, .heartbeat_ms = r->heartbeat_ms, .attached = r->attached };
	snprintf(out->id, sizeof(out->id), "%s", r->id);
	snprintf(out->peer, sizeof(out->peer), "%s", r->peer);
	out->live = live_at(r, now, c->ttl_ms);
	out->supervisors = out->live ? load_of(c->l, g, now) : 0;
}

static int op_get(void *st, const char *id, int64_t now_ms, struct rs_gateway_row *row)
{
	struct ledger_ctx *c = st;
	int here = gw_slot(id);

	if (here < 0 || !row)
		return -EINVAL;
	c->l->statements++;
	if (!c->l->gw[here].present)
		return -ENOENT;
	row_of(c, here, store_now(c, now_ms), row);
	return 0;
}

static int op_list(void *st, int64_t now_ms, bool all, struct rs_gateway_row **rows, size_t *n)
{
	struct ledger_ctx *c = st;
	int64_t now = store_now(c, now_ms);
	struct rs_gateway_row *out;
	size_t k = 0;

	*rows = NULL;
	*n = 0;
	out = calloc(LEDGER_GATEWAYS, sizeof(*out));
	if (!out)
		return -ENOMEM;
	c->l->statements++;
	/* Slots are in id order for up to ten gateways ("gw-0".."gw-7"). */
	for (int g = 0; g < LEDGER_GATEWAYS; g++)
		if (c->l->gw[g].present && (all || live_at(&c->l->gw[g], now, c->ttl_ms)))
			row_of(c, g, now, &out[k++]);
	*rows = out;
	*n = k;
	return 0;
}

static uint64_t op_statements(const void *st)
{
	const struct ledger_ctx *c = st;

	return c->l->statements;
}

static int op_clock_skew(const void *st, int64_t *skew_ms)
{
	const struct ledger_ctx *c = st;

	if (!c->skew_known)
		return -ENOENT;
	*skew_ms = c->skew_ms;
	return 0;
}

static const struct rs_gw_store_ops ops = {
	.admit_batch = op_admit_batch,
	.session_claim = op_claim,
	.session_leave = op_leave,
	.session_sandboxes = op_sandboxes,
	.heartbeat = op_heartbeat,
	.gateway_register = op_register,
	.gateway_get = op_get,
	.list_gateways = op_list,
	.statements = op_statements,
	.clock_skew = op_clock_skew,
	.gateway_start_holding = op_start_holding,
};

const struct rs_gw_store_ops *ledger_ops(void)
{
	return &ops;
}

void ledger_ctx_fini(struct ledger_ctx *c)
{
	rs_placer_free(c->placer);
	rs_ring_free(c->ring);
	c->placer = NULL;
	c->ring = NULL;
	c->ring_set = 0;
}
