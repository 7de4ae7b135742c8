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
#include <string.h>

#include <event2/event.h>

#include "agent_run.h"
#include "ringsteer/logfmt.h"
#include "ringsteer/mstime.h"

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

static void on_notified(evutil_socket_t fd, short what, void *arg)
{
	struct agent *a = arg;
	struct timeval soon = rs_ms_timeval(WATCH_DEBOUNCE_MS);
	int n;

	(void)fd;
	(void)what;
	n = rs_store_watch_consume(a->store);
	if (n < 0) {
		watch_drop(a, strerror(-n));
		return;
	}
	if (n == 0)
		return;
	a->counters.notifications += (uint64_t)n;
	if (!evtimer_pending(a->debounce_ev, NULL))
		evtimer_add(a->debounce_ev, &soon);
}

int agent_watch_arm(struct agent *a)
{
	int fd;

	if (!a->store || a->watch_ev)
		return 0;
	fd = rs_store_watch(a->store);
	if (fd == -EOPNOTSUPP)
		return 0; /* SQLite: polling is all there is */
	if (fd < 0) {
		set_tick(a, a->cfg.sync_ms);
		return fd;
	}
	a->watch_ev = event_new(a->base, fd, EV_READ | EV_PERSIST, on_notified, a);
	if (!a->watch_ev || event_add(a->watch_ev, NULL)) {
		if (a->watch_ev)
			event_free(a->watch_ev);
		a->watch_ev = NULL;
		return -ENOMEM;
	}
	a->counters.watch_arms++;
	rs_log(stderr, "info", "agent", "event", "watching", "store", a->cfg.store_url, NULL);
	set_tick(a, watched_tick_ms(a));
	/* Whatever changed while the watch was down is read by the sync that
	 * follows the (re)arm: the caller syncs after this. */
	return 0;
}

void agent_watch_close(struct agent *a)
{
	if (a->watch_ev)
		event_free(a->watch_ev);
	a->watch_ev = NULL;
}
