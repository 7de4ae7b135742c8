/* SPDX-License-Identifier: Apache-2.0 */
/* gwcore.h - the gateway core's state, shared by its files (private to
 * the library).  One struct rs_gw_core per gateway; every link is a struct
 * rs_gw_link it owns.  Files, lowest first, each calling only those before
 * it: log.c, deadline.c (the deadline lists), marks.c (deferred-placement
 * marks its links left), timing.c (the latency histograms), link.c (links,
 * states and their counts, the member index, frames and closes out,
 * logging),
 * store_queue.c (requests out, the admission queue
 * and its batches, the store's health, session ends), overload.c (the
 * queue's pace: its deadline, shedding and retry hints), rounds.c, move.c
 * (handoffs and deferred placements asked), claim.c (claims and the
 * deferred placements' pacing), drain.c, admission.c (HELLO to ACCEPT or
 * REDIRECT), heartbeat.c, core.c (the public events, answers dispatched). */
#ifndef RS_GWCORE_H
#define RS_GWCORE_H

#include <stdbool.h>
#include <stdint.h>

#include "ringsteer/gateway_core.h"

/* Cancelling the queue takes it this many at a time (the batch's own
 * bound is cfg.admit_batch_max). */
#define GWC_CANCEL_CHUNK 128
/* A batch at least this large (or cfg.admit_batch_max, if smaller) is a
 * sample of the store's pace; a smaller one means the store caught up. */
#define GWC_PACE_MIN_BATCH 128
#define GWC_WAKE_NEVER INT64_MAX
/* Store requests unanswered past which arrivals are accepted degraded and
 * session ends owed: well above what a store clears in one heartbeat (the
 * ledger runs 1,100 to 2,700 transactions a second; 5 s heartbeats), so a
 * storm, which batching keeps to one admission in flight, never trips it. */
#define GWC_STORE_QUEUE_MAX_DEFAULT 8192
#define GWC_PACE_SAMPLES 8 /* full batches the store's pace is judged on */
#define GWC_RETRY_HINT_DEADLINES 4 /* a shed arrival's retry hint is at most this many deadlines */

struct gwc_member;
struct gwc_req;
struct gwc_round;
struct gwc_mark;

/* A list of links whose deadlines all have one length, so appending keeps
 * it in deadline order and its head is the next due. */
struct gwc_deadlines {
	struct rs_gw_link *head, *tail;
};

struct rs_gw_link {
	struct rs_gw_core *core;
	void *user;
	struct rs_gw_link *prev, *next;       /* every link */
	struct rs_gw_link *member_next;       /* attached links of its member */
	struct rs_gw_link *dl_prev, *dl_next; /* in one deadline list, or none */
	struct gwc_deadlines *dl;             /* which one */
	int64_t deadline_ms;
	struct rs_gw_link *queue_next;        /* waiting for an admission batch */
	struct gwc_req *req;                  /* the store request in flight for it */
	size_t req_slot;                      /* its item there */
	enum rs_gw_session_state state;
	bool queued;                          /* in the admission queue */
	bool indexed;                         /* in the member index */
	bool sandboxes_owed;                  /* a count the store has not been told */
	uint32_t sandboxes_stored;            /* the count last handed to the store for this session */
	int64_t refresh_next_ms;              /* a REFRESH before this is dropped (one per heartbeat) */
	int64_t sandboxes_next_ms;            /* a count before this waits for the heartbeat's write */
	bool liveness;                        /* its third fallback round refused here */
	bool rewrite;                         /* DEGRADED because its row was lost to a take-back
					       * (admission.c), not for an outage: the rule placed it,
					       * so its claim's cap marks nothing */
	bool rewrite_marked;                  /* and it was marked for a deferred placement then */
	uint8_t hello_flags;
	uint64_t epoch;
	uint32_t sandboxes;
	int64_t hello_ms;                     /* monotonic: when its HELLO was read (admission timing) */
	int64_t handoff_ms;                   /* monotonic: when the drain's REDIRECT was sent (handoff timing) */
	char source[RS_ENDPOINT_MAX + 1];
	char member_id[RS_ID_MAX + 1];
	char instance_id[RS_INSTANCE_MAX + 1];
};

/* A session end not yet told to the store (it was away). */
struct gwc_owed {
	struct gwc_owed *next;
	uint64_t epoch;
	bool keep_place;
	char member_id[RS_ID_MAX + 1];
};

/* The token bucket that keeps a flood of refusals from filling the log. */
struct gwc_log_rate {
	int64_t last_ms;
	uint32_t credit_milli;
	uint64_t suppressed;
};

struct rs_gw_core {
	struct rs_gw_core_config cfg;
	const struct rs_keyring *keyring;     /* NULL: cfg.secret signs and verifies (tokens.c) */
	uint32_t token_max_ttl_s;            /* a HELLO token expiring further ahead is refused */
	struct rs_gw_callbacks cb;
	void *user;
	struct rs_gw_time now;               /* the time of the event being handled */
	struct rs_gw_link *links;
	struct gwc_member *members;
	size_t n_state[RS_GW_STATE_COUNT];
	struct gwc_deadlines hello_dl, handoff_dl;
	struct gwc_deadlines admit_dl;       /* arrivals queued, not handed to the store yet */
	struct rs_gw_link *queue_head, *queue_tail; /* admissions waiting for a batch */
	size_t n_queued;
	bool admit_in_flight;                /* one batch at a time: the next takes all that waited */
	int64_t admit_sent_ms;               /* monotonic: when the batch in flight was handed out */
	int64_t full_batch_ms[GWC_PACE_SAMPLES]; /* how long recent full batches took, handed out to answered */
	size_t n_full_batches;               /* samples held (at most GWC_PACE_SAMPLES) */
	size_t full_batch_next;              /* the sample the next full batch replaces */
	bool shedding;                       /* shed an arrival in this backlog (logged once per backlog) */
	size_t n_requests;                   /* handed out, not answered */
	bool queue_full;                     /* n_requests reached cfg.store_queue_max (logged once per episode) */
	struct gwc_owed *owed;
	struct gwc_round *rounds;
	struct gwc_mark *marks;              /* marks.c: deferred placements whose links ended */
	bool store_up;
	int64_t store_clock_skew_ms; /* the store's clock minus ours, as of the last heartbeat (0: none) */
	int64_t store_back_ms;
	bool registered;
	bool heartbeat_in_flight;
	bool sandboxes_owed;
	bool membership_in_flight;
	bool others_serving;
	bool draining;
	bool drain_unrecorded;               /* draining, the store not told yet */
	bool stopping;
	bool exiting;
	bool exited;                         /* exit() called: never twice */
	int64_t next_heartbeat_ms;
	int64_t drain_wake_ms;               /* GWC_WAKE_NEVER: not draining */
	int64_t deferred_wake_ms;            /* GWC_WAKE_NEVER: nothing due */
	struct rs_drain drain;
	struct rs_gw_link *drain_cursor;
	struct rs_gw_counters counters;
	struct rs_histogram hist[RS_GW_HIST_COUNT]; /* timing.c */
	struct gwc_log_rate reject_log[RS_GW_REJECT_COUNT];
};

/* ---- marks.c ---- */
/* A link of member_id at epoch, marked for a deferred placement, ended
 * before the placement was decided: its mark waits for the member's next
 * link here. */
void gwc_marks_left(struct rs_gw_core *core, const char *member_id, uint64_t epoch);
/* Takes member_id's mark (a link of it older than epoch left one here);
 * whether there was one.  Any newer link accepted here takes it. */
bool gwc_marks_take(struct rs_gw_core *core, const char *member_id, uint64_t epoch);
void gwc_marks_free(struct rs_gw_core *core);

/* ---- timing.c ---- */
/* Gives every histogram its bounds (empty). */
void gwc_timing_init(struct rs_gw_core *core);
/* l's admission answered (ACCEPT or placement REDIRECT sent) now. */
void gwc_timing_admitted(struct rs_gw_link *l);
/* l leaves HANDOFF now, however its handoff ended. */
void gwc_timing_handoff_ended(struct rs_gw_link *l);

/* ---- link.c ---- */
static inline bool gwc_attached_state(enum rs_gw_session_state s)
{
	return s >= RS_GW_DEGRADED && s <= RS_GW_DEFER_MOVED;
}
size_t gwc_n_attached(const struct rs_gw_core *core);
/* Moves l to state s, keeping the per-state counts and the member index. */
void gwc_set_state(struct rs_gw_link *l, enum rs_gw_session_state s);
void gwc_deadline_set(struct gwc_deadlines *dl, struct rs_gw_link *l, int64_t at_ms);
void gwc_deadline_clear(struct rs_gw_link *l);
struct rs_gw_link *gwc_member_first(const struct rs_gw_core *core, const char *member_id);
void gwc_member_free_all(struct rs_gw_core *core);
void gwc_log(struct rs_gw_core *core, const char *level, ...) __attribute__((sentinel));
void gwc_send(struct rs_gw_link *l, const struct rs_frame *f);
/* Leaves an attached state (the session ends here: the store is told
 * unless unrecorded), then CLOSING and the caller's close. */
void gwc_close(struct rs_gw_link *l, bool keep_place);
void gwc_note_refusal(struct rs_gw_core *core, enum rs_gw_reject why, const char *source, const char *member,
		      const char *text);
void gwc_reject_retry(struct rs_gw_link *l, enum rs_gw_reject why, uint16_t code, uint32_t retry_ms,
		      const char *text);
void gwc_reject(struct rs_gw_link *l, enum rs_gw_reject why, uint16_t code, const char *text);
void gwc_goodbye(struct rs_gw_link *l, uint8_t reason, const char *text);
void gwc_supersede(struct rs_gw_link *l, const char *why);
void gwc_log_decision(struct rs_gw_link *l, const struct rs_admit *a, bool stay_asked);

/* ---- store_queue.c ---- */
struct gwc_item {
	struct rs_gw_link *link;     /* NULL once the link is gone */
	enum rs_gw_session_state asked; /* PLACING, HANDOFF_ASKED or DEFER_ASKED */
	bool stay_asked;
	char member_id[RS_ID_MAX + 1];
	char instance_id[RS_INSTANCE_MAX + 1];
	char source[RS_ENDPOINT_MAX + 1];
};

struct gwc_req {
	struct rs_gw_store_req pub;  /* first: the caller sees only this */
	struct rs_gw_link *link;     /* a claim's link, NULL once gone */
	bool keep_place;             /* a session end's, to owe it again */
	int64_t queued_ms;           /* monotonic: when it was handed out */
	char member_id[RS_ID_MAX + 1];
	char instance_id[RS_INSTANCE_MAX + 1];
	char source[RS_ENDPOINT_MAX + 1];
	size_t n;                    /* admission items */
	struct gwc_item *items;
	struct rs_admit *a;
	int *errs;
	struct rs_session_key *held; /* a registering heartbeat's u.heartbeat.held */
};

struct gwc_req *gwc_req_new(struct rs_gw_core *core, enum rs_gw_store_op op);
/* Hands req out; frees it and returns -errno when the caller cannot take it. */
int gwc_req_submit(struct rs_gw_core *core, struct gwc_req *req);
void gwc_req_free(struct gwc_req *req);
/* Forgets l in the request in flight for it and in the admission queue. */
void gwc_req_forget(struct rs_gw_link *l);
/* Whether store_queue_max requests are handed out and unanswered. */
bool gwc_store_deep(const struct rs_gw_core *core);
bool gwc_store_usable(const struct rs_gw_core *core);
/* Records a store answer's verdict (up, or down), logging each change. */
void gwc_store_outcome(struct rs_gw_core *core, int err);
/* Queues l's admission (its state already PLACING, HANDOFF_ASKED or
 * DEFER_ASKED) and sends a batch if none is in flight. */
void gwc_admit_enqueue(struct rs_gw_link *l);
/* Sends the next batch of waiting admissions, if any may go. */
void gwc_admit_flush(struct rs_gw_core *core);
/* Takes every waiting admission out of the queue, oldest first, into out
 * (at most max); returns how many. */
size_t gwc_admit_take(struct rs_gw_core *core, struct rs_gw_link **out, size_t max);
void gwc_end_session(struct rs_gw_core *core, const char *member_id, uint64_t epoch, bool keep_place);
void gwc_flush_owed(struct rs_gw_core *core);
void gwc_owe(struct rs_gw_core *core, const char *member_id, uint64_t epoch, bool keep_place);
/* Sends l's sandbox count; -EIO at once when the store is known away. */
int gwc_send_sandboxes(struct rs_gw_link *l);

/* ---- overload.c ---- */
/* A batch of n admissions handed out at sent_ms was answered: a full one
 * is a sample of the store's pace; a partial one ends the backlog. */
void gwc_pace_batch_answered(struct rs_gw_core *core, size_t n, int64_t sent_ms);
/* Whether an arrival queued now would wait past admit_deadline_ms by the
 * store's recent pace; never while it would be in the next batch. */
bool gwc_pace_would_shed(const struct rs_gw_core *core);
/* The retry hint for an arrival of member refused for the queue's sake. */
uint32_t gwc_pace_retry_ms(const struct rs_gw_core *core, const char *member_id);
/* Refuses l (PLACING, out of the queue) with REJECT LIMIT and the hint. */
void gwc_pace_refuse(struct rs_gw_link *l, bool shed);

/* ---- rounds.c ---- */
uint32_t gwc_rounds_get(struct rs_gw_core *core, const char *member_id);
void gwc_rounds_refused(struct rs_gw_core *core, const char *member_id);
void gwc_rounds_end(struct rs_gw_core *core, const char *member_id);
void gwc_rounds_free(struct rs_gw_core *core);

/* ---- move.c ---- */
/* Asks the store to hand l off (drain) or place it by the rule (deferred). */
int gwc_move_ask(struct rs_gw_link *l, bool deferred);
/* A handoff's or deferred placement's answer. */
void gwc_move_answered(struct rs_gw_core *core, struct gwc_item *it, const struct rs_admit *a, int err);

/* ---- claim.c ---- */
void gwc_claim(struct rs_gw_link *l);
void gwc_claim_answered(struct rs_gw_core *core, struct gwc_req *req, int err);
void gwc_deferred_mark(struct rs_gw_link *l);
bool gwc_deferred_view_settled(const struct rs_gw_core *core);
void gwc_deferred_step(struct rs_gw_core *core);

/* ---- drain.c ---- */
void gwc_drain_start(struct rs_gw_core *core, bool exit_after);
void gwc_drain_step(struct rs_gw_core *core);
void gwc_drain_record(struct rs_gw_core *core);
void gwc_membership_answered(struct rs_gw_core *core, struct gwc_req *req, int err);
void gwc_record_answered(struct rs_gw_core *core, int err);
void gwc_leave_now(struct rs_gw_core *core, uint8_t reason);

/* ---- admission.c ---- */
void gwc_hello(struct rs_gw_link *l, const struct rs_hello *h);
void gwc_admission_answered(struct rs_gw_core *core, struct gwc_item *it, const struct rs_admit *a, int err);
void gwc_placement_failed(struct rs_gw_link *l, int err, bool tried);

/* ---- heartbeat.c ---- */
void gwc_heartbeat(struct rs_gw_core *core);
void gwc_heartbeat_answered(struct rs_gw_core *core, struct gwc_req *req, bool was_up, int err);

/* tokens.c: a HELLO token checked for member at the core's wall clock
 * (rs_token_verify's errors, -ERANGE beyond the expiry cap), and a REFRESH
 * token minted (rs_token_mint's errors). */
int gwc_token_verify(const struct rs_gw_core *core, const char *token, const char *member, uint64_t *expiry);
int gwc_token_mint(const struct rs_gw_core *core, const char *member, uint64_t expiry, char *out, size_t cap);

#endif
