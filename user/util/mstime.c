/* SPDX-License-Identifier: Apache-2.0 */
/* mstime.c - the process's monotonic and wall clocks in milliseconds (see
 * user/util/mstime.h for which serves what). */
#include <time.h>

#include "util/mstime.h"

static int64_t ms_of(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts); /* cannot fail for these two clocks */
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t rs_mono_ms(void)
{
	return ms_of(CLOCK_MONOTONIC);
}

int64_t rs_wall_ms(void)
{
	return ms_of(CLOCK_REALTIME);
}

static int64_t system_mono(const struct rs_clock *c)
{
	(void)c;
	return rs_mono_ms();
}

static int64_t system_wall(const struct rs_clock *c)
{
	(void)c;
	return rs_wall_ms();
}

const struct rs_clock *rs_clock_system(void)
{
	static const struct rs_clock system = { system_mono, system_wall, NULL };

	return &system;
}
