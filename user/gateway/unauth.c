/* SPDX-License-Identifier: Apache-2.0 */
/* unauth.c - the per-source count of unauthenticated connections
 * (unauth.h): open addressing with linear probing, at most half full by
 * construction, deletion by backward shift (no tombstones, so probe
 * sequences never lengthen with churn).  The hash is keyed with a random
 * seed: a peer choosing addresses (an IPv6 /64 gives it plenty) cannot aim
 * them at one probe run; even so a run is bounded by max_total. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <netinet/in.h>
#include <sys/random.h>

#include "unauth.h"

static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static size_t home_of(const struct gw_unauth *t, const struct gw_unauth_key *k)
{
	uint64_t a, b;

	memcpy(&a, k->addr, 8);
	memcpy(&b, k->addr + 8, 8);
	return (size_t)(mix(mix(a ^ t->seed) ^ b) & t->mask);
}

/* The slot holding k, or the empty slot where it would go. */
static size_t find(const struct gw_unauth *t, const struct gw_unauth_key *k)
{
	size_t i = home_of(t, k);

	while (t->slots[i].count != 0 && memcmp(&t->slots[i].key, k, sizeof(*k)) != 0)
		i = (i + 1) & t->mask;
	return i;
}

int gw_unauth_init(struct gw_unauth *t, uint32_t max_total, uint32_t max_per_source)
{
	size_t n = 2;

	memset(t, 0, sizeof(*t));
	if (max_total < 1 || max_total > GW_UNAUTH_MAX || max_per_source < 1)
		return -EINVAL;
	while (n < 2 * (size_t)max_total)
		n *= 2;
	t->slots = calloc(n, sizeof(*t->slots));
	if (!t->slots)
		return -ENOMEM;
	t->mask = n - 1;
	t->max_total = max_total;
	t->max_per_source = max_per_source;
	/* Without the random source the hash is merely predictable, and probe
	 * runs stay bounded by max_total: not worth refusing to start. */
	if (getrandom(&t->seed, sizeof(t->seed), GRND_NONBLOCK) != (ssize_t)sizeof(t->seed))
		t->seed = mix((uint64_t)time(NULL) ^ (uint64_t)getpid() << 32);
	return 0;
}

void gw_unauth_free(struct gw_unauth *t)
{
	free(t->slots);
	t->slots = NULL;
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

enum gw_unauth_verdict gw_unauth_add(struct gw_unauth *t, const struct gw_unauth_key *k)
{
	size_t i = find(t, k);

	if (t->slots[i].count >= t->max_per_source)
		return GW_UNAUTH_PER_SOURCE;
	if (t->total >= t->max_total)
		return GW_UNAUTH_TOTAL;
	/* total < max_total <= slots / 2: an empty slot always ends a run. */
	t->slots[i].key = *k;
	t->slots[i].count++;
	t->total++;
	return GW_UNAUTH_OK;
}

void gw_unauth_remove(struct gw_unauth *t, const struct gw_unauth_key *k)
{
	size_t i = find(t, k), j;

	if (t->slots[i].count == 0)
		return; /* not counted: nothing to undo */
	t->total--;
	if (--t->slots[i].count > 0)
		return;
	/* Backward shift: move later members of the run into the hole unless
	 * their home lies cyclically in (hole, j], where they already are
	 * reachable without crossing it. */
	for (j = i;;) {
		size_t home;

		j = (j + 1) & t->mask;
		if (t->slots[j].count == 0)
			break;
		home = home_of(t, &t->slots[j].key);
		if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) {
			t->slots[i] = t->slots[j];
			t->slots[j].count = 0;
			i = j;
		}
	}
	t->slots[i].count = 0;
}

uint32_t gw_unauth_count(const struct gw_unauth *t, const struct gw_unauth_key *k)
{
	return t->slots ? t->slots[find(t, k)].count : 0;
}
