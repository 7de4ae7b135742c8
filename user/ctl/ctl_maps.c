/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_maps.c - `ringsteerctl maps [--json] [--pin-dir DIR]`: decodes the
 * agent's pinned maps for this network namespace (or DIR): the programs in
 * force, the Service addresses, the slots with their gateways and
 * connection counts, the pins, the bucket table's share per slot, the peer
 * endpoints, and the steering counters (per-CPU values summed); then
 * connect-time steering's maps (ctl_maps_connect.c).
 * Read-only: it opens the pins, never writes.  Nothing read from a map is
 * trusted: ids are cut at their size and printed only when well-formed,
 * slots are range-checked.  Exit status: 0, 1 when there is no agent state
 * (or a map cannot be read), 2 bad arguments. */
#include <arpa/inet.h> /* INET6_ADDRSTRLEN */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"
#include "ctl_args.h"
#include "ctl_json.h"
#include "ctl_maps.h"
#include "maps/map_read.h"
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
static int read_slots(const struct ctl_maps *m, struct slot_facts *s, uint32_t *none_buckets)
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

/* ---- the steering maps ---------------------------------------------------- */

static void print_services(const struct ctl_maps *m, json_t *doc)
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
		ctl_maps_format_endpoint(&key, text, sizeof(text));
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
						"gateway", ctl_maps_safe_id(f->row.gateway), "registered",
						f->row.state == RS_SLOT_REGISTERED, "gen", (json_int_t)f->row.gen, "socket",
						f->socket, "cookie", (json_int_t)f->row.cookie, "buckets",
						(json_int_t)f->buckets, "established", (json_int_t)f->established, "closed",
						(json_int_t)f->closed, "open", (json_int_t)open));
		else
			printf("%-5u %-32.32s %-6u %-7s %-8u %-11" PRIu64 " %-8" PRIu64 " %" PRIu64 "\n", i,
			       f->row.state == RS_SLOT_REGISTERED ? ctl_maps_safe_id(f->row.gateway) : "(free)", f->row.gen,
			       f->socket ? "yes" : "no", f->buckets, f->established, f->closed, open);
	}
	if (!doc)
		printf("table: %u of %u buckets name no slot\n", none_buckets, RS_TABLE_SIZE);
}

static void print_pins(const struct ctl_maps *m, const struct slot_facts *s, json_t *doc)
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
		ctl_maps_format_addr(key.family, key.addr, text, sizeof(text));
		if (doc)
			json_array_append_new(list, json_pack("{s:s, s:I, s:s, s:I}", "source", text, "slot",
							      (json_int_t)p.slot, "gateway", ctl_maps_safe_id(slot_gateway(s, p.slot)),
							      "bucket", (json_int_t)(rs_source_hash(&key) & RS_TABLE_MASK)));
		else
			printf("%-40s %-5u %s\n", text, p.slot, ctl_maps_safe_id(slot_gateway(s, p.slot)));
	}
}

static void print_endpoints(const struct ctl_maps *m, const struct slot_facts *s, json_t *doc)
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
		ctl_maps_format_endpoint(&key, text, sizeof(text));
		if (doc)
			json_array_append_new(list, json_pack("{s:s, s:I}", "endpoint", text, "slot", (json_int_t)e.slot));
		else
			printf("%-46s %-5u %s\n", text, e.slot, ctl_maps_safe_id(slot_gateway(s, e.slot)));
	}
}

static void print_lookups(const struct ctl_maps *m, uint32_t none_buckets, json_t *doc)
{
	static const char *const names[RS_STAT_COUNT] = { "lookups", "pinned", "table", "miss", "assign_error",
							  "none", "pin_stale" };
	uint64_t stats[RS_STAT_COUNT];
	json_t *o;

	(void)rs_map_percpu_sum(m->stats, RS_STAT_COUNT, stats); /* zeros when unreadable */
	if (doc) {
		o = ctl_maps_counters(names, stats, RS_STAT_COUNT);
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
static int print_all(const char *dir, const struct ctl_maps *m, bool json)
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
	err = ctl_maps_print_connect(m, doc);
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
	struct ctl_maps m = { -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1 };
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
