/* log_rate.c - refusals are logged one line each, but a peer can cause
 * refusals as fast as it can connect; a token bucket per reason lets a
 * burst through (every line of an ordinary incident is kept) and turns a
 * flood into one line per refill carrying the count it stands for. */
#include "gateway.h"

#define LOG_BURST 20     /* lines let through at once */
#define LOG_PER_SECOND 5 /* lines per second after the burst */

bool gw_log_rate_allow(struct gw_log_rate *r, int64_t now_ms, uint64_t *suppressed)
{
	int64_t elapsed = now_ms - r->last_ms;
	uint64_t credit = r->credit_milli;

	/* A fresh bucket (last_ms 0) starts full; a clock step back refills
	 * nothing. */
	if (r->last_ms == 0)
		credit = LOG_BURST * 1000;
	else if (elapsed > 0)
		credit += (uint64_t)elapsed * LOG_PER_SECOND;
	if (credit > LOG_BURST * 1000)
		credit = LOG_BURST * 1000;
	r->last_ms = now_ms;
	if (credit < 1000) {
		r->credit_milli = (uint32_t)credit;
		r->suppressed++;
		return false;
	}
	r->credit_milli = (uint32_t)(credit - 1000);
	*suppressed = r->suppressed;
	r->suppressed = 0;
	return true;
}
