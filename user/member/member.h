/* SPDX-License-Identifier: Apache-2.0 */
/* member.h - the member core's private state (include/ringsteer/member_core.h).
 *
 * Layering, each file calling only those below it:
 *   core.c    the public API: events in
 *   frames.c  what each frame from a gateway leads to
 *   timers.c  retries, refreshes, heartbeats, deadlines
 *   dial.c    dialing, and what a failed or refused dial leads to
 *   link.c    the two link slots, HELLO, sending, closing, events out */
#ifndef RS_MEMBER_H
#define RS_MEMBER_H

#include "ringsteer/member_core.h"

/* Where one link is in its life. */
enum mc_link_state {
	MC_LINK_FREE,      /* the slot is empty */
	MC_LINK_QUEUED,    /* dialed, the embedder's connect not begun */
	MC_LINK_CONNECTING,
	MC_LINK_HELLO_SENT,
	MC_LINK_ATTACHED,
};

struct rs_mc_link {
	struct rs_mc_core *mc;
	void *user;               /* the embedder's */
	enum mc_link_state state;
	enum rs_mc_via via;
	bool stay;
	bool superseded;          /* its gateway closed it for our newer link */
	uint64_t epoch;
	int64_t deadline_ms;      /* connect, answer, or idle deadline (monotonic); 0: none */
	char endpoint[RS_ENDPOINT_MAX + 1];
	char gateway[RS_ID_MAX + 1]; /* the id its identity must name */
};

struct rs_mc_core {
	struct rs_mc_config cfg;
	struct rs_mc_callbacks cb;
	void *user;
	bool started;
	/* The two slots: the attached link, and the one being set up. */
	struct rs_mc_link links[2];
	struct rs_mc_link *active, *pending;
	char token[RS_TOKEN_MAX + 1];
	uint64_t token_expiry;    /* unix seconds */
	char last_gateway[RS_ID_MAX + 1];
	char last_peer[RS_ENDPOINT_MAX + 1];
	uint64_t next_epoch;
	uint64_t rng;
	uint32_t backoff_ms;
	uint32_t heartbeat_ms;
	uint32_t redirects_failed; /* since the last attach */
	int64_t retry_at, refresh_at, beat_at; /* monotonic ms; 0: not armed */
	bool retry_stay;
	bool refresh_on_attach;   /* rs_mc_refresh_now while not attached */
	bool ever_attached;
	int64_t lost_at_ms;       /* the gap's start (0: none) */
	uint64_t attaches, redirects, targets_refused;
	uint64_t failures[RS_MC_FAIL_COUNT];
};

/* link.c */
struct rs_mc_link *mc_link_new(struct rs_mc_core *mc, enum rs_mc_via via, bool stay);
void mc_link_close(struct rs_mc_link *l, struct rs_mc_time now);
void mc_link_forget(struct rs_mc_link *l, struct rs_mc_time now);
void mc_send(struct rs_mc_link *l, const struct rs_frame *f);
void mc_send_hello(struct rs_mc_link *l, struct rs_mc_time now);
void mc_goodbye_and_close(struct rs_mc_link *l, struct rs_mc_time now);
void mc_emit(struct rs_mc_core *mc, const struct rs_mc_event *e);
void mc_send_sandboxes(struct rs_mc_core *mc);

/* dial.c */
void mc_dial(struct rs_mc_core *mc, enum rs_mc_via via, const char *endpoint, const char *gateway, bool stay,
	     struct rs_mc_time now);
void mc_dial_service(struct rs_mc_core *mc, bool stay, struct rs_mc_time now);
void mc_retry_after(struct rs_mc_core *mc, bool stay, uint32_t floor_ms, struct rs_mc_time now);
/* l failed as why (floor_ms: a REJECT's retry hint); gone: the embedder
 * reported it, so it is not closed through the embedder again. */
void mc_link_failed(struct rs_mc_link *l, enum rs_mc_fail why, const char *text, uint32_t floor_ms, bool gone,
		    struct rs_mc_time now);
void mc_target_refused(struct rs_mc_core *mc, enum rs_mc_via via, const char *endpoint, const char *gateway,
		       const char *text, struct rs_mc_time now);
void mc_session_lost(struct rs_mc_core *mc, enum rs_mc_fail why, const char *text, struct rs_mc_time now);

/* timers.c */
void mc_schedule_refresh(struct rs_mc_core *mc, struct rs_mc_time now);
void mc_arm_heartbeat(struct rs_mc_core *mc, struct rs_mc_time now);

/* frames.c */
int mc_on_frame(struct rs_mc_link *l, const struct rs_frame *f, struct rs_mc_time now);

#endif
