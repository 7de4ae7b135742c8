/* SPDX-License-Identifier: Apache-2.0 */
/* known.c - the supervisors the agent knows (precompute.h): remembered from
 * session rows, kept while they are seen, forgotten past the horizon.
 *
 * Invariants: e[0..n) is sorted by member_id with no member twice; each
 * entry's point is its member_id's ring point; n <= AGENT_KNOWN_MAX.
 *
 * A pass in steady state (no new member) costs one hash lookup per row; new
 * members are sorted among themselves and merged in once per pass (then
 * the index is rebuilt), so a pass never sorts the whole set.  The index is
 * uthash under a random key (util/keyed_hash.h): member ids are chosen by
 * the supervisors, which must not be able to pile them into one bucket. */
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

/* The index: positions in e by member id, in uthash (its key a pointer
 * to e[pos].member_id, so it holds no copy of the ids), hashed with
 * SipHash under the set's random key (member ids are the supervisors'
 * choice).  Every function using HASH_FIND or HASH_ADD has that key in
 * hash_key_. */
#define HASH_FUNCTION(keyptr, keylen, hashv) ((hashv) = (unsigned)rs_keyed_hash(hash_key_, (keyptr), (keylen)))
/* Out of memory growing the buckets: the add is undone and reported. */
#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(elt) (oom_ = true)
#include <uthash.h>

struct agent_known_slot {
	uint32_t pos;      /* in e */
	UT_hash_handle hh; /* keyed by e[pos].member_id */
};

void agent_known_init(struct agent_known_set *s, const struct rs_hash_key *key)
{
	*s = (struct agent_known_set){ .hash_key = *key };
}

/* Rebuilds the index over e[0..n).  Returns 0 or -ENOMEM (no index: the
 * callers fall back to binary search). */
static int index_build(struct agent_known_set *s)
{
	const struct rs_hash_key *hash_key_ = &s->hash_key;
	bool oom_ = false;

	HASH_CLEAR(hh, s->index); /* reads only the slots, never e (which may have moved) */
	s->index_stale = true;
	if (s->n > s->slots_cap) {
		size_t cap = s->slots_cap ? s->slots_cap : 64;
		struct agent_known_slot *slots;

		while (cap < s->n)
			cap *= 2;
		slots = realloc(s->slots, cap * sizeof(*slots));
		if (!slots)
			return -ENOMEM;
		s->slots = slots;
		s->slots_cap = cap;
	}
	for (size_t i = 0; i < s->n && !oom_; i++) {
		struct agent_known_slot *slot = &s->slots[i];

		slot->pos = (uint32_t)i;
		HASH_ADD_KEYPTR(hh, s->index, s->e[i].member_id, strlen(s->e[i].member_id), slot);
	}
	if (oom_) {
		HASH_CLEAR(hh, s->index);
		return -ENOMEM;
	}
	s->index_stale = false;
	return 0;
}

/* The index over e[0..n) as it is now.  Returns false when there is none
 * (no memory): the callers fall back to binary search. */
static bool index_ready(struct agent_known_set *s)
{
	return !s->index_stale || index_build(s) == 0;
}

/* member_id's entry, by the index (which must be ready).  uthash compares
 * the full hash before the ids: a probe reads an entry (a cache miss) only
 * when it is almost surely the one. */
static struct agent_known *probe(const struct agent_known_set *s, const char *member_id)
{
	const struct rs_hash_key *hash_key_ = &s->hash_key;
	struct agent_known_slot *slot = NULL;

	HASH_FIND(hh, s->index, member_id, strlen(member_id), slot);
	return slot ? &s->e[slot->pos] : NULL;
}

size_t agent_known_chain_max(const struct agent_known_set *s)
{
	const UT_hash_table *tbl = s->index ? s->index->hh.tbl : NULL;
	size_t longest = 0;

	for (unsigned i = 0; tbl && i < tbl->num_buckets; i++)
		if (tbl->buckets[i].count > longest)
			longest = tbl->buckets[i].count;
	return longest;
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
	bool indexed = index_ready(s); /* over e[0..sorted): new entries are not in it (unless e grows) */
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
			if (s->n == s->cap) {
				if (grow(s) != 0) {
					err = -ENOMEM; /* not added; the other rows are still noted */
					continue;
				}
				/* e moved: the index's keys point into the old one.
				 * Rebuilt, it holds this pass's new members too. */
				if (indexed)
					indexed = index_build(s) == 0;
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
	struct rs_hash_key key = s->hash_key;

	HASH_CLEAR(hh, s->index);
	free(s->slots);
	free(s->e);
	agent_known_init(s, &key);
}
