/* SPDX-License-Identifier: Apache-2.0 */
/* main.c - ringsteer-swarm: a load generator.  N members (P1..PN), each a
 * full protocol client behaving as the reference supervisor (member.c),
 * in one process on one event loop; tokens minted from the cluster secret;
 * source addresses spread over --bind; at most --concurrency dials in
 * progress.  One summary line when all are attached the first time and
 * one on SIGTERM, which says GOODBYE on every link and exits 0; while not
 * all are attached, a progress line a second (attaches and REJECTs in that
 * second), so a storm that stalls shows as a rate of zero, not as silence. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/rand.h>

#include "util/endpoint.h"
#include "util/flags.h"
#include "util/http.h"
#include "util/logfmt.h"
#include "util/resolve.h"
#include "util/mstime.h"
#include "tls/tls.h"
#include "swarm.h"
#include "util/program_version.h"

#define SWARM_COUNT_MAX 1000000

static const char usage[] =
	"usage: ringsteer-swarm --service NAME:PORT --secret FILE --count N --prefix P [options]\n"
	"\n"
	"N supervisors (P1..PN) in one process, each behaving as ringsteer-supervisor:\n"
	"HELLO with its own token, redirects followed at once asking to stay, blips\n"
	"redialed, REJECT hints honoured, tokens refreshed, drains make-before-break.\n"
	"\n"
	"  --service NAME:PORT     the gateways' Service: its DNS name, looked up again at\n"
	"                          each Service dial (A and AAAA, each answer tried in\n"
	"                          turn), or a numeric ADDR:PORT ([ADDR]:PORT for IPv6)\n"
	"  --secret FILE           a keyring or the cluster secret: each member's token is\n"
	"                          minted with its signing key (mode 0600 or 0400)\n"
	"  --count N               members (1..1000000)\n"
	"  --prefix P              member ids are P1..PN ([a-z0-9.-])\n"
	"  --bind CIDR             member i's source address is the i-th address of CIDR,\n"
	"                          wrapping (the addresses must be local: e.g. `ip route add\n"
	"                          local CIDR dev lo`)\n"
	"  --sandboxes N           sandboxes each member carries (default 0)\n"
	"  --concurrency K         at most K dials (connect, TLS, HELLO until its answer) in\n"
	"                          progress at once (default 256)\n"
	"  --dial-timeout MS       give up a dial or an answer after MS (default 2000)\n"
	"  --token-ttl S           lifetime of the minted tokens, seconds (default 3600)\n"
	"  --metrics ADDR:PORT     serve /metrics and /healthz there\n"
	"\n"
	"TLS 1.3 (required unless --insecure):\n"
	"  --tls-ca FILE           verify gateways against FILE; a redirect or redial target's\n"
	"                          certificate must name its gateway id\n"
	"  --tls-server-name NAME  the name the Service's gateways' certificates carry\n"
	"                          (default: the --service name or address)\n"
	"  --insecure              plaintext; redirect and redial targets must then lie\n"
	"                          inside a --redirect-allow prefix\n"
	"  --redirect-allow CIDR   a network plaintext targets may be in (repeatable)\n"
	"  --version               print the version and source commit, then exit\n"
	"\n"
	"Signals: SIGTERM or SIGINT prints the summary, says GOODBYE and exits 0.\n";

static int parse_flags(int argc, char **argv, struct swarm_config *cfg)
{
	enum { O_SECRET = 256, O_CONCURRENCY, O_DIAL_TIMEOUT, O_TOKEN_TTL, O_TLS_CA, O_TLS_NAME, O_INSECURE,
	       O_ALLOW, O_METRICS };
	static const struct option opts[] = {
		{ "service", required_argument, NULL, 's' },
		{ "secret", required_argument, NULL, O_SECRET },
		{ "count", required_argument, NULL, 'c' },
		{ "prefix", required_argument, NULL, 'p' },
		{ "bind", required_argument, NULL, 'b' },
		{ "sandboxes", required_argument, NULL, 'n' },
		{ "concurrency", required_argument, NULL, O_CONCURRENCY },
		{ "dial-timeout", required_argument, NULL, O_DIAL_TIMEOUT },
		{ "token-ttl", required_argument, NULL, O_TOKEN_TTL },
		{ "tls-ca", required_argument, NULL, O_TLS_CA },
		{ "tls-server-name", required_argument, NULL, O_TLS_NAME },
		{ "insecure", no_argument, NULL, O_INSECURE },
		{ "redirect-allow", required_argument, NULL, O_ALLOW },
		{ "metrics", required_argument, NULL, O_METRICS },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	static const char prog[] = "ringsteer-swarm";
	char longest[RS_ID_MAX + 32];
	struct sockaddr_storage ss;
	socklen_t len;
	int c;

	*cfg = (struct swarm_config){ .concurrency = 256, .dial_timeout_ms = 2000, .token_ttl_s = 3600 };
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		int err = 0;

		switch (c) {
		case 's': cfg->service = optarg; break;
		case O_SECRET: cfg->secret_file = optarg; break;
		case 'c': err = rs_parse_flag_u32(prog, "--count", optarg, 1, SWARM_COUNT_MAX, &cfg->count); break;
		case 'p': cfg->prefix = optarg; break;
		case 'b':
			if (rs_cidr_parse(optarg, &cfg->bind) != 0) {
				fprintf(stderr, "%s: --bind %s: not ADDR/PREFIX with no host bits set\n", prog, optarg);
				return -EINVAL;
			}
			break;
		case 'n': err = rs_parse_flag_u32(prog, "--sandboxes", optarg, 0, UINT32_MAX, &cfg->sandboxes); break;
		case O_CONCURRENCY:
			err = rs_parse_flag_u32(prog, "--concurrency", optarg, 1, 1000000, &cfg->concurrency);
			break;
		case O_DIAL_TIMEOUT:
			err = rs_parse_flag_u32(prog, "--dial-timeout", optarg, 1, 600000, &cfg->dial_timeout_ms);
			break;
		case O_TOKEN_TTL:
			err = rs_parse_flag_u32(prog, "--token-ttl", optarg, 1, 10 * 365 * 86400, &cfg->token_ttl_s);
			break;
		case O_TLS_CA: cfg->tls_ca = optarg; break;
		case O_TLS_NAME: cfg->tls_server_name = optarg; break;
		case O_INSECURE: cfg->insecure = true; break;
		case O_METRICS: cfg->metrics = optarg; break;
		case O_ALLOW:
			if (cfg->n_allow == SWARM_ALLOW_MAX) {
				fprintf(stderr, "%s: at most %d --redirect-allow\n", prog, SWARM_ALLOW_MAX);
				return -EINVAL;
			}
			if (rs_cidr_parse(optarg, &cfg->allow[cfg->n_allow]) != 0) {
				fprintf(stderr, "%s: --redirect-allow %s: not ADDR/PREFIX with no host bits set\n", prog,
					optarg);
				return -EINVAL;
			}
			cfg->n_allow++;
			break;
		case 'h': fputs(usage, stdout); exit(0);
		case 'V': rs_program_version(prog); exit(0);
		case ':':
			fprintf(stderr, "%s: option %s needs a value\n", prog, argv[optind - 1]);
			return -EINVAL;
		default:
			fprintf(stderr, "%s: unknown option %s (try --help)\n", prog, argv[optind - 1]);
			return -EINVAL;
		}
		if (err)
			return err;
	}
	if (optind != argc || !cfg->service || !cfg->secret_file || !cfg->count || !cfg->prefix) {
		fprintf(stderr, "%s: --service, --secret, --count and --prefix are required (try --help)\n", prog);
		return -EINVAL;
	}
	/* The longest id must be a member id: then every shorter one is. */
	if (strlen(cfg->prefix) > SWARM_PREFIX_MAX ||
	    snprintf(longest, sizeof(longest), "%s%u", cfg->prefix, cfg->count) >= (int)sizeof(longest) ||
	    !rs_proto_member_id_ok(longest)) {
		fprintf(stderr, "%s: --prefix with the member number must be 1 to %d bytes of [a-z0-9.-]\n", prog,
			RS_ID_MAX);
		return -EINVAL;
	}
	if (!rs_endpoint_ok(cfg->service) || strlen(cfg->service) > RS_ENDPOINT_MAX) {
		fprintf(stderr, "%s: --service must be NAME:PORT or numeric ADDR:PORT (at most %d bytes)\n", prog,
			RS_ENDPOINT_MAX);
		return -EINVAL;
	}
	if (cfg->metrics && rs_endpoint_parse(cfg->metrics, &ss, &len)) {
		fprintf(stderr, "%s: --metrics must be numeric ADDR:PORT\n", prog);
		return -EINVAL;
	}
	if (cfg->insecure == !!cfg->tls_ca) {
		fprintf(stderr, "%s: give --tls-ca, or --insecure for plaintext (not both)\n", prog);
		return -EINVAL;
	}
	if (cfg->insecure && cfg->tls_server_name) {
		fprintf(stderr, "%s: --insecure and --tls-server-name exclude each other\n", prog);
		return -EINVAL;
	}
	if (cfg->tls_server_name && (strlen(cfg->tls_server_name) == 0 || strlen(cfg->tls_server_name) > RS_ID_MAX)) {
		fprintf(stderr, "%s: --tls-server-name must be 1 to %d bytes\n", prog, RS_ID_MAX);
		return -EINVAL;
	}
	return 0;
}

static uint64_t failures_total(const struct swarm *sw)
{
	uint64_t n = 0;

	for (int r = 0; r < FAIL_COUNT; r++)
		n += sw->failures[r];
	return n;
}

void swarm_summary(struct swarm *sw, const char *event)
{
	char members[16], attached[16], ms[24], redirects[24], failures[24], all_ms[24], gap_ms[32], gaps[24];

	snprintf(members, sizeof(members), "%u", sw->cfg.count);
	snprintf(attached, sizeof(attached), "%u", sw->attached);
	snprintf(ms, sizeof(ms), "%llu", (unsigned long long)((uint64_t)rs_mono_ms() - sw->started_ms));
	snprintf(redirects, sizeof(redirects), "%llu", (unsigned long long)sw->redirects);
	snprintf(failures, sizeof(failures), "%llu", (unsigned long long)failures_total(sw));
	if (sw->all_attached_ms >= 0)
		snprintf(all_ms, sizeof(all_ms), "%lld", (long long)sw->all_attached_ms);
	else
		snprintf(all_ms, sizeof(all_ms), "none");
	snprintf(gap_ms, sizeof(gap_ms), "%.3f", (double)swarm_gap_max_us(sw) / 1000.0);
	snprintf(gaps, sizeof(gaps), "%llu", (unsigned long long)sw->gaps.count);
	rs_log(stderr, "info", sw->who, "event", event, "members", members, "attached", attached, "ms", ms,
	       "all_attached_ms", all_ms, "redirects", redirects, "failures", failures, "gap_max_ms", gap_ms,
	       "gaps", gaps, NULL);
}

static void on_progress(evutil_socket_t fd, short what, void *arg)
{
	struct swarm *sw = arg;
	char attached[16], rate[24], rejected[24];

	(void)fd;
	(void)what;
	if (sw->attached < sw->cfg.count) {
		snprintf(attached, sizeof(attached), "%u", sw->attached);
		snprintf(rate, sizeof(rate), "%llu", (unsigned long long)(sw->attaches - sw->progress_attaches));
		snprintf(rejected, sizeof(rejected), "%llu",
			 (unsigned long long)(sw->failures[FAIL_REJECTED] - sw->progress_rejected));
		rs_log(stderr, "info", sw->who, "event", "progress", "attached", attached, "attaches_per_s", rate,
		       "rejected_per_s", rejected, NULL);
	}
	sw->progress_attaches = sw->attaches;
	sw->progress_rejected = sw->failures[FAIL_REJECTED];
}

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
	struct swarm *sw = arg;

	(void)fd;
	(void)what;
	if (sw->stopping)
		return;
	swarm_summary(sw, "stopping");
	sw->stopping = true;
	for (uint32_t i = 0; i < sw->cfg.count; i++)
		swarm_member_stop(&sw->members[i]);
	event_base_loopexit(sw->base, NULL);
}

static int load_tls(struct swarm *sw)
{
	const struct rs_tls_files files = { .ca = sw->cfg.tls_ca };
	char why[256] = "";
	int err;

	if (sw->cfg.insecure)
		return 0;
	err = rs_tls_client_ctx(&files, &sw->tls, why, sizeof(why));
	if (err)
		rs_log(stderr, "error", sw->who, "event", "tls_failed", "error", why, NULL);
	return err;
}

int main(int argc, char **argv)
{
	struct swarm *sw;
	unsigned char rnd[16];
	struct timespec now;
	int err, rc = 1;

	/* The swarm is large (the gateway table, the secret): on the heap. */
	sw = calloc(1, sizeof(*sw));
	if (!sw)
		return 1;
	if (parse_flags(argc, argv, &sw->cfg)) {
		free(sw);
		return 2;
	}
	snprintf(sw->who, sizeof(sw->who), "swarm=%s", sw->cfg.prefix);
	signal(SIGPIPE, SIG_IGN);
	sw->all_attached_ms = -1;
	if (RAND_bytes(rnd, sizeof(rnd)) != 1)
		goto cleanup;
	for (size_t i = 0; i < 8; i++)
		snprintf(sw->instance + 2 * i, sizeof(sw->instance) - 2 * i, "%02x", rnd[i]);
	memcpy(&sw->rng, rnd + 8, sizeof(sw->rng));
	/* Epochs start at the wall-clock microsecond, as the supervisor's, so
	 * that a restarted swarm supersedes its previous life. */
	clock_gettime(CLOCK_REALTIME, &now);
	sw->next_epoch = (uint64_t)now.tv_sec * 1000000 + (uint64_t)now.tv_nsec / 1000;
	sw->fail_hint = FAIL_COUNT;
	if (sw->cfg.tls_server_name)
		snprintf(sw->service_name, sizeof(sw->service_name), "%s", sw->cfg.tls_server_name);
	else
		rs_endpoint_host(sw->cfg.service, sw->service_name, sizeof(sw->service_name));
	{
		char line[24];
		size_t at = 0;

		err = rs_keyring_load(sw->cfg.secret_file, &sw->keys, &at);
		snprintf(line, sizeof(line), "%zu", at);
		if (err) {
			rs_log(stderr, "error", sw->who, "event", "secret_failed", "file", sw->cfg.secret_file, "error",
			       err == -EINVAL ? "not a keyring (see the line) nor a secret of 16 to 4096 bytes" :
						rs_secret_strerror(err),
			       "line", line, NULL);
			goto cleanup;
		}
	}
	sw->members = calloc(sw->cfg.count, sizeof(*sw->members));
	sw->base = event_base_new();
	if (!sw->members || !sw->base)
		goto cleanup;
	sw->pump_ev = event_new(sw->base, -1, 0, swarm_on_pump, sw);
	sw->sigterm_ev = evsignal_new(sw->base, SIGTERM, on_stop, sw);
	sw->sigint_ev = evsignal_new(sw->base, SIGINT, on_stop, sw);
	sw->progress_ev = event_new(sw->base, -1, EV_PERSIST, on_progress, sw);
	if (!sw->pump_ev || !sw->sigterm_ev || !sw->sigint_ev || !sw->progress_ev || event_add(sw->sigterm_ev, NULL) ||
	    event_add(sw->sigint_ev, NULL) || event_add(sw->progress_ev, &(struct timeval){ 1, 0 }))
		goto cleanup;
	if (rs_endpoint_is_name(sw->cfg.service) && rs_resolver_new(sw->base, &sw->resolver) != 0)
		goto cleanup;
	if (load_tls(sw) != 0)
		goto cleanup;
	if (sw->cfg.metrics) {
		err = swarm_metrics_serve(sw);
		if (err) {
			rs_log(stderr, "error", sw->who, "event", "metrics_failed", "listen", sw->cfg.metrics, "error",
			       strerror(-err), NULL);
			goto cleanup;
		}
	}
	if (sw->cfg.insecure && !sw->cfg.n_allow)
		rs_log(stderr, "warn", sw->who, "event", "insecure", "detail",
		       "plaintext and no --redirect-allow: every redirect is refused", NULL);
	{
		char count[16], conc[16];

		snprintf(count, sizeof(count), "%u", sw->cfg.count);
		snprintf(conc, sizeof(conc), "%u", sw->cfg.concurrency);
		rs_log(stderr, "info", sw->who, "event", "started", "service", sw->cfg.service, "members", count,
		       "concurrency", conc, "instance", sw->instance, NULL);
	}
	sw->started_ms = (uint64_t)rs_mono_ms();
	for (uint32_t i = 0; i < sw->cfg.count; i++) {
		err = swarm_member_start(sw, &sw->members[i], i + 1);
		if (err) {
			rs_log(stderr, "error", sw->who, "event", "start_failed", "error", strerror(-err), NULL);
			goto cleanup;
		}
	}
	event_base_dispatch(sw->base);
	rc = 0;
cleanup:
	sw->stopping = true;
	if (sw->members)
		for (uint32_t i = 0; i < sw->cfg.count; i++)
			swarm_member_stop(&sw->members[i]);
	free(sw->members);
	rs_resolver_free(sw->resolver); /* after the members' links, which cancel their lookups */
	if (sw->http)
		rs_http_free(sw->http);
	if (sw->pump_ev)
		event_free(sw->pump_ev);
	if (sw->sigterm_ev)
		event_free(sw->sigterm_ev);
	if (sw->sigint_ev)
		event_free(sw->sigint_ev);
	if (sw->progress_ev)
		event_free(sw->progress_ev);
	if (sw->base)
		event_base_free(sw->base);
	SSL_CTX_free(sw->tls);
	rs_keyring_wipe(&sw->keys);
	free(sw);
	return rc;
}
