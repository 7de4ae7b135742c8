/* SPDX-License-Identifier: Apache-2.0 */
/* ledger.h - the simulator's store: the membership and session ledger of
 * include/ringsteer/store.h kept in memory, behind the gateway core's
 * store interface (struct rs_gw_store_ops, gateway_store.h), so the cores
 * run against it exactly as against SQLite or PostgreSQL.
 *
 * Guarantees: every operation keeps the contract store.h documents for the
 * rs_store_* function of the same name (one write transaction each, all or
 * nothing, the same returns), and every admission is decided by the
 * backends' own function, rs_admit_decide() (admission.h), over the same
 * snapshot they read (live gateways sorted by id, loads = attached count
 * plus unexpired reservations, the member's counted row as its record).
 * Times follow PostgreSQL's rule: a caller's clock more than a second off
 * the store's is replaced by the store's (store.h, rs_store_clock_skew).
 *
 * The state (struct ledger) is plain data, so a copy is a snapshot: the
 * store's failover (store_link.c) goes back to the last acknowledged one.
 * Gateways and members are the simulator's ("gw-N", "m-N"): a row's slot
 * is N. */
#ifndef RS_VOPR_LEDGER_H
#define RS_VOPR_LEDGER_H

#include <stdbool.h>
#include <stdint.h>

#include "ringsteer/admission.h"
#include "ringsteer/gateway_store.h"
#include "ringsteer/store.h"

#define LEDGER_GATEWAYS 8
#define LEDGER_MEMBERS 64
#define LEDGER_ID_MAX 15

struct ledger_gateway {
	bool present;
	uint8_t state;        /* enum rs_gateway_state */
	uint32_t attached;    /* its active rows (store.h: gateways.attached) */
	int64_t heartbeat_ms;
	char id[LEDGER_ID_MAX + 1];
	char peer[RS_ENDPOINT_MAX + 1];
};

struct ledger_session {
	bool present;
	uint8_t state;        /* enum rs_session_state */
	int8_t gateway;       /* the row's gateway slot */
	uint32_t sandboxes;
	uint64_t epoch;
	int64_t heartbeat_ms;
	int64_t expires_ms;
	char instance[RS_INSTANCE_MAX + 1];
};

struct ledger {
	struct ledger_gateway gw[LEDGER_GATEWAYS];
	struct ledger_session s[LEDGER_MEMBERS];
	uint64_t statements;
};

/* The admission function the store decides with: rs_admit_decide, or a
 * test's deliberately broken wrapper of it (vopr.h, mutants). */
typedef int (*ledger_admit_fn)(struct rs_placer *p, const struct rs_admit_input *in, struct rs_admit_outcome *out);

/* A ledger with what its operations need beside the data: options, the
 * store's clock for the running call, and the ring and placer cached over
 * the live id set (rebuilt only when it changes, as the real store does). */
struct ledger_ctx {
	struct ledger *l;
	uint32_t ttl_ms, reservation_ms;
	int64_t store_wall_ms;   /* the store's own clock now (set before each call) */
	int64_t skew_ms;         /* store minus caller, as the last call measured */
	bool skew_known;
	ledger_admit_fn admit;
	struct rs_ring *ring;
	struct rs_placer *placer;
	uint32_t ring_set;       /* bit per gateway slot: the ring's id set */
	int ring_slot[LEDGER_GATEWAYS]; /* ring index -> gateway slot */
	int slot_ring[LEDGER_GATEWAYS]; /* gateway slot -> ring index, -1: not live */
	uint32_t loads[LEDGER_GATEWAYS]; /* per ring index, the running batch's */
	uint32_t n_live;
	/* Told of every admission decided (NULL: nobody asks): the simulator
	 * reads what the rule did, to classify what the invariants see. */
	void (*observe)(void *user, const struct rs_admit *a, const struct rs_admit_input *in,
			const struct rs_admit_outcome *o, int target_slot);
	void *observe_user;
};

/* The operations over a struct ledger_ctx (the st of every call). */
const struct rs_gw_store_ops *ledger_ops(void);

/* rs_store_gateway_start: registers id (serving or draining) and ends its
 * active rows, its count zeroed, reservations kept.  Returns 0 or -EINVAL. */
int ledger_gateway_start(struct ledger_ctx *c, const char *id, const char *peer, enum rs_gateway_state state,
			 int64_t now_ms);

/* rs_store_gateway_remove: the row and every session row on it.  Returns 0 or -ENOENT. */
int ledger_gateway_remove(struct ledger_ctx *c, const char *id);

/* Whether slot's gateway row is live at the store's clock now. */
bool ledger_gateway_live(const struct ledger_ctx *c, int slot);

/* Slot's load as the rule counts it at now: its attached count and its
 * unexpired reservations. */
uint32_t ledger_load(const struct ledger *l, int slot, int64_t now);

/* Active rows at slot, counted row by row (the invariants compare it with
 * the row's attached count and with the gateway's gauge). */
uint32_t ledger_active_rows(const struct ledger *l, int slot);

/* Frees the cached ring and placer. */
void ledger_ctx_fini(struct ledger_ctx *c);

/* The slot an id names ("gw-3" -> 3, "m-17" -> 17), or -1. */
int ledger_slot(const char *id, const char *prefix, int max);

#endif
