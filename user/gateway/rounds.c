/* rounds.c - a supervisor's Service fallbacks refused here in a row, so
 * that a lasting partition cannot keep it out for ever: the third round is
 * accepted above the cap (rs_admit.liveness).
 *
 * Kept in the gateway, by member id, not in the member's store row: the
 * rounds of one member are those that land here (each refusal is this
 * gateway's own decision, and an attach here ends the run), so the count
 * survives the supervisor's reconnects, which is all it needs; a store
 * column would need a schema version and a migration on both backends for
 * a counter whose loss (a gateway restart) costs at most two more rounds.
 * Where the Service spreads the rounds over several gateways at the cap,
 * each counts its own: liveness comes at worst a few rounds later.
 *
 * A run ends when the member attaches here, or lapses when no round came
 * for longer than the supervisor's longest backoff twice over (it found a
 * home elsewhere, or left).  Entries are few (members in such a run), so a
 * list pruned on each look-up is enough. */
#include <stdlib.h>
#include <string.h>

#include "gateway.h"
#include "ringsteer/mstime.h"
#include "ringsteer/backoff.h"

#define ROUNDS_LAPSE_MS (2 * (int64_t)RS_BACKOFF_MAX_MS)

/* Finds member_id's entry, dropping lapsed ones on the way. */
static struct gw_round *find(struct gateway *gw, const char *member_id, int64_t now)
{
	struct gw_round **p = &gw->rounds, *r, *found = NULL;

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

uint32_t gw_rounds_get(struct gateway *gw, const char *member_id)
{
	struct gw_round *r = find(gw, member_id, rs_mono_ms());

	return r ? r->n : 0;
}

void gw_rounds_refused(struct gateway *gw, const char *member_id)
{
	int64_t now = rs_mono_ms();
	struct gw_round *r = find(gw, member_id, now);

	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r)
			return; /* counted from zero again: liveness only later */
		strncpy(r->member_id, member_id, sizeof(r->member_id) - 1);
		r->next = gw->rounds;
		gw->rounds = r;
	}
	r->n++;
	r->last_ms = now;
}

void gw_rounds_end(struct gateway *gw, const char *member_id)
{
	for (struct gw_round **p = &gw->rounds, *r; (r = *p); p = &r->next) {
		if (strcmp(r->member_id, member_id) == 0) {
			*p = r->next;
			free(r);
			return;
		}
	}
}

void gw_rounds_free(struct gateway *gw)
{
	struct gw_round *r = gw->rounds, *next;

	for (; r; r = next) {
		next = r->next;
		free(r);
	}
	gw->rounds = NULL;
}
