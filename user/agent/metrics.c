/* metrics.c - the agent's /metrics in the Prometheus text format, read from
 * the maps at each scrape (the "bpf map exporter"): connections per local
 * gateway (sockops: established - closed), steering lookups by result
 * (per-CPU rs_stats summed), map fill, registrations and syncs.  Label sets
 * are bounded: one gateway label per slot (ids are checked before they are
 * printed, so no escaping is needed), fixed result and reason values. */
#include <errno.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include "agent_run.h"
#include "ringsteer/http.h"
#include "ringsteer/proto.h"

static void render_connections(const struct agent *a, struct evbuffer *b)
{
	const struct agent_maps *m = &a->k.maps;
	uint32_t registered = 0, sockets = 0;

	rs_metrics_family(b, "ringsteer_agent_connections", "gauge",
	       "Open connections accepted by each local gateway's registered sockets (sockops).");
	for (uint32_t i = 0; i < RS_SLOTS_MAX; i++) {
		struct rs_slot s;
		struct rs_conn_counts c;

		if (agent_slot_read(m, i, &s) || s.state != RS_SLOT_REGISTERED || !rs_proto_member_id_ok(s.gateway))
			continue;
		registered++;
		sockets += agent_slot_socket(m, i, NULL) == 1;
		if (agent_slot_counts(m, i, &c))
			continue;
		evbuffer_add_printf(b, "ringsteer_agent_connections{gateway=\"%s\"} %llu\n", s.gateway,
				    (unsigned long long)(c.established >= c.closed ? c.established - c.closed : 0));
	}
	rs_metrics_family(b, "ringsteer_agent_connections_accepted_total", "counter",
	       "Connections each local gateway's registered sockets accepted (sockops).");
	for (uint32_t i = 0; i < RS_SLOTS_MAX; i++) {
		struct rs_slot s;
		struct rs_conn_counts c;

		if (agent_slot_read(m, i, &s) || s.state != RS_SLOT_REGISTERED || !rs_proto_member_id_ok(s.gateway) ||
		    agent_slot_counts(m, i, &c))
			continue;
		evbuffer_add_printf(b, "ringsteer_agent_connections_accepted_total{gateway=\"%s\"} %llu\n", s.gateway,
				    (unsigned long long)c.established);
	}
	rs_metrics_family(b, "ringsteer_agent_map_entries", "gauge", "Entries in each steering map.");
	evbuffer_add_printf(b, "ringsteer_agent_map_entries{map=\"rs_slots\"} %u\n", registered);
	evbuffer_add_printf(b, "ringsteer_agent_map_entries{map=\"rs_sockets\"} %u\n", sockets);
	evbuffer_add_printf(b, "ringsteer_agent_map_entries{map=\"rs_services\"} %ld\n",
			    agent_map_count(m->services, sizeof(struct rs_endpoint_key), RS_SERVICES_MAX));
	evbuffer_add_printf(b, "ringsteer_agent_map_entries{map=\"rs_pins\"} %ld\n",
			    agent_map_count(m->pins, sizeof(struct rs_source_key), RS_PINS_MAX));
	evbuffer_add_printf(b, "ringsteer_agent_map_entries{map=\"rs_endpoints\"} %ld\n",
			    agent_map_count(m->endpoints, sizeof(struct rs_endpoint_key), RS_ENDPOINTS_MAX));
}

static void render(const void *ctx, struct evbuffer *b)
{
	const struct agent *a = ctx;

	static const struct {
		enum rs_stat stat;
		const char *label;
	} results[] = {
		{ RS_STAT_PINNED, "pinned" }, { RS_STAT_TABLE, "table" }, { RS_STAT_MISS, "miss" },
		{ RS_STAT_ASSIGN_ERROR, "error" }, { RS_STAT_NONE, "none" },
	};
	const struct agent_counters *k = &a->counters;
	uint64_t st[RS_STAT_COUNT];
	bool have_stats;
	struct rs_agent_reg_stats reg = { 0 };

	render_connections(a, b);
	have_stats = agent_stats_read(&a->k.maps, st) == 0;
	rs_metrics_family(b, "ringsteer_agent_lookups_total", "counter",
	       "sk_lookup runs on a Service address, by result (pinned, table: steered; miss: the bucket's slot has "
	       "no socket; error: the kernel refused the socket; none: no slot).");
	for (size_t i = 0; have_stats && i < sizeof(results) / sizeof(results[0]); i++)
		evbuffer_add_printf(b, "ringsteer_agent_lookups_total{result=\"%s\"} %llu\n", results[i].label,
				    (unsigned long long)st[results[i].stat]);
	/* A family of its own, not a result: these runs are also counted
	 * under the table's result, and the results sum to the lookups. */
	rs_metrics_family(b, "ringsteer_agent_stale_pin_lookups_total", "counter",
			  "sk_lookup runs whose pin named a slot with no socket and fell back to the bucket table "
			  "(each also counted in ringsteer_agent_lookups_total by the table's result).");
	if (have_stats)
		evbuffer_add_printf(b, "ringsteer_agent_stale_pin_lookups_total %llu\n",
				    (unsigned long long)st[RS_STAT_PIN_STALE]);
	rs_metrics_family(b, "ringsteer_agent_pins", "gauge", "Pins written by the last sync, by origin.");
	evbuffer_add_printf(b, "ringsteer_agent_pins{origin=\"session\"} %u\n", a->pins_live);
	evbuffer_add_printf(b, "ringsteer_agent_pins{origin=\"precomputed\"} %u\n", a->pins_precomputed);
	rs_metrics_family(b, "ringsteer_agent_syncs_total", "counter",
			  "Sync passes (store read and map writes), by result.");
	evbuffer_add_printf(b, "ringsteer_agent_syncs_total{result=\"ok\"} %llu\n", (unsigned long long)k->syncs_ok);
	evbuffer_add_printf(b, "ringsteer_agent_syncs_total{result=\"error\"} %llu\n",
			    (unsigned long long)k->syncs_failed);
	rs_metrics_family(b, "ringsteer_agent_store_watching", "gauge",
			  "1 while the agent follows store change notifications (PostgreSQL), 0 while it polls.");
	evbuffer_add_printf(b, "ringsteer_agent_store_watching %d\n", a->watch_ev ? 1 : 0);
	rs_metrics_family(b, "ringsteer_agent_store_notifications_total", "counter",
			  "Store change notifications received.");
	evbuffer_add_printf(b, "ringsteer_agent_store_notifications_total %llu\n",
			    (unsigned long long)k->notifications);
	rs_metrics_family(b, "ringsteer_agent_table_swaps_total", "counter", "Bucket tables swapped in.");
	evbuffer_add_printf(b, "ringsteer_agent_table_swaps_total %llu\n", (unsigned long long)k->table_swaps);
	if (a->reg)
		rs_agent_reg_server_stats(a->reg, &reg);
	rs_metrics_family(b, "ringsteer_agent_registrations_total", "counter", "Gateway sockets registered.");
	evbuffer_add_printf(b, "ringsteer_agent_registrations_total %llu\n", (unsigned long long)reg.registered);
	rs_metrics_family(b, "ringsteer_agent_registration_refusals_total", "counter", "Registrations refused, by reason.");
	for (unsigned r = 1; r < RS_AGENT_REG_REASON_COUNT; r++)
		evbuffer_add_printf(b, "ringsteer_agent_registration_refusals_total{reason=\"%s\"} %llu\n",
				    rs_agent_reg_reason_name(r), (unsigned long long)reg.refused[r]);
	rs_metrics_family(b, "ringsteer_agent_info", "gauge", "The sk_lookup program in force (tag) and how this agent started.");
	evbuffer_add_printf(b, "ringsteer_agent_info{tag=\"%s\",start=\"%s\"} 1\n", a->k.tag,
			    agent_load_mode_name(a->k.mode));
}

static void on_request(struct evhttp_request *req, void *arg)
{
	const struct agent *a = arg;
	const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));

	if (path && strcmp(path, "/metrics") == 0) {
		rs_http_reply_metrics(req, render, a);
	} else if (path && strcmp(path, "/healthz") == 0) {
		rs_http_reply_text(req, HTTP_OK, "OK", "ok\n");
	} else {
		rs_http_reply_text(req, HTTP_NOTFOUND, "Not Found", "not found\n");
	}
}

int agent_metrics_start(struct agent *a)
{
	if (!a->cfg.metrics)
		return 0;
	return rs_http_serve(a->base, a->cfg.metrics, on_request, a, &a->http);
}
