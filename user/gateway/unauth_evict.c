/* SPDX-License-Identifier: Apache-2.0 */
/* unauth_evict.c - an arrival that took a place in the unauthenticated
 * pool from a source over its share (unauth_fair.h): counted, and logged
 * at most once a second with the number left unsaid since (an arrival can
 * be had at will, a flood of them must not fill the disk). */
#include <stdio.h>

#include <event2/buffer.h>

#include "gateway.h"
#include "util/http.h"
#include "util/logfmt.h"
#include "util/mstime.h"

#define EVICT_LOG_MS 1000

void gw_unauth_evicted(struct gateway *gw, const char *source)
{
	int64_t now = rs_mono_ms();
	char n[24], sup[24];

	gw->counters.unauth_evicted++;
	if (gw->evict_logged_ms && now - gw->evict_logged_ms < EVICT_LOG_MS) {
		gw->evict_suppressed++;
		return;
	}
	snprintf(n, sizeof(n), "%llu", (unsigned long long)gw->counters.unauth_evicted);
	snprintf(sup, sizeof(sup), "%llu", (unsigned long long)gw->evict_suppressed);
	rs_log(stderr, "info", gw->who, "event", "unauth_evicted", "source", source, "detail",
	       "the pool is full: the oldest waiting connection of the largest source made room", "total", n,
	       "suppressed", sup, NULL);
	gw->evict_logged_ms = now;
	gw->evict_suppressed = 0;
}

void gw_unauth_metrics(const struct gateway *gw, struct evbuffer *b)
{
	rs_metrics_family(b, "ringsteer_gateway_unauth_evictions_total", "counter",
			  "Connections waiting for HELLO closed to make room, in a full pool, for an arrival "
			  "from a source under its share.");
	evbuffer_add_printf(b, "ringsteer_gateway_unauth_evictions_total{gateway=\"%s\"} %llu\n", gw->cfg.id,
			    (unsigned long long)gw->counters.unauth_evicted);
}
