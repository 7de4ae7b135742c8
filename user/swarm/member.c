/* SPDX-License-Identifier: Apache-2.0 */
/* member.c - one swarm member's connection logic: the reference
 * supervisor's (user/supervisor/client.c), transition for transition, over
 * compact state.  It dials the Service; a REDIRECT sends it at once to the
 * named peer asking to stay (STAY|REDIRECTED); a lost link is redialed at
 * its last gateway asking to stay; a failed redirect falls back to the
 * Service asking to stay (the second in a row before an attach backs off);
 * a failed redial falls back to the Service without; Service failures back
 * off (rs_retry_delay_ms, shared with the supervisor) with a REJECT's
 * retry_after_ms as a floor.  Token refresh and drain redirects are
 * make-before-break: the attached link stays until the new one is
 * accepted.  A target learned from the wire is dialed only if allowed (TLS:
 * its certificate must name the gateway; plaintext: inside
 * --redirect-allow).
 *
 * What differs, on purpose: a dial waits for a slot when --concurrency
 * dials are in progress (dial_queue.c); a member whose dial waits counts as
 * having a link being set up, as the supervisor's pending link would; the
 * three timers of a supervisor (retry, refresh, heartbeat) are one event
 * set to the earliest deadline; an expired token is minted again from the
 * secret where the supervisor re-reads its token file; nothing is logged
 * per member but failures (rate limited). */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "ringsteer/backoff.h"
#include "util/bev_io.h"
#include "util/endpoint.h"
#include "util/mstime.h"
#include "proto/proto_event.h"
#include "tls/tls.h"
#include "swarm.h"

enum link_state {
	LINK_CONNECTING,
	LINK_HELLO_SENT,
	LINK_ATTACHED,
};

struct swarm_link {
	struct swarm *sw;
	struct swarm_member *m;
	struct bufferevent *bev;
	uint64_t epoch;
	uint16_t gw;         /* the gateway entry it reached (SWARM_NO_GW: the Service, until ACCEPT) */
	uint8_t state, via;
	bool stay;
	bool in_progress;    /* holds a dial slot: connecting or awaiting the answer */
	bool counted;        /* counted attached (swarm and gateway totals) */
	bool superseded;     /* the gateway closed it for our newer link, which it accepted */
};

static void member_dial(struct swarm *sw, struct swarm_member *m, enum swarm_via via, uint16_t gw, bool stay);

uint64_t swarm_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

uint64_t swarm_gap_max_us(const struct swarm *sw)
{
	uint64_t now = swarm_now_us(), max = swarm_gap_longest(&sw->gaps, 0, now);

	for (uint32_t i = 0; sw->members && i < sw->cfg.count; i++) {
		uint64_t g = swarm_gap_longest(&sw->gaps, sw->members[i].lost_at_us, now);

		if (g > max)
			max = g;
	}
	return max;
}

static void member_id(const struct swarm *sw, const struct swarm_member *m, char *out, size_t cap)
{
	snprintf(out, cap, "%s%u", sw->cfg.prefix, m->number);
}

/* A dial is under way: a link connecting or waiting for its slot (what the
 * supervisor's pending link stands for). */
static bool has_pending(const struct swarm_member *m)
{
	return m->pending || m->want_dial;
}

/* Sets m's one timer to its earliest deadline. */
static void arm(struct swarm_member *m)
{
	uint64_t at = 0, now;
	struct timeval tv;

	if (m->retry_at && (!at || m->retry_at < at))
		at = m->retry_at;
	if (m->refresh_at && (!at || m->refresh_at < at))
		at = m->refresh_at;
	if (m->beat_at && (!at || m->beat_at < at))
		at = m->beat_at;
	evtimer_del(m->timer);
	if (!at)
		return;
	now = (uint64_t)rs_mono_ms();
	tv = rs_ms_timeval(at > now ? at - now : 0);
	evtimer_add(m->timer, &tv);
}

/* Whether freeing l (already unlinked from m) leaves m in a gap: it had a
 * session and now has none attached.  Not while stopping (the swarm's own
 * GOODBYEs), and not when the gateway superseded l for a newer link of ours
 * still awaiting its ACCEPT here: the gateway accepted that link before it
 * closed this one (make before break), the frames just crossed; should that
 * link fail after all, its freeing opens the gap then. */
static bool leaves_gap(const struct swarm_link *l, const struct swarm_member *m)
{
	if (l->sw->stopping || !m->ever_attached || m->active)
		return false;
	return !(l->superseded && m->pending);
}

static void link_free(struct swarm_link *l)
{
	struct swarm *sw = l->sw;
	struct swarm_member *m = l->m;

	if (l->in_progress)
		swarm_dial_release(sw);
	if (l->counted) {
		if (l->gw != SWARM_NO_GW)
			sw->gateways[l->gw].attached--;
		sw->attached--;
	}
	if (m->active == l)
		m->active = NULL;
	if (m->pending == l)
		m->pending = NULL;
	if (leaves_gap(l, m))
		swarm_gap_open(&m->lost_at_us, swarm_now_us());
	bufferevent_free(l->bev);
	free(l);
}

static void send_frame(struct swarm_link *l, const struct rs_frame *f)
{
	if (rs_proto_write(bufferevent_get_output(l->bev), f) != 0)
		swarm_failure(l->sw, l->m, FAIL_BAD_FRAME, "encode_failed", rs_frame_type_name(f->type));
}

static void say_goodbye_and_free(struct swarm_link *l)
{
	struct rs_frame f = { .version = RS_PROTO_VERSION, .type = RS_FRAME_GOODBYE };

	f.u.goodbye.reason = RS_GOODBYE_CLOSING;
	send_frame(l, &f);
	(void)rs_bev_write_now(l->bev); /* best effort: the link is freed now */
	link_free(l);
}

static void retry_after(struct swarm *sw, struct swarm_member *m, bool stay, uint32_t floor_ms)
{
	m->retry_stay = stay;
	m->retry_at = (uint64_t)rs_mono_ms() + rs_retry_delay_ms(&m->backoff_ms, floor_ms, &sw->rng);
	arm(m);
}

static void retry_later(struct swarm *sw, struct swarm_member *m, bool stay)
{
	retry_after(sw, m, stay, 0);
}

/* A redirect or redial that did not happen: back to the Service, asking to
 * stay after a redirect; a second failed redirect since the last attach
 * backs off instead (the Service may redirect it to the same unreachable
 * target again). */
static void back_to_service(struct swarm *sw, struct swarm_member *m, enum swarm_via via)
{
	if (via == VIA_REDIRECT) {
		if (m->redirects_failed < UINT8_MAX)
			m->redirects_failed++;
		if (m->redirects_failed >= 2) {
			retry_later(sw, m, true);
			return;
		}
	}
	member_dial(sw, m, VIA_SERVICE, SWARM_NO_GW, via == VIA_REDIRECT);
}

/* What a failed or refused link leads to; floor_ms: a REJECT's hint. */
static void link_refused(struct swarm_link *l, enum swarm_failure why, const char *detail, uint32_t floor_ms)
{
	struct swarm *sw = l->sw;
	struct swarm_member *m = l->m;
	enum swarm_via via = l->via;
	bool stay = l->stay;

	swarm_failure(sw, m, why, "dial_failed", detail);
	link_free(l);
	if (floor_ms > 0 && via != VIA_SERVICE) {
		retry_after(sw, m, via == VIA_REDIRECT || via == VIA_REFRESH || m->active, floor_ms);
		return;
	}
	switch (via) {
	case VIA_REDIRECT:
	case VIA_REDIAL:
		back_to_service(sw, m, via);
		break;
	case VIA_REFRESH:
		retry_later(sw, m, true); /* still attached on the old link */
		break;
	case VIA_SERVICE:
		if (!m->active)
			retry_after(sw, m, stay, floor_ms);
		break;
	}
}

static void link_failed(struct swarm_link *l, enum swarm_failure why, const char *detail)
{
	link_refused(l, why, detail, 0);
}

/* A target learned from the wire was refused: a refused refresh is not
 * retried (the attached link carries on). */
static void target_refused(struct swarm *sw, struct swarm_member *m, enum swarm_via via, const char *detail)
{
	swarm_failure(sw, m, FAIL_TARGET_REFUSED, "target_refused", detail);
	switch (via) {
	case VIA_REDIRECT:
	case VIA_REDIAL:
		back_to_service(sw, m, via);
		break;
	case VIA_REFRESH:
	case VIA_SERVICE:
		if (!m->active)
			retry_later(sw, m, true);
		break;
	}
}

static void schedule_refresh(struct swarm *sw, struct swarm_member *m)
{
	uint64_t now = (uint64_t)rs_wall_ms(), expiry = m->token_expiry * 1000;

	m->refresh_at = 0;
	if (expiry > now)
		m->refresh_at = (uint64_t)rs_mono_ms() + rs_refresh_delay_ms(expiry - now, &sw->rng);
	arm(m);
}

/* Mints m a token valid --token-ttl from now.  Returns 0 or -errno. */
static int mint_token(struct swarm *sw, struct swarm_member *m)
{
	char id[RS_ID_MAX + 1], token[RS_TOKEN_MAX + 1], *copy;
	uint64_t expiry = (uint64_t)rs_wall_ms() / 1000 + sw->cfg.token_ttl_s;
	int err;

	member_id(sw, m, id, sizeof(id));
	err = rs_token_mint(&sw->secret, id, expiry, token, sizeof(token));
	if (err)
		return err;
	copy = strdup(token);
	if (!copy)
		return -ENOMEM;
	free(m->token);
	m->token = copy;
	m->token_expiry = expiry;
	schedule_refresh(sw, m);
	return 0;
}

static void send_sandboxes(struct swarm *sw, struct swarm_member *m)
{
	struct rs_frame f = { .version = RS_PROTO_VERSION, .type = RS_FRAME_SANDBOXES };

	if (!m->active)
		return;
	f.u.sandboxes = sw->cfg.sandboxes;
	send_frame(m->active, &f);
}

static void attached(struct swarm_link *l, const struct rs_accept *acc)
{
	struct swarm *sw = l->sw;
	struct swarm_member *m = l->m;
	struct swarm_link *old = m->active != l ? m->active : NULL;
	struct timeval idle;

	m->pending = NULL;
	m->active = l;
	l->state = LINK_ATTACHED;
	if (l->in_progress) {
		l->in_progress = false;
		swarm_dial_release(sw);
	}
	m->backoff_ms = 0;
	m->redirects_failed = 0;
	m->retry_at = 0;
	l->gw = swarm_gateway_intern(sw, acc->gateway_id, acc->peer);
	m->last_gw = l->gw;
	m->heartbeat_ms = acc->heartbeat_ms ? acc->heartbeat_ms : 5000;
	m->ever_attached = true;
	swarm_gap_close(&sw->gaps, &m->lost_at_us, swarm_now_us());
	/* Make before break: the new link is in; now the old one goes. */
	if (old)
		say_goodbye_and_free(old);
	l->counted = true;
	sw->attached++;
	if (l->gw != SWARM_NO_GW)
		sw->gateways[l->gw].attached++;
	idle = rs_ms_timeval(3ULL * m->heartbeat_ms);
	bufferevent_set_timeouts(l->bev, &idle, NULL);
	m->beat_at = (uint64_t)rs_mono_ms() + m->heartbeat_ms;
	arm(m);
	send_sandboxes(sw, m);
	if (sw->all_attached_ms < 0 && sw->attached == sw->cfg.count) {
		sw->all_attached_ms = (int64_t)((uint64_t)rs_mono_ms() - sw->started_ms);
		swarm_summary(sw, "all_attached");
	}
}

static void on_token(struct swarm *sw, struct swarm_member *m, const struct rs_token_frame *t)
{
	char *copy = strdup(t->token);

	if (!copy) {
		swarm_failure(sw, m, FAIL_BAD_FRAME, "token_dropped", "out of memory");
		return;
	}
	free(m->token);
	m->token = copy;
	m->token_expiry = t->expiry;
	schedule_refresh(sw, m);
	/* Redial our gateway with the new token, asking to stay; the old link
	 * stays until the new one is accepted. */
	member_dial(sw, m, VIA_REFRESH, m->last_gw, true);
}

/* Handles a frame on link l; returns false when l was freed. */
static bool on_frame(struct swarm_link *l, const struct rs_frame *f)
{
	struct swarm *sw = l->sw;
	struct swarm_member *m = l->m;

	switch (f->type) {
	case RS_FRAME_ACCEPT:
		if (l->state != LINK_HELLO_SENT)
			break;
		attached(l, &f->u.accept);
		return true;
	case RS_FRAME_REDIRECT: {
		bool keep = l->state == LINK_ATTACHED;
		uint16_t target = swarm_gateway_intern(sw, f->u.redirect.gateway_id, f->u.redirect.peer);

		sw->redirects++;
		/* An attached link (a drain) stays until the target accepts us. */
		if (!keep)
			link_free(l);
		member_dial(sw, m, VIA_REDIRECT, target, true);
		return keep;
	}
	case RS_FRAME_REJECT: {
		char detail[RS_TEXT_MAX + 48];

		snprintf(detail, sizeof(detail), "code %u retry_after_ms %u: %s", f->u.reject.code,
			 f->u.reject.retry_after_ms, f->u.reject.text);
		link_refused(l, FAIL_REJECTED, detail, f->u.reject.retry_after_ms);
		return false;
	}
	case RS_FRAME_HEARTBEAT:
		return true;
	case RS_FRAME_TOKEN:
		if (l->state == LINK_ATTACHED) {
			on_token(sw, m, &f->u.token);
			return true;
		}
		break;
	case RS_FRAME_GOODBYE:
		if (l->state != LINK_ATTACHED) {
			link_failed(l, FAIL_GOODBYE, f->u.goodbye.text);
		} else if (f->u.goodbye.reason == RS_GOODBYE_SUPERSEDED) {
			l->superseded = true;
			link_free(l); /* our newer link took over */
		} else {
			/* The gateway is going away: let the rule place us. */
			link_free(l);
			if (!m->active && !has_pending(m))
				member_dial(sw, m, VIA_SERVICE, SWARM_NO_GW, false);
		}
		return false;
	default:
		break;
	}
	swarm_failure(sw, m, FAIL_BAD_FRAME, "unexpected_frame", rs_frame_type_name(f->type));
	return true;
}

static void on_read(struct bufferevent *bev, void *arg)
{
	struct swarm_link *l = arg;
	struct evbuffer *in = bufferevent_get_input(bev);

	/* Bounded: each turn takes one whole frame off a buffer the read
	 * watermark keeps to one largest frame. */
	for (;;) {
		struct rs_frame f;
		int err = rs_proto_read(in, &f);

		if (err == -EAGAIN)
			return;
		if (err) {
			if (l->state == LINK_ATTACHED) {
				struct swarm *sw = l->sw;
				struct swarm_member *m = l->m;

				swarm_failure(sw, m, FAIL_BAD_FRAME, "bad_frame", strerror(-err));
				link_free(l);
				member_dial(sw, m, VIA_REDIAL, m->last_gw, true);
			} else {
				link_failed(l, FAIL_BAD_FRAME, strerror(-err));
			}
			return;
		}
		if (!on_frame(l, &f))
			return;
	}
}

static void send_hello(struct swarm_link *l)
{
	struct swarm *sw = l->sw;
	struct swarm_member *m = l->m;
	struct rs_frame f = { .version = RS_PROTO_VERSION, .type = RS_FRAME_HELLO };
	struct timeval wait = rs_ms_timeval(sw->cfg.dial_timeout_ms);

	l->epoch = sw->next_epoch++;
	member_id(sw, m, f.u.hello.member_id, sizeof(f.u.hello.member_id));
	snprintf(f.u.hello.instance_id, sizeof(f.u.hello.instance_id), "%s-%u", sw->instance, m->number);
	f.u.hello.epoch = l->epoch;
	f.u.hello.flags = (uint8_t)((l->stay ? RS_HELLO_STAY : 0) | (l->via == VIA_REDIRECT ? RS_HELLO_REDIRECTED : 0));
	snprintf(f.u.hello.token, sizeof(f.u.hello.token), "%s", m->token ? m->token : "");
	f.u.hello.sandboxes = sw->cfg.sandboxes;
	send_frame(l, &f);
	l->state = LINK_HELLO_SENT;
	bufferevent_set_timeouts(l->bev, &wait, NULL); /* the answer is due within the dial timeout */
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	struct swarm_link *l = arg;
	struct swarm *sw = l->sw;
	struct swarm_member *m = l->m;

	if (what & BEV_EVENT_CONNECTED) { /* TCP, and under TLS the handshake */
		send_hello(l);
		return;
	}
	if (l->state != LINK_ATTACHED) {
		char why[256];
		bool refused;

		rs_tls_bev_failure(bev, why, sizeof(why), &refused);
		if (what & BEV_EVENT_TIMEOUT) {
			link_failed(l, FAIL_TIMEOUT, "timeout");
			return;
		}
		if (refused && l->via != VIA_SERVICE) {
			enum swarm_via via = l->via;

			link_free(l);
			target_refused(sw, m, via, why);
			return;
		}
		link_failed(l, refused ? FAIL_TLS : FAIL_CONNECT, why);
		return;
	}
	/* The attached link broke: a blip.  Redial our gateway asking to stay. */
	swarm_failure(sw, m, FAIL_DISCONNECTED, "disconnected", what & BEV_EVENT_TIMEOUT ? "timeout" : "closed");
	link_free(l);
	if (!has_pending(m))
		member_dial(sw, m, VIA_REDIAL, m->last_gw, true);
}

static int open_socket(struct swarm *sw, struct swarm_member *m, const struct sockaddr_storage *to)
{
	struct sockaddr_storage src;
	socklen_t src_len;
	int fd = socket(to->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
	if (sw->cfg.bind.family) {
		if (rs_cidr_nth(&sw->cfg.bind, m->number, &src, &src_len) || src.ss_family != to->ss_family) {
			close(fd);
			return -EAFNOSUPPORT;
		}
		/* The port is chosen at connect, by the whole 4-tuple: members
		 * sharing a source address (the prefix wrapped) do not use up
		 * the ephemeral ports at bind time. */
		(void)setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &(int){ 1 }, sizeof(int));
		if (bind(fd, (struct sockaddr *)&src, src_len) < 0) {
			int err = -errno;

			close(fd);
			return err;
		}
	}
	return fd;
}

void swarm_member_dial_now(struct swarm *sw, struct swarm_member *m)
{
	enum swarm_via via = (enum swarm_via)m->want_via;
	bool stay = m->want_stay;
	const char *endpoint = sw->cfg.service, *name = sw->service_name;
	struct timeval wait = rs_ms_timeval(sw->cfg.dial_timeout_ms);
	struct sockaddr_storage to;
	struct swarm_link *l;
	socklen_t to_len;
	int fd;

	m->want_dial = false;
	if (via != VIA_SERVICE) {
		if (m->want_gw == SWARM_NO_GW) {
			swarm_dial_release(sw);
			target_refused(sw, m, via, "no gateway to dial (the gateway table is full)");
			return;
		}
		endpoint = sw->gateways[m->want_gw].peer;
		name = sw->gateways[m->want_gw].id;
	}
	if (rs_endpoint_parse(endpoint, &to, &to_len)) {
		swarm_dial_release(sw);
		target_refused(sw, m, via, "not a numeric ADDR:PORT");
		return;
	}
	if (via != VIA_SERVICE && !sw->tls &&
	    !rs_cidr_list_contains(sw->cfg.allow, sw->cfg.n_allow, (const struct sockaddr *)&to)) {
		swarm_dial_release(sw);
		target_refused(sw, m, via, "outside --redirect-allow");
		return;
	}
	l = calloc(1, sizeof(*l));
	fd = l ? open_socket(sw, m, &to) : -ENOMEM;
	if (fd < 0) {
		free(l);
		swarm_dial_release(sw);
		swarm_failure(sw, m, FAIL_SOURCE, "dial_failed", strerror(-fd));
		retry_later(sw, m, stay);
		return;
	}
	l->bev = rs_tls_client_bufferevent(sw->base, sw->tls, fd, name); /* on failure it has closed fd */
	if (!l->bev) {
		free(l);
		swarm_dial_release(sw);
		swarm_failure(sw, m, FAIL_TLS, "dial_failed", "no bufferevent");
		retry_later(sw, m, stay);
		return;
	}
	l->sw = sw;
	l->m = m;
	l->via = (uint8_t)via;
	l->stay = stay;
	l->gw = via == VIA_SERVICE ? SWARM_NO_GW : m->want_gw;
	l->in_progress = true; /* the slot the caller took is the link's now */
	l->state = LINK_CONNECTING;
	m->pending = l;
	bufferevent_setwatermark(l->bev, EV_READ, 0, RS_FRAME_MAX + RS_FRAME_HEADER);
	bufferevent_setcb(l->bev, on_read, NULL, on_event, l);
	bufferevent_set_timeouts(l->bev, &wait, &wait);
	bufferevent_enable(l->bev, EV_READ | EV_WRITE);
	if (bufferevent_socket_connect(l->bev, (struct sockaddr *)&to, (int)to_len) < 0)
		link_failed(l, FAIL_CONNECT, "connect failed");
}

/* As sup_dial: replaces any link being set up, cancels the retry, then
 * dials now if a slot is free, else waits in line for one. */
static void member_dial(struct swarm *sw, struct swarm_member *m, enum swarm_via via, uint16_t gw, bool stay)
{
	if (sw->stopping)
		return;
	if (m->pending)
		link_free(m->pending);
	m->want_dial = false;
	m->retry_at = 0;
	arm(m);
	if (via == VIA_SERVICE && m->token_expiry * 1000 <= (uint64_t)rs_wall_ms() && mint_token(sw, m) != 0)
		swarm_failure(sw, m, FAIL_SOURCE, "token_failed", "could not mint a token");
	m->want_via = (uint8_t)via;
	m->want_gw = gw;
	m->want_stay = stay;
	m->want_dial = true;
	if (swarm_dial_slot(sw))
		swarm_member_dial_now(sw, m);
	else
		swarm_dial_enqueue(sw, m, via != VIA_SERVICE);
}

/* The supervisor's retry timer: a failed refresh redial retries at the
 * gateway while attached, else the Service. */
static void on_retry(struct swarm *sw, struct swarm_member *m)
{
	if (m->active && !m->retry_stay)
		return;
	if (m->active)
		member_dial(sw, m, VIA_REFRESH, m->last_gw, true);
	else
		member_dial(sw, m, VIA_SERVICE, SWARM_NO_GW, m->retry_stay);
}

static void on_refresh(struct swarm *sw, struct swarm_member *m)
{
	if (!m->active) {
		schedule_refresh(sw, m); /* try again when attached; a Service dial mints anew */
		return;
	}
	send_frame(m->active, &(struct rs_frame){ .version = RS_PROTO_VERSION, .type = RS_FRAME_REFRESH });
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct swarm_member *m = arg;
	struct swarm *sw = m->sw;
	uint64_t now = (uint64_t)rs_mono_ms();

	(void)fd;
	(void)what;
	if (m->beat_at && m->beat_at <= now) {
		m->beat_at = now + m->heartbeat_ms; /* it keeps beating, as the supervisor's persistent event */
		if (m->active)
			send_frame(m->active, &(struct rs_frame){ .version = RS_PROTO_VERSION, .type = RS_FRAME_HEARTBEAT });
	}
	if (m->refresh_at && m->refresh_at <= now) {
		m->refresh_at = 0;
		on_refresh(sw, m);
	}
	if (m->retry_at && m->retry_at <= now) {
		m->retry_at = 0;
		on_retry(sw, m);
	}
	arm(m);
}

int swarm_member_start(struct swarm *sw, struct swarm_member *m, uint32_t number)
{
	int err;

	m->sw = sw;
	m->number = number;
	m->last_gw = SWARM_NO_GW;
	m->want_gw = SWARM_NO_GW;
	m->timer = evtimer_new(sw->base, on_timer, m);
	if (!m->timer)
		return -ENOMEM;
	err = mint_token(sw, m);
	if (err)
		return err;
	member_dial(sw, m, VIA_SERVICE, SWARM_NO_GW, false);
	return 0;
}

void swarm_member_stop(struct swarm_member *m)
{
	m->want_dial = false;
	if (m->pending)
		link_free(m->pending);
	if (m->active)
		say_goodbye_and_free(m->active);
	if (m->timer)
		event_free(m->timer);
	m->timer = NULL;
	free(m->token);
	m->token = NULL;
}
