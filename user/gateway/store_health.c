/* store_health.c - whether the gateway's store is answering, as the last
 * store call found it.  Issue 8's "store down": attached supervisors stay
 * served, arrivals are accepted degraded where they land, and everything
 * resumes when the store answers again.  This file only keeps the verdict
 * (the store_up gauge, one log line per change) and says which errors mean
 * "unavailable"; conn.c and heartbeat.c act on it. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "gateway.h"
#include "ringsteer/logfmt.h"

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
		rs_log(stderr, "info", gw->who, "event", "store_up", NULL);
	else
		rs_log(stderr, "warn", gw->who, "event", "store_down", "error", strerror(-err), NULL);
}

bool gw_store_usable(const struct gateway *gw)
{
	return gw->store_up;
}

int64_t gw_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
