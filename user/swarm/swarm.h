/* SPDX-License-Identifier: Apache-2.0 */
/* swarm.h - ringsteer-swarm: N supervisors in one process on one event
 * loop, each a full protocol client behaving as the reference supervisor
 * (user/supervisor/client.c) does, for load tests.  Per member only what
 * its state machine needs (no name, no address, no per-member events but
 * one timer): ids, source addresses and instance ids are derived from the
 * member's number; gateway ids and peer endpoints are kept once in a small
 * table that members point into. */
#ifndef RS_SWARM_H
#define RS_SWARM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <openssl/ssl.h>

#include "util/cidr.h"
#include "util/resolver.h"
#include "ringsteer/member_core.h"
#include "ringsteer/proto.h"
#include "ringsteer/keyring.h"
#include "ringsteer/token.h"
#include "gap.h"

#define SWARM_ALLOW_MAX 32        /* --redirect-allow prefixes */
#define SWARM_GATEWAYS_MAX 1024   /* distinct (gateway id, peer) pairs remembered */
#define SWARM_NO_GW UINT16_MAX    /* a member with no gateway yet */
#define SWARM_PREFIX_MAX 200      /* --prefix bytes: room for the member number */

struct swarm_config {
	const char *service;
	const char *secret_file;
	uint32_t count;
	const char *prefix;
	struct rs_cidr bind;
	uint32_t sandboxes;
	uint32_t concurrency;
	uint32_t dial_timeout_ms;
	uint32_t token_ttl_s;
	const char *tls_ca;
	const char *tls_server_name;
	bool insecure;
	struct rs_cidr allow[SWARM_ALLOW_MAX];
	size_t n_allow;
	const char *metrics;
};

/* Why a dial or a link failed: the failures_total{reason} label. */
enum swarm_failure {
	FAIL_CONNECT,        /* TCP connect or socket error, or a closed link before ACCEPT */
	FAIL_TIMEOUT,        /* no connect or no answer within --dial-timeout */
	FAIL_TLS,            /* the handshake failed or the certificate was refused */
	FAIL_REJECTED,       /* a REJECT */
	FAIL_TARGET_REFUSED, /* a redirect/redial target not allowed (--redirect-allow) */
	FAIL_BAD_FRAME,      /* the gateway sent what does not decode */
	FAIL_GOODBYE,        /* a GOODBYE before ACCEPT */
	FAIL_DISCONNECTED,   /* an attached link broke (a blip) */
	FAIL_SOURCE,         /* the source address could not be bound */
	FAIL_RESOLVE,        /* the Service's name did not resolve (--service NAME:PORT) */
	FAIL_COUNT,
};

struct swarm_gateway {
	char id[RS_ID_MAX + 1];
	char peer[RS_ENDPOINT_MAX + 1];
	uint32_t attached; /* members whose active link is here */
};

/* One link of a member: a bufferevent once connecting.  A Service dial by
 * name first waits for its lookup, then tries the answers in turn
 * (service_name.c). */
struct swarm_link {
	struct swarm *sw;
	struct swarm_member *m;
	struct rs_mc_link *core;
	struct bufferevent *bev;       /* NULL while it waits for a dial slot, its lookup, or its next answer */
	bool in_progress;              /* holds a dial slot: looking up, connecting or awaiting the answer */
	struct rs_resolve_req *lookup; /* in flight, or NULL */
	struct rs_resolved *answers;   /* a Service dial by name: its answers, else NULL */
	size_t next;                   /* the next answer to try */
	struct event *answer_timer;    /* each answer's connect deadline (--dial-timeout) */
};

struct swarm_member {
	struct swarm *sw;
	struct rs_mc_core *mc;      /* its transitions (member.c is its I/O) */
	struct swarm_link *dialing; /* the link being set up: holding a dial slot, or in line for one */
	struct event *timer;        /* the core's next wake */
	char *id, *instance;        /* prefix + number; "<instance>-<number>" */
	uint64_t lost_at_us;        /* monotonic us its session was lost; 0: not in a gap (gap.h) */
	uint64_t counted_epoch;     /* the attached link counted in the totals (0: none) */
	uint32_t number;            /* 1..N */
	uint32_t queue_next;        /* the dial queue's link: a member number, 0 = none */
	uint16_t counted_gw;        /* the gateway entry counted with it */
	uint16_t want_gw;           /* the wanted dial's target entry (SWARM_NO_GW: the Service) */
	uint8_t want_via;           /* its enum rs_mc_via */
	bool want_dial, queued;
};

struct swarm {
	struct swarm_config cfg;
	struct event_base *base;
	struct swarm_member *members;
	struct rs_keyring keys;      /* --secret: members' tokens are minted with its signing key */
	SSL_CTX *tls;
	struct rs_resolver *resolver; /* --service NAME:PORT: its lookups, off the loop; else NULL */
	char who[SWARM_PREFIX_MAX + 16];
	char service_name[RS_ENDPOINT_MAX + 1];
	char instance[17];          /* this process: instance ids are "<instance>-<number>" */
	uint64_t next_epoch;        /* where every member's epochs start: above any earlier run's */
	uint64_t rng;
	struct swarm_gateway gateways[SWARM_GATEWAYS_MAX];
	uint16_t n_gateways;
	/* The dial queue (--concurrency): members waiting for a free slot. */
	uint32_t in_progress;       /* links connecting or awaiting an answer */
	uint32_t queue_head, queue_tail;
	struct event *pump_ev;
	/* Counts. */
	uint32_t attached;
	uint64_t attaches;          /* sessions accepted, every one (a rate: attaches per second) */
	uint64_t progress_attaches, progress_rejected; /* as of the last progress line */
	struct event *progress_ev;  /* once a second: event=progress while not all are attached */
	uint64_t redirects;
	uint64_t failures[FAIL_COUNT];
	uint64_t started_ms;        /* monotonic */
	int64_t all_attached_ms;    /* -1 until all N were attached once */
	struct swarm_gaps gaps;     /* time members spent without a session after having one */
	/* Failure lines: a token bucket so 10,000 members failing at once log
	 * a few lines and a count, not 10,000. */
	uint64_t log_credit_milli, log_last_ms, log_suppressed;
	enum swarm_failure fail_hint; /* the label of the failure being reported (FAIL_COUNT: from the core) */
	bool stopping;
	struct rs_http *http;
	struct event *sigterm_ev, *sigint_ev;
};

/* Sets member m up as number (1..N): its timer and token, then its first
 * Service dial (member.c).  Returns 0 or -errno (nothing dialed). */
int swarm_member_start(struct swarm *sw, struct swarm_member *m, uint32_t number);

/* Says GOODBYE on m's attached link, frees both links, its timer and token
 * (member.c); safe on a member never started. */
void swarm_member_stop(struct swarm_member *m);

/* The dial queue (dial_queue.c): swarm_dial_slot takes a slot if one is
 * free; otherwise swarm_dial_enqueue puts m in line (at the front when
 * urgent: a member already on its way, not a fresh arrival).  The pump
 * event dials queued members as slots free up. */
bool swarm_dial_slot(struct swarm *sw);
void swarm_dial_release(struct swarm *sw);
void swarm_dial_enqueue(struct swarm *sw, struct swarm_member *m, bool urgent);
void swarm_on_pump(evutil_socket_t fd, short what, void *arg);

/* After every call into m's core: counts, gap, timer (member.c). */
void swarm_member_settle(struct swarm_member *m);

/* Frees l: its dial slot, bufferevent, lookup (cancelled), timer (member.c). */
void swarm_link_free(struct swarm_link *l);

/* Connects l to to, a dial slot held.  Returns 0, or -errno with *kind and
 * *why set (l then has no bev) (member.c). */
int swarm_link_connect(struct swarm_link *l, const struct sockaddr_storage *to, socklen_t to_len,
		       enum swarm_failure *kind, const char **why);

/* Starts a Service dial by name: the lookup, then the answers in turn; the
 * core was (or is about to be) told RS_MC_DIAL_QUEUED.  Returns 0 or
 * -errno (service_name.c). */
int swarm_service_by_name(struct swarm_link *l);

/* l's connect or handshake failed (why): whether the next answer is being
 * tried (l stays), or none is left (service_name.c). */
bool swarm_next_answer(struct swarm_link *l, const char *why);

/* Connects m's queued link (want_via, want_gw), a slot being held
 * (member.c; the pump calls it). */
void swarm_member_dial_now(struct swarm *sw, struct swarm_member *m);

/* The gateway table (gateways.c): the entry for (id, peer), added if new;
 * SWARM_NO_GW when the table is full. */
uint16_t swarm_gateway_intern(struct swarm *sw, const char *id, const char *peer);

/* /metrics (metrics.c).  Returns 0 or -errno. */
int swarm_metrics_serve(struct swarm *sw);

/* The one-line summary (main.c): event=all_attached or event=stopping. */
void swarm_summary(struct swarm *sw, const char *event);

/* Monotonic microseconds (member.c; milliseconds: rs_mono_ms). */
uint64_t swarm_now_us(void);

/* The longest time any member has been without a session after having
 * had one, open gaps included, in microseconds (member.c). */
uint64_t swarm_gap_max_us(const struct swarm *sw);

/* A failure: counted; one line for the member, rate limited (log_rate.c). */
void swarm_failure(struct swarm *sw, const struct swarm_member *m, enum swarm_failure why, const char *event,
		   const char *detail);

/* The failure's label (log_rate.c). */
const char *swarm_failure_label(enum swarm_failure why);

#endif
