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
	CONN_PLACING,  /* HELLO read: its admission is on the store worker */
	CONN_ATTACHED, /* accepted here */
	CONN_HANDOFF,  /* attached, redirected by the drain: kept until it leaves */
	CONN_CLOSING,  /* flushing a last frame, then freed */
};

struct gw_conn {
	struct gateway *gw;
	struct gw_conn *prev, *next;
	struct gw_conn *member_next; /* the next attached connection of its member (member_index.c) */
	struct gw_conn **job_ref;    /* the in-flight store job's pointer to c, cleared when c goes */
	struct bufferevent *bev;
	struct event *timer; /* HELLO deadline, the handoff deadline, the deferred
			      * close; NULL while attached and none runs */
	enum conn_state state;
	/* Its three strings live in one allocation of their exact lengths
	 * (text): a fixed array each would cost about 380 bytes per attached
	 * supervisor (issue 15: at most 4 KiB each).  Never NULL: "" until
	 * known. */
	const char *source;      /* "ADDR:PORT" as accepted */
	const char *member_id;   /* from HELLO */
	const char *instance_id; /* from HELLO */
	char *text;              /* owns the strings above */
	struct gw_unauth_key source_key; /* its address, for the unauthenticated count */
	bool unauth;        /* counted in gw->unauth: not yet past HELLO + token */
	bool secured;       /* its TLS handshake completed (plaintext: always) */
	uint64_t epoch;
	uint32_t sandboxes;
	bool attached_once; /* counted in n_attached; owes a session_end */
	bool unrecorded;    /* accepted degraded: the store has no row for it yet */
	bool redirected;    /* handed off by the drain */
	bool handoff_ended; /* its handoff was already counted (timeout, abandoned) */
	bool indexed;       /* in gw->members */
	bool in_flight;     /* redirected by the drain and counted in gw->n_handoff_conns */
	bool sandboxes_dirty; /* a count the store has not been told (it was away) */
	bool deferred_due;  /* claimed above the cap: to be placed by the rule, once */
	bool deferred;      /* its redirect is a deferred placement, not a drain's */
};

/* An admission or a drain handoff, decided on the store worker: consecutive
 * ones share one transaction (store_call.c). */
struct gw_admit_job {
	struct gateway *gw;
	struct gw_conn *conn; /* loop side only: NULL once the connection is gone */
	struct rs_admit a;    /* in and out; its strings point into the job */
	const char *member_id; /* these three point into text[] */
	const char *instance_id;
	const char *source;
	bool stay_asked;      /* HELLO's own STAY flag (a.stay also follows --no-placement) */
	size_t batch_n;       /* set on a batch's first job: how many shared its transaction */
	void (*done)(struct gw_admit_job *job, int err); /* on the loop; frees the job */
	char text[];          /* the strings, exact size: a burst of arrivals holds
			       * ~500 bytes each, not ~900 */
};

/* A zeroed job holding copies of the three strings (exact size), or NULL. */
struct gw_admit_job *gw_admit_job_new(const char *member_id, const char *instance_id, const char *source);

/* Submits job (its conn's job_ref set, a in place) on the admit kind.
 * Returns 0 or -errno (the job is then not queued; the caller frees it). */
int gw_admit_submit(struct gw_admit_job *job);

/* Marks c as having no store job in flight. */
static inline void gw_conn_job_clear(struct gw_conn *c)
{
	c->job_ref = NULL;
}

/* c's drain handoff is over (it left, timed out, or was abandoned): it no
 * longer counts in flight. */
static inline void gw_conn_handoff_settle(struct gw_conn *c)
{
	if (c->in_flight)
		c->gw->n_handoff_conns--;
	c->in_flight = false;
}

/* Whether c is accepted here (attached, or being handed off). */
static inline bool gw_conn_is_attached(const struct gw_conn *c)
{
	return c->state == CONN_ATTACHED || c->state == CONN_HANDOFF;
}

/* Arms c's timer (made on first use: attached connections hold none) for
 * tv from now; a failure to make it is logged (conn.c). */
void gw_conn_timer_add(struct gw_conn *c, const struct timeval *tv);

/* Queues frame f on c (an encoding failure is logged). */
void gw_conn_send(struct gw_conn *c, const struct rs_frame *f);

/* Sends GOODBYE reason and closes c once flushed (never before returning). */
void gw_conn_goodbye(struct gw_conn *c, uint8_t reason, const char *text);

/* Logs a placement or handoff decision about c (event=decision). */
void gw_conn_log_decision(struct gw_conn *c, const struct rs_admit *a, bool stay_asked);

/* Closes c as superseded by a newer connection of its member: counted and
 * logged (why: "heartbeat", "claim", "local"). */
void gw_conn_supersede(struct gw_conn *c, const char *why);

/* Submits the claim of c's session (accepted degraded) to the store; its
 * answer records it (recorded), closes c (superseded) or leaves it
 * unrecorded for the next try; counted and logged (claim.c).  Does nothing
 * while c has a store job in flight. */
void gw_conn_claim(struct gw_conn *c);

/* Sends c's sandbox count to the store, off the loop; when the store turns
 * out to be away, c is marked dirty for the heartbeat to send again.
 * Returns 0, or -EIO at once when the store is known to be away
 * (store_call.c). */
int gw_store_sandboxes(struct gw_conn *c);

/* Indexes attached c under its member id; removes it (member_index.c). */
int gw_member_add(struct gateway *gw, struct gw_conn *c);
void gw_member_remove(struct gateway *gw, struct gw_conn *c);

/* The first attached connection of member_id, or NULL; the rest follow
 * through member_next. */
struct gw_conn *gw_member_first(const struct gateway *gw, const char *member_id);


/* Hands c off (drain.c): submits the handoff transaction; its answer sends
 * REDIRECT {drain} and keeps the link until it leaves or its deadline.
 * deferred: c was accepted degraded and claimed above the cap: the store
 * places it by the rule over the serving ring, this gateway included
 * (rs_admit.deferred), and it may stay. */
int gw_drain_hand_off(struct gw_conn *c, bool deferred);

/* Marks c, claimed above the cap, for one deferred placement, paced
 * (deferred.c). */
void gw_deferred_mark(struct gw_conn *c);

/* Whether one TTL has passed since the store last answered again: the
 * store's ring then holds every live gateway (deferred.c). */
bool gw_deferred_view_settled(const struct gateway *gw);

/* The handoff deadline passed for c (its timer): closed, counted (drain.c). */
void gw_drain_handoff_expired(struct gw_conn *c);

#endif
