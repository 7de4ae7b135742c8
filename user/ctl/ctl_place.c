/* ctl_place.c - `ringsteerctl place --gateways ID=LOAD,... MEMBER`: what-if
 * placement of one arriving member over given loads (the member itself not
 * among them), every gateway live and serving. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "ctl_args.h"
#include "ringsteer/placement.h"
#include "ringsteer/ring.h"

static const char place_usage[] =
	"usage: ringsteerctl place --gateways ID=LOAD[,ID=LOAD...] [--explain] MEMBER\n"
	"\n"
	"Prints the gateway the bounded-load rule picks for MEMBER arriving\n"
	"through the Service, given each gateway's supervisors (MEMBER not\n"
	"counted).  --explain adds the reason and the cap.\n";

int ctl_place(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "gateways", required_argument, NULL, 'g' },
		{ "explain", no_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct ctl_list gws = { 0 };
	struct rs_gateway_load *loads = NULL;
	uint32_t *given = NULL;
	struct rs_ring *ring = NULL;
	struct rs_decision d;
	char *gateways = NULL;
	const char *member;
	bool explain = false;
	int c, err, rc = 1;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":g:eh", opts, NULL)) != -1) {
		switch (c) {
		case 'g':
			gateways = optarg;
			break;
		case 'e':
			explain = true;
			break;
		case 'h':
			fputs(place_usage, stdout);
			return 0;
		case ':':
			return ctl_usage_error("place", "option %s needs a value", argv[optind - 1]);
		default:
			return ctl_usage_error("place", "unknown option %s", argv[optind - 1]);
		}
	}
	if (!gateways)
		return ctl_usage_error("place", "--gateways ID=LOAD[,ID=LOAD...] is required");
	if (argc - optind != 1)
		return ctl_usage_error("place", "expected one MEMBER");
	member = argv[optind];
	if (ctl_check_member("place", member))
		return 2;
	err = ctl_split_list(gateways, &gws);
	if (err == -EINVAL)
		return ctl_usage_error("place", "--gateways: empty item in '%s'", gateways);
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
	err = rs_place(ring, loads, &(struct rs_arrival){ .member_id = member, .at = -1, .stale = -1 }, &d);
	if (err)
		goto cleanup;
	if (explain)
		printf("%s %s cap=%u\n", rs_ring_gateway_id(ring, d.gateway), rs_reason_name(d.reason), d.cap);
	else
		puts(rs_ring_gateway_id(ring, d.gateway));
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
