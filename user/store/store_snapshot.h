/* SPDX-License-Identifier: Apache-2.0 */
/* store_snapshot.h - the placement snapshot, read inside the caller's
 * transaction: what rs_store_admit_batch() (store_admit.c, which defines these),
 * rs_store_whatif() (store_whatif.c) and rs_store_steer() (store_steer.c)
 * all decide over, so that a
 * what-if answers exactly what an admission would.  Every function uses
 * the handle's placement cache (store_internal.h): st->live, st->ring,
 * st->placer, st->loads. */
#ifndef RS_STORE_SNAPSHOT_H
#define RS_STORE_SNAPSHOT_H

#include <stdbool.h>
#include <stdint.h>

#include "ringsteer/admission.h"
#include "store_internal.h"

/* A member's session row, if it has one. */
struct rs_member_row {
	bool found;
	struct rs_session_row row;
};

/* Reads member_id's row (any state, live or not) into *m.  Returns 0 or the
 * backend's error (-EIO for a corrupt or repeated row). */
int rs_store_member_row(struct rs_store *st, const char *member_id, struct rs_member_row *m);

/* Reads the live gateway rows (heartbeat at or after live_since) into
 * st->live, sorted by id.  Returns 0 or the backend's error. */
int rs_store_read_live(struct rs_store *st, int64_t live_since);

/* Makes st->ring the ring of st->live (rebuilt with its placer only when the
 * id set changed: st->live.rows[i] is then ring gateway i) and loads the
 * placer: each live gateway's counted sessions (its attached count plus
 * its reservations unexpired at now: one index range over pending rows,
 * never a read of active ones), draining from its row; st->loads[i] the
 * same counts.  Returns 0, -ENOMEM, -EIO or the backend's error. */
int rs_store_load_placer(struct rs_store *st, int64_t now);

/* Whether m is the member's live session: an active row on a live gateway
 * of st->live (read in this transaction).  Only a live session orders the
 * member's connections by epoch: a left session, a reservation (lapsed or
 * not) or an active row on a dead gateway stays in the table until
 * overwritten, and comparing with it would let one epoch a peer chose,
 * or a clock that once ran ahead, lock the member out for good. */
bool rs_store_live_session(const struct rs_store *st, const struct rs_member_row *m);

/* Sets *stale to the ring index of the live gateway whose load counts m's
 * row, or -1 (no row, a row that no longer counts, or one on a dead
 * gateway).  Returns 0, or -EIO when that gateway's load misses the row. */
int rs_store_stale_record(struct rs_store *st, const struct rs_member_row *m, int64_t now, int *stale);

/* Returns what m's row is to the admission rule (admission.h) given its
 * stale record from rs_store_stale_record(): none when stale is -1, else a
 * reservation or an attachment at stale. */
enum rs_record_kind rs_store_record_kind(const struct rs_member_row *m, int stale);

/* For a member whose row counts nowhere: when it is a reservation (expired,
 * or at a gateway gone), sets *kind to RS_RECORD_LAPSED and *at to that
 * gateway's ring index (-1: not live); else leaves them. */
void rs_store_lapsed_record(const struct rs_store *st, const struct rs_member_row *m, enum rs_record_kind *kind,
			    int *at);

/* Keeps the snapshot current after a write moved one counted row from
 * live gateway `from` to `to` (either -1: none): st->loads and the
 * placer's loads, as re-reading them would give within one transaction.
 * Returns 0 or -EIO (a load that cannot hold the move). */
int rs_store_move_load(struct rs_store *st, int from, int to);

/* Writes (inserts or replaces) member row r's identity and facts with
 * heartbeat now_ms: r->member_id, instance_id, epoch, gateway_id,
 * sandboxes, source, expires_ms and state; before is the member's row as
 * read in this transaction (found or not), so that the gateways' attached
 * counts follow (rs_store_attached_move).  Every session upsert goes
 * through here.  Returns 0 or the backend's error. */
int rs_store_member_write(struct rs_store *st, const struct rs_member_row *before, const struct rs_session_row *r,
			  int64_t now_ms);

#endif
