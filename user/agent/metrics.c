/* SPDX-License-Identifier: Apache-2.0 */
/* metrics.c - the agent's /metrics in the Prometheus text format, read from
 * the maps at each scrape (the "bpf map exporter"): connections per local
 * gateway (sockops: established - closed), steering lookups by result
 * (per-CPU rs_stats summed), map fill, registrations and syncs; with
 * connect-time steering loaded, its connects by result (per-CPU
 * rs_conn_stats summed), the registered supervisors and their targets.
 * Label sets are bounded: one gateway label per slot or target slot (ids
 * are checked before they are printed, so no escaping is needed), fixed
 * result and reason values. */
#include <errno.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include "agent_run.h"
#include "util/http.h"
#include "ringsteer/proto.h"

/* Connect-time steering is optional (--no-connect, an older kernel): its
 * families appear only when its programs are loaded. */
static bool connect_loaded(const struct agent *a)
{
	return a->k.maps.conn_stats >= 0;
}

static uint32_t targets_used(const struct agent *a)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < RS_TARGETS_MAX; i++)
		n += a->targets[i].gateway[0] != '\0';
	return n;
}

static void render_connections(const struct agent *a, struct evbuffer *b)
{
	const struct agent_maps *m = &a->k.maps;
	uint32_t registered = 0, sockets = 0;

	rs_metrics_family(b, "ringsteer_agent_connections", "gauge",
	       "Open connections accepted by each local gateway's registered sockets (sockops).");
	for (uint32_t i = 0; i < RS_SLOTS_MAX; i++) {
		struct rs_slot s;
		struct rs_conn_counts c;

		if (rs_map_slot(m->slots, i, &s) || s.state != RS_SLOT_REGISTERED || !rs_proto_member_id_ok(s.gateway))
			continue;
		registered++;
		sockets += rs_map_slot_socket(m->sockets, i, NULL) == 1;
		if (rs_map_slot_counts(m->conns, i, &c))
			continue;
		evbuffer_add_printf(b, "ringsteer_agent_connections{gateway=\"%s\"} %llu\n", s.gateway,
				    (unsigned long long)(c.established >= c.closed ? c.established - c.closed : 0));
	}
	rs_metrics_family(b, "ringsteer_agent_connections_accepted_total", "counter",
	       "Connections each local gateway's registered sockets accepted (sockops).");
	for (uint32_t i = 0; i < RS_SLOTS_MAX; i++) {
		struct rs_slot s;
		struct rs_conn_counts c;

		if (rs_map_slot(m->slots, i, &s) || s.state != RS_SLOT_REGISTERED || !rs_proto_member_id_ok(s.gateway) ||
		    rs_map_slot_counts(m->conns, i, &c))
			continue;
		evbuffer_add_printf(b, "ringsteer_agent_connections_accepted_total{gateway=\"%s\"} %llu\n", s.gateway,
				    (unsigned long long)c.established);
	}
	rs_metrics_family(b, "ringsteer_agent_map_entries", "gauge", "Entries in each steering map.");
	evbuffer_add_printf(b, "ringsteer_agent_map_entries{map=\"rs_slots\"} %u\n", registered);
	evbuffer_add_printf(b, "ringsteer_agent_map_entries{map=\"rs_sockets\"} %u\n", sockets);
	evbuffer_add_printf(b, "ringsteer_agent_map_entries{map=\"rs_services\"} %ld\n",
			    rs_map_count(m->services, sizeof(struct rs_endpoint_key), RS_SERVICES_MAX));
	evbuffer_add_printf(b, "ringsteer_agent_map_entries{map=\"rs_pins\"} %ld\n",
			    rs_map_count(m->pins, sizeof(struct rs_source_key), RS_PINS_MAX));
	evbuffer_add_printf(b, "ringsteer_agent_map_entries{map=\"rs_endpoints\"} %ld\n",
			    rs_map_count(m->endpoints, sizeof(struct rs_endpoint_key), RS_ENDPOINTS_MAX));
	/* Here, not with the other connect-time families: a family's samples
	 * must be contiguous. */
	if (connect_loaded(a)) {
		evbuffer_add_printf(b, "ringsteer_agent_map_entries{map=\"rs_clients\"} %ld\n",
				    rs_map_count(m->clients, sizeof(struct rs_client_key), RS_CLIENTS_MAX));
		evbuffer_add_printf(b, "ringsteer_agent_map_entries{map=\"rs_targets\"} %u\n", targets_used(a));
	}
}

/* Member registration results that can happen (member_server.c,
 * member_key.c, members.c): always printed, so the label set is fixed. */
static const enum rs_agent_reg_reason member_reasons[] = {
	RS_AGENT_REG_OK,      RS_AGENT_REG_MALFORMED,   RS_AGENT_REG_BAD_VERSION, RS_AGENT_REG_BAD_ID,
	RS_AGENT_REG_TIMEOUT, RS_AGENT_REG_BUSY,        RS_AGENT_REG_INTERNAL,    RS_AGENT_REG_NO_KEY,
	RS_AGENT_REG_OUTSIDE, RS_AGENT_REG_CALLER_GONE, RS_AGENT_REG_KEY_IN_USE,  RS_AGENT_REG_FULL,
	RS_AGENT_REG_RATE_LIMITED, RS_AGENT_REG_UID_FULL,
};

static bool member_reason_listed(unsigned r)
{
	for (size_t i = 0; i < sizeof(member_reasons) / sizeof(member_reasons[0]); i++)
		if (member_reasons[i] == r)
			return true;
	return false;
}

/* Connect-time steering: what the kernel did with connects (rs_conn_stats),
 * who is registered, where they are sent. */
static void render_connect(const struct agent *a, struct evbuffer *b)
{
	static const struct {
		enum rs_conn_stat stat;
		const char *label;
	} results[] = {
		{ RS_CSTAT_STEERED_NETNS, "steered_netns" }, { RS_CSTAT_STEERED_CGROUP, "steered_cgroup" },
		{ RS_CSTAT_MISS, "miss" }, { RS_CSTAT_EXPIRED, "expired" }, { RS_CSTAT_TARGET_DOWN, "target_down" },
	};
	uint64_t st[RS_CSTAT_COUNT];
	bool have_stats = rs_map_percpu_sum(a->k.maps.conn_stats, RS_CSTAT_COUNT, st) == 0;

	rs_metrics_family(b, "ringsteer_agent_connect_lookups_total", "counter",
			  "TCP connects to a Service address seen by connect-time steering (each counted once in "
			  "ringsteer_agent_connects_total by result).");
	if (have_stats)
		evbuffer_add_printf(b, "ringsteer_agent_connect_lookups_total %llu\n",
				    (unsigned long long)st[RS_CSTAT_LOOKUPS]);
	rs_metrics_family(b, "ringsteer_agent_connects_total", "counter",
			  "TCP connects to a Service address, by result (steered_netns, steered_cgroup: rewritten to "
			  "the caller's gateway; miss: caller not registered; expired: its entry was not refreshed; "
			  "target_down: its target not ready). Untouched connects go through the Service.");
	for (size_t i = 0; have_stats && i < sizeof(results) / sizeof(results[0]); i++)
		evbuffer_add_printf(b, "ringsteer_agent_connects_total{result=\"%s\"} %llu\n", results[i].label,
				    (unsigned long long)st[results[i].stat]);
	rs_metrics_family(b, "ringsteer_agent_getpeername_restored_total", "counter",
			  "getpeername() calls on steered sockets answered with the Service address dialed.");
	if (have_stats)
		evbuffer_add_printf(b, "ringsteer_agent_getpeername_restored_total %llu\n",
				    (unsigned long long)st[RS_CSTAT_PEERNAME]);

	rs_metrics_family(b, "ringsteer_agent_members", "gauge", "Supervisors registered for connect-time steering.");
	evbuffer_add_printf(b, "ringsteer_agent_members %zu\n", a->n_members);
	rs_metrics_family(b, "ringsteer_agent_member_registrations_total", "counter",
			  "Supervisor registrations answered, by result (ok, or the reason refused).");
	for (unsigned r = 0; r < RS_AGENT_REG_REASON_COUNT; r++)
		/* A reason outside the list is printed once it happens (bounded
		 * by the enum), rather than counted and hidden. */
		if (member_reason_listed(r) || a->member_results[r])
			evbuffer_add_printf(b, "ringsteer_agent_member_registrations_total{result=\"%s\"} %llu\n",
					    rs_agent_reg_reason_name(r), (unsigned long long)a->member_results[r]);
	rs_metrics_family(b, "ringsteer_agent_members_gone_total", "counter",
			  "Supervisor registrations ended by the supervisor (its link closed).");
	evbuffer_add_printf(b, "ringsteer_agent_members_gone_total %llu\n",
			    (unsigned long long)a->counters.members_gone);
	rs_metrics_family(b, "ringsteer_agent_member_steer_late_total", "counter",
			  "Member registrations answered before the store chose their target (it did not answer in time).");
	evbuffer_add_printf(b, "ringsteer_agent_member_steer_late_total %llu\n",
			    (unsigned long long)a->counters.member_steer_late);
	rs_metrics_family(b, "ringsteer_agent_member_reservations_total", "counter",
			  "Pending reservations the agent's steers wrote, taken back: replaced (a newer registration "
			  "from the same key), swept (unclaimed at their end), claimed (the member arrived: nothing "
			  "to take), failed (the store refused; it ends by itself).");
	evbuffer_add_printf(b, "ringsteer_agent_member_reservations_total{result=\"replaced\"} %llu\n",
			    (unsigned long long)a->counters.reservations_replaced);
	evbuffer_add_printf(b, "ringsteer_agent_member_reservations_total{result=\"swept\"} %llu\n",
			    (unsigned long long)a->counters.reservations_swept);
	evbuffer_add_printf(b, "ringsteer_agent_member_reservations_total{result=\"claimed\"} %llu\n",
			    (unsigned long long)a->counters.reservations_claimed);
	evbuffer_add_printf(b, "ringsteer_agent_member_reservations_total{result=\"failed\"} %llu\n",
			    (unsigned long long)a->counters.reservations_failed);
	rs_metrics_family(b, "ringsteer_agent_member_clients_full_total", "counter",
			  "rs_clients writes refused because the map was full (that caller goes through the Service).");
	evbuffer_add_printf(b, "ringsteer_agent_member_clients_full_total %llu\n",
			    (unsigned long long)a->counters.clients_full);

	rs_metrics_family(b, "ringsteer_agent_connect_below_cgroups", "gauge",
			  "Cgroups directly below the steered one carrying ringsteer's own connect4/6 (run before a "
			  "socket-LB attached to the steered cgroup); 0 with --no-below.");
	evbuffer_add_printf(b, "ringsteer_agent_connect_below_cgroups %zu\n", agent_below_attached(&a->k));
	rs_metrics_family(b, "ringsteer_agent_connect_below_failures_total", "counter",
			  "Cgroups directly below the steered one where connect4/6 could not be attached (each counted "
			  "once; retried at every sync; their callers are left to the steered cgroup's programs).");
	evbuffer_add_printf(b, "ringsteer_agent_connect_below_failures_total %llu\n",
			    (unsigned long long)a->k.below_failures);

	/* One sample per used slot: members.c keeps one slot per gateway, so
	 * a gateway label never repeats. */
	rs_metrics_family(b, "ringsteer_agent_connect_targets", "gauge",
			  "Gateways registered supervisors are sent to (1 per target slot); ready=0: not steered to "
			  "(gone, draining, or not yet confirmed by a sync).");
	for (uint32_t i = 0; i < RS_TARGETS_MAX; i++) {
		const struct agent_target *t = &a->targets[i];

		if (!t->gateway[0] || !rs_proto_member_id_ok(t->gateway))
			continue;
		evbuffer_add_printf(b, "ringsteer_agent_connect_targets{gateway=\"%s\",ready=\"%d\"} 1\n", t->gateway,
				    t->ready ? 1 : 0);
	}
}

/* Which of the optional kernel features this node's kernel has: on 0, the
 * agent runs without it as docs/KERNEL.md's feature table says. */
static void render_features(const struct agent *a, struct evbuffer *b)
{
	rs_metrics_family(b, "ringsteer_agent_kernel_feature", "gauge",
			  "1 when the kernel has the feature, 0 when the agent does without it (docs/KERNEL.md).");
	for (int f = 0; f < AGENT_FEATS; f++)
		evbuffer_add_printf(b, "ringsteer_agent_kernel_feature{feature=\"%s\"} %d\n", agent_feature_name(f),
				    a->k.feat.has[f] ? 1 : 0);
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
	render_features(a, b);
	have_stats = rs_map_percpu_sum(a->k.maps.stats, RS_STAT_COUNT, st) == 0;
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
	if (connect_loaded(a))
		render_connect(a, b);
	rs_metrics_family(b, "ringsteer_agent_pins", "gauge", "Pins written by the last sync, by origin.");
	evbuffer_add_printf(b, "ringsteer_agent_pins{origin=\"session\"} %u\n", a->pins_live);
	evbuffer_add_printf(b, "ringsteer_agent_pins{origin=\"precomputed\"} %u\n", a->pins_precomputed);
	rs_metrics_family(b, "ringsteer_agent_known_members", "gauge",
			  "Supervisors remembered for precomputed pins (seen within --forget-after).");
	evbuffer_add_printf(b, "ringsteer_agent_known_members %zu\n", a->known.n);
	rs_metrics_family(b, "ringsteer_agent_known_forgotten_total", "counter",
			  "Known supervisors forgotten: not seen in a session row or a registration within --forget-after.");
	evbuffer_add_printf(b, "ringsteer_agent_known_forgotten_total %llu\n", (unsigned long long)a->known.forgotten);
	rs_metrics_family(b, "ringsteer_agent_syncs_total", "counter",
			  "Sync passes (store read and map writes), by result.");
	evbuffer_add_printf(b, "ringsteer_agent_syncs_total{result=\"ok\"} %llu\n", (unsigned long long)k->syncs_ok);
	evbuffer_add_printf(b, "ringsteer_agent_syncs_total{result=\"error\"} %llu\n",
			    (unsigned long long)k->syncs_failed);
	rs_metrics_family(b, "ringsteer_agent_sync_skipped_total", "counter",
			  "Sync ticks skipped: the previous store read was still running (a slow or stuck store).");
	evbuffer_add_printf(b, "ringsteer_agent_sync_skipped_total %llu\n", (unsigned long long)k->syncs_skipped);
	rs_metrics_family(b, "ringsteer_agent_service_resolve_failures_total", "counter",
			  "Lookups of a --service NAME:PORT that failed (the addresses in force were kept).");
	evbuffer_add_printf(b, "ringsteer_agent_service_resolve_failures_total %llu\n",
			    (unsigned long long)k->service_resolve_failures);
	rs_metrics_family(b, "ringsteer_agent_service_updates_total", "counter",
			  "Times a --service name's addresses changed and the service maps followed.");
	evbuffer_add_printf(b, "ringsteer_agent_service_updates_total %llu\n", (unsigned long long)k->service_updates);
	rs_metrics_family(b, "ringsteer_agent_store_busy_seconds", "gauge",
			  "How long the store call running now has taken (0: idle).");
	evbuffer_add_printf(b, "ringsteer_agent_store_busy_seconds %.3f\n",
			    a->worker ? (double)rs_store_worker_busy_ms(a->worker) / 1000.0 : 0.0);
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
