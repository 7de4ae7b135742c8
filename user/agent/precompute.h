/* SPDX-License-Identifier: Apache-2.0 */
/* precompute.h - the supervisors the agent knows, and where the rule would
 * place each of them now: the precomputed pins for known supervisors with
 * no session (docs/KERNEL.md, "Sync").
 *
 * The known set remembers each member seen in a session row (its member id,
 * its source address, its ring point hashed once) for as long as it keeps
 * being seen: a session row in the store (live, or expired and not yet
 * deleted) or a registration on the member socket.  One not seen for longer
 * than the horizon (--forget-after) is forgotten: a supervisor that left
 * cleanly (its row deleted) and never came back, so the set follows the
 * fleet instead of growing with every member that ever passed.
 *
 * A pass costs O(rows) to note the rows (a hash index over the set; new
 * members are sorted in once) and O(known log points) to place: the placer (include/ringsteer/placer.h) is built once per pass
 * over the live ring with its loads, and each decision is one successor
 * search.  The ring itself is rebuilt only when the live gateway ids change.
 *
 * Pure: no maps, no store, no clock (times are passed in); the kernel tests
 * and the benchmark drive it directly. */
#ifndef RS_AGENT_PRECOMPUTE_H
#define RS_AGENT_PRECOMPUTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringsteer/ring.h"
#include "ringsteer/store.h"
#include "util/keyed_hash.h"

/* At most this many members are remembered; past it, new members are not
 * (the forgetting horizon makes room again). */
#define AGENT_KNOWN_MAX 65536

struct agent_known {
	char member_id[RS_ID_MAX + 1];
	char source[RS_ENDPOINT_MAX + 1]; /* "ADDR:PORT" as its gateway saw it */
	uint64_t point;                   /* member_id's ring point */
	int64_t seen_ms;                  /* last listing holding its row, or registration */
	bool live;                        /* has a live session row in the last noted listing */
};

struct agent_known_set {
	struct agent_known *e; /* sorted by member_id */
	size_t n, cap;
	uint64_t forgotten;    /* members forgotten since start */
	/* member_id -> position in e: uthash over slots[0..n) (known.c),
	 * hashed under hash_key; rebuilt when e changed (stale): a pass then
	 * costs one hash per row, not a binary search of string compares. */
	struct agent_known_slot *index; /* the table's head; NULL: empty */
	struct agent_known_slot *slots; /* its entries, slots_cap of them */
	size_t slots_cap;
	bool index_stale;
	struct rs_hash_key hash_key;    /* random (agent_known_init): member ids are peers' choice */
};

/* The live ring, kept between passes while the gateway ids stay the same. */
struct agent_ring_cache {
	struct rs_ring *ring;
	char (*ids)[RS_ID_MAX + 1];
	size_t n;
};

/* Starts s empty, its index hashed under key (rs_hash_key_random(): the
 * supervisors choose their member ids, and must not be able to choose ids
 * that share a bucket).  A zeroed set is an empty set hashed under the
 * all-zero key. */
void agent_known_init(struct agent_known_set *s, const struct rs_hash_key *key);

/* Notes a session listing (every row, live or not) taken at now_ms: marks
 * which known members have a live row (and only those); every row makes its
 * member seen now; a row with a source adds its member if unknown and
 * records that source.  Returns 0 or -ENOMEM (members that did not fit are
 * not added; the rest is noted). */
int agent_known_note(struct agent_known_set *s, const struct rs_session_row *rows, size_t n, int64_t now_ms);

/* Member member_id (registered on the member socket) is seen now, if known. */
void agent_known_seen(struct agent_known_set *s, const char *member_id, int64_t now_ms);

/* Forgets every member not seen for longer than horizon_ms.  Returns how
 * many. */
size_t agent_known_forget(struct agent_known_set *s, int64_t now_ms, uint32_t horizon_ms);

/* The known member member_id, or NULL. */
const struct agent_known *agent_known_find(const struct agent_known_set *s, const char *member_id);

/* Frees what s holds (s itself is the caller's), leaving it empty under
 * the same key. */
void agent_known_free(struct agent_known_set *s);

/* The most members in one bucket of the index, 0 when there is none (for
 * tests: ids the hash fails to spread show here). */
size_t agent_known_chain_max(const struct agent_known_set *s);

/* Called once per precomputed placement, in member order: gateway_id is
 * where k would be placed arriving through the Service now.  A non-zero
 * return stops the pass and is returned. */
typedef int (*agent_placed_fn)(void *ctx, const struct agent_known *k, const char *gateway_id);

/* Places each known member without a live session (as noted last) as a
 * Service arrival over gws (the live gateways, sorted by id, as listed) with
 * loads counted from the live rows of the same sessions listing, exactly as
 * rs_place() would, and hands each answer to fn.  No gateway taking anyone
 * places nobody.  Returns 0, fn's non-zero return, -ENOMEM, -EINVAL (a
 * gateway id longer than RS_ID_MAX). */
int agent_precompute(struct agent_ring_cache *rc, const struct agent_known_set *s, const struct rs_gateway_row *gws,
		     size_t n_gws, const struct rs_session_row *rows, size_t n, agent_placed_fn fn, void *ctx);

/* Frees the cached ring. */
void agent_ring_cache_free(struct agent_ring_cache *rc);

#endif
