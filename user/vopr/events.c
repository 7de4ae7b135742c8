/* SPDX-License-Identifier: Apache-2.0 */
/* events.c - the simulator's one time line: a binary heap of events
 * ordered by (time, order of scheduling), so that two events due at the
 * same simulated millisecond always run in the same order, whatever the
 * heap's layout: the run is a function of its seed alone. */
#include <errno.h>
#include <stdlib.h>

#include "vopr/world.h"

static bool before(const struct ev *x, const struct ev *y)
{
	return x->at < y->at || (x->at == y->at && x->seq < y->seq);
}

int ev_push(struct world *w, int64_t at, enum ev_type type, uint32_t a, uint64_t b)
{
	struct ev_queue *q = &w->q;
	size_t i;

	if (q->n == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 1024;
		struct ev *h = realloc(q->h, cap * sizeof(*h));

		if (!h) {
			w->oom = true; /* the loop stops: a run missing an event is no replay */
			return -ENOMEM;
		}
		q->h = h;
		q->cap = cap;
	}
	if (at < w->now)
		at = w->now; /* nothing happens in the past */
	i = q->n++;
	q->h[i] = (struct ev){ .at = at, .seq = q->seq++, .type = type, .a = a, .b = b };
	while (i > 0) {
		size_t up = (i - 1) / 2;
		struct ev t;

		if (!before(&q->h[i], &q->h[up]))
			break;
		t = q->h[up];
		q->h[up] = q->h[i];
		q->h[i] = t;
		i = up;
	}
	return 0;
}

bool ev_pop(struct world *w, struct ev *out)
{
	struct ev_queue *q = &w->q;
	size_t i = 0;

	if (q->n == 0)
		return false;
	*out = q->h[0];
	q->h[0] = q->h[--q->n];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		struct ev t;

		if (l < q->n && before(&q->h[l], &q->h[m]))
			m = l;
		if (r < q->n && before(&q->h[r], &q->h[m]))
			m = r;
		if (m == i)
			break;
		t = q->h[m];
		q->h[m] = q->h[i];
		q->h[i] = t;
		i = m;
	}
	return true;
}

void ev_fini(struct world *w)
{
	free(w->q.h);
	w->q = (struct ev_queue){ 0 };
}
