/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_init.c - `ringsteerctl init [--store URL] [--json]`: creates the
 * store's schema (or checks an existing one) through the library, as a
 * gateway does when it starts.  The other commands never create a store;
 * this is the one that does, for provisioning and for tests that fill a
 * store by hand, so that the schema has a single source (user/store). */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "ctl_args.h"
#include "ctl_json.h"
#include "ctl_store.h"
#include "ringsteer/store.h"

static const char init_usage[] =
	"NAME\n"
	"    ringsteerctl init - create the store's schema\n"
	"\n"
	"SYNOPSIS\n"
	"    ringsteerctl init [--store URL] [--json]\n"
	"\n"
	"DESCRIPTION\n"
	"    Opens the store at URL read-write, creating the file and its schema if\n"
	"    they are missing (an existing ringsteer store is left as it is), as a\n"
	"    gateway does when it starts.  Prints \"store ready: URL\".  Every other\n"
	"    command needs the store to exist already.\n"
	"\n"
	"OPTIONS\n"
	"    --store URL   the store (default " RS_STORE_DEFAULT_URL ")\n"
	"    --json        print one JSON object with the key store\n"
	"    --help        this text\n"
	"\n"
	"EXIT STATUS\n"
	"    0 success, 1 the store cannot be created or is not a ringsteer store\n"
	"    (the message names the URL), 2 bad arguments.\n"
	"\n"
	"EXAMPLES\n"
	"    ringsteerctl init --store sqlite:/var/lib/ringsteer/ringsteer.db\n";

int ctl_init(int argc, char **argv)
{
	static const struct ctl_cmd_opts cmd = { .name = "init", .usage = init_usage,
						 .shared = CTL_OPT_STORE | CTL_OPT_JSON };
	struct ctl_opts o;
	const char *url;
	struct rs_store *st = NULL;
	bool json;
	int rc;

	rc = ctl_parse_opts(&cmd, argc, argv, &o);
	if (rc >= 0)
		return rc;
	url = o.store ? o.store : RS_STORE_DEFAULT_URL;
	json = o.json;
	if (optind != argc)
		return ctl_usage_error("init", "unexpected argument '%s'", argv[optind]);
	rc = ctl_store_open("init", url, CTL_STORE_CREATE, 0, &st);
	if (rc)
		return rc;
	rs_store_close(st);
	if (json) {
		(void)ctl_json_print(stdout, json_pack("{s:o}", "store", ctl_json_text(url)));
	} else {
		printf("store ready: %s\n", url);
	}
	return ctl_flush_output("init");
}
