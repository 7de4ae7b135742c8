/* ctl_ring.c - `ringsteerctl ring --gateways IDS owner|walk MEMBER`: the ring
 * alone, offline, for checking what any OpenShell-compatible ring says. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "ctl_args.h"
#include "ringsteer/ring.h"

static const char ring_usage[] =
	"usage: ringsteerctl ring --gateways ID[,ID...] owner MEMBER\n"
	"       ringsteerctl ring --gateways ID[,ID...] walk MEMBER\n"
	"\n"
	"owner  prints the gateway whose point follows MEMBER's on the ring\n"
	"walk   prints every gateway once, in the order a clockwise walk from\n"
	"       MEMBER's point meets it, one per line\n";

int ctl_ring(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "gateways", required_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct ctl_list gws = { 0 };
	struct rs_ring *ring = NULL;
	uint32_t *order = NULL;
	char *gateways = NULL;
	const char *verb, *member;
	int c, err, rc = 1;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":g:h", opts, NULL)) != -1) {
		switch (c) {
		case 'g':
			gateways = optarg;
			break;
		case 'h':
			fputs(ring_usage, stdout);
			return 0;
		case ':':
			return ctl_usage_error("ring", "option %s needs a value", argv[optind - 1]);
		default:
			return ctl_usage_error("ring", "unknown option %s", argv[optind - 1]);
		}
	}
	if (!gateways)
		return ctl_usage_error("ring", "--gateways ID[,ID...] is required");
	if (argc - optind != 2)
		return ctl_usage_error("ring", "expected 'owner MEMBER' or 'walk MEMBER'");
	verb = argv[optind];
	member = argv[optind + 1];
	if (strcmp(verb, "owner") != 0 && strcmp(verb, "walk") != 0)
		return ctl_usage_error("ring", "unknown verb '%s' (owner or walk)", verb);
	if (ctl_check_member("ring", member))
		return 2;
	err = ctl_split_list(gateways, &gws);
	if (err == -EINVAL)
		return ctl_usage_error("ring", "--gateways: empty gateway id in '%s'", gateways);
	if (err)
		goto cleanup;
	rc = ctl_ring_from_ids("ring", &gws, &ring);
	if (rc)
		goto cleanup;
	rc = 1;

	if (strcmp(verb, "owner") == 0) {
		err = rs_ring_owner(ring, member);
		if (err < 0)
			goto cleanup;
		puts(rs_ring_gateway_id(ring, (size_t)err));
	} else {
		order = calloc(rs_ring_gateway_count(ring), sizeof(*order));
		if (!order) {
			err = -ENOMEM;
			goto cleanup;
		}
		err = rs_ring_walk(ring, member, order, rs_ring_gateway_count(ring));
		if (err < 0)
			goto cleanup;
		for (int i = 0; i < err; i++)
			puts(rs_ring_gateway_id(ring, order[i]));
	}
	rc = 0;
cleanup:
	if (rc == 1 && err)
		fprintf(stderr, "ringsteerctl ring: %s\n", strerror(-err));
	free(order);
	rs_ring_free(ring);
	ctl_list_free(&gws);
	return rc;
}
