/* SPDX-License-Identifier: Apache-2.0 */
/* client.c - the supervisor's connection logic.
 *
 * It dials the Service; a REDIRECT sends it at once to the named peer
 * endpoint asking to stay; a lost link is redialed at its last gateway
 * asking to stay; a failed redirect falls back to the Service asking to
 * stay; a failed redial falls back to the Service without (its gateway may
 * be gone, and the rule must place it).  Service failures back off 1 s
 * doubling to 30 s with +-20% jitter; a redirect is dialed at once, and so
 * is the Service after its first failure, but a redirect that fails again
 * before an attach backs off too (back_to_service).
 * A REJECT's retry_after_ms is a floor on the next attempt, whatever the
 * link was (docs/PROTOCOL.md): a gateway at its session limit, or a
 * redirect target that is, is not dialed again sooner, nor is the Service
 * dialed at once in its place; the jitter is then added above the floor.
 * Token refresh and drain redirects are make-before-break: the attached
 * link stays until the new one is accepted.
 *
 * Trust (tls_trust.c): a target learned from the wire (a REDIRECT's, or the
 * last gateway's peer endpoint from ACCEPT) is dialed only if it is
 * allowed: under TLS its certificate must name that gateway's id, in
 * plaintext its address must lie inside --redirect-allow.  A refused
 * target is counted and logged (event=target_refused) and handled as a
 * failed dial of its kind: a redirect falls back to the Service asking to
 * stay, a redial to the Service without, a refresh keeps the old link. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "ringsteer/backoff.h"
#include "util/bev_io.h"
#include "util/endpoint.h"
#include "util/logfmt.h"
#include "util/mstime.h"
#include "proto/proto_event.h"
#include "util/small_file.h"
#include "tls/tls.h"
#include "ringsteer/token.h"
#include "supervisor.h"

enum link_state {
	LINK_CONNECTING,
	LINK_HELLO_SENT,
	LINK_ATTACHED,
};

struct sup_link {
	struct supervisor *s;
	struct bufferevent *bev;
	enum link_state state;
	enum sup_via via;
	bool stay;
	uint64_t epoch;
	char endpoint[RS_ENDPOINT_MAX + 1];
	char name[RS_ID_MAX + 1]; /* the gateway id (or Service name) its certificate must carry */
};

static const char *via_name(enum sup_via via)
{
	static const char *const names[] = { "service", "redirect", "redial", "refresh" };

	return names[via];
}

static void link_free(struct sup_link *l)
{
	struct supervisor *s = l->s;

	if (s->active == l)
		s->active = NULL;
	if (s->pending == l)
		s->pending = NULL;
	bufferevent_free(l->bev);
	free(l);
}

static void send_frame(struct sup_link *l, const struct rs_frame *f)
{
	if (rs_proto_write(bufferevent_get_output(l->bev), f) != 0)
		rs_log(stderr, "error", l->s->who, "event", "encode_failed", "type", rs_frame_type_name(f->type), NULL);
}

static void say_goodbye_and_free(struct sup_link *l)
{
	struct rs_frame f = { .version = RS_PROTO_VERSION, .type = RS_FRAME_GOODBYE };

	f.u.goodbye.reason = RS_GOODBYE_CLOSING;
	send_frame(l, &f);
	(void)rs_bev_write_now(l->bev); /* best effort: the link is freed now */
	link_free(l);
}

/* Schedules a Service dial after the current backoff, then doubles it; not
 * sooner than floor_ms (a REJECT's retry hint, 0 if none), with up to 20%
 * jitter above the floor so that a fleet refused at once does not return
 * at once. */
static void retry_after(struct supervisor *s, bool stay, uint32_t floor_ms)
{
	uint64_t delay = rs_retry_delay_ms(&s->backoff_ms, floor_ms, &s->rng);
	struct timeval tv;
	char ms[24];

	s->retry_stay = stay;
	snprintf(ms, sizeof(ms), "%llu", (unsigned long long)delay);
	rs_log(stderr, "info", s->who, "event", "retry", "in_ms", ms, "stay", stay ? "1" : "0", NULL);
	tv = rs_ms_timeval(delay);
	evtimer_add(s->retry_ev, &tv);
}

static void retry_later(struct supervisor *s, bool stay)
{
	retry_after(s, stay, 0);
}

/* A redirect or redial that did not happen: back to the Service.  After a
 * redirect it asks to stay wherever it lands (the placement that chose an
 * unreachable or refused target would choose it again; a drain redirect
 * keeps its old link meanwhile); after a redial it does not (its gateway
 * may be gone, and the rule must place it). */
static void back_to_service(struct supervisor *s, enum sup_via via)
{
	/* A redirect that failed again since the last attach: the Service
	 * may well redirect us to an unreachable target again (two gateways
	 * killed within one TTL, or a peer endpoint this supervisor cannot
	 * reach, while the landing gateway is at its cap), and going back at
	 * once would spin, a store transaction per turn.  The first failure
	 * goes back at once; repeated ones back off (1 s doubling to 30 s). */
	if (via == VIA_REDIRECT && ++s->redirects_failed >= 2) {
		retry_later(s, true);
		return;
	}
	sup_dial(s, VIA_SERVICE, s->cfg.service, s->service_name, via == VIA_REDIRECT);
}

/* What a failed or refused link leads to; floor_ms is the refusal's retry
 * hint (0: none). */
static void link_refused(struct sup_link *l, const char *why, uint32_t floor_ms)
{
	struct supervisor *s = l->s;
	enum sup_via via = l->via;
	bool stay = l->stay;

	rs_log(stderr, "warn", s->who, "event", "dial_failed", "via", via_name(via), "endpoint", l->endpoint, "error",
	       why, NULL);
	link_free(l);
	if (floor_ms > 0 && via != VIA_SERVICE) {
		/* What would have been dialed at once waits for the hint: the
		 * Service, asking to stay after a redirect (as below), not after
		 * a redial.  Still attached (a drain's target refused us), the
		 * retry goes back through our gateway, which places us again. */
		retry_after(s, via == VIA_REDIRECT || via == VIA_REFRESH || s->active, floor_ms);
		return;
	}
	switch (via) {
	case VIA_REDIRECT:
	case VIA_REDIAL:
		back_to_service(s, via);
		break;
	case VIA_REFRESH:
		/* Still attached on the old link: try again after a backoff. */
		retry_later(s, true);
		break;
	case VIA_SERVICE:
		if (!s->active)
			retry_after(s, stay, floor_ms);
		break;
	}
}

static void link_failed(struct sup_link *l, const char *why)
{
	link_refused(l, why, 0);
}

/* A target learned from the wire was refused (not allowed, or its
 * certificate did not name the gateway): counted, logged, then what a
 * failed dial of the same kind leads to, except that a refused refresh
 * redial is not retried (it would be refused again): the attached link,
 * whose token was checked when it attached, carries on. */
static void target_refused(struct supervisor *s, enum sup_via via, const char *endpoint, const char *name,
			   const char *why)
{
	char total[24];

	s->targets_refused++;
	snprintf(total, sizeof(total), "%llu", (unsigned long long)s->targets_refused);
	rs_log(stderr, "warn", s->who, "event", "target_refused", "via", via_name(via), "endpoint", endpoint,
	       "gateway", name, "error", why, "refused_total", total, NULL);
	switch (via) {
	case VIA_REDIRECT:
	case VIA_REDIAL:
		back_to_service(s, via);
		break;
	case VIA_REFRESH:
	case VIA_SERVICE:
		if (!s->active)
			retry_later(s, true);
		break;
	}
}

static void schedule_refresh(struct supervisor *s)
{
	uint64_t now = (uint64_t)rs_wall_ms(), expiry = s->token_expiry * 1000;
	struct timeval tv;

	evtimer_del(s->refresh_ev);
	if (expiry <= now)
		return;
	tv = rs_ms_timeval(rs_refresh_delay_ms(expiry - now, &s->rng));
	evtimer_add(s->refresh_ev, &tv);
}

static void attached(struct sup_link *l, const struct rs_accept *acc)
{
	struct supervisor *s = l->s;
	struct sup_link *old = s->active != l ? s->active : NULL;
	struct timeval idle, beat;
	char epoch[24];

	s->pending = NULL;
	s->active = l;
	l->state = LINK_ATTACHED;
	s->backoff_ms = 0;
	s->redirects_failed = 0;
	evtimer_del(s->retry_ev);
	snprintf(s->last_gateway, sizeof(s->last_gateway), "%s", acc->gateway_id);
	snprintf(s->last_peer, sizeof(s->last_peer), "%s", acc->peer);
	s->heartbeat_ms = acc->heartbeat_ms ? acc->heartbeat_ms : 5000;
	snprintf(epoch, sizeof(epoch), "%llu", (unsigned long long)l->epoch);
	rs_log(stderr, "info", s->who, "event", "attached", "gateway", acc->gateway_id, "via", via_name(l->via), "stay",
	       l->stay ? "1" : "0", "epoch", epoch, NULL);
	/* Make before break: the new link is in (and logged so, before the old
	 * gateway can log the GOODBYE below); now the old one goes. */
	if (old)
		say_goodbye_and_free(old);
	idle = rs_ms_timeval(3ULL * s->heartbeat_ms);
	bufferevent_set_timeouts(l->bev, &idle, NULL);
	beat = rs_ms_timeval(s->heartbeat_ms);
	event_del(s->heartbeat_ev);
	event_add(s->heartbeat_ev, &beat);
	/* The count may have changed while we were away. */
	sup_send_sandboxes(s);
}

static void on_token(struct supervisor *s, const struct rs_token_frame *t)
{
	char expiry[24];

	snprintf(s->token, sizeof(s->token), "%s", t->token);
	s->token_expiry = t->expiry;
	snprintf(expiry, sizeof(expiry), "%llu", (unsigned long long)t->expiry);
	rs_log(stderr, "info", s->who, "event", "token_refreshed", "expiry", expiry, NULL);
	schedule_refresh(s);
	/* Redial our gateway with the new token, asking to stay; the old link
	 * stays until the new one is accepted. */
	sup_dial(s, VIA_REFRESH, s->last_peer, s->last_gateway, true);
}

/* Handles a frame on link l; returns false when l was freed. */
static bool on_frame(struct sup_link *l, const struct rs_frame *f)
{
	struct supervisor *s = l->s;

	switch (f->type) {
	case RS_FRAME_ACCEPT:
		if (l->state != LINK_HELLO_SENT)
			break;
		attached(l, &f->u.accept);
		return true;
	case RS_FRAME_REDIRECT: {
		bool keep = l->state == LINK_ATTACHED;

		rs_log(stderr, "info", s->who, "event", "redirected", "target", f->u.redirect.gateway_id, "peer",
		       f->u.redirect.peer, "reason", f->u.redirect.reason == RS_REDIRECT_DRAIN ? "drain" : "placement",
		       NULL);
		/* An attached link (a drain) stays until the target accepts us. */
		if (!keep)
			link_free(l);
		sup_dial(s, VIA_REDIRECT, f->u.redirect.peer, f->u.redirect.gateway_id, true);
		return keep;
	}
	case RS_FRAME_REJECT: {
		char code[8], retry[16];

		snprintf(code, sizeof(code), "%u", f->u.reject.code);
		snprintf(retry, sizeof(retry), "%u", f->u.reject.retry_after_ms);
		rs_log(stderr, "warn", s->who, "event", "rejected", "code", code, "retry_after_ms", retry, "text",
		       f->u.reject.text, NULL);
		link_refused(l, "rejected", f->u.reject.retry_after_ms);
		return false;
	}
	case RS_FRAME_HEARTBEAT:
		return true;
	case RS_FRAME_TOKEN:
		if (l->state == LINK_ATTACHED) {
			on_token(s, &f->u.token);
			return true;
		}
		break;
	case RS_FRAME_GOODBYE:
		rs_log(stderr, "info", s->who, "event", "goodbye", "reason",
		       f->u.goodbye.reason == RS_GOODBYE_SUPERSEDED ? "superseded"
		       : f->u.goodbye.reason == RS_GOODBYE_SHUTDOWN ? "shutdown" : "closing",
		       "text", f->u.goodbye.text, NULL);
		if (l->state != LINK_ATTACHED) {
			link_failed(l, "goodbye");
		} else if (f->u.goodbye.reason == RS_GOODBYE_SUPERSEDED) {
			link_free(l); /* our newer link took over */
		} else {
			/* The gateway is going away: let the rule place us. */
			link_free(l);
			if (!s->active && !s->pending)
				sup_dial(s, VIA_SERVICE, s->cfg.service, s->service_name, false);
		}
		return false;
	default:
		break;
	}
	rs_log(stderr, "warn", s->who, "event", "unexpected_frame", "type", rs_frame_type_name(f->type), NULL);
	return true;
}

static void on_read(struct bufferevent *bev, void *arg)
{
	struct sup_link *l = arg;
	struct evbuffer *in = bufferevent_get_input(bev);

	for (;;) {
		struct rs_frame f;
		int err = rs_proto_read(in, &f);

		if (err == -EAGAIN)
			return;
		if (err) {
			rs_log(stderr, "warn", l->s->who, "event", "bad_frame", "endpoint", l->endpoint, "error",
			       strerror(-err), NULL);
			if (l->state == LINK_ATTACHED) {
				struct supervisor *s = l->s;

				link_free(l);
				sup_dial(s, VIA_REDIAL, s->last_peer, s->last_gateway, true);
			} else {
				link_failed(l, "bad frame");
			}
			return;
		}
		if (!on_frame(l, &f))
			return;
	}
}

static void send_hello(struct sup_link *l)
{
	struct supervisor *s = l->s;
	struct rs_frame f = { .version = RS_PROTO_VERSION, .type = RS_FRAME_HELLO };
	struct timeval wait = rs_ms_timeval(s->cfg.dial_timeout_ms);

	l->epoch = s->next_epoch++;
	snprintf(f.u.hello.member_id, sizeof(f.u.hello.member_id), "%s", s->cfg.id);
	snprintf(f.u.hello.instance_id, sizeof(f.u.hello.instance_id), "%s", s->instance_id);
	f.u.hello.epoch = l->epoch;
	f.u.hello.flags = (uint8_t)((l->stay ? RS_HELLO_STAY : 0) | (l->via == VIA_REDIRECT ? RS_HELLO_REDIRECTED : 0));
	snprintf(f.u.hello.token, sizeof(f.u.hello.token), "%s", s->token);
	f.u.hello.sandboxes = s->sandboxes;
	send_frame(l, &f);
	l->state = LINK_HELLO_SENT;
	bufferevent_set_timeouts(l->bev, &wait, NULL); /* the answer is due within the dial timeout */
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	struct sup_link *l = arg;
	struct supervisor *s = l->s;

	if (what & BEV_EVENT_CONNECTED) { /* TCP, and under TLS the handshake */
		send_hello(l);
		return;
	}
	if (l->state != LINK_ATTACHED) {
		char why[256];
		bool refused;

		rs_tls_bev_failure(bev, why, sizeof(why), &refused);
		if (what & BEV_EVENT_TIMEOUT)
			snprintf(why, sizeof(why), "timeout");
		if (refused && l->via != VIA_SERVICE) {
			char endpoint[sizeof(l->endpoint)], name[sizeof(l->name)];
			enum sup_via via = l->via;

			snprintf(endpoint, sizeof(endpoint), "%s", l->endpoint);
			snprintf(name, sizeof(name), "%s", l->name);
			link_free(l);
			target_refused(s, via, endpoint, name, why);
			return;
		}
		link_failed(l, why);
		return;
	}
	/* The attached link broke: a blip.  Redial our gateway asking to stay. */
	rs_log(stderr, "info", s->who, "event", "disconnected", "gateway", s->last_gateway, "error",
	       what & BEV_EVENT_TIMEOUT ? "timeout" : "closed", NULL);
	link_free(l);
	if (!s->pending)
		sup_dial(s, VIA_REDIAL, s->last_peer, s->last_gateway, true);
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

void sup_dial(struct supervisor *s, enum sup_via via, const char *endpoint, const char *name, bool stay)
{
	struct sockaddr_storage to;
	socklen_t to_len;
	struct sup_link *l;
	struct timeval wait = rs_ms_timeval(s->cfg.dial_timeout_ms);
	int fd;

	if (s->pending)
		link_free(s->pending);
	evtimer_del(s->retry_ev);
	sup_tls_watch(s);
	if (via == VIA_SERVICE && s->token_expiry * 1000 <= (uint64_t)rs_wall_ms())
		sup_load_token(s); /* an operator may have put a fresh one in place */
	if (via == VIA_SERVICE)
		sup_agent_register(s); /* before the connect, which the node's programs then steer */
	l = calloc(1, sizeof(*l));
	if (!l) {
		retry_later(s, stay);
		return;
	}
	l->s = s;
	l->via = via;
	l->stay = stay;
	snprintf(l->endpoint, sizeof(l->endpoint), "%s", endpoint);
	snprintf(l->name, sizeof(l->name), "%s", name);
	if (rs_endpoint_parse(endpoint, &to, &to_len)) {
		free(l);
		target_refused(s, via, endpoint, name, "not a numeric ADDR:PORT");
		return;
	}
	if (via != VIA_SERVICE && !sup_target_allowed(s, &to)) {
		free(l);
		target_refused(s, via, endpoint, name, "outside --redirect-allow");
		return;
	}
	fd = open_socket(s, &to);
	if (fd < 0) {
		rs_log(stderr, "warn", s->who, "event", "dial_failed", "via", via_name(via), "endpoint", endpoint,
		       "error", "bad source address", NULL);
		free(l);
		retry_later(s, stay);
		return;
	}
	l->bev = sup_tls_bufferevent(s, fd, name); /* on failure it has closed fd */
	if (!l->bev) {
		free(l);
		retry_later(s, stay);
		return;
	}
	s->pending = l;
	l->state = LINK_CONNECTING;
	bufferevent_setwatermark(l->bev, EV_READ, 0, RS_FRAME_MAX + RS_FRAME_HEADER);
	bufferevent_setcb(l->bev, on_read, NULL, on_event, l);
	bufferevent_set_timeouts(l->bev, &wait, &wait);
	bufferevent_enable(l->bev, EV_READ | EV_WRITE);
	if (bufferevent_socket_connect(l->bev, (struct sockaddr *)&to, (int)to_len) < 0) {
		link_failed(l, "connect failed");
		return;
	}
	rs_log(stderr, "info", s->who, "event", "dialing", "via", via_name(via), "endpoint", endpoint, "stay",
	       stay ? "1" : "0", NULL);
}

void sup_close_all(struct supervisor *s)
{
	if (s->pending)
		link_free(s->pending);
	if (s->active)
		say_goodbye_and_free(s->active);
}

void sup_send_sandboxes(struct supervisor *s)
{
	struct rs_frame f = { .version = RS_PROTO_VERSION, .type = RS_FRAME_SANDBOXES };

	if (!s->active)
		return;
	f.u.sandboxes = s->sandboxes;
	send_frame(s->active, &f);
}

void sup_on_retry(evutil_socket_t fd, short what, void *arg)
{
	struct supervisor *s = arg;

	(void)fd;
	(void)what;
	if (s->active && !s->retry_stay)
		return;
	/* A refresh redial that failed retries at the gateway, else the Service. */
	if (s->active)
		sup_dial(s, VIA_REFRESH, s->last_peer, s->last_gateway, true);
	else
		sup_dial(s, VIA_SERVICE, s->cfg.service, s->service_name, s->retry_stay);
}

void sup_on_refresh(evutil_socket_t fd, short what, void *arg)
{
	struct supervisor *s = arg;

	(void)fd;
	(void)what;
	if (!s->active) {
		schedule_refresh(s); /* try again when attached; the dial reloads the file */
		return;
	}
	send_frame(s->active, &(struct rs_frame){ .version = RS_PROTO_VERSION, .type = RS_FRAME_REFRESH });
}

void sup_on_heartbeat(evutil_socket_t fd, short what, void *arg)
{
	struct supervisor *s = arg;

	(void)fd;
	(void)what;
	sup_tls_watch(s);
	sup_agent_register(s); /* an agent that came back steers our next Service dial */
	if (s->active)
		send_frame(s->active, &(struct rs_frame){ .version = RS_PROTO_VERSION, .type = RS_FRAME_HEARTBEAT });
}

int sup_load_token(struct supervisor *s)
{
	char buf[RS_TOKEN_MAX + 1];
	size_t n;
	int err = rs_read_small_file(s->cfg.token_file, buf, sizeof(buf), &n);

	if (err)
		return err;
	if (n == 0 || rs_token_expiry(buf, &s->token_expiry) != 0)
		return -EINVAL;
	memcpy(s->token, buf, n + 1);
	schedule_refresh(s);
	return 0;
}
