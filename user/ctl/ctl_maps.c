/* ctl_maps.c - `ringsteerctl maps [--json] [--pin-dir DIR]`: decodes the
 * agent's pinned maps for this network namespace (or DIR): the programs in
 * force, the Service addresses, the slots with their gateways and
 * connection counts, the pins, the bucket table's share per slot, the peer
 * endpoints, and the steering counters (per-CPU values summed); then
 * connect-time steering's counters, registered callers (rs_clients) and
 * target gateways (rs_targets), which an agent without it (older, or
 * --no-connect) does not pin: those are shown as absent, not an error.
 * Read-only: it opens the pins, never writes.  Nothing read from a map is
 * trusted: ids are cut at their size and printed only when well-formed,
 * slots are range-checked.  Exit status: 0, 1 when there is no agent state
 * (or a map cannot be read), 2 bad arguments. */
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "ctl_args.h"
#include "ctl_json.h"
#include "maps/map_read.h"
#include "ringsteer/proto.h"
#include "ringsteer_maps.h"

#define PIN_ROOT "/sys/fs/bpf/ringsteer"
#define PINS_SHOWN_MAX RS_PINS_MAX

static const char maps_usage[] =
	"NAME\n"
	"    ringsteerctl maps - the agent's kernel steering maps\n"
	"\n"
	"SYNOPSIS\n"
	"    ringsteerctl maps [--json] [--pin-dir DIR]\n"
	"\n"
	"DESCRIPTION\n"
	"    Decodes the kernel steering state the agent pinned for this network\n"
	"    namespace (" PIN_ROOT "/<netns inode>, or DIR): programs, Service\n"
	"    addresses, slots (gateway, generation, socket, connections), pins\n"
	"    (source -> slot), the bucket table's share per slot, peer endpoints and\n"
	"    the lookup counters; then connect-time steering: its connect counters,\n"
	"    the registered callers (netns or cgroup -> target slot, expiry) and the\n"
	"    target gateways (endpoint, generation, ready).  Maps an agent did not\n"
	"    pin (an older agent, or --no-connect) are shown as absent.  Read-only:\n"
	"    it opens the pins, never writes.\n"
	"\n"
	"OPTIONS\n"
	"    --json          print one JSON object\n"
	"    --pin-dir DIR   read the pins in DIR instead\n"
	"    --help          this text\n"
	"\n"
	"EXIT STATUS\n"
	"    0 success, 1 no agent state here (or a map cannot be read), 2 bad\n"
	"    arguments.\n";

struct maps {
	int services, sockets, pins, table, stats, slots, conns, endpoints;
	int conn_stats, clients, targets; /* connect-time steering; < 0: not pinned */
};

/* The kernel copies a map's whole value_size into the caller's buffer: a
 * pin of another layout (an agent of another version) must be refused
 * before it is read, not overrun our structs.  Returns 0, -EPROTO or -errno. */
static int check_layout(int fd, uint32_t type, uint32_t key_size, uint32_t value_size)
{
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len) < 0)
		return -errno;
	if (info.type != type || info.key_size != key_size || info.value_size != value_size)
		return -EPROTO;
	return 0;
}

static void format_addr(uint32_t family, const uint32_t addr[4], char *out, size_t cap)
{
	if (!inet_ntop(family == AF_INET6 ? AF_INET6 : AF_INET, addr, out, (socklen_t)cap))
		snprintf(out, cap, "?");
}

static void format_endpoint(const struct rs_endpoint_key *k, char *out, size_t cap)
{
	char a[INET6_ADDRSTRLEN];

	format_addr(k->family, k->addr, a, sizeof(a));
	snprintf(out, cap, k->family == AF_INET6 ? "[%s]:%u" : "%s:%u", a, k->port);
}

/* ---- the link facts ------------------------------------------------------ */

/* One pinned link's ids and its program's tag: a line of text, or an entry
 * of links (doc mode). */
static void print_link(const char *dir, const char *name, json_t *links)
{
	struct bpf_link_info li = { 0 };
	struct bpf_prog_info pi = { 0 };
	__u32 len = sizeof(li), plen = sizeof(pi);
	char tag[17] = "";
	int fd, pfd = -1;

	if (rs_map_open_pin(dir, name, &fd) == 0 && bpf_obj_get_info_by_fd(fd, &li, &len) == 0 &&
	    (pfd = bpf_prog_get_fd_by_id(li.prog_id)) >= 0 && bpf_obj_get_info_by_fd(pfd, &pi, &plen) == 0)
		for (int i = 0; i < 8; i++)
			snprintf(tag + 2 * i, 3, "%02x", pi.tag[i]);
	if (links)
		json_object_set_new(links, name,
				    json_pack("{s:I, s:I, s:s}", "link_id", (json_int_t)li.id, "prog_id", (json_int_t)li.prog_id,
					      "tag", tag));
	else
		printf("%-13s link %u  prog %u  tag %s\n", name, li.id, li.prog_id, tag[0] ? tag : "-");
	if (pfd >= 0)
		close(pfd);
	if (fd >= 0)
		close(fd);
}

/* ---- slots ------------------------------------------------------------------ */

struct slot_facts {
	struct rs_slot row;
	bool socket;
	uint64_t established, closed;
	uint32_t buckets;
};

/* Every slot's row, socket, connection counts and share of the bucket
 * table; none_buckets: the buckets that name no slot (all of them when no
 * table is swapped in yet).  A slot's row that cannot be read is an error;
 * counts that cannot be read are 0. */
static int read_slots(const struct maps *m, struct slot_facts *s, uint32_t *none_buckets)
{
	uint32_t *buckets = calloc(RS_TABLE_SIZE, sizeof(*buckets));
	int err = 0;

	if (!buckets)
		return -ENOMEM;
	for (uint32_t i = 0; i < RS_SLOTS_MAX; i++) {
		struct rs_conn_counts c;

		memset(&s[i], 0, sizeof(s[i]));
		err = rs_map_slot(m->slots, i, &s[i].row);
		if (err)
			goto cleanup;
		s[i].socket = rs_map_slot_socket(m->sockets, i, NULL) == 1;
		(void)rs_map_slot_counts(m->conns, i, &c); /* zeros when unreadable */
		s[i].established = c.established;
		s[i].closed = c.closed;
	}
	*none_buckets = 0;
	if (rs_map_table(m->table, buckets) == 0) {
		for (uint32_t b = 0; b < RS_TABLE_SIZE; b++) {
			if (buckets[b] < RS_SLOTS_MAX)
				s[buckets[b]].buckets++;
			else
				(*none_buckets)++;
		}
	} else {
		*none_buckets = RS_TABLE_SIZE; /* no table swapped in yet */
	}
cleanup:
	free(buckets);
	return err;
}

static const char *slot_gateway(const struct slot_facts *s, uint32_t slot)
{
	if (slot >= RS_SLOTS_MAX || s[slot].row.state != RS_SLOT_REGISTERED)
		return "";
	return s[slot].row.gateway;
}

/* Printable id or "?" (a map is not trusted to hold text). */
static const char *safe_id(const char *id)
{
	return id[0] == '\0' || rs_proto_member_id_ok(id) ? id : "?";
}

/* ---- connect-time steering ------------------------------------------------ */

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
	format_endpoint(&k, out, cap);
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

/* names[i]: counters[i] for i < n, as a JSON object. */
static json_t *counters_json(const char *const *names, const uint64_t *counters, int n)
{
	json_t *o = json_object();

	for (int i = 0; o && i < n; i++)
		json_object_set_new(o, names[i], json_integer((json_int_t)counters[i]));
	return o;
}

static void print_conn_stats(const struct maps *m, json_t *doc)
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
		json_object_set_new(doc, "connects", counters_json(names, st, RS_CSTAT_COUNT));
	} else {
		printf("connects");
		for (int i = 0; i < RS_CSTAT_COUNT; i++)
			printf("  %s %" PRIu64, names[i], st[i]);
		printf("\n");
	}
}

static void print_clients(const struct maps *m, json_t *doc, const struct rs_target *targets)
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
							      safe_id(client_gateway(targets, &c)), "expired", expired,
							      "expires_in_ms", (json_int_t)left_ms));
		} else {
			const char *gw = safe_id(client_gateway(targets, &c));
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
							      "gateway", safe_id(t->gateway), "family",
							      family_name(t->family), "endpoint", endpoint, "gen",
							      (json_int_t)t->gen, "ready", t->ready != 0));
		} else {
			printf("%-6u %-32.32s %-6s %-46s %-6u %s\n", i, t->gateway[0] ? safe_id(t->gateway) : "-",
			       family_name(t->family), endpoint, t->gen, t->ready ? "yes" : "no");
		}
	}
}

/* The connect-time section: each map printed, or shown absent when the
 * agent did not pin it. */
static int print_connect(const struct maps *m, json_t *doc)
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

/* ---- the steering maps ---------------------------------------------------- */

static void print_services(const struct maps *m, json_t *doc)
{
	struct rs_endpoint_key key, next;
	bool have = false;
	json_t *list = NULL;

	if (doc)
		json_object_set_new(doc, "services", list = json_array());
	else
		printf("\nservices\n");
	for (int guard = 0; guard < RS_SERVICES_MAX && bpf_map_get_next_key(m->services, have ? &key : NULL, &next) == 0;
	     guard++) {
		struct rs_service v = { 0 };
		char text[80];

		key = next;
		have = true;
		bpf_map_lookup_elem(m->services, &key, &v);
		format_endpoint(&key, text, sizeof(text));
		if (doc)
			json_array_append_new(list, json_pack("{s:s, s:I}", "endpoint", text, "index", (json_int_t)v.index));
		else
			printf("  %-44s index %u\n", text, v.index);
	}
}

static void print_slots(const struct slot_facts *s, uint32_t none_buckets, json_t *doc)
{
	json_t *list = NULL;

	if (doc)
		json_object_set_new(doc, "slots", list = json_array());
	else
		printf("\n%-5s %-32s %-6s %-7s %-8s %-11s %-8s %s\n", "SLOT", "GATEWAY", "GEN", "SOCKET", "BUCKETS",
		       "ESTABLISHED", "CLOSED", "OPEN");
	for (uint32_t i = 0; i < RS_SLOTS_MAX; i++) {
		const struct slot_facts *f = &s[i];
		uint64_t open = f->established >= f->closed ? f->established - f->closed : 0;

		if (f->row.state != RS_SLOT_REGISTERED && !f->socket && !f->buckets)
			continue;
		if (doc)
			json_array_append_new(
				list, json_pack("{s:I, s:s, s:b, s:I, s:b, s:I, s:I, s:I, s:I, s:I}", "slot", (json_int_t)i,
						"gateway", safe_id(f->row.gateway), "registered",
						f->row.state == RS_SLOT_REGISTERED, "gen", (json_int_t)f->row.gen, "socket",
						f->socket, "cookie", (json_int_t)f->row.cookie, "buckets",
						(json_int_t)f->buckets, "established", (json_int_t)f->established, "closed",
						(json_int_t)f->closed, "open", (json_int_t)open));
		else
			printf("%-5u %-32.32s %-6u %-7s %-8u %-11" PRIu64 " %-8" PRIu64 " %" PRIu64 "\n", i,
			       f->row.state == RS_SLOT_REGISTERED ? safe_id(f->row.gateway) : "(free)", f->row.gen,
			       f->socket ? "yes" : "no", f->buckets, f->established, f->closed, open);
	}
	if (!doc)
		printf("table: %u of %u buckets name no slot\n", none_buckets, RS_TABLE_SIZE);
}

static void print_pins(const struct maps *m, const struct slot_facts *s, json_t *doc)
{
	struct rs_source_key key, next;
	bool have = false;
	json_t *list = NULL;

	if (doc)
		json_object_set_new(doc, "pins", list = json_array());
	else
		printf("\n%-40s %-5s %s\n", "PINNED SOURCE", "SLOT", "GATEWAY");
	for (long guard = 0; guard < PINS_SHOWN_MAX && bpf_map_get_next_key(m->pins, have ? &key : NULL, &next) == 0;
	     guard++) {
		struct rs_pin p = { RS_SLOT_NONE };
		char text[INET6_ADDRSTRLEN];

		key = next;
		have = true;
		if (bpf_map_lookup_elem(m->pins, &key, &p) < 0)
			continue;
		format_addr(key.family, key.addr, text, sizeof(text));
		if (doc)
			json_array_append_new(list, json_pack("{s:s, s:I, s:s, s:I}", "source", text, "slot",
							      (json_int_t)p.slot, "gateway", safe_id(slot_gateway(s, p.slot)),
							      "bucket", (json_int_t)(rs_source_hash(&key) & RS_TABLE_MASK)));
		else
			printf("%-40s %-5u %s\n", text, p.slot, safe_id(slot_gateway(s, p.slot)));
	}
}

static void print_endpoints(const struct maps *m, const struct slot_facts *s, json_t *doc)
{
	struct rs_endpoint_key key, next;
	bool have = false;
	json_t *list = NULL;

	if (doc)
		json_object_set_new(doc, "endpoints", list = json_array());
	else
		printf("\n%-46s %-5s %s\n", "PEER ENDPOINT", "SLOT", "GATEWAY");
	for (int guard = 0; guard < RS_ENDPOINTS_MAX && bpf_map_get_next_key(m->endpoints, have ? &key : NULL, &next) == 0;
	     guard++) {
		struct rs_endpoint_slot e = { RS_SLOT_NONE };
		char text[80];

		key = next;
		have = true;
		if (bpf_map_lookup_elem(m->endpoints, &key, &e) < 0)
			continue;
		format_endpoint(&key, text, sizeof(text));
		if (doc)
			json_array_append_new(list, json_pack("{s:s, s:I}", "endpoint", text, "slot", (json_int_t)e.slot));
		else
			printf("%-46s %-5u %s\n", text, e.slot, safe_id(slot_gateway(s, e.slot)));
	}
}

static void print_lookups(const struct maps *m, uint32_t none_buckets, json_t *doc)
{
	static const char *const names[RS_STAT_COUNT] = { "lookups", "pinned", "table", "miss", "assign_error",
							  "none", "pin_stale" };
	uint64_t stats[RS_STAT_COUNT];
	json_t *o;

	(void)rs_map_percpu_sum(m->stats, RS_STAT_COUNT, stats); /* zeros when unreadable */
	if (doc) {
		o = counters_json(names, stats, RS_STAT_COUNT);
		if (o)
			json_object_set_new(o, "table_empty_buckets", json_integer(none_buckets));
		json_object_set_new(doc, "lookups", o);
		return;
	}
	printf("\nlookups");
	for (int i = 0; i < RS_STAT_COUNT; i++)
		printf("  %s %" PRIu64, names[i], stats[i]);
	printf("\n");
}

/* Every section in order, as text or (json) as one document. */
static int print_all(const char *dir, const struct maps *m, bool json)
{
	struct slot_facts *s = calloc(RS_SLOTS_MAX, sizeof(*s));
	json_t *doc = NULL, *links = NULL;
	uint32_t none_buckets = 0;
	int err;

	if (!s)
		return -ENOMEM;
	err = read_slots(m, s, &none_buckets);
	if (err)
		goto cleanup;
	if (json) {
		links = json_object();
		doc = json_pack("{s:o, s:o}", "pin_dir", ctl_json_text(dir), "links", links);
		if (!doc) {
			err = -ENOMEM;
			goto cleanup;
		}
	} else {
		printf("pin dir       %s\n", dir);
	}
	print_link(dir, "link_steer", links);
	print_link(dir, "link_sockops", links);
	print_services(m, doc);
	print_slots(s, none_buckets, doc);
	print_pins(m, s, doc);
	print_endpoints(m, s, doc);
	print_lookups(m, none_buckets, doc);
	err = print_connect(m, doc);
	if (!err && doc) {
		err = ctl_json_print(stdout, doc);
		doc = NULL; /* printed and released */
	}
cleanup:
	json_decref(doc);
	free(s);
	return err;
}

/* --pin-dir DIR. */
static int on_pin_dir(void *ctx, int val, const char *arg)
{
	(void)val;
	*(const char **)ctx = arg;
	return -1;
}

int ctl_maps(int argc, char **argv)
{
	struct maps m = { -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1 };
	int *const fds[] = { &m.services, &m.sockets, &m.pins, &m.table, &m.stats, &m.slots, &m.conns, &m.endpoints };
	static const char *const names[] = { "rs_services", "rs_sockets", "rs_pins",  "rs_table",
					     "rs_stats",    "rs_slots",   "rs_conns", "rs_endpoints" };
	/* Pinned only by an agent with connect-time steering: absent is shown
	 * as such, not an error. */
	int *const optional_fds[] = { &m.conn_stats, &m.clients, &m.targets };
	static const char *const optional_names[] = { "rs_conn_stats", "rs_clients", "rs_targets" };
	static const struct {
		uint32_t type, key_size, value_size;
	} optional_layouts[] = {
		{ BPF_MAP_TYPE_PERCPU_ARRAY, sizeof(__u32), sizeof(__u64) },
		{ BPF_MAP_TYPE_HASH, sizeof(struct rs_client_key), sizeof(struct rs_client) },
		{ BPF_MAP_TYPE_ARRAY, sizeof(__u32), sizeof(struct rs_target) },
	};
	static const struct option own[] = {
		{ "pin-dir", required_argument, NULL, 'p' },
		{ 0 },
	};
	const char *pin_dir = NULL;
	const struct ctl_cmd_opts cmd = { .name = "maps",
					  .usage = maps_usage,
					  .shared = CTL_OPT_JSON,
					  .own = own,
					  .own_short = "",
					  .on_own = on_pin_dir,
					  .ctx = &pin_dir };
	struct ctl_opts o;
	char dir[4096];
	bool json;
	int err, rc;

	rc = ctl_parse_opts(&cmd, argc, argv, &o);
	if (rc >= 0)
		return rc;
	if (optind != argc)
		return ctl_usage_error("maps", "unexpected argument '%s' (try --help)", argv[optind]);
	json = o.json;
	rc = 1;
	if (pin_dir) {
		snprintf(dir, sizeof(dir), "%s", pin_dir);
	} else {
		struct stat st;

		if (stat("/proc/self/ns/net", &st) < 0) {
			perror("ringsteerctl maps: /proc/self/ns/net");
			return 1;
		}
		snprintf(dir, sizeof(dir), "%s/%lu", PIN_ROOT, (unsigned long)st.st_ino);
	}
	libbpf_set_print(NULL); /* its warnings would interleave with the listing */
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		err = rs_map_open_pin(dir, names[i], fds[i]);
		if (err) {
			fprintf(stderr, "ringsteerctl maps: no agent state at %s (%s: %s)\n", dir, names[i], strerror(-err));
			goto cleanup;
		}
	}
	for (size_t i = 0; i < sizeof(optional_names) / sizeof(optional_names[0]); i++) {
		err = rs_map_open_pin(dir, optional_names[i], optional_fds[i]);
		if (err == -ENOENT)
			continue;
		if (!err)
			err = check_layout(*optional_fds[i], optional_layouts[i].type, optional_layouts[i].key_size,
					   optional_layouts[i].value_size);
		if (err) {
			fprintf(stderr, "ringsteerctl maps: cannot read %s/%s: %s\n", dir, optional_names[i],
				err == -EPROTO ? "not the layout this ringsteerctl knows (an agent of another version?)"
					       : strerror(-err));
			goto cleanup;
		}
	}
	err = print_all(dir, &m, json);
	if (err) {
		fprintf(stderr, "ringsteerctl maps: cannot read %s: %s\n", dir, strerror(-err));
		goto cleanup;
	}
	rc = 0;
cleanup:
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (*fds[i] >= 0)
			close(*fds[i]);
	for (size_t i = 0; i < sizeof(optional_fds) / sizeof(optional_fds[0]); i++)
		if (*optional_fds[i] >= 0)
			close(*optional_fds[i]);
	return rc;
}
