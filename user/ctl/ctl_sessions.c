/* ctl_sessions.c - `ringsteerctl sessions [--store URL] [--all] [--json]
 * [--gateway ID]`: the supervisor sessions in the store (one row per
 * member), as a table or one JSON document, sorted by gateway then member.
 * Read-only (opening a store that does not exist yet creates its schema,
 * as any open does).  Exit status: 0, 1 when the store cannot be opened or
 * read (the message names the URL), 2 bad arguments. */
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

static const char sessions_usage[] =
	"usage: ringsteerctl sessions [--store URL] [--all] [--json] [--gateway ID]\n"
	"\n"
	"Lists the live sessions in the store (every row with --all), or only\n"
	"those on gateway ID: MEMBER, GATEWAY, STATE (active, or pending: a\n"
	"reservation at a redirect target; \"(dead)\" is added to rows past\n"
	"their TTL or reservation, or on a dead gateway), EPOCH, SANDBOXES,\n"
	"SOURCE and AGE-MS (since the last heartbeat).  --json prints one JSON\n"
	"array of objects with keys member_id, instance_id, epoch, gateway_id,\n"
	"sandboxes, source, state, live, heartbeat_ms, expires_ms.\n"
	"The store defaults to " RS_STORE_DEFAULT_URL ".\n";

static const char *state_name(uint8_t state)
{
	return state == RS_SESSION_ACTIVE ? "active" : "pending";
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

enum { COL_MEMBER, COL_GATEWAY, COL_STATE, COL_EPOCH, COL_SANDBOXES, COL_SOURCE, COL_AGE, N_COLS };

static bool shown(const struct rs_session_row *row, const char *gateway)
{
	return !gateway || strcmp(row->gateway_id, gateway) == 0;
}

static void print_table(const struct rs_session_row *rows, size_t n, const char *gateway, int64_t now_ms)
{
	static const char *const header[N_COLS] = { "MEMBER", "GATEWAY", "STATE", "EPOCH",
						     "SANDBOXES", "SOURCE", "AGE-MS" };
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
			if (!shown(&rows[i], gateway))
				continue;
			printable(cell[COL_MEMBER], sizeof(cell[COL_MEMBER]), rows[i].member_id);
			printable(cell[COL_GATEWAY], sizeof(cell[COL_GATEWAY]), rows[i].gateway_id);
			snprintf(cell[COL_STATE], sizeof(cell[COL_STATE]), "%s%s", state_name(rows[i].state),
				 rows[i].live ? "" : "(dead)");
			snprintf(cell[COL_EPOCH], sizeof(cell[COL_EPOCH]), "%" PRIu64, rows[i].epoch);
			snprintf(cell[COL_SANDBOXES], sizeof(cell[COL_SANDBOXES]), "%" PRIu32, rows[i].sandboxes);
			printable(cell[COL_SOURCE], sizeof(cell[COL_SOURCE]), rows[i].source[0] ? rows[i].source : "-");
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

static void print_json(const struct rs_session_row *rows, size_t n, const char *gateway)
{
	bool first = true;

	fputs("[", stdout);
	for (size_t i = 0; i < n; i++) {
		if (!shown(&rows[i], gateway))
			continue;
		fputs(first ? "\n  {" : ",\n  {", stdout);
		first = false;
		ctl_json_key_string(stdout, true, "member_id", rows[i].member_id);
		ctl_json_key_string(stdout, false, "instance_id", rows[i].instance_id);
		ctl_json_key_uint(stdout, false, "epoch", rows[i].epoch);
		ctl_json_key_string(stdout, false, "gateway_id", rows[i].gateway_id);
		ctl_json_key_uint(stdout, false, "sandboxes", rows[i].sandboxes);
		ctl_json_key_string(stdout, false, "source", rows[i].source);
		ctl_json_key_string(stdout, false, "state", state_name(rows[i].state));
		ctl_json_key_bool(stdout, false, "live", rows[i].live);
		ctl_json_key_int(stdout, false, "heartbeat_ms", rows[i].heartbeat_ms);
		ctl_json_key_int(stdout, false, "expires_ms", rows[i].expires_ms);
		fputs("}", stdout);
	}
	fputs(first ? "]\n" : "\n]\n", stdout);
}

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int ctl_sessions(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "store", required_argument, NULL, 's' },
		{ "all", no_argument, NULL, 'a' },
		{ "json", no_argument, NULL, 'j' },
		{ "gateway", required_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *url = RS_STORE_DEFAULT_URL, *gateway = NULL;
	struct rs_session_row *rows = NULL;
	struct rs_store *st = NULL;
	bool all = false, json = false;
	int64_t now_ms;
	size_t n = 0;
	int c, err, rc = 1;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":s:ajg:h", opts, NULL)) != -1) {
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
		case 'g':
			gateway = optarg;
			break;
		case 'h':
			fputs(sessions_usage, stdout);
			return 0;
		case ':':
			return ctl_usage_error("sessions", "option %s needs a value", argv[optind - 1]);
		default:
			return ctl_usage_error("sessions", "unknown option %s", argv[optind - 1]);
		}
	}
	if (optind != argc)
		return ctl_usage_error("sessions", "unexpected argument '%s'", argv[optind]);
	if (gateway && (!*gateway || strlen(gateway) > RS_ID_MAX))
		return ctl_usage_error("sessions", "--gateway: id must be 1 to %d bytes", RS_ID_MAX);

	err = rs_store_open(url, NULL, &st);
	if (err == -EINVAL)
		return ctl_usage_error("sessions", "--store: '%s' is not a store URL (sqlite:PATH)", url);
	if (err == -EPROTONOSUPPORT)
		return ctl_usage_error("sessions", "--store: unsupported scheme in '%s'", url);
	if (err == -EIO) {
		fprintf(stderr, "ringsteerctl sessions: cannot open store %s: %s (missing directory, no permission, "
			"or not a ringsteer store)\n", url, strerror(-err));
		goto cleanup;
	}
	if (err) {
		fprintf(stderr, "ringsteerctl sessions: cannot open store %s: %s\n", url, strerror(-err));
		goto cleanup;
	}
	now_ms = wall_ms();
	err = rs_store_list_sessions(st, now_ms, all, &rows, &n);
	if (err) {
		fprintf(stderr, "ringsteerctl sessions: cannot read store %s: %s\n", url, strerror(-err));
		goto cleanup;
	}
	if (json)
		print_json(rows, n, gateway);
	else
		print_table(rows, n, gateway, now_ms);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "ringsteerctl sessions: cannot write output: %s\n", strerror(errno));
		goto cleanup;
	}
	rc = 0;
cleanup:
	free(rows);
	rs_store_close(st);
	return rc;
}
