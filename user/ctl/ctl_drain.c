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
#include "ringsteer/store.h"

static const char drain_usage[] =
	"usage: ringsteerctl drain ID [--store URL] [--json]\n"
	"\n"
	"Asks gateway ID to drain: its row in the store turns draining, so no new\n"
	"supervisor is placed on it, and the gateway hands its supervisors off to\n"
	"the others (paced) once it sees the change.  Prints \"drain requested: ID\",\n"
	"or with --json one JSON object with keys id and state.  An ID the store\n"
	"does not know is an error (exit 1).\n"
	"The store defaults to " RS_STORE_DEFAULT_URL ".\n";

struct drain_args {
	const char *url;
	const char *id;
	bool json;
};

/* Returns -1 to go on, or the exit status: 0 after --help, 2 after a
 * usage error. */
static int parse_args(int argc, char **argv, struct drain_args *a)
{
	static const struct option opts[] = {
		{ "store", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	*a = (struct drain_args){ .url = RS_STORE_DEFAULT_URL };
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":s:jh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			a->url = optarg;
			break;
		case 'j':
			a->json = true;
			break;
		case 'h':
			fputs(drain_usage, stdout);
			return 0;
		case ':':
			return ctl_usage_error("drain", "option %s needs a value", argv[optind - 1]);
		default:
			return ctl_usage_error("drain", "unknown option %s", argv[optind - 1]);
		}
	}
	if (optind == argc)
		return ctl_usage_error("drain", "expected a gateway ID");
	if (argc - optind > 1)
		return ctl_usage_error("drain", "unexpected argument '%s'", argv[optind + 1]);
	a->id = argv[optind];
	if (!*a->id || strlen(a->id) > RS_ID_MAX)
		return ctl_usage_error("drain", "gateway id must be 1 to %d bytes", RS_ID_MAX);
	return -1;
}

/* Returns 0 and *st, 2 after a usage error, or 1 after saying why the
 * store cannot be opened (the messages of the listings). */
static int open_store(const char *url, struct rs_store **st)
{
	int err = rs_store_open(url, NULL, st);

	if (err == -EINVAL)
		return ctl_usage_error("drain", "--store: '%s' is not a store URL (sqlite:PATH)", url);
	if (err == -EPROTONOSUPPORT)
		return ctl_usage_error("drain", "--store: unsupported scheme in '%s'", url);
	if (err == -EIO) {
		fprintf(stderr, "ringsteerctl drain: cannot open store %s: %s (missing directory, no permission, "
			"or not a ringsteer store)\n", url, strerror(-err));
		return 1;
	}
	if (err) {
		fprintf(stderr, "ringsteerctl drain: cannot open store %s: %s\n", url, strerror(-err));
		return 1;
	}
	return 0;
}

int ctl_drain(int argc, char **argv)
{
	struct drain_args a;
	struct rs_store *st = NULL;
	int err, rc;

	rc = parse_args(argc, argv, &a);
	if (rc >= 0)
		return rc;
	rc = open_store(a.url, &st);
	if (rc)
		return rc;
	err = rs_store_gateway_set_state(st, a.id, RS_GATEWAY_DRAINING);
	rs_store_close(st);
	if (err == -ENOENT) {
		fputs("ringsteerctl drain: no gateway ", stderr);
		ctl_json_string(stderr, a.id); /* quoted, any bytes shown safely */
		fprintf(stderr, " in store %s\n", a.url);
		return 1;
	}
	if (err) {
		fprintf(stderr, "ringsteerctl drain: cannot write store %s: %s\n", a.url, strerror(-err));
		return 1;
	}
	if (a.json) {
		fputs("{", stdout);
		ctl_json_key_string(stdout, true, "id", a.id);
		ctl_json_key_string(stdout, false, "state", "draining");
		fputs("}\n", stdout);
	} else {
		printf("drain requested: %s\n", a.id);
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "ringsteerctl drain: cannot write output: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}
