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

static void key_uint_or_null(FILE *out, const char *name, bool present, uint64_t value)
{
	fputs(", ", out);
	ctl_json_string(out, name);
	if (present)
		fprintf(out, ": %" PRIu64, value);
	else
		fputs(": null", out);
}

void ctl_status_print_json(FILE *out, const struct ctl_fleet *f)
{
	bool any = f->serving > 0;

	fputs("{\"gateways\": [", out);
	for (size_t k = 0; k < f->n; k++) {
		const struct ctl_fleet_gateway *g = &f->gws[k];

		fputs(k ? ", {" : "{", out);
		ctl_json_key_string(out, true, "id", g->id);
		ctl_json_key_string(out, false, "state", g->draining ? "draining" : "serving");
		ctl_json_key_bool(out, false, "live", true);
		ctl_json_key_uint(out, false, "supervisors", g->supervisors);
		ctl_json_key_uint(out, false, "sandboxes", g->sandboxes);
		ctl_json_key_uint(out, false, "busiest_sandboxes", g->busiest);
		fputc('}', out);
	}
	fputc(']', out);
	ctl_json_key_uint(out, false, "supervisors", f->supervisors);
	ctl_json_key_uint(out, false, "serving_gateways", f->serving);
	ctl_json_key_uint(out, false, "cap", f->cap);
	key_uint_or_null(out, "max", any, f->max);
	key_uint_or_null(out, "min", any, f->min);
	key_uint_or_null(out, "spread", any, (uint64_t)f->max - f->min);
	ctl_json_key_bool(out, false, "even", any && f->max - f->min <= 1);
	ctl_json_key_string(out, false, "verdict", ctl_fleet_verdict(f));
	fputs("}\n", out);
}
