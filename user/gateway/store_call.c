/* SPDX-License-Identifier: Apache-2.0 */
/* store_call.c - the core's store requests, run off the event loop: each
 * one is a job on the store worker (user/store/store_worker.h, one
 * ordered queue), run there by rs_gw_store_run() over the ledger's table
 * at the wall clock of when it runs, and answered to the core on the loop.
 * The core batches admissions itself, so a job is one request.
 *
 * Each call's run time on the worker (its wait in the queue left out: the
 * store_queue gauge shows that) is measured there and observed, by kind,
 * on the loop when its answer comes (store_timing.c): a call cancelled
 * before it ran is not observed.
 *
 * The watch: a call that has run past twice --store-timeout is one no
 * bound is ending (the backends bound their own waits by it; a PostgreSQL
 * write begin may take two), so the core is told the store has stalled and
 * accepts the arrivals waiting for it degraded, instead of queueing them
 * behind it. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "gateway.h"
#include "util/mstime.h"

struct job {
	struct gateway *gw;
	struct rs_gw_store_req *req;
	bool ran;        /* set on the worker; read on the loop after the answer's hand-over */
	uint64_t run_us; /* how long the call took there */
};

/* CLOCK_MONOTONIC in microseconds: a store call on SQLite takes less than
 * a millisecond. */
static uint64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void job_run(struct rs_store *st, void *const *args, int *errs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct job *j = args[i];
		uint64_t start = mono_us();

		errs[i] = rs_gw_store_run(rs_gw_store_ops_ledger(), st, j->req, rs_wall_ms());
		j->run_us = mono_us() - start;
		j->ran = true;
	}
}

static void job_done(void *arg, int err)
{
	struct job *j = arg;
	struct gateway *gw = j->gw;

	/* Before the core takes req back (and frees it). */
	if (j->ran)
		gw_store_timing_observe(gw, j->req->op, j->run_us);
	rs_gw_core_store_done(gw->core, j->req, err, gw_now());
	free(j);
	gw_core_settle(gw);
}

static const struct rs_store_job_kind job_kind = { "store", job_run, job_done, 1 };

int gw_store_submit(struct gateway *gw, struct rs_gw_store_req *req)
{
	struct job *j = malloc(sizeof(*j));
	int err;

	if (!j)
		return -ENOMEM;
	*j = (struct job){ .gw = gw, .req = req };
	err = rs_store_worker_submit(gw->worker, &job_kind, j);
	if (err)
		free(j);
	return err;
}

static void store_watch(evutil_socket_t fd, short what, void *arg)
{
	struct gateway *gw = arg;

	(void)fd;
	(void)what;
	if (rs_store_worker_busy_ms(gw->worker) <= 2 * (int64_t)gw->cfg.store_timeout_ms)
		return;
	rs_gw_core_store_stalled(gw->core, gw_now());
	gw_core_settle(gw);
}

int gw_store_watch_start(struct gateway *gw)
{
	/* A tenth of the timeout, at most 100 ms: the verdict comes soon
	 * after it is due, at a cost of a few wake-ups a second. */
	uint32_t ms = gw->cfg.store_timeout_ms / 10;
	struct timeval tv = rs_ms_timeval(ms == 0 ? 1 : ms > 100 ? 100 : ms);

	gw->store_watch_ev = event_new(gw->base, -1, EV_PERSIST, store_watch, gw);
	if (!gw->store_watch_ev || event_add(gw->store_watch_ev, &tv) != 0)
		return -ENOMEM;
	return 0;
}
