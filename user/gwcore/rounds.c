/* SPDX-License-Identifier: Apache-2.0 */
/* rounds.c - a supervisor's Service fallbacks refused here in a row, so
 * that a lasting partition cannot keep it out for ever: the third round is
 * accepted above the cap (rs_admit.liveness).
 *
 * Kept in the gateway by member id, not in the store: each refusal is this
 * gateway's own decision and an attach here ends the run, so the count
 * survives the supervisor's reconnects, which is all it needs; its loss (a
 * gateway restart) costs at most two more rounds.  A run lapses when no
 * round came for twice the supervisor's longest backoff.  Entries are few
 * (members in such a run): a list pruned on each look-up is enough. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gwcore.h"
#include "ringsteer/backoff.h"

#define ROUNDS_LAPSE_MS (2 * (int64_t)RS_BACKOFF_MAX_MS)

struct gwc_round {
	struct gwc_round *next;
	uint32_t n;
	int64_t last_ms;
	char member_id[RS_ID_MAX + 1];
};

static struct gwc_round *find(struct rs_gw_core *core, const char *member_id)
{
	struct gwc_round **p = &core->rounds, *r, *found = NULL;
	int64_t now = core->now.mono_ms;

	while ((r = *p)) {
		if (now - r->last_ms > ROUNDS_LAPSE_MS) {
			*p = r->next;
			free(r);
			continue;
		}
		if (strcmp(r->member_id, member_id) == 0)
			found = r;
		p = &r->next;
	}
	return found;
}

uint32_t gwc_rounds_get(struct rs_gw_core *core, const char *member_id)
{
	struct gwc_round *r = find(core, member_id);

	return r ? r->n : 0;
}

void gwc_rounds_refused(struct rs_gw_core *core, const char *member_id)
{
	struct gwc_round *r = find(core, member_id);

	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r)
			return; /* counted from zero again: liveness only later */
		snprintf(r->member_id, sizeof(r->member_id), "%s", member_id);
		r->next = core->rounds;
		core->rounds = r;
	}
	r->n++;
	r->last_ms = core->now.mono_ms;
}

void gwc_rounds_end(struct rs_gw_core *core, const char *member_id)
{
	for (struct gwc_round **p = &core->rounds, *r; (r = *p); p = &r->next) {
		if (strcmp(r->member_id, member_id) == 0) {
			*p = r->next;
			free(r);
			return;
		}
	}
}

void gwc_rounds_free(struct rs_gw_core *core)
{
	struct gwc_round *r = core->rounds, *next;

	for (; r; r = next) {
		next = r->next;
		free(r);
	}
	core->rounds = NULL;
}
