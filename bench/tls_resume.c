/* SPDX-License-Identifier: Apache-2.0 */
/* tls_resume.c - what shared session-ticket keys (--tls-ticket-keys) save
 * on a handoff: connect-to-ACCEPT of one supervisor HELLO at a gateway's
 * peer endpoint over TLS 1.3, three ways, taking turns attach by attach
 * (after a few warm-up rounds), so that drift in the machine weighs on all
 * alike:
 *   full, no tickets   at a gateway without --tls-ticket-keys: today's
 *                      attach, the baseline
 *   full, tickets on   at a gateway with --tls-ticket-keys, no session
 *                      offered: what the ticket costs the attach (the
 *                      gateway builds it after writing the ACCEPT: before
 *                      it, OpenSSL 3.0's re-decoding of the session made
 *                      an mTLS attach about 10% slower)
 *   resumed handoff    at gateway B, offering the session that the same
 *                      member's full attach at A (untimed, its ticket
 *                      read after the ACCEPT; A and B share the keyring)
 *                      has just left: a handoff from A to B
 * The server's certificate is verified and must name the gateway dialled,
 * as a redirected supervisor's must; A's and B's certificates name both
 * (a session is offered only to a name its certificate names).  With
 * "mtls" each member presents its certificate (TLS_DIR/bench-K.crt), as a
 * supervisor does to gateways given --tls-ca; each member has its own
 * contexts and its own kept session either way.  The
 * gateways run with --no-placement, so every HELLO is accepted where it
 * lands.  Prints median, p90 and p99 and attaches per second of each, the
 * ratios against the baseline, and how many "resumed" attaches resumed
 * (all must; exits 1 otherwise, or if any attach fails).
 *
 * Each variant has its own gateway and its own members (member m serves
 * variant m % 3: MEMBERS a multiple of 3), so that every gateway keeps the
 * same share of the members' rows and the placement cap, which --no-
 * placement does not lift, never redirects one.
 *
 * usage: tls_resume SECRET_FILE TLS_DIR MEMBERS ROUNDS BASE FULL A B [mtls]
 *   TLS_DIR  holds ca.crt (and for mtls bench-K.{crt,key}, K in 1..MEMBERS)
 *   BASE, FULL, A, B  each GATEWAY_ID@ADDR:PORT (the peer endpoint) */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <fcntl.h>
#include <poll.h>
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

enum variant { BASE, FULL, RESUMED, N_VARIANTS };

/* One variant: the gateway it dials and what was measured. */
struct target {
	const char *label;
	char gateway_id[RS_ID_MAX + 1]; /* its certificate must name it; its ACCEPT names it */
	struct sockaddr_storage addr;   /* its peer endpoint */
	socklen_t addr_len;
	double *us; /* connect-to-ACCEPT of each counted attach */
	size_t n;
};

/* A connection: the socket, and the TLS session on it. */
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
 * and completes a TLS handshake under ctx that requires the server's
 * certificate to name t's gateway id, offering the kept session when
 * offer.  On failure *l is left closed. */
static int link_open(const struct target *t, SSL_CTX *ctx, bool offer, struct link *l, char *why, size_t why_len)
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
	l->ssl = SSL_new(ctx);
	if (!l->ssl || rs_tls_expect_name(l->ssl, t->gateway_id) != 0 ||
	    SSL_set_tlsext_host_name(l->ssl, t->gateway_id) != 1 || SSL_set_fd(l->ssl, l->fd) != 1) {
		rc = -ENOMEM;
		snprintf(why, why_len, "cannot set up the TLS session");
		goto fail;
	}
	/* The supervisor's rule (rs_tls_client_bufferevent): the kept
	 * session, if its certificate names the gateway dialled. */
	if (offer)
		(void)rs_tls_resume_offer(l->ssl, t->gateway_id);
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
/* After the ACCEPT: the session ticket, which the gateway sends once the
 * ACCEPT is written, read until kept holds it (at most IO_TIMEOUT_S).  Not
 * timed: a supervisor's bufferevent reads it whenever it comes. */
static int await_ticket(struct link *l, const struct rs_tls_resume *kept)
{
	struct pollfd pfd = { .fd = l->fd, .events = POLLIN };
	uint8_t buf[64];
	int flags = fcntl(l->fd, F_GETFL);

	if (flags < 0 || fcntl(l->fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return -errno;
	while (!kept->last) {
		int n;

		if (poll(&pfd, 1, IO_TIMEOUT_S * 1000) != 1)
			return -ETIMEDOUT;
		n = SSL_read(l->ssl, buf, sizeof(buf));
		if (n <= 0 && SSL_get_error(l->ssl, n) != SSL_ERROR_WANT_READ)
			return -EIO;
	}
	ERR_clear_error();
	return fcntl(l->fd, F_SETFL, flags) < 0 ? -errno : 0;
}

static int attach(const struct target *t, SSL_CTX *ctx, bool offer, const struct rs_tls_resume *wait_ticket,
		  const char *member, const char *token, uint64_t epoch, double *us, bool *resumed, char *why,
		  size_t why_len)
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
	if ((rc = link_open(t, ctx, offer, &l, why, why_len)) != 0)
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
	*resumed = SSL_session_reused(l.ssl) == 1;
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
	if (wait_ticket && (rc = await_ticket(&l, wait_ticket)) != 0) {
		snprintf(why, why_len, "no session ticket after the ACCEPT (%s)", strerror(-rc));
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

int main(int argc, char **argv)
{
	struct target targets[N_VARIANTS] = { [BASE] = { .label = "full, no tickets" },
					      [FULL] = { .label = "full, tickets on" },
					      [RESUMED] = { .label = "resumed handoff" } };
	struct target a = { .label = "A" };
	static struct rs_tls_resume kept[MEMBERS_MAX];
	static SSL_CTX *plain_ctx[MEMBERS_MAX], *resume_ctx[MEMBERS_MAX];
	char ca[4096], cert[4096], key[4096];
	struct rs_tls_files files = { .ca = ca };
	bool mtls;
	struct summary s[N_VARIANTS];
	char (*tokens)[RS_TOKEN_MAX + 1] = NULL;
	struct rs_secret secret;
	struct timespec wall;
	uint64_t epoch0, seq = 0;
	size_t resumed_n = 0, resumed_base = 0, resumed_full = 0;
	char why[512] = "";
	int members, rounds, rc = 1;

	mtls = argc == 10 && strcmp(argv[9], "mtls") == 0;
	members = argc == 9 || mtls ? atoi(argv[3]) : 0;
	rounds = argc == 9 || mtls ? atoi(argv[4]) : 0;
	if (!(argc == 9 || mtls) || members <= 0 || members > MEMBERS_MAX || members % N_VARIANTS != 0 || rounds <= 0 ||
	    parse_target(argv[5], &targets[BASE]) || parse_target(argv[6], &targets[FULL]) ||
	    parse_target(argv[7], &a) || parse_target(argv[8], &targets[RESUMED])) {
		fprintf(stderr, "usage: tls_resume SECRET_FILE TLS_DIR MEMBERS(3..%d, a multiple of 3) ROUNDS BASE FULL A B [mtls]\n"
				"  (BASE, FULL, A, B: GATEWAY_ID@ADDR:PORT, each gateway's peer endpoint)\n",
			MEMBERS_MAX);
		return 2;
	}
	if (rs_secret_load(argv[1], &secret)) {
		fprintf(stderr, "tls_resume: cannot load the secret %s\n", argv[1]);
		return 2;
	}
	/* A write to a connection the gateway closed must fail, not kill us. */
	signal(SIGPIPE, SIG_IGN);
	snprintf(ca, sizeof(ca), "%s/ca.crt", argv[2]);
	for (int k = 0; k < members; k++) {
		if (mtls) {
			snprintf(cert, sizeof(cert), "%s/bench-%d.crt", argv[2], k + 1);
			snprintf(key, sizeof(key), "%s/bench-%d.key", argv[2], k + 1);
			files.cert = cert;
			files.key = key;
		}
		if (rs_tls_client_ctx(&files, &plain_ctx[k], why, sizeof(why)) != 0 ||
		    rs_tls_client_ctx(&files, &resume_ctx[k], why, sizeof(why)) != 0) {
			fprintf(stderr, "tls_resume: %s\n", why);
			goto cleanup;
		}
		if (rs_tls_resume_attach(resume_ctx[k], &kept[k]) != 0)
			goto cleanup;
	}

	tokens = calloc((size_t)members, sizeof(*tokens));
	if (!tokens)
		goto cleanup;
	for (int k = 0; k < members; k++) {
		char member[32];

		snprintf(member, sizeof(member), "bench-%d", k + 1);
		if (rs_token_mint(&secret, member, (uint64_t)time(NULL) + TOKEN_TTL_S, tokens[k], sizeof(tokens[k]))) {
			fprintf(stderr, "tls_resume: cannot mint a token for %s\n", member);
			goto cleanup;
		}
	}
	for (int v = 0; v < N_VARIANTS; v++) {
		targets[v].us = calloc((size_t)rounds, sizeof(*targets[v].us));
		if (!targets[v].us)
			goto cleanup;
	}

	clock_gettime(CLOCK_REALTIME, &wall);
	epoch0 = (uint64_t)wall.tv_sec * 1000000u + (uint64_t)wall.tv_nsec / 1000u;
	for (int r = 0; r < WARMUP_ROUNDS + rounds; r++) {
		for (int v = 0; v < N_VARIANTS; v++) {
			struct target *t = &targets[v];
			size_t k = ((size_t)r * N_VARIANTS + (size_t)v) % (size_t)members;
			char member[32];
			double us = 0;
			bool resumed = false;

			snprintf(member, sizeof(member), "bench-%zu", k + 1);
			if (v == RESUMED) {
				/* The member's attach at A, untimed: a full handshake
				 * (nothing offered) whose ticket is kept. */
				rs_tls_resume_forget(&kept[k]);
				if (attach(&a, resume_ctx[k], false, &kept[k], member, tokens[k], epoch0 + seq, &us, &resumed, why,
					   sizeof(why)) != 0) {
					fprintf(stderr, "tls_resume: attach at A (%s) failed: %s\n", a.gateway_id, why);
					goto cleanup;
				}
				seq++;
				if (!kept[k].last) {
					fprintf(stderr, "tls_resume: A (%s) sent no session ticket\n", a.gateway_id);
					goto cleanup;
				}
			}
			if (attach(t, v == RESUMED ? resume_ctx[k] : plain_ctx[k], v == RESUMED, NULL, member, tokens[k],
				   epoch0 + seq, &us, &resumed, why, sizeof(why)) != 0) {
				fprintf(stderr, "tls_resume: %s attach %d of %s to %s failed: %s\n", t->label, r + 1,
					member, t->gateway_id, why);
				goto cleanup;
			}
			seq++;
			if (r < WARMUP_ROUNDS)
				continue;
			t->us[t->n++] = us;
			if (resumed)
				*(v == RESUMED ? &resumed_n : v == BASE ? &resumed_base : &resumed_full) += 1;
		}
	}

	for (int v = 0; v < N_VARIANTS; v++)
		summarize(&targets[v], &s[v]);
	printf("connect-to-ACCEPT over TLS 1.3%s at a gateway's peer endpoint (--no-placement), %d attaches per "
	       "variant (interleaved, after %d warm-up rounds):\n",
	       mtls ? " with client certificates (mTLS)" : "", rounds, WARMUP_ROUNDS);
	for (int v = 0; v < N_VARIANTS; v++)
		printf("  %-17s (%s): median %.0f us, p90 %.0f us, p99 %.0f us, %.0f attaches/s\n", targets[v].label,
		       targets[v].gateway_id, s[v].median, s[v].p90, s[v].p99, s[v].per_s);
	printf("against full, no tickets: tickets on median x%.2f, attaches/s x%.2f; resumed median x%.2f, "
	       "attaches/s x%.2f\n",
	       s[FULL].median / s[BASE].median, s[FULL].per_s / s[BASE].per_s, s[RESUMED].median / s[BASE].median,
	       s[RESUMED].per_s / s[BASE].per_s);
	printf("resumed: %zu of %d handoffs (full variants: %zu, %zu)\n", resumed_n, rounds, resumed_base,
	       resumed_full);
	rc = resumed_n == (size_t)rounds && resumed_base == 0 && resumed_full == 0 ? 0 : 1;
cleanup:
	for (int v = 0; v < N_VARIANTS; v++)
		free(targets[v].us);
	for (int k = 0; k < MEMBERS_MAX; k++) {
		rs_tls_resume_forget(&kept[k]);
		SSL_CTX_free(plain_ctx[k]);
		SSL_CTX_free(resume_ctx[k]);
	}
	free(tokens);
	return rc;
}
