/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_table.c - aligned text tables: the rows are walked twice, once to
 * measure the columns and once to print them. */
#include "ctl_table.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

/* Prints one table cell padded to width, or the last one and a newline. */
static void print_cell(const char *s, size_t width, bool last)
{
	if (last)
		printf("%s\n", s);
	else
		printf("%-*s  ", (int)width, s);
}

void ctl_table_print(const char *const header[], size_t cols, size_t n, ctl_table_row_fn *row,
		     const void *ctx)
{
	size_t width[CTL_TABLE_COLS_MAX];
	char cell[CTL_TABLE_COLS_MAX][CTL_TABLE_CELL_SIZE];

	assert(cols > 0 && cols <= CTL_TABLE_COLS_MAX);
	for (size_t c = 0; c < cols; c++)
		width[c] = strlen(header[c]);
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1) {
			for (size_t c = 0; c < cols; c++)
				print_cell(header[c], width[c], c + 1 == cols);
		}
		for (size_t i = 0; i < n; i++) {
			if (!row(ctx, i, cell))
				continue;
			for (size_t c = 0; c < cols; c++) {
				if (pass == 0 && strlen(cell[c]) > width[c])
					width[c] = strlen(cell[c]);
				if (pass == 1)
					print_cell(cell[c], width[c], c + 1 == cols);
			}
		}
	}
}

void ctl_table_printable(char *dst, size_t size, const char *s)
{
	size_t i = 0;

	for (; s[i] && i + 1 < size; i++)
		dst[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	dst[i] = '\0';
}
