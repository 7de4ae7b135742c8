/* ctl_gateways.c - `ringsteerctl gateways [--store URL] [--all] [--json]`:
 * the gateways in the store with their state and load, as a table or one
 * JSON document.  Read-only (opening a store that does not exist yet
 * creates its schema, as any open does).  Exit status: 0, 1 when the store
 * cannot be opened or read (the message names the URL), 2 bad arguments. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl.h"
#include "ctl_args.h"
#include "ctl_json.h"
#include "ringsteer/store.h"

static const char gateways_usage[] =
	"usage: ringsteerctl gateways [--store URL] [--all] [--json]\n"
	"\n"
	"Lists the live gateways in the store (every registered one with --all):\n"
	"ID, PEER, STATE (serving or draining), LIVE (heartbeat within the TTL),\n"
	"SUPERVISORS (live sessions on it, reservations included) and\n"
	"HEARTBEAT-AGE-MS.  --json prints one JSON array of objects with keys\n"
	"id, peer, state, live, supervisors, heartbeat_ms.\n"
	"The store defaults to " RS_STORE_DEFAULT_URL ".\n";

static const char *state_name(uint8_t state)
{
	return state == RS_GATEWAY_DRAINING ? "draining" : "serving";
}

/* Copies s for a terminal: control bytes become '?'. */
static void printable(char *dst, size_t size, const char *s)
{
	size_t i = 0;

	for (; s[i] && i + 1 < size; i++)
		dst[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	dst[i] = '\0';
}

/* Prints one table cell padded to width, or the last one and a newline. */
static void print_cell(const char *s, size_t width, bool last)
{
	if (last)
		printf("%s\n", s);
	else
		printf("%-*s  ", (int)width, s);
}

enum { COL_ID, COL_PEER, COL_STATE, COL_LIVE, COL_SUPERVISORS, COL_AGE, N_COLS };

static void print_table(const struct rs_gateway_row *rows, size_t n, int64_t now_ms)
{
	static const char *const header[N_COLS] = { "ID", "PEER", "STATE", "LIVE", "SUPERVISORS",
						     "HEARTBEAT-AGE-MS" };
	size_t width[N_COLS];
	char cell[N_COLS][RS_ID_MAX + 1];

	for (int c = 0; c < N_COLS; c++)
		width[c] = strlen(header[c]);
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1) {
			for (int c = 0; c < N_COLS; c++)
				print_cell(header[c], width[c], c + 1 == N_COLS);
		}
		for (size_t i = 0; i < n; i++) {
			printable(cell[COL_ID], sizeof(cell[COL_ID]), rows[i].id);
			printable(cell[COL_PEER], sizeof(cell[COL_PEER]), rows[i].peer);
			snprintf(cell[COL_STATE], sizeof(cell[COL_STATE]), "%s", state_name(rows[i].state));
			snprintf(cell[COL_LIVE], sizeof(cell[COL_LIVE]), "%s", rows[i].live ? "yes" : "no");
			snprintf(cell[COL_SUPERVISORS], sizeof(cell[COL_SUPERVISORS]), "%" PRIu32,
				 rows[i].supervisors);
			snprintf(cell[COL_AGE], sizeof(cell[COL_AGE]), "%" PRId64, now_ms - rows[i].heartbeat_ms);
			for (int c = 0; c < N_COLS; c++) {
				if (pass == 0 && strlen(cell[c]) > width[c])
					width[c] = strlen(cell[c]);
				if (pass == 1)
					print_cell(cell[c], width[c], c + 1 == N_COLS);
			}
		}
	}
}

static void print_json(const struct rs_gateway_row *rows, size_t n)
{
	fputs(n ? "[\n" : "[", stdout);
	for (size_t i = 0; i < n; i++) {
		fputs("  {", stdout);
		ctl_json_key_string(stdout, true, "id", rows[i].id);
		ctl_json_key_string(stdout, false, "peer", rows[i].peer);
		ctl_json_key_string(stdout, false, "state", state_name(rows[i].state));
		ctl_json_key_bool(stdout, false, "live", rows[i].live);
		ctl_json_key_uint(stdout, false, "supervisors", rows[i].supervisors);
		ctl_json_key_int(stdout, false, "heartbeat_ms", rows[i].heartbeat_ms);
		fputs(i + 1 < n ? "},\n" : "}\n", stdout);
	}
	fputs("]\n", stdout);
}

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int ctl_gateways(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "store", required_argument, NULL, 's' },
		{ "all", no_argument, NULL, 'a' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *url = RS_STORE_DEFAULT_URL;
	struct rs_gateway_row *rows = NULL;
	struct rs_store *st = NULL;
	bool all = false, json = false;
	int64_t now_ms;
	size_t n = 0;
	int c, err, rc = 1;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":s:ajh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			url = optarg;
			break;
		case 'a':
			all = true;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			fputs(gateways_usage, stdout);
			return 0;
		case ':':
			return ctl_usage_error("gateways", "option %s needs a value", argv[optind - 1]);
		default:
			return ctl_usage_error("gateways", "unknown option %s", argv[optind - 1]);
		}
	}
	if (optind != argc)
		return ctl_usage_error("gateways", "unexpected argument '%s'", argv[optind]);

	err = rs_store_open(url, NULL, &st);
	if (err == -EINVAL)
		return ctl_usage_error("gateways", "--store: '%s' is not a store URL (sqlite:PATH)", url);
	if (err == -EPROTONOSUPPORT)
		return ctl_usage_error("gateways", "--store: unsupported scheme in '%s'", url);
	if (err == -EIO) {
		fprintf(stderr, "ringsteerctl gateways: cannot open store %s: %s (missing directory, no permission, "
			"or not a ringsteer store)\n", url, strerror(-err));
		goto cleanup;
	}
	if (err) {
		fprintf(stderr, "ringsteerctl gateways: cannot open store %s: %s\n", url, strerror(-err));
		goto cleanup;
	}
	now_ms = wall_ms();
	err = rs_store_list_gateways(st, now_ms, all, &rows, &n);
	if (err) {
		fprintf(stderr, "ringsteerctl gateways: cannot read store %s: %s\n", url, strerror(-err));
		goto cleanup;
	}
	if (json)
		print_json(rows, n);
	else
		print_table(rows, n, now_ms);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "ringsteerctl gateways: cannot write output: %s\n", strerror(errno));
		goto cleanup;
	}
	rc = 0;
cleanup:
	free(rows);
	rs_store_close(st);
	return rc;
}
