/* SPDX-License-Identifier: Apache-2.0 */
/* kt_tool.c - stand-ins for gateways and supervisors in the kernel shell
 * tests, small enough to leave no doubt about what they do.
 *
 *   kt_tool serve SOCKET ID=ADDR:PORT...
 *       listens on each ADDR:PORT, registers it with the agent at SOCKET as
 *       gateway ID (role listen; an ID "peer/GW": as GW's peer socket),
 *       prints "ready", then answers every
 *       connection with its gateway ID and a newline and closes it.  Runs
 *       until killed; re-registers every listener on SIGHUP (what a gateway
 *       does when the agent restarts).
 *       SOCKET "-" registers nothing: plain named listeners (connect-time
 *       steering's targets, or kube-proxy's backend).
 *   kt_tool gateway STORE HEARTBEAT_MS ID=PEER...
 *       writes each gateway's row (serving, peer endpoint PEER) into the
 *       store; with HEARTBEAT_MS > 0 keeps refreshing them every
 *       HEARTBEAT_MS until killed, as a gateway's heartbeat would.
 *   kt_tool member SOCKET MEMBER [DST [mapped] [nonblock]]
 *       registers MEMBER with the agent's member socket (SOCKET "-": not at
 *       all) and prints "registered TEXT" or "refused REASON TEXT"; with
 *       DST, then connects to it (AF_INET, or AF_INET6 to the v4-mapped
 *       address with "mapped"; a non-blocking connect with "nonblock") and
 *       prints "reached=LINE peer=ADDR:PORT" (LINE: what the listener
 *       said; peer: getpeername).  Without DST, holds the registration
 *       until stdin closes.
 *   kt_tool dial SRC DST
 *       connects from address SRC to DST, prints the line it reads (the
 *       gateway ID) or "refused"; exit 0 either way, 1 on other errors.
 *   kt_tool dials DST SRC...
 *       dial from each SRC in turn, one "SRC LINE" per source: many
 *       sources for the cost of one process (a slow guest pays per exec).
 *   kt_tool raw SOCKET COUNT HEX
 *       COUNT times: connects to the UNIX socket SOCKET, sends the bytes HEX
 *       (a registration, malformed as a test wants it), reads the reply and
 *       prints its reason byte (offset 7), or "none" when the reply is
 *       shorter; exit 1 when a connect or send fails.
 *   kt_tool swap LINK_PIN
 *       replaces the program of the pinned sk_lookup link with a two-line
 *       "return SK_PASS" one (BPF_LINK_UPDATE): what a different agent
 *       version's datapath looks like to the upgrade check.  A program the
 *       kernel refuses fails (exit 1) with the verifier's log on stderr.
 *   kt_tool bench SERVICE DIRECT SECONDS LINK_PIN
 *       the steering benchmark (bench/bench_steer.sh): with BPF_STATS_RUN_TIME
 *       on (bpf_enable_stats), alternates rounds of connections to SERVICE
 *       (steered by sk_lookup) and to DIRECT (the same gateway socket's own
 *       address) for SECONDS in all, and prints the sk_lookup program's ns
 *       per run (run_time_ns / run_cnt of the program behind LINK_PIN) in
 *       each kind of round, the connections per second of each, and their
 *       ratio.  Each connection is connect + close with RST (no TIME_WAIT,
 *       so ports never run out); the listener drains its accept queue.
 *   kt_tool connect_bench LINK_PIN MEMBER_SOCKET MEMBER SERVICE OTHER COUNT
 *       the connect-time steering benchmark (bench/connect_steer.sh; run it
 *       in a pod's netns and cgroup): with BPF_STATS_RUN_TIME on, the
 *       connect4 program's ns per run (run_time_ns / run_cnt of the
 *       program behind LINK_PIN) over COUNT connects of each kind, in 10
 *       interleaved rounds: to SERVICE unregistered (the program finds no
 *       target; kube-proxy's DNAT decides) and to OTHER (not a Service);
 *       then, MEMBER registered with the agent at MEMBER_SOCKET, to SERVICE
 *       steered (the program rewrites the destination) and to OTHER again.
 *       Prints one "NAME VALUE" line per figure.  Connects close with RST.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "registration/agent_reg.h"
#include "util/endpoint.h"
#include "ringsteer/store.h"

#define LISTENERS_MAX 16
/* A registration's own deadline: far above any agent's --steer-wait (the
 * tests raise it on slow guests), so the agent, not this tool, answers. */
#define KT_REGISTER_MS 60000

static int listen_on(const char *endpoint)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, one = 1;

	if (rs_endpoint_parse(endpoint, &ss, &len))
		return -EINVAL;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 4096) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

static int register_all(const char *sock, char **ids, const int *fds, int n)
{
	for (int i = 0; i < n; i++) {
		char reason[256];
		uint32_t slot;
		/* "peer/ID": registered as ID's peer socket, not its listener */
		bool peer = strncmp(ids[i], "peer/", 5) == 0;
		int err = rs_agent_register(sock, peer ? ids[i] + 5 : ids[i], peer ? RS_AGENT_ROLE_PEER : RS_AGENT_ROLE_LISTEN,
					    fds[i], &slot, reason, sizeof(reason));

		if (err) {
			fprintf(stderr, "kt_tool: register %s: %s\n", ids[i], reason);
			return 1;
		}
	}
	return 0;
}

static int serve(const char *sock, int argc, char **argv)
{
	char *ids[LISTENERS_MAX];
	int fds[LISTENERS_MAX], n = 0;
	struct pollfd p[LISTENERS_MAX];
	sigset_t hup;

	for (int i = 0; i < argc && n < LISTENERS_MAX; i++, n++) {
		char *eq = strchr(argv[i], '=');

		if (!eq)
			return 2;
		*eq = '\0';
		ids[n] = argv[i];
		fds[n] = listen_on(eq + 1);
		if (fds[n] < 0) {
			fprintf(stderr, "kt_tool: listen %s: %s\n", eq + 1, strerror(-fds[n]));
			return 1;
		}
		p[n] = (struct pollfd){ .fd = fds[n], .events = POLLIN };
	}
	if (strcmp(sock, "-") != 0 && register_all(sock, ids, fds, n))
		return 1;
	printf("ready\n");
	fflush(stdout);
	sigemptyset(&hup);
	sigaddset(&hup, SIGHUP);
	sigprocmask(SIG_BLOCK, &hup, NULL);
	for (;;) {
		struct timespec zero = { 0 };

		if (sigtimedwait(&hup, NULL, &zero) == SIGHUP && strcmp(sock, "-") != 0 && register_all(sock, ids, fds, n))
			return 1;
		if (poll(p, (nfds_t)n, 100) <= 0)
			continue;
		for (int i = 0; i < n; i++) {
			int c;

			if (!(p[i].revents & POLLIN))
				continue;
			/* Drain the queue (bounded per wakeup), so a fast dialer never
			 * fills the backlog and meets SYN retransmits. */
			for (int budget = 0; budget < 4096 && (c = accept4(fds[i], NULL, NULL, SOCK_CLOEXEC)) >= 0;
			     budget++) {
				/* A dialer that already left (the bench resets at
				 * once) makes these fail; nothing to report. */
				if (write(c, ids[i], strlen(ids[i])) > 0)
					(void)!write(c, "\n", 1);
				close(c);
			}
		}
	}
}

static int dial(const char *src, const char *dst, const char *prefix)
{
	struct sockaddr_storage from, to;
	socklen_t from_len, to_len;
	char line[300];
	ssize_t got;
	size_t used = 0;
	int fd;

	if (rs_address_parse(src, &from, &from_len) || rs_endpoint_parse(dst, &to, &to_len))
		return 2;
	fd = socket(to.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&from, from_len) < 0)
		return 1;
	if (connect(fd, (struct sockaddr *)&to, to_len) < 0) {
		int err = errno;

		close(fd);
		if (err != ECONNREFUSED)
			return 1;
		printf("%s%srefused\n", prefix, *prefix ? " " : "");
		return 0;
	}
	while (used < sizeof(line) - 1 && (got = read(fd, line + used, sizeof(line) - 1 - used)) > 0)
		used += (size_t)got;
	close(fd);
	line[used] = '\0';
	line[strcspn(line, "\n")] = '\0';
	printf("%s%s%s\n", prefix, *prefix ? " " : "", used ? line : "closed");
	return 0;
}

static int dials(const char *dst, int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		int rc = dial(argv[i], dst, argv[i]);

		if (rc)
			return rc;
	}
	return 0;
}

static int gateway_rows(const char *url, const char *every, int argc, char **argv)
{
	struct rs_store *st = NULL;
	long ms = strtol(every, NULL, 10);
	int err;

	err = rs_store_open(url, NULL, &st);
	if (err) {
		fprintf(stderr, "kt_tool: store %s: %s\n", url, strerror(-err));
		return 1;
	}
	for (;;) {
		struct timespec now, pause = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

		clock_gettime(CLOCK_REALTIME, &now);
		for (int i = 0; i < argc; i++) {
			char id[RS_ID_MAX + 1], *eq = strchr(argv[i], '=');

			if (!eq || eq - argv[i] > RS_ID_MAX)
				return 2;
			snprintf(id, sizeof(id), "%.*s", (int)(eq - argv[i]), argv[i]);
			err = rs_store_gateway_register(st, id, eq + 1, RS_GATEWAY_SERVING,
							(int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000);
			if (err) {
				fprintf(stderr, "kt_tool: gateway %s: %s\n", id, strerror(-err));
				rs_store_close(st);
				return 1;
			}
		}
		if (ms <= 0)
			break;
		nanosleep(&pause, NULL);
	}
	rs_store_close(st);
	return 0;
}

/* Connects to dst (v4-mapped from an AF_INET6 socket if mapped; completed
 * by poll when nonblock), prints what the listener said and getpeername. */
static int member_dial(const char *dst, bool mapped, bool nonblock)
{
	struct sockaddr_storage to, peer;
	socklen_t to_len, peer_len = sizeof(peer);
	char line[300], peer_text[128];
	ssize_t got;
	size_t used = 0;
	int fd;

	if (rs_endpoint_parse(dst, &to, &to_len) || to.ss_family != AF_INET)
		return 2;
	if (mapped) {
		struct sockaddr_in in4 = *(struct sockaddr_in *)&to;
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&to;

		memset(&to, 0, sizeof(to));
		in6->sin6_family = AF_INET6;
		in6->sin6_port = in4.sin_port;
		in6->sin6_addr.s6_addr[10] = 0xff;
		in6->sin6_addr.s6_addr[11] = 0xff;
		memcpy(&in6->sin6_addr.s6_addr[12], &in4.sin_addr, 4);
		to_len = sizeof(*in6);
	}
	fd = socket(to.ss_family, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
	if (fd < 0)
		return 1;
	if (connect(fd, (struct sockaddr *)&to, to_len) < 0) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		int soerr = 0;
		socklen_t len = sizeof(soerr);

		if (!nonblock || errno != EINPROGRESS || poll(&p, 1, 3000) != 1 ||
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0 || soerr) {
			printf("reached=refused peer=-\n");
			close(fd);
			return 0;
		}
		fcntl(fd, F_SETFL, 0); /* blocking for the read below */
	}
	if (getpeername(fd, (struct sockaddr *)&peer, &peer_len) < 0 ||
	    rs_endpoint_format((struct sockaddr *)&peer, peer_text, sizeof(peer_text)))
		snprintf(peer_text, sizeof(peer_text), "-");
	while (used < sizeof(line) - 1 && (got = read(fd, line + used, sizeof(line) - 1 - used)) > 0)
		used += (size_t)got;
	close(fd);
	line[used] = '\0';
	line[strcspn(line, "\n")] = '\0';
	printf("reached=%s peer=%s\n", used ? line : "closed", peer_text);
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int member(int argc, char **argv)
{
	struct rs_agent_reg_reply reply;
	int link = -1, rc = 0;
	bool mapped = false, nonblock = false;

	for (int i = 3; i < argc; i++) {
		mapped |= strcmp(argv[i], "mapped") == 0;
		nonblock |= strcmp(argv[i], "nonblock") == 0;
	}
	if (strcmp(argv[0], "-") != 0) {
		double t0 = now_s();
		int err = rs_agent_member_register(argv[0], argv[1], KT_REGISTER_MS, &link, &reply);
		double answer_ms = (now_s() - t0) * 1000.0;

		if (err == -EACCES)
			printf("refused %s %s\n", rs_agent_reg_reason_name(reply.reason), reply.text);
		else if (err)
			printf("failed %s\n", strerror(-err));
		else
			printf("registered %s\n", reply.text);
		printf("answer_ms=%.0f\n", answer_ms);
		fflush(stdout);
	}
	if (argc >= 3)
		rc = member_dial(argv[2], mapped, nonblock);
	else if (link >= 0) {
		char byte;

		while (read(0, &byte, 1) > 0)
			; /* hold the registration until stdin closes */
	}
	if (link >= 0)
		close(link);
	return rc;
}

/* Connections to dst for secs, each connect + close with RST; returns the
 * count made, failures in *failed. */
/* One connect to `to`, closed with RST (SO_LINGER 0: no TIME_WAIT, so a
 * benchmark never runs out of ports).  Returns whether it connected. */
static bool connect_rst(const struct sockaddr_storage *to, socklen_t to_len)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	int fd = socket(to->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok;

	if (fd < 0)
		return false;
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	ok = connect(fd, (const struct sockaddr *)to, to_len) == 0;
	close(fd);
	return ok;
}

static unsigned long hammer(const struct sockaddr_storage *to, socklen_t to_len, double secs, unsigned long *failed)
{
	double end = now_s() + secs;
	unsigned long n = 0;

	while (now_s() < end)
		for (int batch = 0; batch < 32; batch++) {
			bool ok = connect_rst(to, to_len);

			n += ok;
			*failed += !ok;
		}
	return n;
}

static int prog_stats(int prog_fd, uint64_t *run_ns, uint64_t *runs)
{
	struct bpf_prog_info info = { 0 };
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len) < 0)
		return -errno;
	*run_ns = info.run_time_ns;
	*runs = info.run_cnt;
	return 0;
}

static int bench(const char *service, const char *direct, const char *seconds, const char *link_pin)
{
	enum { ROUNDS = 10 };
	struct sockaddr_storage svc, dir;
	socklen_t svc_len, dir_len;
	struct bpf_link_info li = { 0 };
	__u32 li_len = sizeof(li);
	double secs = atof(seconds), t_svc = 0, t_dir = 0;
	unsigned long n_svc = 0, n_dir = 0, failed = 0;
	uint64_t ns_svc = 0, runs_svc = 0, ns_dir = 0, runs_dir = 0;
	int stats_fd, link_fd, prog_fd;

	if (rs_endpoint_parse(service, &svc, &svc_len) || rs_endpoint_parse(direct, &dir, &dir_len) || secs <= 0 ||
	    secs > 120)
		return 2;
	stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME); /* on while this fd is open */
	link_fd = bpf_obj_get(link_pin);
	if (stats_fd < 0 || link_fd < 0 || bpf_obj_get_info_by_fd(link_fd, &li, &li_len) < 0 ||
	    (prog_fd = bpf_prog_get_fd_by_id(li.prog_id)) < 0) {
		fprintf(stderr, "kt_tool bench: cannot enable stats or open %s: %s\n", link_pin, strerror(errno));
		return 1;
	}
	/* Interleaved rounds, so drift (frequency, other load) hits both. */
	for (int r = 0; r < ROUNDS; r++) {
		uint64_t ns0, runs0, ns1, runs1;
		double t0;

		prog_stats(prog_fd, &ns0, &runs0);
		t0 = now_s();
		n_svc += hammer(&svc, svc_len, secs / (2 * ROUNDS), &failed);
		t_svc += now_s() - t0;
		prog_stats(prog_fd, &ns1, &runs1);
		ns_svc += ns1 - ns0;
		runs_svc += runs1 - runs0;
		t0 = now_s();
		n_dir += hammer(&dir, dir_len, secs / (2 * ROUNDS), &failed);
		t_dir += now_s() - t0;
		prog_stats(prog_fd, &ns0, &runs0);
		ns_dir += ns0 - ns1;
		runs_dir += runs0 - runs1;
	}
	printf("sk_lookup_ns_per_run_steered %.1f\n", runs_svc ? (double)ns_svc / (double)runs_svc : 0.0);
	printf("sk_lookup_ns_per_run_other %.1f\n", runs_dir ? (double)ns_dir / (double)runs_dir : 0.0);
	printf("sk_lookup_runs %llu\n", (unsigned long long)(runs_svc + runs_dir));
	printf("steered_cps %.0f\n", (double)n_svc / t_svc);
	printf("direct_cps %.0f\n", (double)n_dir / t_dir);
	printf("ratio %.3f\n", ((double)n_svc / t_svc) / ((double)n_dir / t_dir));
	printf("failed %lu\n", failed);
	close(prog_fd);
	close(link_fd);
	close(stats_fd);
	return failed ? 1 : 0;
}

/* COUNT connects to `to`, each closed with RST; returns the successful ones. */
static unsigned long hammer_n(const struct sockaddr_storage *to, socklen_t to_len, unsigned long count,
			      unsigned long *failed)
{
	unsigned long n = 0;

	for (unsigned long i = 0; i < count; i++) {
		bool ok = connect_rst(to, to_len);

		n += ok;
		*failed += !ok;
	}
	return n;
}

struct cstat {
	uint64_t ns, runs;
	unsigned long conns;
};

/* One round of `count` connects to `to`, its program time added to *c. */
static void cround(int prog_fd, const struct sockaddr_storage *to, socklen_t to_len, unsigned long count,
		   struct cstat *c, unsigned long *failed)
{
	uint64_t ns0, runs0, ns1, runs1;

	prog_stats(prog_fd, &ns0, &runs0);
	c->conns += hammer_n(to, to_len, count, failed);
	prog_stats(prog_fd, &ns1, &runs1);
	c->ns += ns1 - ns0;
	c->runs += runs1 - runs0;
}

static void cprint(const char *name, const struct cstat *c)
{
	printf("connect4_ns_per_run_%s %.1f\n", name, c->runs ? (double)c->ns / (double)c->runs : 0.0);
	printf("connect4_runs_%s %llu\n", name, (unsigned long long)c->runs);
	printf("connects_%s %lu\n", name, c->conns);
}

static int connect_bench(char **argv)
{
	enum { ROUNDS = 10 };
	const char *link_pin = argv[0], *member_sock = argv[1], *member_id = argv[2];
	struct sockaddr_storage svc, oth;
	socklen_t svc_len, oth_len;
	struct bpf_link_info li = { 0 };
	__u32 li_len = sizeof(li);
	long count = atol(argv[5]);
	struct cstat unreg = { 0 }, other1 = { 0 }, steered = { 0 }, other2 = { 0 }, other;
	struct rs_agent_reg_reply reply;
	unsigned long failed = 0, per;
	int stats_fd, link_fd, prog_fd, link = -1, err;

	if (rs_endpoint_parse(argv[3], &svc, &svc_len) || rs_endpoint_parse(argv[4], &oth, &oth_len) || count < ROUNDS ||
	    count > 1000000)
		return 2;
	per = (unsigned long)count / ROUNDS;
	stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME); /* on while this fd is open */
	link_fd = bpf_obj_get(link_pin);
	if (stats_fd < 0 || link_fd < 0 || bpf_obj_get_info_by_fd(link_fd, &li, &li_len) < 0 ||
	    (prog_fd = bpf_prog_get_fd_by_id(li.prog_id)) < 0) {
		fprintf(stderr, "kt_tool connect_bench: cannot enable stats or open %s: %s\n", link_pin, strerror(errno));
		return 1;
	}
	for (int r = 0; r < ROUNDS; r++) {
		cround(prog_fd, &oth, oth_len, per, &other1, &failed);
		cround(prog_fd, &svc, svc_len, per, &unreg, &failed);
	}
	err = rs_agent_member_register(member_sock, member_id, KT_REGISTER_MS, &link, &reply);
	if (err) {
		fprintf(stderr, "kt_tool connect_bench: register %s: %s %s\n", member_id, strerror(-err),
			err == -EACCES ? reply.text : "");
		return 1;
	}
	for (int r = 0; r < ROUNDS; r++) {
		cround(prog_fd, &svc, svc_len, per, &steered, &failed);
		cround(prog_fd, &oth, oth_len, per, &other2, &failed);
	}
	close(link);
	other = (struct cstat){ other1.ns + other2.ns, other1.runs + other2.runs, other1.conns + other2.conns };
	cprint("service_steered", &steered);
	cprint("service_unregistered", &unreg);
	cprint("other", &other);
	cprint("other_unregistered", &other1);
	cprint("other_registered", &other2);
	printf("failed %lu\n", failed);
	close(prog_fd);
	close(link_fd);
	close(stats_fd);
	return failed ? 1 : 0;
}

static int raw(const char *path, const char *count, const char *hex)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	uint8_t msg[256], reply[512];
	size_t len = strlen(hex) / 2;
	long n = strtol(count, NULL, 10);

	if (strlen(hex) % 2 || len > sizeof(msg) || strlen(path) >= sizeof(sun.sun_path) || n < 1)
		return 2;
	for (size_t i = 0; i < len; i++) {
		unsigned int b;

		if (sscanf(hex + 2 * i, "%2x", &b) != 1)
			return 2;
		msg[i] = (uint8_t)b;
	}
	memcpy(sun.sun_path, path, strlen(path));
	for (long i = 0; i < n; i++) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		ssize_t got;

		if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
		    send(fd, msg, len, MSG_NOSIGNAL) != (ssize_t)len) {
			fprintf(stderr, "kt_tool raw: %s: %s\n", path, strerror(errno));
			if (fd >= 0)
				close(fd);
			return 1;
		}
		got = recv(fd, reply, sizeof(reply), 0);
		close(fd);
		if (got > 7)
			printf("%u\n", reply[7]);
		else
			printf("none\n");
	}
	return 0;
}

static int swap(const char *link_pin)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 1 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	/* With a log buffer (and log level 0) libbpf retries a refused load
	 * with the verifier's log on, so a rejection says why. */
	static char log[16384];
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_SK_LOOKUP, .log_buf = log,
		    .log_size = sizeof(log));
	int prog = bpf_prog_load(BPF_PROG_TYPE_SK_LOOKUP, "rs_other", "GPL", insns, 2, &opts);
	int link;

	if (prog < 0) {
		fprintf(stderr, "kt_tool swap: the kernel refused the program: %s\n%s", strerror(errno), log);
		return 1;
	}
	link = bpf_obj_get(link_pin);
	if (link < 0 || bpf_link_update(link, prog, NULL) < 0) {
		fprintf(stderr, "kt_tool swap: cannot update the link %s: %s\n", link_pin, strerror(errno));
		return 1;
	}
	close(link);
	close(prog);
	return 0;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc >= 4 && strcmp(argv[1], "serve") == 0)
		return serve(argv[2], argc - 3, argv + 3);
	if (argc >= 5 && strcmp(argv[1], "gateway") == 0)
		return gateway_rows(argv[2], argv[3], argc - 4, argv + 4);
	if (argc >= 4 && strcmp(argv[1], "member") == 0)
		return member(argc - 2, argv + 2);
	if (argc == 4 && strcmp(argv[1], "dial") == 0)
		return dial(argv[2], argv[3], "");
	if (argc >= 4 && strcmp(argv[1], "dials") == 0)
		return dials(argv[2], argc - 3, argv + 3);
	if (argc == 5 && strcmp(argv[1], "raw") == 0)
		return raw(argv[2], argv[3], argv[4]);
	if (argc == 3 && strcmp(argv[1], "swap") == 0)
		return swap(argv[2]);
	if (argc == 8 && strcmp(argv[1], "connect_bench") == 0)
		return connect_bench(argv + 2);
	if (argc == 6 && strcmp(argv[1], "bench") == 0)
		return bench(argv[2], argv[3], argv[4], argv[5]);
	fprintf(stderr, "usage: kt_tool serve SOCKET ID=ADDR:PORT... | gateway STORE MS ID=PEER... | "
			"member SOCKET MEMBER [DST [mapped] [nonblock]] | dial SRC DST | dials DST SRC... | raw SOCKET COUNT HEX | swap LINK | "
			"bench SERVICE DIRECT SECONDS LINK\n");
	return 2;
}
