/* SPDX-License-Identifier: Apache-2.0 */
/* gateway_store.h - what the gateway core asks of its store, and the
 * interface a store implements to answer it.
 *
 * The core never calls a store: it hands out requests (struct
 * rs_gw_store_req) and takes their answers back.  The caller runs each one
 * wherever it likes (the reference gateway: on a worker thread beside its
 * event loop) with rs_gw_store_run() over a table of functions, so any
 * store that implements the table can stand in: the ledger over SQLite or
 * PostgreSQL (rs_gw_store_ops_ledger()), an in-memory one for simulation,
 * or an embedding gateway's own database.  A request touches only its own
 * memory while it runs, so it may run on another thread.
 *
 * One core's requests must run one at a time, in the order the core hands
 * them out: a take-back's claim follows its session end, and a registering
 * heartbeat's list of held sessions is exact only if every admission
 * handed out before it has written its row. */
#ifndef RINGSTEER_GATEWAY_STORE_H
#define RINGSTEER_GATEWAY_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringsteer/store.h"

#include "ringsteer/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The store contract the core relies on, one function per operation; each
 * returns 0 or negative errno as the rs_store_* function of the same name
 * documents (include/ringsteer/store.h), with -EBUSY, -EIO, -ETIMEDOUT and
 * the connection errors meaning "no answer" (rs_gw_store_unavailable()). */
struct rs_gw_store_ops {
	int (*admit_batch)(void *st, struct rs_admit *a, size_t n, int *errs);
	int (*session_claim)(void *st, struct rs_session_claim *c);
	int (*session_leave)(void *st, const char *gateway_id, const char *member_id, uint64_t epoch, int64_t now_ms,
			     uint32_t grace_ms);
	int (*session_sandboxes)(void *st, const char *gateway_id, const char *member_id, uint64_t epoch,
				 uint32_t sandboxes);
	int (*heartbeat)(void *st, const char *gateway_id, int64_t now_ms);
	int (*gateway_register)(void *st, const char *id, const char *peer, enum rs_gateway_state state,
				int64_t now_ms);
	int (*gateway_get)(void *st, const char *id, int64_t now_ms, struct rs_gateway_row *row);
	int (*list_gateways)(void *st, int64_t now_ms, bool all, struct rs_gateway_row **rows, size_t *n);
	uint64_t (*statements)(const void *st); /* may be NULL: reported as 0 */
	/* The store's wall clock minus ours in ms (rs_store_clock_skew());
	 * may be NULL: a store with no clock of its own (reported as 0). */
	int (*clock_skew)(const void *st, int64_t *skew_ms);
	/* rs_store_gateway_start_holding(): a start's registration deferred
	 * to the first heartbeat ends the earlier process's active rows, not
	 * ours.  May be NULL: gateway_register instead (every row kept). */
	int (*gateway_start_holding)(void *st, const char *id, const char *peer, enum rs_gateway_state state,
				     int64_t now_ms, const struct rs_session_key *held, size_t n);
};

enum rs_gw_store_op {
	RS_GW_STORE_ADMIT,      /* arrivals, drain handoffs, deferred placements: one transaction */
	RS_GW_STORE_CLAIM,      /* a session accepted while the store was away */
	RS_GW_STORE_LEAVE,      /* a session ended (its place kept grace_ms) */
	RS_GW_STORE_SANDBOXES,  /* a session's sandbox count */
	RS_GW_STORE_HEARTBEAT,  /* our row's heartbeat (registered again if gone; first written, an
				 * earlier process's active rows ended, if our start could not), its
				 * state read */
	RS_GW_STORE_MEMBERSHIP, /* is another live gateway serving? */
	RS_GW_STORE_DRAINING,   /* our row marked draining */
};
/* Ops there are (outside the enum: switches over it stay exhaustive). */
#define RS_GW_STORE_OP_COUNT (RS_GW_STORE_DRAINING + 1)

/* The op's metric label: "admit", "claim", "leave", "sandboxes",
 * "heartbeat", "membership", "draining"; "unknown" past the list. */
RS_EXPORT const char *rs_gw_store_op_label(enum rs_gw_store_op op);

/* One request.  The core owns it from rs_gw_core's store callback until it
 * is given back to rs_gw_core_store_done(); in between the runner may read
 * and fill the fields below, nothing else of it. */
struct rs_gw_store_req {
	enum rs_gw_store_op op;
	const char *gateway_id;     /* the asking gateway */
	const char *peer;           /* its advertised peer endpoint */
	union {
		struct {
			struct rs_admit *a; /* a[0..n): in and out (now_ms set by the runner) */
			int *errs;          /* out: each item's outcome */
			size_t n;
		} admit;
		struct rs_session_claim claim; /* now_ms set by the runner */
		struct {
			const char *member_id;
			uint64_t epoch;
			uint32_t grace_ms;
		} leave;
		struct {
			const char *member_id;
			uint64_t epoch;
			uint32_t count;
		} sandboxes;
		struct {
			bool draining;      /* register as draining if our row is gone */
			bool check_drain;   /* read whether our row was set draining */
			bool registered;    /* out: the row was gone and is written again */
			bool told_drain;    /* out: our row says draining */
			bool register_row;  /* write our row (peer, state, heartbeat), not only its
					     * heartbeat: a process whose start could not register,
					     * so that a row an earlier process left (draining, say)
					     * is made ours rather than obeyed */
			const struct rs_session_key *held; /* with register_row: the sessions this process
							    * holds (n_held); every other active row at
							    * our gateway is an earlier process's and ends */
			size_t n_held;
			uint64_t statements; /* out: the store handle's statement count */
			int64_t clock_skew_ms; /* out: the store's clock minus ours (0: none measured) */
		} heartbeat;
		struct {
			bool others_serving; /* out */
		} membership;
	} u;
};

/* The table over the ringsteer ledger (struct rs_store: SQLite or PostgreSQL). */
RS_EXPORT const struct rs_gw_store_ops *rs_gw_store_ops_ledger(void);

/* Runs req against st through ops at wall-clock now_ms; returns the
 * request's outcome (0 or negative errno; an admission's per-item
 * outcomes in u.admit.errs). */
RS_EXPORT int rs_gw_store_run(const struct rs_gw_store_ops *ops, void *st, struct rs_gw_store_req *req, int64_t now_ms);

/* Whether err from a store means it did not answer (busy past its timeout,
 * I/O, a lost or refused connection), as opposed to an answer. */
RS_EXPORT bool rs_gw_store_unavailable(int err);

#ifdef __cplusplus
}
#endif

#endif
