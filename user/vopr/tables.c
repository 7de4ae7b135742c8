/* SPDX-License-Identifier: Apache-2.0 */
/* tables.c - the policy model's scenario tables with a row from the real
 * cores: for each configuration small enough for the simulated world, the
 * model's random (what a Service does) and bounded-ring rows, computed as
 * `ringsteerctl sim` computes them (user/sim/), and the bounded ring as the
 * gateway and member cores actually place (scenario.c), each a mean over
 * the same number of trials.  The model's and the cores' trials draw their
 * ids differently (sup-N on gw-G-i there, m-i on gw-i here), so the rows
 * agree in distribution, not trial by trial. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "sim/sim.h"
#include "vopr/vopr.h"

static const struct sim_config configs[] = {
	{ .gateways = 3, .supervisors = 64 }, /* S not a multiple of G: one seat free */
	{ .gateways = 4, .supervisors = 64 }, /* S a multiple of G */
};

static const enum vopr_scenario cores_of[SIM_SCENARIO_COUNT] = {
	[SIM_FILL] = VOPR_SCENARIO_FILL,
	[SIM_RESTART_SUPERVISORS] = VOPR_SCENARIO_RESTART,
	[SIM_ROLLING_RESTART] = VOPR_SCENARIO_ROLLING,
	[SIM_KILL_GATEWAY] = VOPR_SCENARIO_KILL,
};

static const char *const scenario_names[VOPR_SCENARIO_COUNT] = {
	[VOPR_SCENARIO_FILL] = "fill",
	[VOPR_SCENARIO_RESTART] = "restart",
	[VOPR_SCENARIO_ROLLING] = "rolling",
	[VOPR_SCENARIO_KILL] = "kill",
};

const char *vopr_scenario_name(enum vopr_scenario s)
{
	return s > VOPR_SCENARIO_NONE && s < VOPR_SCENARIO_COUNT ? scenario_names[s] : NULL;
}

int vopr_scenario_parse(const char *s, enum vopr_scenario *out)
{
	for (int i = VOPR_SCENARIO_NONE + 1; i < VOPR_SCENARIO_COUNT; i++)
		if (strcmp(s, scenario_names[i]) == 0) {
			*out = (enum vopr_scenario)i;
			return 0;
		}
	return -EINVAL;
}

uint64_t vopr_scenario_seed(uint64_t seed, size_t config, uint32_t trial)
{
	return sim_seed_mix(seed, ((uint64_t)config << 32) | trial);
}

static void add(struct sim_measure *acc, const struct sim_measure *m)
{
	acc->max += m->max;
	acc->mean += m->mean;
	acc->spread += m->spread;
	acc->peak += m->peak;
	acc->moved += m->moved;
	acc->handoffs += m->handoffs;
}

/* The cores' mean over trials of one scenario; a broken invariant or an
 * unmeasured run is an error, reported with its replay. */
static int cores_row(uint64_t seed, size_t ci, enum vopr_scenario sc, uint32_t trials, struct sim_measure *acc)
{
	const struct sim_config *c = &configs[ci];
	struct vopr_options opt = {
		.scenario = sc,
		.scenario_gateways = c->gateways,
		.scenario_members = c->supervisors,
	};

	for (uint32_t t = 0; t < trials; t++) {
		uint64_t s = vopr_scenario_seed(seed, ci, t);
		struct vopr_result r;
		int err = vopr_run(s, &opt, &r);

		if (err)
			return err;
		if (r.failed || !r.scenario.done) {
			fprintf(stderr,
				"ringsteer-vopr: %s G=%u M=%u seed %" PRIu64 ": %s%s%s\n"
				"replay: ringsteer-vopr --seed %" PRIu64 " --scenario %s --gateways %u --members %u\n",
				vopr_scenario_name(sc), c->gateways, c->supervisors, s,
				r.failed ? r.invariant : "never measured", r.failed ? ": " : "", r.failed ? r.detail : "",
				s, vopr_scenario_name(sc), c->gateways, c->supervisors);
			return -EPROTO;
		}
		add(acc, &(struct sim_measure){ .max = r.scenario.max, .mean = r.scenario.mean,
						.spread = r.scenario.spread, .peak = r.scenario.peak,
						.moved = r.scenario.moved, .handoffs = r.scenario.handoffs });
	}
	return 0;
}

static int model_row(uint64_t seed, size_t ci, enum sim_policy p, enum sim_scenario sc, uint32_t trials,
		     struct sim_measure *acc)
{
	for (uint32_t t = 0; t < trials; t++) {
		struct sim_trial trial;
		struct sim_measure m;
		int err;

		sim_trial_make(seed, ci, t, configs[ci].gateways, &trial);
		err = sim_trial_run(&configs[ci], &trial, p, sc, &m);
		if (err)
			return err;
		add(acc, &m);
	}
	return 0;
}

static int table_row(struct sim_table *tab, const struct sim_config *c, const char *who, const struct sim_measure *s,
		     uint32_t trials, size_t ncols)
{
	double n = trials, mean = s->mean / n;
	char cell[9][SIM_CELL_MAX];
	const char *row[9];

	snprintf(cell[0], SIM_CELL_MAX, "G=%u S=%u", c->gateways, c->supervisors);
	snprintf(cell[1], SIM_CELL_MAX, "%s", who);
	snprintf(cell[2], SIM_CELL_MAX, "%.1f", s->max / n);
	snprintf(cell[3], SIM_CELL_MAX, "%.1f", mean);
	snprintf(cell[4], SIM_CELL_MAX, "%.2f", mean > 0 ? s->max / n / mean : 0.0);
	snprintf(cell[5], SIM_CELL_MAX, "%.1f", s->spread / n);
	snprintf(cell[6], SIM_CELL_MAX, "%.1f", s->peak / n);
	snprintf(cell[7], SIM_CELL_MAX, "%.1f", s->moved / n);
	snprintf(cell[8], SIM_CELL_MAX, "%.1f", s->handoffs / n);
	for (size_t k = 0; k < ncols; k++)
		row[k] = cell[k];
	return sim_table_add(tab, row);
}

static int scenario_table(uint64_t seed, enum sim_scenario sc, uint32_t trials, bool markdown, FILE *out)
{
	static const char *const headers[] = { "config", "rows from", "max", "mean", "max/mean", "max-min",
					       "peak", "moved", "handoffs" };
	size_t ncols = sc == SIM_FILL ? 6 : 9;
	struct sim_table *tab = NULL;
	int err;

	err = sim_table_new(headers, ncols, 2, &tab);
	if (err)
		return err;
	for (size_t ci = 0; ci < sizeof(configs) / sizeof(configs[0]); ci++) {
		struct sim_measure random = { 0 }, model = { 0 }, cores = { 0 };

		err = model_row(seed, ci, SIM_RANDOM, sc, trials, &random);
		if (!err)
			err = model_row(seed, ci, SIM_BOUNDED_RING, sc, trials, &model);
		if (!err)
			err = cores_row(seed, ci, cores_of[sc], trials, &cores);
		if (!err)
			err = table_row(tab, &configs[ci], "model: random", &random, trials, ncols);
		if (!err)
			err = table_row(tab, &configs[ci], "model: bounded-ring", &model, trials, ncols);
		if (!err)
			err = table_row(tab, &configs[ci], "cores: bounded-ring", &cores, trials, ncols);
		if (err)
			goto cleanup;
	}
	fprintf(out, markdown ? "#### %d. %s\n\n" : "%d. %s\n\n", (int)sc + 1, sim_scenario_title(sc));
	sim_table_print(tab, out, markdown);
	fputc('\n', out);
cleanup:
	sim_table_free(tab);
	return err;
}

int vopr_tables(uint64_t seed, uint32_t trials, bool markdown, FILE *out)
{
	int err = 0;

	fprintf(out, "seed %" PRIu64 ", %u trials; every figure is a mean over trials.\n\n", seed, trials);
	for (int sc = 0; sc < SIM_SCENARIO_COUNT && !err; sc++)
		err = scenario_table(seed, (enum sim_scenario)sc, trials, markdown, out);
	return err;
}
