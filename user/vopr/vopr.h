/* SPDX-License-Identifier: Apache-2.0 */
/* vopr.h - ringsteer-vopr, the deterministic simulator of the real cores:
 * G gateway cores (include/ringsteer/gateway_core.h) and M member cores
 * (member_core.h) in one process, on a simulated clock per node, a
 * simulated network and an in-memory store that keeps the documented store
 * contract (store.h) and decides with the backends' own admission function
 * (rs_admit_decide).  Faults are chosen by the seed; the invariants
 * (invariants.c) are checked after every event; the same seed gives the
 * same event trace, byte for byte, so a failing seed is its own replay.
 *
 * This header is what main.c and the tests see: one run is vopr_run(). */
#ifndef RS_VOPR_H
#define RS_VOPR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A deliberately broken rule, for the counter-check (tests/cli/vopr_test.sh):
 * the simulator must catch it.  Lives in the simulator's store, never in a
 * core: it wraps the admission function the store calls. */
enum vopr_mutant {
	VOPR_MUTANT_NONE = 0,
	VOPR_MUTANT_CAP_PLUS_ONE, /* a Service arrival is kept where it lands while
				   * that gateway is below cap + 1 (an off-by-one) */
};

/* A fixed scenario instead of the seed's faults (scenario.c): the policy
 * model's scenarios (user/sim/), run by the real cores on a calm world. */
enum vopr_scenario {
	VOPR_SCENARIO_NONE = 0,
	VOPR_SCENARIO_FILL,     /* the members start one by one */
	VOPR_SCENARIO_RESTART,  /* then each member in turn stops (GOODBYE) and starts again */
	VOPR_SCENARIO_ROLLING,  /* then each gateway in turn: a replacement joins, it is SIGTERMed */
	VOPR_SCENARIO_KILL,     /* then one gateway's process dies */
	VOPR_SCENARIO_COUNT
};

/* What a scenario left, measured at its end (after the members settled),
 * as the policy model measures it (struct sim_measure). */
struct vopr_scenario_measure {
	bool done;       /* measured: every member attached at a serving gateway */
	double max;      /* most attached at a serving gateway */
	double mean;     /* members per serving gateway */
	double spread;   /* max - min over the serving gateways */
	double peak;     /* most attached at any gateway at any moment since the scenario began */
	double moved;    /* members not at their gateway of the scenario's start */
	double handoffs; /* members sent off a draining gateway (its REDIRECTs) or a dead one */
};

struct vopr_options {
	enum vopr_mutant mutant;
	enum vopr_scenario scenario; /* NONE: the seed chooses the world and its faults */
	uint32_t scenario_gateways, scenario_members; /* the scenario's fleet */
	FILE *trace;        /* every event as a text line, or NULL (the hash is kept anyway) */
	bool verbose_trace; /* the cores' own log lines in the trace too */
	uint64_t max_events; /* a run stops (failed) beyond this many events; 0: default */
};

struct vopr_result {
	uint64_t seed;
	bool failed;
	char invariant[48];    /* the first broken invariant's name */
	char detail[512];      /* what it saw */
	const char *known;     /* the failure is a defect already known (docs/SIMULATION.md): its tag */
	int64_t failed_at_ms;  /* simulated time of the failure */
	uint64_t events;       /* events run */
	int64_t sim_ms;        /* simulated time covered */
	uint64_t trace_hash;   /* FNV-1a 64 over every event's record */
	uint32_t gateways, members, faults;
	uint64_t quiet_points; /* quiet points where the quiet-point invariants were checked */
	uint64_t moves, attaches, degraded, handoffs, deferred; /* what happened, for the report */
	uint32_t applied[16];  /* faults applied, by kind (vopr_fault_name) */
	struct vopr_core_totals {
		uint64_t accepts, redirects, over_cap, claims, claims_superseded, handoffs_timed_out,
			abandoned, rejects, superseded_closed, store_cancelled;
	} cores;               /* the gateway cores' counters, summed over every incarnation */
	struct vopr_scenario_measure scenario; /* with opt->scenario */
};

/* The largest fleet a scenario can have: a rolling restart needs a slot
 * for each replacement. */
#define VOPR_SCENARIO_GATEWAYS_MAX 4
#define VOPR_SCENARIO_MEMBERS_MAX 64

/* A fault kind's name, for applied[] (NULL past the last). */
const char *vopr_fault_name(unsigned kind);

/* Runs seed's simulation to its end or its first broken invariant.
 * Returns 0 (result filled, failed or not) or -ENOMEM. */
int vopr_run(uint64_t seed, const struct vopr_options *opt, struct vopr_result *out);

/* The mutant's name ("cap+1"), or NULL for none; and back.  Returns 0 or -EINVAL. */
const char *vopr_mutant_name(enum vopr_mutant m);
int vopr_mutant_parse(const char *s, enum vopr_mutant *out);

/* The scenario's name ("fill", "restart", "rolling", "kill"), or NULL; and back.  Returns 0 or -EINVAL. */
const char *vopr_scenario_name(enum vopr_scenario s);
int vopr_scenario_parse(const char *s, enum vopr_scenario *out);

/* The seed of a scenario table's trial (tables.c): `--seed` of its replay. */
uint64_t vopr_scenario_seed(uint64_t seed, size_t config, uint32_t trial);

/* Prints the policy model's scenario tables with the real cores' row
 * beside the model's, each a mean over trials (tables.c).  Returns 0, or a
 * negative errno (-EPROTO: a core run broke an invariant or never settled,
 * said on stderr with its replay). */
int vopr_tables(uint64_t seed, uint32_t trials, bool markdown, FILE *out);

#endif
