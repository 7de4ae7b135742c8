/* SPDX-License-Identifier: Apache-2.0 */
/* store_internal.h - what the store's generic files share: the handle, the
 * liveness predicate in C (the same one store_sql.c states in SQL), the
 * transaction wrapper, and the row decoders that turn backend values into
 * the public row structs with every bound checked, and the one path every
 * statement takes (rs_store_exec: counted) and every session write takes
 * (rs_store_member_write / rs_store_attached_move: gateways.attached kept). */
#ifndef RS_STORE_INTERNAL_H
#define RS_STORE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "ringsteer/placer.h"
#include "ringsteer/ring.h"
#include "ringsteer/store.h"

/* A growable list of gateway rows. */
struct rs_gateway_list {
	struct rs_gateway_row *rows;
	size_t n, cap;
};

struct rs_store {
	const struct rs_store_backend *be;
	struct rs_db *db;
	struct rs_store_options opt;
	uint64_t statements;          /* rs_store_statements() */
	char error[RS_STORE_ERROR_MAX]; /* rs_store_last_error(): the backend writes it
					 * (rs_store_error_set), each call clears it */

	/* The store's clock (PostgreSQL's server): the skew measured at the
	 * running transaction's begin (rs_store_clock_skew()), and the shift
	 * its body applies to the caller's times (rs_store_now()). */
	int64_t skew_ms, shift_ms;
	bool skew_known;

	/* The placement cache (store_admit.c): a ring over the live gateway ids
	 * and a placer over it, rebuilt only when that id set changes; the
	 * scratch lists each admission refills. */
	struct rs_ring *ring;
	struct rs_placer *placer;
	struct rs_gateway_list live;  /* live gateway rows, then indexed like the ring */
	const char **ids;             /* live.rows[i].id, for rs_ring_new */
	uint32_t *loads;              /* per ring gateway */
	size_t scratch_cap;           /* room in ids and loads */
};

/* Skews of at most this are not applied: clocks kept by NTP agree far
 * closer, every TTL is seconds, and a shift of the round trip's noise
 * would move every time written by a few ms for nothing. */
#define RS_STORE_SKEW_TOLERANCE_MS 1000

/* The caller's wall-clock time now_ms on the store's clock: moved by the
 * skew the running transaction's begin measured when it is beyond
 * RS_STORE_SKEW_TOLERANCE_MS (PostgreSQL), else as given (SQLite: one
 * machine, one clock).  Every transaction body reads its times so, so
 * that a gateway whose clock was stepped writes heartbeats and expiries,
 * and judges its peers' liveness, by the server's clock. */
int64_t rs_store_now(const struct rs_store *st, int64_t now_ms);

/* now - ttl and now + ms, saturating (now is the caller's). */
int64_t rs_store_time_sub(int64_t t, uint32_t ms);
int64_t rs_store_time_add(int64_t t, uint32_t ms);

/* Whether a gateway heartbeat at heartbeat_ms is live at "live since". */
static inline bool rs_store_gateway_live(int64_t heartbeat_ms, int64_t live_since)
{
	return heartbeat_ms >= live_since;
}

/* Whether session row r counts as load (its gateway's liveness aside): an
 * active row lives with its gateway's row (nothing refreshes the session's
 * own), a pending one until its reservation ends. */
static inline bool rs_store_session_counts(const struct rs_session_row *r, int64_t now)
{
	if (r->state == RS_SESSION_ACTIVE)
		return true;
	return r->expires_ms >= now;
}

/* Whether id is a gateway or member id the store accepts: 1..RS_ID_MAX
 * bytes.  (The protocol restricts the charset; the store only needs ids to
 * fit its rows.) */
bool rs_store_id_ok(const char *id);

/* Whether s is a string of at most max bytes. */
bool rs_store_text_ok(const char *s, size_t max);

/* Runs one statement through st's backend, counting it (every statement
 * the store runs goes through here).  Same contract as the backend's exec. */
int rs_store_exec(struct rs_store *st, enum rs_stmt stmt, const struct rs_db_value *params, rs_db_row_fn on_row,
		  void *ctx, uint64_t *changes);

/* Keeps gateways.attached (the count of active rows per gateway) right
 * across one write of a member's session row inside the caller's write
 * transaction: before is the row before (NULL: none), after the row
 * after (NULL: deleted).  Nothing to do unless an active row appears, leaves or
 * changes gateway.  Returns 0 or the backend's error. */
int rs_store_attached_move(struct rs_store *st, const struct rs_session_row *before,
			   const struct rs_session_row *after);

/* Runs body inside one transaction of the given kind: commits when it
 * returns 0, rolls back otherwise.  Returns body's error or the commit's. */
int rs_store_txn(struct rs_store *st, enum rs_txn kind, int (*body)(struct rs_store *st, void *arg), void *arg);

/* Sets gateway_id's heartbeat to now_ms, inside the caller's write
 * transaction.  Returns 0, -ENOENT when the gateway has no row, or the
 * backend's error. */
int rs_store_gateway_touch(struct rs_store *st, const char *gateway_id, int64_t now_ms);

/* Row decoders (store_rows.c).  Each returns 0 or -EIO when a value is of
 * the wrong type, out of range, too long for its array, empty where it may
 * not be, or holds a NUL: a corrupt row never overflows anything. */

/* Copies text value v into dst[size] (NUL-terminated). */
int rs_row_text(const struct rs_db_value *v, bool nonempty, char *dst, size_t size);

/* Reads integer value v within lo..hi. */
int rs_row_int(const struct rs_db_value *v, int64_t lo, int64_t hi, int64_t *out);

/* cols[0..4] = id, peer, state, heartbeat_ms, attached; live and
 * supervisors zeroed. */
int rs_row_gateway(const struct rs_db_value *cols, size_t n, struct rs_gateway_row *out);

/* cols[0..8] = the session columns of store_sql.c; live false. */
int rs_row_session(const struct rs_db_value *cols, size_t n, struct rs_session_row *out);

/* An rs_db_row_fn appending gateway rows to a struct rs_gateway_list. */
int rs_row_collect_gateway(void *list, const struct rs_db_value *cols, size_t n);

/* Sorts gateway rows by id (byte order) and finds one by id (NULL if absent). */
void rs_gateway_list_sort(struct rs_gateway_list *l);
struct rs_gateway_row *rs_gateway_list_find(const struct rs_gateway_list *l, const char *id);

#endif
