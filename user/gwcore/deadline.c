/* SPDX-License-Identifier: Apache-2.0 */
/* deadline.c - the gateway core's deadline lists: each holds links whose
 * deadlines all have one length, so appending keeps it in order and its
 * head is the next due (O(1) to set, clear and find the next).  A link is
 * in at most one list.  Below every other file of the core: the HELLO, the
 * handoff and the admission queue each keep one. */
#include "gwcore.h"

void gwc_deadline_clear(struct rs_gw_link *l)
{
	struct gwc_deadlines *dl = l->dl;

	if (!dl)
		return;
	if (l->dl_prev)
		l->dl_prev->dl_next = l->dl_next;
	else
		dl->head = l->dl_next;
	if (l->dl_next)
		l->dl_next->dl_prev = l->dl_prev;
	else
		dl->tail = l->dl_prev;
	l->dl = NULL;
	l->dl_prev = l->dl_next = NULL;
}

void gwc_deadline_set(struct gwc_deadlines *dl, struct rs_gw_link *l, int64_t at_ms)
{
	gwc_deadline_clear(l);
	l->deadline_ms = at_ms;
	l->dl = dl;
	l->dl_prev = dl->tail;
	if (dl->tail)
		dl->tail->dl_next = l;
	else
		dl->head = l;
	dl->tail = l;
}
