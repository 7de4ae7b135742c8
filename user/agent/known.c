/* SPDX-License-Identifier: Apache-2.0 */
/* known.c - the supervisors the agent knows (precompute.h): remembered from
 * session rows, kept while they are seen, forgotten past the horizon.
 *
 * Invariants: e[0..n) is sorted by member_id with no member twice; each
 * entry's point is its member_id's ring point; n <= AGENT_KNOWN_MAX.
 *
 * A pass in steady state (no new member) costs one hash lookup per row; new
 * members are sorted among themselves and merged in once per pass (then
 * the index is rebuilt), so a pass never sorts the whole set. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "precompute.h"

_Static_assert(sizeof(((struct agent_known *)0)->source) == sizeof(((struct rs_session_row *)0)->source),
	       "a row's source is copied whole");

static int known_cmp(const void *x, const void *y)
{
	return strcmp(((const struct agent_known *)x)->member_id, ((const struct agent_known *)y)->member_id);
}

/* Binary search over e[0..n). */
static struct agent_known *search(struct agent_known *e, size_t n, const char *member_id)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(e[mid].member_id, member_id);

		if (c == 0)
			return &e[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static uint64_t id_hash(const char *id)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a: ids are short, the table only needs spread */

	for (; *id; id++)
		h = (h ^ (unsigned char)*id) * 0x100000001b3ull;
	return h;
}

/* Rebuilds the index over e[0..n).  Returns 0 or -ENOMEM (no index: the
 * callers fall back to binary search). */
static int index_build(struct agent_known_set *s)
{
	size_t cap = 64;

	while (cap < 2 * s->n)
		cap *= 2;
	if (cap != s->index_cap) {
		uint32_t *idx = realloc(s->index, 2 * cap * sizeof(*idx));

		if (!idx) {
			free(s->index);
			s->index = NULL;
			s->index_cap = 0;
			return -ENOMEM;
		}
		s->index = idx;
		s->index_cap = cap;
	}
	memset(s->index, 0xff, 2 * cap * sizeof(*s->index));
	for (size_t i = 0; i < s->n; i++) {
		uint64_t h = id_hash(s->e[i].member_id);
		size_t slot = h & (cap - 1);

		while (s->index[2 * slot] != UINT32_MAX)
			slot = (slot + 1) & (cap - 1);
		s->index[2 * slot] = (uint32_t)i;
		s->index[2 * slot + 1] = (uint32_t)(h >> 32);
	}
	s->index_stale = false;
	return 0;
}

/* The index over e[0..n) as it is now.  Returns false when there is none
 * (no memory): the callers fall back to binary search. */
static bool index_ready(struct agent_known_set *s)
{
	return (!s->index_stale && s->index) || index_build(s) == 0;
}

/* member_id's entry, by the index (which must be ready).  The hash's high
 * half is compared first: a probe touches an entry (a cache miss) only
 * when it is almost surely the one. */
static struct agent_known *probe(const struct agent_known_set *s, const char *member_id)
{
	uint64_t h = id_hash(member_id);
	size_t mask = s->index_cap - 1;

	for (size_t slot = h & mask; s->index[2 * slot] != UINT32_MAX; slot = (slot + 1) & mask)
		if (s->index[2 * slot + 1] == (uint32_t)(h >> 32) &&
		    strcmp(s->e[s->index[2 * slot]].member_id, member_id) == 0)
			return &s->e[s->index[2 * slot]];
	return NULL;
}

const struct agent_known *agent_known_find(const struct agent_known_set *s, const char *member_id)
{
	return search(s->e, s->n, member_id);
}

void agent_known_seen(struct agent_known_set *s, const char *member_id, int64_t now_ms)
{
	struct agent_known *k = index_ready(s) ? probe(s, member_id) : search(s->e, s->n, member_id);

	if (k && k->seen_ms < now_ms)
		k->seen_ms = now_ms;
}

static int grow(struct agent_known_set *s)
{
	size_t cap = s->cap ? s->cap * 2 : 64;
	struct agent_known *e;

	if (cap > AGENT_KNOWN_MAX)
		cap = AGENT_KNOWN_MAX;
	e = realloc(s->e, cap * sizeof(*e));
	if (!e)
		return -ENOMEM;
	s->e = e;
	s->cap = cap;
	return 0;
}

/* One member twice among the new ones (a listing should hold each member
 * once, but the set must stay a set whatever the store returns): the later
 * row's facts win, liveness and time are merged. */
static size_t dedupe(struct agent_known *e, size_t n)
{
	size_t out = 0;

	for (size_t i = 0; i < n; i++) {
		if (out > 0 && strcmp(e[out - 1].member_id, e[i].member_id) == 0) {
			struct agent_known *k = &e[out - 1];

			k->live |= e[i].live;
			if (e[i].seen_ms > k->seen_ms)
				k->seen_ms = e[i].seen_ms;
			memcpy(k->source, e[i].source, sizeof(k->source));
			continue;
		}
		if (out != i)
			e[out] = e[i];
		out++;
	}
	return out;
}

/* Sorts the new entries e[sorted..n) and merges them into e[0..sorted). */
static void merge_new(struct agent_known_set *s, size_t sorted)
{
	size_t t = s->n - sorted;
	struct agent_known *tail;

	qsort(s->e + sorted, t, sizeof(*s->e), known_cmp);
	t = dedupe(s->e + sorted, t);
	s->n = sorted + t;
	if (!sorted || !t)
		return;
	tail = malloc(t * sizeof(*tail));
	if (!tail) { /* no room to merge: sort in place, slower but right */
		qsort(s->e, s->n, sizeof(*s->e), known_cmp);
		return;
	}
	memcpy(tail, s->e + sorted, t * sizeof(*tail));
	/* From the back: the write position never overtakes the unread part. */
	for (size_t w = s->n, i = sorted, j = t; j > 0;) {
		if (i > 0 && known_cmp(&s->e[i - 1], &tail[j - 1]) > 0)
			s->e[--w] = s->e[--i];
		else
			s->e[--w] = tail[--j];
	}
	free(tail);
}

int agent_known_note(struct agent_known_set *s, const struct rs_session_row *rows, size_t n, int64_t now_ms)
{
	size_t sorted = s->n; /* entries past this are new this pass, unsorted */
	bool indexed = index_ready(s); /* over e[0..sorted): new entries are not in it */
	int err = 0;

	for (size_t i = 0; i < s->n; i++)
		s->e[i].live = false;
	for (size_t i = 0; i < n; i++) {
		const struct rs_session_row *row = &rows[i];
		struct agent_known *k = indexed ? probe(s, row->member_id) : search(s->e, sorted, row->member_id);

		if (!k) {
			uint64_t point;

			/* Nothing to pin without a source. */
			if (!row->source[0] || !row->member_id[0] || s->n == AGENT_KNOWN_MAX)
				continue;
			if (rs_ring_point(row->member_id, strlen(row->member_id), &point))
				continue;
			if (s->n == s->cap && grow(s) != 0) {
				err = -ENOMEM; /* not added; the other rows are still noted */
				continue;
			}
			k = &s->e[s->n++];
			*k = (struct agent_known){ .point = point };
			snprintf(k->member_id, sizeof(k->member_id), "%s", row->member_id);
		}
		/* Any row, live or not, is the member still in the store. */
		k->live |= row->live;
		if (k->seen_ms < now_ms)
			k->seen_ms = now_ms;
		if (row->source[0]) /* same size, NUL-terminated: no formatting per row */
			memcpy(k->source, row->source, sizeof(k->source));
	}
	if (s->n > sorted) {
		merge_new(s, sorted);
		s->index_stale = true;
	}
	return err;
}

size_t agent_known_forget(struct agent_known_set *s, int64_t now_ms, uint32_t horizon_ms)
{
	size_t out = 0, gone;

	for (size_t i = 0; i < s->n; i++) {
		if (now_ms - s->e[i].seen_ms > (int64_t)horizon_ms)
			continue;
		if (out != i)
			s->e[out] = s->e[i];
		out++;
	}
	gone = s->n - out;
	s->n = out;
	s->index_stale |= gone > 0;
	s->forgotten += gone;
	return gone;
}

void agent_known_free(struct agent_known_set *s)
{
	free(s->index);
	free(s->e);
	*s = (struct agent_known_set){ 0 };
}
