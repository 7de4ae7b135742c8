/* SPDX-License-Identifier: Apache-2.0 */
/* drain_clock.h - the drain's pacer (include/ringsteer/drain.h) on a
 * struct rs_clock (util/mstime.h).  Internal: the clock type is the
 * programs' plumbing, so an embedder drives rs_drain_next() with its own
 * times instead. */
#ifndef RS_DRAIN_CLOCK_H
#define RS_DRAIN_CLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringsteer/drain.h"
#include "util/mstime.h"

/* What a loop calls (step.c): the pacer fed by the monotonic side of clock
 * only (rs_clock_system() in production; a test's own clock to step the
 * wall side), so a wall-clock step never moves the schedule. */

/* rs_drain_start at the clock's monotonic now. */
void rs_drain_start_on(struct rs_drain *d, const struct rs_drain_config *cfg, const struct rs_clock *clock);

/* rs_drain_next at the clock's monotonic now (given in *now_ms, for
 * rs_drain_sent); *delay_ms is how long the loop's timer waits before the
 * next step (0 or more; unset for DONE). */
enum rs_drain_action rs_drain_step(struct rs_drain *d, const struct rs_clock *clock, size_t waiting,
				   size_t in_flight, bool others_serving, int64_t *now_ms, int64_t *delay_ms,
				   size_t *count);

#endif
