/* SPDX-License-Identifier: Apache-2.0 */
/* store.h - the membership and session ledger that every gateway shares,
 * behind one interface (SQLite for one host, PostgreSQL for many: a backend
 * supplies transactions and statements, the placement transaction above
 * them is common).  Times are wall-clock milliseconds (several processes, maybe
 * several hosts, compare them), passed in by the caller so tests control
 * them.  On PostgreSQL they are moved onto the server's clock: the
 * transactions' begins read the server's now() (no round trip of its own)
 * and, when it differs from this process's wall clock by more than a
 * second, the caller's times are shifted by that skew for the transaction
 * (rs_store_clock_skew()), so a host whose clock was stepped neither
 * writes heartbeats its peers read as dead nor declares them dead.  A
 * gateway whose heartbeat is older than the TTL is dead, and so
 * are its sessions: an attached session lives exactly as long as its
 * gateway's row (nothing refreshes a session row), a reservation until it
 * ends, on a live gateway.  Store work per event does not grow with the
 * number of sessions (rs_store_statements() counts it).  Any call that
 * talks to a PostgreSQL server may also return -ETIMEDOUT: the server did
 * not answer within the busy timeout (the handle reconnects on its next
 * call); no call waits on a stopped server longer than that.  Any call may
 * also fail with -ENOSPC (the store's disk or database is full), -EROFS (a
 * write refused: a read-only file, handle or server, e.g. a PostgreSQL
 * standby; the handle reconnects on its next call) or -EUCLEAN (the store's
 * data is damaged: SQLite's corrupt file or not a database, PostgreSQL's
 * data_corrupted or index_corrupted); -EIO is everything else the store
 * could not answer.  rs_store_error_kind() sorts them for counting. */
#ifndef RINGSTEER_STORE_H
#define RINGSTEER_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringsteer/placement.h"
#include "ringsteer/proto.h"
#include "ringsteer/ring.h"

#include "ringsteer/export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RS_STORE_DEFAULT_URL "sqlite:/var/lib/ringsteer/ringsteer.db"
#define RS_STORE_URL_MAX 4096

enum rs_gateway_state {
	RS_GATEWAY_SERVING = 0,
	RS_GATEWAY_DRAINING = 1,
};

enum rs_session_state {
	RS_SESSION_PENDING = 0, /* reserved at a redirect target until it arrives */
	RS_SESSION_ACTIVE = 1,  /* attached */
};

struct rs_store_options {
	uint32_t ttl_ms;          /* heartbeat age past which a row is dead; 0: 15000 */
	uint32_t reservation_ms;  /* lifetime of a pending reservation; 0: 5000 */
	uint32_t busy_timeout_ms; /* wait for another writer; 0: 5000 */
	bool no_create;           /* open only an existing store file: never create it
				   * (or its directory); -ENOENT when it is missing */
	bool read_only;           /* no_create, and never write: the schema must be there
				   * already (else -EIO) and every write fails (-EROFS);
				   * transactions never take the writers' lock */
};

struct rs_gateway_row {
	char id[RS_ID_MAX + 1];
	char peer[RS_ENDPOINT_MAX + 1];
	uint8_t state;         /* enum rs_gateway_state */
	int64_t heartbeat_ms;
	bool live;             /* heartbeat within TTL at the listing's now */
	uint32_t supervisors;  /* live sessions on it (pending reservations included) */
	uint32_t attached;     /* its active session rows, live or not (its
				* count kept in the row: schema version 2) */
};

struct rs_session_row {
	char member_id[RS_ID_MAX + 1];
	char instance_id[RS_INSTANCE_MAX + 1];
	uint64_t epoch;
	char gateway_id[RS_ID_MAX + 1];
	uint32_t sandboxes;
	char source[RS_ENDPOINT_MAX + 1]; /* supervisor's address as the gateway saw it */
	int64_t heartbeat_ms;  /* when the row was written: for an active row,
				* attached at (never refreshed) */
	int64_t expires_ms;    /* pending: reservation end; active: attached +
				* TTL, for information only (it lives with its
				* gateway's row) */
	uint8_t state;         /* enum rs_session_state */
	bool live;             /* counted: its gateway live, and active or an
				* unexpired reservation */
};

struct rs_store;

/* What kind of failure a store call's error is, for counting and alerting
 * (a gateway's ringsteer_gateway_store_errors_total{kind}). */
enum rs_store_error_kind {
	RS_STORE_ERROR_UNAVAILABLE = 0, /* no answer: -EIO, -EBUSY, -ETIMEDOUT, a lost connection */
	RS_STORE_ERROR_FULL,            /* -ENOSPC */
	RS_STORE_ERROR_READONLY,        /* -EROFS */
	RS_STORE_ERROR_CORRUPT,         /* -EUCLEAN */
	RS_STORE_ERROR_OTHER,           /* anything else (-ENOMEM, -ENOENT, ...) */
	RS_STORE_ERROR_KINDS
};

/* The kind of err (a negative errno a store call returned). */
RS_EXPORT enum rs_store_error_kind rs_store_error_kind(int err);

/* "unavailable", "full", "readonly", "corrupt" or "other" (out of range). */
RS_EXPORT const char *rs_store_error_kind_label(enum rs_store_error_kind kind);

/* Opens the store at url, creating its file and schema if missing, or
 * migrating an older schema (unless opt says no_create or read_only).  URLs:
 * "sqlite:PATH"; "postgres://..." or "postgresql://..." (a libpq URI, e.g.
 * postgres://user@host:5432/db, or postgres:///db?host=/run/postgresql for
 * a UNIX socket directory), where the store is the ringsteer schema in that
 * database (the database itself is never created).  opt may be NULL
 * (defaults).  Returns 0, -EINVAL (malformed url), -EPROTONOSUPPORT (unknown
 * scheme), -ENOENT (no_create or read_only, and no store there: no file;
 * on PostgreSQL no database or no ringsteer schema in it), -EPROTO (the
 * store's schema is newer than this code's: a newer ringsteer wrote it;
 * nothing is changed), -EIO (cannot open or create, or SQLite read_only and
 * no ringsteer schema).  rs_store_open_why() also says why. */
RS_EXPORT int rs_store_open(const char *url, const struct rs_store_options *opt, struct rs_store **out);

/* The longest reason rs_store_open_why() and rs_store_last_error() give,
 * its NUL included. */
#define RS_STORE_ERROR_MAX 512

/* rs_store_open(); when it fails, why[why_size] (why may be NULL) receives
 * the reason in the backend's own words, on one line (libpq's message's
 * lines joined, cut to fit), e.g. libpq's 'connection to server at
 * "127.0.0.1", port 1 failed: Connection refused ...' or SQLite's "unable
 * to open database file (No such file or directory)", or "" when the
 * backend gave none (a malformed URL, no memory, no ringsteer schema). */
RS_EXPORT int rs_store_open_why(const char *url, const struct rs_store_options *opt, struct rs_store **out,
				char *why, size_t why_size);

/* Why st's most recent call that reached the database failed, in the
 * backend's own words (as rs_store_open_why()); "" when it did not fail
 * or the backend gave no reason.  Valid until st's next call; read it on
 * the thread that made the call. */
RS_EXPORT const char *rs_store_last_error(const struct rs_store *st);

/* Closes st; NULL is allowed. */
RS_EXPORT void rs_store_close(struct rs_store *st);

/* Returns the options in force (defaults filled in). */
RS_EXPORT const struct rs_store_options *rs_store_options(const struct rs_store *st);

/* Starts following the store's changes (PostgreSQL: LISTEN, on a connection
 * of the handle's own) and returns a descriptor to poll for readability;
 * then rs_store_watch_consume().  Changes notified: gateways and sessions
 * inserted or deleted, and updates of a gateway's peer or state or of a
 * session's gateway, state, epoch, sandboxes or source; never
 * heartbeat-only updates, nor expiry by TTL (which writes nothing): a
 * watcher keeps a slow poll for those.  Calling it again while watching
 * returns the same descriptor.  Returns the descriptor (>= 0), -EOPNOTSUPP
 * (SQLite: poll instead), -EIO (cannot connect), -EINVAL. */
RS_EXPORT int rs_store_watch(struct rs_store *st);

/* Reads the notifications that arrived, without blocking, and returns how
 * many (>= 0; several changes may arrive as one), or -EIO when the watch
 * connection is lost: fall back to polling and call rs_store_watch() again
 * later, which reconnects (the descriptor may then differ).  -EOPNOTSUPP,
 * -EINVAL as rs_store_watch(). */
RS_EXPORT int rs_store_watch_consume(struct rs_store *st);

/* Inserts or updates gateway id with its peer endpoint and state, heartbeat
 * now, keeping its sessions (a running gateway registering again; a
 * process starting calls rs_store_gateway_start()).  Returns 0, -EINVAL,
 * -EIO, -EBUSY (lock not had within the timeout). */
RS_EXPORT int rs_store_gateway_register(struct rs_store *st, const char *id, const char *peer,
					enum rs_gateway_state state, int64_t now_ms);

/* A gateway process starting: registers id as rs_store_gateway_register()
 * does and, in the same write transaction, deletes its active session rows
 * (a new process holds no connection; nothing else would ever end them,
 * since they live with the gateway's row) and zeroes its attached count.
 * Reservations at it are kept (they end by themselves).  Returns 0,
 * -EINVAL, -EIO, -EBUSY. */
RS_EXPORT int rs_store_gateway_start(struct rs_store *st, const char *id, const char *peer, enum rs_gateway_state state,
				     int64_t now_ms);

/* A session a gateway process holds: its member and epoch. */
struct rs_session_key {
	char member_id[RS_ID_MAX + 1];
	uint64_t epoch;
};

/* A gateway process whose start could not register (the store was away)
 * registering once it answers, when it may already hold sessions: as
 * rs_store_gateway_start(), except that the active rows at id whose member
 * and epoch are among held[0..n) (the process's own) are kept, and its
 * attached count is those kept.  The rows are told apart by who holds
 * them, not by when they were attached: the clocks that wrote those times
 * may have been stepped since.  Returns 0, -EINVAL, -ENOMEM, -EIO, -EBUSY. */
RS_EXPORT int rs_store_gateway_start_holding(struct rs_store *st, const char *id, const char *peer,
					     enum rs_gateway_state state, int64_t now_ms,
					     const struct rs_session_key *held, size_t n);

/* Sets gateway id's state (serving or draining) without touching its
 * heartbeat: how `ringsteerctl drain` asks a gateway to drain.  Returns 0,
 * -ENOENT, -EINVAL, -EIO, -EBUSY. */
RS_EXPORT int rs_store_gateway_set_state(struct rs_store *st, const char *id, enum rs_gateway_state state);

/* Reads gateway id's row (live and supervisors filled as in the listing).
 * Returns 0, -ENOENT, -EINVAL, -EIO, -EBUSY. */
RS_EXPORT int rs_store_gateway_get(struct rs_store *st, const char *id, int64_t now_ms, struct rs_gateway_row *row);

/* Deletes gateway id and every session row on it.  Returns 0, -ENOENT,
 * -EIO, -EBUSY. */
RS_EXPORT int rs_store_gateway_remove(struct rs_store *st, const char *id);

/* Lists gateways (every row when all, else live ones), sorted by id, into a
 * malloc'd array the caller frees.  Returns 0, -ENOMEM, -EIO, -EBUSY. */
RS_EXPORT int rs_store_list_gateways(struct rs_store *st, int64_t now_ms, bool all, struct rs_gateway_row **rows,
				     size_t *n);

/* Lists sessions (every row when all, else live ones), sorted by gateway
 * then member, into a malloc'd array the caller frees.  Same returns. */
RS_EXPORT int rs_store_list_sessions(struct rs_store *st, int64_t now_ms, bool all, struct rs_session_row **rows,
				     size_t *n);

/* One arrival at gateway `gateway_id`, decided in one write transaction. */
struct rs_admit {
	/* in */
	const char *gateway_id;   /* the gateway deciding (where the member landed) */
	const char *member_id;
	const char *instance_id;
	uint64_t epoch;
	bool stay;                /* HELLO asked to stay */
	bool redirected;          /* HELLO said REDIRECTED (dialing a redirect's target) */
	bool handoff;             /* the deciding gateway drains and hands this
				   * attached member (row: here, this epoch) off */
	bool deferred;            /* the deciding gateway serves, above the cap,
				   * and places this attached member (row: here,
				   * this epoch), accepted degraded, by the rule */
	bool liveness;            /* a Service fallback's third round in a row
				   * refused here: honor the stay above the cap */
	uint32_t sandboxes;
	const char *source;       /* "ADDR:PORT" or "" */
	int64_t now_ms;
	/* out */
	bool fallback;            /* decided as a Service fallback (below) */
	bool over_cap;            /* accepted above the cap for liveness */
	bool accepted;            /* true: attach here; false: redirect to target */
	struct rs_decision decision;
	char target_id[RS_ID_MAX + 1];
	char target_peer[RS_ENDPOINT_MAX + 1];
};

/* The placement transaction: refreshes the deciding gateway's heartbeat,
 * reads live gateways (ring) and their counted sessions (load: each live
 * gateway's attached count plus its unexpired reservations), takes
 * the member's own row out as its stale record, runs the placement rule,
 * and writes the member's row: active here when accepted, else pending at
 * the target until now + reservation, so concurrent arrivals count it.
 * Returns 0, -ESTALE (the member's row holds a newer epoch: this connection
 * is superseded; nothing written), -ENOENT (the deciding gateway is not
 * registered, or no gateway takes anyone), -EIO, -EBUSY.
 *
 * A Service fallback after a failed redirect (stay without redirected,
 * while the member's row is a live reservation at another gateway T: the
 * target it could not reach) is decided over the ring without T, which may
 * be dead and not yet past its TTL: the stay is honored while the deciding
 * gateway is serving and below that cap, else the member is placed by the
 * rule (never back to T).  Without this a killed gateway's supervisors,
 * redirected to it until its row expires, would all stay where the Service
 * dropped them, above the cap.  Once that reservation lapsed (expired, or
 * its gateway gone) the stay holds no place to keep and is decided as a
 * fallback over the whole ring.
 * a->fallback says the arrival was decided so.
 * With a->liveness (the deciding gateway counted this member's fallbacks
 * refused here twice in a row: every target it is sent to is unreachable,
 * a lasting partition) the stay is honored while the deciding gateway
 * serves, above the cap or not (a->over_cap then): liveness beats balance.
 *
 * An arrival (no stay) whose own pending reservation is at another live
 * serving gateway H that, without this member, is below the cap is sent
 * to H (reason RS_REASON_RESERVED): the reservation counted in H's load
 * all along, so loads stay exact.  This is how a supervisor that left
 * (rs_store_session_leave()) and returns within the grace goes home.
 *
 * An arrival (no stay) that lands where its own pending reservation is,
 * at a serving gateway, is accepted there (reason RS_REASON_RESERVED when
 * the rule would now say otherwise): the rule chose this gateway when the
 * reservation was written (a node agent steering the member's connect,
 * rs_store_steer(), or a redirect whose target it reached through the
 * Service) and the reservation has counted since, so the kernel's choice
 * and the gateway's agree even when loads moved in between.
 *
 * With handoff set, the deciding gateway is draining and the member is
 * attached to it: the member's row must be (gateway_id, epoch), else
 * -ESTALE; it is placed by the rule over the ring without the draining
 * gateway (reason drain-handoff), never accepted here, and its row becomes a
 * pending reservation at the target with the same epoch and sandboxes, so
 * the next handoff of the plan counts it.  instance_id, sandboxes and source
 * are taken from the row.
 *
 * With deferred set (never with handoff), the deciding gateway serves and
 * the member, accepted there degraded while the store was away and since
 * claimed (rs_store_session_claim() said above_cap), is placed by the rule
 * now, once: the row must be (gateway_id, epoch), else -ESTALE.  If the
 * deciding gateway, counting the member, is no longer above the cap, or the
 * rule (over the whole serving ring, the member's row here its stale
 * record, from nowhere) chooses it, the member is accepted here and nothing
 * is written; otherwise its row becomes a pending reservation at the target
 * as a handoff's does (the rule's reason: placed or owner-fallback). */
RS_EXPORT int rs_store_admit(struct rs_store *st, struct rs_admit *a);

/* Arrivals pending together at one gateway, decided in one write
 * transaction: the deciding gateway's heartbeat refreshed once, ring and
 * loads read once, the items' members' rows read once, then a[0..n)
 * decided in order, each exactly as rs_store_admit() decides it, each
 * item's row kept in memory before the next is decided (a later item of
 * the same member sees the earlier one's row), and every member's last row
 * written at the end: the result equals admitting them one at a time in
 * that order.  On PostgreSQL a batch costs the same round trips whatever
 * its size (the rows read in one statement and written in one).  errs[i] receives
 * item i's outcome: 0 (a->accepted, decision and target set), -ESTALE or
 * -ENOENT (as rs_store_admit(); nothing written for it), or -EINVAL for an
 * item rs_store_admit() would refuse so (an epoch above INT64_MAX, a bad
 * id, handoff with deferred) or whose gateway_id or now_ms differs from
 * a[0]'s: it fails alone, never the others.  The return is the
 * transaction's: 0, or -EINVAL (st NULL or a[0]'s gateway_id bad), -ENOENT
 * (the deciding gateway has no row), -EIO, -EBUSY, -ENOMEM, and then every
 * valid item's errs[i] is that error and nothing is written.  When no
 * item is written the transaction is rolled back (as n failed admissions
 * would leave it). */
RS_EXPORT int rs_store_admit_batch(struct rs_store *st, struct rs_admit *a, size_t n, int *errs);

/* What-if: decides where member_id would go arriving now through the
 * Service (no stay, landing anywhere but at a reservation of its own),
 * exactly as rs_store_admit() would over the same
 * snapshot (ring = live gateways, load = their counted sessions, draining
 * gateways no target, the member's own counted row its stale record), in
 * one read transaction that writes nothing.  target_id (RS_ID_MAX + 1
 * bytes) receives the chosen gateway's id.  Returns 0, -EINVAL, -ENOENT (no
 * serving gateway), -EIO, -EBUSY. */
RS_EXPORT int rs_store_whatif(struct rs_store *st, const char *member_id, int64_t now_ms, struct rs_decision *d,
			      char *target_id);

/* Where a node agent sends a registered member's connects to the Service. */
struct rs_store_steer {
	char gateway_id[RS_ID_MAX + 1];
	char peer[RS_ENDPOINT_MAX + 1]; /* the target's advertised peer endpoint */
	bool home;     /* the member is attached there (its live session) */
	bool reserved; /* placed now: a pending reservation was written there */
	int64_t expires_ms; /* reserved: that reservation's end (rs_store_reservation_withdraw) */
};

/* Chooses the gateway member_id's next connect to the Service goes to, in
 * one write transaction: where its row counts at a live serving gateway
 * (attached, or already reserved: by a steer, a redirect, or its own
 * departure, rs_store_session_leave(), so a restart goes home) nothing is
 * written and that gateway is the answer; otherwise the member is placed exactly as rs_store_admit()
 * would place it arriving through the Service (no stay), and its row
 * becomes a pending reservation at the target until now +
 * reservation_ms (epoch and facts of an existing row kept), so that
 * concurrent arrivals count it and the target's own decision agrees.  A
 * member attached to a draining gateway gets the rule's answer and nothing
 * is written (its drain hands it off).
 * Returns 0, -EINVAL, -ENOENT (no live gateway), -EIO, -EBUSY. */
RS_EXPORT int rs_store_steer(struct rs_store *st, const char *member_id, int64_t now_ms, struct rs_store_steer *out);

/* rs_store_steer for member_ids[0..n) in one write transaction at one
 * now_ms, in order: the result equals steering them one at a time in that
 * order (a later member counts the earlier ones' reservations).  outs[i]
 * receives member i's answer.  All or nothing: the return is the
 * transaction's (0, -EINVAL, -ENOENT, -EIO, -EBUSY) and every errs[i] is
 * that return; on an error nothing is written and outs are zeroed. */
RS_EXPORT int rs_store_steer_batch(struct rs_store *st, const char *const *member_ids, size_t n, int64_t now_ms,
				   struct rs_store_steer *outs, int *errs);

/* Refreshes gateway_id's heartbeat: one write, whatever the number of its
 * sessions (they live with it).  Returns 0, -ENOENT (gateway row gone:
 * register again; its sessions went with it), -EINVAL, -EIO, -EBUSY. */
RS_EXPORT int rs_store_heartbeat(struct rs_store *st, const char *gateway_id, int64_t now_ms);

/* Returns how many statements st has run through its backend since it was
 * opened: every statement, plus one per transaction begun and one per
 * commit (rollbacks not counted; PostgreSQL's write begin, one round trip,
 * counts one).  What a test or a benchmark measures work per event by. */
RS_EXPORT uint64_t rs_store_statements(const struct rs_store *st);

/* The store's wall clock minus this process's, in ms, as the last
 * transaction's begin measured it (PostgreSQL: the server's now() against
 * the local clock when the begin was sent, the one-way latency in it; a
 * read transaction reuses a measure up to a second old).
 * Returns 0, -ENOENT (nothing measured yet), -EOPNOTSUPP (the store has no
 * clock of its own: SQLite, this machine's), -EINVAL. */
RS_EXPORT int rs_store_clock_skew(const struct rs_store *st, int64_t *skew_ms);

/* A session a gateway accepted while the store was unavailable (degraded),
 * for rs_store_session_claim() once the store answers again. */
struct rs_session_claim {
	const char *gateway_id;  /* the gateway holding the connection */
	const char *member_id;
	const char *instance_id; /* "" allowed */
	uint64_t epoch;
	uint32_t sandboxes;
	const char *source;      /* "ADDR:PORT" or "" */
	int64_t now_ms;
	/* out, on success: the claiming gateway's load (counted sessions, this
	 * one included) and the cap (ceil(N / G) over live gateways, G the
	 * serving ones) once the row is written, and load > cap */
	uint32_t load, cap;
	bool above_cap;
};

/* Records a degraded session: in one write transaction, refreshes
 * gateway_id's heartbeat and makes the member's row active there with this
 * epoch (attached now) unless the row holds a newer epoch, or this epoch at
 * another gateway; then says whether the gateway is above the cap (a
 * caller places such a member by the rule once: rs_admit.deferred).
 * Returns 0, -ESTALE (superseded: nothing written), -ENOENT (gateway_id has
 * no row: nothing written), -EINVAL, -EIO, -EBUSY. */
RS_EXPORT int rs_store_session_claim(struct rs_store *st, struct rs_session_claim *c);

/* Deletes member's row if it is still the pending reservation at
 * gateway_id ending at expires_ms (one rs_store_steer wrote: out.expires_ms),
 * so that a node agent can take back a reservation its caller did not
 * claim: an arrival (the row made active), a later reservation or a
 * departure's grace are never touched.  Returns 1 (deleted), 0 (claimed or
 * moved on: nothing to do), -EINVAL, -EIO, -EBUSY. */
RS_EXPORT int rs_store_reservation_withdraw(struct rs_store *st, const char *member_id, const char *gateway_id,
					    int64_t expires_ms);

/* Records member's sandbox count if its row is still (gateway_id, epoch).
 * Returns 0, -ESTALE (row moved on), -EIO, -EBUSY. */
RS_EXPORT int rs_store_session_sandboxes(struct rs_store *st, const char *gateway_id, const char *member_id,
					 uint64_t epoch, uint32_t sandboxes);

/* Deletes member's row if it is still (gateway_id, epoch): a departure.
 * Returns 0 (deleted or already moved on), -EIO, -EBUSY. */
RS_EXPORT int rs_store_session_end(struct rs_store *st, const char *gateway_id, const char *member_id, uint64_t epoch);

/* A departure that keeps its place: if member's row is still its active
 * attachment at (gateway_id, epoch), the row becomes a pending reservation
 * at the same gateway until now + grace_ms (epoch and facts kept), counted
 * in that gateway's load as any reservation, so that the member returning
 * within the grace goes home (rs_store_admit(), rs_store_steer()) and one
 * gone for good frees its place when the reservation expires.  grace_ms 0,
 * or a row that is not active, is rs_store_session_end().  A draining or
 * exiting gateway ends its sessions instead (its place is not to keep).
 * Returns 0 (kept, deleted, or already moved on), -EINVAL, -EIO, -EBUSY. */
RS_EXPORT int rs_store_session_leave(struct rs_store *st, const char *gateway_id, const char *member_id, uint64_t epoch,
				     int64_t now_ms, uint32_t grace_ms);

#ifdef __cplusplus
}
#endif

#endif
