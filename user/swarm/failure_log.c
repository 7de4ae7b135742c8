/* SPDX-License-Identifier: Apache-2.0 */
/* failure_log.c - failures are counted by reason, and logged one line per
 * member only while they are few: a token bucket lets a burst through
 * (an ordinary incident shows each member that failed) and turns a storm
 * (a gateway killed under 10,000 members) into one line per refill that
 * says how many it stands for.  Nothing else is logged per member. */
#include <stdio.h>

#include "util/logfmt.h"
#include "util/mstime.h"
#include "swarm.h"

#define LOG_BURST 20     /* lines let through at once */
#define LOG_PER_SECOND 5 /* lines per second after the burst */

static const char *const labels[FAIL_COUNT] = {
	[FAIL_CONNECT] = "connect",   [FAIL_TIMEOUT] = "timeout",
	[FAIL_TLS] = "tls",           [FAIL_REJECTED] = "rejected",
	[FAIL_TARGET_REFUSED] = "target_refused", [FAIL_BAD_FRAME] = "bad_frame",
	[FAIL_GOODBYE] = "goodbye",   [FAIL_DISCONNECTED] = "disconnected",
	[FAIL_SOURCE] = "source",     [FAIL_RESOLVE] = "resolve",
};

const char *swarm_failure_label(enum swarm_failure why)
{
	return why < FAIL_COUNT ? labels[why] : "unknown";
}

/* Whether a line may go out now; *suppressed: lines held back before it. */
static bool log_allowed(struct swarm *sw, uint64_t *suppressed)
{
	uint64_t now = (uint64_t)rs_mono_ms();

	if (sw->log_last_ms == 0)
		sw->log_credit_milli = LOG_BURST * 1000;
	else
		sw->log_credit_milli += (now - sw->log_last_ms) * LOG_PER_SECOND;
	if (sw->log_credit_milli > LOG_BURST * 1000)
		sw->log_credit_milli = LOG_BURST * 1000;
	sw->log_last_ms = now ? now : 1;
	if (sw->log_credit_milli < 1000) {
		sw->log_suppressed++;
		return false;
	}
	sw->log_credit_milli -= 1000;
	*suppressed = sw->log_suppressed;
	sw->log_suppressed = 0;
	return true;
}

void swarm_failure(struct swarm *sw, const struct swarm_member *m, enum swarm_failure why, const char *event,
		   const char *detail)
{
	char who[sizeof(sw->who) + RS_ID_MAX + 16], held[24];
	uint64_t suppressed;

	sw->failures[why]++;
	if (!log_allowed(sw, &suppressed))
		return;
	snprintf(who, sizeof(who), "%s member=%s%u", sw->who, sw->cfg.prefix, m->number);
	snprintf(held, sizeof(held), "%llu", (unsigned long long)suppressed);
	rs_log(stderr, "warn", who, "event", event, "reason", swarm_failure_label(why), "error", detail,
	       "suppressed", held, NULL);
}
