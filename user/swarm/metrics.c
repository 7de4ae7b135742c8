/* SPDX-License-Identifier: Apache-2.0 */
/* metrics.c - the swarm's /metrics (Prometheus text, the gateway's naming
 * style): members attached, in all and per gateway, redirects, failures by
 * reason, how long it took until all were attached the first time, and
 * the longest time a member went without a session (gap.h).
 * Label sets are bounded: fixed reasons, and at most SWARM_GATEWAYS_MAX
 * gateway ids. */
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "util/http.h"
#include "swarm.h"

/* Appends id as a label value: a gateway id comes from the wire, so '\',
 * '"' and newlines are escaped as the exposition format requires. */
static void add_label_value(struct evbuffer *b, const char *id)
{
	for (; *id; id++) {
		if (*id == '\\' || *id == '"')
			evbuffer_add_printf(b, "\\%c", *id);
		else if (*id == '\n')
			evbuffer_add(b, "\\n", 2);
		else
			evbuffer_add(b, id, 1);
	}
}

static void render(const void *ctx, struct evbuffer *b)
{
	const struct swarm *sw = ctx;

	rs_metrics_family(b, "ringsteer_swarm_members", "gauge", "Members this swarm runs (--count).");
	evbuffer_add_printf(b, "ringsteer_swarm_members %u\n", sw->cfg.count);
	rs_metrics_family(b, "ringsteer_swarm_attached", "gauge", "Members attached to a gateway.");
	evbuffer_add_printf(b, "ringsteer_swarm_attached %u\n", sw->attached);
	rs_metrics_family(b, "ringsteer_swarm_attached_by_gateway", "gauge",
			  "Members attached, by the gateway id that accepted them.");
	for (uint16_t i = 0; i < sw->n_gateways; i++) {
		uint64_t n = 0;
		bool first = true;

		/* One line per id: a gateway seen at two peer endpoints (a
		 * restart elsewhere) has two entries. */
		for (uint16_t j = 0; j < sw->n_gateways; j++) {
			if (strcmp(sw->gateways[j].id, sw->gateways[i].id) != 0)
				continue;
			if (j < i)
				first = false;
			n += sw->gateways[j].attached;
		}
		if (!first)
			continue;
		evbuffer_add_printf(b, "ringsteer_swarm_attached_by_gateway{gateway=\"");
		add_label_value(b, sw->gateways[i].id);
		evbuffer_add_printf(b, "\"} %llu\n", (unsigned long long)n);
	}
	rs_metrics_family(b, "ringsteer_swarm_dials_in_progress", "gauge",
			  "Links connecting or awaiting their answer (--concurrency bounds them).");
	evbuffer_add_printf(b, "ringsteer_swarm_dials_in_progress %u\n", sw->in_progress);
	rs_metrics_family(b, "ringsteer_swarm_attaches_total", "counter",
			  "Sessions accepted (every ACCEPT counted once): its rate is the goodput the gateways give.");
	evbuffer_add_printf(b, "ringsteer_swarm_attaches_total %llu\n", (unsigned long long)sw->attaches);
	rs_metrics_family(b, "ringsteer_swarm_redirects_total", "counter", "REDIRECT frames received.");
	evbuffer_add_printf(b, "ringsteer_swarm_redirects_total %llu\n", (unsigned long long)sw->redirects);
	rs_metrics_family(b, "ringsteer_swarm_failures_total", "counter", "Dials and links that failed, by reason.");
	for (int r = 0; r < FAIL_COUNT; r++)
		evbuffer_add_printf(b, "ringsteer_swarm_failures_total{reason=\"%s\"} %llu\n",
				    swarm_failure_label((enum swarm_failure)r), (unsigned long long)sw->failures[r]);
	rs_metrics_family(b, "ringsteer_swarm_gap_max_seconds", "gauge",
			  "The longest time a member was without an accepted session after having had one "
			  "(link lost to next ACCEPT; 0 for make-before-break moves), gaps still open included.");
	evbuffer_add_printf(b, "ringsteer_swarm_gap_max_seconds %.6f\n", (double)swarm_gap_max_us(sw) / 1e6);
	rs_metrics_family(b, "ringsteer_swarm_gaps_total", "counter",
			  "Gaps that ended: a member accepted again after losing its attached link.");
	evbuffer_add_printf(b, "ringsteer_swarm_gaps_total %llu\n", (unsigned long long)sw->gaps.count);
	if (sw->all_attached_ms < 0)
		return;
	rs_metrics_family(b, "ringsteer_swarm_attach_seconds", "gauge",
			  "Seconds from start until every member was attached the first time.");
	evbuffer_add_printf(b, "ringsteer_swarm_attach_seconds %.3f\n", (double)sw->all_attached_ms / 1000.0);
}

static void on_request(struct evhttp_request *req, void *arg)
{
	const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));

	if (path && strcmp(path, "/metrics") == 0)
		rs_http_reply_metrics(req, render, arg);
	else if (path && strcmp(path, "/healthz") == 0)
		rs_http_reply_text(req, HTTP_OK, "OK", "ok\n");
	else
		rs_http_reply_text(req, HTTP_NOTFOUND, "Not Found", "not found\n");
}

int swarm_metrics_serve(struct swarm *sw)
{
	return rs_http_serve(sw->base, sw->cfg.metrics, on_request, sw, &sw->http);
}
