/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_drain.c - `ringsteerctl drain ID [--store URL] [--json]`: asks
 * gateway ID to drain by setting its row's state to draining
 * (rs_store_gateway_set_state).  The gateway sees it on its next heartbeat
 * and hands its supervisors off; meanwhile the placement rule already sends
 * no one new to it.  Setting a draining gateway draining again is fine.
 * Exit status: 0, 1 when the gateway is not in the store or the store
 * cannot be opened or written (the message names the URL), 2 bad
 * arguments.
 *
 * Not on ctl_store_run(): that frame is for listings (no operand, --all,
 * read failures); this command takes an operand and writes. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "ctl_args.h"
#include "ctl_json.h"
#include "ctl_store.h"
#include "ringsteer/store.h"

static const char drain_usage[] =
	"NAME\n"
	"    ringsteerctl drain - ask a gateway to drain\n"
	"\n"
	"SYNOPSIS\n"
	"    ringsteerctl drain ID [--store URL] [--json]\n"
	"\n"
	"DESCRIPTION\n"
	"    Asks gateway ID to drain: its row in the store turns draining, so no new\n"
	"    supervisor is placed on it, and the gateway hands its supervisors off to\n"
	"    the others (paced) once it sees the change.  Prints \"drain requested: ID\".\n"
	"    The store must exist already (it is never created here).\n"
	"\n"
	"OPTIONS\n"
	"    --store URL   the store (default " RS_STORE_DEFAULT_URL ")\n"
	"    --json        print one JSON object with keys id and state (\"draining\")\n"
	"    --help        this text\n"
	"\n"
	"EXIT STATUS\n"
	"    0 success, 1 the gateway is not in the store, or the store is missing or\n"
	"    cannot be opened or written (the message names the URL), 2 bad\n"
	"    arguments.\n"
	"\n"
	"EXAMPLES\n"
	"    ringsteerctl drain gw-a --store sqlite:/var/lib/ringsteer/ringsteer.db\n";

struct drain_args {
	const char *url;
	const char *id;
	bool json;
};

/* Returns -1 to go on, or the exit status: 0 after --help, 2 after a
 * usage error. */
static int parse_args(int argc, char **argv, struct drain_args *a)
{
	static const struct ctl_cmd_opts cmd = { .name = "drain", .usage = drain_usage,
						 .shared = CTL_OPT_STORE | CTL_OPT_JSON };
	struct ctl_opts o;
	int rc = ctl_parse_opts(&cmd, argc, argv, &o);

	if (rc >= 0)
		return rc;
	*a = (struct drain_args){ .url = o.store ? o.store : RS_STORE_DEFAULT_URL, .json = o.json };
	if (optind == argc)
		return ctl_usage_error("drain", "expected a gateway ID");
	if (argc - optind > 1)
		return ctl_usage_error("drain", "unexpected argument '%s'", argv[optind + 1]);
	a->id = argv[optind];
	if (!*a->id || strlen(a->id) > RS_ID_MAX)
		return ctl_usage_error("drain", "gateway id must be 1 to %d bytes", RS_ID_MAX);
	return -1;
}

int ctl_drain(int argc, char **argv)
{
	struct drain_args a;
	struct rs_store *st = NULL;
	char why[RS_STORE_ERROR_MAX];
	int err, rc;

	rc = parse_args(argc, argv, &a);
	if (rc >= 0)
		return rc;
	rc = ctl_store_open("drain", a.url, CTL_STORE_WRITE_EXISTING, 0, &st);
	if (rc)
		return rc;
	err = rs_store_gateway_set_state(st, a.id, RS_GATEWAY_DRAINING);
	snprintf(why, sizeof(why), "%s", ctl_store_why(st, err));
	rs_store_close(st);
	if (err == -ENOENT) {
		fputs("ringsteerctl drain: no gateway ", stderr);
		ctl_json_quote(stderr, a.id); /* quoted, any bytes shown safely */
		fprintf(stderr, " in store %s\n", a.url);
		return 1;
	}
	if (err) {
		fprintf(stderr, "ringsteerctl drain: cannot write store %s: %s\n", a.url, why);
		return 1;
	}
	if (a.json) {
		(void)ctl_json_print(stdout, json_pack("{s:o, s:s}", "id", ctl_json_text(a.id), "state", "draining"));
	} else {
		printf("drain requested: %s\n", a.id);
	}
	return ctl_flush_output("drain");
}
