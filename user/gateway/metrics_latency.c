/* SPDX-License-Identifier: Apache-2.0 */
/* metrics_latency.c - the gateway's latency histograms on /metrics:
 * admission and handoff (timed by the core on its events' times), store
 * calls by kind (timed around each call on the store worker).  Every
 * series is exported from the start, empty, so a rate or a quantile over
 * it reads 0 or NaN instead of nothing. */
#include <stdio.h>

#include <event2/buffer.h>

#include "gateway.h"
#include "util/http.h"
#include "util/metrics_histogram.h"

void gw_latency_metrics(const struct gateway *gw, struct evbuffer *b)
{
	char labels[RS_ID_MAX + 64];

	/* ids are [a-z0-9.-] and kinds fixed words: no label escaping needed */
	snprintf(labels, sizeof(labels), "gateway=\"%s\"", gw->cfg.id);
	rs_metrics_family(b, "ringsteer_gateway_admission_seconds", "histogram",
			  "Time from a supervisor's HELLO to the ACCEPT or placement REDIRECT this gateway sent it: the "
			  "store's admission transaction and the queue before it (degraded accepts included, refusals "
			  "not observed; millisecond resolution).");
	rs_metrics_histogram(b, "ringsteer_gateway_admission_seconds", labels,
			     rs_gw_core_histogram(gw->core, RS_GW_HIST_ADMISSION));
	rs_metrics_family(b, "ringsteer_gateway_handoff_seconds", "histogram",
			  "Drain handoffs, from the REDIRECT {drain} sent to the end of the supervisor's old link: it "
			  "left once accepted at its target (make before break), or was closed at --handoff-timeout or "
			  "when --drain-budget ran out (ringsteer_gateway_handoffs_total says which).");
	rs_metrics_histogram(b, "ringsteer_gateway_handoff_seconds", labels,
			     rs_gw_core_histogram(gw->core, RS_GW_HIST_HANDOFF));
	rs_metrics_family(b, "ringsteer_gateway_store_seconds", "histogram",
			  "Store calls' run time on the store worker, by kind (admit: a transaction of admissions and "
			  "drain handoffs; claim, leave, sandboxes, heartbeat, membership, draining); the wait in its "
			  "queue left out.");
	for (int op = 0; op < RS_GW_STORE_OP_COUNT; op++) {
		snprintf(labels, sizeof(labels), "gateway=\"%s\",kind=\"%s\"", gw->cfg.id,
			 rs_gw_store_op_label((enum rs_gw_store_op)op));
		rs_metrics_histogram(b, "ringsteer_gateway_store_seconds", labels, &gw->store_seconds[op]);
	}
}
