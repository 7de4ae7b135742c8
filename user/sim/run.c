/* SPDX-License-Identifier: Apache-2.0 */
/* run.c - the experiment: for each configuration and trial, every policy
 * fills a fresh fleet and goes through every scenario; the figures are means
 * over trials.  Within one trial all policies see the same member ids,
 * gateway ids and victim (common random numbers), so they differ only by
 * policy; across trials the ids change, which moves the ring points too.
 * A policy's own random stream depends on the trial and the policy only, so
 * its fill is the same fresh state at the start of every scenario. */
#include <errno.h>
#include <stdlib.h>

#include "sim.h"

typedef struct sim_measure sim_grid[SIM_SCENARIO_COUNT][SIM_POLICY_COUNT];

static void accumulate(struct sim_measure *acc, const struct sim_measure *m)
{
	acc->max += m->max;
	acc->mean += m->mean;
	acc->spread += m->spread;
	acc->peak += m->peak;
	acc->moved += m->moved;
	acc->handoffs += m->handoffs;
}

void sim_trial_make(uint64_t seed, size_t ci, uint32_t trial, uint32_t gateways, struct sim_trial *t)
{
	struct sim_rng r;

	*t = (struct sim_trial){ .seed = sim_seed_mix(seed, ((uint64_t)ci << 32) | trial) };
	sim_rng_seed(&r, t->seed);
	t->generation = 2 * (uint64_t)sim_rng_below(&r, 500000);
	t->member_base = sim_rng_below(&r, 1000000000);
	t->events.victim = sim_rng_below(&r, gateways);
	t->events.next_generation = t->generation + 1;
	t->events.order_seed = sim_rng_next(&r);
}

int sim_trial_run(const struct sim_config *c, const struct sim_trial *t, enum sim_policy p, enum sim_scenario sc,
		  struct sim_measure *m)
{
	struct sim_fleet_config cfg = {
		.policy = p,
		.gateways = c->gateways,
		.supervisors = c->supervisors,
		.generation = t->generation,
		.member_base = t->member_base,
		.seed = sim_seed_mix(t->seed, 1 + (uint64_t)p),
	};
	struct sim_fleet *f = NULL;
	int err;

	err = sim_fleet_new(&cfg, &f);
	if (err)
		return err;
	err = sim_fill(f);
	if (err)
		goto cleanup;
	sim_fleet_begin(f);
	err = sim_scenario_run(f, sc, &t->events);
	if (err)
		goto cleanup;
	sim_fleet_measure(f, m);
cleanup:
	sim_fleet_free(f);
	return err;
}

static int run_config(const struct sim_options *o, size_t ci, sim_grid grid)
{
	const struct sim_config *c = &o->configs[ci];

	for (uint32_t trial = 0; trial < o->trials; trial++) {
		struct sim_trial t;

		sim_trial_make(o->seed, ci, trial, c->gateways, &t);
		for (int p = 0; p < SIM_POLICY_COUNT; p++) {
			for (int sc = 0; sc < SIM_SCENARIO_COUNT; sc++) {
				struct sim_measure m;
				int err = sim_trial_run(c, &t, (enum sim_policy)p, (enum sim_scenario)sc, &m);

				if (err)
					return err;
				accumulate(&grid[sc][p], &m);
			}
		}
	}
	return 0;
}

/* One table per scenario: a row per configuration and policy. */
static int print_scenario(const struct sim_options *o, sim_grid *grids, enum sim_scenario sc, FILE *out)
{
	static const char *const headers[] = { "config", "policy", "max", "mean", "max/mean", "max-min",
					       "peak", "moved", "handoffs" };
	size_t ncols = sc == SIM_FILL ? 6 : 9;
	struct sim_table *t = NULL;
	int err;

	err = sim_table_new(headers, ncols, 2, &t);
	if (err)
		return err;
	for (size_t ci = 0; ci < o->n_configs; ci++) {
		for (int p = 0; p < SIM_POLICY_COUNT; p++) {
			const struct sim_measure *s = &grids[ci][sc][p];
			double n = o->trials, mean = s->mean / n;
			char cell[9][SIM_CELL_MAX];
			const char *row[9];

			snprintf(cell[0], SIM_CELL_MAX, "G=%u S=%u", o->configs[ci].gateways,
				 o->configs[ci].supervisors);
			snprintf(cell[1], SIM_CELL_MAX, "%s", sim_policy_name((enum sim_policy)p));
			snprintf(cell[2], SIM_CELL_MAX, "%.1f", s->max / n);
			snprintf(cell[3], SIM_CELL_MAX, "%.1f", mean);
			snprintf(cell[4], SIM_CELL_MAX, "%.2f", mean > 0 ? s->max / n / mean : 0.0);
			snprintf(cell[5], SIM_CELL_MAX, "%.1f", s->spread / n);
			snprintf(cell[6], SIM_CELL_MAX, "%.1f", s->peak / n);
			snprintf(cell[7], SIM_CELL_MAX, "%.1f", s->moved / n);
			snprintf(cell[8], SIM_CELL_MAX, "%.1f", s->handoffs / n);
			for (size_t k = 0; k < ncols; k++)
				row[k] = cell[k];
			err = sim_table_add(t, row);
			if (err)
				goto cleanup;
		}
	}
	if (o->markdown)
		fprintf(out, "### %d. %s\n\n", (int)sc + 1, sim_scenario_title(sc));
	else
		fprintf(out, "%d. %s\n\n", (int)sc + 1, sim_scenario_title(sc));
	sim_table_print(t, out, o->markdown);
	fputc('\n', out);
cleanup:
	sim_table_free(t);
	return err;
}

static int print_bins(const struct sim_options *o, FILE *out)
{
	static const char *const headers[] = { "n balls = n bins", "d=1 (random)", "d=2 (two choices)" };
	static const struct {
		uint32_t n;
		const char *label;
	} sizes[] = { { 1000, "10^3" }, { 10000, "10^4" }, { 1000000, "10^6" } };
	struct sim_table *t = NULL;
	uint32_t *loads = NULL;
	int err;

	err = sim_table_new(headers, 3, 1, &t);
	if (err)
		return err;
	err = -ENOMEM;
	loads = malloc(sizes[2].n * sizeof(*loads));
	if (!loads)
		goto cleanup;
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		char cell[3][SIM_CELL_MAX];
		const char *row[3] = { cell[0], cell[1], cell[2] };

		snprintf(cell[0], SIM_CELL_MAX, "%s", sizes[k].label);
		for (uint32_t d = 1; d <= 2; d++) {
			double sum = 0;

			for (uint32_t trial = 0; trial < o->trials; trial++) {
				struct sim_rng r;

				sim_rng_seed(&r, sim_seed_mix(o->seed, ((uint64_t)0xb1 << 40) | ((uint64_t)k << 36) |
								  ((uint64_t)d << 32) | trial));
				sum += sim_bins_max_load(&r, sizes[k].n, d, loads);
			}
			snprintf(cell[d], SIM_CELL_MAX, "%.2f", sum / o->trials);
		}
		err = sim_table_add(t, row);
		if (err)
			goto cleanup;
	}
	if (o->markdown)
		fputs("### Balls into bins: mean maximum load\n\n", out);
	else
		fputs("Balls into bins: mean maximum load\n\n", out);
	sim_table_print(t, out, o->markdown);
	err = 0;
cleanup:
	free(loads);
	sim_table_free(t);
	return err;
}

int sim_run(const struct sim_options *o, FILE *out)
{
	sim_grid *grids;
	int err = -EINVAL;

	if (o->trials < 1 || o->trials > SIM_TRIALS_MAX || o->n_configs < 1 || o->n_configs > SIM_CONFIGS_MAX)
		return -EINVAL;
	grids = calloc(o->n_configs, sizeof(*grids));
	if (!grids)
		return -ENOMEM;
	for (size_t ci = 0; ci < o->n_configs; ci++) {
		err = run_config(o, ci, grids[ci]);
		if (err)
			goto cleanup;
	}
	fprintf(out, "seed %llu, %u trials; every figure is a mean over trials.\n\n",
		(unsigned long long)o->seed, o->trials);
	for (int sc = 0; sc < SIM_SCENARIO_COUNT; sc++) {
		err = print_scenario(o, grids, (enum sim_scenario)sc, out);
		if (err)
			goto cleanup;
	}
	if (o->bins)
		err = print_bins(o, out);
cleanup:
	free(grids);
	return err;
}
