/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_status.c - `ringsteerctl status [--store URL] [--json]
 * [--watch[=SECONDS]] [--width N]`: the fleet's balance at a glance, once
 * or redrawn every SECONDS until SIGINT or SIGTERM.
 *
 * A watch opens the store afresh for every frame (read-only: it never
 * creates one), so a store that disappears or is replaced is noticed, and
 * a frame that cannot be read prints why on stderr and the watch goes on:
 * the store may come back, and a dashboard must not die with it. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "ctl_args.h"
#include "ctl_fleet.h"
#include "ctl_status_view.h"
#include "ctl_store.h"
#include "util/mstime.h"

#define WIDTH_DEFAULT 40
#define WIDTH_MAX 1000
#define WATCH_MIN_S 0.05
#define WATCH_MAX_S 86400.0

static const char status_usage[] =
	"NAME\n"
	"    ringsteerctl status - how evenly supervisors are spread over gateways\n"
	"\n"
	"SYNOPSIS\n"
	"    ringsteerctl status [--store URL] [--ttl MS] [--json] [--watch[=SECONDS]] [--width N]\n"
	"\n"
	"DESCRIPTION\n"
	"    Reads the live gateways and live sessions from the store at one instant\n"
	"    and prints one row per live gateway, sorted by id: ID, STATE (serving or\n"
	"    draining), SUPERVISORS (live sessions, reservations included), SANDBOXES\n"
	"    (their sum), BUSIEST (most sandboxes on one supervisor) and a bar of\n"
	"    its supervisors, the largest count filling --width columns.  Then one\n"
	"    footer line of key=value pairs:\n"
	"\n"
	"        supervisors=S  serving=G  cap=C  max=X  min=Y  max-min=D  verdict=V\n"
	"\n"
	"    S counts live supervisors (on draining gateways too), G the serving\n"
	"    gateways, C = ceil(S / G) the rule's cap, X and Y the most and fewest\n"
	"    supervisors on a serving gateway, D = X - Y.  V is even when D <= 1,\n"
	"    uneven otherwise, none (and C, X, Y, D \"-\") with no serving gateway.\n"
	"    Dead gateways (heartbeat older than the TTL) are not shown.\n"
	"\n"
	"    The store is opened read-only: a missing store is an error, never\n"
	"    created.\n"
	"\n"
	"OPTIONS\n"
	"    --store URL        the store (default " RS_STORE_DEFAULT_URL ")\n"
	"    --ttl MS           the gateways' --ttl: older rows are dead (default 15000)\n"
	"    --json             one JSON object instead: {\"gateways\": [{\"id\", \"state\",\n"
	"                       \"live\", \"supervisors\", \"sandboxes\", \"busiest_sandboxes\"}],\n"
	"                       \"supervisors\", \"serving_gateways\", \"cap\", \"max\", \"min\",\n"
	"                       \"spread\", \"even\", \"verdict\"} (max, min, spread null\n"
	"                       with no serving gateway)\n"
	"    --watch[=SECONDS]  redraw every SECONDS (default 1, at least 0.05) until\n"
	"                       SIGINT or SIGTERM; on a terminal the screen is cleared\n"
	"                       before each frame, otherwise frames are separated by\n"
	"                       a blank line.  A frame the store cannot give prints\n"
	"                       why on stderr and the watch goes on.\n"
	"    --width N          bar columns for the largest count, 1..1000 (default 40)\n"
	"    --help             this text\n"
	"\n"
	"EXIT STATUS\n"
	"    0 success (a watch ended by SIGINT or SIGTERM), 1 the store cannot be\n"
	"    opened or read (without --watch) or output fails, 2 bad arguments.\n"
	"\n"
	"EXAMPLES\n"
	"    ringsteerctl status --store sqlite:/var/lib/ringsteer/ringsteer.db\n"
	"    ringsteerctl status --json | jq .spread\n"
	"    ringsteerctl status --watch=2 --width 60\n";

struct status_args {
	const char *url;
	uint32_t ttl_ms;
	bool json, watch;
	double interval_s;
	unsigned width;
};

/* Set by the SIGINT/SIGTERM handler, read by the watch loop.  The one
 * piece of global mutable state in ringsteerctl: a signal handler can
 * reach nothing else, and sig_atomic_t is what it may safely write. */
static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static int parse_interval(const char *s, double *out)
{
	char *end;
	double v;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v < WATCH_MIN_S || v > WATCH_MAX_S)
		return -EINVAL;
	*out = v;
	return 0;
}

/* --watch[=SECONDS] and --width N.  Returns -1 to go on, or 2. */
static int on_own(void *ctx, int val, const char *arg)
{
	struct status_args *a = ctx;
	uint32_t width;

	if (val == 'w') {
		a->watch = true;
		if (arg && parse_interval(arg, &a->interval_s) != 0)
			return ctl_usage_error("status", "--watch: '%s' is not a number of seconds %.2f..%.0f", arg,
					       WATCH_MIN_S, WATCH_MAX_S);
		return -1;
	}
	if (ctl_parse_u32(arg, &width) != 0 || width < 1 || width > WIDTH_MAX)
		return ctl_usage_error("status", "--width: '%s' is not 1..%d", arg, WIDTH_MAX);
	a->width = width;
	return -1;
}

/* Returns -1 to go on, or the exit status: 0 after --help, 2 after a
 * usage error. */
static int parse_args(int argc, char **argv, struct status_args *a)
{
	static const struct option own[] = {
		{ "watch", optional_argument, NULL, 'w' },
		{ "width", required_argument, NULL, 'W' },
		{ 0 },
	};
	const struct ctl_cmd_opts cmd = { .name = "status",
					  .usage = status_usage,
					  .shared = CTL_OPT_STORE | CTL_OPT_TTL | CTL_OPT_JSON,
					  .own = own,
					  .own_short = "",
					  .on_own = on_own,
					  .ctx = a };
	struct ctl_opts o;
	int rc;

	*a = (struct status_args){ .interval_s = 1.0, .width = WIDTH_DEFAULT };
	rc = ctl_parse_opts(&cmd, argc, argv, &o);
	if (rc >= 0)
		return rc;
	a->url = o.store ? o.store : RS_STORE_DEFAULT_URL;
	a->ttl_ms = o.ttl_ms;
	a->json = o.json;
	if (optind != argc)
		return ctl_usage_error("status", "unexpected argument '%s'", argv[optind]);
	return -1;
}

/* Reads and prints one frame on out.  Returns the exit status it would
 * have alone: 0, 1 (store unavailable or unreadable, said on stderr), 2 (a
 * malformed URL). */
static int frame(const struct status_args *a, FILE *out)
{
	struct rs_store *st = NULL;
	struct ctl_fleet f;
	char why[RS_STORE_ERROR_MAX];
	int rc, err;

	rc = ctl_store_open("status", a->url, CTL_STORE_READ, a->ttl_ms, &st);
	if (rc)
		return rc;
	err = ctl_fleet_read(st, rs_wall_ms(), &f);
	snprintf(why, sizeof(why), "%s", ctl_store_why(st, err));
	rs_store_close(st);
	if (err) {
		fprintf(stderr, "ringsteerctl status: cannot read store %s: %s\n", a->url, why);
		return 1;
	}
	if (a->json)
		ctl_status_print_json(out, &f);
	else
		ctl_status_print_table(out, &f, a->width);
	ctl_fleet_free(&f);
	return 0;
}

static int flush_output(void)
{
	return ctl_flush_output("status");
}

/* Sleeps until deadline (CLOCK_MONOTONIC) or a stop signal.  A signal that
 * lands just before the sleep starts is seen one interval late at worst. */
static void sleep_until(const struct timespec *deadline)
{
	while (!stop_requested && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, deadline, NULL) == EINTR)
		;
}

static void advance(struct timespec *t, double seconds)
{
	long long ns = llround(seconds * 1e9);

	t->tv_sec += ns / 1000000000LL;
	t->tv_nsec += ns % 1000000000LL;
	if (t->tv_nsec >= 1000000000L) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000L;
	}
}

/* Renders one frame into memory, then shows it: the screen is cleared (or
 * the separating blank line written) only when there is a frame to show,
 * so a failed read leaves the last good frame up.  Returns as frame(). */
static int watch_frame(const struct status_args *a, bool tty, bool *first)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	int rc;

	if (!mem) {
		fprintf(stderr, "ringsteerctl status: %s\n", strerror(errno));
		return 1;
	}
	rc = frame(a, mem);
	if (fclose(mem) != 0 && rc == 0) {
		fprintf(stderr, "ringsteerctl status: %s\n", strerror(errno));
		rc = 1;
	}
	if (rc == 0) {
		if (tty)
			fputs("\033[H\033[2J", stdout);
		else if (!*first)
			fputc('\n', stdout);
		fwrite(buf, 1, len, stdout);
		*first = false;
	}
	free(buf);
	return rc;
}

static int watch(const struct status_args *a)
{
	struct sigaction sa = { .sa_handler = on_stop_signal };
	bool tty = isatty(STDOUT_FILENO);
	struct timespec next;
	bool first = true;

	/* No SA_RESTART: the sleep must end when the signal comes. */
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGINT, &sa, NULL) != 0 || sigaction(SIGTERM, &sa, NULL) != 0) {
		fprintf(stderr, "ringsteerctl status: sigaction: %s\n", strerror(errno));
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (!stop_requested) {
		if (watch_frame(a, tty, &first) == 2)
			return 2; /* the URL is wrong: it will not get better */
		if (flush_output())
			return 1;
		advance(&next, a->interval_s);
		sleep_until(&next);
	}
	return 0;
}

int ctl_status(int argc, char **argv)
{
	struct status_args a;
	int rc = parse_args(argc, argv, &a);

	if (rc >= 0)
		return rc;
	if (a.watch)
		return watch(&a);
	rc = frame(&a, stdout);
	if (rc == 0)
		rc = flush_output();
	return rc;
}
