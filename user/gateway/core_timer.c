/* SPDX-License-Identifier: Apache-2.0 */
/* core_timer.c - the core's clock and its one timer on the event loop:
 * the core reads no clock, so every event is given the time here, and
 * after each the timer is armed for the core's next wake. */
#include "gateway.h"
#include "util/mstime.h"

struct rs_gw_time gw_now(void)
{
	return (struct rs_gw_time){ rs_mono_ms(), rs_wall_ms() };
}

static void on_core_wake(evutil_socket_t fd, short what, void *arg)
{
	struct gateway *gw = arg;

	(void)fd;
	(void)what;
	gw->core_wake_ms = INT64_MAX;
	rs_gw_core_tick(gw->core, gw_now());
	gw_core_settle(gw);
}

void gw_core_settle(struct gateway *gw)
{
	int64_t at = rs_gw_core_next_wake(gw->core), now;
	struct timeval tv;

	if (!gw->core_ev) {
		gw->core_ev = evtimer_new(gw->base, on_core_wake, gw);
		gw->core_wake_ms = INT64_MAX;
		if (!gw->core_ev)
			return;
	}
	if (at == gw->core_wake_ms && evtimer_pending(gw->core_ev, NULL))
		return;
	now = rs_mono_ms();
	tv = rs_ms_timeval(at > now ? (uint64_t)(at - now) : 0);
	if (evtimer_add(gw->core_ev, &tv) == 0)
		gw->core_wake_ms = at;
}
