/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_store.h - what ringsteerctl's store commands share: opening the
 * store with a message for each way it can fail (read-only commands never
 * create a store), the wall clock, and for the listings (gateways,
 * sessions) their options, one read at one instant, and the exit status. */
#ifndef RS_CTL_STORE_H
#define RS_CTL_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "ringsteer/store.h"

/* The parsed options: [--store URL] [--ttl MS] [--all] [--json] [--gateway ID]. */
struct ctl_store_args {
	const char *url;     /* RS_STORE_DEFAULT_URL unless --store */
	const char *gateway; /* --gateway ID (1..RS_ID_MAX bytes), or NULL */
	uint32_t ttl_ms;     /* --ttl MS: the gateways' row TTL; 0: the store's default */
	bool all, json;
};

struct ctl_store_cmd {
	const char *name;  /* the subcommand, for messages */
	const char *usage; /* printed for --help */
	bool gateway_opt;  /* whether it takes --gateway ID */
	/* Reads the store as of now_ms and prints the listing; returns 0 or
	 * the negative errno of the read (printing nothing then). */
	int (*list)(struct rs_store *st, const struct ctl_store_args *args, int64_t now_ms);
};

/* How a command opens the store: to read (never creates anything; the
 * listings, status, place and ring), or to write an existing one (drain). */
enum ctl_store_mode {
	CTL_STORE_READ,
	CTL_STORE_WRITE_EXISTING,
	CTL_STORE_CREATE, /* init only: creates the file and schema if missing */
};

/* Opens the store at url for command name, rows older than ttl_ms (0: the
 * store's default) counting as dead.  Returns 0 and *st, 2 after a usage
 * error (a malformed URL), or 1 after one line on stderr naming the URL: no
 * store there (the file does not exist), or why it cannot be opened, in
 * the backend's words when it gave some (libpq's, SQLite's). */
int ctl_store_open(const char *name, const char *url, enum ctl_store_mode mode, uint32_t ttl_ms,
		   struct rs_store **st);

/* Why a call on st failed with err, for a message: the backend's own
 * words when it gave some (rs_store_last_error), else strerror. */
const char *ctl_store_why(const struct rs_store *st, int err);


/* Runs a listing: parses argv (argv[0] the subcommand), opens the store,
 * calls cmd->list, flushes stdout.  Returns the exit status: 0; 1 when the
 * store cannot be opened or read (the message names the URL) or the output
 * cannot be written; 2 bad arguments (one line on stderr). */
int ctl_store_run(const struct ctl_store_cmd *cmd, int argc, char **argv);

#endif
