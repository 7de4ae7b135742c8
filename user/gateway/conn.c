/* conn.c - one supervisor connection at the gateway: the HELLO deadline,
 * token check, the placement transaction (submitted to the store worker:
 * the connection reads nothing more until the answer comes back on the
 * loop), then sandbox counts, token refresh and departure (the heartbeat
 * tick is heartbeat.c, claims of degraded sessions claim.c, drain handoffs
 * drain.c).  A member's other connections are found through the member
 * index (member_index.c), never by scanning every connection.  Bad input is answered (REJECT
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

	/* An unrecorded session has no row to end; a recorded one's row is
	 * ended off the loop (owed while the store is away). */
	if (c->attached_once && !c->unrecorded)
		gw_store_end_session(gw, c->member_id, c->epoch, true);
	if (c->job_ref)
		*c->job_ref = NULL; /* its answer will find the connection gone */
	gw_member_remove(gw, c);
	conn_authenticated(c);
	if (c->attached_once)
		gw->n_attached--;
	if (c->attached_once && c->unrecorded)
		gw->n_unrecorded--;
	if (c->redirected && !c->handoff_ended && !c->deferred)
		gw->counters.handoffs_completed++; /* it left on its own: accepted at the target */
	if (c->deferred_due)
		gw->n_deferred_due--;
	gw_conn_handoff_settle(c);
	if (gw->drain_cursor == c)
		gw->drain_cursor = c->next;
	if (c->prev)
		c->prev->next = c->next;
	else
		gw->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	if (c->timer)
		event_free(c->timer);
	bufferevent_free(c->bev);
	free(c->text);
	free(c);
}

/* Sets c's strings, one allocation for the three.  Returns 0 or -ENOMEM
 * (c's strings unchanged). */
static int conn_set_text(struct gw_conn *c, const char *source, const char *member_id, const char *instance_id)
{
	size_t ls = strlen(source) + 1, lm = strlen(member_id) + 1, li = strlen(instance_id) + 1;
	char *t = malloc(ls + lm + li);

	if (!t)
		return -ENOMEM;
	memcpy(t, source, ls);
	memcpy(t + ls, member_id, lm);
	memcpy(t + ls + lm, instance_id, li);
	free(c->text);
	c->text = t;
	c->source = t;
	c->member_id = t + ls;
	c->instance_id = t + ls + lm;
	return 0;
}

static void on_timer(evutil_socket_t fd, short what, void *arg);

void gw_conn_timer_add(struct gw_conn *c, const struct timeval *tv)
{
	if (!c->timer)
		c->timer = evtimer_new(c->gw->base, on_timer, c);
	if (!c->timer || evtimer_add(c->timer, tv) != 0)
		rs_log(stderr, "error", c->gw->who, "event", "timer_failed", "member", c->member_id, NULL);
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
		gw_conn_timer_add(c, &now);
	else
		gw_conn_timer_add(c, &cap);
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
	if (reject_floods[why] && !gw_log_rate_allow(&gw->reject_log[why], rs_mono_ms(), &dropped))
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
 * epoch: this gateway sees the newer one first-hand.  (A superseded one
 * stays indexed until freed, but is no longer attached.) */
static void supersede_local(struct gw_conn *fresh)
{
	struct gw_conn *c = gw_member_first(fresh->gw, fresh->member_id), *next;

	for (; c; c = next) {
		next = c->member_next;
		if (c != fresh && gw_conn_is_attached(c) && c->epoch < fresh->epoch)
			gw_conn_supersede(c, "local");
	}
}

/* Whether this gateway holds a connection of c's member at epoch or later. */
static bool local_newer(const struct gw_conn *fresh, uint64_t epoch)
{
	for (const struct gw_conn *c = gw_member_first(fresh->gw, fresh->member_id); c; c = c->member_next)
		if (c != fresh && gw_conn_is_attached(c) && c->epoch >= epoch)
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
	for (const struct gw_conn *c = gw_member_first(gw, fresh->member_id); c; c = c->member_next)
		if (c != fresh && gw_conn_is_attached(c))
			return false;
	return true;
}

static void reject_sessions_full(struct gw_conn *c)
{
	char text[64];

	snprintf(text, sizeof(text), "gateway at its session limit (%u)", c->gw->cfg.max_sessions);
	conn_reject_retry(c, GW_REJECT_SESSIONS, RS_REJECT_LIMIT, c->gw->cfg.limit_retry_ms, text);
}

void gw_conn_log_decision(struct gw_conn *c, const struct rs_admit *a, bool stay_asked)
{
	char epoch[24], cap[16];

	snprintf(epoch, sizeof(epoch), "%llu", (unsigned long long)a->epoch);
	snprintf(cap, sizeof(cap), "%u", a->decision.cap);
	rs_log(stderr, "info", c->gw->who, "event", "decision", "member", a->member_id, "epoch", epoch, "outcome",
	       a->accepted ? "accept" : "redirect", "reason", rs_reason_name(a->decision.reason), "cap", cap,
	       "target", a->accepted ? c->gw->cfg.id : a->target_id, "stay", stay_asked ? "1" : "0", "source",
	       c->source, NULL);
}

/* Attaches c here (its HELLO's facts already in c): ACCEPT, and any older
 * connection of its member that this gateway holds is closed. */
static void attach(struct gw_conn *c)
{
	struct gateway *gw = c->gw;
	struct rs_frame f = { .version = RS_PROTO_VERSION, .type = RS_FRAME_ACCEPT };

	conn_authenticated(c);
	c->state = CONN_ATTACHED;
	c->attached_once = true;
	gw->n_attached++;
	gw->n_unrecorded += c->unrecorded;
	if (gw_member_add(gw, c) != 0)
		rs_log(stderr, "error", gw->who, "event", "index_failed", "member", c->member_id, "error",
		       "out of memory", NULL);
	/* An attached connection needs no timer until it closes or is handed
	 * off (the idle timeout is the bufferevent's): about 150 bytes fewer
	 * per supervisor. */
	if (c->timer) {
		event_free(c->timer);
		c->timer = NULL;
	}
	snprintf(f.u.accept.gateway_id, sizeof(f.u.accept.gateway_id), "%s", gw->cfg.id);
	snprintf(f.u.accept.peer, sizeof(f.u.accept.peer), "%s", gw->cfg.advertise_peer);
	f.u.accept.heartbeat_ms = gw->cfg.heartbeat_ms;
	gw_conn_send(c, &f);
	supersede_local(c);
}

/* The store is unavailable: accept c where it landed, without placement
 * (the issue accepts the imbalance this may cause), and record it once the
 * store answers again (claim.c). */
static void accept_degraded(struct gw_conn *c, bool stay_asked, const char *error)
{
	struct gateway *gw = c->gw;
	char epoch[24];

	snprintf(epoch, sizeof(epoch), "%llu", (unsigned long long)c->epoch);
	gw->counters.degraded_accepts++;
	rs_log(stderr, "warn", gw->who, "event", "degraded_accept", "member", c->member_id, "epoch", epoch, "stay",
	       stay_asked ? "1" : "0", "source", c->source, "error", error, NULL);
	c->unrecorded = true;
	attach(c);
}

/* The placement transaction failed (err), or was not tried (the store is
 * known to be away: after one failure only the heartbeat probes it, so a
 * burst of arrivals during an outage is accepted degraded at once). */
static void placement_failed(struct gw_conn *c, int err, bool tried, bool stay_asked)
{
	struct gateway *gw = c->gw;

	if (err == -ESTALE) {
		conn_reject(c, GW_REJECT_SUPERSEDED, RS_REJECT_SUPERSEDED, "a newer epoch of this member is attached");
		return;
	}
	if (!gw_store_unavailable(err) || gw->draining) {
		conn_reject(c, GW_REJECT_UNAVAILABLE, RS_REJECT_UNAVAILABLE, "placement store unavailable");
		return;
	}
	if (local_newer(c, c->epoch)) {
		/* What the store would have said, known first-hand. */
		conn_reject(c, GW_REJECT_SUPERSEDED, RS_REJECT_SUPERSEDED, "a newer epoch of this member is attached");
		return;
	}
	if (sessions_full(c)) {
		reject_sessions_full(c);
		return;
	}
	accept_degraded(c, stay_asked, tried ? strerror(-err) : "store down (not tried)");
}

static void on_read(struct bufferevent *bev, void *arg);

/* The placement transaction's answer, on the loop. */
static void admitted(struct gw_admit_job *job, int err)
{
	struct gateway *gw = job->gw;
	struct gw_conn *c = job->conn;
	const struct rs_admit *a = &job->a;
	struct rs_frame f = { .version = RS_PROTO_VERSION };

	gw->counters.store_batched++;
	gw_store_outcome(gw, err);
	if (err && err != -ESTALE) {
		gw->counters.store_errors++;
		rs_log(stderr, "error", gw->who, "event", "store_error", "op", "admit", "member", job->member_id,
		       "error", strerror(-err), NULL);
	}
	if (!c || c->state != CONN_PLACING) {
		/* It left while the store decided: an attachment here is taken
		 * back (a redirect's reservation lapses on its own). */
		if (!err && a->accepted)
			gw_store_end_session(gw, job->member_id, a->epoch, true);
		goto cleanup;
	}
	if (err) {
		placement_failed(c, err, true, job->stay_asked);
		goto cleanup;
	}
	/* Placement (or a stay) chose this gateway, but it is full: the limit
	 * is hard where the placement cap is soft.  The row is taken back so
	 * that nobody counts it here; the supervisor waits the hint and comes
	 * back through the Service. */
	if (a->accepted && sessions_full(c)) {
		gw_store_end_session(gw, a->member_id, a->epoch, false);
		reject_sessions_full(c);
		goto cleanup;
	}
	gw_conn_log_decision(c, a, job->stay_asked);
	gw->counters.owner_fallbacks += a->decision.full;
	if (a->over_cap) {
		char rounds[12];

		snprintf(rounds, sizeof(rounds), "%u", gw_rounds_get(gw, a->member_id) + 1);
		gw->counters.over_cap_accepts++;
		rs_log(stderr, "warn", gw->who, "event", "over_cap_accept", "member", a->member_id, "rounds", rounds,
		       "text", "every redirect target unreachable: accepted above the cap (liveness)", NULL);
	}
	if (a->fallback && !a->accepted)
		gw_rounds_refused(gw, a->member_id);
	else
		gw_rounds_end(gw, a->member_id);
	if (!a->accepted) {
		gw->counters.redirects_placement++;
		f.type = RS_FRAME_REDIRECT;
		snprintf(f.u.redirect.gateway_id, sizeof(f.u.redirect.gateway_id), "%s", a->target_id);
		snprintf(f.u.redirect.peer, sizeof(f.u.redirect.peer), "%s", a->target_peer);
		f.u.redirect.reason = RS_REDIRECT_PLACEMENT;
		gw_conn_send(c, &f);
		conn_close_after_flush(c);
		goto cleanup;
	}
	gw->counters.accepts++;
	gw->counters.stays += a->decision.reason == RS_REASON_STAY;
	gw->counters.reserved += a->decision.reason == RS_REASON_RESERVED;
	attach(c);
	/* Frames that arrived while it waited were left in the buffer. */
	on_read(c->bev, c);
cleanup:
	free(job);
}

static void on_hello(struct gw_conn *c, const struct rs_hello *h)
{
	struct gateway *gw = c->gw;
	struct gw_admit_job *job;
	bool stay_asked = h->flags & RS_HELLO_STAY;
	uint64_t expiry;
	int err;

	if (conn_set_text(c, c->source, h->member_id, h->instance_id) != 0) {
		conn_reject(c, GW_REJECT_UNAVAILABLE, RS_REJECT_UNAVAILABLE, "out of memory");
		return;
	}
	event_del(c->timer);
	err = rs_token_verify(&gw->secret, h->token, h->member_id, (uint64_t)(rs_wall_ms() / 1000), &expiry);
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
	c->epoch = h->epoch;
	c->sandboxes = h->sandboxes;
	if (!gw_store_usable(gw)) {
		placement_failed(c, -EIO, false, stay_asked);
		return;
	}
	job = gw_admit_job_new(h->member_id, h->instance_id, c->source);
	if (!job) {
		conn_reject(c, GW_REJECT_UNAVAILABLE, RS_REJECT_UNAVAILABLE, "out of memory");
		return;
	}
	job->gw = gw;
	job->conn = c;
	job->done = admitted;
	job->stay_asked = stay_asked;
	job->a.epoch = h->epoch;
	job->a.stay = stay_asked || gw->cfg.no_placement;
	job->a.redirected = h->flags & RS_HELLO_REDIRECTED;
	/* Two fallbacks of this member refused here in a row: this third is
	 * accepted above the cap if it is one (the store recognises it). */
	job->a.liveness = stay_asked && !job->a.redirected && gw_rounds_get(gw, h->member_id) >= 2;
	job->a.sandboxes = h->sandboxes;
	err = gw_admit_submit(job);
	if (err) {
		free(job);
		placement_failed(c, err, false, stay_asked);
		return;
	}
	c->state = CONN_PLACING;
}

static void on_refresh(struct gw_conn *c)
{
	struct gateway *gw = c->gw;
	struct rs_frame f = { .version = RS_PROTO_VERSION, .type = RS_FRAME_TOKEN };
	uint64_t expiry = (uint64_t)(rs_wall_ms() / 1000) + gw->cfg.token_ttl_s;

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
	c->sandboxes_dirty = false;
	snprintf(n, sizeof(n), "%u", count);
	rs_log(stderr, "info", gw->who, "event", "sandboxes", "member", c->member_id, "count", n, NULL);
	/* Unrecorded: the claim carries the count.  The store away: sent
	 * when it answers again (heartbeat.c). */
	if (c->unrecorded)
		return;
	err = gw_store_sandboxes(c);
	if (err)
		c->sandboxes_dirty = true;
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
		return c->state == CONN_ATTACHED; /* placing: later frames wait for its answer */
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

	/* Placing: what follows HELLO waits in the buffer (bounded by the
	 * read watermark) until the store answers. */
	while (c->state != CONN_CLOSING && c->state != CONN_PLACING) {
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
	else if (c->state == CONN_HANDOFF)
		gw_drain_handoff_expired(c);
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
	if (conn_set_text(c, source, "", "") != 0) {
		gw_unauth_remove(&gw->unauth, &key);
		evutil_closesocket(fd);
		free(c);
		return;
	}
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

void gw_conn_goodbye_rest(struct gateway *gw)
{
	struct gw_conn *c, *next;

	for (c = gw->conns; c; c = next) {
		next = c->next;
		if (!gw_conn_is_attached(c))
			continue;
		gw->counters.handoffs_abandoned++;
		c->handoff_ended = true;
		gw_conn_handoff_settle(c);
		rs_log(stderr, "warn", gw->who, "event", "handoff_abandoned", "member", c->member_id, NULL);
		gw_conn_goodbye(c, RS_GOODBYE_SHUTDOWN, "drain budget spent");
	}
}
