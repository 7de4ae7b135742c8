/* SPDX-License-Identifier: Apache-2.0 */
/* sim.h - the placement simulator behind `ringsteerctl sim`: a fleet of
 * gateways and supervisors, placement policies acting on it, the scenarios
 * that stress them, the balls-into-bins check, and the tables they print.
 *
 * The model: a supervisor is attached to exactly one gateway or to none (in
 * flight); a gateway's load is the number of supervisors attached to it.
 * Gateways live in slots that are never reused, so "did supervisor s move"
 * is a comparison of slot numbers.  Connections never move on their own:
 * a supervisor changes gateway only when a scenario makes it arrive again
 * (restart) or its gateway goes away (drain, death).  Everything is
 * single-threaded and all state, random streams included, lives in the
 * structs below. */
#ifndef RS_SIM_H
#define RS_SIM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ringsteer/placer.h"
#include "ringsteer/ring.h"
#include "rng.h"

#define SIM_GATEWAY_ID_MAX 48
#define SIM_MEMBER_ID_MAX 32
#define SIM_NONE UINT32_MAX /* supervisor attached nowhere; gateway off the ring */

/* Limits of one simulated configuration (argument checks use them). */
#define SIM_GATEWAYS_MIN 2 /* the kill and rolling-restart scenarios need a survivor */
#define SIM_GATEWAYS_MAX 1000
#define SIM_SUPERVISORS_MAX 1000000
#define SIM_TRIALS_MAX 10000

/* ---- policies (policy.c) ---- */

enum sim_policy {
	SIM_RANDOM,       /* uniform over active gateways: kube-proxy's iptables/nftables mode */
	SIM_ROUND_ROBIN,  /* next active gateway after the last one picked */
	SIM_LEAST_CONN,   /* fewest supervisors (exact global counts), lowest slot on ties */
	SIM_TWO_CHOICES,  /* fewer supervisors of two distinct random active gateways */
	SIM_RING,         /* consistent-hash ring owner among active gateways, no bound */
	SIM_BOUNDED_RING, /* ringsteer's rule: struct rs_placer, rs_drain_plan */
	SIM_POLICY_COUNT
};

/* Returns the policy's short name, as printed in the tables. */
const char *sim_policy_name(enum sim_policy p);

/* ---- the fleet (fleet.c) ---- */

struct sim_gateway {
	char id[SIM_GATEWAY_ID_MAX];
	uint32_t load;  /* supervisors attached */
	bool live;      /* false once killed or removed */
	bool draining;  /* stopping: takes no one */
};

struct sim_fleet_config {
	enum sim_policy policy;
	uint32_t gateways;      /* initial gateways, ids gw-<generation>-<i> */
	uint32_t supervisors;   /* members, ids sup-<member_base + i>, none attached yet */
	uint64_t generation;    /* generation of the initial gateways */
	uint64_t member_base;
	uint64_t seed;          /* the policy's random stream */
};

struct sim_fleet {
	enum sim_policy policy;
	struct sim_rng rng;
	uint32_t cursor;            /* round robin: slot after the last pick */

	struct sim_gateway *gws;    /* slots, in order of creation */
	uint32_t n_gws, gws_cap;

	char *member_ids;           /* n_sups ids of SIM_MEMBER_ID_MAX bytes */
	uint32_t *at;               /* supervisor -> slot, or SIM_NONE */
	uint32_t *start;            /* `at` when the scenario began */
	uint32_t n_sups;

	/* Ring policies only (NULL otherwise): the ring of every slot that is
	 * live (draining included) and, for the bounded ring, a placer whose
	 * loads mirror the slots'. */
	struct rs_ring *ring;
	struct rs_placer *placer;
	uint32_t *slot_of;          /* ring gateway index -> slot */
	uint32_t *ring_of;          /* slot -> ring gateway index, or SIM_NONE */

	uint32_t *scratch;          /* gws_cap entries for the policies */
	uint32_t peak;              /* highest load seen since the scenario began */
	uint64_t handoffs;          /* reconnections forced by a gateway going away */
};

/* Creates a fleet with cfg->gateways live gateways, room for as many again
 * (a rolling restart's replacements), and no supervisor attached.
 * Returns 0, -EINVAL, -ENOMEM. */
int sim_fleet_new(const struct sim_fleet_config *cfg, struct sim_fleet **out);

/* Frees f; NULL is allowed. */
void sim_fleet_free(struct sim_fleet *f);

/* Returns supervisor s's member id. */
const char *sim_fleet_member(const struct sim_fleet *f, uint32_t s);

/* Returns whether slot takes new supervisors (live, not draining). */
bool sim_fleet_active(const struct sim_fleet *f, uint32_t slot);

/* Records that supervisor s is now attached to slot (its old gateway, if
 * any, loses it).  Touches the slots only: a bounded-ring caller has already
 * told the placer. */
void sim_fleet_move(struct sim_fleet *f, uint32_t s, uint32_t slot);

/* Records that supervisor s left its gateway (if any) and is attached
 * nowhere.  Slots only, like sim_fleet_move(). */
void sim_fleet_detach(struct sim_fleet *f, uint32_t s);

/* Adds live gateway gw-<generation>-<i> in a new slot, rebuilding the ring
 * and placer.  Returns 0 and *slot, -ENOSPC, -ENOMEM, or a ring error. */
int sim_fleet_add_gateway(struct sim_fleet *f, uint64_t generation, uint32_t i, uint32_t *slot);

/* Marks slot draining (it keeps its supervisors).  Returns 0 or -EINVAL. */
int sim_fleet_set_draining(struct sim_fleet *f, uint32_t slot);

/* Removes an empty slot from service and from the ring.  Returns 0,
 * -EINVAL (not live, or still serving), or a ring error. */
int sim_fleet_remove_gateway(struct sim_fleet *f, uint32_t slot);

/* Kills slot: it is no longer live, and its supervisors are attached
 * nowhere (the caller places them again).  Writes their indices into
 * victims (room for n_sups) and their count into *n.  Returns 0 or -EINVAL. */
int sim_fleet_kill(struct sim_fleet *f, uint32_t slot, uint32_t *victims, uint32_t *n);

/* Starts a scenario: remembers where everyone is, resets peak and handoffs. */
void sim_fleet_begin(struct sim_fleet *f);

/* Checks the invariants: every supervisor attached to a live gateway, loads
 * equal to attachments, the placer's loads equal to the slots'.
 * Returns 0 or -EPROTO. */
int sim_fleet_check(const struct sim_fleet *f);

/* What a scenario did, one trial; averaged over trials by the caller. */
struct sim_measure {
	double max;       /* highest load on a live gateway at the end */
	double mean;      /* supervisors per live gateway */
	double spread;    /* max - min over live gateways */
	double peak;      /* highest load seen at any moment of the scenario */
	double moved;     /* supervisors not on their starting gateway at the end */
	double handoffs;  /* forced reconnections (one supervisor may count twice) */
};

/* Measures f against its state at sim_fleet_begin(). */
void sim_fleet_measure(const struct sim_fleet *f, struct sim_measure *m);

/* ---- placing one supervisor (policy.c) ---- */

/* Places supervisor s by f's policy, as a supervisor arriving through the
 * Service: if it is attached, that old session is gone first (the bounded
 * ring passes it as the arrival's stale record).  Returns 0 or a negative
 * errno from the library (-ENOENT when no gateway is active). */
int sim_policy_place(struct sim_fleet *f, uint32_t s);

/* ---- scenarios (scenario.c) ---- */

enum sim_scenario {
	SIM_FILL,                /* S supervisors arrive one by one */
	SIM_RESTART_SUPERVISORS, /* each supervisor in turn leaves and arrives again */
	SIM_ROLLING_RESTART,     /* each gateway in turn: surge a replacement, drain, remove */
	SIM_KILL_GATEWAY,        /* one gateway dies; its supervisors come back */
	SIM_SCENARIO_COUNT
};

/* Returns the scenario's one-line title. */
const char *sim_scenario_title(enum sim_scenario sc);

/* Fills an empty fleet: every supervisor arrives once, in index order. */
int sim_fill(struct sim_fleet *f);

/* What a trial fixes for every policy, so that they all face the same events. */
struct sim_events {
	uint32_t victim;           /* the initial gateway SIM_KILL_GATEWAY kills */
	uint64_t next_generation;  /* names the rolling restart's replacements */
	uint64_t order_seed;       /* the order supervisors restart or reconnect in */
};

/* Runs scenario sc on a filled fleet (SIM_FILL does nothing more), then
 * checks the fleet.  Supervisors restart, and a dead gateway's supervisors
 * reconnect, in an order shuffled by ev->order_seed (a fixed order would
 * flatter round robin, whose cursor would replay the fill).  A drain hands
 * off in supervisor index order.  Returns 0 or a negative errno. */
int sim_scenario_run(struct sim_fleet *f, enum sim_scenario sc, const struct sim_events *ev);

/* ---- balls into bins (bins.c) ---- */

/* Throws n balls into n bins, each into the least loaded of d independent
 * uniform choices (first on ties), and returns the highest bin load.
 * loads has room for n.  n >= 1, d >= 1. */
uint32_t sim_bins_max_load(struct sim_rng *r, uint32_t n, uint32_t d, uint32_t *loads);

/* ---- tables (report.c) ---- */

#define SIM_TABLE_COLS_MAX 10
#define SIM_CELL_MAX 32

struct sim_table;

/* Creates a table with ncols (<= SIM_TABLE_COLS_MAX) headers, the first
 * text_cols of them text (left-aligned), the rest numbers (right-aligned);
 * cells past SIM_CELL_MAX - 1 bytes are cut.  Returns 0, -EINVAL, -ENOMEM. */
int sim_table_new(const char *const *headers, size_t ncols, size_t text_cols, struct sim_table **out);

/* Frees t; NULL is allowed. */
void sim_table_free(struct sim_table *t);

/* Appends a row of ncols cells.  Returns 0 or -ENOMEM. */
int sim_table_add(struct sim_table *t, const char *const *cells);

/* Prints t as aligned text or as a Markdown table. */
void sim_table_print(const struct sim_table *t, FILE *out, bool markdown);

/* ---- the experiment (run.c) ---- */

struct sim_config {
	uint32_t gateways;
	uint32_t supervisors;
};

#define SIM_CONFIGS_MAX 8

/* One trial of a configuration: what every policy faces alike (common
 * random numbers), so that rows differ only by policy. */
struct sim_trial {
	uint64_t seed;
	uint64_t generation;  /* initial gateways gw-<generation>-<i>, replacements +1 */
	uint64_t member_base; /* members sup-<member_base + i> */
	struct sim_events events;
};

/* Derives trial number `trial` of configuration ci (with `gateways`
 * gateways) from the experiment's seed. */
void sim_trial_make(uint64_t seed, size_t ci, uint32_t trial, uint32_t gateways, struct sim_trial *t);

/* Fills a fresh fleet of c under policy p, runs scenario sc on it and
 * measures it.  Returns 0 or a negative errno. */
int sim_trial_run(const struct sim_config *c, const struct sim_trial *t, enum sim_policy p, enum sim_scenario sc,
		  struct sim_measure *m);

struct sim_options {
	uint64_t seed;
	uint32_t trials;
	bool markdown;
	bool bins;        /* also run the balls-into-bins table */
	size_t n_configs;
	struct sim_config configs[SIM_CONFIGS_MAX];
};

/* Runs every scenario under every policy for each configuration, trials
 * times each, and prints the averaged tables (then the balls-into-bins
 * table) on out.  Returns 0 or a negative errno. */
int sim_run(const struct sim_options *o, FILE *out);

#endif
