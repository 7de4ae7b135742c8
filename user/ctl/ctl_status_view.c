/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_status_view.c - the status table and its JSON twin.  The bar is
 * drawn in eighths of a column (U+2588 full block, U+2589..U+258F for the
 * last partial one) so that counts a few apart still look different at 40
 * columns; the numeric columns come before the bar so that every row has
 * the same whitespace-separated fields whatever its bar (awk-friendly). */
#include "ctl_status_view.h"

#include <inttypes.h>
#include <string.h>

#include "ctl_json.h"
#include "ctl_table.h"

/* U+2588 (8/8) down to U+258F (1/8), UTF-8. */
static const char *const eighths[9] = { "", "\u258f", "\u258e", "\u258d", "\u258c",
					"\u258b", "\u258a", "\u2589", "\u2588" };

static void print_bar(FILE *out, uint32_t count, uint32_t largest, unsigned width)
{
	uint64_t units;

	if (count == 0 || largest == 0)
		return;
	/* Rounded to the nearest eighth, but never to nothing. */
	units = ((uint64_t)count * width * 8 + largest / 2) / largest;
	if (units == 0)
		units = 1;
	for (uint64_t i = 0; i < units / 8; i++)
		fputs(eighths[8], out);
	fputs(eighths[units % 8], out);
}

/* Decimal digits of v. */
static int digits(uint64_t v)
{
	int d = 1;

	while (v >= 10) {
		v /= 10;
		d++;
	}
	return d;
}

static int max_int(int a, int b)
{
	return a > b ? a : b;
}

void ctl_status_print_table(FILE *out, const struct ctl_fleet *f, unsigned width)
{
	int w_id = 2, w_sup = (int)strlen("SUPERVISORS"), w_sand = (int)strlen("SANDBOXES"),
	    w_busy = (int)strlen("BUSIEST");
	char id[CTL_TABLE_CELL_SIZE];

	for (size_t k = 0; k < f->n; k++) {
		ctl_table_printable(id, sizeof(id), f->gws[k].id);
		w_id = max_int(w_id, (int)strlen(id));
		w_sand = max_int(w_sand, digits(f->gws[k].sandboxes));
	}
	fprintf(out, "%-*s  %-8s  %*s  %*s  %*s\n", w_id, "ID", "STATE", w_sup, "SUPERVISORS", w_sand, "SANDBOXES",
		w_busy, "BUSIEST");
	for (size_t k = 0; k < f->n; k++) {
		const struct ctl_fleet_gateway *g = &f->gws[k];

		ctl_table_printable(id, sizeof(id), g->id);
		fprintf(out, "%-*s  %-8s  %*" PRIu32 "  %*" PRIu64 "  %*" PRIu32 "  ", w_id, id,
			g->draining ? "draining" : "serving", w_sup, g->supervisors, w_sand, g->sandboxes, w_busy,
			g->busiest);
		print_bar(out, g->supervisors, f->largest, width);
		fputc('\n', out);
	}
	if (f->serving == 0) {
		fprintf(out, "supervisors=%" PRIu64 "  serving=0  cap=-  max=-  min=-  max-min=-  verdict=none\n",
			f->supervisors);
		return;
	}
	fprintf(out, "supervisors=%" PRIu64 "  serving=%" PRIu32 "  cap=%" PRIu32 "  max=%" PRIu32 "  min=%" PRIu32
		"  max-min=%" PRIu32 "  verdict=%s\n",
		f->supervisors, f->serving, f->cap, f->max, f->min, f->max - f->min, ctl_fleet_verdict(f));
}

/* value as a JSON integer, or null when not present. */
static json_t *uint_or_null(bool present, uint64_t value)
{
	return present ? json_integer((json_int_t)value) : json_null();
}

void ctl_status_print_json(FILE *out, const struct ctl_fleet *f)
{
	bool any = f->serving > 0;
	json_t *gateways = json_array();

	for (size_t k = 0; gateways && k < f->n; k++) {
		const struct ctl_fleet_gateway *g = &f->gws[k];

		json_array_append_new(gateways, json_pack("{s:o, s:s, s:b, s:I, s:I, s:I}", "id", ctl_json_text(g->id),
							  "state", g->draining ? "draining" : "serving", "live", 1,
							  "supervisors", (json_int_t)g->supervisors, "sandboxes",
							  (json_int_t)g->sandboxes, "busiest_sandboxes",
							  (json_int_t)g->busiest));
	}
	(void)ctl_json_print(out, json_pack("{s:o, s:I, s:I, s:I, s:o, s:o, s:o, s:b, s:s}", "gateways", gateways,
					    "supervisors", (json_int_t)f->supervisors, "serving_gateways",
					    (json_int_t)f->serving, "cap", (json_int_t)f->cap, "max",
					    uint_or_null(any, f->max), "min", uint_or_null(any, f->min), "spread",
					    uint_or_null(any, (uint64_t)f->max - f->min), "even",
					    any && f->max - f->min <= 1, "verdict", ctl_fleet_verdict(f)));
}
