/* SPDX-License-Identifier: Apache-2.0 */
/* conn.c - the gateway's connections as I/O for the core: accept (the
 * unauthenticated limits refuse before anything is allocated), bytes read
 * handed to rs_gw_core_link_recv, the core's frames queued, its closes
 * flushed, its timer armed.  Input per connection is bounded by the read
 * watermark (one frame and a bit), so a read hands the core a bounded
 * number of bytes.  A closing connection whose peer does not read is
 * closed anyway after one HELLO deadline, so a zero window cannot hold it. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <openssl/crypto.h>

#include "gateway.h"
#include "util/bev_io.h"
#include "util/endpoint.h"
#include "util/logfmt.h"
#include "util/mstime.h"
#include "proto/proto_event.h"
#include "proto/wire.h"
#include "tls/tls.h"

struct gw_conn {
	struct gateway *gw;
	struct gw_conn *prev, *next;
	struct rs_gw_link *link;  /* the core's: NULL once it has forgotten it */
	struct bufferevent *bev;
	struct event *timer;      /* the closing flush's cap; NULL until closing */
	struct gw_unauth_node unode; /* in gw->unauth while not yet attached */
	bool closing;             /* the core closed it: flushing */
	bool overflowed;          /* past --max-unsent: closed from the loop, nothing more queued */
	bool ticket_due;          /* handshake done, session ticket not sent yet (--tls-ticket-keys) */
	struct rs_tls_secrets *secrets; /* TLS: the handshake's, until it ends */
	struct rs_tls_records *rec;     /* TLS after the handshake: bev is plain and carries records */
	uint8_t *carry;           /* records: plaintext the core has not taken yet (a frame cut) */
	struct gw_tls_peer peer;  /* records under mTLS: the client's certificate */
	size_t carry_len;
};

/* The session ticket goes out once the ACCEPT has been written, so that
 * building it (hundreds of microseconds under mTLS, tls_server.c) never
 * delays an attach, and only to a supervisor accepted here: a refused
 * HELLO, or one REDIRECTed (which leaves at once), gets none.  Only with
 * nothing queued: the ticket must not split a pending write. */
static void send_ticket(struct gw_conn *c)
{
	enum rs_gw_session_state st;

	if (!c->ticket_due || c->closing || !c->link)
		return;
	st = rs_gw_link_state(c->link);
	if (st != RS_GW_ATTACHED && st != RS_GW_DEGRADED && st != RS_GW_CLAIMING && st != RS_GW_DEFER_DUE &&
	    st != RS_GW_DEFER_ASKED)
		return;
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) > 0)
		return; /* write_done tries again */
	c->ticket_due = false;
	gw_tls_send_ticket(c->gw, c->bev);
}

static void free_tls(struct gw_conn *c)
{
	if (c->secrets)
		OPENSSL_cleanse(c->secrets, sizeof(*c->secrets));
	if (c->rec)
		OPENSSL_cleanse(c->rec, sizeof(*c->rec));
	free(c->secrets);
	free(c->rec);
	free(c->carry);
	free(c->peer.der);
	c->secrets = NULL;
}

static void conn_authenticated(struct gw_conn *c)
{
	gw_unauth_remove(&c->gw->unauth, &c->unode); /* once: it leaves the pool */
}

/* Frees c; the core is told how it ended if it still knows it. */
static void conn_free(struct gw_conn *c, enum rs_gw_link_end end)
{
	struct gateway *gw = c->gw;

	if (c->link)
		rs_gw_core_link_closed(gw->core, c->link, end, gw_now());
	conn_authenticated(c);
	if (c->prev)
		c->prev->next = c->next;
	else
		gw->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	if (c->timer)
		event_free(c->timer);
	bufferevent_free(c->bev);
	free_tls(c);
	free(c);
}

static void on_close_timer(evutil_socket_t fd, short what, void *arg)
{
	struct gw_conn *c = arg;
	struct gateway *gw = c->gw;

	(void)fd;
	(void)what;
	conn_free(c, RS_GW_LINK_FLUSHED);
	gw_core_settle(gw);
}

/* A peer that let --max-unsent bytes pile up: closed as lost, from the
 * loop (the core, which queued the frame, is up the stack). */
static void on_overflow_timer(evutil_socket_t fd, short what, void *arg)
{
	struct gw_conn *c = arg;
	struct gateway *gw = c->gw;

	(void)fd;
	(void)what;
	conn_free(c, RS_GW_LINK_LOST);
	gw_core_settle(gw);
}

/* Past --max-unsent: counted, logged, closed soon; a peer that does not
 * read cannot make the gateway hold its output without bound. */
static void overflowed(struct gw_conn *c, size_t unsent)
{
	struct gateway *gw = c->gw;
	struct timeval now = { 0, 0 };
	char n[24];

	c->overflowed = true;
	gw->counters.unsent_closed++;
	snprintf(n, sizeof(n), "%zu", unsent);
	rs_log(stderr, "warn", gw->who, "event", "unsent_cap", "bytes", n, NULL);
	bufferevent_disable(c->bev, EV_READ);
	if (c->timer)
		return; /* closing already: its flush cap frees it */
	c->timer = evtimer_new(gw->base, on_overflow_timer, c);
	if (!c->timer || evtimer_add(c->timer, &now) != 0)
		rs_log(stderr, "error", gw->who, "event", "timer_failed", NULL);
}

static void write_done(struct bufferevent *bev, void *arg)
{
	struct gw_conn *c = arg;
	struct gateway *gw = c->gw;

	(void)bev;
	if (!c->closing) {
		send_ticket(c); /* the ACCEPT is written */
		return;
	}
	conn_free(c, RS_GW_LINK_FLUSHED);
	gw_core_settle(gw);
}

static void cb_send(void *user, void *link_user, const struct rs_frame *f)
{
	struct gateway *gw = user;
	struct gw_conn *c = link_user;
	struct evbuffer *out = bufferevent_get_output(c->bev);
	size_t unsent = evbuffer_get_length(out);

	if (c->overflowed)
		return;
	if (unsent > gw->cfg.max_unsent) {
		overflowed(c, unsent);
		return;
	}
	/* HEARTBEAT by reference to the frame encoded once, so ten thousand
	 * supervisors do not each get a fresh output chain every interval. */
	if (f->type == RS_FRAME_HEARTBEAT && !c->rec) {
		if (gw->heartbeat_len == 0 &&
		    rs_frame_encode(f, gw->heartbeat_frame, sizeof(gw->heartbeat_frame), &gw->heartbeat_len) != 0)
			gw->heartbeat_len = 0;
		if (gw->heartbeat_len && evbuffer_add_reference(out, gw->heartbeat_frame, gw->heartbeat_len, NULL, NULL) == 0)
			return;
	}
	if (c->rec) {
		uint8_t buf[WIRE_FRAME_BOUND];
		size_t len;

		if (rs_frame_encode(f, buf, sizeof(buf), &len) == 0 &&
		    rs_tls_seal(c->rec, &gw->tls_scratch, buf, len, out) == 0)
			return;
	} else if (rs_proto_write(out, f) == 0) {
		return;
	}
	rs_log(stderr, "error", gw->who, "event", "encode_failed", "type", rs_frame_type_name(f->type), NULL);
}

static void cb_close(void *user, void *link_user)
{
	struct gateway *gw = user;
	struct gw_conn *c = link_user;
	bool flushed = evbuffer_get_length(bufferevent_get_output(c->bev)) == 0;
	struct timeval tv = rs_ms_timeval(flushed ? 0 : gw->cfg.hello_timeout_ms);

	c->closing = true;
	bufferevent_disable(c->bev, EV_READ);
	if (c->overflowed)
		return; /* its overflow timer frees it */
	/* Never freed here: the core and its caller up the stack still hold c. */
	c->timer = evtimer_new(gw->base, on_close_timer, c);
	if (!c->timer || evtimer_add(c->timer, &tv) != 0)
		rs_log(stderr, "error", gw->who, "event", "timer_failed", NULL);
}

static void cb_resume(void *user, void *link_user)
{
	struct gw_conn *c = link_user;

	(void)user;
	/* Resumed means attached: past HELLO and token. */
	conn_authenticated(c);
	bufferevent_trigger(c->bev, EV_READ, BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
}

static int cb_store(void *user, struct rs_gw_store_req *req)
{
	return gw_store_submit(user, req);
}

static bool cb_peer_is(void *user, void *link_user, const char *member_id)
{
	struct gw_conn *c = link_user;

	return gw_tls_client_is(c->bev, &c->peer, user, member_id);
}

static void cb_log(void *user, const char *level, const char *const *kv)
{
	struct gateway *gw = user;

	rs_log_kv(stderr, level, gw->who, kv);
}

static void cb_exit(void *user)
{
	struct gateway *gw = user;

	gw->remove_on_exit = true;
	event_base_loopexit(gw->base, NULL);
}

const struct rs_gw_callbacks gw_core_callbacks = {
	.send = cb_send,
	.close = cb_close,
	.resume = cb_resume,
	.store = cb_store,
	.peer_is = cb_peer_is,
	.log = cb_log,
	.exit = cb_exit,
};

/* Hands the core plaintext p (n bytes) after what it left before;
 * keeps what it leaves.  Returns 0 or -ENOMEM. */
static int recv_plain(struct gw_conn *c, const uint8_t *p, size_t n)
{
	struct gateway *gw = c->gw;
	size_t used = 0, len = c->carry_len + n;
	uint8_t *all = (uint8_t *)p;

	if (c->carry_len) {
		all = realloc(c->carry, len);
		if (!all)
			return -ENOMEM;
		memcpy(all + c->carry_len, p, n);
		c->carry = all;
	}
	rs_gw_core_link_recv(gw->core, c->link, all, len, &used, gw_now());
	if (used == len) {
		free(c->carry);
		c->carry = NULL;
		c->carry_len = 0;
		return 0;
	}
	if (!c->carry_len) {
		c->carry = malloc(len - used);
		if (!c->carry)
			return -ENOMEM;
		memcpy(c->carry, all + used, len - used);
	} else {
		memmove(c->carry, c->carry + used, len - used);
	}
	c->carry_len = len - used;
	return 0;
}

/* The link's records, opened in place in the input and handed to the
 * core one by one.  Returns 0, or -EPIPE (the peer's alert: its
 * close_notify, or a failure), -EBADMSG or -ENOMEM: the link is then lost. */
static int read_records(struct gw_conn *c, struct evbuffer *in)
{
	uint8_t hdr[RS_TLS_RECORD_HEADER], *rec, *plain;
	size_t plain_len;
	int len, type;

	while (!c->closing && c->link && evbuffer_copyout(in, hdr, sizeof(hdr)) == (ev_ssize_t)sizeof(hdr)) {
		len = rs_tls_record_len(hdr);
		if (len < 0)
			return len;
		if (evbuffer_get_length(in) < (size_t)len)
			return 0; /* the rest is on its way */
		rec = evbuffer_pullup(in, len);
		if (!rec)
			return -ENOMEM;
		type = rs_tls_open(c->rec, &c->gw->tls_scratch, rec, (size_t)len, &plain, &plain_len);
		if (type < 0)
			return type;
		/* 21: an alert, close_notify or not, ends the link; 22: a
		 * KeyUpdate or other post-handshake message, which records
		 * without OpenSSL do not follow (the reference supervisor and
		 * the swarm send none): the peer redials. */
		if (type != 23)
			return type == 21 ? -EPIPE : -EBADMSG;
		if (plain_len && recv_plain(c, plain, plain_len) != 0)
			return -ENOMEM;
		evbuffer_drain(in, (size_t)len);
	}
	return 0;
}

static void on_read(struct bufferevent *bev, void *arg)
{
	struct gw_conn *c = arg;
	struct gateway *gw = c->gw;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t len = evbuffer_get_length(in), used = 0;
	const uint8_t *data;

	if (c->closing || !c->link || len == 0)
		return;
	if (c->rec) {
		if (read_records(c, in) != 0) {
			conn_free(c, RS_GW_LINK_LOST);
		}
		gw_core_settle(gw);
		return;
	}
	data = evbuffer_pullup(in, (ev_ssize_t)len);
	if (!data)
		return;
	rs_gw_core_link_recv(gw->core, c->link, data, len, &used, gw_now());
	evbuffer_drain(in, used);
	gw_core_settle(gw);
}

static void on_event(struct bufferevent *bev, short what, void *arg);

/* What every connection's bufferevent is given, and given again when it
 * leaves its SSL for records. */
static void setup_bev(struct gw_conn *c)
{
	struct gateway *gw = c->gw;
	struct timeval idle = rs_ms_timeval(3ULL * gw->cfg.heartbeat_ms);
	/* Records arrive whole or not at all: room for the largest. */
	size_t high = gw->cfg.max_frame + RS_FRAME_HEADER;

	if (c->rec && high < RS_TLS_RECORD_HEADER + RS_TLS_CIPHERTEXT_MAX)
		high = RS_TLS_RECORD_HEADER + RS_TLS_CIPHERTEXT_MAX;
	bufferevent_setwatermark(c->bev, EV_READ, 0, high);
	bufferevent_setcb(c->bev, on_read, write_done, on_event, c);
	bufferevent_set_timeouts(c->bev, &idle, NULL);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

/* The handshake done, the link drops its SSL (about 13 KB under OpenSSL
 * 3.0) for records, when gw_tls_detach allows it. */
static void leave_ssl(struct gw_conn *c)
{
	struct bufferevent *plain;

	if (!c->secrets)
		return;
	plain = gw_tls_detach(c->gw, c->bev, c->secrets, &c->rec, &c->peer);
	free(c->secrets);
	c->secrets = NULL;
	if (!plain)
		return;
	bufferevent_free(c->bev);
	c->bev = plain;
	setup_bev(c);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	struct gw_conn *c = arg;
	struct gateway *gw = c->gw;
	bool handshaking = c->link && rs_gw_link_state(c->link) == RS_GW_HANDSHAKE;

	if (what & BEV_EVENT_CONNECTED) { /* the TLS handshake is done */
		gw_tls_count_handshake(gw, bev);
		c->ticket_due = gw->cfg.tls_ticket_keys != NULL;
		leave_ssl(c); /* not with tickets: gw->tls_records is off then */
		if (c->link)
			rs_gw_core_link_secured(gw->core, c->link);
		return;
	}
	if (handshaking && (what & BEV_EVENT_ERROR)) {
		/* A plaintext client, an unknown CA, no client certificate: the
		 * peer learns it from the TLS alert; the core counts and logs it. */
		char why[256];

		rs_tls_bev_failure(bev, why, sizeof(why), NULL);
		rs_gw_core_refused(gw->core, RS_GW_REJECT_TLS_HANDSHAKE, "", why, gw_now());
	}
	conn_free(c, c->closing ? RS_GW_LINK_FLUSHED : (what & BEV_EVENT_TIMEOUT) ? RS_GW_LINK_IDLE : RS_GW_LINK_LOST);
	gw_core_settle(gw);
}

/* Refuses a connection at accept, before anything is allocated for it:
 * counted and logged by the core, told REJECT LIMIT with the retry hint
 * in one non-blocking write (best effort), closed.  Under TLS nothing is
 * written: a frame needs a handshake, the cost this limit avoids. */
static void refuse_at_accept(struct gateway *gw, evutil_socket_t fd, enum rs_gw_reject why, const char *source,
			     const char *text)
{
	struct rs_frame f = { .version = RS_PROTO_VERSION, .type = RS_FRAME_REJECT };
	uint8_t buf[RS_FRAME_V1_MAX];
	size_t len;

	rs_gw_core_refused(gw->core, why, source, text, gw_now());
	f.u.reject.code = RS_REJECT_LIMIT;
	f.u.reject.retry_after_ms = gw->cfg.limit_retry_ms;
	snprintf(f.u.reject.text, sizeof(f.u.reject.text), "%s", text);
	if (!gw->tls && rs_frame_encode(&f, buf, sizeof(buf), &len) == 0)
		(void)send(fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
	evutil_closesocket(fd);
}

void gw_conn_accept(struct evconnlistener *lst, evutil_socket_t fd, struct sockaddr *sa, int socklen, void *arg)
{
	struct gateway *gw = arg;
	struct gw_conn *c;
	struct gw_unauth_key key = gw_unauth_key_of(sa);
	struct gw_unauth_node *victim;
	char source[RS_ENDPOINT_MAX + 1];

	(void)lst;
	(void)socklen;
	if (rs_endpoint_format(sa, source, sizeof(source)) != 0)
		snprintf(source, sizeof(source), "unknown");
	switch (gw_unauth_admit(&gw->unauth, &key, &victim)) {
	case GW_UNAUTH_PER_SOURCE:
		refuse_at_accept(gw, fd, RS_GW_REJECT_UNAUTH_PER_SOURCE, source,
				 "too many connections from this address waiting for HELLO");
		return;
	case GW_UNAUTH_TOTAL:
		refuse_at_accept(gw, fd, RS_GW_REJECT_UNAUTH_TOTAL, source, "too many connections waiting for HELLO");
		return;
	case GW_UNAUTH_EVICT:
		/* A source under its share of a full pool: the oldest waiting
		 * connection of the largest source makes room (unauth_fair.h). */
		gw_unauth_evicted(gw, source);
		conn_free((struct gw_conn *)((char *)victim - offsetof(struct gw_conn, unode)), RS_GW_LINK_LOST);
		break;
	case GW_UNAUTH_OK:
		break;
	}
	c = calloc(1, sizeof(*c));
	if (!c || gw_unauth_insert(&gw->unauth, &key, &c->unode) != 0) {
		free(c);
		evutil_closesocket(fd);
		gw_core_settle(gw);
		return;
	}
	c->gw = gw;
	/* Frames are small and answers wait on them: no Nagle. */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
	c->bev = gw_tls_bufferevent(gw, fd); /* on failure it has closed fd */
	if (!c->bev || rs_gw_core_link_open(gw->core, c, source, gw->tls != NULL, gw_now(), &c->link) != 0) {
		if (c->bev)
			bufferevent_free(c->bev);
		gw_unauth_remove(&gw->unauth, &c->unode);
		free(c);
		return;
	}
	c->next = gw->conns;
	if (gw->conns)
		gw->conns->prev = c;
	gw->conns = c;
	if (gw->tls_records) {
		c->secrets = calloc(1, sizeof(*c->secrets));
		if (c->secrets)
			gw_tls_secrets_to(c->bev, c->secrets);
	}
	setup_bev(c);
	gw_core_settle(gw);
}

void gw_conn_free_all(struct gateway *gw)
{
	while (gw->conns) {
		struct gw_conn *c = gw->conns;

		(void)rs_bev_write_now(c->bev); /* best effort, now */
		conn_free(c, RS_GW_LINK_FLUSHED);
	}
}
