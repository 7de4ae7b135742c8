/* SPDX-License-Identifier: Apache-2.0 */
/* reg_limit.h - what one caller of the member socket may cost everyone
 * else (reg_limit.c, pure: no I/O, no clock of its own).  Per key (the
 * netns cookie or cgroup id the kernel names the caller by): a token
 * bucket of registrations, and the one pending reservation its last
 * steer wrote in the store, handed back for withdrawal when a newer one
 * replaces it or when its lifetime ends.  Per uid (SO_PEERCRED, as the
 * agent's user namespace sees it, which a caller cannot change by making
 * user or network namespaces of its own): the registrations it holds. */
#ifndef RS_AGENT_REG_LIMIT_H
#define RS_AGENT_REG_LIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringsteer/ring.h"

/* A supervisor registers at each start of its process, and again when its
 * link to the agent ends (the agent restarted) or, refused, at its
 * heartbeat.  A pod that restarts its supervisor in a tight loop (the
 * acceptance tests restart one six times in a second) stays inside a burst
 * of 16; one a second afterwards is far above any honest caller and far
 * below a store write per ms. */
#define REG_LIMIT_BURST 16
#define REG_LIMIT_REFILL_MS 1000
/* Keys tracked at once: a key is forgotten once its bucket is full again
 * and its reservation is gone (a few seconds after its last registration). */
#define REG_LIMIT_KEYS_MAX 65536
/* Registrations one uid may hold, by default (--member-uid-max): a quarter
 * of AGENT_MEMBERS_MAX, far above the pods of one node (kubelet's default
 * is 110) even if they all run as one uid. */
#define REG_LIMIT_UID_DEFAULT 1024

/* A pending reservation a steer wrote (rs_store_steer: out.reserved). */
struct reg_reservation {
	char member_id[RS_ID_MAX + 1];
	char gateway[RS_ID_MAX + 1];
	int64_t expires_ms; /* store time (wall clock ms) */
};

struct reg_key;
struct reg_uid;

struct reg_limits {
	struct reg_key *keys; /* uthash */
	size_t n_keys;
	struct reg_uid *uids; /* uthash */
	uint32_t uid_max;     /* registrations one uid may hold */
	int64_t credit_max;   /* a full bucket: the burst, in ms of credit */
};

enum reg_take {
	REG_TAKE_OK,
	REG_TAKE_LIMITED,       /* refused: the key's bucket is empty */
	REG_TAKE_LIMITED_FIRST, /* refused, the first of an episode (log it) */
	REG_TAKE_FULL,          /* refused: REG_LIMIT_KEYS_MAX keys tracked */
	REG_TAKE_NOMEM,
};

/* uid_max 0: REG_LIMIT_UID_DEFAULT. */
void reg_limit_init(struct reg_limits *l, uint32_t uid_max);
/* A key's burst (--member-burst); 0: REG_LIMIT_BURST. */
void reg_limit_set_burst(struct reg_limits *l, uint32_t burst);
void reg_limit_free(struct reg_limits *l);

/* One registration of key (kind, id) at mono_ms (a monotonic clock):
 * takes a token, or says why not.  An episode of refusals ends with the
 * next registration allowed. */
enum reg_take reg_limit_take(struct reg_limits *l, uint32_t kind, uint64_t id, int64_t mono_ms);

/* Records r as the key's reservation (tracking the key, with a full
 * bucket as of mono_ms, if it was forgotten meanwhile: a registered
 * member steered again at a sync).  When it held one for another member,
 * that one is copied to *old and 1 is returned: the caller withdraws it
 * (one reservation per key).  The same member's earlier one is the same
 * store row, rewritten: 0.  -ENOSPC (REG_LIMIT_KEYS_MAX keys tracked: r is
 * not recorded and ends by itself), -ENOMEM. */
int reg_limit_reserve(struct reg_limits *l, uint32_t kind, uint64_t id, const struct reg_reservation *r,
		      struct reg_reservation *old, int64_t mono_ms);

/* Moves the reservations whose end is at or before now_ms (store time)
 * into out[0..cap), and forgets keys with a full bucket at mono_ms and no
 * reservation.  Returns how many were moved (call again while it returns
 * cap). */
size_t reg_limit_due(struct reg_limits *l, int64_t now_ms, int64_t mono_ms, struct reg_reservation *out,
		     size_t cap);

/* One more registration held by uid: 0, -EDQUOT (it holds uid_max),
 * -ENOMEM. */
int reg_limit_uid_hold(struct reg_limits *l, uint32_t uid);
/* One registration of uid ended. */
void reg_limit_uid_release(struct reg_limits *l, uint32_t uid);
/* Registrations uid holds. */
uint32_t reg_limit_uid_count(const struct reg_limits *l, uint32_t uid);

#endif
