/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_place.c - `ringsteerctl place`: what-if placement of one member
 * arriving now through the Service.
 *
 *   place --gateways ID=LOAD,... MEMBER   over given loads (MEMBER not among
 *                                         them), every gateway live and serving
 *   place --store URL MEMBER              over the store's live state, decided
 *                                         by rs_store_whatif(): exactly what
 *                                         the gateways' placement transaction
 *                                         would decide now (draining gateways
 *                                         no target, MEMBER's own row not
 *                                         counted), nothing written */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "ctl_args.h"
#include "ctl_json.h"
#include "ctl_store.h"
#include "util/mstime.h"
#include "ringsteer/placement.h"
#include "ringsteer/ring.h"
#include "ringsteer/store.h"

static const char place_usage[] =
	"NAME\n"
	"    ringsteerctl place - where the bounded-load rule places a member arriving now\n"
	"\n"
	"SYNOPSIS\n"
	"    ringsteerctl place --gateways ID=LOAD[,ID=LOAD...] [--explain] [--json] MEMBER\n"
	"    ringsteerctl place --store URL [--explain] [--json] MEMBER\n"
	"\n"
	"DESCRIPTION\n"
	"    Prints the gateway the bounded-load rule picks for MEMBER arriving\n"
	"    through the Service (not asking to stay).\n"
	"\n"
	"    With --gateways, over the given loads: each gateway's supervisors,\n"
	"    MEMBER not counted, every gateway live and serving.\n"
	"\n"
	"    With --store, over the store's state now, exactly as a gateway's\n"
	"    placement transaction would decide it: the ring of live gateways,\n"
	"    each one's live sessions (reservations included) as its load,\n"
	"    draining gateways counted but never chosen, and MEMBER's own session\n"
	"    row, if it has one, taken out as its stale record.  Nothing is\n"
	"    written; the store is opened read-only.\n"
	"\n"
	"OPTIONS\n"
	"    --gateways LIST   ID=LOAD pairs, comma-separated\n"
	"    --store URL       the store (no default: give --store or --gateways, not both)\n"
	"    --ttl MS          the gateways' --ttl: older rows are dead (default 15000)\n"
	"    --explain         print \"GATEWAY REASON cap=N\" (reason: placed or\n"
	"                      owner-fallback)\n"
	"    --json            print {\"member\", \"gateway\", \"reason\", \"cap\"}\n"
	"    --help            this text\n"
	"\n"
	"EXIT STATUS\n"
	"    0 success, 1 no serving gateway or the store cannot be read, 2 bad\n"
	"    arguments.\n"
	"\n"
	"EXAMPLES\n"
	"    ringsteerctl place --gateways gw-a=3,gw-b=2 --explain sup-17\n"
	"    ringsteerctl place --store sqlite:/var/lib/ringsteer/ringsteer.db sup-17\n";

struct place_args {
	struct ctl_opts o; /* --gateways or --store, --ttl, --json */
	const char *member;
	bool explain;
};

/* --explain (place's one option of its own). */
static int on_explain(void *ctx, int val, const char *arg)
{
	struct place_args *a = ctx;

	(void)val;
	(void)arg;
	a->explain = true;
	return -1;
}

/* Returns -1 to go on, or the exit status: 0 after --help, 2 after a
 * usage error. */
static int parse_args(int argc, char **argv, struct place_args *a)
{
	static const struct option own[] = {
		{ "explain", no_argument, NULL, 'e' },
		{ 0 },
	};
	const struct ctl_cmd_opts cmd = { .name = "place",
					  .usage = place_usage,
					  .shared = CTL_OPT_GATEWAYS | CTL_OPT_STORE | CTL_OPT_TTL | CTL_OPT_JSON,
					  .own = own,
					  .own_short = "e",
					  .on_own = on_explain,
					  .ctx = a };
	int rc;

	*a = (struct place_args){ 0 };
	rc = ctl_parse_opts(&cmd, argc, argv, &a->o);
	if (rc >= 0)
		return rc;
	if (!a->o.gateways && !a->o.store)
		return ctl_usage_error("place", "--gateways ID=LOAD[,ID=LOAD...] or --store URL is required");
	if (argc - optind != 1)
		return ctl_usage_error("place", "expected one MEMBER");
	a->member = argv[optind];
	if (ctl_check_member("place", a->member))
		return 2;
	return -1;
}

static void print_decision(const struct place_args *a, const char *gateway, const struct rs_decision *d)
{
	if (a->o.json) {
		(void)ctl_json_print(stdout, json_pack("{s:o, s:o, s:s, s:I}", "member", ctl_json_text(a->member), "gateway",
						       ctl_json_text(gateway), "reason", rs_reason_name(d->reason), "cap",
						       (json_int_t)d->cap));
	} else if (a->explain) {
		printf("%s %s cap=%u\n", gateway, rs_reason_name(d->reason), d->cap);
	} else {
		puts(gateway);
	}
}

static int place_given(struct place_args *a)
{
	struct ctl_list gws = { 0 };
	struct rs_gateway_load *loads = NULL;
	uint32_t *given = NULL;
	struct rs_ring *ring = NULL;
	struct rs_decision d;
	int err, rc = 1;

	err = ctl_split_list(a->o.gateways, &gws);
	if (err == -EINVAL)
		return ctl_usage_error("place", "--gateways: empty item in '%s'", a->o.gateways);
	if (err)
		goto cleanup;
	given = calloc(gws.n, sizeof(*given));
	if (!given) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < gws.n; i++) {
		char *eq = strrchr(gws.items[i], '=');

		if (!eq || eq == gws.items[i] || ctl_parse_u32(eq + 1, &given[i]) != 0) {
			rc = ctl_usage_error("place", "--gateways: '%s' is not ID=LOAD", gws.items[i]);
			goto cleanup;
		}
		*eq = '\0';
	}
	rc = ctl_ring_from_ids("place", &gws, &ring);
	if (rc)
		goto cleanup;
	rc = 1;
	if (rs_ring_gateway_count(ring) != gws.n) {
		rc = ctl_usage_error("place", "--gateways: a gateway id is repeated");
		goto cleanup;
	}
	loads = calloc(gws.n, sizeof(*loads));
	if (!loads) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < gws.n; i++) {
		int gw = rs_ring_find(ring, gws.items[i]);

		loads[gw].load = given[i];
		loads[gw].live = true;
	}
	err = rs_place(ring, loads, &(struct rs_arrival){ .member_id = a->member, .at = -1, .stale = -1 }, &d);
	if (err)
		goto cleanup;
	print_decision(a, rs_ring_gateway_id(ring, d.gateway), &d);
	rc = 0;
cleanup:
	if (rc == 1 && err)
		fprintf(stderr, "ringsteerctl place: %s\n", strerror(-err));
	free(loads);
	free(given);
	rs_ring_free(ring);
	ctl_list_free(&gws);
	return rc;
}

static int place_from_store(const struct place_args *a)
{
	struct rs_store *st = NULL;
	char target[RS_ID_MAX + 1];
	struct rs_decision d;
	char why[RS_STORE_ERROR_MAX];
	int rc, err;

	rc = ctl_store_open("place", a->o.store, CTL_STORE_READ, a->o.ttl_ms, &st);
	if (rc)
		return rc;
	err = rs_store_whatif(st, a->member, rs_wall_ms(), &d, target);
	snprintf(why, sizeof(why), "%s", ctl_store_why(st, err));
	rs_store_close(st);
	if (err == -ENOENT) {
		fprintf(stderr, "ringsteerctl place: no serving gateway in store %s\n", a->o.store);
		return 1;
	}
	if (err) {
		fprintf(stderr, "ringsteerctl place: cannot read store %s: %s\n", a->o.store, why);
		return 1;
	}
	print_decision(a, target, &d);
	return 0;
}

int ctl_place(int argc, char **argv)
{
	struct place_args a;
	int rc = parse_args(argc, argv, &a);

	if (rc >= 0)
		return rc;
	rc = a.o.store ? place_from_store(&a) : place_given(&a);
	return rc ? rc : ctl_flush_output("place");
}
