/* SPDX-License-Identifier: Apache-2.0 */
/* reg_limit.c - per-key registration buckets and reservations, per-uid
 * registration counts, for the member socket (reg_limit.h).
 *
 * Guarantees: memory is bounded (REG_LIMIT_KEYS_MAX keys, one entry per uid
 * holding a registration); a key holds at most one reservation, so one
 * caller's registrations count at most once in the store's loads; every
 * reservation recorded is handed back exactly once (replaced, or due).
 * The bucket is kept as credit in ms (a token is REG_LIMIT_REFILL_MS of
 * it), so refill needs no division and no floating point; a clock that
 * does not advance refills nothing. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "reg_limit.h"

struct reg_key_id {
	uint64_t id;
	uint32_t kind;
	uint32_t zero; /* hashed as bytes: always 0 */
};

struct reg_key {
	struct reg_key_id k;
	int64_t credit_ms, at_ms; /* credit as of at_ms (monotonic) */
	bool limited;             /* in an episode of refusals */
	bool reserved;
	struct reg_reservation res;
	UT_hash_handle hh;
};

struct reg_uid {
	uint32_t uid;
	uint32_t n;
	UT_hash_handle hh;
};

void reg_limit_init(struct reg_limits *l, uint32_t uid_max)
{
	memset(l, 0, sizeof(*l));
	l->uid_max = uid_max ? uid_max : REG_LIMIT_UID_DEFAULT;
	l->credit_max = (int64_t)REG_LIMIT_BURST * REG_LIMIT_REFILL_MS;
}

void reg_limit_set_burst(struct reg_limits *l, uint32_t burst)
{
	l->credit_max = (int64_t)(burst ? burst : REG_LIMIT_BURST) * REG_LIMIT_REFILL_MS;
}

void reg_limit_free(struct reg_limits *l)
{
	struct reg_key *k, *kt;
	struct reg_uid *u, *ut;

	HASH_ITER(hh, l->keys, k, kt) {
		HASH_DEL(l->keys, k);
		free(k);
	}
	HASH_ITER(hh, l->uids, u, ut) {
		HASH_DEL(l->uids, u);
		free(u);
	}
	l->n_keys = 0;
}

static struct reg_key *key_find(const struct reg_limits *l, uint32_t kind, uint64_t id)
{
	struct reg_key_id want = { .id = id, .kind = kind };
	struct reg_key *k = NULL;

	HASH_FIND(hh, l->keys, &want, sizeof(want), k);
	return k;
}

/* The key's credit as of mono_ms. */
static int64_t credit_at(const struct reg_limits *l, const struct reg_key *k, int64_t mono_ms)
{
	int64_t c = k->credit_ms, max = l->credit_max;

	if (mono_ms > k->at_ms)
		c += mono_ms - k->at_ms < max ? mono_ms - k->at_ms : max;
	return c < max ? c : max;
}

/* The key's entry, made with a full bucket if it has none.  NULL: -ENOSPC
 * (REG_LIMIT_KEYS_MAX tracked) or -ENOMEM in *err. */
static struct reg_key *key_get(struct reg_limits *l, uint32_t kind, uint64_t id, int64_t mono_ms, int *err)
{
	struct reg_key *k = key_find(l, kind, id);

	if (k)
		return k;
	if (l->n_keys >= REG_LIMIT_KEYS_MAX) {
		*err = -ENOSPC;
		return NULL;
	}
	k = calloc(1, sizeof(*k));
	if (!k) {
		*err = -ENOMEM;
		return NULL;
	}
	k->k.id = id;
	k->k.kind = kind;
	k->credit_ms = l->credit_max;
	k->at_ms = mono_ms;
	HASH_ADD(hh, l->keys, k, sizeof(k->k), k);
	l->n_keys++;
	return k;
}

enum reg_take reg_limit_take(struct reg_limits *l, uint32_t kind, uint64_t id, int64_t mono_ms)
{
	int err = 0;
	struct reg_key *k = key_get(l, kind, id, mono_ms, &err);

	if (!k)
		return err == -ENOSPC ? REG_TAKE_FULL : REG_TAKE_NOMEM;
	k->credit_ms = credit_at(l, k, mono_ms);
	if (mono_ms > k->at_ms)
		k->at_ms = mono_ms;
	if (k->credit_ms < REG_LIMIT_REFILL_MS) {
		bool first = !k->limited;

		k->limited = true;
		return first ? REG_TAKE_LIMITED_FIRST : REG_TAKE_LIMITED;
	}
	k->credit_ms -= REG_LIMIT_REFILL_MS;
	k->limited = false;
	return REG_TAKE_OK;
}

int reg_limit_reserve(struct reg_limits *l, uint32_t kind, uint64_t id, const struct reg_reservation *r,
		      struct reg_reservation *old, int64_t mono_ms)
{
	int replaced = 0, err = 0;
	struct reg_key *k = key_get(l, kind, id, mono_ms, &err);

	if (!k)
		return err;
	if (k->reserved && strcmp(k->res.member_id, r->member_id) != 0) {
		*old = k->res;
		replaced = 1;
	}
	k->res = *r;
	k->reserved = true;
	return replaced;
}

size_t reg_limit_due(struct reg_limits *l, int64_t now_ms, int64_t mono_ms, struct reg_reservation *out,
		     size_t cap)
{
	struct reg_key *k, *kt;
	size_t n = 0;

	HASH_ITER(hh, l->keys, k, kt) {
		if (k->reserved && k->res.expires_ms <= now_ms) {
			if (n == cap)
				break;
			out[n++] = k->res;
			k->reserved = false;
		}
		if (!k->reserved && credit_at(l, k, mono_ms) >= l->credit_max) {
			HASH_DEL(l->keys, k);
			free(k);
			l->n_keys--;
		}
	}
	return n;
}

int reg_limit_uid_hold(struct reg_limits *l, uint32_t uid)
{
	struct reg_uid *u = NULL;

	HASH_FIND(hh, l->uids, &uid, sizeof(uid), u);
	if (u && u->n >= l->uid_max)
		return -EDQUOT;
	if (!u) {
		u = calloc(1, sizeof(*u));
		if (!u)
			return -ENOMEM;
		u->uid = uid;
		HASH_ADD(hh, l->uids, uid, sizeof(uid), u);
	}
	u->n++;
	return 0;
}

void reg_limit_uid_release(struct reg_limits *l, uint32_t uid)
{
	struct reg_uid *u = NULL;

	HASH_FIND(hh, l->uids, &uid, sizeof(uid), u);
	if (!u)
		return;
	if (--u->n == 0) {
		HASH_DEL(l->uids, u);
		free(u);
	}
}

uint32_t reg_limit_uid_count(const struct reg_limits *l, uint32_t uid)
{
	struct reg_uid *u = NULL;

	HASH_FIND(hh, l->uids, &uid, sizeof(uid), u);
	return u ? u->n : 0;
}
