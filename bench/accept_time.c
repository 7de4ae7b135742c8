/* SPDX-License-Identifier: Apache-2.0 */
/* accept_time.c - connect-to-ACCEPT time of one supervisor HELLO, through
 * the Service address: either the kernel steered it to the gateway the rule
 * picks (ACCEPT on the first connection) or it took the redirect round trip
 * (REDIRECT, second connection, ACCEPT).  Each round uses a fresh member id
 * with a token minted from the cluster secret, then says GOODBYE, so loads
 * do not drift.  Prints the median of each path and their ratio.
 * usage: accept_time SERVICE SECRET_FILE SOURCE_ADDR ROUNDS
 *
 * With --agent MEMBER_SOCKET (bench/connect_steer.sh; run it inside a
 * supervisor pod's netns and cgroup, where the agent's connect4 program
 * runs): each round makes two HELLOs, each a new member, interleaved:
 *   steered  register with the agent first (rs_agent_member_register), then
 *            connect to the Service (rewritten at connect time to the
 *            gateway the agent chose), HELLO, ACCEPT; close the registration
 *   dnat     no registration: connect to the Service (kube-proxy's DNAT picks
 *            a gateway), HELLO; on REDIRECT dial the peer endpoint with STAY
 * and prints the median and p99 of connect-to-ACCEPT for each, their ratio,
 * and the registration's own cost (register call to reply) separately.
 * A REDIRECT on the steered path is counted (it should not happen).
 * usage: accept_time --agent MEMBER_SOCKET SERVICE SECRET_FILE SOURCE_ADDR ROUNDS
 *
 * With --all (bench/compare/datapath.sh): ROUNDS fresh members each connect
 * to SERVICE (any front: the Service, a proxy, a gateway), HELLO, follow a
 * REDIRECT with STAY, GOODBYE; prints the median and p99 of connect-to-ACCEPT
 * over all of them and how many were redirected.
 * usage: accept_time --all SERVICE SECRET_FILE SOURCE_ADDR ROUNDS */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "registration/agent_reg.h"
#include "util/endpoint.h"
#include "ringsteer/proto.h"
#include "ringsteer/token.h"

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int dial(const char *endpoint, const char *source)
{
	struct sockaddr_storage to, from;
	socklen_t to_len, from_len;
	int fd;

	if (rs_endpoint_parse(endpoint, &to, &to_len) || rs_address_parse(source, &from, &from_len))
		return -EINVAL;
	fd = socket(to.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&from, from_len) < 0 || connect(fd, (struct sockaddr *)&to, to_len) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

static int send_frame(int fd, const struct rs_frame *f)
{
	uint8_t buf[2048];
	size_t len;

	if (rs_frame_encode(f, buf, sizeof(buf), &len))
		return -EINVAL;
	return write(fd, buf, len) == (ssize_t)len ? 0 : -EIO;
}

/* Reads one frame (blocking, bounded by the buffer). */
static int read_frame(int fd, struct rs_frame *f)
{
	uint8_t buf[4096];
	size_t have = 0, used;

	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - have);
		int err;

		if (n <= 0)
			return -EIO;
		have += (size_t)n;
		err = rs_frame_decode(buf, have, f, &used);
		if (err != -EAGAIN)
			return err;
		if (have == sizeof(buf))
			return -EMSGSIZE;
	}
}

static int hello(int fd, const char *member, const char *token, uint64_t epoch, uint8_t flags, struct rs_frame *answer)
{
	struct rs_frame f = { .version = RS_PROTO_VERSION, .type = RS_FRAME_HELLO };

	snprintf(f.u.hello.member_id, sizeof(f.u.hello.member_id), "%s", member);
	snprintf(f.u.hello.instance_id, sizeof(f.u.hello.instance_id), "bench");
	snprintf(f.u.hello.token, sizeof(f.u.hello.token), "%s", token);
	f.u.hello.epoch = epoch;
	f.u.hello.flags = flags;
	if (send_frame(fd, &f))
		return -EIO;
	return read_frame(fd, answer);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp);
	return n ? v[n / 2] : 0;
}

static double pct(double *v, size_t n, double p) /* v sorted */
{
	size_t i;

	if (!n)
		return 0;
	i = (size_t)(p * (double)n + 0.999999);
	return v[i ? i - 1 : 0];
}

static void goodbye(int fd)
{
	send_frame(fd, &(struct rs_frame){ .version = RS_PROTO_VERSION, .type = RS_FRAME_GOODBYE,
					   .u.goodbye.reason = RS_GOODBYE_CLOSING });
	close(fd);
}

/* One HELLO through the Service, following a REDIRECT with STAY.  Returns the
 * connect-to-ACCEPT time in us (< 0 on failure); *redirected says which. */
static double one_hello(const char *service, const char *source, const char *member, const char *token,
			int *redirected)
{
	struct rs_frame a;
	double t0 = now_us(), t;
	int fd = dial(service, source);

	*redirected = 0;
	if (fd < 0 || hello(fd, member, token, 1, 0, &a)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (a.type == RS_FRAME_REDIRECT) {
		char peer[RS_ENDPOINT_MAX + 1];

		snprintf(peer, sizeof(peer), "%s", a.u.redirect.peer);
		close(fd);
		*redirected = 1;
		fd = dial(peer, source);
		if (fd < 0 || hello(fd, member, token, 2, RS_HELLO_STAY | RS_HELLO_REDIRECTED, &a)) {
			if (fd >= 0)
				close(fd);
			return -1;
		}
	}
	t = now_us() - t0;
	goodbye(fd);
	return a.type == RS_FRAME_ACCEPT ? t : -1;
}

static void report(const char *name, double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp);
	printf("%s_n %zu\n%s_median_us %.1f\n%s_p99_us %.1f\n", name, n, name, pct(v, n, 0.5), name, pct(v, n, 0.99));
}

/* Ends a member registration and waits until the agent has forgotten it:
 * the agent deletes the member's map entry before it closes its end, so its
 * EOF (bounded by a 2 s poll) means the next connect is not steered. */
static void unregister(int link)
{
	struct pollfd p = { .fd = link, .events = POLLIN };
	char buf[64];

	shutdown(link, SHUT_WR);
	while (poll(&p, 1, 2000) > 0 && read(link, buf, sizeof(buf)) > 0)
		;
	close(link);
}

/* --agent mode: see the header. */
static int agent_mode(const char *member_sock, const char *service, const struct rs_secret *secret,
		      const char *source, int rounds)
{
	double *steered = calloc((size_t)rounds, sizeof(double)), *dnat = calloc((size_t)rounds, sizeof(double));
	double *reg = calloc((size_t)rounds, sizeof(double)), *total = calloc((size_t)rounds, sizeof(double));
	double *dnat_redir = calloc((size_t)rounds, sizeof(double));
	size_t n_dnat_redirected = 0, n_steered_redirected = 0, key_retries = 0;

	if (!steered || !dnat || !reg || !total || !dnat_redir)
		return 1;
	for (int r = 0; r < rounds; r++) {
		char member[64], token[RS_TOKEN_MAX + 1];
		struct rs_agent_reg_reply reply;
		double t0, t1, t;
		int link = -1, redirected, err;

		/* steered: register, connect, HELLO, ACCEPT, unregister */
		snprintf(member, sizeof(member), "cs-steer-%d-%d", (int)getpid(), r);
		if (rs_token_mint(secret, member, (uint64_t)time(NULL) + 3600, token, sizeof(token)))
			return 1;
		for (int tries = 0;; tries++) {
			t0 = now_us();
			err = rs_agent_member_register(member_sock, member, 2000, &link, &reply);
			t1 = now_us();
			/* the previous round's registration not yet forgotten */
			if (err == -EACCES && reply.reason == RS_AGENT_REG_KEY_IN_USE && tries < 500) {
				key_retries++;
				nanosleep(&(struct timespec){ 0, 1000 * 1000 }, NULL);
				continue;
			}
			break;
		}
		if (err) {
			fprintf(stderr, "accept_time: register %s: %s (%s)\n", member, strerror(-err),
				err == -EACCES ? reply.text : "");
			return 1;
		}
		t = one_hello(service, source, member, token, &redirected);
		unregister(link);
		if (t < 0) {
			fprintf(stderr, "accept_time: steered HELLO %s failed\n", member);
			return 1;
		}
		n_steered_redirected += (size_t)redirected;
		reg[r] = t1 - t0;
		steered[r] = t;
		total[r] = t1 - t0 + t;

		/* dnat: no registration */
		snprintf(member, sizeof(member), "cs-dnat-%d-%d", (int)getpid(), r);
		if (rs_token_mint(secret, member, (uint64_t)time(NULL) + 3600, token, sizeof(token)))
			return 1;
		t = one_hello(service, source, member, token, &redirected);
		if (t < 0) {
			fprintf(stderr, "accept_time: DNAT HELLO %s failed\n", member);
			return 1;
		}
		if (redirected)
			dnat_redir[n_dnat_redirected++] = t;
		dnat[r] = t;
	}
	report("steered", steered, (size_t)rounds);
	report("dnat", dnat, (size_t)rounds);
	report("dnat_redirected_only", dnat_redir, n_dnat_redirected);
	report("register", reg, (size_t)rounds);
	report("steered_with_register", total, (size_t)rounds);
	printf("dnat_redirected %zu\nsteered_redirected %zu\nkey_in_use_retries %zu\n", n_dnat_redirected,
	       n_steered_redirected, key_retries);
	printf("ratio_median_dnat_over_steered %.2f\n", pct(dnat, (size_t)rounds, 0.5) / pct(steered, (size_t)rounds, 0.5));
	printf("ratio_median_dnat_over_steered_with_register %.2f\n",
	       pct(dnat, (size_t)rounds, 0.5) / pct(total, (size_t)rounds, 0.5));
	return 0;
}

/* --all mode: see the header. */
static int all_mode(const char *service, const struct rs_secret *secret, const char *source, int rounds)
{
	double *v = calloc((size_t)rounds, sizeof(double));
	size_t n_redirected = 0;

	if (!v)
		return 1;
	for (int r = 0; r < rounds; r++) {
		char member[64], token[RS_TOKEN_MAX + 1];
		int redirected;

		snprintf(member, sizeof(member), "cmp-%d-%d", (int)getpid(), r);
		if (rs_token_mint(secret, member, (uint64_t)time(NULL) + 3600, token, sizeof(token)))
			return 1;
		v[r] = one_hello(service, source, member, token, &redirected);
		if (v[r] < 0) {
			fprintf(stderr, "accept_time: HELLO %s through %s failed\n", member, service);
			return 1;
		}
		n_redirected += (size_t)redirected;
	}
	report("all", v, (size_t)rounds);
	printf("redirected %zu\n", n_redirected);
	free(v);
	return 0;
}

int main(int argc, char **argv)
{
	struct rs_secret secret;
	double *direct, *redirected;
	size_t n_direct = 0, n_redirected = 0;
	int rounds;

	if (argc == 7 && strcmp(argv[1], "--agent") == 0) {
		if (rs_secret_load(argv[4], &secret) || (rounds = atoi(argv[6])) <= 0) {
			fprintf(stderr, "usage: accept_time --agent MEMBER_SOCKET SERVICE SECRET_FILE SOURCE_ADDR ROUNDS\n");
			return 2;
		}
		return agent_mode(argv[2], argv[3], &secret, argv[5], rounds);
	}
	if (argc == 6 && strcmp(argv[1], "--all") == 0) {
		if (rs_secret_load(argv[3], &secret) || (rounds = atoi(argv[5])) <= 0) {
			fprintf(stderr, "usage: accept_time --all SERVICE SECRET_FILE SOURCE_ADDR ROUNDS\n");
			return 2;
		}
		return all_mode(argv[2], &secret, argv[4], rounds);
	}
	if (argc != 5 || rs_secret_load(argv[2], &secret) || (rounds = atoi(argv[4])) <= 0) {
		fprintf(stderr, "usage: accept_time SERVICE SECRET_FILE SOURCE_ADDR ROUNDS\n");
		return 2;
	}
	direct = calloc((size_t)rounds, sizeof(*direct));
	redirected = calloc((size_t)rounds, sizeof(*redirected));
	if (!direct || !redirected)
		return 1;
	for (int r = 0; r < rounds; r++) {
		char member[32], token[RS_TOKEN_MAX + 1];
		struct rs_frame a;
		double t0;
		int fd;

		snprintf(member, sizeof(member), "bench-%d", r);
		if (rs_token_mint(&secret, member, (uint64_t)time(NULL) + 3600, token, sizeof(token)))
			return 1;
		t0 = now_us();
		fd = dial(argv[1], argv[3]);
		if (fd < 0 || hello(fd, member, token, 1, 0, &a))
			return 1;
		if (a.type == RS_FRAME_REDIRECT) {
			char peer[RS_ENDPOINT_MAX + 1];

			snprintf(peer, sizeof(peer), "%s", a.u.redirect.peer);
			close(fd);
			fd = dial(peer, argv[3]);
			if (fd < 0 || hello(fd, member, token, 2, RS_HELLO_STAY | RS_HELLO_REDIRECTED, &a))
				return 1;
			if (a.type != RS_FRAME_ACCEPT)
				return 1;
			redirected[n_redirected++] = now_us() - t0;
		} else if (a.type == RS_FRAME_ACCEPT) {
			direct[n_direct++] = now_us() - t0;
		} else {
			return 1;
		}
		send_frame(fd, &(struct rs_frame){ .version = RS_PROTO_VERSION, .type = RS_FRAME_GOODBYE,
						   .u.goodbye.reason = RS_GOODBYE_CLOSING });
		close(fd);
	}
	printf("connect-to-ACCEPT over %d HELLOs: steered to the rule's gateway %zu (median %.0f us), "
	       "redirect round trip %zu (median %.0f us); redirect/steered = %.2f\n",
	       rounds, n_direct, median(direct, n_direct), n_redirected, median(redirected, n_redirected),
	       n_direct && n_redirected ? median(redirected, n_redirected) / median(direct, n_direct) : 0.0);
	return 0;
}
