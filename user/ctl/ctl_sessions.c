/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_sessions.c - `ringsteerctl sessions [--store URL] [--all] [--json]
 * [--gateway ID]`: the supervisor sessions in the store (one row per
 * member), as a table or one JSON document, sorted by gateway then member.
 * Read-only: the store is opened read-only and never created.  Exit status: 0, 1 when the store cannot be opened or
 * read (the message names the URL), 2 bad arguments. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "ctl_json.h"
#include "ctl_store.h"
#include "ctl_table.h"
#include "ringsteer/store.h"

static const char sessions_usage[] =
	"NAME\n"
	"    ringsteerctl sessions - the supervisor sessions in the store\n"
	"\n"
	"SYNOPSIS\n"
	"    ringsteerctl sessions [--store URL] [--all] [--json] [--gateway ID]\n"
	"\n"
	"DESCRIPTION\n"
	"    Lists the live sessions in the store (every row with --all), or only\n"
	"    those on gateway ID: MEMBER, GATEWAY, STATE (active, or pending: a\n"
	"    reservation at a redirect target; \"(dead)\" is added to rows on a\n"
	"    dead gateway and to reservations past their end: an active session\n"
	"    lives as long as its gateway's row), EPOCH, SANDBOXES, SOURCE and\n"
	"    AGE-MS (since the row was written: attached, or reserved).  The store\n"
	"    is opened read-only: a missing store is an error, never created.\n"
	"\n"
	"OPTIONS\n"
	"    --store URL    the store (default " RS_STORE_DEFAULT_URL ")\n"
	"    --ttl MS       the gateways' --ttl: a gateway whose heartbeat is older\n"
	"                   is dead, with its sessions (default 15000)\n"
	"    --all          every row, dead ones too\n"
	"    --gateway ID   only the sessions on gateway ID\n"
	"    --json         one JSON array of objects with keys member_id,\n"
	"                   instance_id, epoch, gateway_id, sandboxes, source, state,\n"
	"                   live, heartbeat_ms, expires_ms\n"
	"    --help         this text\n"
	"\n"
	"EXIT STATUS\n"
	"    0 success, 1 the store cannot be opened or read (the message names the\n"
	"    URL), 2 bad arguments.\n"
	"\n"
	"EXAMPLES\n"
	"    ringsteerctl sessions --gateway gw-a --json | jq length\n";

static const char *state_name(uint8_t state)
{
	return state == RS_SESSION_ACTIVE ? "active" : "pending";
}

enum { COL_MEMBER, COL_GATEWAY, COL_STATE, COL_EPOCH, COL_SANDBOXES, COL_SOURCE, COL_AGE, N_COLS };

static bool shown(const struct rs_session_row *row, const char *gateway)
{
	return !gateway || strcmp(row->gateway_id, gateway) == 0;
}

struct table {
	const struct rs_session_row *rows;
	const char *gateway;
	int64_t now_ms;
};

static bool table_row(const void *ctx, size_t i, char cell[][CTL_TABLE_CELL_SIZE])
{
	const struct table *t = ctx;
	const struct rs_session_row *row = &t->rows[i];

	if (!shown(row, t->gateway))
		return false;
	ctl_table_printable(cell[COL_MEMBER], sizeof(cell[COL_MEMBER]), row->member_id);
	ctl_table_printable(cell[COL_GATEWAY], sizeof(cell[COL_GATEWAY]), row->gateway_id);
	snprintf(cell[COL_STATE], sizeof(cell[COL_STATE]), "%s%s", state_name(row->state),
		 row->live ? "" : "(dead)");
	snprintf(cell[COL_EPOCH], sizeof(cell[COL_EPOCH]), "%" PRIu64, row->epoch);
	snprintf(cell[COL_SANDBOXES], sizeof(cell[COL_SANDBOXES]), "%" PRIu32, row->sandboxes);
	ctl_table_printable(cell[COL_SOURCE], sizeof(cell[COL_SOURCE]), row->source[0] ? row->source : "-");
	snprintf(cell[COL_AGE], sizeof(cell[COL_AGE]), "%" PRId64, t->now_ms - row->heartbeat_ms);
	return true;
}

static void print_table(const struct rs_session_row *rows, size_t n, const char *gateway, int64_t now_ms)
{
	static const char *const header[N_COLS] = { "MEMBER", "GATEWAY", "STATE", "EPOCH",
						     "SANDBOXES", "SOURCE", "AGE-MS" };
	const struct table t = { rows, gateway, now_ms };

	ctl_table_print(header, N_COLS, n, table_row, &t);
}

static void print_json(const struct rs_session_row *rows, size_t n, const char *gateway)
{
	json_t *list = json_array();

	for (size_t i = 0; list && i < n; i++) {
		if (!shown(&rows[i], gateway))
			continue;
		json_array_append_new(
			list, json_pack("{s:o, s:o, s:I, s:o, s:I, s:o, s:s, s:b, s:I, s:I}", "member_id",
					ctl_json_text(rows[i].member_id), "instance_id", ctl_json_text(rows[i].instance_id),
					"epoch", (json_int_t)rows[i].epoch, "gateway_id", ctl_json_text(rows[i].gateway_id),
					"sandboxes", (json_int_t)rows[i].sandboxes, "source", ctl_json_text(rows[i].source),
					"state", state_name(rows[i].state), "live", rows[i].live, "heartbeat_ms",
					(json_int_t)rows[i].heartbeat_ms, "expires_ms", (json_int_t)rows[i].expires_ms));
	}
	(void)ctl_json_print(stdout, list);
}

static int list(struct rs_store *st, const struct ctl_store_args *args, int64_t now_ms)
{
	struct rs_session_row *rows = NULL;
	size_t n = 0;
	int err = rs_store_list_sessions(st, now_ms, args->all, &rows, &n);

	if (err)
		return err;
	if (args->json)
		print_json(rows, n, args->gateway);
	else
		print_table(rows, n, args->gateway, now_ms);
	free(rows);
	return 0;
}

int ctl_sessions(int argc, char **argv)
{
	static const struct ctl_store_cmd cmd = { "sessions", sessions_usage, true, list };

	return ctl_store_run(&cmd, argc, argv);
}
