/* SPDX-License-Identifier: Apache-2.0 */
/* member_core.h - a supervisor's side of ringsteer as a sans-I/O state
 * machine, the counterpart of gateway_core.h: no sockets, no event loop,
 * no clock reads, no files inside.
 *
 * Events go in, each with the time: start, a link connected, its bytes
 * received, a link failed, a timer due, a token loaded, the sandbox count
 * changed, stop.  Actions come out through callbacks set once: dial this
 * endpoint, send this frame, close this link, and what happened (for logs
 * and counts).  rs_mc_next_wake() says when to call rs_mc_tick().
 * Callbacks never re-enter the core, except rs_mc_set_token() from dial.
 *
 * The transitions (docs/PROTOCOL.md, "The supervisor"):
 * - start: dial the Service;
 * - REDIRECT: dial the named peer at once, asking to stay (STAY|REDIRECTED);
 *   an attached link (a drain) stays until the target accepts
 *   (make before break);
 * - a lost session: redial its last gateway asking to stay; a failed
 *   redirect: the Service asking to stay (a second one in a row before an
 *   attach backs off); a failed redial: the Service without (the rule must
 *   place it);
 * - Service failures back off 1 s doubling to 30 s, +-20% jitter
 *   (rs_retry_delay_ms); a REJECT's retry_after_ms is a floor on the next
 *   attempt, whatever the link was;
 * - the token refreshes at about 80% of its life: REFRESH, then the TOKEN
 *   answer is used by a redial of the same gateway asking to stay, the old
 *   link kept until the new one is accepted;
 * - a target learned from the wire that the embedder does not allow
 *   (dial returns -EACCES, or the link fails RS_MC_FAIL_REFUSED) counts as
 *   a failed dial of its kind, except that a refused refresh is not
 *   retried. */
#ifndef RINGSTEER_MEMBER_CORE_H
#define RINGSTEER_MEMBER_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringsteer/export.h"
#include "ringsteer/proto.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A time given with every event: monotonic for deadlines, wall for the
 * token's expiry. */
struct rs_mc_time {
	int64_t mono_ms;
	int64_t wall_ms;
};

/* Why a link is dialed. */
enum rs_mc_via {
	RS_MC_VIA_SERVICE,  /* the Service: kube-proxy (or the node agent) picks */
	RS_MC_VIA_REDIRECT, /* a REDIRECT's peer endpoint */
	RS_MC_VIA_REDIAL,   /* the last gateway, after the session was lost */
	RS_MC_VIA_REFRESH,  /* the last gateway, with a new token, while attached */
	RS_MC_VIA_COUNT
};

/* The member as a whole (from its two link slots: the attached one and the
 * one being set up). */
enum rs_mc_state {
	RS_MC_IDLE,     /* not started, or stopped */
	RS_MC_WAITING,  /* no link: a retry is due */
	RS_MC_DIALING,  /* no session: a link is being set up */
	RS_MC_ATTACHED, /* a session */
	RS_MC_MOVING,   /* a session, and the link to replace it being set up */
	RS_MC_STATE_COUNT
};

/* Why a dial or a link failed (what the embedder reports, and the core's
 * own deadlines). */
enum rs_mc_fail {
	RS_MC_FAIL_CONNECT,      /* connect or socket error, or closed before ACCEPT */
	RS_MC_FAIL_TIMEOUT,      /* no connect or no answer within dial_timeout_ms */
	RS_MC_FAIL_TLS,          /* the transport handshake failed */
	RS_MC_FAIL_REFUSED,      /* the target is not allowed, or its identity does not name its gateway */
	RS_MC_FAIL_REJECTED,     /* a REJECT */
	RS_MC_FAIL_BAD_FRAME,    /* the gateway sent what does not decode */
	RS_MC_FAIL_GOODBYE,      /* a GOODBYE before ACCEPT */
	RS_MC_FAIL_DISCONNECTED, /* an attached link broke, or went idle for three heartbeats */
	RS_MC_FAIL_COUNT
};

/* What the dial callback may answer besides 0 and -errno. */
#define RS_MC_DIAL_QUEUED 1 /* not started yet: rs_mc_link_started() when it is */

struct rs_mc_config {
	const char *member_id;     /* [a-z0-9.-], at most RS_ID_MAX bytes */
	const char *instance_id;   /* this life of the member (printable, at most RS_INSTANCE_MAX) */
	const char *service;       /* the Service endpoint, "ADDR:PORT", or "NAME:PORT" that dial resolves */
	const char *service_name;  /* the name its gateways' certificates carry (passed to dial) */
	uint64_t first_epoch;      /* epochs start here and grow per link: above any earlier life's */
	uint64_t seed;             /* the jitter's random state (splitmix64) */
	uint32_t dial_timeout_ms;  /* a connect, and then an answer, each within this */
	uint32_t sandboxes;        /* sent in HELLO and SANDBOXES */
};

struct rs_mc_core;
struct rs_mc_link;

/* What a dial asks for. */
struct rs_mc_dial {
	enum rs_mc_via via;
	const char *endpoint; /* "ADDR:PORT": the Service (as configured: maybe "NAME:PORT"), or a peer endpoint learned from the wire */
	const char *gateway;  /* the gateway id its identity must name (the service name for the Service) */
	bool stay;            /* the HELLO will ask to stay */
	bool token_expired;   /* a Service dial with an expired token: load a fresh one (rs_mc_set_token) */
};

enum rs_mc_event_type {
	RS_MC_EV_DIALING,        /* via, endpoint, gateway, stay */
	RS_MC_EV_ATTACHED,       /* via, stay, gateway, peer, epoch */
	RS_MC_EV_REDIRECTED,     /* gateway, peer, drain */
	RS_MC_EV_REJECTED,       /* code, ms (the retry hint), text */
	RS_MC_EV_GOODBYE,        /* code (enum rs_goodbye_reason), text */
	RS_MC_EV_DIAL_FAILED,    /* via, endpoint, fail, text */
	RS_MC_EV_TARGET_REFUSED, /* via, endpoint, gateway, text */
	RS_MC_EV_DISCONNECTED,   /* gateway, fail: the attached link was lost */
	RS_MC_EV_RETRY,          /* ms, stay: the next attempt is due in ms */
	RS_MC_EV_TOKEN,          /* text (the token), expiry: a new token arrived */
	RS_MC_EV_HEARTBEAT,      /* a heartbeat interval passed (sent when attached) */
	RS_MC_EV_UNEXPECTED,     /* code (the frame type): ignored */
	RS_MC_EV_COUNT
};

/* One event; the strings live until the callback returns. */
struct rs_mc_event {
	enum rs_mc_event_type type;
	enum rs_mc_via via;
	enum rs_mc_fail fail;
	bool stay;
	bool drain;
	const char *endpoint;
	const char *gateway;
	const char *peer;
	const char *text;
	uint64_t epoch;
	uint64_t expiry; /* unix seconds */
	uint32_t code;
	uint64_t ms;
};

struct rs_mc_callbacks {
	/* Start connecting link l to d->endpoint and set *link_user.  Returns
	 * 0 (then rs_mc_link_connected or rs_mc_link_failed follows),
	 * RS_MC_DIAL_QUEUED (rs_mc_link_started when the connect begins),
	 * -EACCES when the target is not allowed (*why says why), or another
	 * negative errno when the dial failed at once. */
	int (*dial)(void *user, struct rs_mc_link *l, const struct rs_mc_dial *d, void **link_user,
		    const char **why);
	/* Queue frame f on the link. */
	void (*send)(void *user, void *link_user, const struct rs_frame *f);
	/* Close the link once what was queued is flushed (best effort); l is
	 * gone from now on. */
	void (*close)(void *user, void *link_user);
	/* What happened: for logs and counts; NULL: none. */
	void (*event)(void *user, const struct rs_mc_event *e);
};

/* Where the member is, for gauges and for embedders that count. */
struct rs_mc_info {
	enum rs_mc_state state;
	const char *gateway;   /* the attached (else last) gateway's id; "" before the first attach */
	const char *peer;      /* its peer endpoint */
	uint64_t epoch;        /* the attached link's epoch (0: none) */
	int64_t lost_at_ms;    /* monotonic ms the session was lost, 0: not in a gap */
	uint64_t token_expiry; /* unix seconds */
	uint64_t attaches;
	uint64_t redirects;
	uint64_t targets_refused;
	uint64_t failures[RS_MC_FAIL_COUNT];
};

/* Creates a member core (not started).  cfg's strings must outlive it.
 * Returns 0 or -EINVAL (a bad member id, a missing field), -ENOMEM. */
RS_EXPORT int rs_mc_new(const struct rs_mc_config *cfg, const struct rs_mc_callbacks *cb, void *user,
				  struct rs_mc_core **out);

/* Frees the core without sending anything (rs_mc_stop first to say GOODBYE); closes its links. */
RS_EXPORT void rs_mc_free(struct rs_mc_core *mc);

/* Sets the token HELLO carries and schedules its refresh.  Safe from
 * inside the dial callback.  Returns 0, or -EINVAL when it is too long. */
RS_EXPORT int rs_mc_set_token(struct rs_mc_core *mc, const char *token, uint64_t expiry_s, struct rs_mc_time now);

/* Dials the Service (not asking to stay). */
RS_EXPORT void rs_mc_start(struct rs_mc_core *mc, struct rs_mc_time now);

/* Says GOODBYE on the attached link, closes every link; nothing is dialed again. */
RS_EXPORT void rs_mc_stop(struct rs_mc_core *mc, struct rs_mc_time now);

/* A queued dial's connect began: its deadline starts now. */
RS_EXPORT void rs_mc_link_started(struct rs_mc_core *mc, struct rs_mc_link *l, struct rs_mc_time now);

/* The link's transport is up (TCP, and the TLS handshake): HELLO goes out. */
RS_EXPORT void rs_mc_link_connected(struct rs_mc_core *mc, struct rs_mc_link *l, struct rs_mc_time now);

/* Feeds bytes read on the link; *consumed says how many were taken (the
 * rest is an incomplete frame, to be given again with more).  Returns 0,
 * or 1 when the link was closed meanwhile (l is gone). */
RS_EXPORT int rs_mc_link_recv(struct rs_mc_core *mc, struct rs_mc_link *l, const uint8_t *buf, size_t len,
					size_t *consumed, struct rs_mc_time now);

/* The link's transport failed or closed (text: a detail for the log, may
 * be NULL); l is gone (close is not called for it). */
RS_EXPORT void rs_mc_link_failed(struct rs_mc_core *mc, struct rs_mc_link *l, enum rs_mc_fail why, const char *text,
					   struct rs_mc_time now);

/* Sets the sandbox count and, when attached, sends it. */
RS_EXPORT void rs_mc_set_sandboxes(struct rs_mc_core *mc, uint32_t sandboxes);

/* Asks for a new token now when attached, else right after the next attach. */
RS_EXPORT void rs_mc_refresh_now(struct rs_mc_core *mc, struct rs_mc_time now);

/* Runs what is due at now: retries, refreshes, heartbeats, deadlines. */
RS_EXPORT void rs_mc_tick(struct rs_mc_core *mc, struct rs_mc_time now);

/* The monotonic ms of the next deadline, or -1 when none is armed. */
RS_EXPORT int64_t rs_mc_next_wake(const struct rs_mc_core *mc);

/* Fills *out with where the member is; its strings live until the next call into the core. */
RS_EXPORT void rs_mc_get_info(const struct rs_mc_core *mc, struct rs_mc_info *out);

/* The state's lower-case name ("attached"), or "unknown". */
RS_EXPORT const char *rs_mc_state_name(enum rs_mc_state s);

/* The via's name ("service", "redirect", "redial", "refresh"), or "unknown". */
RS_EXPORT const char *rs_mc_via_name(enum rs_mc_via v);

/* The failure's label ("connect", "timeout", ...), or "unknown". */
RS_EXPORT const char *rs_mc_fail_name(enum rs_mc_fail f);

#ifdef __cplusplus
}
#endif

#endif
