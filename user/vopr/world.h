/* SPDX-License-Identifier: Apache-2.0 */
/* world.h - the simulated world, shared by the simulator's files: one
 * event queue on one simulated time line, the gateway and member nodes
 * (each its real core and its own clocks), the connections between them,
 * the store and its links, the faults, and what the invariants remember.
 * Every random draw comes from the world's generators, seeded from the run's
 * seed: nothing here reads a real clock or keeps global state.
 *
 * Files, lowest first: events.c (the queue), trace.c, ledger.c (the
 * store's data), store_link.c (calls to it: latency, outages, failover),
 * net.c (connections, segments, partitions, the Service), gateway.c and
 * member.c (the I/O shells around the cores), faults.c, invariants.c,
 * run.c (the world made from a seed, and its loop). */
#ifndef RS_VOPR_WORLD_H
#define RS_VOPR_WORLD_H

#include <stdbool.h>
#include <stdint.h>

#include "ringsteer/gateway_core.h"
#include "ringsteer/member_core.h"
#include "ringsteer/token.h"
#include "sim/rng.h"
#include "vopr/ledger.h"
#include "vopr/vopr.h"

#define W_GATEWAYS LEDGER_GATEWAYS
#define W_MEMBERS LEDGER_MEMBERS
#define W_FAULTS 80 /* a scenario restarts each of up to 64 members */
#define W_PARTITIONS 8
#define W_NEVER INT64_MAX

/* ---- events ---- */

enum ev_type {
	EV_GW_WAKE,      /* a: gateway, b: wake generation */
	EV_MB_WAKE,      /* a: member, b: wake generation */
	EV_DNS,          /* a: conn: a queued Service dial's lookup done */
	EV_SYN,          /* a: conn: the connect reaches its gateway */
	EV_SYNACK,       /* a: conn: the connect's answer reaches the member */
	EV_SEG,          /* a: conn, b: direction: the head segment arrives */
	EV_GW_FEED,      /* a: conn: input held while the link was placed, fed again */
	EV_GW_FLUSHED,   /* a: conn: a close the core asked for is flushed */
	EV_GW_IDLE,      /* a: conn: nothing read for three heartbeats? */
	EV_STORE_COMMIT, /* a: gateway, b: job: the call reaches the store */
	EV_STORE_ANSWER, /* a: gateway, b: job: its answer reaches the gateway */
	EV_STORE_WATCH,  /* a: gateway, b: job: has it run past twice the timeout? */
	EV_GW_EXIT,      /* a: gateway, b: incarnation: the core said exit */
	EV_GW_START,     /* a: gateway, b: the fault that held it + 1 (0: none): it starts again */
	EV_GW_SERVICE,   /* a: gateway, b: 1 in, 0 out: its Service endpoint changes */
	EV_MB_START,     /* a: member: its process starts (again) */
	EV_FAULT,        /* a: fault, b: enum fault_phase */
	EV_SANDBOXES,    /* a: member: its sandbox count changes */
	EV_END,          /* the run's end */
	EV_SCENARIO,     /* a: enum scenario_step (scenario.c) */
};

struct ev {
	int64_t at;   /* simulated ms */
	uint64_t seq; /* ties broken by order of scheduling: deterministic */
	uint32_t type;
	uint32_t a;
	uint64_t b;
};

struct ev_queue {
	struct ev *h;
	size_t n, cap;
	uint64_t seq;
};

/* ---- the network ---- */

enum seg_kind {
	SEG_DATA,
	SEG_FIN,     /* the sender closed: after its data */
	SEG_RST,     /* the connection was reset */
	SEG_SECURED, /* the transport handshake finished (the gateway's side) */
};

struct seg {
	struct seg *next;
	uint8_t kind;
	bool quiet;   /* a HEARTBEAT: not what the quiet points wait for */
	uint16_t len;
	uint8_t data[];
};

enum dir { TO_GW = 0, TO_MB = 1 };

struct pipe {
	struct seg *head, *tail;
	int64_t last_at; /* arrival of the last segment sent: a stream keeps its order */
};

/* One TCP connection between a member and a gateway. */
struct conn {
	uint32_t id;
	uint16_t member;
	uint32_t mlife;            /* the member process's life it belongs to */
	struct rs_mc_link *ml;     /* the member core's link, while m_open */
	bool m_open;
	bool via_service;          /* kube-proxy picks the gateway at connect */
	bool synced;               /* the connect reached a gateway */
	bool blackhole;            /* half-open: nothing gets through, either way */
	int16_t gw;                /* -1 until it reaches one */
	uint32_t ginc;             /* the gateway's incarnation it reached */
	struct rs_gw_link *gl;     /* the gateway core's link, while g_open */
	bool g_open, g_closing;
	int64_t g_last_read;       /* sim ms: the gateway's idle timeout reads it */
	enum rs_gw_session_state g_state; /* as last observed (after each event) */
	bool g_degraded;           /* accepted degraded at some point, or a redial here that kept
				    * the deferred placement of such a link of its member */
	bool redirect_drain;       /* a REDIRECT {drain} went out on it */
	enum rs_mc_via via;        /* why the member dialed it */
	uint64_t hello_epoch;      /* the epoch its HELLO carried (0: none yet) */
	struct pipe p[2];
	uint8_t *in[2];            /* bytes received and not yet taken by the core */
	size_t in_len[2], in_cap[2];
	struct conn *gnext, *gprev; /* the gateway incarnation's open links */
};

struct partition {
	bool on;
	int64_t until;
	int kind;   /* enum part_kind (net.c) */
	int a, b;   /* a gateway, a member, -1: all */
};

/* ---- the store and its links ---- */

struct job {
	struct job *next;
	uint64_t id;
	struct rs_gw_store_req *req;
	bool quiet;        /* the heartbeat: not what the quiet points wait for */
	bool committed;
	int err;           /* the answer */
	int64_t started;   /* sim ms the worker began it */
	uint64_t commit_seq;
};

enum store_mode {
	STORE_UP,
	STORE_REFUSING, /* down: calls fail at once (-EIO: connection refused) */
	STORE_HANGING,  /* down: calls run to the timeout (-ETIMEDOUT), some past twice it */
};

struct store {
	struct ledger cur;         /* the primary's state */
	struct ledger durable;     /* as of the last acknowledged commit */
	uint64_t seq, durable_seq;
	struct ledger unacked[W_GATEWAYS]; /* each worker's committed, unanswered state */
	uint64_t unacked_seq[W_GATEWAYS];  /* 0: none */
	struct ledger_ctx ctx;
	enum store_mode mode;
	bool slow;                 /* calls take past twice the timeout (the stall watch fires) */
	int64_t wall_off;          /* the store's clock: sim + this */
};

/* ---- nodes ---- */

struct clock {
	int64_t mono_off; /* monotonic: sim + this (never stepped) */
	int64_t wall_off; /* wall: sim + this (stepped by faults) */
};

struct gw_node {
	struct world *w;
	uint16_t idx;
	char id[16];
	char peer[32];
	bool exists;      /* part of the fleet (from the start, or joined) */
	bool up;          /* its process runs */
	bool host_down;   /* crashed with its host: no RST for anyone */
	bool in_service;  /* a Service endpoint */
	bool dying;       /* being torn down: its callbacks do nothing */
	uint32_t inc;     /* incarnation: events of an earlier one are stale */
	struct rs_gw_core *core;
	struct rs_gw_core_config cfg;
	struct clock clk;
	int64_t wake_at;
	uint64_t wake_gen;
	struct job *jobs, *jobs_tail; /* the store worker's queue: the head runs */
	uint64_t next_job;
	bool store_settled;  /* a heartbeat answered after the last failure */
	struct conn *links;  /* open links of this incarnation */
	/* the drain, as the invariants follow it */
	bool draining;
	bool stopping;
	int64_t drain_start, drain_budget;
	bool drain_clean;    /* no other fault while it ran, a target throughout */
	uint64_t abandoned_before;
	bool killed;         /* a second SIGTERM: left at once */
	int held_by;         /* the fault keeping it down (-1: none) */
	bool restart_on_exit; /* its fault is over: start again once it exits */
	uint64_t degraded_seen; /* its degraded accepts, as last read */
	uint64_t over_cap_seen; /* its liveness accepts above the cap, as last read */
	uint32_t window_stays;  /* attaches through the Service asking to stay since the last quiet point */
	uint32_t window_fallbacks; /* redials decided as Service fallbacks, placed here, since then */
	uint32_t window_returns;   /* members back by a redial after this gateway restarted, since then */
	uint32_t window_over_cap;  /* liveness accepts above the cap here, since then */
	uint32_t degraded_inc[W_MEMBERS]; /* the incarnation that last had a link of the member accepted degraded (0: none) */
	uint64_t stale_epoch[W_MEMBERS]; /* the active rows here when it started unregistered (0: none) */
};

struct mb_node {
	struct world *w;
	uint16_t idx;
	char id[16];
	char instance[32];
	char token[RS_TOKEN_MAX + 1];
	uint32_t life;
	bool up;
	bool dying;
	struct rs_mc_core *mc;
	struct rs_mc_config cfg;
	struct clock clk;
	int64_t wake_at;
	uint64_t wake_gen;
	uint32_t sandboxes;
	/* what the invariants remember */
	int last_gw;          /* the gateway of its last attach, -1: none */
	uint32_t last_conn;   /* the connection of that attach */
	uint32_t last_inc;    /* that gateway's incarnation then */
	bool cause;           /* a cause to move arose since that attach */
	const char *cause_why;
	int64_t double_since; /* counted at two gateways since (W_NEVER: not) */
	int64_t detached_since; /* not attached since (W_NEVER: attached) */
	bool redial_fallback; /* a redial of it was decided as a Service fallback (D5) since its attach */
	bool redial_lapsed;   /* ... from a lapsed reservation, not a redirect's (D12) */
};

/* ---- faults ---- */

enum fault_kind {
	F_GW_CRASH,       /* a: gateway, b: 1 with its host (silent) */
	F_GW_SIGTERM,     /* a: gateway mask: drained, exit, start again */
	F_GW_KILL_DRAIN,  /* a: gateway: SIGTERM, then a second one mid-drain */
	F_GW_JOIN,        /* a: gateway slot: a new gateway joins */
	F_MB_RESTART,     /* a: member, b: 1 crash (no GOODBYE), 2 with its host */
	F_MB_REFRESH,     /* a: member: its token refreshed now */
	F_MB_BLIP,        /* a: member: its attached connection reset */
	F_HALF_OPEN,      /* a: member: its attached connection goes silent */
	F_STORE_OUTAGE,   /* b: 0 refusing, 1 hanging */
	F_STORE_FAILOVER, /* the primary lost: unacknowledged commits with it */
	F_STORE_SLOW,     /* calls past twice the timeout */
	F_PARTITION,      /* b: enum part_kind, c, d: its parties */
	F_CLOCK_STEP,     /* a: node (gateway, or W_GATEWAYS + member), c: ms */
	F_KIND_COUNT
};

struct fault {
	int64_t at, dur;
	enum fault_kind kind;
	int a, b;
	int64_t c, d;
	bool active;
};

/* ---- a fixed scenario (scenario.c) ---- */

enum scenario_step {
	SCENARIO_BEGIN,   /* the fill is over: where everyone is */
	SCENARIO_MEASURE, /* the scenario is over: measured once everyone is back */
};

struct scenario {
	int64_t begin_at, measure_at;
	bool begun, measured;
	int victim;                  /* the gateway the kill scenario kills */
	int16_t start_gw[W_MEMBERS]; /* each member's gateway at the beginning (-1: none) */
	uint64_t handoffs_before;    /* the drains' REDIRECTs before it */
	uint32_t peak;               /* most attached at one gateway since the beginning */
};

/* ---- the world ---- */

struct wconfig {
	uint32_t gateways;       /* at the start */
	uint32_t slots;          /* gateways ever (joins take the rest) */
	uint32_t members;
	uint32_t heartbeat_ms, ttl_ms, reservation_ms, hello_timeout_ms, handoff_timeout_ms, home_grace_ms;
	uint32_t store_timeout_ms, token_ttl_s, dial_timeout_ms, admit_batch_max;
	struct rs_drain_config drain;
	uint32_t delay_min_ms, delay_max_ms; /* one way */
	uint32_t loss_pct;       /* a segment lost costs a retransmit */
	uint32_t store_lat_min_ms, store_lat_max_ms;
	bool tls;
	int64_t faults_until;    /* faults start before this */
	int64_t end;             /* the run ends here, or at the liveness bound after the last heal */
	uint32_t n_faults;
};

struct world {
	uint64_t seed;
	const struct vopr_options *opt;
	struct vopr_result *res;
	struct wconfig cfg;
	struct sim_rng rng;       /* the network, the Service, latencies */
	struct sim_rng rng_plan;  /* the configuration and the fault plan */
	int64_t now;
	struct ev_queue q;
	struct gw_node gw[W_GATEWAYS];
	struct mb_node mb[W_MEMBERS];
	struct conn **conns;
	uint32_t n_conns, cap_conns;
	struct store store;
	struct rs_secret secret;
	struct fault faults[W_FAULTS];
	uint32_t n_faults;
	struct partition parts[W_PARTITIONS];
	struct scenario scn;      /* with opt->scenario */
	/* what the quiet points wait for */
	uint64_t inflight;        /* segments, connects and lookups in flight, heartbeats aside */
	uint64_t store_inflight;  /* store calls queued or running, heartbeats aside */
	uint32_t faults_active;
	int64_t settled_at;       /* no fault active, and their aftermath over, from here */
	int64_t last_heal;        /* the last fault's end */
	/* the cap at quiet points (invariants.c) */
	uint32_t quiet_load[W_GATEWAYS]; /* loads at the last quiet point */
	uint32_t window_cap;      /* the highest cap (+1 where degraded) since it */
	uint32_t dirty_gw;        /* bits: gateways whose cores ran this event */
	uint64_t dirty_mb;        /* bits: members likewise */
	/* the trace */
	uint64_t hash;
	uint64_t events;
	uint32_t feeding;         /* the connection whose bytes a member core is reading */
	bool window_slack;        /* something degraded since the last quiet point */
	bool failed;
	bool oom;                 /* an allocation failed: the run cannot go on */
	bool muted;               /* the run is over: what its teardown says is not the trace */
	char line[1024];
};

/* ---- events.c ---- */
/* Schedules an event (never in the past); out of memory sets w->oom. */
int ev_push(struct world *w, int64_t at, enum ev_type type, uint32_t a, uint64_t b);
bool ev_pop(struct world *w, struct ev *out);
void ev_fini(struct world *w);

/* ---- trace.c ---- */
/* Hashes an event record; writes a text line when tracing. */
void trace_event(struct world *w, const struct ev *e);
/* A line of text in the trace (hashed too): printf-like. */
void trace(struct world *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool tracing(const struct world *w);
/* Mixes v into the trace hash (what an event did, beside the event itself). */
void trace_mix(struct world *w, uint64_t v);

/* ---- clocks (run.c) ---- */
static inline int64_t clock_mono(const struct world *w, const struct clock *c)
{
	return w->now + c->mono_off;
}

static inline int64_t clock_wall(const struct world *w, const struct clock *c)
{
	return w->now + c->wall_off;
}

/* A uniform draw in [lo, hi]. */
static inline int64_t draw(struct sim_rng *r, int64_t lo, int64_t hi)
{
	return hi <= lo ? lo : lo + (int64_t)sim_rng_below(r, (uint32_t)(hi - lo + 1));
}

/* Whether a percent-chance draw hits. */
static inline bool chance(struct sim_rng *r, uint32_t pct)
{
	return sim_rng_below(r, 100) < pct;
}

/* ---- store_link.c ---- */
void store_init(struct world *w);
void store_fini(struct world *w);
/* The gateway core's store callback: queues req on g's worker. */
int store_submit(struct world *w, struct gw_node *g, struct rs_gw_store_req *req);
void store_on_commit(struct world *w, uint32_t g, uint64_t job);
void store_on_answer(struct world *w, uint32_t g, uint64_t job);
void store_on_watch(struct world *w, uint32_t g, uint64_t job);
/* Whether a call from g reaches the store now. */
bool store_reachable(const struct world *w, int g);
/* The gateway's process is gone: its queued calls answered to no one. */
void store_drop_worker(struct world *w, struct gw_node *g);
/* Direct calls made outside the worker (a start, a removal on exit). */
int store_gateway_start(struct world *w, struct gw_node *g);
void store_gateway_remove(struct world *w, struct gw_node *g);
void store_failover(struct world *w);
int64_t store_wall(const struct world *w);

/* ---- net.c ---- */
enum part_kind {
	PART_GW_MB,    /* gateway a and member b (-1: every member) */
	PART_GW_STORE, /* gateway a and the store */
	PART_COUNT
};
struct conn *conn_new(struct world *w, struct mb_node *m);
struct conn *conn_get(struct world *w, uint32_t id);
/* Queues bytes (a frame), a FIN, a RST or the handshake's end on c toward d. */
void net_send(struct world *w, struct conn *c, enum dir d, enum seg_kind kind, const uint8_t *data, size_t len,
	      bool quiet);
void net_on_seg(struct world *w, struct conn *c, enum dir d);
void net_on_dns(struct world *w, struct conn *c);
void net_on_syn(struct world *w, struct conn *c);
void net_on_synack(struct world *w, struct conn *c);
/* Whether a partition cuts gateway gw from member mb, or from the store. */
bool net_blocked(const struct world *w, int gw, int mb);
bool net_store_blocked(const struct world *w, int gw);
/* One-way delay for a segment now (loss: a retransmit added). */
int64_t net_delay(struct world *w);
void net_fini(struct world *w);

/* ---- gateway.c ---- */
void gw_start(struct world *w, struct gw_node *g);
void gw_crash(struct world *w, struct gw_node *g, bool host);
/* Frees its core (its store calls answered back first), its counters summed. */
void gw_teardown(struct world *w, struct gw_node *g);
void gw_sigterm(struct world *w, struct gw_node *g);
void gw_on_exit(struct world *w, struct gw_node *g, uint32_t inc);
void gw_on_wake(struct world *w, struct gw_node *g, uint64_t gen);
void gw_settle(struct world *w, struct gw_node *g);
/* The link on c: bytes arrived, fed again, closed by the peer, flushed, idle. */
void gw_feed(struct world *w, struct conn *c);
void gw_link_accept(struct world *w, struct gw_node *g, struct conn *c);
void gw_link_secured(struct world *w, struct conn *c);
void gw_link_lost(struct world *w, struct conn *c);
void gw_on_flushed(struct world *w, struct conn *c);
void gw_on_idle(struct world *w, struct conn *c);
/* Answers a store call to g's core (store_link.c). */
void gw_store_done(struct world *w, struct gw_node *g, struct rs_gw_store_req *req, int err);
void gw_store_stalled(struct world *w, struct gw_node *g);
struct rs_gw_time gw_time(const struct world *w, const struct gw_node *g);
/* Walks g's links, recording each one's state (after every event). */
void gw_observe(struct world *w, struct gw_node *g);

/* ---- member.c ---- */
void mb_start(struct world *w, struct mb_node *m);
void mb_restart(struct world *w, struct mb_node *m, int how);
void mb_on_wake(struct world *w, struct mb_node *m, uint64_t gen);
void mb_settle(struct world *w, struct mb_node *m);
void mb_connected(struct world *w, struct conn *c);
void mb_feed(struct world *w, struct conn *c);
void mb_link_failed(struct world *w, struct conn *c, enum rs_mc_fail why, const char *text);
void mb_dns_done(struct world *w, struct conn *c);
void mb_refresh(struct world *w, struct mb_node *m);
void mb_set_sandboxes(struct world *w, struct mb_node *m);
/* The connection the member is attached on, or NULL. */
struct conn *mb_attached_conn(struct world *w, struct mb_node *m);
void mb_cause(struct world *w, struct mb_node *m, const char *why);

/* ---- faults.c ---- */
void faults_plan(struct world *w);
enum fault_phase {
	FAULT_START,
	FAULT_END,
	FAULT_SECOND_SIGTERM, /* F_GW_KILL_DRAIN's, mid-drain */
	FAULT_RESTARTED,      /* a gateway it held down started again */
};
void fault_on(struct world *w, uint32_t i, int phase);
/* Whether fault kind k (with a, -1: any) is active now. */
bool fault_active(const struct world *w, enum fault_kind k, int a);
const char *fault_name(enum fault_kind k);

/* ---- scenario.c ---- */
bool scenario_on(const struct world *w);
/* The calm world of a scenario, instead of the seed's configuration. */
void scenario_configure(struct world *w);
/* When member m's process first starts. */
int64_t scenario_member_start(const struct world *w, uint32_t m);
/* The scenario's faults and its begin and measure events, instead of the seed's faults. */
void scenario_plan(struct world *w);
void scenario_on_event(struct world *w, uint64_t what);
/* After every event: the peak load. */
void scenario_observe(struct world *w);

/* Whether a gateway link in state s is attached (counted in the gauge). */
static inline bool gw_state_attached(enum rs_gw_session_state s)
{
	return s >= RS_GW_DEGRADED && s <= RS_GW_DEFER_MOVED;
}

/* ---- invariants.c ---- */
/* Checks every invariant after an event; false (and the result filled) at the first broken one. */
bool invariants_check(struct world *w);
/* At the end of the run: liveness, and the last quiet point. */
bool invariants_final(struct world *w);
/* Breaks the run: the first broken invariant and what it saw. */
void invariant_failed(struct world *w, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A drain's start and end, for drain_within_budget. */
void inv_drain_started(struct world *w, struct gw_node *g, bool stopping);
void inv_drain_ended(struct world *w, struct gw_node *g, bool exited);
void inv_fault_started(struct world *w, const struct fault *f);
void inv_member_event(struct world *w, struct mb_node *m, const struct rs_mc_event *e);
/* An admission the store decided (ledger.h, observe). */
void inv_decision(void *world, const struct rs_admit *a, const struct rs_admit_input *in,
		  const struct rs_admit_outcome *o, int target_slot);
/* How long after the last heal every member must be attached. */
int64_t inv_liveness_bound_ms(const struct world *w);

/* Marks a node whose core ran (its wake re-armed, its links observed). */
static inline void dirty_gw(struct world *w, const struct gw_node *g)
{
	w->dirty_gw |= 1u << g->idx;
}

static inline void dirty_mb(struct world *w, const struct mb_node *m)
{
	w->dirty_mb |= 1ull << m->idx;
}

#endif
