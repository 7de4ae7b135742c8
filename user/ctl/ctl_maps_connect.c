/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_maps_connect.c - `ringsteerctl maps`, its connect-time section:
 * connect-time steering's counters (rs_conn_stats), the registered callers
 * (rs_clients: netns or cgroup -> target slot, expiry, as the kernel would
 * judge it now) and the target gateways (rs_targets), which an agent
 * without it (older, or --no-connect) does not pin: those are shown as
 * absent, not an error.  Read-only; nothing read is trusted (ids shown
 * only when well-formed, slots range-checked, walks bounded). */
#include <bpf/bpf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "ctl_json.h"
#include "ctl_maps.h"
#include "maps/map_read.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts); /* the clock of bpf_ktime_get_ns and rs_client.expires_ns */
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const char *family_name(uint32_t family)
{
	return family == AF_INET ? "ipv4" : family == AF_INET6 ? "ipv6" : "-";
}

static const char *client_kind_name(uint32_t kind)
{
	return kind == RS_CLIENT_NETNS ? "netns" : kind == RS_CLIENT_CGROUP ? "cgroup" : "?";
}

/* A target slot the datapath may look at: named by a gateway, or ready. */
static bool target_used(const struct rs_target *t)
{
	return t->gateway[0] != '\0' || t->ready;
}

/* The target's endpoint as ADDR:PORT, or "-" when it has none (a slot not
 * ready carries no address). */
static void format_target(const struct rs_target *t, char *out, size_t cap)
{
	struct rs_endpoint_key k = { .family = t->family, .port = t->port };

	if (t->family != AF_INET && t->family != AF_INET6) {
		snprintf(out, cap, "-");
		return;
	}
	memcpy(k.addr, t->addr, sizeof(k.addr));
	ctl_maps_format_endpoint(&k, out, cap);
}

/* Every slot of rs_targets into t[RS_TARGETS_MAX], ids cut at their size;
 * a slot that cannot be read is left zeroed (unused). */
static void read_targets(int fd, struct rs_target *t)
{
	for (uint32_t i = 0; i < RS_TARGETS_MAX; i++) {
		if (bpf_map_lookup_elem(fd, &i, &t[i]) < 0)
			memset(&t[i], 0, sizeof(t[i]));
		t[i].gateway[RS_GATEWAY_ID_SIZE - 1] = '\0';
	}
}

/* The gateway a client entry sends to: its slot's, if the slot still has
 * the entry's generation (else the kernel ignores the entry). */
static const char *client_gateway(const struct rs_target *t, const struct rs_client *c)
{
	if (!t || c->slot >= RS_TARGETS_MAX || t[c->slot].gen != c->gen)
		return "";
	return t[c->slot].gateway;
}

/* key null in doc, or a line of text (gap: a blank line first, as before
 * a table). */
static void print_absent(json_t *doc, const char *key, const char *map, bool gap)
{
	if (doc)
		json_object_set_new(doc, key, json_null());
	else
		printf("%s%s: absent (no %s pin)\n", gap ? "\n" : "", key, map);
}

static void print_conn_stats(const struct ctl_maps *m, json_t *doc)
{
	static const char *const names[RS_CSTAT_COUNT] = { "lookups", "steered_netns", "steered_cgroup", "miss",
							   "expired", "target_down", "peername" };
	uint64_t st[RS_CSTAT_COUNT];

	if (m->conn_stats < 0) {
		print_absent(doc, "connects", "rs_conn_stats", false);
		return;
	}
	(void)rs_map_percpu_sum(m->conn_stats, RS_CSTAT_COUNT, st); /* zeros when unreadable */
	if (doc) {
		json_object_set_new(doc, "connects", ctl_maps_counters(names, st, RS_CSTAT_COUNT));
	} else {
		printf("connects");
		for (int i = 0; i < RS_CSTAT_COUNT; i++)
			printf("  %s %" PRIu64, names[i], st[i]);
		printf("\n");
	}
}

static void print_clients(const struct ctl_maps *m, json_t *doc, const struct rs_target *targets)
{
	struct rs_client_key key, next;
	uint64_t now = mono_ns();
	bool have = false;
	json_t *list = NULL;

	if (m->clients < 0) {
		print_absent(doc, "clients", "rs_clients", true);
		return;
	}
	if (doc)
		json_object_set_new(doc, "clients", list = json_array());
	else
		printf("\n%-28s %-6s %-6s %-32s %s\n", "CLIENT (KIND:ID)", "SLOT", "GEN", "GATEWAY", "EXPIRES");
	for (long guard = 0; guard < RS_CLIENTS_MAX && bpf_map_get_next_key(m->clients, have ? &key : NULL, &next) == 0;
	     guard++) {
		struct rs_client c;
		bool expired;
		uint64_t left_ms;

		key = next;
		have = true;
		if (bpf_map_lookup_elem(m->clients, &key, &c) < 0)
			continue; /* deleted since: the registration ended */
		expired = c.expires_ns < now; /* as the kernel compares */
		left_ms = expired ? 0 : (c.expires_ns - now) / 1000000u;
		if (doc) {
			json_array_append_new(list, json_pack("{s:s, s:I, s:I, s:I, s:s, s:b, s:I}", "kind",
							      client_kind_name(key.kind), "id", (json_int_t)key.id, "slot",
							      (json_int_t)c.slot, "gen", (json_int_t)c.gen, "gateway",
							      ctl_maps_safe_id(client_gateway(targets, &c)), "expired", expired,
							      "expires_in_ms", (json_int_t)left_ms));
		} else {
			const char *gw = ctl_maps_safe_id(client_gateway(targets, &c));
			char who[40], expires[32];

			snprintf(who, sizeof(who), "%s:%" PRIu64, client_kind_name(key.kind), (uint64_t)key.id);
			if (expired)
				snprintf(expires, sizeof(expires), "expired");
			else
				snprintf(expires, sizeof(expires), "in %" PRIu64 " ms", left_ms);
			printf("%-28s %-6u %-6u %-32.32s %s\n", who, c.slot, c.gen, gw[0] ? gw : "-", expires);
		}
	}
}

static void print_targets(json_t *doc, const struct rs_target *targets)
{
	json_t *list = NULL;

	if (!targets) {
		print_absent(doc, "targets", "rs_targets", true);
		return;
	}
	if (doc)
		json_object_set_new(doc, "targets", list = json_array());
	else
		printf("\n%-6s %-32s %-6s %-46s %-6s %s\n", "TARGET", "GATEWAY", "FAMILY", "ENDPOINT", "GEN", "READY");
	for (uint32_t i = 0; i < RS_TARGETS_MAX; i++) {
		const struct rs_target *t = &targets[i];
		char endpoint[80];

		if (!target_used(t))
			continue;
		format_target(t, endpoint, sizeof(endpoint));
		if (doc) {
			json_array_append_new(list, json_pack("{s:I, s:s, s:s, s:s, s:I, s:b}", "slot", (json_int_t)i,
							      "gateway", ctl_maps_safe_id(t->gateway), "family",
							      family_name(t->family), "endpoint", endpoint, "gen",
							      (json_int_t)t->gen, "ready", t->ready != 0));
		} else {
			printf("%-6u %-32.32s %-6s %-46s %-6u %s\n", i, t->gateway[0] ? ctl_maps_safe_id(t->gateway) : "-",
			       family_name(t->family), endpoint, t->gen, t->ready ? "yes" : "no");
		}
	}
}

/* The connect-time section: each map printed, or shown absent when the
 * agent did not pin it. */
int ctl_maps_print_connect(const struct ctl_maps *m, json_t *doc)
{
	struct rs_target *targets = NULL;

	if (m->targets >= 0) {
		targets = calloc(RS_TARGETS_MAX, sizeof(*targets));
		if (!targets)
			return -ENOMEM;
		read_targets(m->targets, targets);
	}
	if (!doc && m->conn_stats < 0 && m->clients < 0 && m->targets < 0) {
		printf("\nconnect-time steering: absent (no rs_conn_stats, rs_clients, rs_targets pins: an agent "
		       "without it, or run with --no-connect)\n");
		return 0;
	}
	if (!doc)
		printf("\nconnect-time steering\n");
	print_conn_stats(m, doc);
	print_clients(m, doc, targets);
	print_targets(doc, targets);
	free(targets);
	return 0;
}
