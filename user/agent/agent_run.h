/* SPDX-License-Identifier: Apache-2.0 */
/* agent_run.h - the running ringsteer-agent: its configuration, the kernel
 * side it holds, the store, the event loop and what /metrics exports.  One
 * struct agent per process, owned by main(); the other files (sync.c,
 * metrics.c, register.c) work on it. */
#ifndef RS_AGENT_RUN_H
#define RS_AGENT_RUN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent.h"
#include "agent_load.h"
#include "agent_member.h"
#include "precompute.h"
#include "reg_limit.h"
#include "registration/agent_reg.h"
#include "ringsteer/store.h"
#include "store/store_worker.h"

#define AGENT_SERVICES_MAX RS_SERVICES_MAX

struct agent_config {
	const char *services[AGENT_SERVICES_MAX];
	size_t n_services;
	const char *store_url;     /* NULL: no store (every local gateway weighs the same, pins untouched) */
	const char *metrics;       /* ADDR:PORT or NULL */
	const char *socket_path;   /* registration socket */
	const char *member_socket; /* supervisors' registration socket; NULL: none */
	const char *cgroup;        /* where connect-time steering attaches; NULL: the cgroup2 root */
	bool no_connect;           /* no connect-time steering */
	bool no_below;             /* connect4/6 on cgroup alone, not on its children too */
	uid_t allow_uids[RS_AGENT_REG_UIDS_MAX];
	size_t n_allow_uids;
	const char *pin_root;      /* NULL: AGENT_PIN_ROOT */
	bool replace;
	uint32_t sync_ms;          /* store poll interval (without a watch) */
	uint32_t ttl_ms;           /* the gateways' row TTL (must match theirs) */
	uint32_t forget_ms;        /* a known supervisor not seen for this long is forgotten */
	uint32_t steer_wait_ms;    /* a registration waits this long for the store's target */
	uint32_t store_timeout_ms; /* the store's busy timeout; 0: its default */
	uint32_t member_uid_max;   /* registrations one uid may hold; 0: REG_LIMIT_UID_DEFAULT */
	uint32_t member_burst;     /* registrations one key may make at once; 0: REG_LIMIT_BURST */
	unsigned probe_missing;    /* tests: bits 1 << enum agent_feature to report absent */
};

struct agent_counters {
	uint64_t syncs_ok, syncs_failed;  /* sync passes (store read + map writes) that worked / failed */
	uint64_t table_swaps;
	uint64_t pin_writes, pin_deletes;
	uint64_t slots_released;
	uint64_t register_failures;       /* checked sockets the maps refused */
	uint64_t notifications;           /* store change notifications received */
	uint64_t watch_arms;              /* times the store watch was (re)armed */
	uint64_t members_gone;            /* registrations ended (the supervisor closed its link) */
	uint64_t client_writes, target_writes; /* rs_clients / rs_targets updates */
	uint64_t steer_failures;          /* rs_store_steer calls that failed */
	uint64_t syncs_skipped;           /* ticks while the previous read was still in flight */
	uint64_t member_steer_late;       /* registrations answered before the store (it did not
					   * answer within cfg.steer_wait_ms): steered once it does */
	/* pending reservations the steers wrote, taken back (reservations.c) */
	uint64_t reservations_replaced;   /* by a newer registration from the same key */
	uint64_t reservations_swept;      /* unclaimed when their lifetime ended */
	uint64_t reservations_claimed;    /* nothing to take back: the member arrived, or moved on */
	uint64_t reservations_failed;     /* the store refused the withdrawal (it ends by itself) */
	uint64_t clients_full;            /* rs_clients entries refused: the map was full */
	uint64_t service_resolve_failures; /* --service NAME:PORT lookups that failed (what was in force kept) */
	uint64_t service_updates;         /* a name's addresses changed and the service maps followed */
};

/* What the last sync saw, for the table rebuilt at a registration. */
struct agent_snapshot {
	bool valid;                       /* a store listing succeeded */
	struct rs_gateway_row *gateways;  /* live ones, sorted by id */
	size_t n_gateways;
};

struct event_base;
struct event;
struct agent_service_names;
struct evhttp;

struct agent {
	struct agent_config cfg;
	struct agent_kernel k;
	struct rs_store *store;            /* until the worker takes it; NULL after */
	struct rs_store_worker *worker;    /* every store call runs on it; NULL: no store */
	bool sync_reading;                 /* a sync read is in flight (at most one) */
	struct rs_store_worker *watch_worker; /* the watch's own handle (PostgreSQL); NULL: none */
	bool watch_arming, watch_consuming;   /* a watch job in flight */
	bool stopping;                     /* answers arriving now only free what they hold */
	struct event_base *base;
	struct rs_agent_reg_server *reg;
	struct rs_http *http;
	struct event *sync_ev, *sigterm_ev, *sigint_ev;
	struct event *watch_ev;    /* readable store fd while watching, else NULL */
	struct event *debounce_ev; /* one sync shortly after notifications */
	uint32_t tick_ms;          /* the sync tick in force */
	struct agent_counters counters;
	struct agent_snapshot snap;
	uint32_t pins_live, pins_precomputed;  /* last sync's pins by origin */
	struct agent_known_set known;          /* supervisors seen, for precomputed pins */
	struct agent_ring_cache ring_cache;    /* the live ring, while the gateway ids stay */
	/* connect-time steering (agent_member.h) */
	struct agent_member_scope scope;
	int member_lfd;                        /* -1: no member socket */
	struct event *member_accept_ev, *member_resume_ev;
	struct agent_member *members;          /* connections, registered or not */
	size_t n_members;                      /* registered */
	unsigned n_pending;                    /* connected, not registered yet */
	struct agent_target targets[RS_TARGETS_MAX];
	uint32_t n_targets_used;
	int64_t targets_adopted_until_ms;      /* adopted slots are not released before this (rs_mono_ms) */
	uint64_t member_results[RS_AGENT_REG_REASON_COUNT];
	struct reg_limits limits;              /* per key and per uid (reg_limit.h) */
	struct event *sweep_ev;                /* reservations past their end (reservations.c) */
	struct agent_service_names *service_names; /* --service NAME:PORT lookups (service_names.c) */
};


/* The live gateway id's row in the snapshot, or NULL. */
const struct rs_gateway_row *agent_snapshot_gateway(const struct agent_snapshot *s, const char *id);

/* What one sync read from the store. */
struct agent_listing {
	int64_t now_ms;                   /* the store's clock when read */
	struct rs_gateway_row *gws;       /* live gateways, sorted by id */
	size_t n_gws;
	struct rs_session_row *sessions;  /* every session row, sorted by gateway then member */
	size_t n_sessions;
};

/* ---- sync.c --------------------------------------------------------------- */

/* One pass's map writes, on the loop, from l (NULL: no store): frees slots
 * whose gateway is gone, rewrites pins (sessions on local gateways,
 * precomputed ones for known supervisors with no session), the peer
 * endpoints, the members' entries, and the bucket table (only when it
 * changed).  Takes l->gws into the snapshot (l->gws NULL after).  Returns 0
 * or -errno. */
int agent_sync_apply(struct agent *a, struct agent_listing *l);

/* ---- sync_read.c ------------------------------------------------------------ */

/* Starts a pass: without a store, applies it now; with one, submits the
 * store read to the worker (never on the loop) unless a read is still in
 * flight (then the tick is skipped and counted: a stuck store holds one
 * read, never a queue of them); its answer applies the pass on the loop.
 * A failed read changes nothing: the kernel steers on from the maps and
 * entries not refreshed expire.  Failures are counted and logged here.
 * Returns 0, -EBUSY (a read in flight), -errno. */
int agent_sync(struct agent *a);

/* Counts and logs a pass's result (syncs_total). */
void agent_sync_report(struct agent *a, int err);

/* ---- service_names.c -------------------------------------------------- */

/* Resolves every --service (NAME:PORT by getaddrinfo, before the loop
 * starts) and writes rs_services and rs_conn_svcs; a name that does not
 * resolve is logged and counted and nothing is removed from the maps until
 * it does.  Returns 0 or -errno (the maps refused the set). */
int agent_service_names_start(struct agent *a);

/* At each sync tick: looks every name up again off the loop (at most one
 * lookup per name in flight); an answer that differs rewrites the maps,
 * a failure keeps what is in force. */
void agent_service_names_refresh(struct agent *a);

/* Stops the lookups (none of their answers is applied) and frees them. */
void agent_service_names_free(struct agent *a);

/* ---- watch.c -------------------------------------------------------------- */

/* Starts following the store's change notifications if it offers them and
 * the watch is not up: connects on the watch worker, and once armed,
 * notifications trigger a sync (debounced) and the poll slows to TTL/4; a
 * pass follows the arm.  Returns 0 (arming, or nothing to arm) or -errno
 * (the tick stays at --sync-interval; retried at the next tick). */
int agent_watch_arm(struct agent *a);

/* Stops watching (the store connection itself stays). */
void agent_watch_close(struct agent *a);

/* Rebuilds the bucket table from the last snapshot and the slots as they
 * are now (after a registration).  Returns 0 or -errno. */
int agent_sync_table(struct agent *a);

/* ---- register.c ------------------------------------------------------------ */

/* rs_agent_reg_cb for the registration server: ctx is the struct agent. */
int agent_on_register(void *ctx, const char *gateway_id, enum rs_agent_role role, int fd,
		      const struct sockaddr_storage *local, uint32_t *slot_out);

/* ---- reservations.c ------------------------------------------------------- */

/* A steer's answer for key: its reservation, if it wrote one, becomes the
 * key's; the key's previous one (another member) is withdrawn. */
void agent_reservation_noted(struct agent *a, const struct rs_client_key *key, const struct rs_store_steer *out,
			     const char *member_id);

/* The sweep of reservations past their end, every AGENT_SWEEP_MS.  Returns
 * 0 or -ENOMEM. */
int agent_reservations_start(struct agent *a);
void agent_reservations_stop(struct agent *a);

/* ---- metrics.c ------------------------------------------------------------- */

/* Serves GET /metrics (and /healthz) on cfg.metrics.  Returns 0 or -errno. */
int agent_metrics_start(struct agent *a);

#endif
