/* store_health.c - whether the gateway's store is answering, as the last
 * store call found it, or as the watch finds the call running now: one
 * that has run past --store-timeout means the store is unavailable even
 * before it returns (a PostgreSQL server that stopped answering), and the
 * admissions queued behind it are answered "unavailable" at once, so they
 * are accepted degraded instead of waiting.  Issue 8's "store down":
 * attached supervisors stay served, arrivals are accepted degraded where
 * they land, and everything resumes when the store answers again.  This
 * file keeps the verdict (the store_up gauge, one log line per change) and
 * says which errors mean "unavailable"; conn.c and heartbeat.c act on it. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "gateway.h"
#include "ringsteer/logfmt.h"
#include "ringsteer/mstime.h"

bool gw_store_unavailable(int err)
{
	switch (err) {
	/* What backend.h promises for "no answer": the lock not had within the
	 * timeout, or any other failure of the database. */
	case -EBUSY:
	case -EIO:
	/* A backend over the network may say more precisely that its server is
	 * gone; the gateway treats it alike, whichever backend runs. */
	case -ETIMEDOUT:
	case -ECONNREFUSED:
	case -ECONNRESET:
	case -ENOTCONN:
	case -EHOSTUNREACH:
	case -ENETUNREACH:
	case -EPIPE:
		return true;
	default:
		return false;
	}
}

void gw_store_outcome(struct gateway *gw, int err)
{
	bool up = !gw_store_unavailable(err);

	if (up == gw->store_up)
		return;
	gw->store_up = up;
	if (up)
		gw->store_back_ms = rs_mono_ms();
	if (up)
		rs_log(stderr, "info", gw->who, "event", "store_up", NULL);
	else
		rs_log(stderr, "warn", gw->who, "event", "store_down", "error", strerror(-err), NULL);
}

bool gw_store_usable(const struct gateway *gw)
{
	return gw->store_up;
}

static void store_watch(evutil_socket_t fd, short what, void *arg)
{
	struct gateway *gw = arg;
	int64_t busy = rs_store_worker_busy_ms(gw->worker);
	size_t n;

	(void)fd;
	(void)what;
	/* Twice the timeout: the backends bound their own waits by it (a
	 * PostgreSQL write begin may take two: its lock, then its answer), so
	 * a call past twice is one no bound is ending. */
	if (busy <= 2 * (int64_t)gw->cfg.store_timeout_ms)
		return;
	gw_store_outcome(gw, -ETIMEDOUT);
	n = rs_store_worker_cancel(gw->worker, &gw_admit_kind, -ETIMEDOUT);
	gw->counters.store_cancelled += n;
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

