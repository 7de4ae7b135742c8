/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_args.c - option, list and number parsing for ringsteerctl, strict so
 * that a typo is an error rather than a silently different ring.  The
 * options several subcommands share (--store, --ttl, --json, --gateways)
 * are one table here, parsed in one loop for all of them. */
#include "ctl_args.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringsteer/ring.h"

int ctl_split_list(char *s, struct ctl_list *out)
{
	size_t n = 1;

	out->items = NULL;
	out->n = 0;
	if (!s || !*s)
		return -EINVAL;
	for (const char *c = s; *c; c++)
		n += *c == ',';
	out->items = calloc(n, sizeof(*out->items));
	if (!out->items)
		return -ENOMEM;
	for (char *item = s;; item++) {
		char *comma = strchr(item, ',');

		if (comma)
			*comma = '\0';
		if (!*item) {
			ctl_list_free(out);
			return -EINVAL;
		}
		out->items[out->n++] = item;
		if (!comma)
			break;
		item = comma;
	}
	return 0;
}

void ctl_list_free(struct ctl_list *l)
{
	free(l->items);
	l->items = NULL;
	l->n = 0;
}

int ctl_parse_u64(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

int ctl_parse_u32(const char *s, uint32_t *out)
{
	uint64_t v;

	if (ctl_parse_u64(s, &v) != 0 || v > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

int ctl_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "ringsteerctl %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 2;
}

int ctl_check_member(const char *cmd, const char *member)
{
	if (!*member || strlen(member) > RS_ID_MAX)
		return ctl_usage_error(cmd, "member id must be 1 to %d bytes", RS_ID_MAX);
	return 0;
}

int ctl_ring_from_ids(const char *cmd, const struct ctl_list *ids, struct rs_ring **ring)
{
	int err = rs_ring_new((const char *const *)ids->items, ids->n, ring);

	if (err == -EINVAL)
		return ctl_usage_error(cmd, "--gateways: ids must be at most %d bytes", RS_ID_MAX);
	if (err) {
		fprintf(stderr, "ringsteerctl %s: %s\n", cmd, strerror(-err));
		return 1;
	}
	return 0;
}

int ctl_flush_output(const char *cmd)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "ringsteerctl %s: cannot write output: %s\n", cmd, strerror(errno));
		return 1;
	}
	return 0;
}

/* The shared options: which flag takes each, and its getopt entry. */
static const struct {
	unsigned flag;
	struct option opt;
	const char *short_form;
} shared_opts[] = {
	{ CTL_OPT_STORE, { "store", required_argument, NULL, 's' }, "s:" },
	{ CTL_OPT_TTL, { "ttl", required_argument, NULL, 'T' }, "T:" },
	{ CTL_OPT_JSON, { "json", no_argument, NULL, 'j' }, "j" },
	{ CTL_OPT_GATEWAYS, { "gateways", required_argument, NULL, 'g' }, "g:" },
};

#define N_SHARED (sizeof(shared_opts) / sizeof(shared_opts[0]))
#define OWN_MAX 8 /* a subcommand's own options at most */
#define TTL_MAX_MS 86400000u

/* Stores a shared option's value.  Returns -1 to go on, or 2. */
static int take_shared(const char *cmd, int val, char *arg, struct ctl_opts *o)
{
	switch (val) {
	case 's':
		o->store = arg;
		break;
	case 'T':
		if (ctl_parse_u32(arg, &o->ttl_ms) != 0 || o->ttl_ms == 0 || o->ttl_ms > TTL_MAX_MS)
			return ctl_usage_error(cmd, "--ttl: '%s' is not a number of milliseconds (1 to %u)", arg,
					       TTL_MAX_MS);
		break;
	case 'j':
		o->json = true;
		break;
	case 'g':
		o->gateways = arg;
		break;
	}
	return -1;
}

/* Whether val is a shared option cmd takes. */
static bool is_shared(const struct ctl_cmd_opts *cmd, int val)
{
	for (size_t i = 0; i < N_SHARED; i++)
		if ((cmd->shared & shared_opts[i].flag) && shared_opts[i].opt.val == val)
			return true;
	return false;
}

int ctl_parse_opts(const struct ctl_cmd_opts *cmd, int argc, char **argv, struct ctl_opts *o)
{
	struct option opts[N_SHARED + OWN_MAX + 2];
	char short_opts[2 * N_SHARED + 3 * OWN_MAX + 4] = ":";
	size_t n = 0, own = 0;
	int c, rc;

	*o = (struct ctl_opts){ 0 };
	for (size_t i = 0; i < N_SHARED; i++)
		if (cmd->shared & shared_opts[i].flag) {
			opts[n++] = shared_opts[i].opt;
			strcat(short_opts, shared_opts[i].short_form);
		}
	for (; cmd->own && cmd->own[own].name; own++) {
		if (own == OWN_MAX)
			return ctl_usage_error(cmd->name, "internal: more than %d options", OWN_MAX);
		opts[n++] = cmd->own[own];
	}
	if (strlen(cmd->own_short ? cmd->own_short : "") > 3 * OWN_MAX)
		return ctl_usage_error(cmd->name, "internal: short options too long");
	strcat(short_opts, cmd->own_short ? cmd->own_short : "");
	strcat(short_opts, "h");
	opts[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	opts[n] = (struct option){ 0 };
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, short_opts, opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(cmd->usage, stdout);
			return 0;
		}
		if (c == ':')
			return ctl_usage_error(cmd->name, "option %s needs a value", argv[optind - 1]);
		if (c == '?')
			return ctl_usage_error(cmd->name, "unknown option %s", argv[optind - 1]);
		rc = is_shared(cmd, c) ? take_shared(cmd->name, c, optarg, o) : cmd->on_own(cmd->ctx, c, optarg);
		if (rc >= 0)
			return rc;
	}
	if (o->gateways && o->store)
		return ctl_usage_error(cmd->name, "--gateways and --store are mutually exclusive");
	return -1;
}
