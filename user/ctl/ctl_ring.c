/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_ring.c - `ringsteerctl ring`: the ring alone, for checking what any
 * OpenShell-compatible ring says, built from given ids (offline) or from
 * the store's live gateways (draining ones included: they stay on the ring,
 * as in the gateways' placement, they only take no one).
 *
 *   ring --gateways IDS owner|walk MEMBER   offline
 *   ring --store URL [owner|walk MEMBER]    live; without a verb, each
 *                                           gateway's share of the circle */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "ctl_args.h"
#include "ctl_json.h"
#include "ctl_ring_share.h"
#include "ctl_store.h"
#include "ctl_table.h"
#include "util/mstime.h"
#include "ringsteer/ring.h"
#include "ringsteer/store.h"

static const char ring_usage[] =
	"NAME\n"
	"    ringsteerctl ring - the consistent-hash ring of gateways\n"
	"\n"
	"SYNOPSIS\n"
	"    ringsteerctl ring --gateways ID[,ID...] [--json] owner MEMBER\n"
	"    ringsteerctl ring --gateways ID[,ID...] [--json] walk MEMBER\n"
	"    ringsteerctl ring --store URL [--json] [owner MEMBER | walk MEMBER]\n"
	"\n"
	"DESCRIPTION\n"
	"    Builds the ring (128 points per gateway id, SHA-256, OpenShell's ring)\n"
	"    from the given ids, or from the store's live gateways (draining ones\n"
	"    included, as in placement; the store is opened read-only).\n"
	"\n"
	"    owner  prints the gateway whose point follows MEMBER's on the ring\n"
	"    walk   prints every gateway once, in the order a clockwise walk from\n"
	"           MEMBER's point meets it, one per line\n"
	"\n"
	"    With --store and no verb, prints each live gateway's share of the\n"
	"    ring, sorted by id: ID, STATE, POINTS and SHARE, the percentage of\n"
	"    the 64-bit hash circle it owns (the arcs ending at its points), then\n"
	"    a footer line \"gateways=G  ideal=P%  total=T%\" (ideal = 100/G).\n"
	"\n"
	"OPTIONS\n"
	"    --gateways LIST   gateway ids, comma-separated\n"
	"    --store URL       the store (give --store or --gateways, not both)\n"
	"    --ttl MS          the gateways' --ttl: older rows are dead (default 15000)\n"
	"    --json            owner: {\"member\", \"owner\"}; walk: {\"member\",\n"
	"                      \"walk\": [...]}; shares: {\"gateways\": [{\"id\", \"state\",\n"
	"                      \"points\", \"share_percent\"}], \"count\", \"ideal_percent\",\n"
	"                      \"total_percent\"}\n"
	"    --help            this text\n"
	"\n"
	"EXIT STATUS\n"
	"    0 success, 1 the store cannot be read or has no live gateway (for\n"
	"    owner and walk), 2 bad arguments.\n"
	"\n"
	"EXAMPLES\n"
	"    ringsteerctl ring --gateways gw-a,gw-b,gw-c owner sup-17\n"
	"    ringsteerctl ring --store sqlite:/var/lib/ringsteer/ringsteer.db --json\n";

struct ring_args {
	struct ctl_opts o;  /* --gateways or --store, --ttl, --json */
	const char *verb;   /* "owner", "walk" or NULL (shares) */
	const char *member;
};

/* Returns -1 to go on, or the exit status: 0 after --help, 2 after a
 * usage error. */
static int parse_args(int argc, char **argv, struct ring_args *a)
{
	static const struct ctl_cmd_opts cmd = { .name = "ring",
						 .usage = ring_usage,
						 .shared = CTL_OPT_GATEWAYS | CTL_OPT_STORE | CTL_OPT_TTL | CTL_OPT_JSON };
	int rc;

	*a = (struct ring_args){ 0 };
	rc = ctl_parse_opts(&cmd, argc, argv, &a->o);
	if (rc >= 0)
		return rc;
	if (!a->o.gateways && !a->o.store)
		return ctl_usage_error("ring", "--gateways ID[,ID...] or --store URL is required");
	if (a->o.store && argc == optind)
		return -1; /* shares */
	if (argc - optind != 2)
		return ctl_usage_error("ring", "expected 'owner MEMBER' or 'walk MEMBER'");
	a->verb = argv[optind];
	a->member = argv[optind + 1];
	if (strcmp(a->verb, "owner") != 0 && strcmp(a->verb, "walk") != 0)
		return ctl_usage_error("ring", "unknown verb '%s' (owner or walk)", a->verb);
	if (ctl_check_member("ring", a->member))
		return 2;
	return -1;
}

/* Prints the owner of, or the walk from, a->member.  Returns 0 or -errno. */
static int print_verb(const struct ring_args *a, const struct rs_ring *ring)
{
	size_t n = rs_ring_gateway_count(ring);
	uint32_t *order;
	int got;

	if (strcmp(a->verb, "owner") == 0) {
		got = rs_ring_owner(ring, a->member);
		if (got < 0)
			return got;
		if (a->o.json) {
			(void)ctl_json_print(stdout, json_pack("{s:o, s:o}", "member", ctl_json_text(a->member), "owner",
							       ctl_json_text(rs_ring_gateway_id(ring, (size_t)got))));
		} else {
			puts(rs_ring_gateway_id(ring, (size_t)got));
		}
		return 0;
	}
	order = calloc(n ? n : 1, sizeof(*order));
	if (!order)
		return -ENOMEM;
	got = rs_ring_walk(ring, a->member, order, n);
	if (got < 0) {
		free(order);
		return got;
	}
	if (a->o.json) {
		json_t *walk = json_array();

		for (int i = 0; walk && i < got; i++)
			json_array_append_new(walk, ctl_json_text(rs_ring_gateway_id(ring, order[i])));
		(void)ctl_json_print(stdout, json_pack("{s:o, s:o}", "member", ctl_json_text(a->member), "walk", walk));
	} else {
		for (int i = 0; i < got; i++)
			puts(rs_ring_gateway_id(ring, order[i]));
	}
	free(order);
	return 0;
}

/* x rounded to 6 decimals, as the shares are shown. */
static double micro(double x)
{
	return round(x * 1e6) / 1e6;
}

/* Prints each live gateway's share; rows[i] is ring gateway i (both sorted
 * by id bytes).  Returns 0 or -ENOMEM. */
static int print_shares(const struct ring_args *a, const struct rs_ring *ring, const struct rs_gateway_row *rows)
{
	size_t n = rs_ring_gateway_count(ring);
	struct ctl_ring_share *shares = calloc(n ? n : 1, sizeof(*shares));
	double total = 0, ideal = n ? 100.0 / (double)n : 0;
	char id[CTL_TABLE_CELL_SIZE];
	int w_id = 2;

	if (!shares)
		return -ENOMEM;
	ctl_ring_shares(ring, shares);
	for (size_t g = 0; g < n; g++) {
		total += shares[g].fraction * 100;
		ctl_table_printable(id, sizeof(id), rows[g].id);
		if ((int)strlen(id) > w_id)
			w_id = (int)strlen(id);
	}
	if (a->o.json) {
		json_t *gateways = json_array();

		for (size_t g = 0; gateways && g < n; g++)
			json_array_append_new(gateways,
					      json_pack("{s:o, s:s, s:I, s:f}", "id", ctl_json_text(rows[g].id), "state",
							rows[g].state == RS_GATEWAY_DRAINING ? "draining" : "serving", "points",
							(json_int_t)shares[g].points, "share_percent",
							micro(shares[g].fraction * 100)));
		(void)ctl_json_print(stdout, json_pack("{s:o, s:I, s:f, s:f}", "gateways", gateways, "count", (json_int_t)n,
						       "ideal_percent", micro(ideal), "total_percent", micro(total)));
	} else {
		printf("%-*s  %-8s  %6s  %7s\n", w_id, "ID", "STATE", "POINTS", "SHARE");
		for (size_t g = 0; g < n; g++) {
			ctl_table_printable(id, sizeof(id), rows[g].id);
			printf("%-*s  %-8s  %6u  %6.2f%%\n", w_id, id,
			       rows[g].state == RS_GATEWAY_DRAINING ? "draining" : "serving", shares[g].points,
			       shares[g].fraction * 100);
		}
		printf("gateways=%zu  ideal=%.2f%%  total=%.2f%%\n", n, ideal, total);
	}
	free(shares);
	return 0;
}

static int ring_given(struct ring_args *a)
{
	struct ctl_list gws = { 0 };
	struct rs_ring *ring = NULL;
	int err, rc = 1;

	err = ctl_split_list(a->o.gateways, &gws);
	if (err == -EINVAL)
		return ctl_usage_error("ring", "--gateways: empty gateway id in '%s'", a->o.gateways);
	if (err)
		goto cleanup;
	rc = ctl_ring_from_ids("ring", &gws, &ring);
	if (rc)
		goto cleanup;
	rc = 1;
	err = print_verb(a, ring);
	if (!err)
		rc = 0;
cleanup:
	if (rc == 1 && err)
		fprintf(stderr, "ringsteerctl ring: %s\n", strerror(-err));
	rs_ring_free(ring);
	ctl_list_free(&gws);
	return rc;
}

static int ring_from_store(const struct ring_args *a)
{
	struct rs_store *st = NULL;
	struct rs_gateway_row *rows = NULL;
	const char **ids = NULL;
	struct rs_ring *ring = NULL;
	size_t n = 0;
	int err, rc;

	rc = ctl_store_open("ring", a->o.store, CTL_STORE_READ, a->o.ttl_ms, &st);
	if (rc)
		return rc;
	rc = 1;
	err = rs_store_list_gateways(st, rs_wall_ms(), false, &rows, &n);
	if (err) {
		fprintf(stderr, "ringsteerctl ring: cannot read store %s: %s\n", a->o.store, ctl_store_why(st, err));
		err = 0;
		goto cleanup;
	}
	ids = calloc(n ? n : 1, sizeof(*ids));
	if (!ids) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < n; i++)
		ids[i] = rows[i].id;
	err = rs_ring_new(ids, n, &ring);
	if (err)
		goto cleanup;
	if (rs_ring_gateway_count(ring) != n) {
		err = -EIO; /* the store lists each live id once, never empty */
		goto cleanup;
	}
	if (a->verb && n == 0) {
		fprintf(stderr, "ringsteerctl ring: no live gateway in store %s\n", a->o.store);
		goto cleanup;
	}
	err = a->verb ? print_verb(a, ring) : print_shares(a, ring, rows);
	if (!err)
		rc = 0;
cleanup:
	if (rc == 1 && err)
		fprintf(stderr, "ringsteerctl ring: %s\n", strerror(-err));
	rs_ring_free(ring);
	free(ids);
	free(rows);
	rs_store_close(st);
	return rc;
}

int ctl_ring(int argc, char **argv)
{
	struct ring_args a;
	int rc = parse_args(argc, argv, &a);

	if (rc >= 0)
		return rc;
	rc = a.o.store ? ring_from_store(&a) : ring_given(&a);
	return rc ? rc : ctl_flush_output("ring");
}
