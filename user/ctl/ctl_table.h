/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_table.h - aligned text tables for ringsteerctl's listings: a header
 * line, then one line per row, each column as wide as its widest cell and
 * two spaces after it, the last column unpadded. */
#ifndef RS_CTL_TABLE_H
#define RS_CTL_TABLE_H

#include <stdbool.h>
#include <stddef.h>

#include "ringsteer/ring.h"

#define CTL_TABLE_COLS_MAX 8
#define CTL_TABLE_CELL_SIZE (RS_ID_MAX + 1) /* a longer cell is cut */

/* Fills cell[0..cols-1] for row i of the caller's rows; returns false to
 * leave the row out.  Called twice per row (widths, then output), so it
 * must fill the same cells both times. */
typedef bool ctl_table_row_fn(const void *ctx, size_t i, char cell[][CTL_TABLE_CELL_SIZE]);

/* Prints header[0..cols-1] (cols at most CTL_TABLE_COLS_MAX) and rows
 * 0..n-1 to stdout. */
void ctl_table_print(const char *const header[], size_t cols, size_t n, ctl_table_row_fn *row,
		     const void *ctx);

/* Copies s into dst[size] for a terminal, cut to fit: control bytes
 * become '?'. */
void ctl_table_printable(char *dst, size_t size, const char *s);

#endif
