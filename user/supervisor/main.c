/* SPDX-License-Identifier: Apache-2.0 */
/* main.c - ringsteer-supervisor: the reference supervisor.  Parses flags,
 * loads its token, dials the Service and follows the protocol (client.c);
 * SIGHUP re-reads --sandboxes-file and the TLS files, SIGUSR1 refreshes the token now (an
 * operator rotating secrets need not wait for 80% of its life), SIGTERM says
 * GOODBYE and exits. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "util/endpoint.h"
#include "util/flags.h"
#include "util/logfmt.h"
#include "util/resolve.h"
#include "util/small_file.h"
#include "supervisor.h"
#include "util/program_version.h"

#define RS_STR_(x) #x
#define RS_STR(x) RS_STR_(x)

static const char usage[] =
	"usage: ringsteer-supervisor --id ID --service NAME:PORT --token-file FILE [options]\n"
	"\n"
	"  --id ID                 member id ([a-z0-9.-], at most 253 bytes)\n"
	"  --service NAME:PORT     the gateways' Service: its DNS name, looked up again at\n"
	"                          each Service dial (A and AAAA, each answer tried in\n"
	"                          turn), or a numeric ADDR:PORT ([ADDR]:PORT for IPv6)\n"
	"  --token-file FILE       token minted by `ringsteerctl token`\n"
	"  --sandboxes N           sandboxes it carries (default 0)\n"
	"  --sandboxes-file FILE   re-read the count from FILE on SIGHUP\n"
	"  --bind ADDR             source address of its connections\n"
	"  --dial-timeout MS       give up a dial or an answer after MS (default 2000)\n"
	"  --agent PATH            register with the node agent's member socket before\n"
	"                          dialing the Service (connect-time steering); an absent\n"
	"                          agent is never waited for\n"
	"\n"
	"TLS 1.3 (required unless --insecure):\n"
	"  --tls-ca FILE           verify gateways against FILE; a redirect or redial target's\n"
	"                          certificate must name its gateway id, or it is refused\n"
	"  --tls-server-name NAME  the name the Service's gateways' certificates carry\n"
	"                          (default: the --service name, as a DNS SAN, or its\n"
	"                          address, as an IP SAN)\n"
	"  --tls-cert FILE         present this certificate (mTLS); it must name --id\n"
	"  --tls-key FILE          its private key\n"
	"  --insecure              plaintext: no TLS; redirect and redial targets must then\n"
	"                          lie inside a --redirect-allow prefix\n"
	"  --redirect-allow CIDR   a network plaintext targets may be in (repeatable, at most\n"
	"                          " RS_STR(SUP_ALLOW_MAX) "); a refused target falls back to the Service, asking to stay\n"
	"  --version               print the version and source commit, then exit\n"
	"\n"
	"TLS files are also reloaded when they change (checked before each dial and at\n"
	"each heartbeat).\n"
	"\n"
	"Signals: SIGHUP re-reads --sandboxes-file and the TLS files; SIGUSR1 refreshes\n"
	"the token now; SIGTERM says GOODBYE and exits.\n";

static int parse_flags(int argc, char **argv, struct sup_config *cfg)
{
	enum { O_SANDBOXES_FILE = 256, O_DIAL_TIMEOUT, O_TLS_CA, O_TLS_CERT, O_TLS_KEY, O_TLS_NAME, O_INSECURE, O_ALLOW, O_AGENT };
	static const struct option opts[] = {
		{ "id", required_argument, NULL, 'i' },
		{ "service", required_argument, NULL, 's' },
		{ "token-file", required_argument, NULL, 't' },
		{ "sandboxes", required_argument, NULL, 'n' },
		{ "sandboxes-file", required_argument, NULL, O_SANDBOXES_FILE },
		{ "bind", required_argument, NULL, 'b' },
		{ "dial-timeout", required_argument, NULL, O_DIAL_TIMEOUT },
		{ "tls-ca", required_argument, NULL, O_TLS_CA },
		{ "tls-cert", required_argument, NULL, O_TLS_CERT },
		{ "tls-key", required_argument, NULL, O_TLS_KEY },
		{ "tls-server-name", required_argument, NULL, O_TLS_NAME },
		{ "insecure", no_argument, NULL, O_INSECURE },
		{ "redirect-allow", required_argument, NULL, O_ALLOW },
		{ "agent", required_argument, NULL, O_AGENT },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	struct sockaddr_storage ss;
	socklen_t len;
	int c;

	*cfg = (struct sup_config){ .dial_timeout_ms = 2000 };
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		int err = 0;

		switch (c) {
		case 'i': cfg->id = optarg; break;
		case 's': cfg->service = optarg; break;
		case 't': cfg->token_file = optarg; break;
		case 'n': err = rs_parse_flag_u32("ringsteer-supervisor", "--sandboxes", optarg, 0, UINT32_MAX, &cfg->sandboxes); break;
		case O_SANDBOXES_FILE: cfg->sandboxes_file = optarg; break;
		case 'b': cfg->bind = optarg; break;
		case O_DIAL_TIMEOUT: err = rs_parse_flag_u32("ringsteer-supervisor", "--dial-timeout", optarg, 1, 600000, &cfg->dial_timeout_ms); break;
		case O_TLS_CA: cfg->tls_ca = optarg; break;
		case O_TLS_CERT: cfg->tls_cert = optarg; break;
		case O_TLS_KEY: cfg->tls_key = optarg; break;
		case O_TLS_NAME: cfg->tls_server_name = optarg; break;
		case O_INSECURE: cfg->insecure = true; break;
		case O_AGENT: cfg->agent = optarg; break;
		case O_ALLOW:
			if (cfg->n_allow == SUP_ALLOW_MAX) {
				fprintf(stderr, "ringsteer-supervisor: at most %d --redirect-allow\n", SUP_ALLOW_MAX);
				return -EINVAL;
			}
			if (rs_cidr_parse(optarg, &cfg->allow[cfg->n_allow]) != 0) {
				fprintf(stderr, "ringsteer-supervisor: --redirect-allow %s: not ADDR/PREFIX with no host bits "
						"set past the prefix\n", optarg);
				return -EINVAL;
			}
			cfg->n_allow++;
			break;
		case 'h': fputs(usage, stdout); exit(0);
		case 'V': rs_program_version("ringsteer-supervisor"); exit(0);
		case ':':
			fprintf(stderr, "ringsteer-supervisor: option %s needs a value\n", argv[optind - 1]);
			return -EINVAL;
		default:
			fprintf(stderr, "ringsteer-supervisor: unknown option %s (try --help)\n", argv[optind - 1]);
			return -EINVAL;
		}
		if (err)
			return err;
	}
	if (optind != argc || !cfg->id || !cfg->service || !cfg->token_file) {
		fprintf(stderr, "ringsteer-supervisor: --id, --service and --token-file are required (try --help)\n");
		return -EINVAL;
	}
	if (!rs_proto_member_id_ok(cfg->id)) {
		fprintf(stderr, "ringsteer-supervisor: --id must be 1 to %d bytes of [a-z0-9.-]\n", RS_ID_MAX);
		return -EINVAL;
	}
	if (!rs_endpoint_ok(cfg->service) || strlen(cfg->service) > RS_ENDPOINT_MAX ||
	    (cfg->bind && rs_address_parse(cfg->bind, &ss, &len))) {
		fprintf(stderr, "ringsteer-supervisor: --service must be NAME:PORT or numeric ADDR:PORT (at most %d "
				"bytes), --bind a numeric address\n", RS_ENDPOINT_MAX);
		return -EINVAL;
	}
	if (cfg->insecure == !!cfg->tls_ca) {
		fprintf(stderr, "ringsteer-supervisor: give --tls-ca, or --insecure for plaintext (not both)\n");
		return -EINVAL;
	}
	if (cfg->insecure && (cfg->tls_cert || cfg->tls_key || cfg->tls_server_name)) {
		fprintf(stderr, "ringsteer-supervisor: --insecure and the --tls-* flags exclude each other\n");
		return -EINVAL;
	}
	if (!cfg->tls_cert != !cfg->tls_key) {
		fprintf(stderr, "ringsteer-supervisor: --tls-cert and --tls-key go together\n");
		return -EINVAL;
	}
	if (cfg->tls_server_name && (strlen(cfg->tls_server_name) == 0 || strlen(cfg->tls_server_name) > RS_ID_MAX)) {
		fprintf(stderr, "ringsteer-supervisor: --tls-server-name must be 1 to %d bytes\n", RS_ID_MAX);
		return -EINVAL;
	}
	if (cfg->dial_timeout_ms == 0) {
		fprintf(stderr, "ringsteer-supervisor: --dial-timeout must be positive\n");
		return -EINVAL;
	}
	return 0;
}

/* Reads a decimal count from the sandboxes file.  Returns 0 or -errno. */
static int read_count(const char *path, uint32_t *out)
{
	char buf[32], *end;
	unsigned long v;
	size_t n;
	int err = rs_read_small_file(path, buf, sizeof(buf), &n);

	if (err)
		return err;
	errno = 0;
	v = strtoul(buf, &end, 10);
	if (n == 0 || errno || *end || v > UINT32_MAX || buf[0] < '0' || buf[0] > '9')
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static void on_sighup(evutil_socket_t fd, short what, void *arg)
{
	struct supervisor *s = arg;
	uint32_t count;
	char n[16];
	int err;

	(void)fd;
	(void)what;
	if (s->tls)
		(void)sup_tls_load(s); /* logged; on failure the old files still serve */
	if (!s->cfg.sandboxes_file)
		return;
	err = read_count(s->cfg.sandboxes_file, &count);
	if (err) {
		rs_log(stderr, "warn", s->who, "event", "sandboxes_file_bad", "file", s->cfg.sandboxes_file, "error",
		       strerror(-err), NULL);
		return;
	}
	s->sandboxes = count;
	snprintf(n, sizeof(n), "%u", count);
	rs_log(stderr, "info", s->who, "event", "sandboxes", "count", n, NULL);
	rs_mc_set_sandboxes(s->mc, count);
	sup_settle(s);
}

/* The name a Service dial's certificate must carry: --tls-server-name,
 * else the --service name (a DNS SAN) or address (an IP SAN) itself. */
static void service_name(struct supervisor *s)
{
	if (s->cfg.tls_server_name) {
		snprintf(s->service_name, sizeof(s->service_name), "%s", s->cfg.tls_server_name);
		return;
	}
	rs_endpoint_host(s->cfg.service, s->service_name, sizeof(s->service_name));
}

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
	struct supervisor *s = arg;

	(void)fd;
	(void)what;
	rs_log(stderr, "info", s->who, "event", "stopping", NULL);
	rs_mc_stop(s->mc, sup_now());
	event_base_loopexit(s->base, NULL);
}

static void on_refresh_now(evutil_socket_t fd, short what, void *arg)
{
	struct supervisor *s = arg;

	(void)fd;
	(void)what;
	rs_mc_refresh_now(s->mc, sup_now());
	sup_settle(s);
}

int main(int argc, char **argv)
{
	struct supervisor s = { 0 };
	struct rs_mc_config mcfg;
	unsigned char rnd[16];
	struct timespec now;
	uint64_t seed;
	int err, rc = 1;

	if (parse_flags(argc, argv, &s.cfg))
		return 2;
	snprintf(s.who, sizeof(s.who), "supervisor=%s", s.cfg.id);
	signal(SIGPIPE, SIG_IGN);
	s.sandboxes = s.cfg.sandboxes;
	s.agent_fd = -1;
	if (s.cfg.sandboxes_file && read_count(s.cfg.sandboxes_file, &s.sandboxes) == 0)
		s.cfg.sandboxes = s.sandboxes;
	if (RAND_bytes(rnd, sizeof(rnd)) != 1)
		return 1;
	for (size_t i = 0; i < 8; i++)
		snprintf(s.instance_id + 2 * i, sizeof(s.instance_id) - 2 * i, "%02x", rnd[i]);
	memcpy(&seed, rnd + 8, sizeof(seed));
	service_name(&s);
	/* Epochs start at the wall-clock microsecond so that a restarted
	 * supervisor supersedes its previous life, and grow per connection. */
	clock_gettime(CLOCK_REALTIME, &now);
	mcfg = (struct rs_mc_config){
		.member_id = s.cfg.id,
		.instance_id = s.instance_id,
		.service = s.cfg.service,
		.service_name = s.service_name,
		.first_epoch = (uint64_t)now.tv_sec * 1000000 + (uint64_t)now.tv_nsec / 1000,
		.seed = seed,
		.dial_timeout_ms = s.cfg.dial_timeout_ms,
		.sandboxes = s.sandboxes,
	};
	s.base = event_base_new();
	if (!s.base || rs_mc_new(&mcfg, &sup_core_callbacks, &s, &s.mc) != 0)
		goto cleanup;
	if (rs_endpoint_is_name(s.cfg.service) && rs_resolver_new(s.base, &s.resolver) != 0)
		goto cleanup;
	s.wake_ev = evtimer_new(s.base, sup_on_wake, &s);
	s.sighup_ev = evsignal_new(s.base, SIGHUP, on_sighup, &s);
	s.sigterm_ev = evsignal_new(s.base, SIGTERM, on_stop, &s);
	s.sigint_ev = evsignal_new(s.base, SIGINT, on_stop, &s);
	s.sigusr1_ev = evsignal_new(s.base, SIGUSR1, on_refresh_now, &s);
	if (!s.wake_ev || !s.sighup_ev || !s.sigterm_ev || !s.sigint_ev || !s.sigusr1_ev ||
	    event_add(s.sighup_ev, NULL) || event_add(s.sigterm_ev, NULL) || event_add(s.sigint_ev, NULL) ||
	    event_add(s.sigusr1_ev, NULL))
		goto cleanup;
	if (sup_tls_load(&s) != 0)
		goto cleanup;
	if (s.cfg.insecure)
		rs_log(stderr, "warn", s.who, "event", "insecure", "detail",
		       s.cfg.n_allow ? "plaintext: redirect and redial targets only inside --redirect-allow"
				     : "plaintext and no --redirect-allow: every redirect is refused", NULL);
	err = sup_load_token(&s);
	if (err) {
		rs_log(stderr, "error", s.who, "event", "token_failed", "file", s.cfg.token_file, "error",
		       strerror(-err), NULL);
		goto cleanup;
	}
	rs_log(stderr, "info", s.who, "event", "started", "service", s.cfg.service, "instance", s.instance_id, NULL);
	rs_mc_start(s.mc, sup_now());
	sup_settle(&s);
	event_base_dispatch(s.base);
	rc = 0;
cleanup:
	rs_mc_free(s.mc); /* stopped by a signal, or never started: nothing left to say */
	rs_resolver_free(s.resolver); /* after the links, which cancel their lookups */
	sup_agent_close(&s);
	if (s.wake_ev)
		event_free(s.wake_ev);
	if (s.sighup_ev)
		event_free(s.sighup_ev);
	if (s.sigterm_ev)
		event_free(s.sigterm_ev);
	if (s.sigint_ev)
		event_free(s.sigint_ev);
	if (s.sigusr1_ev)
		event_free(s.sigusr1_ev);
	if (s.base)
		event_base_free(s.base);
	SSL_CTX_free(s.tls);
	rs_tls_resume_forget(&s.resume);
	return rc;
}
