/* SPDX-License-Identifier: Apache-2.0 */
/* members.c - registered supervisors as connect-time steering entries: each
 * registration is one rs_clients entry (its key -> a target slot), each
 * gateway a registered supervisor is sent to is one rs_targets slot.
 *
 * Invariants:
 * - One registration per key: a second member for the same netns or cgroup
 *   is refused (it could otherwise steer the first one's connects), and
 *   one reservation per key (reservations.c).
 * - A uid holds at most cfg.member_uid_max registrations, so that no caller
 *   takes every rs_clients entry the agent would write by making netns of
 *   its own (the uid is the agent's view: a user namespace cannot change it).
 * - A target slot's row is written (endpoint, gen, ready) before any
 *   rs_clients entry names it, and a slot given to another gateway gets a
 *   new gen first, so an entry can never send a caller to a gateway it was
 *   not chosen for.
 * - Entries expire ttl_ms after the last successful sync wrote them: an
 *   agent that dies, or cannot read the store, leaves connects to
 *   kube-proxy once that passes, never to stale targets.
 * - The target is the member's live session's gateway (a restart or a
 *   blip goes home), else the rule's choice through rs_store_steer, which
 *   reserves it in the store so that concurrent registrations and the
 *   gateway's own decision count it.
 * - rs_store_steer_batch runs on the store worker, never on the loop
 *   (registrations queued together share one transaction): a
 *   registration is answered when it answers, or after cfg.steer_wait_ms
 *   without a target (at once when the store is already stuck), and steered
 *   when the answer comes.  A member gone meanwhile has cleared its job's
 *   pointer: the answer is dropped. */
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

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts); /* bpf_ktime_get_ns's clock */
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool key_eq(const struct rs_client_key *x, const struct rs_client_key *y)
{
	return x->kind == y->kind && x->id == y->id;
}

static struct agent_member *holder_of(struct agent *a, const struct rs_client_key *k, const struct agent_member *except)
{
	for (struct agent_member *m = a->members; m; m = m->next)
		if (m != except && m->registered && key_eq(&m->key, k))
			return m;
	return NULL;
}

static int target_write(struct agent *a, uint32_t slot)
{
	const struct agent_target *t = &a->targets[slot];
	struct rs_target row = { .gen = t->gen, .ready = t->ready };
	struct rs_endpoint_key ep;
	struct sockaddr_storage ss;
	socklen_t len;

	if (t->ready) {
		if (rs_endpoint_parse(t->peer, &ss, &len) || agent_endpoint_key((struct sockaddr *)&ss, &ep))
			return -EINVAL;
		row.family = ep.family;
		row.port = ep.port;
		memcpy(row.addr, ep.addr, sizeof(row.addr));
	}
	snprintf(row.gateway, sizeof(row.gateway), "%s", t->gateway);
	if (bpf_map_update_elem(a->k.maps.targets, &slot, &row, BPF_ANY) < 0)
		return -errno;
	a->counters.target_writes++;
	return 0;
}

/* The slot sending callers to gateway at peer, made ready.  Returns the
 * slot, -ENOSPC (every slot names another gateway), -EINVAL (peer is not
 * numeric ADDR:PORT), -errno. */
static int target_slot(struct agent *a, const char *gateway, const char *peer)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int free_slot = -1;

	if (rs_endpoint_parse(peer, &ss, &len))
		return -EINVAL;
	for (uint32_t i = 0; i < RS_TARGETS_MAX; i++) {
		struct agent_target *t = &a->targets[i];

		if (!t->gateway[0]) {
			if (free_slot < 0)
				free_slot = (int)i;
			continue;
		}
		if (strcmp(t->gateway, gateway) != 0)
			continue;
		if (t->ready && strcmp(t->peer, peer) == 0)
			return (int)i;
		snprintf(t->peer, sizeof(t->peer), "%s", peer);
		t->ready = true;
		return target_write(a, i) ?: (int)i;
	}
	if (free_slot < 0)
		return -ENOSPC;
	a->targets[free_slot].gen++; /* before any entry can name the new holder */
	snprintf(a->targets[free_slot].gateway, sizeof(a->targets[free_slot].gateway), "%s", gateway);
	snprintf(a->targets[free_slot].peer, sizeof(a->targets[free_slot].peer), "%s", peer);
	a->targets[free_slot].ready = true;
	return target_write(a, (uint32_t)free_slot) ?: free_slot;
}

/* Writes m's entry for its target (with a fresh expiry), or deletes it when
 * m has none. */
static int client_write(struct agent *a, const struct agent_member *m, const char *peer)
{
	struct rs_client c;
	int slot;

	if (!m->gateway[0]) {
		if (bpf_map_delete_elem(a->k.maps.clients, &m->key) < 0 && errno != ENOENT)
			return -errno;
		return 0;
	}
	slot = target_slot(a, m->gateway, peer);
	if (slot < 0)
		return slot;
	c = (struct rs_client){ .slot = (uint32_t)slot, .gen = a->targets[slot].gen,
				.expires_ns = mono_ns() + (uint64_t)a->cfg.ttl_ms * 1000000ull };
	if (bpf_map_update_elem(a->k.maps.clients, &m->key, &c, BPF_ANY) < 0) {
		/* E2BIG: full; this caller goes through kube-proxy, the
		 * entries there keep steering theirs. */
		if (errno == E2BIG)
			a->counters.clients_full++;
		return -errno;
	}
	a->counters.client_writes++;
	return 0;
}

static const char *kind_name(uint32_t kind)
{
	return kind == RS_CLIENT_NETNS ? "netns" : "cgroup";
}

/* The answer to m's registration once its target is known (or not). */
static void verdict_of(const struct agent_member *m, int err, const char *peer, struct agent_member_verdict *v)
{
	v->reason = RS_AGENT_REG_OK;
	v->later = false;
	if (err == -E2BIG)
		snprintf(v->text, sizeof(v->text), "registered by %s; not steered: rs_clients is full, connects go through the Service",
			 kind_name(m->key.kind));
	else if (err)
		snprintf(v->text, sizeof(v->text), "registered by %s; not steered yet (%s): connects go through the Service",
			 kind_name(m->key.kind), strerror(-err));
	else if (!m->gateway[0])
		snprintf(v->text, sizeof(v->text), "registered by %s; no store: connects go through the Service",
			 kind_name(m->key.kind));
	else
		snprintf(v->text, sizeof(v->text), "registered by %s; connects go to %.80s at %.60s",
			 kind_name(m->key.kind), m->gateway, peer);
}

#define STEER_BATCH_MAX 64

/* rs_store_steer for one member, on the store worker.  The loop keeps m
 * while the job runs; m's free clears m here, and the answer is dropped. */
struct steer_job {
	struct agent *a;
	struct agent_member *m;
	char member_id[RS_ID_MAX + 1];
	struct rs_client_key key; /* m's: its reservation is the key's even if m is gone */
	int64_t now_ms;
	struct rs_store_steer out;
};

/* Registrations queued together are steered in one transaction at the
 * latest of their times (each was judged at its own; a member is placed
 * as of when the store decides): a storm of registrations is a few
 * commits, not one per member, so its tail still gets its answer within
 * cfg.steer_wait_ms. */
static void steer_run(struct rs_store *st, void *const *args, int *errs, size_t n)
{
	const char *ids[STEER_BATCH_MAX] = { 0 };
	struct rs_store_steer outs[STEER_BATCH_MAX];
	int64_t now = 0;

	if (n > STEER_BATCH_MAX) { /* the kind's batch_max: cannot be */
		for (size_t i = 0; i < n; i++)
			errs[i] = -EINVAL;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const struct steer_job *j = args[i];

		ids[i] = j->member_id;
		if (j->now_ms > now)
			now = j->now_ms;
	}
	rs_store_steer_batch(st, ids, n, now, outs, errs);
	for (size_t i = 0; i < n; i++) {
		struct steer_job *j = args[i];

		j->out = outs[i];
	}
}

/* Loop thread: m (if still there and registered) gets its target and its
 * entry, and its registration its answer if it still waits for one. */
static void steer_done(void *arg, int err)
{
	struct steer_job *j = arg;
	struct agent_member *m = j->m;
	struct agent *a = j->a;
	struct agent_member_verdict v;

	if (a->stopping) {
		free(j);
		return;
	}
	if (!err)
		agent_reservation_noted(a, &j->key, &j->out, j->member_id);
	if (!m) {
		free(j);
		return;
	}
	m->steer = NULL;
	if (err) {
		a->counters.steer_failures++;
		m->gateway[0] = '\0';
	} else {
		snprintf(m->gateway, sizeof(m->gateway), "%s", j->out.gateway_id);
	}
	if (!err && m->registered)
		err = client_write(a, m, j->out.peer);
	verdict_of(m, err, j->out.peer, &v);
	agent_member_reply(m, &v);
	free(j);
}

static const struct rs_store_job_kind steer_kind = {
	.name = "agent member steer",
	.run = steer_run,
	.done = steer_done,
	.batch_max = STEER_BATCH_MAX,
};

/* Chooses m's target through the store, off the loop: the answer writes
 * its entry.  Returns 0 (submitted, or one already in flight) or -errno. */
static int steer_submit(struct agent *a, struct agent_member *m, int64_t now_ms)
{
	struct steer_job *j;
	int err;

	if (m->steer)
		return 0;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->a = a;
	j->m = m;
	j->now_ms = now_ms;
	j->key = m->key;
	snprintf(j->member_id, sizeof(j->member_id), "%s", m->member_id);
	err = rs_store_worker_submit(a->worker, &steer_kind, j);
	if (err) {
		free(j);
		return err;
	}
	m->steer = j;
	return 0;
}

/* m's place in its uid's share of registrations (the same uid's other,
 * which m replaces, hands its place over).  Returns 0, or -EDQUOT /
 * -ENOMEM with v filled. */
static int uid_hold(struct agent *a, struct agent_member *m, struct agent_member *other,
		    struct agent_member_verdict *v)
{
	int err;

	if (other && other->uid_held && other->cred.uid == m->cred.uid) {
		other->uid_held = false;
		m->uid_held = true;
		return 0;
	}
	err = reg_limit_uid_hold(&a->limits, (uint32_t)m->cred.uid);
	if (err) {
		v->reason = err == -EDQUOT ? RS_AGENT_REG_UID_FULL : RS_AGENT_REG_INTERNAL;
		snprintf(v->text, sizeof(v->text), "%.150s (%u)", rs_agent_reg_reason_text(v->reason),
			 a->limits.uid_max);
		return err;
	}
	m->uid_held = true;
	if (other && other->uid_held) {
		reg_limit_uid_release(&a->limits, (uint32_t)other->cred.uid);
		other->uid_held = false;
	}
	return 0;
}

enum rs_agent_reg_reason agent_member_admit(struct agent *a, struct agent_member *m, struct agent_member_verdict *v,
					    int64_t now_ms)
{
	struct agent_member *other = holder_of(a, &m->key, m);
	int err;

	v->later = false;
	if (other && strcmp(other->member_id, m->member_id) != 0) {
		v->reason = RS_AGENT_REG_KEY_IN_USE;
		snprintf(v->text, sizeof(v->text), "%.120s (%.60s)", rs_agent_reg_reason_text(v->reason),
			 other->member_id);
		return v->reason;
	}
	if (!other && a->n_members >= AGENT_MEMBERS_MAX) {
		v->reason = RS_AGENT_REG_FULL;
		snprintf(v->text, sizeof(v->text), "%s", rs_agent_reg_reason_text(v->reason));
		return v->reason;
	}
	err = uid_hold(a, m, other, v);
	if (err)
		return v->reason;
	if (other) /* the same member again (it restarted before its old link closed) */
		other->registered = false;
	else
		a->n_members++;
	m->registered = true;
	m->gateway[0] = '\0';
	if (!a->worker) { /* no store: no entry, kube-proxy decides */
		verdict_of(m, client_write(a, m, ""), "", v);
		return RS_AGENT_REG_OK;
	}
	err = steer_submit(a, m, now_ms);
	if (err) {
		verdict_of(m, err, "", v);
		return RS_AGENT_REG_OK;
	}
	if (rs_store_worker_busy_ms(a->worker) >= a->cfg.steer_wait_ms) {
		/* The store is stuck now: answer at once, steer when it answers. */
		a->counters.member_steer_late++;
		snprintf(v->text, sizeof(v->text), AGENT_STEER_LATE_TEXT, kind_name(m->key.kind), a->cfg.steer_wait_ms);
		return RS_AGENT_REG_OK;
	}
	v->later = true; /* answered by steer_done, or by the member socket after cfg.steer_wait_ms */
	return RS_AGENT_REG_OK;
}

void agent_member_forget(struct agent *a, struct agent_member *m)
{
	if (m->steer) { /* its answer, when it comes, finds no one */
		m->steer->m = NULL;
		m->steer = NULL;
	}
	if (m->uid_held) {
		reg_limit_uid_release(&a->limits, (uint32_t)m->cred.uid);
		m->uid_held = false;
	}
	if (!m->registered)
		return;
	m->registered = false;
	a->n_members--;
	if (!holder_of(a, &m->key, m))
		bpf_map_delete_elem(a->k.maps.clients, &m->key);
}

/* ---- sync ------------------------------------------------------------------ */

static int session_cmp(const void *x, const void *y)
{
	return strcmp((*(const struct rs_session_row *const *)x)->member_id,
		      (*(const struct rs_session_row *const *)y)->member_id);
}

static const struct rs_gateway_row *serving(const struct agent *a, const char *gateway)
{
	const struct rs_gateway_row *row = agent_snapshot_gateway(&a->snap, gateway);

	return row && row->state == RS_GATEWAY_SERVING ? row : NULL;
}

/* Targets follow the store: a gateway gone, expired or draining is not
 * ready (one write), one whose peer moved is rewritten. */
static int targets_follow(struct agent *a)
{
	for (uint32_t i = 0; i < RS_TARGETS_MAX; i++) {
		struct agent_target *t = &a->targets[i];
		const struct rs_gateway_row *row;
		bool ready;

		if (!t->gateway[0])
			continue;
		row = serving(a, t->gateway);
		ready = row != NULL;
		if (ready == t->ready && (!ready || strcmp(row->peer, t->peer) == 0))
			continue;
		t->ready = ready;
		if (ready)
			snprintf(t->peer, sizeof(t->peer), "%s", row->peer);
		if (target_write(a, i) < 0)
			return -EIO;
	}
	return 0;
}

/* Frees the slots no member is sent to (their gen is kept: the next holder
 * bumps it). */
static int targets_release(struct agent *a)
{
	for (uint32_t i = 0; i < RS_TARGETS_MAX; i++) {
		struct agent_target *t = &a->targets[i];
		bool used = false;
		int err;

		if (!t->gateway[0])
			continue;
		for (struct agent_member *m = a->members; m && !used; m = m->next)
			used = m->registered && strcmp(m->gateway, t->gateway) == 0;
		if (used)
			continue;
		t->gateway[0] = '\0';
		t->peer[0] = '\0';
		t->ready = false;
		err = target_write(a, i);
		if (err)
			return err;
	}
	return 0;
}

int agent_members_sync(struct agent *a, const struct rs_session_row *sessions, size_t n, int64_t now_ms)
{
	const struct rs_session_row **live = NULL;
	size_t n_live = 0;
	int err = 0;

	if (!a->n_members && !a->n_targets_used)
		return 0;
	if (n) {
		live = malloc(n * sizeof(*live));
		if (!live)
			return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		if (sessions[i].live)
			live[n_live++] = &sessions[i];
	if (n_live > 1)
		qsort(live, n_live, sizeof(*live), session_cmp);
	err = targets_follow(a);
	for (struct agent_member *m = a->members; m && !err; m = m->next) {
		struct rs_session_row probe, *pp = &probe;
		const struct rs_session_row *const *s;
		const struct rs_gateway_row *row = NULL;
		char peer[RS_ENDPOINT_MAX + 1] = "";

		if (!m->registered)
			continue;
		snprintf(probe.member_id, sizeof(probe.member_id), "%s", m->member_id);
		s = n_live ? bsearch(&pp, live, n_live, sizeof(*live), session_cmp) : NULL;
		if (s && (row = serving(a, (*s)->gateway_id)))
			snprintf(m->gateway, sizeof(m->gateway), "%s", row->id);
		else if (m->gateway[0] && (row = serving(a, m->gateway)))
			; /* keep its target while it is ready */
		else
			row = NULL;
		if (!row) {
			/* Steered off the loop: its answer writes the entry; until
			 * then none is rewritten (it expires, kube-proxy decides). */
			if (steer_submit(a, m, now_ms) < 0)
				a->counters.steer_failures++;
			continue;
		}
		snprintf(peer, sizeof(peer), "%s", row->peer);
		err = client_write(a, m, peer);
		/* A full map, no free slot, a peer that is not numeric ADDR:PORT:
		 * that caller goes through kube-proxy; the others are steered. */
		if (err == -E2BIG || err == -ENOSPC || err == -EINVAL)
			err = 0;
	}
	/* Slots adopted from a previous agent stay until the entries naming
	 * them could have expired: their supervisors register again at their
	 * next heartbeat, and until then the old entries keep steering.  A
	 * deadline of this process: monotonic, so a wall-clock step neither
	 * drops them early nor keeps them an hour. */
	if (!err && rs_mono_ms() >= a->targets_adopted_until_ms)
		err = targets_release(a);
	a->n_targets_used = 0;
	for (uint32_t i = 0; i < RS_TARGETS_MAX; i++)
		a->n_targets_used += a->targets[i].gateway[0] != '\0';
	free(live);
	return err;
}

int agent_targets_adopt(struct agent *a)
{
	for (uint32_t i = 0; i < RS_TARGETS_MAX; i++) {
		struct agent_target *t = &a->targets[i];
		struct rs_target row;

		if (bpf_map_lookup_elem(a->k.maps.targets, &i, &row) < 0)
			return -errno;
		row.gateway[sizeof(row.gateway) - 1] = '\0';
		t->gen = row.gen;
		/* As the map says, so the first sync writes what changed: a
		 * gateway gone meanwhile is made not ready; the peer is left
		 * unknown, so a ready slot is rewritten from the store (same
		 * gen). */
		t->ready = row.ready != 0;
		t->peer[0] = '\0';
		snprintf(t->gateway, sizeof(t->gateway), "%.*s", RS_ID_MAX, row.gateway);
		a->n_targets_used += t->gateway[0] != '\0';
	}
	a->targets_adopted_until_ms = rs_mono_ms() + a->cfg.ttl_ms;
	return 0;
}
