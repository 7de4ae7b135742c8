/* mstime.h - durations in milliseconds, as the flags and the protocol give
 * them, in the struct timeval that libevent's timers and timeouts take. */
#ifndef RINGSTEER_MSTIME_H
#define RINGSTEER_MSTIME_H

#include <stdint.h>
#include <sys/time.h>

/* Returns ms as a struct timeval (exact: whole seconds and microseconds). */
static inline struct timeval rs_ms_timeval(uint64_t ms)
{
	return (struct timeval){ .tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)(ms % 1000) * 1000 };
}

#endif
