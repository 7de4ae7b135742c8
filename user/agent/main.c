/* SPDX-License-Identifier: Apache-2.0 */
/* main.c - ringsteer-agent: the privileged node daemon.  Loads (or adopts)
 * the steering programs and maps, serves gateway socket registrations,
 * follows the store, exports /metrics.
 *
 * Exit status: 0 stopped by SIGTERM/SIGINT (the pinned programs go on
 * steering), 1 runtime failure, 2 bad flags, 3 this kernel cannot steer (no
 * sk_lookup) or the agent lacks the privileges (gateways run on,
 * redirect-only), 4 the pinned program differs from this agent's and
 * --replace was not given. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/libbpf.h>
#include <event2/event.h>
#include <event2/http.h>

#include "agent_run.h"
#include "util/endpoint.h"
#include "util/flags.h"
#include "util/http.h"
#include "util/logfmt.h"
#include "util/mstime.h"
#include "util/resolve.h"
#include "util/program_version.h"

enum {
	EXIT_FLAGS = 2,
	EXIT_NO_STEERING = 3,
	EXIT_TAG_DIFFERS = 4,
	EXIT_VERIFIER = 5,
};

static const char usage[] =
	"usage: ringsteer-agent --service NAME:PORT [--service ...] [options]\n"
	"\n"
	"  --service NAME:PORT   a Service to steer (repeatable, at most 64 addresses in\n"
	"                        all): its DNS name, looked up again at every sync tick\n"
	"                        (a re-created Service is followed; a failed lookup keeps\n"
	"                        the addresses in force), or a numeric ADDR:PORT\n"
	"  --store URL           follow this store (pins, room-weighted table); without it\n"
	"                        every local gateway weighs the same and pins are left alone\n"
	"  --ttl MS              the gateways' row TTL (default 15000; must match theirs)\n"
	"  --forget-after MS     forget a known supervisor (for precomputed pins) not seen\n"
	"                        in a session or a registration for this long (default\n"
	"                        600000: 10 minutes)\n"
	"  --sync-interval MS    store poll (default 1000); with a store that notifies\n"
	"                        (PostgreSQL LISTEN/NOTIFY) changes trigger a sync and\n"
	"                        the poll slows to max(MS, TTL/4), for expiries\n"
	"  --store-timeout MS    a store call that has not answered by then fails (the\n"
	"                        store's busy timeout; default 5000)\n"
	"  --steer-wait MS       a supervisor's registration waits this long for the\n"
	"                        store's choice of gateway, then is answered without one\n"
	"                        (its connects go through the Service until it comes;\n"
	"                        default 250, at most 60000)\n"
	"  --metrics ADDR:PORT   GET /metrics, /healthz\n"
	"  --socket PATH         gateways' registration socket (default " RS_AGENT_SOCKET_DEFAULT ")\n"
	"  --member-socket PATH  supervisors' registration socket, any local process may\n"
	"                        register itself (default: member.sock beside --socket)\n"
	"  --member-uid-max N    supervisor registrations one uid may hold at once\n"
	"                        (default 1024, at most 4096)\n"
	"  --member-burst N      registrations one pod (netns or cgroup) may make at once,\n"
	"                        then one a second (default 16; a benchmark that registers\n"
	"                        many members from one pod raises it)\n"
	"  --cgroup DIR          attach connect-time steering to this cgroup v2 directory\n"
	"                        (default: the cgroup2 root: every process of the node)\n"
	"  --no-below            connect4/6 on --cgroup alone, not also on each cgroup\n"
	"                        directly below it (those copies run before a socket-LB\n"
	"                        attached to the root: Cilium, Calico eBPF, GKE DPv2)\n"
	"  --no-connect          no connect-time steering (sk_lookup only)\n"
	"  --allow-uid UID       uid allowed to register (repeatable; default: the agent's own)\n"
	"  --replace             upgrade a pinned program whose tag differs (BPF_LINK_UPDATE)\n"
	"  --pin-root DIR        bpffs directory (default " AGENT_PIN_ROOT ")\n"
	"  --probe-missing FEATURE  act as if the kernel lacked FEATURE (repeatable; tests the\n"
	"                        fallback): sk_lookup, so_netns_cookie, sockops_netns_cookie,\n"
	"                        so_peerpidfd (docs/KERNEL.md, kernel features)\n"
	"  --version             print the version and source commit, then exit\n"
	"\n"
	"Exit status: 0 stopped (steering goes on from the pins), 1 failure, 2 bad flags,\n"
	"3 no sk_lookup or no privileges (gateways run redirect-only), 4 pinned program\n"
	"differs (use --replace), 5 the kernel's verifier rejected a program (log above).\n";

static int parse_flags(int argc, char **argv, struct agent_config *cfg)
{
	enum { O_SERVICE = 256, O_STORE, O_TTL, O_SYNC, O_METRICS, O_SOCKET, O_ALLOW_UID, O_REPLACE, O_PIN_ROOT,
	       O_PROBE_MISSING, O_MEMBER_SOCKET, O_CGROUP, O_NO_CONNECT, O_FORGET, O_STEER_WAIT, O_STORE_TIMEOUT,
	       O_MEMBER_UID_MAX, O_MEMBER_BURST, O_NO_BELOW };
	static const struct option opts[] = {
		{ "service", required_argument, NULL, O_SERVICE },
		{ "store", required_argument, NULL, O_STORE },
		{ "ttl", required_argument, NULL, O_TTL },
		{ "sync-interval", required_argument, NULL, O_SYNC },
		{ "metrics", required_argument, NULL, O_METRICS },
		{ "socket", required_argument, NULL, O_SOCKET },
		{ "allow-uid", required_argument, NULL, O_ALLOW_UID },
		{ "replace", no_argument, NULL, O_REPLACE },
		{ "pin-root", required_argument, NULL, O_PIN_ROOT },
		{ "probe-missing", required_argument, NULL, O_PROBE_MISSING },
		{ "member-socket", required_argument, NULL, O_MEMBER_SOCKET },
		{ "cgroup", required_argument, NULL, O_CGROUP },
		{ "no-connect", no_argument, NULL, O_NO_CONNECT },
		{ "no-below", no_argument, NULL, O_NO_BELOW },
		{ "forget-after", required_argument, NULL, O_FORGET },
		{ "steer-wait", required_argument, NULL, O_STEER_WAIT },
		{ "member-uid-max", required_argument, NULL, O_MEMBER_UID_MAX },
		{ "member-burst", required_argument, NULL, O_MEMBER_BURST },
		{ "store-timeout", required_argument, NULL, O_STORE_TIMEOUT },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	struct sockaddr_storage ss;
	socklen_t len;
	int c;

	*cfg = (struct agent_config){ .socket_path = RS_AGENT_SOCKET_DEFAULT, .sync_ms = 1000, .ttl_ms = 15000,
				      .forget_ms = 600000, .steer_wait_ms = AGENT_STEER_WAIT_MS };
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		uint32_t v;
		int err = 0;

		switch (c) {
		case O_SERVICE:
			if (cfg->n_services == AGENT_SERVICES_MAX) {
				fprintf(stderr, "ringsteer-agent: at most %d --service flags\n", AGENT_SERVICES_MAX);
				return -EINVAL;
			}
			if (!rs_endpoint_ok(optarg) || strlen(optarg) > RS_RESOLVE_HOST_MAX + 6) {
				fprintf(stderr, "ringsteer-agent: --service: expected NAME:PORT or numeric ADDR:PORT, got '%s'\n",
					optarg);
				return -EINVAL;
			}
			cfg->services[cfg->n_services++] = optarg;
			break;
		case O_STORE: cfg->store_url = optarg; break;
		case O_TTL: err = rs_parse_flag_u32("ringsteer-agent", "--ttl", optarg, 1, 86400000, &cfg->ttl_ms); break;
		case O_FORGET:
			err = rs_parse_flag_u32("ringsteer-agent", "--forget-after", optarg, 1, UINT32_MAX / 2, &cfg->forget_ms);
			break;
		case O_MEMBER_UID_MAX:
			err = rs_parse_flag_u32("ringsteer-agent", "--member-uid-max", optarg, 1, AGENT_MEMBERS_MAX,
						&cfg->member_uid_max);
			break;
		case O_MEMBER_BURST:
			err = rs_parse_flag_u32("ringsteer-agent", "--member-burst", optarg, 1, AGENT_MEMBERS_MAX,
						&cfg->member_burst);
			break;
		case O_STEER_WAIT:
			err = rs_parse_flag_u32("ringsteer-agent", "--steer-wait", optarg, 1, 60000, &cfg->steer_wait_ms);
			break;
		case O_STORE_TIMEOUT:
			err = rs_parse_flag_u32("ringsteer-agent", "--store-timeout", optarg, 100, 600000,
						&cfg->store_timeout_ms);
			break;
		case O_SYNC: err = rs_parse_flag_u32("ringsteer-agent", "--sync-interval", optarg, 1, 3600000, &cfg->sync_ms); break;
		case O_METRICS:
			if (rs_endpoint_parse(optarg, &ss, &len)) {
				fprintf(stderr, "ringsteer-agent: --metrics: expected numeric ADDR:PORT, got '%s'\n", optarg);
				return -EINVAL;
			}
			cfg->metrics = optarg;
			break;
		case O_SOCKET: cfg->socket_path = optarg; break;
		case O_MEMBER_SOCKET: cfg->member_socket = optarg; break;
		case O_CGROUP: cfg->cgroup = optarg; break;
		case O_NO_CONNECT: cfg->no_connect = true; break;
		case O_NO_BELOW: cfg->no_below = true; break;
		case O_ALLOW_UID:
			if (cfg->n_allow_uids == RS_AGENT_REG_UIDS_MAX) {
				fprintf(stderr, "ringsteer-agent: at most %d --allow-uid flags\n", RS_AGENT_REG_UIDS_MAX);
				return -EINVAL;
			}
			err = rs_parse_flag_u32("ringsteer-agent", "--allow-uid", optarg, 0, UINT32_MAX - 1, &v);
			if (!err)
				cfg->allow_uids[cfg->n_allow_uids++] = (uid_t)v;
			break;
		case O_REPLACE: cfg->replace = true; break;
		case O_PIN_ROOT: cfg->pin_root = optarg; break;
		case O_PROBE_MISSING: {
			int f = agent_feature_parse(optarg);

			if (f < 0) {
				fprintf(stderr,
					"ringsteer-agent: --probe-missing: expected sk_lookup, so_netns_cookie, "
					"sockops_netns_cookie or so_peerpidfd, got '%s'\n",
					optarg);
				return -EINVAL;
			}
			cfg->probe_missing |= 1u << f;
			break;
		}
		case 'h': fputs(usage, stdout); exit(0);
		case 'V': rs_program_version("ringsteer-agent"); exit(0);
		case ':':
			fprintf(stderr, "ringsteer-agent: option %s needs a value\n", argv[optind - 1]);
			return -EINVAL;
		default:
			fprintf(stderr, "ringsteer-agent: unknown option %s (try --help)\n", argv[optind - 1]);
			return -EINVAL;
		}
		if (err)
			return err;
	}
	if (!cfg->member_socket && !cfg->no_connect) {
		static char beside[108];
		const char *slash = strrchr(cfg->socket_path, '/');
		int dir = slash ? (int)(slash - cfg->socket_path) : 0;

		if (snprintf(beside, sizeof(beside), "%.*s%smember.sock", dir, cfg->socket_path, slash ? "/" : "") >=
		    (int)sizeof(beside)) {
			fprintf(stderr, "ringsteer-agent: --socket path too long to put member.sock beside it\n");
			return -EINVAL;
		}
		cfg->member_socket = beside;
	}
	if (optind != argc || cfg->n_services == 0) {
		fprintf(stderr, "ringsteer-agent: at least one --service is required (try --help)\n");
		return -EINVAL;
	}
	return 0;
}


/* libbpf's warnings and notes as log lines, one per line of its message
 * (its debug chatter dropped).  A program the kernel rejects comes as one
 * message holding the verifier's log, whose last lines say why: a long
 * message keeps its first and last lines and says how many it left out, so
 * the reason is never cut off and the log stays bounded. */
#define LIBBPF_HEAD_LINES 4
#define LIBBPF_TAIL_LINES 40

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	const char *lvl = level == LIBBPF_WARN ? "warn" : "info";
	char *msg = NULL, *line, *end;
	size_t total = 0, i = 0;

	if (level == LIBBPF_DEBUG || vasprintf(&msg, fmt, ap) < 0)
		return 0;
	for (line = msg; *line; line = *end ? end + 1 : end, total++)
		end = line + strcspn(line, "\n");
	for (line = msg; *line; line = *end ? end + 1 : end, i++) {
		size_t n;
		char keep;

		end = line + strcspn(line, "\n");
		if (i >= LIBBPF_HEAD_LINES && i + LIBBPF_TAIL_LINES < total) {
			if (i == LIBBPF_HEAD_LINES) {
				char note[64];

				snprintf(note, sizeof(note), "(%zu lines left out)",
					 total - LIBBPF_HEAD_LINES - LIBBPF_TAIL_LINES);
				rs_log(stderr, lvl, "agent", "event", "libbpf", "msg", note, NULL);
			}
			continue;
		}
		n = (size_t)(end - line);
		while (n > 0 && line[n - 1] == ' ')
			n--;
		if (!n)
			continue;
		keep = line[n];
		line[n] = '\0'; /* the line alone; restored for the walk */
		rs_log(stderr, lvl, "agent", "event", "libbpf", "msg", line, NULL);
		line[n] = keep;
	}
	free(msg);
	return 0;
}

static void on_sync(evutil_socket_t fd, short what, void *arg)
{
	struct agent *a = arg;

	(void)fd;
	if (what & EV_TIMEOUT && a->worker && !a->watch_ev)
		agent_watch_arm(a); /* re-arm after a lost watch; failures fall back to this poll */
	if (a->k.connect)
		agent_below_sync(&a->k); /* new child cgroups get their copies (logged there) */
	agent_sync(a); /* counted and logged there, answered through the loop */
	agent_service_names_refresh(a); /* a re-pointed Service name, followed */
}

static void on_stop(evutil_socket_t sig, short what, void *arg)
{
	struct agent *a = arg;

	(void)what;
	rs_log(stderr, "info", "agent", "event", "stopping", "signal", sig == SIGTERM ? "TERM" : "INT", "steering",
	       "continues from the pinned maps", NULL);
	event_base_loopexit(a->base, NULL);
}

static int start_loop(struct agent *a)
{
	struct rs_agent_reg_config rc = {
		.socket_path = a->cfg.socket_path,
		.allow_uids = a->cfg.allow_uids,
		.n_allow_uids = a->cfg.n_allow_uids,
		.on_register = agent_on_register,
		.ctx = a,
		.log = stderr,
	};
	struct timeval tick = rs_ms_timeval(a->cfg.sync_ms);
	int err;

	a->base = event_base_new();
	if (!a->base)
		return -ENOMEM;
	err = rs_agent_reg_server_new(a->base, &rc, &a->reg);
	if (err) {
		rs_log(stderr, "error", "agent", "event", "socket_failed", "path", a->cfg.socket_path, "error",
		       strerror(-err), NULL);
		return err;
	}
	if (a->cfg.member_socket && a->k.connect) {
		err = agent_member_server_start(a, a->cfg.member_socket);
		if (err) {
			rs_log(stderr, "error", "agent", "event", "member_socket_failed", "path", a->cfg.member_socket,
			       "error", strerror(-err), NULL);
			return err;
		}
	}
	err = agent_metrics_start(a);
	if (err) {
		rs_log(stderr, "error", "agent", "event", "metrics_failed", "endpoint", a->cfg.metrics, "error",
		       strerror(-err), NULL);
		return err;
	}
	a->sync_ev = event_new(a->base, -1, EV_PERSIST, on_sync, a);
	a->debounce_ev = evtimer_new(a->base, on_sync, a);
	a->tick_ms = a->cfg.sync_ms;
	a->sigterm_ev = evsignal_new(a->base, SIGTERM, on_stop, a);
	a->sigint_ev = evsignal_new(a->base, SIGINT, on_stop, a);
	if (!a->sync_ev || !a->debounce_ev || !a->sigterm_ev || !a->sigint_ev || event_add(a->sync_ev, &tick) ||
	    event_add(a->sigterm_ev, NULL) || event_add(a->sigint_ev, NULL))
		return -ENOMEM;
	return 0;
}

/* Stops w and closes its store handle, unless a call has been stuck on it
 * for a while: then the agent exits without waiting for the store (the
 * thread ends with the process; the pinned maps steer on). */
static void worker_stop(struct rs_store_worker *w)
{
	if (!w)
		return;
	if (rs_store_worker_busy_ms(w) > 1000) {
		rs_log(stderr, "warn", "agent", "event", "store_stuck", "detail",
		       "a store call is still running: exiting without waiting for it", NULL);
		return;
	}
	rs_store_close(rs_store_worker_stop(w));
}

/* The store handles go to their workers, which make every store call off
 * the loop: one for the sync reads and the registrations' steering, one for
 * the change notifications (PostgreSQL: LISTEN holds a connection of its
 * own; SQLite has none). */
static struct rs_store_options store_options(const struct agent_config *cfg)
{
	return (struct rs_store_options){ .ttl_ms = cfg->ttl_ms, .busy_timeout_ms = cfg->store_timeout_ms };
}

static int start_workers(struct agent *a)
{
	struct rs_store_options so = store_options(&a->cfg);
	struct rs_store *watch_store = NULL;
	int err;

	if (!a->store)
		return 0;
	if (strncmp(a->cfg.store_url, "sqlite:", 7) != 0) {
		err = rs_store_open(a->cfg.store_url, &so, &watch_store);
		if (err)
			return err;
		err = rs_store_worker_start(a->base, watch_store, &a->watch_worker);
		if (err) {
			rs_store_close(watch_store);
			return err;
		}
	}
	err = rs_store_worker_start(a->base, a->store, &a->worker);
	if (!err)
		a->store = NULL; /* the worker's now */
	return err;
}

static void stop_loop(struct agent *a)
{
	agent_service_names_free(a); /* its resolver's event is on the base */
	agent_watch_close(a);
	agent_member_server_stop(a);
	a->stopping = true; /* answers delivered from here on only free their jobs */
	worker_stop(a->worker);
	worker_stop(a->watch_worker);
	a->worker = a->watch_worker = NULL;
	if (a->debounce_ev)
		event_free(a->debounce_ev);
	if (a->sync_ev)
		event_free(a->sync_ev);
	if (a->sigterm_ev)
		event_free(a->sigterm_ev);
	if (a->sigint_ev)
		event_free(a->sigint_ev);
	if (a->http)
		rs_http_free(a->http);
	rs_agent_reg_server_free(a->reg);
	if (a->base)
		event_base_free(a->base);
}

int main(int argc, char **argv)
{
	struct agent a = { 0 };
	struct agent_load_options lo = { 0 };
	struct rs_store_options so;
	char why[512] = "", ino[24], below[24];
	struct rs_hash_key known_key;
	int err, rc = 1;

	if (parse_flags(argc, argv, &a.cfg))
		return EXIT_FLAGS;
	rs_hash_key_random(&known_key);
	agent_known_init(&a.known, &known_key);
	signal(SIGPIPE, SIG_IGN);
	libbpf_set_print(libbpf_log);
	lo.pin_root = a.cfg.pin_root;
	lo.replace = a.cfg.replace;
	lo.probe_missing = a.cfg.probe_missing;
	lo.cgroup = a.cfg.cgroup;
	lo.no_connect = a.cfg.no_connect;
	lo.no_below = a.cfg.no_below;
	a.member_lfd = -1;
	err = agent_kernel_open(&lo, &a.k, why, sizeof(why));
	if (err == -EPERM || err == -EOPNOTSUPP) {
		rs_log(stderr, "error", "agent", "event", "no_steering", "reason", why, NULL);
		return EXIT_NO_STEERING;
	}
	if (err == -ENOEXEC) {
		rs_log(stderr, "error", "agent", "event", "verifier_rejected", "reason", why, NULL);
		return EXIT_VERIFIER;
	}
	if (err == -ESTALE) {
		rs_log(stderr, "error", "agent", "event", "upgrade_refused", "reason", why, NULL);
		return EXIT_TAG_DIFFERS;
	}
	if (err) {
		rs_log(stderr, "error", "agent", "event", "load_failed", "reason", why, "error", strerror(-err), NULL);
		return 1;
	}
	for (int f = 0; f < AGENT_FEATS; f++)
		if (!a.k.feat.has[f])
			rs_log(stderr, "info", "agent", "event", "kernel_feature_missing", "feature",
			       agent_feature_name(f), "instead", agent_feature_instead(f), NULL);
	snprintf(ino, sizeof(ino), "%lu", a.k.netns_ino);
	snprintf(below, sizeof(below), "%zu", agent_below_attached(&a.k));
	rs_log(stderr, "info", "agent", "event", "loaded", "start", agent_load_mode_name(a.k.mode), "tag", a.k.tag,
	       "pins", a.k.pin_dir, "netns", ino, "connect_cgroup", a.k.connect ? a.k.cgroup : "off", "connect_below",
	       a.k.below_on ? below : "off", NULL);

	err = agent_service_names_start(&a);
	if (!err && a.k.connect)
		err = agent_member_scope_init(&a);
	if (!err && a.k.connect)
		err = agent_targets_adopt(&a);
	if (err) {
		rs_log(stderr, "error", "agent", "event", "services_failed", "error", strerror(-err), NULL);
		goto cleanup;
	}
	if (a.cfg.store_url) {
		so = store_options(&a.cfg);
		err = rs_store_open_why(a.cfg.store_url, &so, &a.store, why, sizeof(why));
		if (err) {
			rs_log(stderr, "error", "agent", "event", "store_failed", "store", a.cfg.store_url, "error",
			       strerror(-err), "reason", why, NULL);
			goto cleanup;
		}
	}
	err = start_loop(&a);
	if (!err) {
		err = start_workers(&a);
		if (err)
			rs_log(stderr, "error", "agent", "event", "store_failed", "store", a.cfg.store_url, "error",
			       strerror(-err), NULL);
	}
	if (err)
		goto cleanup;
	agent_watch_arm(&a); /* a pass follows the arm, so no change falls between them */
	on_sync(-1, 0, &a); /* at once: a restarted agent catches up before its first tick */
	rs_log(stderr, "info", "agent", "event", "ready", "socket", a.cfg.socket_path, NULL);
	event_base_dispatch(a.base);
	rc = 0;
cleanup:
	stop_loop(&a);
	rs_store_close(a.store);
	free(a.snap.gateways);
	agent_known_free(&a.known);
	agent_ring_cache_free(&a.ring_cache);
	agent_kernel_close(&a.k);
	return rc;
}
