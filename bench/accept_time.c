/* accept_time.c - connect-to-ACCEPT time of one supervisor HELLO, through
 * the Service address: either the kernel steered it to the gateway the rule
 * picks (ACCEPT on the first connection) or it took the redirect round trip
 * (REDIRECT, second connection, ACCEPT).  Each round uses a fresh member id
 * with a token minted from the cluster secret, then says GOODBYE, so loads
 * do not drift.  Prints the median of each path and their ratio.
 * usage: accept_time SERVICE SECRET_FILE SOURCE_ADDR ROUNDS */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ringsteer/endpoint.h"
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

int main(int argc, char **argv)
{
	struct rs_secret secret;
	double *direct, *redirected;
	size_t n_direct = 0, n_redirected = 0;
	int rounds;

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
