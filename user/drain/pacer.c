/* SPDX-License-Identifier: Apache-2.0 */
/* pacer.c - when a draining gateway acts: after it has seen membership
 * (another serving gateway, or the bounded wait ran out: a rolling update's
 * replacement must be in the view before the plan is made), REDIRECTs at
 * the adaptive pace of drain.h while supervisors wait, until nobody is left
 * or the budget is spent.  Pure: the caller brings the clock and the
 * counts.  Slots are kept in microseconds so that a pace below a
 * millisecond (2,500 supervisors in 12 s is one per 4.8 ms; 25,000 one per
 * 0.48 ms) is neither rounded away nor bunched. */
#include <string.h>

#include "ringsteer/drain.h"

#define DEFAULT_PACE_MS 50
#define DEFAULT_BUDGET_MS 25000
#define DEFAULT_MEMBERSHIP_WAIT_MS 5000
#define DEFAULT_MAX_IN_FLIGHT 64
/* A tick that fires late catches up at most this much of the schedule at
 * once: a stall of the loop is not followed by a burst. */
#define CATCH_UP_US 10000

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
	if (!d->cfg.max_in_flight)
		d->cfg.max_in_flight = DEFAULT_MAX_IN_FLIGHT;
	d->started_ms = now_ms;
}

static int64_t earliest(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* Microseconds between two sends now: the configured pace, or less when
 * the waiting ones would not fit the sending part of the budget at it. */
static int64_t interval_us(const struct rs_drain *d, int64_t now_ms, size_t waiting)
{
	int64_t send_end = d->started_ms + (int64_t)d->cfg.budget_ms - d->cfg.budget_ms / 5;
	int64_t pace = (int64_t)d->cfg.pace_ms * 1000, fit;

	if (now_ms >= send_end)
		return 0; /* behind: as fast as the in-flight bound allows */
	fit = (send_end - now_ms) * 1000 / (int64_t)waiting;
	return fit < pace ? fit : pace;
}

static int64_t ceil_ms(int64_t us)
{
	return (us + 999) / 1000;
}

enum rs_drain_action rs_drain_next(struct rs_drain *d, int64_t now_ms, size_t waiting, size_t in_flight,
				   bool others_serving, int64_t *wake_ms, size_t *count)
{
	int64_t budget_end = d->started_ms + d->cfg.budget_ms;
	int64_t wait_end = d->started_ms + d->cfg.membership_wait_ms;
	int64_t now_us = now_ms * 1000, step;
	size_t room, n;

	*count = 0;
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
	room = in_flight < d->cfg.max_in_flight ? d->cfg.max_in_flight - in_flight : 0;
	if (waiting == 0 || room == 0) {
		/* Redirected supervisors still attached: they leave on their
		 * own; look again soon (a departure makes room). */
		*wake_ms = earliest(now_ms + (waiting ? 5 : d->cfg.pace_ms), budget_end);
		return RS_DRAIN_WAIT;
	}
	if (!d->sent_any || d->next_us < now_us - CATCH_UP_US)
		d->next_us = d->sent_any ? now_us - CATCH_UP_US : now_us;
	if (d->next_us > now_us) {
		*wake_ms = earliest(ceil_ms(d->next_us), budget_end);
		return RS_DRAIN_WAIT;
	}
	step = interval_us(d, now_ms, waiting);
	d->step_us = step;
	n = step ? (size_t)((now_us - d->next_us) / step) + 1 : room;
	if (n > room)
		n = room;
	if (n > waiting)
		n = waiting;
	*count = n;
	*wake_ms = earliest(step ? ceil_ms(d->next_us + (int64_t)n * step) : now_ms + 1, budget_end);
	if (*wake_ms <= now_ms)
		*wake_ms = now_ms + 1;
	return RS_DRAIN_HAND_OFF;
}

void rs_drain_sent(struct rs_drain *d, int64_t now_ms, size_t count)
{
	int64_t now_us = now_ms * 1000;

	if (!d->sent_any || d->next_us < now_us - CATCH_UP_US)
		d->next_us = now_us;
	d->next_us = d->step_us ? d->next_us + (int64_t)count * d->step_us : now_us;
	d->sent_any = true;
}
