/* SPDX-License-Identifier: Apache-2.0 */
/* client.c - the supervisor's I/O around its member core
 * (include/ringsteer/member_core.h), which owns every transition: which
 * endpoint to dial and why, HELLO and its flags, what a frame or a failure
 * leads to, the backoff, the refresh, the heartbeat and the deadlines.
 * Here: sockets and bufferevents (TLS or plain), the trust check of a
 * target learned from the wire, the token file, the node agent, one timer
 * set to the core's next wake, and the log lines the core's events make.
 *
 * Trust (tls_trust.c): a target learned from the wire (a REDIRECT's, or the
 * last gateway's peer endpoint from ACCEPT) is dialed only if it is
 * allowed: under TLS its certificate must name that gateway's id, in
 * plaintext its address must lie inside --redirect-allow.  A refused
 * target is reported to the core (dial answers -EACCES, or the link fails
 * RS_MC_FAIL_REFUSED), which counts it and handles it as a failed dial of
 * its kind.
 *
 * A Service given by name (--service NAME:PORT) is looked up again at each
 * Service dial, off the loop, and its answers tried in turn
 * (service_name.c); a numeric one is dialed as it is. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>

#include "proto/proto_event.h"
#include "tls/tls.h"
#include "util/bev_io.h"
#include "util/endpoint.h"
#include "util/logfmt.h"
#include "util/mstime.h"
#include "util/small_file.h"
#include "ringsteer/token.h"
#include "supervisor.h"

struct rs_mc_time sup_now(void)
{
	return (struct rs_mc_time){ .mono_ms = rs_mono_ms(), .wall_ms = rs_wall_ms() };
}

void sup_settle(struct supervisor *s)
{
	int64_t at = s->mc ? rs_mc_next_wake(s->mc) : -1, now = rs_mono_ms();
	struct timeval tv;

	evtimer_del(s->wake_ev);
	if (at < 0)
		return;
	tv = rs_ms_timeval(at > now ? (uint64_t)(at - now) : 0);
	evtimer_add(s->wake_ev, &tv);
}

void sup_link_free(struct sup_link *l)
{
	if (l->lookup)
		rs_resolve_cancel(l->lookup);
	if (l->bev)
		bufferevent_free(l->bev);
	if (l->answer_timer)
		event_free(l->answer_timer);
	free(l->answers);
	free(l);
}

static void on_read(struct bufferevent *bev, void *arg)
{
	struct sup_link *l = arg;
	struct supervisor *s = l->s;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t len = evbuffer_get_length(in), used = 0;
	const uint8_t *buf = evbuffer_pullup(in, -1);

	if (!buf && len > 0)
		return;
	if (rs_mc_link_recv(s->mc, l->core, buf, len, &used, sup_now()) == 0)
		evbuffer_drain(in, used);
	sup_settle(s);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	struct sup_link *l = arg;
	struct supervisor *s = l->s;
	struct rs_mc_link *core = l->core;
	enum rs_mc_fail fail = RS_MC_FAIL_CONNECT;
	char why[256];
	bool refused = false;

	if ((what & BEV_EVENT_CONNECTED) && s->tls &&
	    rs_tls_check_resumed(bufferevent_openssl_get_ssl(bev), l->name) != 0) {
		/* Never taken while sessions are offered only to names their
		 * certificates carry (tls_resume.c); here so that a resumed link
		 * is never trusted on less than a full handshake's check. */
		snprintf(why, sizeof(why), "resumed session's certificate does not name %.200s", l->name);
		fail = RS_MC_FAIL_REFUSED;
		goto failed;
	}
	if (what & BEV_EVENT_CONNECTED) { /* TCP, and under TLS the handshake */
		if (l->answer_timer)
			evtimer_del(l->answer_timer); /* the core's answer deadline from here */
		free(l->answers); /* connected: a failure from now on is the link's, not an answer's */
		l->answers = NULL;
		rs_mc_link_connected(s->mc, core, sup_now());
		sup_settle(s);
		return;
	}
	rs_tls_bev_failure(bev, why, sizeof(why), &refused);
	if (refused)
		fail = RS_MC_FAIL_REFUSED;
	if (what & BEV_EVENT_EOF)
		snprintf(why, sizeof(why), "closed");
failed:
	if (sup_next_answer(l, why))
		return; /* the Service's next address is being tried */
	sup_link_free(l);
	rs_mc_link_failed(s->mc, core, fail, why, sup_now());
	sup_settle(s);
}

static int open_socket(struct supervisor *s, const struct sockaddr_storage *to)
{
	struct sockaddr_storage src;
	socklen_t src_len;
	int fd = socket(to->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	/* Small frames that wait for answers (HELLO after the TLS Finished):
	 * no Nagle delay behind an unacknowledged segment. */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
	if (s->cfg.bind) {
		if (rs_address_parse(s->cfg.bind, &src, &src_len) || src.ss_family != to->ss_family) {
			close(fd);
			return -EAFNOSUPPORT;
		}
		if (bind(fd, (struct sockaddr *)&src, src_len) < 0) {
			int err = -errno;

			close(fd);
			return err;
		}
	}
	return fd;
}

int sup_link_connect(struct sup_link *l, const struct sockaddr_storage *to, socklen_t to_len, const char **why)
{
	struct supervisor *s = l->s;
	int fd = open_socket(s, to);

	if (fd < 0) {
		*why = "bad source address";
		return fd;
	}
	l->bev = sup_tls_bufferevent(s, fd, l->name); /* on failure it has closed fd */
	if (!l->bev) {
		*why = "no bufferevent";
		return -ENOMEM;
	}
	bufferevent_setwatermark(l->bev, EV_READ, 0, RS_FRAME_MAX + RS_FRAME_HEADER);
	bufferevent_setcb(l->bev, on_read, NULL, on_event, l);
	bufferevent_enable(l->bev, EV_READ | EV_WRITE);
	if (bufferevent_socket_connect(l->bev, (const struct sockaddr *)to, (int)to_len) < 0) {
		bufferevent_free(l->bev);
		l->bev = NULL;
		*why = "connect failed";
		return -ECONNREFUSED;
	}
	return 0;
}

static int core_dial(void *user, struct rs_mc_link *core, const struct rs_mc_dial *d, void **link_user,
		     const char **why)
{
	struct supervisor *s = user;
	struct sockaddr_storage to;
	socklen_t to_len;
	struct sup_link *l;
	bool by_name;
	int err;

	sup_tls_watch(s);
	if (d->token_expired)
		(void)sup_load_token(s); /* an operator may have put a fresh one in place */
	if (d->via == RS_MC_VIA_SERVICE)
		sup_agent_register(s); /* before the connect, which the node's programs then steer */
	by_name = d->via == RS_MC_VIA_SERVICE && s->resolver && rs_endpoint_is_name(d->endpoint);
	if (!by_name && rs_endpoint_parse(d->endpoint, &to, &to_len)) {
		*why = "not a numeric ADDR:PORT";
		return -EACCES;
	}
	if (d->via != RS_MC_VIA_SERVICE && !sup_target_allowed(s, &to)) {
		*why = "outside --redirect-allow";
		return -EACCES;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->s = s;
	l->core = core;
	snprintf(l->name, sizeof(l->name), "%s", d->gateway);
	if (by_name) {
		err = sup_service_by_name(s, l, d->endpoint);
		if (err) {
			sup_link_free(l);
			*why = "could not start the lookup";
			return err;
		}
		*link_user = l;
		return RS_MC_DIAL_QUEUED;
	}
	err = sup_link_connect(l, &to, to_len, why);
	if (err) {
		sup_link_free(l);
		return err;
	}
	*link_user = l;
	return 0;
}

static void core_send(void *user, void *link_user, const struct rs_frame *f)
{
	struct supervisor *s = user;
	struct sup_link *l = link_user;

	if (l->bev && rs_proto_write(bufferevent_get_output(l->bev), f) != 0)
		rs_log(stderr, "error", s->who, "event", "encode_failed", "type", rs_frame_type_name(f->type), NULL);
}

static void core_close(void *user, void *link_user)
{
	struct sup_link *l = link_user;

	(void)user;
	if (l->bev)
		(void)rs_bev_write_now(l->bev); /* best effort: a GOODBYE the core queued */
	sup_link_free(l);
}

static void log_event(void *user, const struct rs_mc_event *e)
{
	struct supervisor *s = user;
	const char *via = rs_mc_via_name(e->via), *stay = e->stay ? "1" : "0";
	char n1[24], n2[24];

	switch (e->type) {
	case RS_MC_EV_DIALING:
		rs_log(stderr, "info", s->who, "event", "dialing", "via", via, "endpoint", e->endpoint, "stay", stay, NULL);
		break;
	case RS_MC_EV_ATTACHED:
		snprintf(n1, sizeof(n1), "%llu", (unsigned long long)e->epoch);
		rs_log(stderr, "info", s->who, "event", "attached", "gateway", e->gateway, "via", via, "stay", stay,
		       "epoch", n1, NULL);
		break;
	case RS_MC_EV_REDIRECTED:
		rs_log(stderr, "info", s->who, "event", "redirected", "target", e->gateway, "peer", e->peer, "reason",
		       e->drain ? "drain" : "placement", NULL);
		break;
	case RS_MC_EV_REJECTED:
		snprintf(n1, sizeof(n1), "%u", e->code);
		snprintf(n2, sizeof(n2), "%llu", (unsigned long long)e->ms);
		rs_log(stderr, "warn", s->who, "event", "rejected", "code", n1, "retry_after_ms", n2, "text", e->text, NULL);
		break;
	case RS_MC_EV_GOODBYE:
		rs_log(stderr, "info", s->who, "event", "goodbye", "reason",
		       e->code == RS_GOODBYE_SUPERSEDED ? "superseded" : e->code == RS_GOODBYE_SHUTDOWN ? "shutdown" : "closing",
		       "text", e->text, NULL);
		break;
	case RS_MC_EV_DIAL_FAILED:
		rs_log(stderr, "warn", s->who, "event", "dial_failed", "via", via, "endpoint", e->endpoint, "error", e->text,
		       NULL);
		break;
	case RS_MC_EV_TARGET_REFUSED:
		snprintf(n1, sizeof(n1), "%llu", (unsigned long long)e->ms);
		rs_log(stderr, "warn", s->who, "event", "target_refused", "via", via, "endpoint", e->endpoint, "gateway",
		       e->gateway, "error", e->text, "refused_total", n1, NULL);
		break;
	case RS_MC_EV_DISCONNECTED:
		rs_log(stderr, "info", s->who, "event", "disconnected", "gateway", e->gateway, "error", e->text, NULL);
		break;
	case RS_MC_EV_RETRY:
		snprintf(n1, sizeof(n1), "%llu", (unsigned long long)e->ms);
		rs_log(stderr, "info", s->who, "event", "retry", "in_ms", n1, "stay", stay, NULL);
		break;
	case RS_MC_EV_TOKEN:
		snprintf(n1, sizeof(n1), "%llu", (unsigned long long)e->expiry);
		rs_log(stderr, "info", s->who, "event", "token_refreshed", "expiry", n1, NULL);
		break;
	case RS_MC_EV_HEARTBEAT:
		sup_tls_watch(s);
		sup_agent_register(s); /* an agent that came back steers our next Service dial */
		break;
	case RS_MC_EV_UNEXPECTED:
		rs_log(stderr, "warn", s->who, "event", "unexpected_frame", "type", rs_frame_type_name((uint8_t)e->code),
		       NULL);
		break;
	case RS_MC_EV_COUNT:
		break;
	}
}

const struct rs_mc_callbacks sup_core_callbacks = {
	.dial = core_dial,
	.send = core_send,
	.close = core_close,
	.event = log_event,
};

void sup_on_wake(evutil_socket_t fd, short what, void *arg)
{
	struct supervisor *s = arg;

	(void)fd;
	(void)what;
	rs_mc_tick(s->mc, sup_now());
	sup_settle(s);
}

int sup_load_token(struct supervisor *s)
{
	char buf[RS_TOKEN_MAX + 1];
	uint64_t expiry;
	size_t n;
	int err = rs_read_small_file(s->cfg.token_file, buf, sizeof(buf), &n);

	if (err)
		return err;
	if (n == 0 || rs_token_expiry(buf, &expiry) != 0)
		return -EINVAL;
	return rs_mc_set_token(s->mc, buf, expiry, sup_now());
}
