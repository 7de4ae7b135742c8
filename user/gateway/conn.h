/* conn.h - one supervisor connection at the gateway, shared by the files
 * that act on connections: conn.c (its life: HELLO, admission, frames,
 * departure, drain handoffs) and heartbeat.c (the heartbeat tick and the
 * claims of sessions accepted while the store was unavailable).  Private to
 * the gateway. */
#ifndef RS_GATEWAY_CONN_H
#define RS_GATEWAY_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include <event2/bufferevent.h>

#include "gateway.h"
#include "ringsteer/proto.h"

enum conn_state {
	CONN_HELLO,    /* waiting for HELLO (deadline running) */
	CONN_ATTACHED, /* accepted here */
	CONN_HANDOFF,  /* attached, redirected by the drain: kept until it leaves */
	CONN_CLOSING,  /* flushing a last frame, then freed */
};

struct gw_conn {
	struct gateway *gw;
	struct gw_conn *prev, *next;
	struct bufferevent *bev;
	struct event *timer; /* HELLO deadline, then the deferred close */
	enum conn_state state;
	char source[RS_ENDPOINT_MAX + 1];
	struct gw_unauth_key source_key; /* its address, for the unauthenticated count */
	bool unauth;        /* counted in gw->unauth: not yet past HELLO + token */
	bool secured;       /* its TLS handshake completed (plaintext: always) */
	char member_id[RS_ID_MAX + 1];
	char instance_id[RS_INSTANCE_MAX + 1];
	uint64_t epoch;
	uint32_t sandboxes;
	bool attached_once; /* counted in n_attached; owes a session_end */
	bool unrecorded;    /* accepted degraded: the store has no row for it yet */
	bool redirected;    /* handed off by the drain */
	bool handoff_ended; /* its handoff was already counted (timeout, abandoned) */
	int64_t handoff_deadline_ms;
};

/* Whether c is accepted here (attached, or being handed off). */
static inline bool gw_conn_is_attached(const struct gw_conn *c)
{
	return c->state == CONN_ATTACHED || c->state == CONN_HANDOFF;
}

/* Queues frame f on c (an encoding failure is logged). */
void gw_conn_send(struct gw_conn *c, const struct rs_frame *f);

/* Sends GOODBYE reason and closes c once flushed (never before returning). */
void gw_conn_goodbye(struct gw_conn *c, uint8_t reason, const char *text);

/* Closes c as superseded by a newer connection of its member: counted and
 * logged (why: "heartbeat", "claim", "local"). */
void gw_conn_supersede(struct gw_conn *c, const char *why);

/* Records c's session (accepted degraded) in the store.  Returns 0 (now
 * recorded), -ESTALE (superseded: c is closed), or the store's error (c
 * stays unrecorded; the store's health is updated).  Counted and logged. */
int gw_conn_claim(struct gw_conn *c);

#endif
