/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_gateways.c - `ringsteerctl gateways [--store URL] [--all] [--json]`:
 * the gateways in the store with their state and load, as a table or one
 * JSON document.  Read-only: the store is opened read-only and never
 * created.  Exit status: 0, 1 when the store
 * cannot be opened or read (the message names the URL), 2 bad arguments. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctl.h"
#include "ctl_json.h"
#include "ctl_store.h"
#include "ctl_table.h"
#include "ringsteer/store.h"

static const char gateways_usage[] =
	"NAME\n"
	"    ringsteerctl gateways - the gateways in the store, with their load\n"
	"\n"
	"SYNOPSIS\n"
	"    ringsteerctl gateways [--store URL] [--all] [--json]\n"
	"\n"
	"DESCRIPTION\n"
	"    Lists the live gateways in the store (every registered one with --all):\n"
	"    ID, PEER, STATE (serving or draining), LIVE (heartbeat within the TTL),\n"
	"    SUPERVISORS (live sessions on it, reservations included) and\n"
	"    HEARTBEAT-AGE-MS.  The store is opened read-only: a missing store is an\n"
	"    error, never created.\n"
	"\n"
	"OPTIONS\n"
	"    --store URL   the store (default " RS_STORE_DEFAULT_URL ")\n"
	"    --ttl MS      the gateways' --ttl: older rows are dead (default 15000)\n"
	"    --all         every registered gateway, dead ones too\n"
	"    --json        one JSON array of objects with keys id, peer, state, live,\n"
	"                  supervisors, heartbeat_ms\n"
	"    --help        this text\n"
	"\n"
	"EXIT STATUS\n"
	"    0 success, 1 the store cannot be opened or read (the message names the\n"
	"    URL), 2 bad arguments.\n"
	"\n"
	"EXAMPLES\n"
	"    ringsteerctl gateways --store sqlite:/var/lib/ringsteer/ringsteer.db --all\n";

static const char *state_name(uint8_t state)
{
	return state == RS_GATEWAY_DRAINING ? "draining" : "serving";
}

enum { COL_ID, COL_PEER, COL_STATE, COL_LIVE, COL_SUPERVISORS, COL_AGE, N_COLS };

struct table {
	const struct rs_gateway_row *rows;
	int64_t now_ms;
};

static bool table_row(const void *ctx, size_t i, char cell[][CTL_TABLE_CELL_SIZE])
{
	const struct table *t = ctx;
	const struct rs_gateway_row *row = &t->rows[i];

	ctl_table_printable(cell[COL_ID], sizeof(cell[COL_ID]), row->id);
	ctl_table_printable(cell[COL_PEER], sizeof(cell[COL_PEER]), row->peer);
	snprintf(cell[COL_STATE], sizeof(cell[COL_STATE]), "%s", state_name(row->state));
	snprintf(cell[COL_LIVE], sizeof(cell[COL_LIVE]), "%s", row->live ? "yes" : "no");
	snprintf(cell[COL_SUPERVISORS], sizeof(cell[COL_SUPERVISORS]), "%" PRIu32, row->supervisors);
	snprintf(cell[COL_AGE], sizeof(cell[COL_AGE]), "%" PRId64, t->now_ms - row->heartbeat_ms);
	return true;
}

static void print_table(const struct rs_gateway_row *rows, size_t n, int64_t now_ms)
{
	static const char *const header[N_COLS] = { "ID", "PEER", "STATE", "LIVE", "SUPERVISORS",
						     "HEARTBEAT-AGE-MS" };
	const struct table t = { rows, now_ms };

	ctl_table_print(header, N_COLS, n, table_row, &t);
}

static void print_json(const struct rs_gateway_row *rows, size_t n)
{
	json_t *list = json_array();

	for (size_t i = 0; list && i < n; i++)
		json_array_append_new(list, json_pack("{s:o, s:o, s:s, s:b, s:I, s:I}", "id", ctl_json_text(rows[i].id),
						      "peer", ctl_json_text(rows[i].peer), "state",
						      state_name(rows[i].state), "live", rows[i].live, "supervisors",
						      (json_int_t)rows[i].supervisors, "heartbeat_ms",
						      (json_int_t)rows[i].heartbeat_ms));
	(void)ctl_json_print(stdout, list);
}

static int list(struct rs_store *st, const struct ctl_store_args *args, int64_t now_ms)
{
	struct rs_gateway_row *rows = NULL;
	size_t n = 0;
	int err = rs_store_list_gateways(st, now_ms, args->all, &rows, &n);

	if (err)
		return err;
	if (args->json)
		print_json(rows, n);
	else
		print_table(rows, n, now_ms);
	free(rows);
	return 0;
}

int ctl_gateways(int argc, char **argv)
{
	static const struct ctl_store_cmd cmd = { "gateways", gateways_usage, false, list };

	return ctl_store_run(&cmd, argc, argv);
}
