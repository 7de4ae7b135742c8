/* SPDX-License-Identifier: Apache-2.0 */
/* metrics.c - the gateway's HTTP side: /metrics in the Prometheus text
 * format (bounded label sets: one gateway label, fixed outcome and reason
 * values), /readyz (200 once registered in the store and not stopping),
 * /healthz (200 while the loop runs). */
#include <errno.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "gateway.h"
#include "util/http.h"

static void render(const void *ctx, struct evbuffer *b)
{
	const struct gateway *gw = ctx;
	const struct rs_gw_counters *k = rs_gw_core_counters(gw->core);
	const char *id = gw->cfg.id; /* ids are [a-z0-9.-]: no label escaping needed */
	struct rs_gw_gauges g;

	rs_gw_core_gauges(gw->core, &g);
	rs_metrics_family(b, "ringsteer_gateway_supervisors", "gauge", "Supervisors attached to this gateway.");
	evbuffer_add_printf(b, "ringsteer_gateway_supervisors{gateway=\"%s\"} %llu\n", id,
			    (unsigned long long)g.supervisors);
	rs_metrics_family(b, "ringsteer_gateway_busiest_supervisor_sandboxes", "gauge",
	       "Most sandboxes carried by one supervisor attached to this gateway.");
	evbuffer_add_printf(b, "ringsteer_gateway_busiest_supervisor_sandboxes{gateway=\"%s\"} %llu\n", id,
			    (unsigned long long)g.busiest);
	rs_metrics_family(b, "ringsteer_gateway_placements_total", "counter", "Placement decisions made here, by outcome.");
	evbuffer_add_printf(b, "ringsteer_gateway_placements_total{gateway=\"%s\",outcome=\"accept\"} %llu\n", id,
			    (unsigned long long)k->accepts);
	evbuffer_add_printf(b, "ringsteer_gateway_placements_total{gateway=\"%s\",outcome=\"redirect\"} %llu\n", id,
			    (unsigned long long)(k->redirects_placement + k->redirects_drain + k->redirects_deferred));
	rs_metrics_family(b, "ringsteer_gateway_redirects_total", "counter", "Redirects sent, by reason.");
	evbuffer_add_printf(b, "ringsteer_gateway_redirects_total{gateway=\"%s\",reason=\"placement\"} %llu\n", id,
			    (unsigned long long)k->redirects_placement);
	evbuffer_add_printf(b, "ringsteer_gateway_redirects_total{gateway=\"%s\",reason=\"drain\"} %llu\n", id,
			    (unsigned long long)k->redirects_drain);
	evbuffer_add_printf(b, "ringsteer_gateway_redirects_total{gateway=\"%s\",reason=\"deferred\"} %llu\n", id,
			    (unsigned long long)k->redirects_deferred);
	rs_metrics_family(b, "ringsteer_gateway_over_cap_accepts_total", "counter",
			  "Service fallbacks accepted above the cap on their third round in a row refused here (every "
			  "redirect target unreachable: liveness beats balance).");
	evbuffer_add_printf(b, "ringsteer_gateway_over_cap_accepts_total{gateway=\"%s\"} %llu\n", id,
			    (unsigned long long)k->over_cap_accepts);
	rs_metrics_family(b, "ringsteer_gateway_stays_total", "counter", "Arrivals accepted because they asked to stay.");
	evbuffer_add_printf(b, "ringsteer_gateway_stays_total{gateway=\"%s\"} %llu\n", id,
			    (unsigned long long)k->stays);
	rs_metrics_family(b, "ringsteer_gateway_reserved_accepts_total", "counter",
			  "Arrivals accepted where the rule had reserved their place (connect-time steering, or a "
			  "redirect's target reached through the Service) though loads had moved since.");
	evbuffer_add_printf(b, "ringsteer_gateway_reserved_accepts_total{gateway=\"%s\"} %llu\n", id,
			    (unsigned long long)k->reserved);
	rs_metrics_family(b, "ringsteer_gateway_owner_fallbacks_total", "counter",
	       "Placements that found every gateway at cap and took the ring owner.");
	evbuffer_add_printf(b, "ringsteer_gateway_owner_fallbacks_total{gateway=\"%s\"} %llu\n", id,
			    (unsigned long long)k->owner_fallbacks);
	rs_metrics_family(b, "ringsteer_gateway_superseded_total", "counter",
	       "Attached connections closed because a newer one of the same supervisor took over.");
	evbuffer_add_printf(b, "ringsteer_gateway_superseded_total{gateway=\"%s\"} %llu\n", id,
			    (unsigned long long)k->superseded_closed);
	rs_metrics_family(b, "ringsteer_gateway_draining", "gauge", "1 while this gateway drains.");
	evbuffer_add_printf(b, "ringsteer_gateway_draining{gateway=\"%s\"} %d\n", id, g.draining ? 1 : 0);
	rs_metrics_family(b, "ringsteer_gateway_handoffs_total", "counter",
	       "Supervisors redirected by the drain, by how their old link ended.");
	evbuffer_add_printf(b, "ringsteer_gateway_handoffs_total{gateway=\"%s\",result=\"completed\"} %llu\n", id,
			    (unsigned long long)k->handoffs_completed);
	evbuffer_add_printf(b, "ringsteer_gateway_handoffs_total{gateway=\"%s\",result=\"timeout\"} %llu\n", id,
			    (unsigned long long)k->handoffs_timed_out);
	evbuffer_add_printf(b, "ringsteer_gateway_handoffs_total{gateway=\"%s\",result=\"abandoned\"} %llu\n", id,
			    (unsigned long long)k->handoffs_abandoned);
	rs_metrics_family(b, "ringsteer_gateway_rejects_total", "counter", "Connections refused, by reason.");
	for (int r = 0; r < RS_GW_REJECT_COUNT; r++)
		evbuffer_add_printf(b, "ringsteer_gateway_rejects_total{gateway=\"%s\",reason=\"%s\"} %llu\n", id,
				    rs_gw_reject_label((enum rs_gw_reject)r), (unsigned long long)k->rejects[r]);
	rs_metrics_family(b, "ringsteer_gateway_unauthenticated_connections", "gauge",
	       "Connections accepted and not yet past HELLO and token (--max-unauth bounds them).");
	evbuffer_add_printf(b, "ringsteer_gateway_unauthenticated_connections{gateway=\"%s\"} %llu\n", id,
			    (unsigned long long)gw->unauth.total);
	/* One series per kind, and every failure in exactly one of them, so
	 * that the sum over kind is the total the single series used to be
	 * (rules that sum by gateway read the same). */
	rs_metrics_family(b, "ringsteer_gateway_store_errors_total", "counter",
	       "Store operations that failed, by kind (full, readonly, corrupt, unavailable, other).");
	for (int kind = 0; kind < RS_STORE_ERROR_KINDS; kind++)
		evbuffer_add_printf(b, "ringsteer_gateway_store_errors_total{gateway=\"%s\",kind=\"%s\"} %llu\n", id,
				    rs_store_error_kind_label((enum rs_store_error_kind)kind),
				    (unsigned long long)k->store_errors_kind[kind]);
	rs_metrics_family(b, "ringsteer_gateway_store_up", "gauge",
	       "1 when the last store operation got an answer, 0 when the store was unavailable.");
	evbuffer_add_printf(b, "ringsteer_gateway_store_up{gateway=\"%s\"} %d\n", id, g.store_up ? 1 : 0);
	rs_metrics_family(b, "ringsteer_gateway_store_clock_skew_seconds", "gauge",
	       "The store server's wall clock minus this gateway's, measured at each transaction's begin and read at each heartbeat (PostgreSQL: liveness runs on the server's clock once they differ by over 1 s; always 0 on SQLite, one machine's clock).");
	evbuffer_add_printf(b, "ringsteer_gateway_store_clock_skew_seconds{gateway=\"%s\"} %.3f\n", id,
			    (double)g.store_clock_skew_ms / 1000.0);
	rs_metrics_family(b, "ringsteer_gateway_store_queue", "gauge",
	       "Store calls submitted to the store worker and not answered yet.");
	evbuffer_add_printf(b, "ringsteer_gateway_store_queue{gateway=\"%s\"} %llu\n", id,
			    (unsigned long long)rs_store_worker_pending(gw->worker));
	rs_metrics_family(b, "ringsteer_gateway_store_busy_seconds", "gauge",
	       "How long the store call running now has taken (0: the store worker is idle).");
	evbuffer_add_printf(b, "ringsteer_gateway_store_busy_seconds{gateway=\"%s\"} %.3f\n", id,
			    (double)rs_store_worker_busy_ms(gw->worker) / 1000.0);
	rs_metrics_family(b, "ringsteer_gateway_store_admissions_total", "counter",
	       "Admissions and drain handoffs the store decided (several may share one transaction).");
	evbuffer_add_printf(b, "ringsteer_gateway_store_admissions_total{gateway=\"%s\"} %llu\n", id,
			    (unsigned long long)k->store_batched);
	rs_metrics_family(b, "ringsteer_gateway_store_admission_transactions_total", "counter",
	       "Store transactions that decided admissions and drain handoffs (those queued together share one).");
	evbuffer_add_printf(b, "ringsteer_gateway_store_admission_transactions_total{gateway=\"%s\"} %llu\n", id,
			    (unsigned long long)k->store_batches);
	rs_metrics_family(b, "ringsteer_gateway_store_statements_total", "counter",
	       "Statements this gateway's store handle has run (transactions begun and committed count one each); read at each heartbeat.");
	evbuffer_add_printf(b, "ringsteer_gateway_store_statements_total{gateway=\"%s\"} %llu\n", id,
			    (unsigned long long)k->store_statements);
	rs_metrics_family(b, "ringsteer_gateway_store_cancelled_total", "counter",
	       "Queued admissions answered unavailable (accepted degraded) behind a store call past --store-timeout.");
	evbuffer_add_printf(b, "ringsteer_gateway_store_cancelled_total{gateway=\"%s\"} %llu\n", id,
			    (unsigned long long)k->store_cancelled);
	/* Goodput under overload: arrivals that cost the store nothing more. */
	rs_metrics_family(b, "ringsteer_gateway_arrivals_expired_total", "counter",
	       "Arrivals whose connection closed before the store answered (their supervisor gave up): dropped unadmitted, or their answer discarded.");
	evbuffer_add_printf(b, "ringsteer_gateway_arrivals_expired_total{gateway=\"%s\"} %llu\n", id,
			    (unsigned long long)k->arrivals_expired);
	rs_metrics_family(b, "ringsteer_gateway_arrivals_timed_out_total", "counter",
	       "Arrivals still queued for the store at --admit-deadline: refused with REJECT LIMIT and a retry hint.");
	evbuffer_add_printf(b, "ringsteer_gateway_arrivals_timed_out_total{gateway=\"%s\"} %llu\n", id,
			    (unsigned long long)k->arrivals_timed_out);
	rs_metrics_family(b, "ringsteer_gateway_arrivals_shed_total", "counter",
	       "Arrivals refused at once with REJECT LIMIT and a retry hint: the store's recent pace would not clear the queue ahead of them within --admit-deadline.");
	evbuffer_add_printf(b, "ringsteer_gateway_arrivals_shed_total{gateway=\"%s\"} %llu\n", id,
			    (unsigned long long)k->arrivals_shed);
	rs_metrics_family(b, "ringsteer_gateway_unsent_closed_total", "counter",
			  "Connections closed because more than --max-unsent bytes waited for a peer that did not read.");
	evbuffer_add_printf(b, "ringsteer_gateway_unsent_closed_total{gateway=\"%s\"} %llu\n", id,
			    (unsigned long long)gw->counters.unsent_closed);
	rs_metrics_family(b, "ringsteer_gateway_refresh_limited_total", "counter",
			  "REFRESH frames dropped: more than one per heartbeat on a connection.");
	evbuffer_add_printf(b, "ringsteer_gateway_refresh_limited_total{gateway=\"%s\"} %llu\n", id,
			    (unsigned long long)k->refresh_limited);
	rs_metrics_family(b, "ringsteer_gateway_sandboxes_coalesced_total", "counter",
			  "SANDBOXES frames folded into the next store write (at most one per heartbeat a connection).");
	evbuffer_add_printf(b, "ringsteer_gateway_sandboxes_coalesced_total{gateway=\"%s\"} %llu\n", id,
			    (unsigned long long)k->sandboxes_coalesced);
	rs_metrics_family(b, "ringsteer_gateway_sandboxes_unchanged_total", "counter",
			  "SANDBOXES frames carrying the count the store already had: no store write.");
	evbuffer_add_printf(b, "ringsteer_gateway_sandboxes_unchanged_total{gateway=\"%s\"} %llu\n", id,
			    (unsigned long long)k->sandboxes_unchanged);
	rs_metrics_family(b, "ringsteer_gateway_store_queue_full_total", "counter",
			  "Arrivals accepted degraded because the store had too many requests unanswered.");
	evbuffer_add_printf(b, "ringsteer_gateway_store_queue_full_total{gateway=\"%s\"} %llu\n", id,
			    (unsigned long long)k->store_queue_full);
	rs_metrics_family(b, "ringsteer_gateway_degraded_accepts_total", "counter",
	       "Supervisors accepted where they landed, without placement, because the store was unavailable.");
	evbuffer_add_printf(b, "ringsteer_gateway_degraded_accepts_total{gateway=\"%s\"} %llu\n", id,
			    (unsigned long long)k->degraded_accepts);
	rs_metrics_family(b, "ringsteer_gateway_unrecorded_supervisors", "gauge",
	       "Attached supervisors accepted degraded that the store has not recorded yet.");
	evbuffer_add_printf(b, "ringsteer_gateway_unrecorded_supervisors{gateway=\"%s\"} %llu\n", id,
			    (unsigned long long)g.unrecorded);
	rs_metrics_family(b, "ringsteer_gateway_deferred_placements_pending", "gauge",
	       "Supervisors accepted degraded, claimed, whose deferred placement by the rule is still to come.");
	evbuffer_add_printf(b, "ringsteer_gateway_deferred_placements_pending{gateway=\"%s\"} %llu\n", id,
			    (unsigned long long)g.deferred_pending);
	rs_metrics_family(b, "ringsteer_gateway_store_claims_total", "counter",
	       "Degraded sessions claimed in the store once it answered again, by result.");
	evbuffer_add_printf(b, "ringsteer_gateway_store_claims_total{gateway=\"%s\",result=\"recorded\"} %llu\n", id,
			    (unsigned long long)k->claims_recorded);
	evbuffer_add_printf(b, "ringsteer_gateway_store_claims_total{gateway=\"%s\",result=\"superseded\"} %llu\n",
			    id, (unsigned long long)k->claims_superseded);
	rs_metrics_family(b, "ringsteer_gateway_insecure", "gauge",
	       "1 when the gateway serves plaintext (--insecure), 0 under TLS.");
	evbuffer_add_printf(b, "ringsteer_gateway_insecure{gateway=\"%s\"} %d\n", id, gw->tls ? 0 : 1);
	if (gw->cfg.agent) {
		rs_metrics_family(b, "ringsteer_gateway_agent_registered", "gauge",
		       "1 when the node agent at --agent holds this listening socket (sk_lookup steers to it), "
		       "0 when not (redirect-only).");
		evbuffer_add_printf(b, "ringsteer_gateway_agent_registered{gateway=\"%s\",role=\"listen\"} %d\n", id,
				    gw->agent_listen.state == GW_AGENT_REGISTERED ? 1 : 0);
		evbuffer_add_printf(b, "ringsteer_gateway_agent_registered{gateway=\"%s\",role=\"peer\"} %d\n", id,
				    gw->agent_peer.state == GW_AGENT_REGISTERED ? 1 : 0);
		rs_metrics_family(b, "ringsteer_gateway_agent_registrations_total", "counter",
		       "Attempts to register a listening socket with the node agent, by result.");
		for (int r = 0; r < GW_AGENT_RESULT_COUNT; r++)
			evbuffer_add_printf(b,
					    "ringsteer_gateway_agent_registrations_total{gateway=\"%s\",result=\"%s\"} %llu\n", id,
					    gw_agent_result_label((enum gw_agent_result)r),
					    (unsigned long long)gw->counters.agent_attempts[r]);
	}
	gw_accept_metrics(gw, b);
	gw_unauth_metrics(gw, b);
	gw_latency_metrics(gw, b);
	if (!gw->tls)
		return;
	rs_metrics_family(b, "ringsteer_gateway_tls_cert_expiry_timestamp_seconds", "gauge",
	       "notAfter of the certificate new connections are served, seconds since the epoch.");
	evbuffer_add_printf(b, "ringsteer_gateway_tls_cert_expiry_timestamp_seconds{gateway=\"%s\"} %lld\n", id,
			    (long long)gw->tls_not_after);
	rs_metrics_family(b, "ringsteer_gateway_tls_reloads_total", "counter",
	       "SIGHUP reloads of the TLS files, by result (error: the previous files still serve).");
	evbuffer_add_printf(b, "ringsteer_gateway_tls_reloads_total{gateway=\"%s\",result=\"ok\"} %llu\n", id,
			    (unsigned long long)gw->counters.tls_reloads_ok);
	evbuffer_add_printf(b, "ringsteer_gateway_tls_reloads_total{gateway=\"%s\",result=\"error\"} %llu\n", id,
			    (unsigned long long)gw->counters.tls_reloads_failed);
	rs_metrics_family(b, "ringsteer_gateway_tls_handshakes_total", "counter",
	       "Finished TLS handshakes, by kind (resumed: a session ticket under --tls-ticket-keys).");
	evbuffer_add_printf(b, "ringsteer_gateway_tls_handshakes_total{gateway=\"%s\",kind=\"full\"} %llu\n", id,
			    (unsigned long long)gw->counters.tls_full);
	evbuffer_add_printf(b, "ringsteer_gateway_tls_handshakes_total{gateway=\"%s\",kind=\"resumed\"} %llu\n", id,
			    (unsigned long long)gw->counters.tls_resumed);
}

static void on_request(struct evhttp_request *req, void *arg)
{
	struct gateway *gw = arg;
	struct rs_gw_gauges g;
	const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));

	if (path && strcmp(path, "/metrics") == 0) {
		rs_http_reply_metrics(req, render, gw);
	} else if (path && strcmp(path, "/readyz") == 0) {
		rs_gw_core_gauges(gw->core, &g);
		if (g.registered && !g.draining && !g.stopping)
			rs_http_reply_text(req, HTTP_OK, "OK", "ready\n");
		else
			rs_http_reply_text(req, 503, "Service Unavailable", g.draining ? "draining\n" : "not registered\n");
	} else if (path && strcmp(path, "/healthz") == 0) {
		rs_http_reply_text(req, HTTP_OK, "OK", "ok\n");
	} else {
		rs_http_reply_text(req, HTTP_NOTFOUND, "Not Found", "not found\n");
	}
}

int gw_metrics_start(struct gateway *gw)
{
	if (!gw->cfg.metrics)
		return 0;
	return rs_http_serve(gw->base, gw->cfg.metrics, on_request, gw, &gw->http);
}
