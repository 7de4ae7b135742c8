/* ctl_store.c - the frame of ringsteerctl's store listings: options, the
 * store's opening and its failure messages, the wall clock, the output's
 * flush.  Read-only (opening a store that does not exist yet creates its
 * schema, as any open does). */
#include "ctl_store.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ctl_args.h"

/* Returns -1 to go on, or the exit status: 0 after --help, 2 after a
 * usage error. */
static int parse_args(const struct ctl_store_cmd *cmd, int argc, char **argv, struct ctl_store_args *a)
{
	struct option opts[] = {
		{ "store", required_argument, NULL, 's' },
		{ "all", no_argument, NULL, 'a' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "gateway", required_argument, NULL, 'g' }, /* last: dropped unless gateway_opt */
		{ 0 },
	};
	int c;

	*a = (struct ctl_store_args){ .url = RS_STORE_DEFAULT_URL };
	if (!cmd->gateway_opt)
		opts[4] = (struct option){ 0 };
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, cmd->gateway_opt ? ":s:ajg:h" : ":s:ajh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			a->url = optarg;
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

/* Returns 0 and *st, 2 after a usage error, or 1 after saying why the
 * store cannot be opened. */
static int open_store(const char *name, const char *url, struct rs_store **st)
{
	int err = rs_store_open(url, NULL, st);

	if (err == -EINVAL)
		return ctl_usage_error(name, "--store: '%s' is not a store URL (sqlite:PATH)", url);
	if (err == -EPROTONOSUPPORT)
		return ctl_usage_error(name, "--store: unsupported scheme in '%s'", url);
	if (err == -EIO) {
		fprintf(stderr, "ringsteerctl %s: cannot open store %s: %s (missing directory, no permission, "
			"or not a ringsteer store)\n", name, url, strerror(-err));
		return 1;
	}
	if (err) {
		fprintf(stderr, "ringsteerctl %s: cannot open store %s: %s\n", name, url, strerror(-err));
		return 1;
	}
	return 0;
}

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int ctl_store_run(const struct ctl_store_cmd *cmd, int argc, char **argv)
{
	struct ctl_store_args a;
	struct rs_store *st = NULL;
	int err, rc;

	rc = parse_args(cmd, argc, argv, &a);
	if (rc >= 0)
		return rc;
	rc = open_store(cmd->name, a.url, &st);
	if (rc)
		return rc;
	err = cmd->list(st, &a, wall_ms());
	if (err) {
		fprintf(stderr, "ringsteerctl %s: cannot read store %s: %s\n", cmd->name, a.url, strerror(-err));
		rc = 1;
	} else if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "ringsteerctl %s: cannot write output: %s\n", cmd->name, strerror(errno));
		rc = 1;
	}
	rs_store_close(st);
	return rc;
}
