/* ctl_store.c - opening the store for ringsteerctl, with one message per
 * way it fails, and the frame of the store listings: options, the wall
 * clock, the output's flush.  Nothing here creates a store: a command that
 * only reads opens it read-only (no file, no schema, no lock taken), and
 * drain, which writes, needs the file to exist already; creating the store
 * is the gateways' business. */
#include "ctl_store.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ctl_args.h"
#include "ringsteer/mstime.h"

/* Returns -1 to go on, or the exit status: 0 after --help, 2 after a
 * usage error. */
static int parse_args(const struct ctl_store_cmd *cmd, int argc, char **argv, struct ctl_store_args *a)
{
	struct option opts[] = {
		{ "store", required_argument, NULL, 's' },
		{ "ttl", required_argument, NULL, 'T' },
		{ "all", no_argument, NULL, 'a' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "gateway", required_argument, NULL, 'g' }, /* last: dropped unless gateway_opt */
		{ 0 },
	};
	int c;

	*a = (struct ctl_store_args){ .url = RS_STORE_DEFAULT_URL };
	if (!cmd->gateway_opt)
		opts[5] = (struct option){ 0 };
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, cmd->gateway_opt ? ":s:T:ajg:h" : ":s:T:ajh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			a->url = optarg;
			break;
		case 'T':
			if ((c = ctl_store_parse_ttl(cmd->name, optarg, &a->ttl_ms)) >= 0)
				return c;
			break;
		case 'a':
			a->all = true;
			break;
		case 'j':
			a->json = true;
			break;
		case 'g':
			a->gateway = optarg;
			break;
		case 'h':
			fputs(cmd->usage, stdout);
			return 0;
		case ':':
			return ctl_usage_error(cmd->name, "option %s needs a value", argv[optind - 1]);
		default:
			return ctl_usage_error(cmd->name, "unknown option %s", argv[optind - 1]);
		}
	}
	if (optind != argc)
		return ctl_usage_error(cmd->name, "unexpected argument '%s'", argv[optind]);
	if (a->gateway && (!*a->gateway || strlen(a->gateway) > RS_ID_MAX))
		return ctl_usage_error(cmd->name, "--gateway: id must be 1 to %d bytes", RS_ID_MAX);
	return -1;
}

int ctl_store_parse_ttl(const char *name, const char *value, uint32_t *ttl_ms)
{
	if (ctl_parse_u32(value, ttl_ms) != 0 || *ttl_ms == 0 || *ttl_ms > 86400000)
		return ctl_usage_error(name, "--ttl: '%s' is not a number of milliseconds (1 to 86400000)", value);
	return -1;
}

int ctl_store_open(const char *name, const char *url, enum ctl_store_mode mode, uint32_t ttl_ms,
		   struct rs_store **st)
{
	const struct rs_store_options opt = {
		.ttl_ms = ttl_ms,
		.read_only = mode == CTL_STORE_READ,
		.no_create = mode != CTL_STORE_CREATE,
	};
	int err = rs_store_open(url, &opt, st);

	if (err == -EINVAL)
		return ctl_usage_error(name, "--store: '%s' is not a store URL (sqlite:PATH, postgres://...)", url);
	if (err == -EPROTONOSUPPORT)
		return ctl_usage_error(name, "--store: unsupported scheme in '%s'", url);
	if (err == -ENOENT) {
		fprintf(stderr, "ringsteerctl %s: no store at %s (no such file, or no ringsteer schema; a gateway "
			"or `ringsteerctl init` creates it)\n", name, url);
		return 1;
	}
	if (err == -EPROTO) {
		fprintf(stderr, "ringsteerctl %s: store %s has a newer schema than this ringsteerctl; upgrade it\n",
			name, url);
		return 1;
	}
	if (err == -EIO) {
		fprintf(stderr, "ringsteerctl %s: cannot open store %s: %s (no permission, or not a ringsteer "
			"store)\n", name, url, strerror(-err));
		return 1;
	}
	if (err) {
		fprintf(stderr, "ringsteerctl %s: cannot open store %s: %s\n", name, url, strerror(-err));
		return 1;
	}
	return 0;
}

int ctl_store_run(const struct ctl_store_cmd *cmd, int argc, char **argv)
{
	struct ctl_store_args a;
	struct rs_store *st = NULL;
	int err, rc;

	rc = parse_args(cmd, argc, argv, &a);
	if (rc >= 0)
		return rc;
	rc = ctl_store_open(cmd->name, a.url, CTL_STORE_READ, a.ttl_ms, &st);
	if (rc)
		return rc;
	err = cmd->list(st, &a, rs_wall_ms());
	if (err) {
		fprintf(stderr, "ringsteerctl %s: cannot read store %s: %s\n", cmd->name, a.url, strerror(-err));
		rc = 1;
	} else {
		rc = ctl_flush_output(cmd->name);
	}
	rs_store_close(st);
	return rc;
}
