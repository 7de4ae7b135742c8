/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_sim_json.c - reads the simulator's report back into JSON.  The
 * layout relied on (user/sim/run.c, report.c): a "seed N, T trials" line;
 * sections titled "K. title" (scenarios) or "Balls into bins..." ; in each,
 * a header line, a line of dashes, rows, a blank line.  Cells are separated
 * by at least two spaces and never contain two spaces in a row.  Anything
 * else is -EPROTO, so a change of layout fails loudly instead of writing
 * wrong JSON; the document is built whole (jansson) and printed only then. */
#include "ctl_sim_json.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_json.h"

#define CELLS_MAX 16

/* JSON keys for the table headers the simulator prints. */
static const struct {
	const char *header, *key;
} keys[] = {
	{ "config", "config" },     { "policy", "policy" },    { "max", "max" },
	{ "mean", "mean" },         { "max/mean", "max_over_mean" }, { "max-min", "spread" },
	{ "peak", "peak" },         { "moved", "moved" },      { "handoffs", "handoffs" },
	{ "n balls = n bins", "n" }, { "d=1 (random)", "d1" }, { "d=2 (two choices)", "d2" },
};

static const char *key_of(const char *header)
{
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strcmp(keys[i].header, header) == 0)
			return keys[i].key;
	return NULL;
}

/* Splits line in place at runs of two or more spaces (leading spaces
 * dropped).  Returns the number of cells, or -1 past CELLS_MAX. */
static int split_cells(char *line, char *cells[CELLS_MAX])
{
	int n = 0;
	char *p = line;

	while (*p == ' ')
		p++;
	while (*p) {
		char *gap;

		if (n == CELLS_MAX)
			return -1;
		cells[n++] = p;
		gap = strstr(p, "  ");
		if (!gap)
			break;
		*gap = '\0';
		p = gap + 2;
		while (*p == ' ')
			p++;
	}
	return n;
}

/* Whether s is a plain decimal number (what the tables print). */
static bool is_number(const char *s)
{
	bool digit = false, dot = false;

	if (*s == '-')
		s++;
	for (; *s; s++) {
		if (isdigit((unsigned char)*s))
			digit = true;
		else if (*s == '.' && !dot && digit)
			dot = true;
		else
			return false;
	}
	return digit && s[-1] != '.';
}

/* A cell's JSON value: a number when the table prints one, else text. */
static json_t *cell_value(const char *cell)
{
	if (!is_number(cell))
		return ctl_json_text(cell);
	if (strchr(cell, '.'))
		return json_real(strtod(cell, NULL));
	return json_integer(strtoll(cell, NULL, 10));
}

/* Adds key: cell to row.  Returns 0 or -ENOMEM. */
static int add_cell(json_t *row, const char *key, const char *cell)
{
	unsigned g, s;

	if (json_object_set_new(row, key, cell_value(cell)))
		return -ENOMEM;
	/* "G=4 S=100": the configuration's figures as numbers too. */
	if (strcmp(key, "config") == 0 && sscanf(cell, "G=%u S=%u", &g, &s) == 2 &&
	    (json_object_set_new(row, "gateways", json_integer(g)) || json_object_set_new(row, "supervisors", json_integer(s))))
		return -ENOMEM;
	return 0;
}

/* Reads one table from *lines (header, dashes, rows up to a blank line or
 * the end) into *rows, a new JSON array.  Returns 0, -EPROTO or -ENOMEM. */
static int read_table(char **lines, size_t n, size_t *i, json_t **rows)
{
	char *header[CELLS_MAX], *cells[CELLS_MAX];
	const char *names[CELLS_MAX];
	int cols;

	*rows = NULL;
	if (*i + 2 > n)
		return -EPROTO;
	cols = split_cells(lines[(*i)++], header);
	if (cols <= 0)
		return -EPROTO;
	for (int c = 0; c < cols; c++)
		if (!(names[c] = key_of(header[c])))
			return -EPROTO;
	if (lines[(*i)++][0] != '-')
		return -EPROTO;
	*rows = json_array();
	if (!*rows)
		return -ENOMEM;
	for (; *i < n && lines[*i][0]; (*i)++) {
		json_t *row;

		if (split_cells(lines[*i], cells) != cols)
			return -EPROTO;
		row = json_object();
		if (!row || json_array_append_new(*rows, row))
			return -ENOMEM;
		for (int c = 0; c < cols; c++)
			if (add_cell(row, names[c], cells[c]))
				return -ENOMEM;
	}
	return 0;
}

/* Skips blank lines. */
static void skip_blank(char **lines, size_t n, size_t *i)
{
	while (*i < n && !lines[*i][0])
		(*i)++;
}

/* Reads the report's lines into doc ({"seed", "trials", "scenarios",
 * "bins"}).  Returns 0, -EPROTO or -ENOMEM. */
static int read_report(char **lines, size_t n, json_t *doc)
{
	unsigned long long seed;
	unsigned trials;
	json_t *scenarios = json_array(), *bins = NULL;
	size_t i;
	int err;

	if (!scenarios)
		return -ENOMEM;
	if (n == 0 || sscanf(lines[0], "seed %llu, %u trials;", &seed, &trials) != 2) {
		json_decref(scenarios);
		return -EPROTO;
	}
	if (json_object_set_new(doc, "seed", json_integer((json_int_t)seed)) ||
	    json_object_set_new(doc, "trials", json_integer(trials)) || json_object_set_new(doc, "scenarios", scenarios))
		return -ENOMEM;
	for (i = 1, skip_blank(lines, n, &i); i < n; skip_blank(lines, n, &i)) {
		const char *title = lines[i++];
		unsigned number;
		int used = 0;
		json_t *rows, *scenario;

		if (strncmp(title, "Balls into bins", 15) == 0) {
			skip_blank(lines, n, &i);
			err = read_table(lines, n, &i, &bins);
			if (err) {
				json_decref(bins);
				return err;
			}
			skip_blank(lines, n, &i);
			if (json_object_set_new(doc, "bins", bins))
				return -ENOMEM;
			return i == n ? 0 : -EPROTO; /* nothing follows the bins */
		}
		if (sscanf(title, "%u. %n", &number, &used) != 1 || used == 0)
			return -EPROTO;
		skip_blank(lines, n, &i);
		err = read_table(lines, n, &i, &rows);
		if (err) {
			json_decref(rows);
			return err;
		}
		scenario = json_pack("{s:I, s:o, s:o}", "number", (json_int_t)number, "title", ctl_json_text(title + used),
				     "rows", rows);
		if (!scenario || json_array_append_new(scenarios, scenario))
			return -ENOMEM;
	}
	return json_object_set_new(doc, "bins", json_array()) ? -ENOMEM : 0;
}

int ctl_sim_json(char *text, FILE *out)
{
	char **lines = NULL;
	size_t n = 0, cap = 0;
	json_t *doc = json_object();
	int err = -ENOMEM;

	if (!doc)
		return -ENOMEM;
	for (char *save = NULL, *line = text; line; line = save) {
		save = strchr(line, '\n');
		if (save)
			*save++ = '\0';
		if (!save && !*line)
			break;
		if (n == cap) {
			char **grown = realloc(lines, (cap = cap ? 2 * cap : 64) * sizeof(*lines));

			if (!grown)
				goto cleanup;
			lines = grown;
		}
		lines[n++] = line;
	}
	err = read_report(lines, n, doc);
	if (!err) {
		err = ctl_json_print(out, doc);
		doc = NULL; /* printed and released */
	}
cleanup:
	json_decref(doc);
	free(lines);
	return err;
}
