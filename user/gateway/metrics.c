/* metrics.c - the gateway's HTTP side: /metrics in the Prometheus text
 * format (bounded label sets: one gateway label, fixed outcome and reason
 * values), /readyz (200 once registered in the store and not stopping),
 * /healthz (200 while the loop runs). */
#include <errno.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "gateway.h"
#include "ringsteer/endpoint.h"

static const char *const reject_labels[GW_REJECT_COUNT] = {
	[GW_REJECT_BAD_FRAME] = "bad_frame",   [GW_REJECT_BAD_VERSION] = "bad_version",
	[GW_REJECT_BAD_TOKEN] = "bad_token",   [GW_REJECT_BAD_MEMBER] = "bad_member",
	[GW_REJECT_HELLO_TIMEOUT] = "hello_timeout", [GW_REJECT_SUPERSEDED] = "superseded",
	[GW_REJECT_UNAVAILABLE] = "unavailable", [GW_REJECT_LIMIT] = "limit",
};

const char *gw_reject_label(enum gw_reject r)
{
	return r < GW_REJECT_COUNT ? reject_labels[r] : "unknown";
}

static void family(struct evbuffer *b, const char *name, const char *type, const char *help)
{
	evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void render(const struct gateway *gw, struct evbuffer *b)
{
	const struct gw_counters *k = &gw->counters;
	const char *id = gw->cfg.id; /* ids are [a-z0-9.-]: no label escaping needed */
	uint64_t supervisors, busiest;

	gw_conn_gauges(gw, &supervisors, &busiest);
	family(b, "ringsteer_gateway_supervisors", "gauge", "Supervisors attached to this gateway.");
	evbuffer_add_printf(b, "ringsteer_gateway_supervisors{gateway=\"%s\"} %llu\n", id,
			    (unsigned long long)supervisors);
	family(b, "ringsteer_gateway_busiest_supervisor_sandboxes", "gauge",
	       "Most sandboxes carried by one supervisor attached to this gateway.");
	evbuffer_add_printf(b, "ringsteer_gateway_busiest_supervisor_sandboxes{gateway=\"%s\"} %llu\n", id,
			    (unsigned long long)busiest);
	family(b, "ringsteer_gateway_placements_total", "counter", "Placement decisions made here, by outcome.");
	evbuffer_add_printf(b, "ringsteer_gateway_placements_total{gateway=\"%s\",outcome=\"accept\"} %llu\n", id,
			    (unsigned long long)k->accepts);
	evbuffer_add_printf(b, "ringsteer_gateway_placements_total{gateway=\"%s\",outcome=\"redirect\"} %llu\n", id,
			    (unsigned long long)(k->redirects_placement + k->redirects_drain));
	family(b, "ringsteer_gateway_redirects_total", "counter", "Redirects sent, by reason.");
	evbuffer_add_printf(b, "ringsteer_gateway_redirects_total{gateway=\"%s\",reason=\"placement\"} %llu\n", id,
			    (unsigned long long)k->redirects_placement);
	evbuffer_add_printf(b, "ringsteer_gateway_redirects_total{gateway=\"%s\",reason=\"drain\"} %llu\n", id,
			    (unsigned long long)k->redirects_drain);
	family(b, "ringsteer_gateway_stays_total", "counter", "Arrivals accepted because they asked to stay.");
	evbuffer_add_printf(b, "ringsteer_gateway_stays_total{gateway=\"%s\"} %llu\n", id,
			    (unsigned long long)k->stays);
	family(b, "ringsteer_gateway_owner_fallbacks_total", "counter",
	       "Placements that found every gateway at cap and took the ring owner.");
	evbuffer_add_printf(b, "ringsteer_gateway_owner_fallbacks_total{gateway=\"%s\"} %llu\n", id,
			    (unsigned long long)k->owner_fallbacks);
	family(b, "ringsteer_gateway_superseded_total", "counter",
	       "Attached connections closed because a newer one of the same supervisor took over.");
	evbuffer_add_printf(b, "ringsteer_gateway_superseded_total{gateway=\"%s\"} %llu\n", id,
			    (unsigned long long)k->superseded_closed);
	family(b, "ringsteer_gateway_draining", "gauge", "1 while this gateway drains.");
	evbuffer_add_printf(b, "ringsteer_gateway_draining{gateway=\"%s\"} %d\n", id, gw->draining ? 1 : 0);
	family(b, "ringsteer_gateway_handoffs_total", "counter",
	       "Supervisors redirected by the drain, by how their old link ended.");
	evbuffer_add_printf(b, "ringsteer_gateway_handoffs_total{gateway=\"%s\",result=\"completed\"} %llu\n", id,
			    (unsigned long long)k->handoffs_completed);
	evbuffer_add_printf(b, "ringsteer_gateway_handoffs_total{gateway=\"%s\",result=\"timeout\"} %llu\n", id,
			    (unsigned long long)k->handoffs_timed_out);
	evbuffer_add_printf(b, "ringsteer_gateway_handoffs_total{gateway=\"%s\",result=\"abandoned\"} %llu\n", id,
			    (unsigned long long)k->handoffs_abandoned);
	family(b, "ringsteer_gateway_rejects_total", "counter", "Connections refused, by reason.");
	for (int r = 0; r < GW_REJECT_COUNT; r++)
		evbuffer_add_printf(b, "ringsteer_gateway_rejects_total{gateway=\"%s\",reason=\"%s\"} %llu\n", id,
				    reject_labels[r], (unsigned long long)k->rejects[r]);
	family(b, "ringsteer_gateway_store_errors_total", "counter", "Store operations that failed.");
	evbuffer_add_printf(b, "ringsteer_gateway_store_errors_total{gateway=\"%s\"} %llu\n", id,
			    (unsigned long long)k->store_errors);
}

static void reply_text(struct evhttp_request *req, int code, const char *reason, const char *body)
{
	struct evbuffer *b = evbuffer_new();

	if (!b) {
		evhttp_send_error(req, HTTP_INTERNAL, NULL);
		return;
	}
	evbuffer_add(b, body, strlen(body));
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain; charset=utf-8");
	evhttp_send_reply(req, code, reason, b);
	evbuffer_free(b);
}

static void on_request(struct evhttp_request *req, void *arg)
{
	struct gateway *gw = arg;
	const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));

	if (path && strcmp(path, "/metrics") == 0) {
		struct evbuffer *b = evbuffer_new();

		if (!b) {
			evhttp_send_error(req, HTTP_INTERNAL, NULL);
			return;
		}
		render(gw, b);
		evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
				  "text/plain; version=0.0.4; charset=utf-8");
		evhttp_send_reply(req, HTTP_OK, "OK", b);
		evbuffer_free(b);
	} else if (path && strcmp(path, "/readyz") == 0) {
		if (gw->registered && !gw->draining && !gw->stopping)
			reply_text(req, HTTP_OK, "OK", "ready\n");
		else
			reply_text(req, 503, "Service Unavailable", gw->draining ? "draining\n" : "not registered\n");
	} else if (path && strcmp(path, "/healthz") == 0) {
		reply_text(req, HTTP_OK, "OK", "ok\n");
	} else {
		reply_text(req, HTTP_NOTFOUND, "Not Found", "not found\n");
	}
}

int gw_metrics_start(struct gateway *gw)
{
	struct sockaddr_storage ss;
	socklen_t len;
	evutil_socket_t fd;

	if (!gw->cfg.metrics)
		return 0;
	if (rs_endpoint_parse(gw->cfg.metrics, &ss, &len))
		return -EINVAL;
	gw->http = evhttp_new(gw->base);
	if (!gw->http)
		return -ENOMEM;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (evutil_make_listen_socket_reuseable(fd) < 0 || bind(fd, (struct sockaddr *)&ss, len) < 0 ||
	    listen(fd, 64) < 0) {
		int err = -errno;

		evutil_closesocket(fd);
		return err;
	}
	if (!evhttp_accept_socket_with_handle(gw->http, fd)) {
		evutil_closesocket(fd);
		return -ENOMEM;
	}
	evhttp_set_gencb(gw->http, on_request, gw);
	evhttp_set_allowed_methods(gw->http, EVHTTP_REQ_GET); /* others: 405 from libevent */
	return 0;
}
