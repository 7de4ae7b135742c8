/* pacer.c - when a draining gateway acts: after it has seen membership
 * (another serving gateway, or the bounded wait ran out: a rolling update's
 * replacement must be in the view before the plan is made), one REDIRECT
 * per pace interval while supervisors wait, until nobody is left or the
 * budget is spent.  Pure: the caller brings the clock and the counts. */
#include <string.h>

#include "ringsteer/drain.h"

#define DEFAULT_PACE_MS 50
#define DEFAULT_BUDGET_MS 25000
#define DEFAULT_MEMBERSHIP_WAIT_MS 5000

void rs_drain_start(struct rs_drain *d, const struct rs_drain_config *cfg, int64_t now_ms)
{
	memset(d, 0, sizeof(*d));
	if (cfg)
		d->cfg = *cfg;
	if (!d->cfg.pace_ms)
		d->cfg.pace_ms = DEFAULT_PACE_MS;
	if (!d->cfg.budget_ms)
		d->cfg.budget_ms = DEFAULT_BUDGET_MS;
	if (!d->cfg.membership_wait_ms)
		d->cfg.membership_wait_ms = DEFAULT_MEMBERSHIP_WAIT_MS;
	d->started_ms = now_ms;
}

static int64_t earliest(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

enum rs_drain_action rs_drain_next(struct rs_drain *d, int64_t now_ms, size_t waiting, size_t in_flight,
				   bool others_serving, int64_t *wake_ms)
{
	int64_t budget_end = d->started_ms + d->cfg.budget_ms;
	int64_t wait_end = d->started_ms + d->cfg.membership_wait_ms;
	int64_t next_send;

	if (waiting == 0 && in_flight == 0)
		return RS_DRAIN_DONE;
	if (now_ms >= budget_end) {
		*wake_ms = now_ms;
		return RS_DRAIN_CLOSE_REST;
	}
	if (!d->membership_seen && (others_serving || now_ms >= wait_end))
		d->membership_seen = true;
	if (!d->membership_seen) {
		/* Look again each pace interval, at most until the wait ends. */
		*wake_ms = earliest(now_ms + d->cfg.pace_ms, earliest(wait_end, budget_end));
		return RS_DRAIN_WAIT;
	}
	next_send = d->sent_any ? d->last_sent_ms + d->cfg.pace_ms : now_ms;
	if (waiting > 0 && now_ms >= next_send) {
		*wake_ms = earliest(now_ms + d->cfg.pace_ms, budget_end);
		return RS_DRAIN_HAND_OFF;
	}
	/* Redirected supervisors still attached: look again each pace
	 * interval (they leave on their own), or at the next send slot. */
	*wake_ms = earliest(waiting > 0 ? next_send : now_ms + d->cfg.pace_ms, budget_end);
	return RS_DRAIN_WAIT;
}

void rs_drain_sent(struct rs_drain *d, int64_t now_ms)
{
	d->last_sent_ms = now_ms;
	d->sent_any = true;
}
