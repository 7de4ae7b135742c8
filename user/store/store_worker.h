/* SPDX-License-Identifier: Apache-2.0 */
/* store_worker.h - store calls beside an event loop, never on it.
 *
 * One thread owns one store handle and runs the jobs submitted to it in
 * submission order (an ordered queue: a departure submitted after its
 * member's admission runs after it); each job's answer comes back on the
 * loop's thread, through the loop, in the same order.  A job kind may be
 * batchable: consecutive queued jobs of that kind are handed to one call
 * (one transaction), so arrivals pending together are decided together.
 *
 * The loop never waits for the store: a store that stops answering holds
 * the worker, not the loop (/healthz, heartbeats to supervisors and TLS
 * handshakes go on).  How long the current call has been running is
 * readable from the loop, so the loop can judge the store unavailable
 * without waiting for it. */
#ifndef RINGSTEER_STORE_WORKER_H
#define RINGSTEER_STORE_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#include "ringsteer/store.h"

/* Runs on the worker thread: n (>= 1) queued jobs of one kind, in order;
 * errs[i] receives job i's result (0 or negative errno). */
typedef void (*rs_store_job_run_fn)(struct rs_store *st, void *const *args, int *errs, size_t n);

/* Runs on the loop thread with one job's result; owns arg from then on. */
typedef void (*rs_store_job_done_fn)(void *arg, int err);

struct rs_store_job_kind {
	const char *name;          /* for logs */
	rs_store_job_run_fn run;
	rs_store_job_done_fn done; /* NULL: nothing to answer (arg is not freed) */
	size_t batch_max;          /* up to this many consecutive jobs of this kind
				    * per run call; 0 or 1: one at a time */
};

struct rs_store_worker;

/* Starts a worker thread that owns st (the caller must not use st until
 * rs_store_worker_stop() gives it back), answering on base.  Returns 0,
 * -ENOMEM, or the error creating the thread or its wake-up descriptor. */
int rs_store_worker_start(struct event_base *base, struct rs_store *st, struct rs_store_worker **out);

/* Queues one job of kind (which must outlive the worker) with arg.  Never
 * blocks on the store.  Returns 0, -ENOMEM, -ESHUTDOWN (stopping). */
int rs_store_worker_submit(struct rs_store_worker *w, const struct rs_store_job_kind *kind, void *arg);

/* Jobs submitted and not answered yet (queued, running, or answered on the
 * worker but not yet delivered on the loop). */
size_t rs_store_worker_pending(const struct rs_store_worker *w);

/* Milliseconds the call running now has taken (CLOCK_MONOTONIC), 0 when
 * the worker is idle. */
int64_t rs_store_worker_busy_ms(const struct rs_store_worker *w);

/* Removes queued jobs of kind that have not started (the running call is
 * never interrupted) and answers each with err, on the loop, in their
 * order (before the running call's answer, which comes when it ends).
 * Returns how many.  For when the store is judged unavailable: the
 * arrivals queued behind a stuck call are answered at once. */
size_t rs_store_worker_cancel(struct rs_store_worker *w, const struct rs_store_job_kind *kind, int err);

/* Runs every queued job to its end, answers them all on this thread (the
 * loop's, which need not be running), stops the thread and frees w.
 * Returns the store handle given to start (the caller closes it); NULL w
 * returns NULL. */
struct rs_store *rs_store_worker_stop(struct rs_store_worker *w);

#endif
