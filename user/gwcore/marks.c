/* SPDX-License-Identifier: Apache-2.0 */
/* marks.c - deferred-placement marks that outlive their links.  A member
 * accepted degraded here and claimed above the cap is marked for one
 * placement by the rule (claim.c); the mark is its link's.  A blip before
 * the placement is decided ends that link, and the member redials here
 * asking to stay: the store honors a stay whatever the cap, so without
 * the mark the excess an outage left would stay for good.  So a marked
 * link that ends leaves its mark here, by member id, and the member's next
 * link accepted here as a stay takes it up (admission.c).
 *
 * Kept in the gateway, not in the store: the mark is this gateway's own
 * judgement, and only a redial here can lose it.  A mark lapses when its
 * member has not come back within twice the supervisor's longest backoff
 * (by then it went elsewhere or for good), and is dropped by any newer
 * link of its member accepted here (a stay takes it up; an arrival the
 * rule placed here is not above the cap).  Entries are few (the members an
 * outage left above the cap, and of those the ones a blip hit): a list
 * pruned on each look-up is enough. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gwcore.h"
#include "ringsteer/backoff.h"

#define MARK_LAPSE_MS (2 * (int64_t)RS_BACKOFF_MAX_MS)

struct gwc_mark {
	struct gwc_mark *next;
	uint64_t epoch;  /* the marked link's */
	int64_t left_ms; /* monotonic: when it ended */
	char member_id[RS_ID_MAX + 1];
};

/* member_id's mark, the lapsed ones dropped on the way; p_out: its link. */
static struct gwc_mark *find(struct rs_gw_core *core, const char *member_id, struct gwc_mark ***p_out)
{
	struct gwc_mark **p = &core->marks, *m, *found = NULL;

	while ((m = *p)) {
		if (core->now.mono_ms - m->left_ms > MARK_LAPSE_MS) {
			*p = m->next;
			free(m);
			continue;
		}
		if (!found && strcmp(m->member_id, member_id) == 0) {
			found = m;
			*p_out = p;
		}
		p = &m->next;
	}
	return found;
}

void gwc_marks_left(struct rs_gw_core *core, const char *member_id, uint64_t epoch)
{
	struct gwc_mark **p, *m = find(core, member_id, &p);

	if (!m) {
		m = calloc(1, sizeof(*m));
		if (!m)
			return; /* the member stays where it is: the cap is soft */
		snprintf(m->member_id, sizeof(m->member_id), "%s", member_id);
		m->next = core->marks;
		core->marks = m;
	} else if (m->epoch > epoch) {
		return; /* a newer link's mark stands */
	}
	m->epoch = epoch;
	m->left_ms = core->now.mono_ms;
}

bool gwc_marks_take(struct rs_gw_core *core, const char *member_id, uint64_t epoch)
{
	struct gwc_mark **p, *m = find(core, member_id, &p);

	/* Only a newer link takes it: an epoch grows with every connection. */
	if (!m || m->epoch >= epoch)
		return false;
	*p = m->next;
	free(m);
	return true;
}

void gwc_marks_free(struct rs_gw_core *core)
{
	struct gwc_mark *m = core->marks, *next;

	for (; m; m = next) {
		next = m->next;
		free(m);
	}
	core->marks = NULL;
}
