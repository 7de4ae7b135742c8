/* SPDX-License-Identifier: Apache-2.0 */
/* watch.c - the agent follows the store by change notification where the
 * store offers it (PostgreSQL LISTEN/NOTIFY), instead of polling.
 *
 * A notification schedules one sync a short debounce later, so a burst of
 * writes (a fleet of arrivals, a drain's handoffs) costs one pass.  Expiry
 * by TTL writes nothing and so notifies nothing: the periodic tick stays,
 * slowed to a quarter of the TTL while the watch is up (a dead gateway is
 * then seen within TTL + TTL/4), and back to --sync-interval whenever the
 * watch is down.  A lost connection drops the watch; every tick tries to
 * re-arm it (the store reconnects underneath, and its fd may change). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "agent_run.h"
#include "util/logfmt.h"
#include "util/mstime.h"

#define WATCH_DEBOUNCE_MS 20


/* The tick while watching: TTL / 4, never faster than --sync-interval. */
static uint32_t watched_tick_ms(const struct agent *a)
{
	uint32_t slow = a->cfg.ttl_ms / 4;

	return slow > a->cfg.sync_ms ? slow : a->cfg.sync_ms;
}

static void set_tick(struct agent *a, uint32_t ms)
{
	struct timeval tv = rs_ms_timeval(ms);

	if (a->tick_ms == ms)
		return;
	a->tick_ms = ms;
	event_del(a->sync_ev);
	event_add(a->sync_ev, &tv);
}

static void watch_drop(struct agent *a, const char *why)
{
	if (a->watch_ev) {
		event_free(a->watch_ev);
		a->watch_ev = NULL;
		rs_log(stderr, "warn", "agent", "event", "watch_lost", "error", why, "fallback", "poll", NULL);
	}
	set_tick(a, a->cfg.sync_ms);
}

/* Every call on the watch's own store handle runs on its own worker (a
 * second connection: LISTEN holds it), never on the loop: arming connects,
 * and a consume reads a socket the loop saw readable.  The readable event
 * is off while a consume is in flight, so one runs at a time. */
struct watch_job {
	struct agent *a;
	int result; /* arm: the fd or -errno; consume: notifications or -errno */
};

static void arm_run(struct rs_store *st, void *const *args, int *errs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct watch_job *j = args[i];

		j->result = rs_store_watch(st);
		errs[i] = j->result < 0 ? j->result : 0;
	}
}

static void consume_run(struct rs_store *st, void *const *args, int *errs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct watch_job *j = args[i];

		j->result = rs_store_watch_consume(st);
		errs[i] = j->result < 0 ? j->result : 0;
	}
}

static void arm_done(void *arg, int err);
static void consume_done(void *arg, int err);

static const struct rs_store_job_kind arm_kind = { .name = "agent watch arm", .run = arm_run, .done = arm_done };
static const struct rs_store_job_kind consume_kind = { .name = "agent watch consume", .run = consume_run,
						       .done = consume_done };

static void on_notified(evutil_socket_t fd, short what, void *arg)
{
	struct agent *a = arg;
	struct watch_job *j;

	(void)fd;
	(void)what;
	if (a->watch_consuming)
		return;
	j = calloc(1, sizeof(*j));
	if (!j)
		return; /* the event stays: tried again at the next readiness */
	j->a = a;
	if (rs_store_worker_submit(a->watch_worker, &consume_kind, j)) {
		free(j);
		return;
	}
	a->watch_consuming = true;
	event_del(a->watch_ev);
}

static void consume_done(void *arg, int err)
{
	struct watch_job *j = arg;
	struct agent *a = j->a;
	struct timeval soon = rs_ms_timeval(WATCH_DEBOUNCE_MS);
	int n = j->result;

	free(j);
	if (a->stopping)
		return;
	a->watch_consuming = false;
	if (!a->watch_ev)
		return;
	if (err < 0) {
		watch_drop(a, strerror(-err));
		return;
	}
	event_add(a->watch_ev, NULL);
	if (n == 0)
		return;
	a->counters.notifications += (uint64_t)n;
	if (!evtimer_pending(a->debounce_ev, NULL))
		evtimer_add(a->debounce_ev, &soon);
}

static void arm_done(void *arg, int err)
{
	struct watch_job *j = arg;
	struct agent *a = j->a;
	struct timeval soon = rs_ms_timeval(WATCH_DEBOUNCE_MS);
	int fd = j->result;

	free(j);
	if (a->stopping)
		return;
	a->watch_arming = false;
	if (err == -EOPNOTSUPP)
		return; /* cannot notify: polling is all there is */
	if (err < 0) {
		set_tick(a, a->cfg.sync_ms);
		return;
	}
	a->watch_ev = event_new(a->base, fd, EV_READ | EV_PERSIST, on_notified, a);
	if (!a->watch_ev || event_add(a->watch_ev, NULL)) {
		if (a->watch_ev)
			event_free(a->watch_ev);
		a->watch_ev = NULL;
		return;
	}
	a->counters.watch_arms++;
	rs_log(stderr, "info", "agent", "event", "watching", "store", a->cfg.store_url, NULL);
	set_tick(a, watched_tick_ms(a));
	/* Whatever changed while the watch was down is read by a pass after
	 * the (re)arm. */
	if (!evtimer_pending(a->debounce_ev, NULL))
		evtimer_add(a->debounce_ev, &soon);
}

int agent_watch_arm(struct agent *a)
{
	struct watch_job *j;
	int err;

	if (!a->watch_worker || a->watch_ev || a->watch_arming)
		return 0;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->a = a;
	err = rs_store_worker_submit(a->watch_worker, &arm_kind, j);
	if (err) {
		free(j);
		return err;
	}
	a->watch_arming = true;
	return 0;
}

void agent_watch_close(struct agent *a)
{
	if (a->watch_ev)
		event_free(a->watch_ev);
	a->watch_ev = NULL;
}
