/* deferred.c - deferred placement after a store outage.  A supervisor
 * accepted degraded (the store away) was never placed by the rule; when its
 * claim finds this gateway above the cap, it is placed now, once: the
 * store decides by the rule over the serving ring, this gateway included
 * (rs_admit.deferred), and a move is a drain handoff's (REDIRECT, the old
 * link kept until the target accepts it).  Paced one per --drain-pace, so
 * the excess of an outage does not all redial in one instant; counted in
 * ringsteer_gateway_redirects_total{reason="deferred"}.
 *
 * Only connections claimed above the cap are marked, each once (the mark
 * is cleared when its placement is submitted, whatever the answer), so
 * nothing placed by the rule, or claimed at or under the cap, ever moves.
 * A draining gateway drops the marks: its drain hands everyone off.
 *
 * Right after an outage the store's ring is not the fleet's: every
 * gateway's heartbeat failed while it was away, so rows past the TTL look
 * dead until their gateway's next heartbeat, and the first gateway back
 * sees a ring of one (its cap its own load: never above it).  So a claim
 * within one TTL of the store's return marks its connection whatever its
 * answer, and no deferred placement is decided before one TTL has passed
 * since the return: by then every live gateway has written its heartbeat,
 * and the placement itself moves the member only if this gateway is above
 * the cap with it (rs_admit.deferred), over the real ring. */
#include "conn.h"
#include "gateway.h"
#include "ringsteer/mstime.h"

bool gw_deferred_view_settled(const struct gateway *gw)
{
	return rs_mono_ms() - gw->store_back_ms >= (int64_t)gw->cfg.ttl_ms;
}

void gw_deferred_mark(struct gw_conn *c)
{
	struct gateway *gw = c->gw;
	static const struct timeval now = { 0, 0 };

	if (c->deferred_due || gw->draining)
		return;
	c->deferred_due = true;
	gw->n_deferred_due++;
	if (!evtimer_pending(gw->deferred_ev, NULL))
		evtimer_add(gw->deferred_ev, &now);
}

static void unmark(struct gw_conn *c)
{
	c->deferred_due = false;
	c->gw->n_deferred_due--;
}

void gw_deferred_tick(evutil_socket_t fd, short what, void *arg)
{
	struct gateway *gw = arg;
	struct timeval tv = rs_ms_timeval(gw->cfg.drain.pace_ms);

	(void)fd;
	(void)what;
	if (gw->n_deferred_due && !gw->draining && !gw_deferred_view_settled(gw)) {
		tv = rs_ms_timeval((uint64_t)(gw->store_back_ms + gw->cfg.ttl_ms - rs_mono_ms()));
		evtimer_add(gw->deferred_ev, &tv);
		return;
	}
	/* A walk from the head per tick: the marked are the few an outage left
	 * above the cap, and a tick runs only while some are. */
	for (struct gw_conn *c = gw->conns; c && gw->n_deferred_due; c = c->next) {
		if (!c->deferred_due)
			continue;
		if (gw->draining || c->state != CONN_ATTACHED) {
			unmark(c);
			continue;
		}
		if (c->job_ref || !gw_store_usable(gw))
			break; /* its claim's job still settling, or the store away: next tick */
		if (gw_drain_hand_off(c, true) == 0)
			unmark(c);
		break;
	}
	if (gw->n_deferred_due)
		evtimer_add(gw->deferred_ev, &tv);
}
