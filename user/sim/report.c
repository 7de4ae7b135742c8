/* SPDX-License-Identifier: Apache-2.0 */
/* report.c - the simulator's tables: rows of short preformatted cells,
 * printed either as aligned plain text for a terminal or as a Markdown table
 * (padded too, so the Markdown source reads as well as it renders). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

typedef char sim_row[SIM_TABLE_COLS_MAX][SIM_CELL_MAX];

struct sim_table {
	size_t ncols;
	size_t text_cols;
	sim_row head;
	sim_row *rows;
	size_t n_rows, cap_rows;
};

static void copy_row(sim_row dst, const char *const *cells, size_t ncols)
{
	for (size_t c = 0; c < ncols; c++)
		snprintf(dst[c], SIM_CELL_MAX, "%s", cells[c] ? cells[c] : "");
}

int sim_table_new(const char *const *headers, size_t ncols, size_t text_cols, struct sim_table **out)
{
	struct sim_table *t;

	if (ncols == 0 || ncols > SIM_TABLE_COLS_MAX || text_cols > ncols)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->ncols = ncols;
	t->text_cols = text_cols;
	copy_row(t->head, headers, ncols);
	*out = t;
	return 0;
}

void sim_table_free(struct sim_table *t)
{
	if (!t)
		return;
	free(t->rows);
	free(t);
}

int sim_table_add(struct sim_table *t, const char *const *cells)
{
	if (t->n_rows == t->cap_rows) {
		size_t cap = t->cap_rows ? 2 * t->cap_rows : 16;
		sim_row *rows = realloc(t->rows, cap * sizeof(*rows));

		if (!rows)
			return -ENOMEM;
		t->rows = rows;
		t->cap_rows = cap;
	}
	copy_row(t->rows[t->n_rows++], cells, t->ncols);
	return 0;
}

static void print_cell(FILE *out, const char *cell, int width, bool left)
{
	if (left)
		fprintf(out, "%-*s", width, cell);
	else
		fprintf(out, "%*s", width, cell);
}

static void print_row(const struct sim_table *t, FILE *out, const sim_row row, const int *width, bool markdown)
{
	for (size_t c = 0; c < t->ncols; c++) {
		fputs(markdown ? (c ? " | " : "| ") : (c ? "  " : ""), out);
		print_cell(out, row[c], width[c], c < t->text_cols);
	}
	fputs(markdown ? " |\n" : "\n", out);
}

void sim_table_print(const struct sim_table *t, FILE *out, bool markdown)
{
	int width[SIM_TABLE_COLS_MAX];

	for (size_t c = 0; c < t->ncols; c++) {
		width[c] = (int)strlen(t->head[c]);
		for (size_t r = 0; r < t->n_rows; r++) {
			int w = (int)strlen(t->rows[r][c]);

			if (w > width[c])
				width[c] = w;
		}
		if (markdown && width[c] < 3)
			width[c] = 3;
	}
	print_row(t, out, t->head, width, markdown);
	for (size_t c = 0; c < t->ncols; c++) {
		bool left = c < t->text_cols;

		if (markdown) {
			/* "---" or "--:", padded to the column's width */
			fputs(c ? " | " : "| ", out);
			for (int k = 0; k < width[c] - 1; k++)
				fputc('-', out);
			fputc(left ? '-' : ':', out);
		} else {
			fputs(c ? "  " : "", out);
			for (int k = 0; k < width[c]; k++)
				fputc('-', out);
		}
	}
	fputs(markdown ? " |\n" : "\n", out);
	for (size_t r = 0; r < t->n_rows; r++)
		print_row(t, out, t->rows[r], width, markdown);
}
