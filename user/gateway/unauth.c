/* SPDX-License-Identifier: Apache-2.0 */
/* unauth.c - the unauthenticated pool (unauth.h): sources in a uthash
 * table, each with its connections oldest first, and in one list per
 * count so that the largest is at hand.  The hash is SipHash under the
 * pool's own random key (util/keyed_hash.h): a peer choosing addresses (an
 * IPv6 /64 gives it 2^64) cannot aim them at one bucket. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <netinet/in.h>

#include "unauth.h"

/* uthash hashes with this; every function using HASH_FIND or HASH_ADD has
 * the pool's key in hash_key_. */
#define HASH_FUNCTION(keyptr, keylen, hashv) ((hashv) = (unsigned)rs_keyed_hash(hash_key_, (keyptr), (keylen)))
/* Out of memory growing the buckets: the add is undone and reported. */
#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(elt) (oom_ = true)
#include <uthash.h>

struct gw_unauth_source {
	struct gw_unauth_key key;
	uint32_t count;
	struct gw_unauth_node *oldest, *newest;
	struct gw_unauth_source *cprev, *cnext; /* in by_count[count]; cnext: in unused */
	UT_hash_handle hh;
};

static void count_unlink(struct gw_unauth *t, struct gw_unauth_source *s)
{
	if (s->cprev)
		s->cprev->cnext = s->cnext;
	else
		t->by_count[s->count] = s->cnext;
	if (s->cnext)
		s->cnext->cprev = s->cprev;
	s->cprev = s->cnext = NULL;
}

static void count_link(struct gw_unauth *t, struct gw_unauth_source *s)
{
	s->cprev = NULL;
	s->cnext = t->by_count[s->count];
	if (s->cnext)
		s->cnext->cprev = s;
	t->by_count[s->count] = s;
	if (s->count > t->largest)
		t->largest = s->count;
}

/* s's count changes by delta (+1 or -1): it moves to that list. */
static void recount(struct gw_unauth *t, struct gw_unauth_source *s, int delta)
{
	if (s->count > 0)
		count_unlink(t, s);
	s->count = (uint32_t)((int64_t)s->count + delta);
	if (s->count > 0)
		count_link(t, s);
	while (t->largest > 0 && !t->by_count[t->largest])
		t->largest--;
}

static struct gw_unauth_source *find(const struct gw_unauth *t, const struct gw_unauth_key *k)
{
	const struct rs_hash_key *hash_key_ = &t->hash_key;
	struct gw_unauth_source *s = NULL;

	HASH_FIND(hh, t->by_key, k, sizeof(*k), s);
	return s;
}

int gw_unauth_init(struct gw_unauth *t, uint32_t max_total, uint32_t max_per_source)
{
	memset(t, 0, sizeof(*t));
	if (max_total < 1 || max_total > GW_UNAUTH_MAX || max_per_source < 1)
		return -EINVAL;
	t->max_total = max_total;
	t->max_per_source = max_per_source;
	t->count_max = max_per_source < max_total ? max_per_source : max_total;
	t->entries = calloc(max_total, sizeof(*t->entries));
	t->by_count = calloc((size_t)t->count_max + 1, sizeof(*t->by_count));
	if (!t->entries || !t->by_count) {
		gw_unauth_free(t);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < max_total; i++) {
		t->entries[i].cnext = t->unused;
		t->unused = &t->entries[i];
	}
	rs_hash_key_random(&t->hash_key);
	return 0;
}

void gw_unauth_free(struct gw_unauth *t)
{
	HASH_CLEAR(hh, t->by_key);
	free(t->entries);
	free(t->by_count);
	t->entries = t->unused = NULL;
	t->by_count = NULL;
}

struct gw_unauth_key gw_unauth_key_of(const struct sockaddr *sa)
{
	struct gw_unauth_key k = { { 0 } };

	if (sa && sa->sa_family == AF_INET6) {
		memcpy(k.addr, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	} else if (sa && sa->sa_family == AF_INET) {
		k.addr[10] = 0xff;
		k.addr[11] = 0xff;
		memcpy(k.addr + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	}
	return k;
}

enum gw_unauth_verdict gw_unauth_admit(const struct gw_unauth *t, const struct gw_unauth_key *k,
				       struct gw_unauth_node **victim)
{
	const struct gw_unauth_source *s = t->entries ? find(t, k) : NULL;
	struct gw_unauth_counts c = { .max_total = t->max_total, .max_per_source = t->max_per_source,
				      .total = t->total, .sources = t->sources, .mine = s ? s->count : 0,
				      .largest = t->largest };
	enum gw_unauth_verdict v = gw_unauth_fair(&c);

	*victim = NULL;
	if (v == GW_UNAUTH_EVICT)
		*victim = t->by_count[t->largest]->oldest;
	return v;
}

int gw_unauth_insert(struct gw_unauth *t, const struct gw_unauth_key *k, struct gw_unauth_node *node)
{
	const struct rs_hash_key *hash_key_ = &t->hash_key;
	struct gw_unauth_source *s;
	bool oom_ = false;

	if (!t->entries)
		return -ENOSPC;
	s = find(t, k);
	if (t->total >= t->max_total || (s && s->count >= t->max_per_source))
		return -ENOSPC;
	if (!s) {
		/* total < max_total, and each source holds one at least: an
		 * entry is free. */
		s = t->unused;
		t->unused = s->cnext;
		memset(s, 0, sizeof(*s));
		s->key = *k;
		HASH_ADD(hh, t->by_key, key, sizeof(s->key), s);
		if (oom_) {
			s->cnext = t->unused;
			t->unused = s;
			return -ENOMEM;
		}
		t->sources++;
	}
	node->src = s;
	node->next = NULL;
	node->prev = s->newest;
	if (s->newest)
		s->newest->next = node;
	else
		s->oldest = node;
	s->newest = node;
	t->total++;
	recount(t, s, +1);
	return 0;
}

void gw_unauth_remove(struct gw_unauth *t, struct gw_unauth_node *node)
{
	struct gw_unauth_source *s = node->src;

	if (!s)
		return; /* not counted: nothing to undo */
	if (node->prev)
		node->prev->next = node->next;
	else
		s->oldest = node->next;
	if (node->next)
		node->next->prev = node->prev;
	else
		s->newest = node->prev;
	node->prev = node->next = NULL;
	node->src = NULL;
	t->total--;
	recount(t, s, -1);
	if (s->count == 0) {
		HASH_DELETE(hh, t->by_key, s);
		t->sources--;
		s->cnext = t->unused;
		t->unused = s;
	}
}

uint32_t gw_unauth_count(const struct gw_unauth *t, const struct gw_unauth_key *k)
{
	const struct gw_unauth_source *s = t->entries ? find(t, k) : NULL;

	return s ? s->count : 0;
}

uint32_t gw_unauth_chain_max(const struct gw_unauth *t)
{
	const UT_hash_table *tbl = t->by_key ? t->by_key->hh.tbl : NULL;
	uint32_t longest = 0;

	for (unsigned i = 0; tbl && i < tbl->num_buckets; i++)
		if (tbl->buckets[i].count > longest)
			longest = tbl->buckets[i].count;
	return longest;
}
