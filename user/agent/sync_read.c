/* SPDX-License-Identifier: Apache-2.0 */
/* sync_read.c - a sync pass's store read runs on the store worker, never on
 * the event loop (no event loop ever waits on the store: docs/ARCHITECTURE.md,
 * "Where the store work runs"), and its answer is applied to the maps on
 * the loop (sync.c).
 *
 * At most one read is in flight: a tick that finds one still running is
 * skipped and counted, so a store that stops answering holds one read, not
 * a growing queue, and the pass after it reads the store as it is then.
 * Meanwhile the loop serves registrations and /metrics, the kernel steers
 * from the maps, and the entries nobody refreshes expire as designed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "agent_run.h"
#include "util/logfmt.h"
#include "util/mstime.h"

struct sync_read {
	struct agent *a;
	struct agent_listing l;
};

static void read_free(struct sync_read *r)
{
	free(r->l.gws);
	free(r->l.sessions);
	free(r);
}

/* Worker thread: the two listings, nothing else. */
static void read_run(struct rs_store *st, void *const *args, int *errs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct sync_read *r = args[i];

		errs[i] = rs_store_list_gateways(st, r->l.now_ms, false, &r->l.gws, &r->l.n_gws);
		if (!errs[i])
			errs[i] = rs_store_list_sessions(st, r->l.now_ms, true, &r->l.sessions, &r->l.n_sessions);
	}
}

/* Loop thread. */
static void read_done(void *arg, int err)
{
	struct sync_read *r = arg;
	struct agent *a = r->a;

	if (!a->stopping) {
		a->sync_reading = false;
		if (!err)
			err = agent_sync_apply(a, &r->l);
		agent_sync_report(a, err);
	}
	read_free(r);
}

static const struct rs_store_job_kind read_kind = {
	.name = "agent sync read",
	.run = read_run,
	.done = read_done,
	.batch_max = 1,
};

void agent_sync_report(struct agent *a, int err)
{
	/* A pass counts as failed whether the store or a map refused it: a
	 * stuck map write must show on the counter, not only in the log. */
	if (!err) {
		a->counters.syncs_ok++;
		return;
	}
	a->counters.syncs_failed++;
	/* One line per failure streak would be kinder; a failure every
	 * second is still bounded and tells the operator it persists. */
	rs_log(stderr, "warn", "agent", "event", "sync_failed", "error", strerror(-err), NULL);
	/* While watching, the tick is slow (TTL/4): retry a failed pass at the
	 * poll interval, or a change notified before it is lost. */
	if (a->watch_ev && !evtimer_pending(a->debounce_ev, NULL)) {
		struct timeval retry = rs_ms_timeval(a->cfg.sync_ms);

		evtimer_add(a->debounce_ev, &retry);
	}
}

int agent_sync(struct agent *a)
{
	struct sync_read *r;
	int err;

	if (!a->worker) {
		err = agent_sync_apply(a, NULL);
		agent_sync_report(a, err);
		return err;
	}
	if (a->sync_reading) {
		a->counters.syncs_skipped++;
		return -EBUSY;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		agent_sync_report(a, -ENOMEM);
		return -ENOMEM;
	}
	r->a = a;
	r->l.now_ms = rs_wall_ms();
	err = rs_store_worker_submit(a->worker, &read_kind, r);
	if (err) {
		free(r);
		agent_sync_report(a, err);
		return err;
	}
	a->sync_reading = true;
	return 0;
}
