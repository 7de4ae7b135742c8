/* conn.c - one supervisor connection at the gateway: the HELLO deadline,
 * token check, the placement transaction, then sandbox counts, token
 * refresh, departure and drain handoffs (the heartbeat tick is heartbeat.c,
 * claims of degraded sessions claim.c).  Bad input is answered (REJECT
 * where the protocol allows, else a close), logged and counted, and touches
 * nothing but its own connection.  Input per connection is bounded by the
 * read watermark, so a read callback handles a bounded number of frames.
 *
 * Store unavailable (store_health.c): a serving gateway accepts an arrival
 * where it landed, unrecorded, and claims it when the store answers again;
 * a draining one refuses it (REJECT unavailable), as it never accepts.
 *
 * Limits (issue 9), each refusal counted by reason and logged (rate
 * limited per reason, log_rate.c): a frame announcing more than
 * --max-frame is refused from its length field; a connection beyond
 * --max-unauth-per-source or --max-unauth connections still waiting for
 * HELLO is refused at accept (unauth.c); an arrival that would be attached
 * here beyond --max-sessions is refused with REJECT LIMIT and a retry hint,
 * on every accept path (placement, stay, redirect target, degraded). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "conn.h"
#include "gateway.h"
#include "ringsteer/bev_io.h"
#include "ringsteer/endpoint.h"
#include "ringsteer/logfmt.h"
#include "ringsteer/mstime.h"
#include "ringsteer/proto_event.h"
#include "ringsteer/tls.h"

int64_t gw_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* c is past HELLO and token, or gone: it no longer counts as unauthenticated. */
static void conn_authenticated(struct gw_conn *c)
{
	if (c->unauth)
		gw_unauth_remove(&c->gw->unauth, &c->source_key);
	c->unauth = false;
}

static void conn_free(struct gw_conn *c)
{
	struct gateway *gw = c->gw;

	/* An unrecorded session has no row to end; with the store away a
	 * recorded one's row is left to lapse at its TTL (nobody refreshes it)
	 * rather than cost the loop a store timeout per departure. */
	if (c->attached_once && !c->unrecorded && gw_store_usable(gw)) {
		int err = rs_store_session_end(gw->store, gw->cfg.id, c->member_id, c->epoch);

		gw_store_outcome(gw, err);
		if (err) {
			gw->counters.store_errors++;
			rs_log(stderr, "warn", gw->who, "event", "store_error", "op", "session_end", "member",
			       c->member_id, "error", strerror(-err), NULL);
		}
	}
	conn_authenticated(c);
	if (c->attached_once)
		gw->n_attached--;
	if (c->redirected && !c->handoff_ended)
		gw->counters.handoffs_completed++; /* it left on its own: accepted at the target */
	if (c->prev)
		c->prev->next = c->next;
	else
		gw->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	if (c->timer)
		event_free(c->timer);
	bufferevent_free(c->bev);
	free(c);
}

static void write_done(struct bufferevent *bev, void *arg)
{
	struct gw_conn *c = arg;

	(void)bev;
	if (c->state == CONN_CLOSING)
		conn_free(c);
}

/* Stops reading and frees c once its output is flushed, never before
 * returning: callers up the stack still hold c.  A peer that does not read
 * its last frame is closed anyway after one HELLO deadline, so a closing
 * connection (still counted unauthenticated if it never got past HELLO)
 * cannot be held open by a zero window. */
static void conn_close_after_flush(struct gw_conn *c)
{
	static const struct timeval now = { 0, 0 };
	uint32_t ms = c->gw->cfg.hello_timeout_ms;
	struct timeval cap = rs_ms_timeval(ms);

	c->state = CONN_CLOSING;
	bufferevent_disable(c->bev, EV_READ);
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
		evtimer_add(c->timer, &now);
	else
		evtimer_add(c->timer, &cap);
}

void gw_conn_send(struct gw_conn *c, const struct rs_frame *f)
{
	if (rs_proto_write(bufferevent_get_output(c->bev), f) != 0)
		rs_log(stderr, "error", c->gw->who, "event", "encode_failed", "type", rs_frame_type_name(f->type),
		       "member", c->member_id, NULL);
}

/* The refusals anyone who can connect may cause as fast as they like
 * (nothing authenticated yet): their lines are rate limited.  The others
 * need a valid token, so they come at most once per supervisor attempt
 * and are logged every one. */
static const bool reject_floods[GW_REJECT_COUNT] = {
	[GW_REJECT_BAD_FRAME] = true,       [GW_REJECT_BAD_VERSION] = true,
	[GW_REJECT_BAD_TOKEN] = true,       [GW_REJECT_HELLO_TIMEOUT] = true,
	[GW_REJECT_FRAME_TOO_LARGE] = true, [GW_REJECT_UNAUTH_PER_SOURCE] = true,
	[GW_REJECT_UNAUTH_TOTAL] = true,    [GW_REJECT_TLS_HANDSHAKE] = true,
};

/* Counts a refusal and logs it, one line each unless its reason floods
 * (then the next line logged carries how many were dropped meanwhile). */
static void note_refusal(struct gateway *gw, enum gw_reject why, const char *source, const char *member,
			 const char *text)
{
	uint64_t dropped = 0;
	char n[24];

	gw->counters.rejects[why]++;
	if (reject_floods[why] && !gw_log_rate_allow(&gw->reject_log[why], gw_mono_ms(), &dropped))
		return;
	if (dropped == 0) {
		rs_log(stderr, "warn", gw->who, "event", "reject", "reason", gw_reject_label(why), "source", source,
		       "member", member, "detail", text, NULL);
		return;
	}
	snprintf(n, sizeof(n), "%llu", (unsigned long long)dropped);
	rs_log(stderr, "warn", gw->who, "event", "reject", "reason", gw_reject_label(why), "source", source, "member",
	       member, "detail", text, "suppressed", n, NULL);
}

static void conn_reject_retry(struct gw_conn *c, enum gw_reject why, uint16_t code, uint32_t retry_after_ms,
			      const char *text)
{
	struct rs_frame f = { .version = RS_PROTO_VERSION, .type = RS_FRAME_REJECT };

	note_refusal(c->gw, why, c->source, c->member_id, text);
	f.u.reject.code = code;
	f.u.reject.retry_after_ms = retry_after_ms;
	snprintf(f.u.reject.text, sizeof(f.u.reject.text), "%s", text);
	gw_conn_send(c, &f);
	conn_close_after_flush(c);
}

static void conn_reject(struct gw_conn *c, enum gw_reject why, uint16_t code, const char *text)
{
	conn_reject_retry(c, why, code, 0, text);
}

void gw_conn_goodbye(struct gw_conn *c, uint8_t reason, const char *text)
{
	struct rs_frame f = { .version = RS_PROTO_VERSION, .type = RS_FRAME_GOODBYE };

	f.u.goodbye.reason = reason;
	snprintf(f.u.goodbye.text, sizeof(f.u.goodbye.text), "%s", text);
	gw_conn_send(c, &f);
	conn_close_after_flush(c);
}

void gw_conn_supersede(struct gw_conn *c, const char *why)
{
	c->gw->counters.superseded_closed++;
	rs_log(stderr, "info", c->gw->who, "event", "superseded", "member", c->member_id, "by", why, NULL);
	gw_conn_goodbye(c, RS_GOODBYE_SUPERSEDED, "a newer connection of this member took over");
}

/* Closes other attached connections of the same member with an older
 * epoch: this gateway sees the newer one first-hand. */
static void supersede_local(struct gw_conn *fresh)
{
	struct gw_conn *c = fresh->gw->conns, *next;

	for (; c; c = next) {
		next = c->next;
		if (c != fresh && gw_conn_is_attached(c) && c->epoch < fresh->epoch &&
		    strcmp(c->member_id, fresh->member_id) == 0)
			gw_conn_supersede(c, "local");
	}
}

/* Whether this gateway holds a connection of c's member at epoch or later. */
static bool local_newer(const struct gw_conn *fresh, uint64_t epoch)
{
	for (const struct gw_conn *c = fresh->gw->conns; c; c = c->next)
		if (c != fresh && gw_conn_is_attached(c) && c->epoch >= epoch &&
		    strcmp(c->member_id, fresh->member_id) == 0)
			return true;
	return false;
}

/* Whether attaching c would take this gateway past --max-sessions.  A
 * member already attached here does not add one: its new connection
 * replaces the old (a blip, a token refresh), or is refused as stale. */
static bool sessions_full(const struct gw_conn *fresh)
{
	const struct gateway *gw = fresh->gw;

	if (gw->cfg.max_sessions == 0 || gw->n_attached < gw->cfg.max_sessions)
		return false;
	for (const struct gw_conn *c = gw->conns; c; c = c->next)
		if (c != fresh && gw_conn_is_attached(c) && strcmp(c->member_id, fresh->member_id) == 0)
			return false;
	return true;
}

static void reject_sessions_full(struct gw_conn *c)
{
	char text[64];

	snprintf(text, sizeof(text), "gateway at its session limit (%u)", c->gw->cfg.max_sessions);
	conn_reject_retry(c, GW_REJECT_SESSIONS, RS_REJECT_LIMIT, c->gw->cfg.limit_retry_ms, text);
}

/* The placement transaction attached the member here, but the session
 * limit says no: its row is taken back so that nobody counts it here.  (A
 * failure leaves the row to lapse at its TTL: nothing refreshes it.) */
static void undo_admit(struct gw_conn *c, const struct rs_admit *a)
{
	struct gateway *gw = c->gw;
	int err = rs_store_session_end(gw->store, gw->cfg.id, a->member_id, a->epoch);

	gw_store_outcome(gw, err);
	if (err) {
		gw->counters.store_errors++;
		rs_log(stderr, "warn", gw->who, "event", "store_error", "op", "session_end", "member", a->member_id,
		       "error", strerror(-err), NULL);
	}
}

static void log_decision(struct gw_conn *c, const struct rs_admit *a, bool stay_asked)
{
	char epoch[24], cap[16];

	snprintf(epoch, sizeof(epoch), "%llu", (unsigned long long)a->epoch);
	snprintf(cap, sizeof(cap), "%u", a->decision.cap);
	rs_log(stderr, "info", c->gw->who, "event", "decision", "member", a->member_id, "epoch", epoch, "outcome",
	       a->accepted ? "accept" : "redirect", "reason", rs_reason_name(a->decision.reason), "cap", cap,
	       "target", a->accepted ? c->gw->cfg.id : a->target_id, "stay", stay_asked ? "1" : "0", "source",
	       c->source, NULL);
}

/* Attaches c here: ACCEPT, and any older connection of its member that
 * this gateway holds is closed. */
static void attach(struct gw_conn *c, const struct rs_hello *h)
{
	struct gateway *gw = c->gw;
	struct rs_frame f = { .version = RS_PROTO_VERSION, .type = RS_FRAME_ACCEPT };

	conn_authenticated(c);
	c->state = CONN_ATTACHED;
	c->epoch = h->epoch;
	c->sandboxes = h->sandboxes;
	snprintf(c->instance_id, sizeof(c->instance_id), "%s", h->instance_id);
	c->attached_once = true;
	gw->n_attached++;
	snprintf(f.u.accept.gateway_id, sizeof(f.u.accept.gateway_id), "%s", gw->cfg.id);
	snprintf(f.u.accept.peer, sizeof(f.u.accept.peer), "%s", gw->cfg.advertise_peer);
	f.u.accept.heartbeat_ms = gw->cfg.heartbeat_ms;
	gw_conn_send(c, &f);
	supersede_local(c);
}

/* The placement transaction, unless the store is known to be away (then
 * -EIO at once, *tried false: after one failure only the heartbeat probes
 * it, so a burst of arrivals during an outage does not stall the loop one
 * store timeout each).  Errors are counted and logged here. */
static int admit(struct gw_conn *c, struct rs_admit *a, bool *tried)
{
	struct gateway *gw = c->gw;
	int64_t t0 = gw_mono_ms();
	char ms[24];
	int err;

	*tried = gw_store_usable(gw);
	if (!*tried)
		return -EIO;
	err = rs_store_admit(gw->store, a);
	gw_store_outcome(gw, err);
	if (err && err != -ESTALE) {
		gw->counters.store_errors++;
		snprintf(ms, sizeof(ms), "%lld", (long long)(gw_mono_ms() - t0));
		rs_log(stderr, "error", gw->who, "event", "store_error", "op", "admit", "member", a->member_id, "error",
		       strerror(-err), "ms", ms, NULL);
	}
	return err;
}

/* The store is unavailable: accept c where it landed, without placement
 * (the issue accepts the imbalance this may cause), and record it once the
 * store answers again (claim.c). */
static void accept_degraded(struct gw_conn *c, const struct rs_hello *h, const char *error)
{
	struct gateway *gw = c->gw;
	char epoch[24];

	snprintf(epoch, sizeof(epoch), "%llu", (unsigned long long)h->epoch);
	gw->counters.degraded_accepts++;
	rs_log(stderr, "warn", gw->who, "event", "degraded_accept", "member", h->member_id, "epoch", epoch, "stay",
	       (h->flags & RS_HELLO_STAY) ? "1" : "0", "source", c->source, "error", error, NULL);
	c->unrecorded = true;
	attach(c, h);
}

static void on_hello(struct gw_conn *c, const struct rs_hello *h)
{
	struct gateway *gw = c->gw;
	struct rs_admit a = { 0 };
	struct rs_frame f = { .version = RS_PROTO_VERSION };
	uint64_t expiry;
	bool tried;
	int err;

	snprintf(c->member_id, sizeof(c->member_id), "%s", h->member_id);
	event_del(c->timer);
	err = rs_token_verify(&gw->secret, h->token, h->member_id, (uint64_t)(gw_now_ms() / 1000), &expiry);
	if (err) {
		conn_reject(c, GW_REJECT_BAD_TOKEN, RS_REJECT_BAD_TOKEN,
			    err == -EKEYEXPIRED ? "token expired" : "token invalid for this member");
		return;
	}
	/* mTLS: the token says who may attach, the certificate who is
	 * speaking; both must be the HELLO's member. */
	if (!gw_tls_client_is(c->bev, gw, h->member_id)) {
		conn_reject(c, GW_REJECT_CLIENT_CERT, RS_REJECT_BAD_TOKEN, "client certificate does not name this member");
		return;
	}
	a.gateway_id = gw->cfg.id;
	a.member_id = h->member_id;
	a.instance_id = h->instance_id;
	a.epoch = h->epoch;
	a.stay = (h->flags & RS_HELLO_STAY) || gw->cfg.no_placement;
	a.redirected = h->flags & RS_HELLO_REDIRECTED;
	a.sandboxes = h->sandboxes;
	a.source = c->source;
	a.now_ms = gw_now_ms();
	err = admit(c, &a, &tried);
	if (err == -ESTALE) {
		conn_reject(c, GW_REJECT_SUPERSEDED, RS_REJECT_SUPERSEDED, "a newer epoch of this member is attached");
		return;
	}
	if (err && (!gw_store_unavailable(err) || gw->draining)) {
		conn_reject(c, GW_REJECT_UNAVAILABLE, RS_REJECT_UNAVAILABLE, "placement store unavailable");
		return;
	}
	if (err && local_newer(c, h->epoch)) {
		/* What the store would have said, known first-hand. */
		conn_reject(c, GW_REJECT_SUPERSEDED, RS_REJECT_SUPERSEDED, "a newer epoch of this member is attached");
		return;
	}
	if (err && sessions_full(c)) {
		reject_sessions_full(c);
		return;
	}
	if (err) {
		accept_degraded(c, h, tried ? strerror(-err) : "store down (not tried)");
		return;
	}
	/* Placement (or a stay) chose this gateway, but it is full: the limit
	 * is hard where the placement cap is soft.  The supervisor waits the
	 * hint and comes back through the Service. */
	if (a.accepted && sessions_full(c)) {
		undo_admit(c, &a);
		reject_sessions_full(c);
		return;
	}
	log_decision(c, &a, h->flags & RS_HELLO_STAY);
	gw->counters.owner_fallbacks += a.decision.full;
	if (!a.accepted) {
		gw->counters.redirects_placement++;
		f.type = RS_FRAME_REDIRECT;
		snprintf(f.u.redirect.gateway_id, sizeof(f.u.redirect.gateway_id), "%s", a.target_id);
		snprintf(f.u.redirect.peer, sizeof(f.u.redirect.peer), "%s", a.target_peer);
		f.u.redirect.reason = RS_REDIRECT_PLACEMENT;
		gw_conn_send(c, &f);
		conn_close_after_flush(c);
		return;
	}
	gw->counters.accepts++;
	gw->counters.stays += a.decision.reason == RS_REASON_STAY;
	gw->counters.reserved += a.decision.reason == RS_REASON_RESERVED;
	attach(c, h);
}

static void on_refresh(struct gw_conn *c)
{
	struct gateway *gw = c->gw;
	struct rs_frame f = { .version = RS_PROTO_VERSION, .type = RS_FRAME_TOKEN };
	uint64_t expiry = (uint64_t)(gw_now_ms() / 1000) + gw->cfg.token_ttl_s;

	if (rs_token_mint(&gw->secret, c->member_id, expiry, f.u.token.token, sizeof(f.u.token.token)) != 0) {
		rs_log(stderr, "error", gw->who, "event", "token_mint_failed", "member", c->member_id, NULL);
		return;
	}
	f.u.token.expiry = expiry;
	gw_conn_send(c, &f);
	rs_log(stderr, "info", gw->who, "event", "token_refreshed", "member", c->member_id, NULL);
}

static void on_sandboxes(struct gw_conn *c, uint32_t count)
{
	struct gateway *gw = c->gw;
	char n[16];
	int err;

	c->sandboxes = count;
	snprintf(n, sizeof(n), "%u", count);
	rs_log(stderr, "info", gw->who, "event", "sandboxes", "member", c->member_id, "count", n, NULL);
	/* Unrecorded, or the store away: the claim or the next heartbeat
	 * carries the count. */
	if (c->unrecorded || !gw_store_usable(gw))
		return;
	err = rs_store_session_sandboxes(gw->store, gw->cfg.id, c->member_id, c->epoch, count);
	gw_store_outcome(gw, err);
	if (err && err != -ESTALE) {
		gw->counters.store_errors++;
		rs_log(stderr, "warn", gw->who, "event", "store_error", "op", "sandboxes", "error", strerror(-err), NULL);
	}
}

/* Handles one decoded frame; returns false when c was closed. */
static bool on_frame(struct gw_conn *c, const struct rs_frame *f)
{
	if (c->state == CONN_HELLO) {
		if (f->type != RS_FRAME_HELLO) {
			conn_reject(c, GW_REJECT_BAD_FRAME, RS_REJECT_BAD_FRAME, "expected HELLO");
			return false;
		}
		on_hello(c, &f->u.hello);
		return c->state == CONN_ATTACHED;
	}
	switch (f->type) { /* attached, or being handed off */
	case RS_FRAME_HEARTBEAT:
		return true;
	case RS_FRAME_SANDBOXES:
		on_sandboxes(c, f->u.sandboxes);
		return true;
	case RS_FRAME_REFRESH:
		on_refresh(c);
		return true;
	case RS_FRAME_GOODBYE:
		rs_log(stderr, "info", c->gw->who, "event", "goodbye", "member", c->member_id, NULL);
		conn_close_after_flush(c);
		return false;
	default:
		conn_reject(c, GW_REJECT_BAD_FRAME, RS_REJECT_BAD_FRAME, "unexpected frame");
		return false;
	}
}

static void on_read(struct bufferevent *bev, void *arg)
{
	struct gw_conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);

	while (c->state != CONN_CLOSING) {
		struct rs_frame f;
		uint8_t hdr[4];
		size_t total;
		int err;

		/* Judged from the length field alone, before any of the frame is
		 * buffered; beyond the protocol's own bound it is a bad frame
		 * (below), within it but over ours it is this limit. */
		if (evbuffer_copyout(in, hdr, sizeof(hdr)) == (ev_ssize_t)sizeof(hdr) &&
		    rs_frame_size(hdr, sizeof(hdr), &total) == 0 && total > c->gw->cfg.max_frame) {
			conn_reject(c, GW_REJECT_FRAME_TOO_LARGE, RS_REJECT_BAD_FRAME, "frame too large");
			return;
		}
		err = rs_proto_read(in, &f);

		if (err == -EAGAIN)
			return;
		if (err == -EPROTONOSUPPORT) {
			conn_reject(c, GW_REJECT_BAD_VERSION, RS_REJECT_BAD_VERSION, "unsupported protocol version");
			return;
		}
		if (err == -EMSGSIZE) {
			conn_reject(c, GW_REJECT_BAD_FRAME, RS_REJECT_BAD_FRAME, "frame too large");
			return;
		}
		if (err) {
			/* A bad member id in HELLO is the decoder's -EPROTO too;
			 * it is the same refusal on the wire. */
			conn_reject(c, GW_REJECT_BAD_FRAME, RS_REJECT_BAD_FRAME, "malformed frame");
			return;
		}
		if (!on_frame(c, &f))
			return;
	}
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	struct gw_conn *c = arg;

	if (what & BEV_EVENT_CONNECTED) { /* the TLS handshake is done */
		c->secured = true;
		return;
	}
	if (!c->secured && (what & BEV_EVENT_ERROR)) {
		/* A plaintext client, an unknown CA, no client certificate: the
		 * peer learns it from the TLS alert; we count and log it. */
		char why[256];

		rs_tls_bev_failure(bev, why, sizeof(why), NULL);
		note_refusal(c->gw, GW_REJECT_TLS_HANDSHAKE, c->source, "", why);
		conn_free(c);
		return;
	}
	if (what & BEV_EVENT_TIMEOUT)
		rs_log(stderr, "info", c->gw->who, "event", "idle_timeout", "member", c->member_id, "source", c->source,
		       NULL);
	else if (gw_conn_is_attached(c))
		rs_log(stderr, "info", c->gw->who, "event", "disconnected", "member", c->member_id, NULL);
	conn_free(c);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct gw_conn *c = arg;

	(void)fd;
	(void)what;
	if (c->state == CONN_HELLO && !c->secured) {
		/* The handshake is not done: no frame can be sent, just close. */
		note_refusal(c->gw, GW_REJECT_HELLO_TIMEOUT, c->source, "", "no TLS handshake within the deadline");
		conn_free(c);
	} else if (c->state == CONN_HELLO)
		conn_reject(c, GW_REJECT_HELLO_TIMEOUT, RS_REJECT_HELLO_TIMEOUT, "no HELLO within the deadline");
	else if (c->state == CONN_CLOSING)
		conn_free(c);
}

/* Refuses a connection at accept, before anything is allocated for it:
 * counted, logged (rate limited), told REJECT LIMIT with the retry hint in
 * one non-blocking write (best effort: the socket buffer of a fresh
 * connection takes it), closed.  Under TLS nothing is written: a frame
 * needs a handshake, and a handshake is the cost this limit avoids. */
static void refuse_at_accept(struct gateway *gw, evutil_socket_t fd, enum gw_reject why, const char *source,
			     const char *text)
{
	struct rs_frame f = { .version = RS_PROTO_VERSION, .type = RS_FRAME_REJECT };
	uint8_t buf[RS_FRAME_V1_MAX];
	size_t len;

	note_refusal(gw, why, source, "", text);
	f.u.reject.code = RS_REJECT_LIMIT;
	f.u.reject.retry_after_ms = gw->cfg.limit_retry_ms;
	snprintf(f.u.reject.text, sizeof(f.u.reject.text), "%s", text);
	/* Best effort, unchecked: whether or not it went out, the close is the answer. */
	if (!gw->tls && rs_frame_encode(&f, buf, sizeof(buf), &len) == 0)
		(void)send(fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
	evutil_closesocket(fd);
}

void gw_conn_accept(struct evconnlistener *lst, evutil_socket_t fd, struct sockaddr *sa, int socklen, void *arg)
{
	struct gateway *gw = arg;
	struct gw_conn *c;
	struct timeval hello = rs_ms_timeval(gw->cfg.hello_timeout_ms);
	struct timeval idle = rs_ms_timeval(3ULL * gw->cfg.heartbeat_ms);
	struct gw_unauth_key key = gw_unauth_key_of(sa);
	char source[RS_ENDPOINT_MAX + 1];

	(void)lst;
	(void)socklen;
	if (rs_endpoint_format(sa, source, sizeof(source)) != 0)
		snprintf(source, sizeof(source), "unknown");
	switch (gw_unauth_add(&gw->unauth, &key)) {
	case GW_UNAUTH_PER_SOURCE:
		refuse_at_accept(gw, fd, GW_REJECT_UNAUTH_PER_SOURCE, source,
				 "too many connections from this address waiting for HELLO");
		return;
	case GW_UNAUTH_TOTAL:
		refuse_at_accept(gw, fd, GW_REJECT_UNAUTH_TOTAL, source, "too many connections waiting for HELLO");
		return;
	case GW_UNAUTH_OK:
		break;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		gw_unauth_remove(&gw->unauth, &key);
		evutil_closesocket(fd);
		return;
	}
	c->gw = gw;
	c->state = CONN_HELLO;
	c->source_key = key;
	c->unauth = true;
	snprintf(c->source, sizeof(c->source), "%s", source);
	/* Frames are small and answers wait on them: Nagle would hold an
	 * ACCEPT behind an unacknowledged segment for a delayed ACK. */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
	c->secured = !gw->tls;
	c->bev = gw_tls_bufferevent(gw, fd); /* on failure it has closed fd */
	c->timer = evtimer_new(gw->base, on_timer, c);
	if (!c->bev || !c->timer) {
		if (c->bev)
			bufferevent_free(c->bev);
		if (c->timer)
			event_free(c->timer);
		gw_unauth_remove(&gw->unauth, &key);
		free(c);
		return;
	}
	c->next = gw->conns;
	if (gw->conns)
		gw->conns->prev = c;
	gw->conns = c;
	/* At most one frame and a bit waits in the input buffer: a peer
	 * cannot make us hold (or loop over) more than that. */
	bufferevent_setwatermark(c->bev, EV_READ, 0, gw->cfg.max_frame + RS_FRAME_HEADER);
	bufferevent_setcb(c->bev, on_read, write_done, on_event, c);
	bufferevent_set_timeouts(c->bev, &idle, NULL);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	evtimer_add(c->timer, &hello);
}

void gw_conn_close_all(struct gateway *gw, uint8_t goodbye_reason)
{
	struct gw_conn *c, *next;

	for (c = gw->conns; c; c = next) {
		next = c->next;
		if (gw_conn_is_attached(c)) {
			struct rs_frame f = { .version = RS_PROTO_VERSION, .type = RS_FRAME_GOODBYE };

			f.u.goodbye.reason = goodbye_reason;
			snprintf(f.u.goodbye.text, sizeof(f.u.goodbye.text), "gateway stopping");
			gw_conn_send(c, &f);
			/* Best effort, now: the loop will not run again for it. */
			(void)rs_bev_write_now(c->bev);
		}
		conn_free(c);
	}
}

void gw_conn_gauges(const struct gateway *gw, uint64_t *supervisors, uint64_t *busiest, uint64_t *unrecorded)
{
	*supervisors = 0;
	*busiest = 0;
	*unrecorded = 0;
	for (const struct gw_conn *c = gw->conns; c; c = c->next) {
		if (!gw_conn_is_attached(c))
			continue;
		(*supervisors)++;
		*unrecorded += c->unrecorded;
		if (c->sandboxes > *busiest)
			*busiest = c->sandboxes;
	}
}

void gw_conn_drain_counts(struct gateway *gw, int64_t now_ms, size_t *waiting, size_t *in_flight)
{
	struct gw_conn *c, *next;

	*waiting = 0;
	*in_flight = 0;
	for (c = gw->conns; c; c = next) {
		next = c->next;
		if (c->state == CONN_ATTACHED) {
			(*waiting)++;
		} else if (c->state == CONN_HANDOFF && now_ms >= c->handoff_deadline_ms) {
			gw->counters.handoffs_timed_out++;
			c->handoff_ended = true;
			rs_log(stderr, "warn", gw->who, "event", "handoff_timeout", "member", c->member_id, NULL);
			gw_conn_goodbye(c, RS_GOODBYE_SHUTDOWN, "handoff deadline passed");
		} else if (c->state == CONN_HANDOFF) {
			(*in_flight)++;
		}
	}
}

int gw_conn_hand_off_next(struct gateway *gw)
{
	struct rs_frame f = { .version = RS_PROTO_VERSION, .type = RS_FRAME_REDIRECT };
	struct rs_admit a = { 0 };
	struct gw_conn *c = gw->conns;
	int err;

	while (c && c->state != CONN_ATTACHED)
		c = c->next;
	if (!c)
		return 0;
	/* A handoff is a store transaction: with the store away nobody can be
	 * placed; the pacer tries again next slot (no store call, no stall) and
	 * the budget ends the drain if the store never returns. */
	if (!gw_store_usable(gw))
		return -EAGAIN;
	/* The handoff needs the member's row here: a degraded session is
	 * recorded first (the heartbeat may not have claimed it yet). */
	if (c->unrecorded) {
		err = gw_conn_claim(c);
		if (err)
			return err == -ESTALE ? 0 : err;
	}
	a.gateway_id = gw->cfg.id;
	a.member_id = c->member_id;
	a.epoch = c->epoch;
	a.handoff = true;
	a.sandboxes = c->sandboxes;
	a.now_ms = gw_now_ms();
	err = rs_store_admit(gw->store, &a);
	gw_store_outcome(gw, err);
	if (err == -ESTALE) {
		/* Its row moved on while we held the link: it is someone else's. */
		gw_conn_supersede(c, "handoff");
		return 0;
	}
	if (err) {
		if (err != -ENOENT) {
			gw->counters.store_errors++;
			rs_log(stderr, "error", gw->who, "event", "store_error", "op", "handoff", "member", c->member_id,
			       "error", strerror(-err), NULL);
		}
		return err;
	}
	log_decision(c, &a, false);
	snprintf(f.u.redirect.gateway_id, sizeof(f.u.redirect.gateway_id), "%s", a.target_id);
	snprintf(f.u.redirect.peer, sizeof(f.u.redirect.peer), "%s", a.target_peer);
	f.u.redirect.reason = RS_REDIRECT_DRAIN;
	gw_conn_send(c, &f);
	gw->counters.redirects_drain++;
	c->state = CONN_HANDOFF;
	c->redirected = true;
	c->handoff_deadline_ms = a.now_ms + gw->cfg.handoff_timeout_ms;
	return 0;
}

void gw_conn_abandon_all(struct gateway *gw)
{
	struct gw_conn *c, *next;

	for (c = gw->conns; c; c = next) {
		next = c->next;
		if (!gw_conn_is_attached(c))
			continue;
		gw->counters.handoffs_abandoned++;
		c->handoff_ended = true;
		rs_log(stderr, "warn", gw->who, "event", "handoff_abandoned", "member", c->member_id, NULL);
		gw_conn_goodbye(c, RS_GOODBYE_SHUTDOWN, "drain budget spent");
	}
}
