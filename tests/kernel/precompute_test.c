/* SPDX-License-Identifier: Apache-2.0 */
/* precompute_test.c - the agent's known supervisors and their precomputed
 * placements (user/agent/known.c, precompute.c) as pure functions: no
 * kernel needed.
 *
 * Checks:
 *  - for random listings (gateways serving or draining, session rows live
 *    or dead, on listed gateways or gone ones, with or without a source),
 *    passes after passes on one ring cache (gateway sets changing between
 *    them), the indexed precomputation answers exactly what the plain
 *    successor walk (rs_place over a ring built afresh, loads counted from
 *    the live rows: the agent's precomputation before the placer) answers,
 *    for exactly the known members without a live row;
 *  - the known set stays sorted, unique, and holds every member noted with a
 *    source (within the bound);
 *  - forgetting: a member with no row and no registration goes after the
 *    horizon, not before; a registration keeps it; a row (live, or expired
 *    and not deleted) keeps it; a registration alone does not bring back a
 *    forgotten member;
 *  - the index: two sets hashing under different keys, flooded past
 *    AGENT_KNOWN_MAX in passes whose rows repeat members (new ones, whose
 *    set grows under the pass, and old ones), hold the same members, each
 *    once, find every one of them by the index (agent_known_seen), and keep
 *    every hash chain short.
 * Exit status 0 or 1. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "precompute.h"
#include "ringsteer/placement.h"

static int failures;

static void check(int ok, const char *what)
{
	if (!ok) {
		failures++;
		fprintf(stderr, "FAIL %s\n", what);
	}
}

struct answer {
	char member[RS_ID_MAX + 1];
	char gateway[RS_ID_MAX + 1];
};

struct answers {
	struct answer *e;
	size_t n, cap;
};

static int record(void *ctx, const struct agent_known *k, const char *gateway_id)
{
	struct answers *a = ctx;

	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		struct answer *e = realloc(a->e, cap * sizeof(*e));

		if (!e)
			return -ENOMEM;
		a->e = e;
		a->cap = cap;
	}
	snprintf(a->e[a->n].member, sizeof(a->e[a->n].member), "%s", k->member_id);
	snprintf(a->e[a->n].gateway, sizeof(a->e[a->n].gateway), "%s", gateway_id);
	a->n++;
	return 0;
}

static bool has_live_row(const struct rs_session_row *rows, size_t n, const char *member)
{
	for (size_t i = 0; i < n; i++)
		if (rows[i].live && strcmp(rows[i].member_id, member) == 0)
			return true;
	return false;
}

/* The precomputation as it was: a ring built afresh, loads counted from the
 * live rows, rs_place (a successor walk) per known member without a live
 * row.  Its answers in member order. */
static int oracle(const struct agent_known_set *s, const struct rs_gateway_row *gws, size_t n_gws,
		  const struct rs_session_row *rows, size_t n, struct answers *out)
{
	const char *ids[64];
	struct rs_gateway_load loads[64] = { 0 };
	struct rs_ring *ring = NULL;
	int err;

	if (!n_gws)
		return 0;
	for (size_t g = 0; g < n_gws; g++)
		ids[g] = gws[g].id;
	err = rs_ring_new(ids, n_gws, &ring);
	if (err)
		return err;
	for (size_t g = 0; g < n_gws; g++) {
		int idx = rs_ring_find(ring, gws[g].id);

		loads[idx].live = true;
		loads[idx].draining = gws[g].state == RS_GATEWAY_DRAINING;
	}
	for (size_t i = 0; i < n; i++) {
		int idx = rows[i].live ? rs_ring_find(ring, rows[i].gateway_id) : -1;

		if (idx >= 0)
			loads[idx].load++;
	}
	for (size_t i = 0; i < s->n && !err; i++) {
		struct rs_arrival arr = { .member_id = s->e[i].member_id, .at = -1, .stale = -1 };
		struct rs_decision d;

		if (has_live_row(rows, n, s->e[i].member_id))
			continue;
		if (rs_place(ring, loads, &arr, &d) != 0)
			break;
		err = record(out, &s->e[i], rs_ring_gateway_id(ring, d.gateway));
	}
	rs_ring_free(ring);
	return err;
}

static void check_set(const struct agent_known_set *s, const char *what)
{
	for (size_t i = 1; i < s->n; i++)
		if (strcmp(s->e[i - 1].member_id, s->e[i].member_id) >= 0) {
			check(0, what);
			return;
		}
}

static void random_pass(struct agent_ring_cache *rc, struct agent_known_set *s, unsigned *seed, int64_t now)
{
	struct rs_gateway_row gws[12];
	static struct rs_session_row rows[400];
	size_t n_gws = 0, n = 0, n_rows = (size_t)(rand_r(seed) % 400);
	struct answers got = { 0 }, want = { 0 };
	bool picked[12] = { false };
	int err;

	/* Few gateway sets, so the cache is both reused and rebuilt. */
	for (int g = 0; g < 12; g++)
		picked[g] = rand_r(seed) % 3 != 0;
	for (int g = 0; g < 12; g++) {
		if (!picked[g])
			continue;
		gws[n_gws] = (struct rs_gateway_row){ .live = true,
						      .state = rand_r(seed) % 5 == 0 ? RS_GATEWAY_DRAINING
										: RS_GATEWAY_SERVING };
		snprintf(gws[n_gws].id, sizeof(gws[n_gws].id), "gw-%02d", g); /* sorted by id, as listed */
		n_gws++;
	}
	for (size_t i = 0; i < n_rows; i++) {
		struct rs_session_row *r = &rows[n];
		int g = rand_r(seed) % 14; /* 12, 13: gone gateways */
		int m = rand_r(seed) % 600;

		*r = (struct rs_session_row){ .live = rand_r(seed) % 4 != 0 && g < 12 && picked[g],
					      .expires_ms = now - rand_r(seed) % 20000, .heartbeat_ms = now - 30000 };
		snprintf(r->member_id, sizeof(r->member_id), "member-%d", m);
		snprintf(r->gateway_id, sizeof(r->gateway_id), "gw-%02d", g);
		if (rand_r(seed) % 8)
			snprintf(r->source, sizeof(r->source), "127.0.2.%d:%d", 1 + m % 250, 40000 + m);
		/* One row per member, as the store keeps them. */
		bool dup = false;
		for (size_t j = 0; j < n && !dup; j++)
			dup = strcmp(rows[j].member_id, r->member_id) == 0;
		if (!dup)
			n++;
	}
	err = agent_known_note(s, rows, n, now);
	check(err == 0, "note");
	check_set(s, "known set sorted and unique");
	for (size_t i = 0; i < n; i++) {
		const struct agent_known *k = agent_known_find(s, rows[i].member_id);

		if (rows[i].source[0])
			check(k != NULL && strcmp(k->source, rows[i].source) == 0, "every member noted with a source is known");
		if (k)
			check(k->live == rows[i].live, "live as its row");
	}
	agent_known_forget(s, now, 10000);
	err = agent_precompute(rc, s, gws, n_gws, rows, n, record, &got);
	check(err == 0, "precompute");
	err = oracle(s, gws, n_gws, rows, n, &want);
	check(err == 0, "oracle");
	check(got.n == want.n, "as many answers as the walk");
	for (size_t i = 0; i < got.n && i < want.n; i++) {
		if (strcmp(got.e[i].member, want.e[i].member) != 0 || strcmp(got.e[i].gateway, want.e[i].gateway) != 0) {
			fprintf(stderr, "  %s -> %s, walk: %s -> %s\n", got.e[i].member, got.e[i].gateway,
				want.e[i].member, want.e[i].gateway);
			check(0, "same answer as the walk");
			break;
		}
	}
	free(got.e);
	free(want.e);
}

static struct rs_session_row row(const char *member, const char *gw, bool live, int64_t expires)
{
	struct rs_session_row r = { .live = live, .expires_ms = expires };

	snprintf(r.member_id, sizeof(r.member_id), "%s", member);
	snprintf(r.gateway_id, sizeof(r.gateway_id), "%s", gw);
	snprintf(r.source, sizeof(r.source), "127.0.2.9:5000");
	return r;
}

static void forgetting(void)
{
	const uint32_t horizon = 600000;
	struct agent_known_set s = { 0 };
	struct rs_session_row r[4] = {
		row("gone", "gw-a", true, 15000),       /* its row is deleted after t=0 */
		row("registered", "gw-a", true, 15000), /* deleted too, but it stays registered */
		row("attached", "gw-a", true, 15000),   /* keeps a live row */
		row("expired", "gw-a", true, 15000),    /* its row expires, never deleted */
	};
	int64_t t;

	check(agent_known_note(&s, r, 4, 0) == 0 && s.n == 4, "four known at t=0");
	for (t = 1000; t <= 2 * (int64_t)horizon; t += 1000) {
		struct rs_session_row left[2] = { row("attached", "gw-a", true, t + 15000),
						  row("expired", "gw-a", false, 15000) };

		agent_known_note(&s, left, 2, t);
		agent_known_seen(&s, "registered", t);
		agent_known_forget(&s, t, horizon);
		if (t <= (int64_t)horizon)
			check(agent_known_find(&s, "gone") != NULL, "kept within the horizon");
		else
			check(agent_known_find(&s, "gone") == NULL, "forgotten past the horizon");
		check(agent_known_find(&s, "registered") != NULL, "a registration keeps it");
		check(agent_known_find(&s, "attached") != NULL, "a live row keeps it");
		check(agent_known_find(&s, "expired") != NULL, "an expired row keeps it");
	}
	check(s.forgotten == 1, "one forgotten");
	agent_known_seen(&s, "gone", t);
	check(agent_known_find(&s, "gone") == NULL, "a registration does not bring back a forgotten member");
	agent_known_free(&s);
}

#define FLOOD_PASS 4096
#define FLOOD_MEMBERS (AGENT_KNOWN_MAX + 100)

static void flood_row(struct rs_session_row *r, unsigned m)
{
	*r = (struct rs_session_row){ .live = m % 3 == 0 };
	snprintf(r->member_id, sizeof(r->member_id), "supervisor-%08u", m);
	snprintf(r->source, sizeof(r->source), "10.%u.%u.%u:4000", m >> 16, (m >> 8) & 255, m & 255);
}

static void flood(void)
{
	struct agent_known_set s[2];
	struct rs_session_row *rows = calloc(FLOOD_PASS + 32, sizeof(*rows));
	int64_t t = 1000;
	bool same = true, found = true;

	check(rows != NULL, "flood rows");
	if (!rows)
		return;
	for (int k = 0; k < 2; k++) {
		struct rs_hash_key key;

		memset(key.b, k ? 0x5a : 0x00, sizeof(key.b));
		agent_known_init(&s[k], &key);
	}
	for (unsigned first = 0; first < FLOOD_MEMBERS; first += FLOOD_PASS, t += 1000) {
		size_t n = 0, fresh;

		for (unsigned m = first; m < first + FLOOD_PASS && m < FLOOD_MEMBERS; m++)
			flood_row(&rows[n++], m);
		fresh = n;
		/* Again within the pass (new members) and from the last pass. */
		for (unsigned j = 0; j < 16; j++) {
			flood_row(&rows[n++], first + j * 97 % (unsigned)fresh);
			if (first)
				flood_row(&rows[n++], first - 1 - j);
		}
		for (int k = 0; k < 2; k++)
			check(agent_known_note(&s[k], rows, n, t) == 0, "flood noted");
	}
	for (int k = 0; k < 2; k++) {
		check(s[k].n == AGENT_KNOWN_MAX, "the flood fills the set to its bound, no further");
		check_set(&s[k], "flooded set sorted and unique");
	}
	for (size_t i = 0; i < s[0].n && i < s[1].n; i++)
		same &= strcmp(s[0].e[i].member_id, s[1].e[i].member_id) == 0;
	check(same, "sets under different keys hold the same members");
	t += 1000;
	for (unsigned m = 0; m < AGENT_KNOWN_MAX; m++) {
		struct rs_session_row r;

		flood_row(&r, m);
		for (int k = 0; k < 2; k++) {
			const struct agent_known *known;

			agent_known_seen(&s[k], r.member_id, t);
			known = agent_known_find(&s[k], r.member_id);
			found &= known && known->seen_ms == t && strcmp(known->source, r.source) == 0;
		}
	}
	check(found, "every member found by the index under either key");
	for (int k = 0; k < 2; k++) {
		size_t longest = agent_known_chain_max(&s[k]);

		printf("flood, key %d: %zu known, longest hash chain %zu\n", k, s[k].n, longest);
		/* uthash doubles its buckets when a chain reaches 10 (and gives
		 * up when that does not spread them: a bad hash shows here as a
		 * chain of thousands). */
		check(longest >= 1 && longest <= 32, "hash chains short");
		agent_known_free(&s[k]);
	}
	free(rows);
}

int main(void)
{
	struct agent_ring_cache rc = { 0 };
	struct agent_known_set s;
	struct rs_hash_key key;
	unsigned seed = 4242;
	int64_t now = 1700000000000;

	rs_hash_key_random(&key);
	agent_known_init(&s, &key);

	for (int pass = 0; pass < 400; pass++) {
		random_pass(&rc, &s, &seed, now);
		now += 1000;
	}
	printf("random passes: 400, known at the end: %zu, forgotten: %llu\n", s.n, (unsigned long long)s.forgotten);
	check(s.forgotten > 0, "random passes forgot someone");
	agent_known_free(&s);
	agent_ring_cache_free(&rc);
	forgetting();
	flood();
	if (failures) {
		fprintf(stderr, "precompute_test: %d failures\n", failures);
		return 1;
	}
	printf("precompute_test: ok\n");
	return 0;
}
