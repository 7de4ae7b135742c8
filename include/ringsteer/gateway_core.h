/* SPDX-License-Identifier: Apache-2.0 */
/* gateway_core.h - a gateway's side of ringsteer as a sans-I/O state
 * machine, in the manner of nghttp2_session and ngtcp2_conn: no sockets,
 * no event loop, no clock reads, no store calls inside.
 *
 * Events go in, each with the time: a link opened, its bytes received,
 * a store request answered, a timer due, a drain asked, a link closed.
 * Actions come out through callbacks set once: send this frame on this
 * link, close this link once flushed, run this store request, read this
 * link again.  rs_gw_core_next_wake() says when to call rs_gw_core_tick().
 * Callbacks never re-enter the core: they queue I/O and return.
 *
 * The core owns, per supervisor link, one session state (enum
 * rs_gw_session_state); admission batching (arrivals pending together
 * are one store transaction); degraded accept while the store does not
 * answer, the claim once it does, and the deferred placement of what an
 * outage left above the cap; the drain, paced by rs_drain_next(), with
 * make-before-break handoffs; and the gauges, counters and latency
 * histograms a gateway exports (the latter timed on the events' own
 * times: the core reads no clock).  Where a member goes is the store's transaction (rs_store_admit
 * over the placement rule), asked through an RS_GW_STORE_ADMIT request. */
#ifndef RINGSTEER_GATEWAY_CORE_H
#define RINGSTEER_GATEWAY_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringsteer/drain.h"
#include "ringsteer/gateway_store.h"
#include "ringsteer/histogram.h"
#include "ringsteer/keyring.h"
#include "ringsteer/proto.h"
#include "ringsteer/token.h"

#include "ringsteer/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A time given with every event: monotonic for deadlines and pacing, wall
 * for tokens (a wall-clock step moves no deadline). */
struct rs_gw_time {
	int64_t mono_ms;
	int64_t wall_ms;
};

/* Where a link is in its life.  Attached states are those from DEGRADED
 * to DEFER_MOVED: the supervisor is served here and counted. */
enum rs_gw_session_state {
	RS_GW_HANDSHAKE,     /* transport handshake under way (TLS); HELLO deadline running */
	RS_GW_HELLO,         /* waiting for HELLO (deadline running) */
	RS_GW_PLACING,       /* HELLO read: its admission is asked of the store */
	RS_GW_DEGRADED,      /* accepted while the store did not answer: unrecorded */
	RS_GW_CLAIMING,      /* degraded, its claim asked of the store */
	RS_GW_ATTACHED,      /* accepted and recorded */
	RS_GW_DEFER_DUE,     /* recorded, claimed above the cap: to be placed by the rule once */
	RS_GW_DEFER_ASKED,   /* its deferred placement asked of the store */
	RS_GW_HANDOFF_ASKED, /* draining: its handoff asked of the store */
	RS_GW_HANDOFF,       /* redirected by the drain: kept until it leaves or its deadline */
	RS_GW_DEFER_MOVED,   /* redirected by its deferred placement: likewise */
	RS_GW_CLOSING,       /* its last frame sent: closing once flushed */
	RS_GW_STATE_COUNT
};

/* Reasons a link is refused, as metric labels; order = enum. */
enum rs_gw_reject {
	RS_GW_REJECT_BAD_FRAME,
	RS_GW_REJECT_BAD_VERSION,
	RS_GW_REJECT_BAD_TOKEN,
	RS_GW_REJECT_BAD_MEMBER,
	RS_GW_REJECT_HELLO_TIMEOUT,
	RS_GW_REJECT_SUPERSEDED,
	RS_GW_REJECT_UNAVAILABLE,
	RS_GW_REJECT_LIMIT,             /* the admission queue: past its deadline, or shed (REJECT LIMIT) */
	RS_GW_REJECT_FRAME_TOO_LARGE,   /* a frame announced more than max_frame */
	RS_GW_REJECT_UNAUTH_PER_SOURCE, /* the caller's per-source limit at accept */
	RS_GW_REJECT_UNAUTH_TOTAL,      /* the caller's total limit at accept */
	RS_GW_REJECT_SESSIONS,          /* max_sessions reached */
	RS_GW_REJECT_TLS_HANDSHAKE,     /* the transport handshake failed */
	RS_GW_REJECT_CLIENT_CERT,       /* the peer's identity does not name the HELLO's member */
	RS_GW_REJECT_COUNT
};

/* How a link ended, as the caller saw it. */
enum rs_gw_link_end {
	RS_GW_LINK_FLUSHED, /* the core closed it and its output is flushed (or the flush gave up) */
	RS_GW_LINK_LOST,    /* the peer went away, or a transport error */
	RS_GW_LINK_IDLE,    /* nothing read for three heartbeats */
};

struct rs_gw_core_config {
	const char *id;             /* gateway id on the ring */
	const char *advertise_peer; /* sent in ACCEPT, recorded in the store */
	const struct rs_secret *secret; /* verifies HELLO tokens, mints REFRESH ones */
	uint32_t heartbeat_ms;
	uint32_t ttl_ms;
	uint32_t hello_timeout_ms;
	uint32_t handoff_timeout_ms;
	uint32_t home_grace_ms;     /* a departure's place kept this long (0: freed) */
	uint32_t token_ttl_s;
	uint32_t max_frame;         /* bytes, length field included */
	uint32_t max_sessions;      /* 0: no limit */
	uint32_t limit_retry_ms;
	bool no_placement;          /* accept everyone where they land */
	bool registered;            /* the store already has our row (the caller registered) */
	struct rs_drain_config drain;
	uint32_t store_queue_max;   /* store requests unanswered past which arrivals go degraded (0: default) */
	/* How long an arrival may wait for its admission (0: RS_GW_ADMIT_DEADLINE_DEFAULT_MS,
	 * the member's dial deadline): one still queued then, or that the
	 * queue ahead of it would keep longer, is refused with REJECT LIMIT
	 * and a retry hint instead of being admitted after its member left. */
	uint32_t admit_deadline_ms;
	/* Admissions decided in one store transaction at most (0:
	 * RS_GW_ADMIT_BATCH_DEFAULT).  A batch takes what queued while the last
	 * one was out, so it grows with the queue up to this; larger batches
	 * take the fleet's writer lock fewer times for the same arrivals. */
	uint32_t admit_batch_max;
};

#define RS_GW_ADMIT_DEADLINE_DEFAULT_MS 2000 /* rs_mc_config.dial_timeout_ms's usual value */
#define RS_GW_ADMIT_BATCH_DEFAULT 128 /* bench/fleet.sh: 512 was no faster at 16 gateways */
#define RS_GW_ADMIT_BATCH_LIMIT 65536 /* rs_gw_core_new refuses more (-EINVAL) */

struct rs_gw_callbacks {
	/* Queue frame f on the link. */
	void (*send)(void *user, void *link_user, const struct rs_frame *f);
	/* Stop reading the link, close it once its output is flushed, then
	 * call rs_gw_core_link_closed(RS_GW_LINK_FLUSHED). */
	void (*close)(void *user, void *link_user);
	/* Read the link again soon (not from inside this callback): frames
	 * that waited while it was placed are to be fed now. */
	void (*resume)(void *user, void *link_user);
	/* Run req, then give it to rs_gw_core_store_done().  Returns 0, or
	 * negative errno when it cannot be queued (the core keeps req). */
	int (*store)(void *user, struct rs_gw_store_req *req);
	/* Whether the link's transport identity names member_id (mTLS); NULL: no check. */
	bool (*peer_is)(void *user, void *link_user, const char *member_id);
	/* One log line: level, then key/value pairs ending in NULL. */
	void (*log)(void *user, const char *level, const char *const *kv);
	/* Stopping and drained: every link has been told; leave (the store's
	 * row of this gateway is to be removed with its sessions). */
	void (*exit)(void *user);
};

struct rs_gw_counters {
	uint64_t accepts;             /* placements that attached here */
	uint64_t redirects_placement; /* placements that sent the member elsewhere */
	uint64_t redirects_drain;
	uint64_t redirects_deferred;  /* degraded arrivals placed by the rule once claimed */
	uint64_t over_cap_accepts;    /* fallbacks accepted above the cap for liveness */
	uint64_t stays;               /* accepts honoring STAY */
	uint64_t reserved;            /* accepts where the member's reservation was */
	uint64_t owner_fallbacks;
	uint64_t rejects[RS_GW_REJECT_COUNT];
	uint64_t store_errors;
	uint64_t superseded_closed;   /* attached links closed for a newer epoch */
	uint64_t handoffs_completed;  /* redirected by the drain, left before the deadline */
	uint64_t handoffs_timed_out;  /* redirected, still attached at the deadline: closed */
	uint64_t handoffs_abandoned;  /* still attached when the budget ran out: closed */
	uint64_t degraded_accepts;    /* accepted without the store */
	uint64_t claims_recorded;
	uint64_t claims_superseded;
	uint64_t store_batches;       /* admission transactions asked */
	uint64_t store_batched;       /* admissions and handoffs decided in them */
	uint64_t store_cancelled;     /* queued admissions answered unavailable behind a stalled store */
	uint64_t store_statements;    /* the store's statement count, as of the last heartbeat */
	uint64_t refresh_limited;     /* REFRESH frames dropped: more than one per heartbeat on a link */
	uint64_t sandboxes_coalesced; /* SANDBOXES frames folded into the next write (one per heartbeat) */
	uint64_t store_queue_full;    /* arrivals accepted degraded because store_queue_max requests were unanswered */
	/* store_errors by rs_store_error_kind(): a full disk, a read-only or
	 * damaged store each want a person, "unavailable" mostly waiting */
	uint64_t store_errors_kind[RS_STORE_ERROR_KINDS];
	/* Goodput under overload: arrivals the store was not (or no longer) asked about. */
	uint64_t arrivals_expired;    /* their link closed before the store answered: dropped unadmitted */
	uint64_t arrivals_timed_out;  /* still queued at admit_deadline_ms: REJECT LIMIT */
	uint64_t arrivals_shed;       /* the queue ahead would outlast admit_deadline_ms: REJECT LIMIT at once */
	uint64_t sandboxes_unchanged; /* SANDBOXES frames the store already had (the count last written): no write */
};

struct rs_gw_gauges {
	uint64_t supervisors;       /* attached links */
	uint64_t busiest;           /* most sandboxes on one of them */
	uint64_t unrecorded;        /* attached degraded, not claimed yet */
	uint64_t deferred_pending;  /* deferred placements due or asked */
	uint64_t store_queue;       /* store requests handed out, not answered */
	bool store_up;              /* the last store answer came */
	bool registered;            /* the store has our row */
	bool draining;
	bool stopping;              /* exits once drained */
	int64_t store_clock_skew_ms; /* the store's wall clock minus ours, as of the last
				      * heartbeat (PostgreSQL's server; 0: SQLite, one machine) */
};

struct rs_gw_core;
struct rs_gw_link;

/* Makes a core (cfg's strings and secret must outlive it).  Returns 0,
 * -EINVAL (a required field or callback missing), -ENOMEM. */
RS_EXPORT int rs_gw_core_new(const struct rs_gw_core_config *cfg, const struct rs_gw_callbacks *cb, void *user,
			     struct rs_gw_time now, struct rs_gw_core **out);

/* Frees the core and every link it holds, calling nothing; NULL allowed. */
RS_EXPORT void rs_gw_core_free(struct rs_gw_core *core);

#define RS_GW_TOKEN_MAX_TTL_DEFAULT 86400 /* s: how far ahead a HELLO token may expire, unless set */

/* Verifies HELLO tokens with keys (the key each names) instead of cfg's
 * secret, and mints REFRESH tokens with its signing key; keys must outlive
 * the core.  Returns 0 or -EINVAL (NULL, or no key). */
RS_EXPORT int rs_gw_core_set_keyring(struct rs_gw_core *core, const struct rs_keyring *keys);

/* Refuses (BAD_TOKEN) a HELLO token expiring more than max_ttl_s after now
 * (until set: RS_GW_TOKEN_MAX_TTL_DEFAULT, or cfg's token_ttl_s if longer).
 * Returns 0, or -EINVAL when max_ttl_s is below cfg's token_ttl_s. */
RS_EXPORT int rs_gw_core_set_token_max_ttl(struct rs_gw_core *core, uint32_t max_ttl_s);

/* A link accepted from source ("ADDR:PORT"); handshaking: its transport
 * handshake runs first (rs_gw_core_link_secured() ends it).  Returns 0 and
 * *out, or -ENOMEM (nothing kept: close the socket). */
RS_EXPORT int rs_gw_core_link_open(struct rs_gw_core *core, void *link_user, const char *source, bool handshaking,
				   struct rs_gw_time now, struct rs_gw_link **out);

/* The link's transport handshake completed. */
RS_EXPORT void rs_gw_core_link_secured(struct rs_gw_core *core, struct rs_gw_link *l);

/* Bytes read on the link, buf[0..len): decodes and acts on whole frames,
 * setting *consumed to the bytes used (the rest is to be fed again with
 * more, or after resume()).  Returns 0. */
RS_EXPORT int rs_gw_core_link_recv(struct rs_gw_core *core, struct rs_gw_link *l, const uint8_t *buf, size_t len,
				   size_t *consumed, struct rs_gw_time now);

/* The link is gone (how: end); the core forgets it and its link_user. */
RS_EXPORT void rs_gw_core_link_closed(struct rs_gw_core *core, struct rs_gw_link *l, enum rs_gw_link_end end,
				      struct rs_gw_time now);

/* The link's state. */
RS_EXPORT enum rs_gw_session_state rs_gw_link_state(const struct rs_gw_link *l);

/* A store request handed out by the store callback, answered: err is
 * rs_gw_store_run()'s return. */
RS_EXPORT void rs_gw_core_store_done(struct rs_gw_core *core, struct rs_gw_store_req *req, int err,
					 struct rs_gw_time now);

/* The store call running now has taken longer than any bound should let it:
 * the store is judged unavailable and the admissions waiting for it are
 * accepted degraded at once. */
RS_EXPORT void rs_gw_core_store_stalled(struct rs_gw_core *core, struct rs_gw_time now);

/* When rs_gw_core_tick() is next due (monotonic ms). */
RS_EXPORT int64_t rs_gw_core_next_wake(const struct rs_gw_core *core);

/* Runs what is due at now: deadlines, the heartbeat, the drain's and the
 * deferred placements' steps. */
RS_EXPORT void rs_gw_core_tick(struct rs_gw_core *core, struct rs_gw_time now);

/* Starts draining (no-op if draining, but for exit_after): handoffs paced
 * within the budget; exit_after: calls exit() once drained. */
RS_EXPORT void rs_gw_core_drain(struct rs_gw_core *core, bool exit_after, struct rs_gw_time now);

/* Leaves now: GOODBYE reason to every attached link, every link closed,
 * no session ended one by one (the caller removes our row with them). */
RS_EXPORT void rs_gw_core_stop_now(struct rs_gw_core *core, uint8_t goodbye_reason);

/* A connection the caller refused before it became a link (its limits at
 * accept, a failed handshake): counted and logged as the core's own. */
RS_EXPORT void rs_gw_core_refused(struct rs_gw_core *core, enum rs_gw_reject why, const char *source, const char *text,
				  struct rs_gw_time now);

/* The counters (owned by the core; valid until it is freed). */
RS_EXPORT const struct rs_gw_counters *rs_gw_core_counters(const struct rs_gw_core *core);

/* Fills g with the gauges as of now (walks the links for the busiest). */
RS_EXPORT void rs_gw_core_gauges(const struct rs_gw_core *core, struct rs_gw_gauges *g);

/* The durations the core measures, each between two of its events, on the
 * times those events carried (struct rs_gw_time's mono_ms: whole
 * milliseconds, so anything quicker reads 0). */
enum rs_gw_histogram {
	/* A HELLO read to the ACCEPT or placement REDIRECT sent for it
	 * (degraded accepts included; refusals are counted in rejects only):
	 * the store's admission transaction and the queue before it. */
	RS_GW_HIST_ADMISSION,
	/* A drain's REDIRECT sent to the end of the supervisor's old link: it
	 * left once accepted at its target (make before break), or was closed
	 * at handoff_timeout_ms, or when the drain's budget ran out.  Each
	 * drain redirect is observed once, when its link leaves HANDOFF. */
	RS_GW_HIST_HANDOFF,
	RS_GW_HIST_COUNT
};

/* The histogram of which (owned by the core; valid until it is freed), or
 * NULL for an unknown which.  Its bounds are the core's, fixed (listed,
 * with the reasons for them, in docs/OPERATIONS.md's gateway metrics). */
RS_EXPORT const struct rs_histogram *rs_gw_core_histogram(const struct rs_gw_core *core, enum rs_gw_histogram which);

/* The reject reason's metric label ("bad_frame", ...). */
RS_EXPORT const char *rs_gw_reject_label(enum rs_gw_reject r);

/* The state's name ("attached", ...), for logs and tests. */
RS_EXPORT const char *rs_gw_state_name(enum rs_gw_session_state s);

#ifdef __cplusplus
}
#endif

#endif
