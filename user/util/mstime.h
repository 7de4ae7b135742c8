/* SPDX-License-Identifier: Apache-2.0 */
/* mstime.h - the process's two clocks in milliseconds, and durations in the
 * struct timeval that libevent's timers and timeouts take.
 *
 * Two clocks, each for one use:
 *   rs_mono_ms()  CLOCK_MONOTONIC: loop timing, pacing, budgets, deadlines
 *                 within this process.  An NTP step of the wall clock
 *                 neither cuts a 25 s drain short nor stretches it.
 *   rs_wall_ms()  CLOCK_REALTIME: only what is compared across processes
 *                 (store rows' heartbeats and expiries, token expiry).
 * Code that a test must drive through a clock step takes a struct rs_clock
 * instead of calling them (rs_clock_system() in production). */
#ifndef RINGSTEER_MSTIME_H
#define RINGSTEER_MSTIME_H

#include <stdint.h>
#include <sys/time.h>

/* Milliseconds of CLOCK_MONOTONIC. */
int64_t rs_mono_ms(void);

/* Milliseconds since the Unix epoch (CLOCK_REALTIME). */
int64_t rs_wall_ms(void);

/* A pair of clocks a caller can substitute: a test's own, stepped at will,
 * never the machine's.  ctx is the substitute's state. */
struct rs_clock {
	int64_t (*mono_ms)(const struct rs_clock *c);
	int64_t (*wall_ms)(const struct rs_clock *c);
	void *ctx;
};

/* The machine's clocks (rs_mono_ms, rs_wall_ms); a constant, shared. */
const struct rs_clock *rs_clock_system(void);

/* Returns ms as a struct timeval (exact: whole seconds and microseconds). */
static inline struct timeval rs_ms_timeval(uint64_t ms)
{
	return (struct timeval){ .tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)(ms % 1000) * 1000 };
}

#endif
