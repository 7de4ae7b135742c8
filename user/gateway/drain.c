/* drain.c - the gateway's drain: the row turns draining (no placement
 * targets it, /readyz fails), membership is re-read until another serving
 * gateway is seen (bounded), then each attached supervisor is handed off
 * by the store's handoff transaction and REDIRECT {drain}, paced; each old
 * link stays until its supervisor leaves (accepted at the target: make
 * before break) or its deadline passes; the budget closes what is left.
 * The pacing decisions are rs_drain_next()'s (user/drain/pacer.c).
 *
 * With the store unavailable nobody can be handed off (each handoff is a
 * store transaction): membership is not read (the wait runs out), each
 * pace slot's handoff returns at once without a store call, the heartbeat
 * keeps probing, and the drain either resumes when the store answers or
 * ends at its budget, closing whoever is left (counted abandoned).  Our
 * row's draining state is written when the store answers again. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gateway.h"
#include "ringsteer/logfmt.h"
#include "ringsteer/mstime.h"

/* Whether the store shows another live, serving gateway: the replacement of
 * a rolling update must be in view before anyone is handed off. */
static bool others_serving(struct gateway *gw)
{
	struct rs_gateway_row *rows = NULL;
	size_t n = 0;
	bool found = false;
	int err;

	if (!gw_store_usable(gw))
		return false;
	err = rs_store_list_gateways(gw->store, gw_now_ms(), false, &rows, &n);
	gw_store_outcome(gw, err);
	if (err) {
		gw->counters.store_errors++;
		return false;
	}
	for (size_t i = 0; i < n && !found; i++)
		found = rows[i].state == RS_GATEWAY_SERVING && strcmp(rows[i].id, gw->cfg.id) != 0;
	free(rows);
	return found;
}

static void drained(struct gateway *gw)
{
	char n[24];

	snprintf(n, sizeof(n), "%llu", (unsigned long long)gw->counters.handoffs_completed);
	rs_log(stderr, "info", gw->who, "event", "drained", "handed_off", n, NULL);
	if (!gw->stopping)
		return; /* asked by ringsteerctl: stay up, draining */
	gw_conn_close_all(gw, RS_GOODBYE_SHUTDOWN);
	if (rs_store_gateway_remove(gw->store, gw->cfg.id) != 0)
		gw->counters.store_errors++;
	event_base_loopexit(gw->base, NULL);
}

void gw_drain_tick(evutil_socket_t fd, short what, void *arg)
{
	struct gateway *gw = arg;
	int64_t now = gw_now_ms(), wake = now;
	size_t waiting, in_flight;
	struct timeval tv;

	(void)fd;
	(void)what;
	gw_conn_drain_counts(gw, now, &waiting, &in_flight);
	switch (rs_drain_next(&gw->drain, now, waiting, in_flight,
			      !gw->drain.membership_seen && waiting > 0 && others_serving(gw), &wake)) {
	case RS_DRAIN_DONE:
		drained(gw);
		return;
	case RS_DRAIN_CLOSE_REST:
		gw_conn_abandon_all(gw);
		drained(gw);
		return;
	case RS_DRAIN_HAND_OFF:
		/* -ENOENT: nobody takes it now; the next slot tries again. */
		gw_conn_hand_off_next(gw);
		rs_drain_sent(&gw->drain, now);
		break;
	case RS_DRAIN_WAIT:
		break;
	}
	if (wake < now)
		wake = now;
	tv = rs_ms_timeval((uint64_t)(wake - now));
	evtimer_add(gw->drain_ev, &tv);
}

void gw_drain_start(struct gateway *gw, bool exit_after)
{
	static const struct timeval now = { 0, 0 };
	int err;

	gw->stopping = gw->stopping || exit_after;
	if (gw->draining) {
		/* Already draining (ringsteerctl drain): a SIGTERM now only
		 * adds the exit; if nobody is left, leave at once. */
		if (!evtimer_pending(gw->drain_ev, NULL))
			evtimer_add(gw->drain_ev, &now);
		return;
	}
	gw->draining = true;
	/* With the store away the heartbeat writes it once it answers. */
	gw->drain_unrecorded = true;
	if (gw_store_usable(gw)) {
		err = rs_store_gateway_register(gw->store, gw->cfg.id, gw->cfg.advertise_peer, RS_GATEWAY_DRAINING,
						gw_now_ms());
		gw_store_outcome(gw, err);
		if (err) {
			gw->counters.store_errors++;
			rs_log(stderr, "error", gw->who, "event", "store_error", "op", "drain", "error", strerror(-err),
			       NULL);
		} else {
			gw->drain_unrecorded = false;
		}
	}
	rs_log(stderr, "info", gw->who, "event", "draining", "exit_after", exit_after ? "1" : "0", "recorded",
	       gw->drain_unrecorded ? "0" : "1", NULL);
	rs_drain_start(&gw->drain, &gw->cfg.drain, gw_now_ms());
	evtimer_add(gw->drain_ev, &now);
}

void gw_drain_check_store(struct gateway *gw)
{
	struct rs_gateway_row row;
	int err;

	if (gw->draining)
		return;
	err = rs_store_gateway_get(gw->store, gw->cfg.id, gw_now_ms(), &row);
	gw_store_outcome(gw, err);
	if (err == 0 && row.state == RS_GATEWAY_DRAINING)
		gw_drain_start(gw, false);
}
