/* ctl_store.h - what ringsteerctl's store listings (gateways, sessions)
 * share: their options, opening the store with a message for each way it
 * can fail, reading it at one wall-clock instant, and the exit status. */
#ifndef RS_CTL_STORE_H
#define RS_CTL_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "ringsteer/store.h"

/* The parsed options: [--store URL] [--all] [--json] [--gateway ID]. */
struct ctl_store_args {
	const char *url;     /* RS_STORE_DEFAULT_URL unless --store */
	const char *gateway; /* --gateway ID (1..RS_ID_MAX bytes), or NULL */
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

/* Runs a listing: parses argv (argv[0] the subcommand), opens the store,
 * calls cmd->list, flushes stdout.  Returns the exit status: 0; 1 when the
 * store cannot be opened or read (the message names the URL) or the output
 * cannot be written; 2 bad arguments (one line on stderr). */
int ctl_store_run(const struct ctl_store_cmd *cmd, int argc, char **argv);

#endif
