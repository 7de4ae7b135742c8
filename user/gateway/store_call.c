/* store_call.c - how the gateway talks to its store: never on the event
 * loop.  Every call goes to the store worker (include/ringsteer/
 * store_worker.h), in one ordered queue, and answers on the loop.  Two job
 * kinds: admissions and drain handoffs (batchable: those queued together
 * are decided in one transaction by rs_store_admit_batch, each by the rule
 * with the loads its predecessors left, the same decisions as one at a
 * time), and single calls (heartbeat, claims, session ends, sandbox counts,
 * the drain's membership read and state), each a struct gw_call.
 *
 * Session ends matter more than before: an attached row counts while its
 * gateway's row is live, and nothing expires it, so every end the store
 * could not be told is owed and sent when it answers again. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conn.h"
#include "gateway.h"
#include "ringsteer/logfmt.h"
#include "ringsteer/mstime.h"

static void call_run(struct rs_store *st, void *const *args, int *errs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct gw_call *call = args[i];

		errs[i] = call->run(st, call);
	}
}

static void call_done(void *arg, int err)
{
	struct gw_call *call = arg;

	call->done(call, err);
}

static const struct rs_store_job_kind call_kind = { "call", call_run, call_done, 1 };

int gw_store_call(struct gateway *gw, struct gw_call *call)
{
	return rs_store_worker_submit(gw->worker, &call_kind, call);
}

/* Up to this many admissions in one transaction: bounds how long one
 * transaction holds the store's writer lock against the other gateways. */
#define ADMIT_BATCH_MAX 128

static void admit_run(struct rs_store *st, void *const *args, int *errs, size_t n)
{
	struct rs_admit a[ADMIT_BATCH_MAX];
	int64_t now;
	int err;

	/* Decided now, not when queued: rows compare wall clocks. */
	now = rs_wall_ms();
	for (size_t i = 0; i < n; i++) {
		a[i] = ((struct gw_admit_job *)args[i])->a;
		a[i].now_ms = now;
	}
	err = rs_store_admit_batch(st, a, n, errs);
	for (size_t i = 0; i < n; i++) {
		struct gw_admit_job *job = args[i];

		job->a = a[i];
		job->batch_n = i == 0 ? n : 0;
		if (err)
			errs[i] = err;
	}
}

static void admit_done(void *arg, int err)
{
	struct gw_admit_job *job = arg;

	if (job->conn)
		gw_conn_job_clear(job->conn);
	job->gw->counters.store_batches += job->batch_n > 0;
	job->done(job, err);
}

const struct rs_store_job_kind gw_admit_kind = { "admit", admit_run, admit_done, ADMIT_BATCH_MAX };

struct gw_admit_job *gw_admit_job_new(const char *member_id, const char *instance_id, const char *source)
{
	size_t lm = strlen(member_id) + 1, li = strlen(instance_id) + 1, ls = strlen(source) + 1;
	struct gw_admit_job *job = calloc(1, sizeof(*job) + lm + li + ls);

	if (!job)
		return NULL;
	memcpy(job->text, member_id, lm);
	memcpy(job->text + lm, instance_id, li);
	memcpy(job->text + lm + li, source, ls);
	job->member_id = job->text;
	job->instance_id = job->text + lm;
	job->source = job->text + lm + li;
	return job;
}

int gw_admit_submit(struct gw_admit_job *job)
{
	struct gateway *gw = job->gw;
	int err;

	job->a.gateway_id = gw->cfg.id;
	job->a.member_id = job->member_id;
	job->a.instance_id = job->instance_id;
	job->a.source = job->source;
	err = rs_store_worker_submit(gw->worker, &gw_admit_kind, job);
	if (err == 0 && job->conn)
		job->conn->job_ref = &job->conn;
	return err;
}

struct end_call {
	struct gw_call call;
	struct gateway *gw;
	uint64_t epoch;
	uint32_t grace_ms; /* 0: the place is not kept (draining) */
	bool keep_place;   /* as asked, for an end owed again */
	char member_id[RS_ID_MAX + 1];
};

static int end_run(struct rs_store *st, struct gw_call *call)
{
	struct end_call *e = (struct end_call *)call;

	return rs_store_session_leave(st, e->gw->cfg.id, e->member_id, e->epoch, rs_wall_ms(), e->grace_ms);
}

static void owe(struct gateway *gw, const char *member_id, uint64_t epoch, bool keep_place)
{
	struct gw_owed_end *o = calloc(1, sizeof(*o));

	if (!o) {
		rs_log(stderr, "error", gw->who, "event", "session_end_lost", "member", member_id, "error",
		       "out of memory", NULL);
		return;
	}
	o->epoch = epoch;
	o->keep_place = keep_place;
	snprintf(o->member_id, sizeof(o->member_id), "%s", member_id);
	o->next = gw->owed;
	gw->owed = o;
}

static void end_done(struct gw_call *call, int err)
{
	struct end_call *e = (struct end_call *)call;
	struct gateway *gw = e->gw;

	gw_store_outcome(gw, err);
	if (err) {
		gw->counters.store_errors++;
		rs_log(stderr, "warn", gw->who, "event", "store_error", "op", "session_end", "member", e->member_id,
		       "error", strerror(-err), NULL);
		if (gw_store_unavailable(err))
			owe(gw, e->member_id, e->epoch, e->keep_place);
	}
	free(e);
}

void gw_store_end_session(struct gateway *gw, const char *member_id, uint64_t epoch, bool keep_place)
{
	struct end_call *e;

	if (gw->exiting)
		return; /* the gateway's row goes with all of its sessions */
	if (!gw_store_usable(gw)) {
		owe(gw, member_id, epoch, keep_place);
		return;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		owe(gw, member_id, epoch, keep_place);
		return;
	}
	e->call = (struct gw_call){ end_run, end_done };
	e->gw = gw;
	e->epoch = epoch;
	/* A draining gateway's departures keep no place here: it will be gone,
	 * and its handoffs already moved the others' rows. */
	e->grace_ms = keep_place && !gw->draining ? gw->cfg.home_grace_ms : 0;
	e->keep_place = keep_place;
	snprintf(e->member_id, sizeof(e->member_id), "%s", member_id);
	if (gw_store_call(gw, &e->call) != 0) {
		owe(gw, member_id, epoch, keep_place);
		free(e);
	}
}

void gw_store_flush_owed(struct gateway *gw)
{
	struct gw_owed_end *o = gw->owed, *next;

	gw->owed = NULL;
	for (; o; o = next) {
		next = o->next;
		gw_store_end_session(gw, o->member_id, o->epoch, o->keep_place);
		free(o);
	}
}

struct sandboxes_call {
	struct gw_call call;
	struct gateway *gw;
	uint64_t epoch;
	uint32_t count;
	char member_id[RS_ID_MAX + 1];
};

static int sandboxes_run(struct rs_store *st, struct gw_call *call)
{
	struct sandboxes_call *s = (struct sandboxes_call *)call;

	return rs_store_session_sandboxes(st, s->gw->cfg.id, s->member_id, s->epoch, s->count);
}

static void sandboxes_done(struct gw_call *call, int err)
{
	struct sandboxes_call *s = (struct sandboxes_call *)call;
	struct gateway *gw = s->gw;

	gw_store_outcome(gw, err);
	if (err && err != -ESTALE) {
		gw->counters.store_errors++;
		rs_log(stderr, "warn", gw->who, "event", "store_error", "op", "sandboxes", "member", s->member_id,
		       "error", strerror(-err), NULL);
	}
	/* The store was away: the connection (found by member and epoch, if
	 * still here) owes its count to the store's return. */
	if (gw_store_unavailable(err))
		gw->sandboxes_owed = true;
	if (gw_store_unavailable(err))
		for (struct gw_conn *c = gw_member_first(gw, s->member_id); c; c = c->member_next)
			if (c->epoch == s->epoch && gw_conn_is_attached(c))
				c->sandboxes_dirty = true;
	free(s);
}

int gw_store_sandboxes(struct gw_conn *c)
{
	struct gateway *gw = c->gw;
	struct sandboxes_call *s;

	if (!gw_store_usable(gw))
		return -EIO;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->call = (struct gw_call){ sandboxes_run, sandboxes_done };
	s->gw = gw;
	s->epoch = c->epoch;
	s->count = c->sandboxes;
	snprintf(s->member_id, sizeof(s->member_id), "%s", c->member_id);
	if (gw_store_call(gw, &s->call) != 0) {
		free(s);
		return -ENOMEM;
	}
	return 0;
}
