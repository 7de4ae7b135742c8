/* ctl_sim_json.c - reads the simulator's report back into JSON.  The
 * layout relied on (user/sim/run.c, report.c): a "seed N, T trials" line;
 * sections titled "K. title" (scenarios) or "Balls into bins..." ; in each,
 * a header line, a line of dashes, rows, a blank line.  Cells are separated
 * by at least two spaces and never contain two spaces in a row.  Anything
 * else is -EPROTO, so a change of layout fails loudly instead of writing
 * wrong JSON. */
#include "ctl_sim_json.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
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

static void write_cell(FILE *out, bool first, const char *key, const char *cell)
{
	unsigned g, s;

	if (!first)
		fputs(", ", out);
	ctl_json_string(out, key);
	fputs(": ", out);
	if (is_number(cell))
		fputs(cell, out);
	else
		ctl_json_string(out, cell);
	/* "G=4 S=100": the configuration's figures as numbers too. */
	if (strcmp(key, "config") == 0 && sscanf(cell, "G=%u S=%u", &g, &s) == 2)
		fprintf(out, ", \"gateways\": %u, \"supervisors\": %u", g, s);
}

/* Reads one table from *lines (header, dashes, rows up to a blank line or
 * the end) and writes its rows as a JSON array.  Returns 0 or -EPROTO. */
static int write_table(char **lines, size_t n, size_t *i, FILE *out)
{
	char *header[CELLS_MAX], *cells[CELLS_MAX];
	const char *names[CELLS_MAX];
	int cols;

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
	fputc('[', out);
	for (bool first = true; *i < n && lines[*i][0]; (*i)++, first = false) {
		if (split_cells(lines[*i], cells) != cols)
			return -EPROTO;
		fputs(first ? "{" : ", {", out);
		for (int c = 0; c < cols; c++)
			write_cell(out, c == 0, names[c], cells[c]);
		fputc('}', out);
	}
	fputc(']', out);
	return 0;
}

/* Skips blank lines. */
static void skip_blank(char **lines, size_t n, size_t *i)
{
	while (*i < n && !lines[*i][0])
		(*i)++;
}

int ctl_sim_json(char *text, FILE *out)
{
	unsigned long long seed;
	unsigned trials;
	char **lines = NULL;
	size_t n = 0, cap = 0, i = 0;
	bool bins = false, first_scenario = true;
	int err = -EPROTO;

	for (char *save = NULL, *line = text; line; line = save) {
		save = strchr(line, '\n');
		if (save)
			*save++ = '\0';
		if (!save && !*line)
			break;
		if (n == cap) {
			char **grown = realloc(lines, (cap = cap ? 2 * cap : 64) * sizeof(*lines));

			if (!grown) {
				err = -ENOMEM;
				goto cleanup;
			}
			lines = grown;
		}
		lines[n++] = line;
	}
	if (n == 0 || sscanf(lines[0], "seed %llu, %u trials;", &seed, &trials) != 2)
		goto cleanup;
	fprintf(out, "{\"seed\": %llu, \"trials\": %u, \"scenarios\": [", seed, trials);
	for (i = 1, skip_blank(lines, n, &i); i < n; skip_blank(lines, n, &i)) {
		const char *title = lines[i++];
		unsigned number;
		int used = 0;

		if (strncmp(title, "Balls into bins", 15) == 0) {
			fputs("], \"bins\": ", out);
			skip_blank(lines, n, &i);
			err = write_table(lines, n, &i, out);
			if (err)
				goto cleanup;
			err = -EPROTO;
			bins = true;
			skip_blank(lines, n, &i);
			if (i != n)
				goto cleanup; /* nothing follows the bins */
			break;
		}
		if (bins || sscanf(title, "%u. %n", &number, &used) != 1 || used == 0)
			goto cleanup;
		fputs(first_scenario ? "{" : ", {", out);
		first_scenario = false;
		fprintf(out, "\"number\": %u", number);
		ctl_json_key_string(out, false, "title", title + used);
		fputs(", \"rows\": ", out);
		skip_blank(lines, n, &i);
		err = write_table(lines, n, &i, out);
		if (err)
			goto cleanup;
		err = -EPROTO;
		fputc('}', out);
	}
	if (!bins)
		fputs("], \"bins\": [", out);
	fputs(bins ? "}\n" : "]}\n", out);
	err = 0;
cleanup:
	free(lines);
	return err;
}
