/* SPDX-License-Identifier: Apache-2.0 */
/* step.c - the drain's pacer (pacer.c) driven from a clock: the one place
 * the gateway's drain reads the time, and only the monotonic side of it.
 * Pacing, the membership wait and the budget are intervals of this one
 * process, so an NTP step of the wall clock during a 25 s drain must neither
 * cut it short nor stretch it past the grace period; a test proves that by
 * stepping the wall side of its own clock (tests/unit/test_drain_clock.c). */
#include "drain/drain_clock.h"
#include "util/mstime.h"

void rs_drain_start_on(struct rs_drain *d, const struct rs_drain_config *cfg, const struct rs_clock *clock)
{
	rs_drain_start(d, cfg, clock->mono_ms(clock));
}

enum rs_drain_action rs_drain_step(struct rs_drain *d, const struct rs_clock *clock, size_t waiting,
				   size_t in_flight, bool others_serving, int64_t *now_ms, int64_t *delay_ms,
				   size_t *count)
{
	int64_t now = clock->mono_ms(clock), wake = now;
	enum rs_drain_action a = rs_drain_next(d, now, waiting, in_flight, others_serving, &wake, count);

	*now_ms = now;
	*delay_ms = wake > now ? wake - now : 0;
	return a;
}
