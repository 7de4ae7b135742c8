/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_sim.c - `ringsteerctl sim`: reads the simulator's options and runs it.
 * The simulator itself lives in user/sim/; this file only turns argv into a
 * struct sim_options, strictly (an unknown or malformed option is exit 2). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/sim.h"
#include "ctl.h"
#include "ctl_args.h"
#include "ctl_sim_json.h"

static const char sim_usage[] =
	"NAME\n"
	"    ringsteerctl sim - compare placement policies in simulation\n"
	"\n"
	"SYNOPSIS\n"
	"    ringsteerctl sim [--seed N] [--trials N] [--gateways G --supervisors S]\n"
	"                     [--markdown | --json] [--no-bins]\n"
	"\n"
	"DESCRIPTION\n"
	"    Compares placement policies (random, round-robin, least-conn, two-choices,\n"
	"    ring, bounded-ring) in four scenarios, each from a fresh fleet of S\n"
	"    supervisors on G gateways: fill, restart every supervisor, surge-first\n"
	"    rolling restart of every gateway, kill one gateway.  Then the\n"
	"    balls-into-bins table.  Every figure is a mean over trials.\n"
	"\n"
	"OPTIONS\n"
	"    --seed N         base seed, 0..4294967295 (default 1)\n"
	"    --trials N       trials per figure, 1..10000 (default 20)\n"
	"    --gateways G     run only G gateways (2..1000) with ...\n"
	"    --supervisors S  ... S supervisors (1..1000000); default: G=4 S=100,\n"
	"                     G=7 S=1000, G=10 S=1000, G=50 S=5000\n"
	"    --markdown       print Markdown tables (as in docs/SIMULATION.md)\n"
	"    --json           print the same tables as one JSON object, figures as\n"
	"                     the text shows them: {\"seed\", \"trials\", \"scenarios\":\n"
	"                     [{\"number\", \"title\", \"rows\": [{\"config\", \"gateways\",\n"
	"                     \"supervisors\", \"policy\", \"max\", \"mean\", \"max_over_mean\",\n"
	"                     \"spread\", \"peak\", \"moved\", \"handoffs\"}]}], \"bins\":\n"
	"                     [{\"n\", \"d1\", \"d2\"}]} (the fill has no peak, moved,\n"
	"                     handoffs; bins is [] with --no-bins)\n"
	"    --no-bins        leave out the balls-into-bins table\n"
	"    --help           this text\n"
	"\n"
	"EXIT STATUS\n"
	"    0 success, 1 failure, 2 bad arguments.\n"
	"\n"
	"EXAMPLES\n"
	"    ringsteerctl sim --gateways 10 --supervisors 1000 --trials 3\n"
	"    ringsteerctl sim --json --no-bins | jq '.scenarios[0].rows[]'\n";

/* Runs the simulator into memory and prints its tables as JSON, so that
 * nothing half-written reaches stdout on failure. */
static int run_json(const struct sim_options *o)
{
	char *text = NULL, *json = NULL;
	size_t text_len = 0, json_len = 0;
	FILE *t = open_memstream(&text, &text_len), *j = NULL;
	int err;

	if (!t)
		return -errno;
	err = sim_run(o, t);
	if (fclose(t) != 0 && !err)
		err = -errno;
	if (err)
		goto cleanup;
	j = open_memstream(&json, &json_len);
	if (!j) {
		err = -errno;
		goto cleanup;
	}
	err = ctl_sim_json(text, j);
	if (fclose(j) != 0 && !err)
		err = -errno;
	if (!err)
		fwrite(json, 1, json_len, stdout);
cleanup:
	free(json);
	free(text);
	return err;
}

/* Takes the value of option argv[*i] (as "--opt N" or "--opt=N"). */
static int option_value(int argc, char **argv, int *i, const char *name, uint32_t *out)
{
	size_t len = strlen(name);
	const char *value;

	if (argv[*i][len] == '=') {
		value = argv[*i] + len + 1;
	} else {
		if (*i + 1 >= argc)
			return ctl_usage_error("sim", "%s needs a value", name);
		value = argv[++*i];
	}
	if (ctl_parse_u32(value, out))
		return ctl_usage_error("sim", "%s: not a number: '%s'", name, value);
	return 0;
}

/* Returns whether arg is option name, alone or as "name=value". */
static bool is_option(const char *arg, const char *name)
{
	size_t len = strlen(name);

	return strncmp(arg, name, len) == 0 && (arg[len] == '\0' || arg[len] == '=');
}

int ctl_sim(int argc, char **argv)
{
	static const struct sim_config defaults[] = { { 4, 100 }, { 7, 1000 }, { 10, 1000 }, { 50, 5000 } };
	struct sim_options o = { .seed = 1, .trials = 20, .bins = true };
	uint32_t seed = 1, gateways = 0, supervisors = 0;
	bool have_gateways = false, have_supervisors = false, json = false;
	int err;

	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];

		if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
			fputs(sim_usage, stdout);
			return 0;
		} else if (strcmp(arg, "--markdown") == 0) {
			o.markdown = true;
		} else if (strcmp(arg, "--json") == 0) {
			json = true;
		} else if (strcmp(arg, "--no-bins") == 0) {
			o.bins = false;
		} else if (is_option(arg, "--seed")) {
			if (option_value(argc, argv, &i, "--seed", &seed))
				return 2;
		} else if (is_option(arg, "--trials")) {
			if (option_value(argc, argv, &i, "--trials", &o.trials))
				return 2;
		} else if (is_option(arg, "--gateways")) {
			if (option_value(argc, argv, &i, "--gateways", &gateways))
				return 2;
			have_gateways = true;
		} else if (is_option(arg, "--supervisors")) {
			if (option_value(argc, argv, &i, "--supervisors", &supervisors))
				return 2;
			have_supervisors = true;
		} else {
			return ctl_usage_error("sim", "unknown argument '%s' (try --help)", arg);
		}
	}
	if (o.trials < 1 || o.trials > SIM_TRIALS_MAX)
		return ctl_usage_error("sim", "--trials must be 1..%d", SIM_TRIALS_MAX);
	if (json && o.markdown)
		return ctl_usage_error("sim", "--json and --markdown are mutually exclusive");
	if (have_gateways != have_supervisors)
		return ctl_usage_error("sim", "--gateways and --supervisors go together");
	if (have_gateways) {
		if (gateways < SIM_GATEWAYS_MIN || gateways > SIM_GATEWAYS_MAX)
			return ctl_usage_error("sim", "--gateways must be %d..%d", SIM_GATEWAYS_MIN,
					       SIM_GATEWAYS_MAX);
		if (supervisors < 1 || supervisors > SIM_SUPERVISORS_MAX)
			return ctl_usage_error("sim", "--supervisors must be 1..%d", SIM_SUPERVISORS_MAX);
		o.configs[0] = (struct sim_config){ gateways, supervisors };
		o.n_configs = 1;
	} else {
		o.n_configs = sizeof(defaults) / sizeof(defaults[0]);
		memcpy(o.configs, defaults, sizeof(defaults));
	}
	o.seed = seed;

	err = json ? run_json(&o) : sim_run(&o, stdout);
	if (!err && (fflush(stdout) != 0 || ferror(stdout)))
		err = -EIO;
	if (err) {
		fprintf(stderr, "ringsteerctl sim: %s\n", strerror(-err));
		return 1;
	}
	return 0;
}
