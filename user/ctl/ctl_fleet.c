/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_fleet.c - reads the fleet for `ringsteerctl status`: two listings
 * at the same now (gateways, then sessions), joined by gateway id.  Both
 * lists come sorted by gateway id, so the join is one merge pass. */
#include "ctl_fleet.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ringsteer/placement.h"

/* Adds the sessions of gateway g (a run starting at rows[*i]) to it. */
static void add_sessions(struct ctl_fleet_gateway *g, const struct rs_session_row *rows, size_t n, size_t *i)
{
	for (; *i < n && strcmp(rows[*i].gateway_id, g->id) == 0; (*i)++) {
		if (!rows[*i].live)
			continue; /* the live listing has none; cheap to be sure */
		g->supervisors++;
		g->sandboxes += rows[*i].sandboxes;
		if (rows[*i].sandboxes > g->busiest)
			g->busiest = rows[*i].sandboxes;
	}
}

static void summarize(struct ctl_fleet *f)
{
	bool first = true;

	for (size_t k = 0; k < f->n; k++) {
		const struct ctl_fleet_gateway *g = &f->gws[k];

		f->supervisors += g->supervisors;
		if (g->supervisors > f->largest)
			f->largest = g->supervisors;
		if (g->draining)
			continue;
		f->serving++;
		if (first || g->supervisors > f->max)
			f->max = g->supervisors;
		if (first || g->supervisors < f->min)
			f->min = g->supervisors;
		first = false;
	}
	f->cap = rs_cap(f->supervisors, f->serving);
}

int ctl_fleet_read(struct rs_store *st, int64_t now_ms, struct ctl_fleet *f)
{
	struct rs_gateway_row *gws = NULL;
	struct rs_session_row *sessions = NULL;
	size_t n_gws = 0, n_sessions = 0, i = 0;
	int err;

	memset(f, 0, sizeof(*f));
	err = rs_store_list_gateways(st, now_ms, false, &gws, &n_gws);
	if (err)
		goto cleanup;
	err = rs_store_list_sessions(st, now_ms, false, &sessions, &n_sessions);
	if (err)
		goto cleanup;
	f->gws = calloc(n_gws ? n_gws : 1, sizeof(*f->gws));
	if (!f->gws) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t k = 0; k < n_gws; k++) {
		struct ctl_fleet_gateway *g = &f->gws[f->n++];

		memcpy(g->id, gws[k].id, sizeof(g->id));
		g->draining = gws[k].state == RS_GATEWAY_DRAINING;
		/* Sessions of gateways that are not in this listing (one that
		 * died between the two reads) are skipped. */
		while (i < n_sessions && strcmp(sessions[i].gateway_id, g->id) < 0)
			i++;
		add_sessions(g, sessions, n_sessions, &i);
	}
	summarize(f);
cleanup:
	if (err)
		ctl_fleet_free(f);
	free(sessions);
	free(gws);
	return err;
}

void ctl_fleet_free(struct ctl_fleet *f)
{
	free(f->gws);
	memset(f, 0, sizeof(*f));
}

const char *ctl_fleet_verdict(const struct ctl_fleet *f)
{
	if (f->serving == 0)
		return "none";
	return f->max - f->min <= 1 ? "even" : "uneven";
}
