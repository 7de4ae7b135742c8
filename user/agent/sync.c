/* SPDX-License-Identifier: Apache-2.0 */
/* sync.c - follows the store and rewrites the steering maps (docs/KERNEL.md,
 * "Sync"), once per --sync-interval:
 *
 *  - slots: a slot whose listener is gone and whose gateway is no longer
 *    live in the store (or, without a store, at once) is freed;
 *  - pins: each live session on a local gateway pins its source address to
 *    that gateway's slot; each known supervisor (seen in a session, its
 *    row since expired or deleted at a clean departure, and not forgotten:
 *    seen within --forget-after) with no live session is placed by the
 *    rule, as a Service arrival, and pinned when the rule picks a local
 *    gateway (a precomputed placement, precompute.c).
 *    A source address two supervisors share with different answers is not
 *    pinned (the table decides);
 *  - peer endpoints of local gateways into rs_endpoints (sockops counts
 *    redirected arrivals even from a gateway that registered no peer socket);
 *  - the bucket table: each local serving gateway weighs its room,
 *    max(0, cap - load) with cap = ceil((N + 1) / G) over live gateways (the
 *    +1 is the arrival being steered, as in the rule); when none has room,
 *    every local serving gateway weighs 1 (the in-protocol rule redirects);
 *    without a store, every local gateway weighs 1.  A new table is swapped
 *    in only when it differs from the one in force.
 *
 * A failed store read changes nothing: steering goes on from the maps. */
#include <bpf/bpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent_run.h"
#include "util/endpoint.h"
#include "util/logfmt.h"
#include "util/mstime.h"
#include "ringsteer/placement.h"

/* The slots as they are now. */
struct view {
	struct rs_slot slot[RS_SLOTS_MAX];
	bool socket[RS_SLOTS_MAX];
};

static int view_read(const struct agent_maps *m, struct view *v)
{
	for (uint32_t i = 0; i < RS_SLOTS_MAX; i++) {
		int err = rs_map_slot(m->slots, i, &v->slot[i]);
		int has;

		if (err)
			return err;
		has = rs_map_slot_socket(m->sockets, i, NULL);
		if (has < 0)
			return has;
		v->socket[i] = has == 1;
	}
	return 0;
}

/* The slot of a gateway that can take steered connections, or -1. */
static int local_slot(const struct view *v, const char *gateway_id)
{
	for (uint32_t i = 0; i < RS_SLOTS_MAX; i++)
		if (v->slot[i].state == RS_SLOT_REGISTERED && v->socket[i] && strcmp(v->slot[i].gateway, gateway_id) == 0)
			return (int)i;
	return -1;
}

const struct rs_gateway_row *agent_snapshot_gateway(const struct agent_snapshot *s, const char *id)
{
	size_t lo = 0, hi = s->n_gateways;

	while (lo < hi) { /* rows are sorted by id */
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(s->gateways[mid].id, id);

		if (c == 0)
			return &s->gateways[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Every registered slot whose listener is open weighs the same. */
static void weights_open_listeners(const struct view *v, uint32_t w[RS_SLOTS_MAX])
{
	for (uint32_t i = 0; i < RS_SLOTS_MAX; i++)
		w[i] = v->slot[i].state == RS_SLOT_REGISTERED && v->socket[i];
}

static void weights_of(const struct agent *a, const struct view *v, uint32_t w[RS_SLOTS_MAX])
{
	const struct agent_snapshot *s = &a->snap;
	uint64_t members = 0;
	uint32_t serving = 0, cap;
	bool any_room = false;

	memset(w, 0, sizeof(uint32_t) * RS_SLOTS_MAX);
	if (!a->cfg.store_url || !s->valid) {
		weights_open_listeners(v, w);
		return;
	}
	for (size_t g = 0; g < s->n_gateways; g++) {
		members += s->gateways[g].supervisors;
		serving += s->gateways[g].state == RS_GATEWAY_SERVING;
	}
	cap = rs_cap(members + 1, serving);
	for (uint32_t i = 0; i < RS_SLOTS_MAX; i++) {
		const struct rs_gateway_row *row;

		if (v->slot[i].state != RS_SLOT_REGISTERED || !v->socket[i])
			continue;
		row = agent_snapshot_gateway(s, v->slot[i].gateway);
		if (!row || row->state != RS_GATEWAY_SERVING)
			continue;
		w[i] = row->supervisors < cap ? cap - row->supervisors : 0;
		any_room |= w[i] > 0;
	}
	if (any_room)
		return;
	for (uint32_t i = 0; i < RS_SLOTS_MAX; i++) {
		const struct rs_gateway_row *row;

		if (v->slot[i].state != RS_SLOT_REGISTERED || !v->socket[i])
			continue;
		row = agent_snapshot_gateway(s, v->slot[i].gateway);
		w[i] = row && row->state == RS_GATEWAY_SERVING;
	}
	for (uint32_t i = 0; i < RS_SLOTS_MAX; i++)
		if (w[i])
			return;
	/* The store shows no local gateway serving, yet listeners are open: a
	 * store stalled past the TTL (a long lock, an outage the gateways ride
	 * out degraded) or every local gateway draining.  An empty table would
	 * refuse every Service connection; the open listeners accept (or
	 * redirect) them, so steer evenly to those. */
	weights_open_listeners(v, w);
}

static int table_apply(struct agent *a, const struct view *v)
{
	uint32_t w[RS_SLOTS_MAX];
	uint32_t *want = malloc(sizeof(uint32_t) * RS_TABLE_SIZE * 2), *have;
	int err;

	if (!want)
		return -ENOMEM;
	have = want + RS_TABLE_SIZE;
	weights_of(a, v, w);
	agent_table_build(w, want);
	err = rs_map_table(a->k.maps.table, have);
	if (err == 0 && memcmp(want, have, sizeof(uint32_t) * RS_TABLE_SIZE) == 0)
		goto cleanup;
	err = agent_table_swap(&a->k.maps, want);
	if (!err)
		a->counters.table_swaps++;
cleanup:
	free(want);
	return err;
}

int agent_sync_table(struct agent *a)
{
	struct view *v = malloc(sizeof(*v));
	int err;

	if (!v)
		return -ENOMEM;
	err = view_read(&a->k.maps, v);
	if (!err)
		err = table_apply(a, v);
	free(v);
	return err;
}

/* ---- pins ------------------------------------------------------------------ */

struct pin_entry {
	struct rs_source_key key;
	uint32_t slot;
	bool conflict;
};

static int pin_cmp(const void *x, const void *y)
{
	return memcmp(&((const struct pin_entry *)x)->key, &((const struct pin_entry *)y)->key,
		      sizeof(struct rs_source_key));
}

struct pin_set {
	struct pin_entry *e;
	size_t n, cap;
};

static int pin_add(struct pin_set *p, const char *source, uint32_t slot)
{
	struct rs_source_key k;

	if (!source[0] || agent_source_key_text(source, &k))
		return 0; /* no source recorded (an old gateway): nothing to pin */
	if (p->n == p->cap) {
		if (p->cap >= RS_PINS_MAX)
			return 0; /* full: the rest go by the table */
		size_t cap = p->cap ? p->cap * 2 : 64;
		struct pin_entry *e = realloc(p->e, cap * sizeof(*e));

		if (!e)
			return -ENOMEM;
		p->e = e;
		p->cap = cap;
	}
	p->e[p->n++] = (struct pin_entry){ .key = k, .slot = slot };
	return 0;
}

/* Sorts, marks keys with disagreeing slots, and drops duplicates. */
static void pin_settle(struct pin_set *p)
{
	size_t out = 0;

	if (!p->n)
		return;
	qsort(p->e, p->n, sizeof(*p->e), pin_cmp);
	for (size_t i = 0; i < p->n; i++) {
		if (out > 0 && pin_cmp(&p->e[out - 1], &p->e[i]) == 0) {
			if (p->e[out - 1].slot != p->e[i].slot)
				p->e[out - 1].conflict = true;
			continue;
		}
		p->e[out++] = p->e[i];
	}
	p->n = out;
}

static const struct pin_entry *pin_find(const struct pin_set *p, const struct rs_source_key *k)
{
	struct pin_entry probe = { .key = *k };

	return p->n ? bsearch(&probe, p->e, p->n, sizeof(*p->e), pin_cmp) : NULL;
}

/* One pass's precomputed pins: where each placement lands locally. */
struct precompute_ctx {
	struct agent *a;
	const struct view *v;
	struct pin_set *want;
	const struct rs_gateway_row *gws; /* the snapshot's, sorted by id */
	int *slot_of;                     /* per snapshot gateway: its local slot, -1 none, -2 not looked up */
};

static int precomputed_pin(void *arg, const struct agent_known *k, const char *gateway_id)
{
	struct precompute_ctx *c = arg;
	const struct rs_gateway_row *row = agent_snapshot_gateway(&c->a->snap, gateway_id);
	struct rs_source_key sk;
	int *slot;
	int err;

	if (!row || agent_source_key_text(k->source, &sk))
		return 0;
	/* A slot lookup per gateway, not per member: there are 65k members. */
	slot = &c->slot_of[row - c->gws];
	if (*slot == -2)
		*slot = local_slot(c->v, gateway_id);
	if (*slot < 0)
		return 0;
	err = pin_add(c->want, k->source, (uint32_t)*slot);
	if (!err)
		c->a->pins_precomputed++;
	return err;
}

/* Known supervisors follow this listing and the registrations; those not
 * seen within --forget-after go; the rest without a live session get
 * precomputed pins. */
static int precompute(struct agent *a, const struct view *v, const struct rs_session_row *rows, size_t n,
		      struct pin_set *want, int64_t now_ms)
{
	const struct agent_snapshot *s = &a->snap;
	struct precompute_ctx c = { .a = a, .v = v, .want = want, .gws = s->gateways };
	int err = agent_known_note(&a->known, rows, n, now_ms);

	if (err)
		return err;
	for (const struct agent_member *m = a->members; m; m = m->next)
		if (m->registered)
			agent_known_seen(&a->known, m->member_id, now_ms);
	agent_known_forget(&a->known, now_ms, a->cfg.forget_ms);
	if (!s->n_gateways)
		return 0;
	c.slot_of = malloc(s->n_gateways * sizeof(*c.slot_of));
	if (!c.slot_of)
		return -ENOMEM;
	for (size_t g = 0; g < s->n_gateways; g++)
		c.slot_of[g] = -2;
	err = agent_precompute(&a->ring_cache, &a->known, s->gateways, s->n_gateways, rows, n, precomputed_pin, &c);
	free(c.slot_of);
	return err;
}

static int pins_apply(struct agent *a, const struct pin_set *want)
{
	const struct agent_maps *m = &a->k.maps;
	struct rs_source_key *stale = NULL, key, next;
	size_t n_stale = 0, cap = 0;
	bool have_key = false;
	int err = 0;

	/* Stale keys first (collected, then deleted: deleting while iterating
	 * a hash map restarts the walk). */
	for (long guard = 0; guard <= RS_PINS_MAX; guard++) {
		const struct pin_entry *e;

		if (bpf_map_get_next_key(m->pins, have_key ? &key : NULL, &next) < 0)
			break;
		key = next;
		have_key = true;
		e = pin_find(want, &key);
		if (e && !e->conflict)
			continue;
		if (n_stale == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct rs_source_key *s = realloc(stale, ncap * sizeof(*s));

			if (!s) {
				err = -ENOMEM;
				goto cleanup;
			}
			stale = s;
			cap = ncap;
		}
		stale[n_stale++] = key;
	}
	for (size_t i = 0; i < n_stale; i++)
		if (bpf_map_delete_elem(m->pins, &stale[i]) == 0)
			a->counters.pin_deletes++;
	for (size_t i = 0; i < want->n; i++) {
		struct rs_pin cur, p = { .slot = want->e[i].slot };

		if (want->e[i].conflict)
			continue;
		if (bpf_map_lookup_elem(m->pins, &want->e[i].key, &cur) == 0 && cur.slot == p.slot)
			continue;
		if (bpf_map_update_elem(m->pins, &want->e[i].key, &p, BPF_ANY) < 0) {
			err = -errno; /* E2BIG: full; the rest go by the table */
			break;
		}
		a->counters.pin_writes++;
	}
cleanup:
	free(stale);
	return err;
}

/* ---- peer endpoints ---------------------------------------------------------- */

static int endpoints_apply(struct agent *a, const struct view *v)
{
	const struct agent_maps *m = &a->k.maps;
	struct rs_endpoint_key want[RS_SLOTS_MAX], key, next, stale[RS_ENDPOINTS_MAX];
	uint32_t want_slot[RS_SLOTS_MAX];
	size_t n = 0, n_stale = 0;
	bool have_key = false;

	for (uint32_t i = 0; i < RS_SLOTS_MAX; i++) {
		const struct rs_gateway_row *row;
		struct sockaddr_storage ss;
		socklen_t len;

		if (v->slot[i].state != RS_SLOT_REGISTERED)
			continue;
		row = agent_snapshot_gateway(&a->snap, v->slot[i].gateway);
		if (!row || rs_endpoint_parse(row->peer, &ss, &len) || agent_endpoint_key((struct sockaddr *)&ss, &want[n]))
			continue;
		want_slot[n++] = i;
	}
	for (long guard = 0; guard <= RS_ENDPOINTS_MAX; guard++) {
		bool keep = false;

		if (bpf_map_get_next_key(m->endpoints, have_key ? &key : NULL, &next) < 0)
			break;
		key = next;
		have_key = true;
		for (size_t i = 0; i < n && !keep; i++)
			keep = memcmp(&want[i], &key, sizeof(key)) == 0;
		if (!keep && n_stale < RS_ENDPOINTS_MAX)
			stale[n_stale++] = key;
	}
	for (size_t i = 0; i < n_stale; i++)
		bpf_map_delete_elem(m->endpoints, &stale[i]);
	for (size_t i = 0; i < n; i++) {
		struct rs_endpoint_slot e = { .slot = want_slot[i] };

		if (bpf_map_update_elem(m->endpoints, &want[i], &e, BPF_ANY) < 0)
			return -errno;
	}
	return 0;
}

/* The store's clock. */
/* ---- one pass ------------------------------------------------------------------ */

static void snapshot_set(struct agent_snapshot *s, struct rs_gateway_row *rows, size_t n)
{
	free(s->gateways);
	s->gateways = rows;
	s->n_gateways = n;
	s->valid = true;
}

/* Frees slots whose listener is gone and whose gateway is gone too. */
static int release_gone(struct agent *a, struct view *v)
{
	for (uint32_t i = 0; i < RS_SLOTS_MAX; i++) {
		char slot_text[12];
		int err;

		if (v->slot[i].state != RS_SLOT_REGISTERED || v->socket[i])
			continue;
		if (a->cfg.store_url && agent_snapshot_gateway(&a->snap, v->slot[i].gateway))
			continue; /* still live: it may be restarting */
		err = agent_slot_release(&a->k.maps, i);
		if (err)
			return err;
		snprintf(slot_text, sizeof(slot_text), "%u", i);
		rs_log(stderr, "info", "agent", "event", "slot_released", "slot", slot_text, "gateway",
		       v->slot[i].gateway, NULL);
		v->slot[i].state = RS_SLOT_FREE;
		a->counters.slots_released++;
	}
	return 0;
}

int agent_sync_apply(struct agent *a, struct agent_listing *l)
{
	struct rs_session_row *sessions = l ? l->sessions : NULL;
	size_t n_sessions = l ? l->n_sessions : 0;
	int64_t now_ms = l ? l->now_ms : rs_wall_ms();
	struct pin_set want = { 0 };
	struct view *v = malloc(sizeof(*v));
	int err;

	if (!v)
		return -ENOMEM;
	if (l) {
		snapshot_set(&a->snap, l->gws, l->n_gws);
		l->gws = NULL; /* the snapshot's now */
		l->n_gws = 0;
	}
	err = view_read(&a->k.maps, v);
	if (!err)
		err = release_gone(a, v);
	if (err)
		goto cleanup;
	if (l) {
		uint32_t live = 0;

		/* Sessions come sorted by gateway: one slot lookup per gateway. */
		const char *last_gw = NULL;
		int last_slot = -1;

		for (size_t i = 0; i < n_sessions; i++) {
			if (!sessions[i].live)
				continue;
			if (!last_gw || strcmp(last_gw, sessions[i].gateway_id) != 0) {
				last_gw = sessions[i].gateway_id;
				last_slot = local_slot(v, last_gw);
			}
			if (last_slot < 0)
				continue;
			err = pin_add(&want, sessions[i].source, (uint32_t)last_slot);
			if (err)
				goto cleanup;
			live++;
		}
		a->pins_live = live;
		a->pins_precomputed = 0;
		err = precompute(a, v, sessions, n_sessions, &want, now_ms);
		if (err)
			goto cleanup;
		pin_settle(&want);
		err = pins_apply(a, &want);
		if (!err)
			err = endpoints_apply(a, v);
		if (!err && a->k.maps.clients >= 0)
			err = agent_members_sync(a, sessions, n_sessions, now_ms);
		if (err)
			goto cleanup;
	}
	err = table_apply(a, v);
cleanup:
	free(want.e);
	free(v);
	return err;
}
