/* SPDX-License-Identifier: Apache-2.0 */
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
#include "util/mstime.h"

/* --all and --gateway ID. */
static int on_own(void *ctx, int val, const char *arg)
{
	struct ctl_store_args *a = ctx;

	if (val == 'a')
		a->all = true;
	else
		a->gateway = arg;
	return -1;
}

/* Returns -1 to go on, or the exit status: 0 after --help, 2 after a
 * usage error. */
static int parse_args(const struct ctl_store_cmd *cmd, int argc, char **argv, struct ctl_store_args *a)
{
	static const struct option own[] = {
		{ "all", no_argument, NULL, 'a' },
		{ "gateway", required_argument, NULL, 'g' },
		{ 0 },
	};
	static const struct option own_no_gateway[] = {
		{ "all", no_argument, NULL, 'a' },
		{ 0 },
	};
	const struct ctl_cmd_opts opts = { .name = cmd->name,
					   .usage = cmd->usage,
					   .shared = CTL_OPT_STORE | CTL_OPT_TTL | CTL_OPT_JSON,
					   .own = cmd->gateway_opt ? own : own_no_gateway,
					   .own_short = cmd->gateway_opt ? "ag:" : "a",
					   .on_own = on_own,
					   .ctx = a };
	struct ctl_opts o;
	int rc;

	*a = (struct ctl_store_args){ 0 };
	rc = ctl_parse_opts(&opts, argc, argv, &o);
	if (rc >= 0)
		return rc;
	a->url = o.store ? o.store : RS_STORE_DEFAULT_URL;
	a->ttl_ms = o.ttl_ms;
	a->json = o.json;
	if (optind != argc)
		return ctl_usage_error(cmd->name, "unexpected argument '%s'", argv[optind]);
	if (a->gateway && (!*a->gateway || strlen(a->gateway) > RS_ID_MAX))
		return ctl_usage_error(cmd->name, "--gateway: id must be 1 to %d bytes", RS_ID_MAX);
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
	char why[RS_STORE_ERROR_MAX];
	int err = rs_store_open_why(url, &opt, st, why, sizeof(why));

	if (err == -EINVAL && why[0])
		return ctl_usage_error(name, "--store: '%s' is not a store URL: %s", url, why);
	if (err == -EINVAL)
		return ctl_usage_error(name, "--store: '%s' is not a store URL (sqlite:PATH, postgres://...)", url);
	if (err == -EPROTONOSUPPORT)
		return ctl_usage_error(name, "--store: unsupported scheme in '%s'", url);
	if (err == -ENOENT && why[0]) {
		fprintf(stderr, "ringsteerctl %s: no store at %s: %s; a gateway or `ringsteerctl init` creates it\n",
			name, url, why);
		return 1;
	}
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
	if (err == -EUCLEAN) {
		fprintf(stderr, "ringsteerctl %s: store %s is damaged (%s); restore it from a backup\n", name, url,
			why[0] ? why : "not a database, or corrupt");
		return 1;
	}
	/* The backend's own reason says more than any errno: "connection
	 * refused" and "password authentication failed" are both -EIO. */
	if (err && why[0]) {
		fprintf(stderr, "ringsteerctl %s: cannot open store %s: %s\n", name, url, why);
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

const char *ctl_store_why(const struct rs_store *st, int err)
{
	const char *why = rs_store_last_error(st);

	return why[0] ? why : strerror(-err);
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
		fprintf(stderr, "ringsteerctl %s: cannot read store %s: %s\n", cmd->name, a.url, ctl_store_why(st, err));
		rc = 1;
	} else {
		rc = ctl_flush_output(cmd->name);
	}
	rs_store_close(st);
	return rc;
}
