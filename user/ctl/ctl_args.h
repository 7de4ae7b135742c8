/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_args.h - argument parsing shared by ringsteerctl's subcommands. */
#ifndef RS_CTL_ARGS_H
#define RS_CTL_ARGS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A comma-separated list split in place: items point into the caller's
 * string (which is modified). */
struct ctl_list {
	char **items;
	size_t n;
};

/* Splits s at commas into *out.  Returns 0, -EINVAL for an empty list or an
 * empty item, -ENOMEM. */
int ctl_split_list(char *s, struct ctl_list *out);

/* Frees the item array (not the strings). */
void ctl_list_free(struct ctl_list *l);

/* Parses a decimal 0..UINT64_MAX (0..UINT32_MAX) with nothing around it:
 * no sign, no space.  Returns 0 or -EINVAL. */
int ctl_parse_u64(const char *s, uint64_t *out);
int ctl_parse_u32(const char *s, uint32_t *out);

struct rs_ring;

/* Checks a MEMBER argument: 0, or 2 after a usage error. */
int ctl_check_member(const char *cmd, const char *member);

/* Builds a ring from the ids of a --gateways list.  Returns 0, 2 after a
 * usage error (an id too long), or 1 after printing the failure. */
int ctl_ring_from_ids(const char *cmd, const struct ctl_list *ids, struct rs_ring **ring);

/* The options several subcommands share, parsed once (ctl_args.c's
 * table): which of them a subcommand takes. */
enum ctl_shared_opt {
	CTL_OPT_STORE = 1 << 0,    /* --store URL (-s) */
	CTL_OPT_TTL = 1 << 1,      /* --ttl MS (-T): the gateways' row TTL, 1 ms to one day */
	CTL_OPT_JSON = 1 << 2,     /* --json (-j) */
	CTL_OPT_GATEWAYS = 1 << 3, /* --gateways LIST (-g) */
};

/* Their values, as given. */
struct ctl_opts {
	const char *store; /* --store URL, or NULL */
	uint32_t ttl_ms;   /* --ttl MS, or 0 (the store's default) */
	bool json;         /* --json */
	char *gateways;    /* --gateways LIST (argv's string, for ctl_split_list), or NULL */
};

/* A subcommand's options: the shared ones it takes and its own. */
struct ctl_cmd_opts {
	const char *name;         /* the subcommand, for messages */
	const char *usage;        /* printed for --help */
	unsigned shared;          /* the CTL_OPT_* it takes */
	const struct option *own; /* its own long options ({ 0 }-terminated; their val
				     differs from the shared ones it takes), or NULL */
	const char *own_short;    /* their short forms, getopt-style ("e", "ag:"), or "" */
	/* Called with each of its own options' val and argument: returns -1 to
	 * go on, else the exit status (2 after ctl_usage_error). */
	int (*on_own)(void *ctx, int val, const char *arg);
	void *ctx;
};

/* Parses argv (argv[0] the subcommand) into *o (zeroed first): the shared
 * options cmd takes, its own through on_own, and --help (-h), which
 * prints cmd->usage.  --gateways and --store together are a usage error
 * (a ring is given, or read from a store).  Returns -1 to go on, with
 * optind at the first operand; 0 after --help; 2 after a usage error (one
 * line on stderr). */
int ctl_parse_opts(const struct ctl_cmd_opts *cmd, int argc, char **argv, struct ctl_opts *o);

/* Prints "ringsteerctl <cmd>: <message>" on stderr and returns 2. */
int ctl_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Flushes stdout for subcommand cmd: returns 0, or 1 after one line on
 * stderr when the output could not be written (a closed pipe, a full disk). */
int ctl_flush_output(const char *cmd);

#endif
