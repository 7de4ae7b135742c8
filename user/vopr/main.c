/* SPDX-License-Identifier: Apache-2.0 */
/* main.c - ringsteer-vopr: runs seeds of the deterministic simulator
 * (vopr.h) and reports.  One seed (--seed) is a replay: the same trace,
 * byte for byte, and on failure the trace is printed with the first
 * broken invariant.  A range (--seeds) or a time budget (--seconds, seeds
 * drawn from the clock and printed) stops at the first failure, writes its
 * trace to a file, prints its tail and the command that replays it, and
 * reports simulated events per second and seeds per minute. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sim/rng.h"
#include "util/program_version.h"
#include "vopr/vopr.h"

#define TAIL_LINES 60

static const char usage[] =
	"usage: ringsteer-vopr (--seed S | --seeds A-B | --seconds N) [options]\n"
	"\n"
	"  --seed S          run seed S; on failure print its trace and the broken invariant\n"
	"  --seeds A-B       run seeds A to B; stop at the first failure\n"
	"  --seconds N       run random seeds (the first printed) for N seconds\n"
	"  --trace FILE      with --seed: write the trace to FILE (- for stdout), pass or fail\n"
	"  --verbose         the cores' own log lines in the trace too\n"
	"  --trace-dir DIR   where a failing seed's trace is written (default /tmp)\n"
	"  --mutant NAME     decide with a deliberately broken rule: cap+1 (the counter-check)\n"
	"  --expect-failure  succeed only if some seed fails (with --mutant)\n"
	"  --quiet           no line per seed\n"
	"  --keep-going      run on past failures; tally them by invariant at the end\n"
	"  --stats           what the seeds exercised: faults applied, the cores' counters\n"
	"  --version         print the version and the commit, and exit\n"
	"\n"
	"  --scenario NAME   with --seed: a calm world running the policy model's scenario\n"
	"                    fill, restart, rolling or kill instead of the seed's faults\n"
	"  --gateways G      its gateways (2-4, default 4)\n"
	"  --members M       its members (1-64, default 64)\n"
	"  --tables          the model's scenario tables with the real cores' row (docs/SIMULATION.md)\n"
	"  --trials N        trials per row of --tables (default 20), seeds derived from --seed (default 1)\n"
	"  --markdown        --tables as Markdown\n"
	"\n"
	"exit: 0 all seeds passed (with --expect-failure: one failed), 1 otherwise, 2 usage\n";

struct cli {
	enum { ONE, RANGE, TIMED, TABLES } mode;
	uint32_t trials;
	bool markdown;
	uint64_t first, last;
	double seconds;
	const char *trace;
	const char *trace_dir;
	bool verbose, expect_failure, quiet, keep_going, stats;
	struct vopr_options opt;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 0);
	return errno || end == s || *end ? -EINVAL : 0;
}

static int parse(int argc, char **argv, struct cli *c)
{
	enum { O_SEED = 256, O_SEEDS, O_SECONDS, O_TRACE, O_VERBOSE, O_TRACE_DIR, O_MUTANT, O_EXPECT, O_QUIET, O_KEEP, O_STATS,
	       O_SCENARIO, O_GATEWAYS, O_MEMBERS, O_TABLES, O_TRIALS, O_MARKDOWN };
	static const struct option opts[] = {
		{ "seed", required_argument, NULL, O_SEED },       { "seeds", required_argument, NULL, O_SEEDS },
		{ "seconds", required_argument, NULL, O_SECONDS }, { "trace", required_argument, NULL, O_TRACE },
		{ "verbose", no_argument, NULL, O_VERBOSE },       { "trace-dir", required_argument, NULL, O_TRACE_DIR },
		{ "mutant", required_argument, NULL, O_MUTANT },   { "expect-failure", no_argument, NULL, O_EXPECT },
		{ "quiet", no_argument, NULL, O_QUIET },           { "keep-going", no_argument, NULL, O_KEEP },
		{ "stats", no_argument, NULL, O_STATS },           { "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "scenario", required_argument, NULL, O_SCENARIO }, { "gateways", required_argument, NULL, O_GATEWAYS },
		{ "members", required_argument, NULL, O_MEMBERS },   { "tables", no_argument, NULL, O_TABLES },
		{ "trials", required_argument, NULL, O_TRIALS },     { "markdown", no_argument, NULL, O_MARKDOWN },
		{ 0 },
	};
	bool mode_set = false, seed_set = false;
	uint64_t n;
	char *dash;
	int o;

	*c = (struct cli){ .trace_dir = "/tmp", .trials = 20 };
	c->opt.scenario_gateways = 4;
	c->opt.scenario_members = VOPR_SCENARIO_MEMBERS_MAX;
	opterr = 0;
	while ((o = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (o) {
		case O_SEED:
			if (seed_set || parse_u64(optarg, &c->first))
				return -EINVAL;
			seed_set = true;
			break;
		case O_SEEDS:
			dash = strchr(optarg, '-');
			if (mode_set || !dash)
				return -EINVAL;
			*dash = '\0';
			if (parse_u64(optarg, &c->first) || parse_u64(dash + 1, &c->last) || c->last < c->first)
				return -EINVAL;
			c->mode = RANGE;
			mode_set = true;
			break;
		case O_SECONDS:
			c->seconds = strtod(optarg, &dash);
			if (mode_set || *dash || c->seconds <= 0)
				return -EINVAL;
			c->mode = TIMED;
			mode_set = true;
			break;
		case O_TRACE: c->trace = optarg; break;
		case O_VERBOSE: c->verbose = true; break;
		case O_TRACE_DIR: c->trace_dir = optarg; break;
		case O_MUTANT:
			if (vopr_mutant_parse(optarg, &c->opt.mutant))
				return -EINVAL;
			break;
		case O_EXPECT: c->expect_failure = true; break;
		case O_QUIET: c->quiet = true; break;
		case O_KEEP: c->keep_going = true; break;
		case O_STATS: c->stats = true; break;
		case 'h': fputs(usage, stdout); exit(0);
		case 'V': rs_program_version("ringsteer-vopr"); exit(0);
		case O_SCENARIO:
			if (vopr_scenario_parse(optarg, &c->opt.scenario))
				return -EINVAL;
			break;
		case O_GATEWAYS:
			if (parse_u64(optarg, &n) || n < 2 || n > VOPR_SCENARIO_GATEWAYS_MAX)
				return -EINVAL;
			c->opt.scenario_gateways = (uint32_t)n;
			break;
		case O_MEMBERS:
			if (parse_u64(optarg, &n) || n < 1 || n > VOPR_SCENARIO_MEMBERS_MAX)
				return -EINVAL;
			c->opt.scenario_members = (uint32_t)n;
			break;
		case O_TABLES:
			if (mode_set)
				return -EINVAL;
			c->mode = TABLES;
			mode_set = true;
			break;
		case O_TRIALS:
			if (parse_u64(optarg, &n) || n < 1 || n > 10000)
				return -EINVAL;
			c->trials = (uint32_t)n;
			break;
		case O_MARKDOWN: c->markdown = true; break;
		default: return -EINVAL;
		}
	}
	if (seed_set && !mode_set) {
		c->mode = ONE;
		mode_set = true;
	} else if (seed_set && c->mode != TABLES) {
		return -EINVAL; /* --seed names one run, or the tables' base seed */
	} else if (c->mode == TABLES && !seed_set) {
		c->first = 1;
	}
	if (optind != argc || !mode_set || (c->trace && c->mode != ONE) || (c->opt.scenario && c->mode != ONE) ||
	    (c->markdown && c->mode != TABLES))
		return -EINVAL;
	c->opt.verbose_trace = c->verbose;
	return 0;
}

static void print_result(const struct vopr_result *r)
{
	printf("seed %" PRIu64 ": %s  G=%u M=%u faults=%u events=%" PRIu64 " sim=%.1fs quiet=%" PRIu64
	       " attaches=%" PRIu64 " moves=%" PRIu64 " degraded=%" PRIu64 " hash=%016" PRIx64 "\n",
	       r->seed, r->failed ? "FAIL" : "pass", r->gateways, r->members, r->faults, r->events,
	       (double)r->sim_ms / 1000, r->quiet_points, r->attaches, r->moves, r->degraded, r->trace_hash);
	if (r->failed)
		printf("  broken: %s at %.3fs: %s\n", r->invariant, (double)r->failed_at_ms / 1000, r->detail);
	if (r->failed && r->known)
		printf("  (a known defect: %s; docs/SIMULATION.md)\n", r->known);
	if (r->scenario.done)
		printf("  scenario: max %.0f mean %.1f max-min %.0f peak %.0f moved %.0f handoffs %.0f\n", r->scenario.max,
		       r->scenario.mean, r->scenario.spread, r->scenario.peak, r->scenario.moved, r->scenario.handoffs);
}

/* Runs seed again with its trace to a file, prints the file's tail. */
static void replay_to_file(const struct cli *c, uint64_t seed)
{
	struct vopr_options opt = c->opt;
	struct vopr_result r;
	char path[4096], *lines[TAIL_LINES] = { 0 }, buf[2048];
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/vopr-%" PRIu64 "%s.trace", c->trace_dir, seed,
		 c->opt.mutant ? "-mutant" : "");
	f = fopen(path, "w+");
	if (!f) {
		fprintf(stderr, "ringsteer-vopr: cannot write %s: %s\n", path, strerror(errno));
		return;
	}
	opt.trace = f;
	opt.verbose_trace = true;
	if (vopr_run(seed, &opt, &r) == 0) {
		rewind(f);
		while (fgets(buf, sizeof(buf), f)) {
			free(lines[n % TAIL_LINES]);
			lines[n % TAIL_LINES] = strdup(buf);
			n++;
		}
		printf("--- the last %d lines of its trace (all of it: %s) ---\n", TAIL_LINES, path);
		for (size_t i = n > TAIL_LINES ? n - TAIL_LINES : 0; i < n; i++)
			fputs(lines[i % TAIL_LINES] ? lines[i % TAIL_LINES] : "", stdout);
		printf("---\n");
	}
	for (size_t i = 0; i < TAIL_LINES; i++)
		free(lines[i]);
	fclose(f);
}

static int run_one(const struct cli *c)
{
	struct vopr_options opt = c->opt;
	struct vopr_result r;
	FILE *f = NULL;
	int err;

	if (c->trace)
		f = strcmp(c->trace, "-") == 0 ? stdout : fopen(c->trace, "w");
	if (c->trace && !f) {
		fprintf(stderr, "ringsteer-vopr: cannot write %s: %s\n", c->trace, strerror(errno));
		return 2;
	}
	opt.trace = f;
	err = vopr_run(c->first, &opt, &r);
	if (f && f != stdout)
		fclose(f);
	if (err) {
		fprintf(stderr, "ringsteer-vopr: seed %" PRIu64 ": %s\n", c->first, strerror(-err));
		return 1;
	}
	if (r.failed && !c->trace) {
		/* The replay prints its trace, then the verdict. */
		opt.trace = stdout;
		opt.verbose_trace = true;
		err = vopr_run(c->first, &opt, &r);
		if (err)
			return 1;
	}
	print_result(&r);
	return r.failed != c->expect_failure;
}

static void add_up(struct vopr_result *sum, const struct vopr_result *r)
{
	for (int i = 0; i < 16; i++)
		sum->applied[i] += r->applied[i];
	sum->attaches += r->attaches;
	sum->moves += r->moves;
	sum->degraded += r->degraded;
	sum->handoffs += r->handoffs;
	sum->deferred += r->deferred;
	sum->quiet_points += r->quiet_points;
	sum->cores.accepts += r->cores.accepts;
	sum->cores.redirects += r->cores.redirects;
	sum->cores.over_cap += r->cores.over_cap;
	sum->cores.claims += r->cores.claims;
	sum->cores.claims_superseded += r->cores.claims_superseded;
	sum->cores.handoffs_timed_out += r->cores.handoffs_timed_out;
	sum->cores.abandoned += r->cores.abandoned;
	sum->cores.rejects += r->cores.rejects;
	sum->cores.superseded_closed += r->cores.superseded_closed;
	sum->cores.store_cancelled += r->cores.store_cancelled;
}

/* What the seeds exercised, summed. */
static void print_totals(const struct vopr_result *t)
{
	printf("faults applied:");
	for (unsigned i = 0; vopr_fault_name(i); i++)
		printf(" %s %u", vopr_fault_name(i), t->applied[i]);
	printf("\nmembers: %" PRIu64 " attaches, %" PRIu64 " moves; quiet points checked: %" PRIu64 "\n", t->attaches,
	       t->moves, t->quiet_points);
	printf("gateway cores: %" PRIu64 " accepts, %" PRIu64 " placement redirects, %" PRIu64 " degraded accepts, %" PRIu64
	       " claims (%" PRIu64 " superseded), %" PRIu64 " deferred placements, %" PRIu64 " drain handoffs (%" PRIu64
	       " timed out, %" PRIu64 " abandoned), %" PRIu64 " over-cap accepts, %" PRIu64 " rejects, %" PRIu64
	       " superseded links closed, %" PRIu64 " queued admissions cancelled\n",
	       t->cores.accepts, t->cores.redirects, t->degraded, t->cores.claims, t->cores.claims_superseded,
	       t->deferred, t->handoffs, t->cores.handoffs_timed_out, t->cores.abandoned, t->cores.over_cap,
	       t->cores.rejects, t->cores.superseded_closed, t->cores.store_cancelled);
}

/* Counts a failure of invariant name. */
static void tally(char names[16][48], uint64_t counts[16], const char *name)
{
	for (int i = 0; i < 16; i++) {
		if (!names[i][0])
			snprintf(names[i], 48, "%s", name);
		if (strcmp(names[i], name) == 0) {
			counts[i]++;
			return;
		}
	}
}

static int run_many(const struct cli *c)
{
	double start = now_s(), elapsed;
	uint64_t seeds = 0, events = 0, x = 0, seed;
	int64_t sim_ms = 0;
	struct vopr_result r = { 0 }, first = { 0 };
	char names[16][48] = { { 0 } };
	uint64_t counts[16] = { 0 }, failures = 0, known = 0;
	struct vopr_result sum = { 0 };
	bool failed = false;

	if (c->mode == TIMED) {
		x = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
		printf("random seeds from %" PRIu64 " for %.0f s\n", x, c->seconds);
	}
	for (uint64_t i = 0;; i++) {
		if (c->mode == RANGE && c->first + i > c->last)
			break;
		if (c->mode == TIMED && now_s() - start >= c->seconds)
			break;
		seed = c->mode == RANGE ? c->first + i : sim_splitmix64(&x) >> 1;
		if (vopr_run(seed, &c->opt, &r) != 0) {
			fprintf(stderr, "ringsteer-vopr: seed %" PRIu64 ": out of memory\n", seed);
			return 1;
		}
		seeds++;
		events += r.events;
		sim_ms += r.sim_ms;
		add_up(&sum, &r);
		if (!c->quiet || r.failed)
			print_result(&r);
		if (r.failed && r.known && !c->opt.mutant) {
			/* Counted apart, and the run goes on: it is reported already. */
			known++;
			tally(names, counts, r.known);
			continue;
		}
		if (r.failed) {
			if (!failed)
				first = r;
			failed = true;
			failures++;
			tally(names, counts, r.invariant);
			if (!c->keep_going)
				break;
		}
	}
	elapsed = now_s() - start;
	printf("%" PRIu64 " seeds, %" PRIu64 " failed, %" PRIu64 " a known defect, %" PRIu64
	       " events, %.0f simulated s in %.1f s: %.0f events/s, %.0f seeds/min\n",
	       seeds, failures, known, events, (double)sim_ms / 1000, elapsed,
	       elapsed > 0 ? (double)events / elapsed : 0, elapsed > 0 ? (double)seeds * 60 / elapsed : 0);
	for (int i = 0; i < 16 && names[i][0]; i++)
		printf("  %s: %" PRIu64 "\n", names[i], counts[i]);
	if (c->stats)
		print_totals(&sum);
	if (failed) {
		replay_to_file(c, first.seed);
		printf("broken: %s (seed %" PRIu64 "): %s\nreplay: ringsteer-vopr --seed %" PRIu64 "%s%s\n",
		       first.invariant, first.seed, first.detail, first.seed, c->opt.mutant ? " --mutant " : "",
		       c->opt.mutant ? vopr_mutant_name(c->opt.mutant) : "");
	}
	return failed != c->expect_failure;
}

int main(int argc, char **argv)
{
	struct cli c;

	if (parse(argc, argv, &c)) {
		fputs("ringsteer-vopr: bad arguments (try --help)\n", stderr);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (c.mode == TABLES) {
		int err = vopr_tables(c.first, c.trials, c.markdown, stdout);

		if (err && err != -EPROTO)
			fprintf(stderr, "ringsteer-vopr: --tables: %s\n", strerror(-err));
		return err ? 1 : 0;
	}
	return c.mode == ONE ? run_one(&c) : run_many(&c);
}
