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

struct vopr_options {
	enum vopr_mutant mutant;
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
};

/* A fault kind's name, for applied[] (NULL past the last). */
const char *vopr_fault_name(unsigned kind);

/* Runs seed's simulation to its end or its first broken invariant.
 * Returns 0 (result filled, failed or not) or -ENOMEM. */
int vopr_run(uint64_t seed, const struct vopr_options *opt, struct vopr_result *out);

/* The mutant's name ("cap+1"), or NULL for none; and back.  Returns 0 or -EINVAL. */
const char *vopr_mutant_name(enum vopr_mutant m);
int vopr_mutant_parse(const char *s, enum vopr_mutant *out);

#endif
