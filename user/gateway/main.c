/* SPDX-License-Identifier: Apache-2.0 */
/* main.c - ringsteer-gateway: the reference gateway.  Parses flags, loads
 * its TLS certificate (or is told --insecure), opens the store and the
 * listeners, registers, then runs the library's gateway core on the event
 * loop (conn.c, store_call.c); SIGTERM drains and exits, SIGHUP reloads
 * the TLS files without dropping a connection. */
#include <malloc.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway.h"
#include "registration/agent_reg.h"
#include "util/endpoint.h"
#include "util/flags.h"
#include "util/http.h"
#include "util/logfmt.h"
#include "util/mstime.h"
#include "util/program_version.h"

#include <openssl/crypto.h>

/* The limits' bounds in the help text, from the constants that set them. */
#define RS_STR_(x) #x
#define RS_STR(x) RS_STR_(x)

static const char usage[] =
	"usage: ringsteer-gateway --id ID --listen ADDR:PORT --peer ADDR:PORT --secret FILE [options]\n"
	"\n"
	"  --id ID                 gateway id on the ring ([a-z0-9.-], at most 253 bytes)\n"
	"  --listen ADDR:PORT      where the Service delivers supervisors\n"
	"  --peer ADDR:PORT        peer endpoint: listened on and advertised for redirects\n"
	"  --advertise-peer A:P    advertise this peer endpoint instead of --peer\n"
	"  --store URL             default " RS_STORE_DEFAULT_URL "\n"
	"  --secret FILE           the keys of supervisor tokens: a keyring file, or one\n"
	"                          cluster secret (mode 0600 or 0400; docs/OPERATIONS.md)\n"
	"  --metrics ADDR:PORT     GET /metrics, /readyz, /healthz\n"
	"  --agent PATH            register the listening sockets with the node agent there;\n"
	"                          retried every heartbeat until it succeeds, and again\n"
	"                          when a new agent replaces the one that accepted them\n"
	"  --agent-uid UID         the uid the node agent runs as, if not 0: the listeners\n"
	"                          go only to an agent of uid 0, this gateway's, or UID\n"
	"  --heartbeat MS          store and supervisor heartbeat (default 5000)\n"
	"  --ttl MS                rows older than this are dead (default 15000)\n"
	"  --hello-timeout MS      close connections without HELLO by then (default 5000)\n"
	"  --reservation MS        lifetime of a redirect's reservation (default 5000)\n"
	"  --token-ttl SECONDS     lifetime of tokens renewed over REFRESH (default 3600)\n"
	"  --token-max-ttl SECONDS a HELLO token expiring further ahead is refused, BAD_TOKEN\n"
	"                          (default 86400; at least --token-ttl)\n"
	"  --home-grace MS         a departed supervisor's place is kept this long, so that\n"
	"                          it comes back here (0: freed at once; default the TTL)\n"
	"  --no-placement          accept every supervisor where it lands (benchmarks)\n"
	"  --drain-budget MS       SIGTERM: hand everyone off within MS, then exit (default 25000)\n"
	"  --drain-pace MS         the gentlest pace: between two drain redirects while that\n"
	"                          fits the budget; faster when it does not (default 50)\n"
	"  --drain-max-in-flight N handoffs redirected and not yet gone, at most (default 64)\n"
	"  --drain-wait MS         longest wait to see another serving gateway (default 5000)\n"
	"  --handoff-timeout MS    keep a redirected supervisor's link this long (default 5000)\n"
	"  --store-timeout MS      longest wait for the store (its lock, its answer) per call;\n"
	"                          calls run beside the event loop, and one running past twice\n"
	"                          this marks the store unavailable (default 1000).  While it\n"
	"                          is unavailable, attached supervisors stay and arrivals are\n"
	"                          accepted where they land (degraded), then recorded when it\n"
	"                          answers again\n"
	"\n"
	"limits (each refusal is counted in ringsteer_gateway_rejects_total by reason):\n"
	"  --max-frame BYTES       refuse a frame announcing more, length field included\n"
	"                          (" RS_STR(RS_FRAME_V1_MAX) ".." RS_STR(RS_FRAME_MAX) ", default " RS_STR(RS_FRAME_MAX) ")\n"
	"  --max-unauth N          connections accepted and not yet past HELLO and token, in\n"
	"                          total; more are closed at once (1..65536, default 256)\n"
	"  --max-unauth-per-source N  the same per peer IP address (default 8)\n"
	"  --listen-backlog N      connections the kernel holds complete but not yet accepted\n"
	"                          (1..65535, default 4096; net.core.somaxconn caps it): a\n"
	"                          storm beyond it loses SYNs, whose retransmits come after\n"
	"                          1 s and 3 s, past a supervisor's dial deadline\n"
	"  --max-sessions N        attached supervisors; an arrival that would exceed it gets\n"
	"                          REJECT LIMIT with a retry hint (0: no limit; default: the\n"
	"                          descriptor limit less 64 and --max-unauth)\n"
	"  --limit-retry MS        the retry hint sent with REJECT LIMIT (default 5000)\n"
	"  --admit-deadline MS     an arrival the store would not answer within MS (the\n"
	"                          supervisors' --dial-timeout) gets REJECT LIMIT with a retry\n"
	"                          hint spread over the queue's clear time, at once when the\n"
	"                          store's pace says so, else when still queued at MS\n"
	"                          (1..600000, default 2000)\n"
	"  --admit-batch N         admissions decided in one store transaction at most: a\n"
	"                          batch takes what queued while the last was out, up to N\n"
	"                          (1..65536, default 128)\n"
	"  --max-unsent BYTES      output queued for a connection that does not read, past\n"
	"                          which it is closed (1024..67108864, default 262144)\n"
	"\n"
	"TLS 1.3 on both listeners (required unless --insecure; SIGHUP reloads the files):\n"
	"  --tls-cert FILE         PEM certificate chain; it must name --id (a DNS SAN) so\n"
	"                          that redirected supervisors accept it, and the name\n"
	"                          supervisors dial the Service by\n"
	"  --tls-key FILE          its private key\n"
	"  --tls-ca FILE           require client certificates that verify against FILE and\n"
	"                          name the member of their HELLO (mTLS)\n"
	"  --tls-ticket-keys FILE  resume TLS sessions with tickets under FILE's keys (a\n"
	"                          keyring, as --secret's): give every gateway of the fleet\n"
	"                          the same file and a supervisor sent from one to another\n"
	"                          resumes; the signing key encrypts, it and the two before\n"
	"                          it decrypt.  Without it no tickets are issued\n"
	"  --insecure              plaintext: no TLS (logged, and exported as\n"
	"                          ringsteer_gateway_insecure 1)\n"
	"  --version               print the version and source commit, then exit\n";

static int parse_ms(const char *flag, const char *text, uint32_t *out)
{
	return rs_parse_flag_u32("ringsteer-gateway", flag, text, 1, 86400000, out);
}

static int parse_flags(int argc, char **argv, struct gw_config *cfg)
{
	enum { O_AGENT = 255, O_ADVERTISE = 256, O_HELLO, O_RESERVATION, O_TOKEN_TTL, O_NO_PLACEMENT, O_BUDGET, O_PACE, O_WAIT, O_IN_FLIGHT,
	       O_HANDOFF_TIMEOUT, O_STORE_TIMEOUT, O_MAX_FRAME, O_MAX_UNAUTH, O_MAX_UNAUTH_SOURCE, O_LISTEN_BACKLOG, O_MAX_SESSIONS,
	       O_LIMIT_RETRY, O_ADMIT_DEADLINE, O_ADMIT_BATCH, O_MAX_UNSENT, O_TLS_CERT, O_TLS_KEY, O_TLS_CA, O_TLS_TICKETS,
	       O_INSECURE, O_HOME_GRACE, O_TOKEN_MAX_TTL,
	       O_AGENT_UID };
	static const struct option opts[] = {
		{ "id", required_argument, NULL, 'i' },
		{ "listen", required_argument, NULL, 'l' },
		{ "peer", required_argument, NULL, 'p' },
		{ "advertise-peer", required_argument, NULL, O_ADVERTISE },
		{ "store", required_argument, NULL, 's' },
		{ "secret", required_argument, NULL, 'k' },
		{ "metrics", required_argument, NULL, 'm' },
		{ "agent", required_argument, NULL, O_AGENT },
		{ "agent-uid", required_argument, NULL, O_AGENT_UID },
		{ "heartbeat", required_argument, NULL, 'b' },
		{ "ttl", required_argument, NULL, 't' },
		{ "hello-timeout", required_argument, NULL, O_HELLO },
		{ "reservation", required_argument, NULL, O_RESERVATION },
		{ "token-ttl", required_argument, NULL, O_TOKEN_TTL },
		{ "token-max-ttl", required_argument, NULL, O_TOKEN_MAX_TTL },
		{ "home-grace", required_argument, NULL, O_HOME_GRACE },
		{ "no-placement", no_argument, NULL, O_NO_PLACEMENT },
		{ "drain-budget", required_argument, NULL, O_BUDGET },
		{ "drain-pace", required_argument, NULL, O_PACE },
		{ "drain-wait", required_argument, NULL, O_WAIT },
		{ "drain-max-in-flight", required_argument, NULL, O_IN_FLIGHT },
		{ "handoff-timeout", required_argument, NULL, O_HANDOFF_TIMEOUT },
		{ "store-timeout", required_argument, NULL, O_STORE_TIMEOUT },
		{ "max-frame", required_argument, NULL, O_MAX_FRAME },
		{ "max-unauth", required_argument, NULL, O_MAX_UNAUTH },
		{ "listen-backlog", required_argument, NULL, O_LISTEN_BACKLOG },
		{ "max-unauth-per-source", required_argument, NULL, O_MAX_UNAUTH_SOURCE },
		{ "max-sessions", required_argument, NULL, O_MAX_SESSIONS },
		{ "max-unsent", required_argument, NULL, O_MAX_UNSENT },
		{ "limit-retry", required_argument, NULL, O_LIMIT_RETRY },
		{ "admit-deadline", required_argument, NULL, O_ADMIT_DEADLINE },
		{ "admit-batch", required_argument, NULL, O_ADMIT_BATCH },
		{ "tls-cert", required_argument, NULL, O_TLS_CERT },
		{ "tls-key", required_argument, NULL, O_TLS_KEY },
		{ "tls-ca", required_argument, NULL, O_TLS_CA },
		{ "tls-ticket-keys", required_argument, NULL, O_TLS_TICKETS },
		{ "insecure", no_argument, NULL, O_INSECURE },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	struct sockaddr_storage ss;
	socklen_t len;
	int c;

	*cfg = (struct gw_config){ .agent_uid = RS_AGENT_UID_NONE, .store_url = RS_STORE_DEFAULT_URL, .heartbeat_ms = 5000, .ttl_ms = 15000,
				   .hello_timeout_ms = 5000, .reservation_ms = 5000, .token_ttl_s = 3600, .token_max_ttl_s = RS_GW_TOKEN_MAX_TTL_DEFAULT,
				   .drain = { .pace_ms = 50, .budget_ms = 25000, .membership_wait_ms = 5000,
						      .max_in_flight = 64 },
				   .handoff_timeout_ms = 5000, .store_timeout_ms = 1000, .max_frame = RS_FRAME_MAX,
				   .max_unauth = 256, .max_unauth_per_source = 8, .listen_backlog = 4096, .max_sessions = 0,
				   .limit_retry_ms = 5000, .max_unsent = 262144,
				   .admit_deadline_ms = RS_GW_ADMIT_DEADLINE_DEFAULT_MS,
				   .admit_batch_max = RS_GW_ADMIT_BATCH_DEFAULT };
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		int err = 0;

		switch (c) {
		case 'i': cfg->id = optarg; break;
		case 'l': cfg->listen = optarg; break;
		case 'p': cfg->peer = optarg; break;
		case O_ADVERTISE: cfg->advertise_peer = optarg; break;
		case 's': cfg->store_url = optarg; break;
		case 'k': cfg->secret_file = optarg; break;
		case 'm': cfg->metrics = optarg; break;
		case O_AGENT: cfg->agent = optarg; break;
		case O_AGENT_UID: {
			uint32_t v;

			err = rs_parse_flag_u32("ringsteer-gateway", "--agent-uid", optarg, 0, UINT32_MAX - 1, &v);
			cfg->agent_uid = (uid_t)v;
			break;
		}
		case 'b': err = parse_ms("--heartbeat", optarg, &cfg->heartbeat_ms); break;
		case 't': err = parse_ms("--ttl", optarg, &cfg->ttl_ms); break;
		case O_HELLO: err = parse_ms("--hello-timeout", optarg, &cfg->hello_timeout_ms); break;
		case O_RESERVATION: err = parse_ms("--reservation", optarg, &cfg->reservation_ms); break;
		case O_TOKEN_TTL: err = parse_ms("--token-ttl", optarg, &cfg->token_ttl_s); break;
		case O_TOKEN_MAX_TTL: err = parse_ms("--token-max-ttl", optarg, &cfg->token_max_ttl_s); break;
		case O_HOME_GRACE:
			err = rs_parse_flag_u32("ringsteer-gateway", "--home-grace", optarg, 0, 86400000,
						&cfg->home_grace_ms);
			cfg->home_grace_set = true;
			break;
		case O_NO_PLACEMENT: cfg->no_placement = true; break;
		case O_BUDGET: err = parse_ms("--drain-budget", optarg, &cfg->drain.budget_ms); break;
		case O_PACE: err = parse_ms("--drain-pace", optarg, &cfg->drain.pace_ms); break;
		case O_WAIT: err = parse_ms("--drain-wait", optarg, &cfg->drain.membership_wait_ms); break;
		case O_IN_FLIGHT:
			err = rs_parse_flag_u32("ringsteer-gateway", "--drain-max-in-flight", optarg, 1, 65536,
						&cfg->drain.max_in_flight);
			break;
		case O_HANDOFF_TIMEOUT: err = parse_ms("--handoff-timeout", optarg, &cfg->handoff_timeout_ms); break;
		case O_STORE_TIMEOUT: err = parse_ms("--store-timeout", optarg, &cfg->store_timeout_ms); break;
		case O_MAX_FRAME:
			err = rs_parse_flag_u32("ringsteer-gateway", "--max-frame", optarg, RS_FRAME_V1_MAX, RS_FRAME_MAX,
						&cfg->max_frame);
			break;
		case O_MAX_UNAUTH:
			err = rs_parse_flag_u32("ringsteer-gateway", "--max-unauth", optarg, 1, GW_UNAUTH_MAX,
						&cfg->max_unauth);
			break;
		case O_LISTEN_BACKLOG:
			err = rs_parse_flag_u32("ringsteer-gateway", "--listen-backlog", optarg, 1, 65535,
						&cfg->listen_backlog);
			break;
		case O_MAX_UNAUTH_SOURCE:
			err = rs_parse_flag_u32("ringsteer-gateway", "--max-unauth-per-source", optarg, 1, GW_UNAUTH_MAX,
						&cfg->max_unauth_per_source);
			break;
		case O_MAX_SESSIONS:
			err = rs_parse_flag_u32("ringsteer-gateway", "--max-sessions", optarg, 0, UINT32_MAX,
						&cfg->max_sessions);
			cfg->max_sessions_set = true;
			break;
		case O_LIMIT_RETRY: err = parse_ms("--limit-retry", optarg, &cfg->limit_retry_ms); break;
		case O_ADMIT_DEADLINE:
			err = rs_parse_flag_u32("ringsteer-gateway", "--admit-deadline", optarg, 1, 600000,
						&cfg->admit_deadline_ms);
			break;
		case O_ADMIT_BATCH:
			err = rs_parse_flag_u32("ringsteer-gateway", "--admit-batch", optarg, 1, RS_GW_ADMIT_BATCH_LIMIT,
						&cfg->admit_batch_max);
			break;
		case O_MAX_UNSENT:
			err = rs_parse_flag_u32("ringsteer-gateway", "--max-unsent", optarg, 1024, 64u << 20,
						&cfg->max_unsent);
			break;
		case O_TLS_CERT: cfg->tls_cert = optarg; break;
		case O_TLS_KEY: cfg->tls_key = optarg; break;
		case O_TLS_CA: cfg->tls_ca = optarg; break;
		case O_TLS_TICKETS: cfg->tls_ticket_keys = optarg; break;
		case O_INSECURE: cfg->insecure = true; break;
		case 'h': fputs(usage, stdout); exit(0);
		case 'V': rs_program_version("ringsteer-gateway"); exit(0);
		case ':':
			fprintf(stderr, "ringsteer-gateway: option %s needs a value\n", argv[optind - 1]);
			return -EINVAL;
		default:
			fprintf(stderr, "ringsteer-gateway: unknown option %s (try --help)\n", argv[optind - 1]);
			return -EINVAL;
		}
		if (err)
			return err;
	}
	if (optind != argc || !cfg->id || !cfg->listen || !cfg->peer || !cfg->secret_file) {
		fprintf(stderr, "ringsteer-gateway: --id, --listen, --peer and --secret are required (try --help)\n");
		return -EINVAL;
	}
	if (cfg->token_ttl_s > cfg->token_max_ttl_s) {
		/* It would mint REFRESH tokens that it then refuses. */
		fprintf(stderr, "ringsteer-gateway: --token-ttl must not exceed --token-max-ttl\n");
		return -EINVAL;
	}
	if (!rs_proto_member_id_ok(cfg->id)) {
		fprintf(stderr, "ringsteer-gateway: --id must be 1 to %d bytes of [a-z0-9.-]\n", RS_ID_MAX);
		return -EINVAL;
	}
	if (!cfg->advertise_peer)
		cfg->advertise_peer = cfg->peer;
	if (rs_endpoint_parse(cfg->listen, &ss, &len) || rs_endpoint_parse(cfg->peer, &ss, &len) ||
	    rs_endpoint_parse(cfg->advertise_peer, &ss, &len) ||
	    (cfg->metrics && rs_endpoint_parse(cfg->metrics, &ss, &len))) {
		fprintf(stderr, "ringsteer-gateway: endpoints must be numeric ADDR:PORT ([ADDR]:PORT for IPv6)\n");
		return -EINVAL;
	}
	if (strlen(cfg->advertise_peer) > RS_ENDPOINT_MAX) {
		fprintf(stderr, "ringsteer-gateway: peer endpoint longer than %d bytes\n", RS_ENDPOINT_MAX);
		return -EINVAL;
	}
	if (cfg->insecure && (cfg->tls_cert || cfg->tls_key || cfg->tls_ca || cfg->tls_ticket_keys)) {
		fprintf(stderr, "ringsteer-gateway: --insecure and the --tls-* flags exclude each other\n");
		return -EINVAL;
	}
	if (!cfg->insecure && (!cfg->tls_cert || !cfg->tls_key)) {
		fprintf(stderr, "ringsteer-gateway: --tls-cert and --tls-key are required (plaintext needs an explicit "
				"--insecure)\n");
		return -EINVAL;
	}
	if (cfg->ttl_ms <= cfg->heartbeat_ms) {
		fprintf(stderr, "ringsteer-gateway: --ttl must exceed --heartbeat\n");
		return -EINVAL;
	}
	if (!cfg->home_grace_set)
		cfg->home_grace_ms = cfg->ttl_ms;
	return 0;
}

static struct evconnlistener *listen_on(struct gateway *gw, const char *endpoint)
{
	struct sockaddr_storage ss;
	socklen_t len;

	if (rs_endpoint_parse(endpoint, &ss, &len))
		return NULL;
	return evconnlistener_new_bind(gw->base, gw_conn_accept, gw,
				       LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC,
				       (int)gw->cfg.listen_backlog,
				       (struct sockaddr *)&ss, (int)len);
}

static void on_heartbeat(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	/* Handshakes, HELLO bursts and departures leave free memory between
	 * live connections' blocks; glibc returns only the heap's top unless
	 * asked: this hands whole free pages back, so RSS follows what the
	 * attached supervisors hold. */
	malloc_trim(0);
	gw_tls_watch(arg);
	gw_agent_watch(arg);
}

static void on_sighup(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	gw_tls_reload(arg);
}

/* SIGTERM or SIGINT: drain, then exit; a second signal exits now. */
static void on_stop(evutil_socket_t sig, short what, void *arg)
{
	struct gateway *gw = arg;
	struct rs_gw_gauges g;

	(void)what;
	rs_log(stderr, "info", gw->who, "event", "stopping", "signal", sig == SIGTERM ? "TERM" : "INT", NULL);
	rs_gw_core_gauges(gw->core, &g);
	if (g.stopping) {
		/* Our row goes with every session row on it, once the worker has
		 * run what is queued (main): no session is ended one by one. */
		rs_gw_core_stop_now(gw->core, RS_GOODBYE_SHUTDOWN);
		gw->remove_on_exit = true;
		event_base_loopexit(gw->base, NULL);
		return;
	}
	rs_gw_core_drain(gw->core, true, gw_now());
	gw_core_settle(gw);
}

/* The core's configuration, from the flags. */
static struct rs_gw_core_config core_config(const struct gateway *gw, bool registered)
{
	const struct gw_config *cfg = &gw->cfg;

	return (struct rs_gw_core_config){
		.id = cfg->id,
		.advertise_peer = cfg->advertise_peer,
		.secret = &gw->keys.keys[0].secret, /* required by rs_gw_core_new; the keyring set after it rules */
		.heartbeat_ms = cfg->heartbeat_ms,
		.ttl_ms = cfg->ttl_ms,
		.hello_timeout_ms = cfg->hello_timeout_ms,
		.handoff_timeout_ms = cfg->handoff_timeout_ms,
		.home_grace_ms = cfg->home_grace_ms,
		.token_ttl_s = cfg->token_ttl_s,
		.max_frame = cfg->max_frame,
		.max_sessions = cfg->max_sessions,
		.limit_retry_ms = cfg->limit_retry_ms,
		.admit_deadline_ms = cfg->admit_deadline_ms,
		.admit_batch_max = cfg->admit_batch_max,
		.no_placement = cfg->no_placement,
		.registered = registered,
		.drain = cfg->drain,
	};
}

/* Loads --secret (a keyring, or one legacy secret), saying which key signs
 * (an operator rolling a new key checks it here) or why it was refused. */
static int load_keys(struct gateway *gw)
{
	const struct rs_key *signer;
	char line[24], n[24];
	size_t at = 0;
	int err;

	err = rs_keyring_load(gw->cfg.secret_file, &gw->keys, &at);
	if (err) {
		snprintf(line, sizeof(line), "%zu", at);
		rs_log(stderr, "error", gw->who, "event", "secret_failed", "file", gw->cfg.secret_file, "error",
		       err == -EINVAL ? "not a keyring (see the line) nor a secret of 16 to 4096 bytes" :
					rs_secret_strerror(err),
		       "line", line, NULL);
		return err;
	}
	signer = rs_keyring_signer(&gw->keys, (uint64_t)(rs_wall_ms() / 1000));
	snprintf(n, sizeof(n), "%zu", gw->keys.n);
	rs_log(stderr, "info", gw->who, "event", "keys_loaded", "file", gw->cfg.secret_file, "keys", n, "signing",
	       !signer ? "none-yet" : signer->id[0] ? signer->id : "legacy", NULL);
	return 0;
}

int main(int argc, char **argv)
{
	struct gateway gw = { 0 };
	struct rs_store_options opt = { 0 };
	struct rs_gw_core_config core_cfg;
	struct timeval tick;
	char nofile[24], max_sessions[16], why[RS_STORE_ERROR_MAX];
	int err, rc = 1;

	if (parse_flags(argc, argv, &gw.cfg))
		return 2;
	snprintf(gw.who, sizeof(gw.who), "gateway=%s", gw.cfg.id);
	gw.nofile = gw_fd_limit_raise();
	if (!gw.cfg.max_sessions_set)
		gw.cfg.max_sessions = gw_fd_default_sessions(gw.nofile, gw.cfg.max_unauth);
	signal(SIGPIPE, SIG_IGN);
	err = load_keys(&gw);
	if (err)
		goto cleanup;
	if (gw_tls_init(&gw) != 0)
		goto cleanup;
	opt.ttl_ms = gw.cfg.ttl_ms;
	opt.reservation_ms = gw.cfg.reservation_ms;
	opt.busy_timeout_ms = gw.cfg.store_timeout_ms;
	err = rs_store_open_why(gw.cfg.store_url, &opt, &gw.store, why, sizeof(why));
	if (err) {
		rs_log(stderr, "error", gw.who, "event", "store_failed", "url", gw.cfg.store_url, "error",
		       strerror(-err), "reason", why, NULL);
		goto cleanup;
	}
	err = gw_unauth_init(&gw.unauth, gw.cfg.max_unauth, gw.cfg.max_unauth_per_source);
	if (err)
		goto cleanup;
	gw.base = event_base_new();
	if (!gw.base)
		goto cleanup;
	gw.listen_lst = listen_on(&gw, gw.cfg.listen);
	gw.peer_lst = listen_on(&gw, gw.cfg.peer);
	if (!gw.listen_lst || !gw.peer_lst) {
		rs_log(stderr, "error", gw.who, "event", "listen_failed", "listen", gw.cfg.listen, "peer", gw.cfg.peer,
		       "error", strerror(errno), NULL);
		goto cleanup;
	}
	if (gw_accept_pause_start(&gw) != 0)
		goto cleanup;
	/* Without an agent the gateway runs on, redirect-only: placement stays
	 * correct, only the round trip returns; the heartbeat tries again. */
	gw_agent_register_start(&gw);
	gw_store_timing_init(&gw);
	err = gw_metrics_start(&gw);
	if (err) {
		rs_log(stderr, "error", gw.who, "event", "metrics_failed", "metrics", gw.cfg.metrics, "error",
		       strerror(-err), NULL);
		goto cleanup;
	}
	/* The loop is not serving yet: the one store call made on it.  A new
	 * process holds no connections, so rows a previous one left here go. */
	err = rs_store_gateway_start(gw.store, gw.cfg.id, gw.cfg.advertise_peer, RS_GATEWAY_SERVING, rs_wall_ms());
	if (err) {
		rs_log(stderr, "warn", gw.who, "event", "store_error", "op", "register", "error", strerror(-err), NULL);
	}
	core_cfg = core_config(&gw, err == 0);
	err = rs_gw_core_new(&core_cfg, &gw_core_callbacks, &gw, gw_now(), &gw.core);
	if (err)
		goto cleanup;
	err = rs_gw_core_set_keyring(gw.core, &gw.keys);
	if (!err)
		err = rs_gw_core_set_token_max_ttl(gw.core, gw.cfg.token_max_ttl_s);
	if (err)
		goto cleanup;
	err = rs_store_worker_start(gw.base, gw.store, &gw.worker);
	if (err) {
		rs_log(stderr, "error", gw.who, "event", "store_worker_failed", "error", strerror(-err), NULL);
		goto cleanup;
	}
	if (gw_store_watch_start(&gw) != 0)
		goto cleanup;
	tick = rs_ms_timeval(gw.cfg.heartbeat_ms);
	gw.heartbeat_ev = event_new(gw.base, -1, EV_PERSIST, on_heartbeat, &gw);
	gw.sigterm_ev = evsignal_new(gw.base, SIGTERM, on_stop, &gw);
	gw.sigint_ev = evsignal_new(gw.base, SIGINT, on_stop, &gw);
	gw.sighup_ev = evsignal_new(gw.base, SIGHUP, on_sighup, &gw);
	if (!gw.heartbeat_ev || !gw.sigterm_ev || !gw.sigint_ev || !gw.sighup_ev ||
	    event_add(gw.heartbeat_ev, &tick) || event_add(gw.sigterm_ev, NULL) || event_add(gw.sigint_ev, NULL) ||
	    event_add(gw.sighup_ev, NULL))
		goto cleanup;
	snprintf(nofile, sizeof(nofile), "%llu", (unsigned long long)gw.nofile);
	snprintf(max_sessions, sizeof(max_sessions), "%u", gw.cfg.max_sessions);
	rs_log(stderr, "info", gw.who, "event", "started", "listen", gw.cfg.listen, "peer", gw.cfg.advertise_peer,
	       "store", gw.cfg.store_url, "placement", gw.cfg.no_placement ? "off" : "on", "tls",
	       !gw.tls ? "off" : gw.cfg.tls_ca ? "mutual" : "server", "nofile", nofile, "max_sessions", max_sessions,
	       NULL);
	gw_core_settle(&gw);
	event_base_dispatch(gw.base);
	rc = 0;
cleanup:
	if (gw.core)
		rs_gw_core_stop_now(gw.core, RS_GOODBYE_SHUTDOWN);
	gw_conn_free_all(&gw);
	if (gw.worker) {
		/* What is queued runs (bounded by the store timeout per call)
		 * and answers here, to a core that holds no link any more. */
		gw.store = rs_store_worker_stop(gw.worker);
		gw.worker = NULL;
	}
	if (gw.remove_on_exit && gw.store && rs_store_gateway_remove(gw.store, gw.cfg.id) != 0)
		rs_log(stderr, "warn", gw.who, "event", "store_error", "op", "remove", NULL);
	rs_gw_core_free(gw.core);
	if (gw.core_ev)
		event_free(gw.core_ev);
	if (gw.store_watch_ev)
		event_free(gw.store_watch_ev);
	if (gw.heartbeat_ev)
		event_free(gw.heartbeat_ev);
	if (gw.sigterm_ev)
		event_free(gw.sigterm_ev);
	if (gw.sigint_ev)
		event_free(gw.sigint_ev);
	if (gw.sighup_ev)
		event_free(gw.sighup_ev);
	if (gw.http)
		rs_http_free(gw.http);
	gw_accept_pause_free(&gw);
	if (gw.listen_lst)
		evconnlistener_free(gw.listen_lst);
	if (gw.peer_lst)
		evconnlistener_free(gw.peer_lst);
	if (gw.base)
		event_base_free(gw.base);
	rs_store_close(gw.store);
	gw_unauth_free(&gw.unauth);
	SSL_CTX_free(gw.tls);
	rs_tls_scratch_fini(&gw.tls_scratch);
	rs_keyring_wipe(&gw.keys);
	rs_keyring_wipe(&gw.ticket_ring);
	OPENSSL_cleanse(&gw.tickets, sizeof(gw.tickets));
	return rc;
}
