/* SPDX-License-Identifier: Apache-2.0 */
/* tls_cost.c - what TLS costs on the attach path: connect-to-ACCEPT time of
 * one supervisor HELLO sent straight to a gateway's peer endpoint, in
 * plaintext (--insecure), over TLS 1.3 (the server's certificate verified
 * against the CA and required to name the gateway id, as a redirected
 * supervisor does), and over TLS 1.3 with a client certificate (mTLS, the
 * gateway given --tls-ca).  Every attach is a full handshake on a fresh
 * connection, as a supervisor's is (it keeps no TLS sessions), and the
 * socket keeps Nagle's algorithm on, as the supervisor's does: a stall that
 * Nagle and delayed ACKs cause on the TLS path shows here as it would
 * there.  The gateways run with --no-placement, so every HELLO is
 * accepted where it lands, and the attach does the same store work on each.
 *
 * The variants take turns attach by attach (plaintext, TLS, mTLS, plaintext,
 * ...), so drift in the machine or the store weighs on all three alike; a
 * few rounds of warm-up are not counted.  Members are a fixed set
 * bench-1..bench-MEMBERS reused in turn (mTLS needs a certificate naming
 * each); epochs start at the wall clock in microseconds and grow by one per
 * attach, as the reference supervisor's do, so each HELLO supersedes
 * nothing live (the previous one said GOODBYE) and is never stale.
 *
 * Prints, per variant, the median, p90 and p99 of connect-to-ACCEPT and
 * attaches per second (one client, one attach at a time: 1 / mean), then
 * the ratios TLS/plaintext and mTLS/plaintext.  Exits 1 if any attach fails.
 *
 * usage: tls_cost SECRET_FILE TLS_DIR MEMBERS ROUNDS PLAIN TLS MTLS
 *   TLS_DIR  holds ca.crt and bench-K.{crt,key} for K in 1..MEMBERS
 *   PLAIN, TLS, MTLS  each GATEWAY_ID@ADDR:PORT (the peer endpoint) */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "util/endpoint.h"
#include "ringsteer/proto.h"
#include "tls/tls.h"
#include "ringsteer/token.h"

#define MEMBERS_MAX 64
#define WARMUP_ROUNDS 10
#define IO_TIMEOUT_S 5
#define TOKEN_TTL_S 3600

enum variant { PLAIN, TLS, MTLS, N_VARIANTS };

/* One gateway under test and what was measured on it. */
struct target {
	const char *label;
	char gateway_id[RS_ID_MAX + 1]; /* its certificate must name it; its ACCEPT names it */
	struct sockaddr_storage addr;   /* its peer endpoint */
	socklen_t addr_len;
	/* The client contexts: none in plaintext, one without a client
	 * certificate for TLS, one per member (its certificate) for mTLS. */
	SSL_CTX *ctx[MEMBERS_MAX];
	size_t n_ctx;
	double *us; /* connect-to-ACCEPT of each counted attach */
	size_t n;
};

/* A connection: the socket, and the TLS session on it (NULL in plaintext). */
struct link {
	int fd;
	SSL *ssl;
};

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Parses "ID@ADDR:PORT" into t.  Returns 0 or -EINVAL. */
static int parse_target(const char *arg, struct target *t)
{
	const char *at = strchr(arg, '@');
	size_t id_len = at ? (size_t)(at - arg) : 0;

	if (!at || id_len == 0 || id_len > RS_ID_MAX)
		return -EINVAL;
	memcpy(t->gateway_id, arg, id_len);
	t->gateway_id[id_len] = '\0';
	if (!rs_proto_member_id_ok(t->gateway_id))
		return -EINVAL;
	return rs_endpoint_parse(at + 1, &t->addr, &t->addr_len);
}

static void link_close(struct link *l)
{
	if (l->ssl) {
		SSL_shutdown(l->ssl); /* close_notify, without waiting for the peer's */
		SSL_free(l->ssl);
		l->ssl = NULL;
	}
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
	ERR_clear_error();
}

/* Connects to t (blocking, every read and write bounded by IO_TIMEOUT_S)
 * and, with ctx, completes a TLS handshake that requires the server's
 * certificate to name t's gateway id.  On failure *l is left closed. */
static int link_open(const struct target *t, SSL_CTX *ctx, struct link *l, char *why, size_t why_len)
{
	const struct timeval tv = { .tv_sec = IO_TIMEOUT_S };
	int rc;

	l->ssl = NULL;
	l->fd = socket(t->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l->fd < 0) {
		rc = -errno;
		snprintf(why, why_len, "socket: %s", strerror(errno));
		goto fail;
	}
	/* As the reference supervisor does: no Nagle wait behind the TLS
	 * Finished for the HELLO. */
	if (setsockopt(l->fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int)) < 0 ||
	    setsockopt(l->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    setsockopt(l->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
	    connect(l->fd, (const struct sockaddr *)&t->addr, t->addr_len) < 0) {
		rc = -errno;
		snprintf(why, why_len, "connect: %s", strerror(errno));
		goto fail;
	}
	if (!ctx)
		return 0;
	l->ssl = SSL_new(ctx);
	if (!l->ssl || rs_tls_expect_name(l->ssl, t->gateway_id) != 0 ||
	    SSL_set_tlsext_host_name(l->ssl, t->gateway_id) != 1 || SSL_set_fd(l->ssl, l->fd) != 1) {
		rc = -ENOMEM;
		snprintf(why, why_len, "cannot set up the TLS session");
		goto fail;
	}
	if (SSL_connect(l->ssl) != 1) {
		rs_tls_describe_failure(l->ssl, ERR_peek_error(), why, why_len);
		rc = -EPROTO;
		goto fail;
	}
	return 0;
fail:
	link_close(l);
	return rc;
}

/* Reads up to len bytes; > 0 read, else the link failed (EOF, timeout). */
static ssize_t link_read(struct link *l, uint8_t *buf, size_t len)
{
	if (l->ssl) {
		int n = SSL_read(l->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);

		return n > 0 ? n : -1;
	}
	return read(l->fd, buf, len);
}

static int link_write_all(struct link *l, const uint8_t *buf, size_t len)
{
	if (l->ssl)
		return len <= INT32_MAX && SSL_write(l->ssl, buf, (int)len) == (int)len ? 0 : -EIO;
	while (len > 0) {
		ssize_t n = send(l->fd, buf, len, MSG_NOSIGNAL);

		if (n <= 0)
			return -EIO;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static int send_frame(struct link *l, const struct rs_frame *f)
{
	uint8_t buf[RS_FRAME_V1_MAX];
	size_t len;

	if (rs_frame_encode(f, buf, sizeof(buf), &len))
		return -EINVAL;
	return link_write_all(l, buf, len);
}

/* Reads exactly one frame: its length field first, then no more than it
 * announced; a frame larger than any version-1 frame is refused unread. */
static int read_frame(struct link *l, struct rs_frame *f)
{
	uint8_t buf[RS_FRAME_V1_MAX];
	size_t have = 0, need = 4, total, used;
	int err;

	while (have < need) {
		ssize_t n = link_read(l, buf + have, need - have);

		if (n <= 0)
			return -EIO;
		have += (size_t)n;
		if (have == 4 && need == 4) {
			if ((err = rs_frame_size(buf, have, &total)) != 0)
				return err;
			if (total > sizeof(buf))
				return -EMSGSIZE;
			need = total;
		}
	}
	err = rs_frame_decode(buf, have, f, &used);
	if (err)
		return err;
	return used == have ? 0 : -EPROTO;
}

/* One attach: connect, handshake, HELLO, ACCEPT; *us is the time from
 * before connect() to the ACCEPT decoded.  Then GOODBYE and close, not
 * timed.  Returns 0, or a negative errno with why saying what happened. */
static int attach(const struct target *t, SSL_CTX *ctx, const char *member, const char *token, uint64_t epoch,
		  double *us, char *why, size_t why_len)
{
	struct rs_frame hello = { .version = RS_PROTO_VERSION, .type = RS_FRAME_HELLO };
	struct rs_frame answer;
	struct link l = { .fd = -1 };
	double t0;
	int rc;

	snprintf(hello.u.hello.member_id, sizeof(hello.u.hello.member_id), "%s", member);
	snprintf(hello.u.hello.instance_id, sizeof(hello.u.hello.instance_id), "bench-tls-cost");
	snprintf(hello.u.hello.token, sizeof(hello.u.hello.token), "%s", token);
	hello.u.hello.epoch = epoch;
	hello.u.hello.sandboxes = 1;

	t0 = now_us();
	if ((rc = link_open(t, ctx, &l, why, why_len)) != 0)
		goto cleanup;
	if ((rc = send_frame(&l, &hello)) != 0) {
		snprintf(why, why_len, "sending HELLO failed");
		goto cleanup;
	}
	if ((rc = read_frame(&l, &answer)) != 0) {
		snprintf(why, why_len, "no answer to HELLO (%s)", strerror(-rc));
		goto cleanup;
	}
	*us = now_us() - t0;
	if (answer.type == RS_FRAME_REJECT) {
		snprintf(why, why_len, "REJECT %u: %.400s", answer.u.reject.code, answer.u.reject.text);
		rc = -EPERM;
		goto cleanup;
	}
	if (answer.type != RS_FRAME_ACCEPT || strcmp(answer.u.accept.gateway_id, t->gateway_id) != 0) {
		snprintf(why, why_len, "%s instead of ACCEPT from %s", rs_frame_type_name(answer.type), t->gateway_id);
		rc = -EPROTO;
		goto cleanup;
	}
	send_frame(&l, &(struct rs_frame){ .version = RS_PROTO_VERSION, .type = RS_FRAME_GOODBYE,
					   .u.goodbye.reason = RS_GOODBYE_CLOSING });
cleanup:
	link_close(&l);
	return rc;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The p-quantile (0 < p <= 1) of sorted v[0..n), nearest rank. */
static double quantile(const double *v, size_t n, double p)
{
	size_t rank = (size_t)(p * (double)n);

	if (rank < p * (double)n)
		rank++; /* ceil, without libm */
	if (n == 0)
		return 0;
	return v[rank == 0 ? 0 : (rank > n ? n : rank) - 1];
}

struct summary {
	double median, p90, p99, per_s;
};

static void summarize(struct target *t, struct summary *s)
{
	double sum = 0;

	qsort(t->us, t->n, sizeof(*t->us), cmp_double);
	for (size_t i = 0; i < t->n; i++)
		sum += t->us[i];
	s->median = quantile(t->us, t->n, 0.5);
	s->p90 = quantile(t->us, t->n, 0.9);
	s->p99 = quantile(t->us, t->n, 0.99);
	s->per_s = sum > 0 ? (double)t->n * 1e6 / sum : 0;
}

/* Builds t's client contexts from dir: none for PLAIN, the CA alone for
 * TLS, the CA and member k's certificate for each k under MTLS. */
static int load_contexts(struct target *t, enum variant v, const char *dir, int members)
{
	char ca[4096], cert[4096], key[4096], why[512] = "";
	struct rs_tls_files files = { .ca = ca };

	if (v == PLAIN)
		return 0;
	snprintf(ca, sizeof(ca), "%s/ca.crt", dir);
	t->n_ctx = v == TLS ? 1 : (size_t)members;
	for (size_t k = 0; k < t->n_ctx; k++) {
		if (v == MTLS) {
			snprintf(cert, sizeof(cert), "%s/bench-%zu.crt", dir, k + 1);
			snprintf(key, sizeof(key), "%s/bench-%zu.key", dir, k + 1);
			files.cert = cert;
			files.key = key;
		}
		if (rs_tls_client_ctx(&files, &t->ctx[k], why, sizeof(why)) != 0) {
			fprintf(stderr, "tls_cost: %s: %s\n", t->label, why);
			return -EINVAL;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct target targets[N_VARIANTS] = { [PLAIN] = { .label = "plaintext" },
					      [TLS] = { .label = "TLS" },
					      [MTLS] = { .label = "mTLS" } };
	struct summary s[N_VARIANTS];
	char (*tokens)[RS_TOKEN_MAX + 1] = NULL;
	struct rs_secret secret;
	struct timespec wall;
	uint64_t epoch0, seq = 0;
	int members, rounds, rc = 1;

	members = argc == 8 ? atoi(argv[3]) : 0;
	rounds = argc == 8 ? atoi(argv[4]) : 0;
	if (argc != 8 || members <= 0 || members > MEMBERS_MAX || rounds <= 0 ||
	    parse_target(argv[5], &targets[PLAIN]) || parse_target(argv[6], &targets[TLS]) ||
	    parse_target(argv[7], &targets[MTLS])) {
		fprintf(stderr, "usage: tls_cost SECRET_FILE TLS_DIR MEMBERS(1..%d) ROUNDS PLAIN TLS MTLS\n"
				"  (PLAIN, TLS, MTLS: GATEWAY_ID@ADDR:PORT, each gateway's peer endpoint)\n",
			MEMBERS_MAX);
		return 2;
	}
	if (rs_secret_load(argv[1], &secret)) {
		fprintf(stderr, "tls_cost: cannot load the secret %s\n", argv[1]);
		return 2;
	}
	/* A write to a connection the gateway closed must fail, not kill us. */
	signal(SIGPIPE, SIG_IGN);

	tokens = calloc((size_t)members, sizeof(*tokens));
	if (!tokens)
		goto cleanup;
	for (int k = 0; k < members; k++) {
		char member[32];

		snprintf(member, sizeof(member), "bench-%d", k + 1);
		if (rs_token_mint(&secret, member, (uint64_t)time(NULL) + TOKEN_TTL_S, tokens[k], sizeof(tokens[k]))) {
			fprintf(stderr, "tls_cost: cannot mint a token for %s\n", member);
			goto cleanup;
		}
	}
	for (int v = 0; v < N_VARIANTS; v++) {
		targets[v].us = calloc((size_t)rounds, sizeof(*targets[v].us));
		if (!targets[v].us || load_contexts(&targets[v], (enum variant)v, argv[2], members))
			goto cleanup;
	}

	clock_gettime(CLOCK_REALTIME, &wall);
	epoch0 = (uint64_t)wall.tv_sec * 1000000u + (uint64_t)wall.tv_nsec / 1000u;
	for (int r = 0; r < WARMUP_ROUNDS + rounds; r++) {
		for (int v = 0; v < N_VARIANTS; v++) {
			struct target *t = &targets[v];
			size_t k = seq % (size_t)members;
			char member[32], why[512] = "";
			SSL_CTX *ctx = t->n_ctx == 0 ? NULL : t->ctx[t->n_ctx == 1 ? 0 : k];
			double us = 0;

			snprintf(member, sizeof(member), "bench-%zu", k + 1);
			if (attach(t, ctx, member, tokens[k], epoch0 + seq, &us, why, sizeof(why)) != 0) {
				fprintf(stderr, "tls_cost: %s attach %d of %s to %s failed: %s\n", t->label, r + 1, member,
					t->gateway_id, why);
				goto cleanup;
			}
			seq++;
			if (r >= WARMUP_ROUNDS)
				t->us[t->n++] = us;
		}
	}

	for (int v = 0; v < N_VARIANTS; v++)
		summarize(&targets[v], &s[v]);
	printf("connect-to-ACCEPT at a gateway's peer endpoint (--no-placement), %d attaches per variant "
	       "(interleaved, after %d warm-up rounds), full handshake each:\n",
	       rounds, WARMUP_ROUNDS);
	for (int v = 0; v < N_VARIANTS; v++)
		printf("  %-9s (%s): median %.0f us, p90 %.0f us, p99 %.0f us, %.0f attaches/s\n", targets[v].label,
		       targets[v].gateway_id, s[v].median, s[v].p90, s[v].p99, s[v].per_s);
	printf("TLS/plaintext: median x%.2f, attaches/s x%.2f; mTLS/plaintext: median x%.2f, attaches/s x%.2f\n",
	       s[TLS].median / s[PLAIN].median, s[TLS].per_s / s[PLAIN].per_s, s[MTLS].median / s[PLAIN].median,
	       s[MTLS].per_s / s[PLAIN].per_s);
	rc = 0;
cleanup:
	for (int v = 0; v < N_VARIANTS; v++) {
		for (size_t k = 0; k < targets[v].n_ctx; k++)
			SSL_CTX_free(targets[v].ctx[k]);
		free(targets[v].us);
	}
	free(tokens);
	return rc;
}
