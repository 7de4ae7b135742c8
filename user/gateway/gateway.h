/* gateway.h - the reference gateway's state, shared by its files: the
 * configuration, the event loop and its listeners, the store and whether it
 * answers, the attached connections, and the counters /metrics exports.  One gateway per process;
 * everything hangs off the struct gateway that main() owns. */
#ifndef RS_GATEWAY_H
#define RS_GATEWAY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <openssl/ssl.h>

#include "ringsteer/drain.h"
#include "ringsteer/proto.h"
#include "ringsteer/store.h"
#include "ringsteer/store_worker.h"
#include "ringsteer/token.h"
#include "unauth.h"

struct gw_config {
	const char *id;
	const char *listen;          /* where the Service delivers */
	const char *peer;            /* peer endpoint: listened on */
	const char *advertise_peer;  /* advertised in the store and ACCEPT; default peer */
	const char *store_url;
	const char *secret_file;
	const char *metrics;         /* ADDR:PORT for /metrics, /readyz, /healthz, or NULL */
	const char *agent;           /* the node agent's registration socket, or NULL */
	uint32_t heartbeat_ms;
	uint32_t ttl_ms;
	uint32_t hello_timeout_ms;
	uint32_t reservation_ms;
	uint32_t token_ttl_s;        /* lifetime of tokens minted on REFRESH */
	uint32_t home_grace_ms;      /* a departure's place kept this long (0: freed) */
	bool home_grace_set;         /* --home-grace given; else it is the TTL */
	bool no_placement;           /* accept everyone where they land (benchmarks) */
	struct rs_drain_config drain;
	uint32_t handoff_timeout_ms; /* a redirected supervisor's old link is kept this long */
	uint32_t store_timeout_ms;   /* longest wait for the store per call (its lock, its
				      * answer); a call running past twice this marks the store
				      * unavailable (the loop never waits for it) */
	uint32_t max_frame;          /* bytes, length field included: larger frames are refused */
	uint32_t max_unauth;         /* connections not yet past HELLO + token, in total */
	uint32_t max_unauth_per_source; /* the same, per peer IP address */
	uint32_t max_sessions;       /* attached supervisors; 0: no limit */
	uint32_t limit_retry_ms;     /* retry_after_ms sent with REJECT LIMIT */
	const char *tls_cert;        /* PEM chain: TLS 1.3 on both listeners */
	const char *tls_key;
	const char *tls_ca;          /* verify client certificates against it (mTLS) */
	bool insecure;               /* plaintext, by explicit choice */
};

/* Reasons a connection is refused, as metric labels; order = enum. */
enum gw_reject {
	GW_REJECT_BAD_FRAME,
	GW_REJECT_BAD_VERSION,
	GW_REJECT_BAD_TOKEN,
	GW_REJECT_BAD_MEMBER,
	GW_REJECT_HELLO_TIMEOUT,
	GW_REJECT_SUPERSEDED,
	GW_REJECT_UNAVAILABLE,
	GW_REJECT_LIMIT,             /* reserved label, kept for existing queries: unused */
	GW_REJECT_FRAME_TOO_LARGE,   /* a frame announced more than --max-frame */
	GW_REJECT_UNAUTH_PER_SOURCE, /* --max-unauth-per-source reached at accept */
	GW_REJECT_UNAUTH_TOTAL,      /* --max-unauth reached at accept */
	GW_REJECT_SESSIONS,          /* --max-sessions reached: the arrival would exceed it */
	GW_REJECT_TLS_HANDSHAKE,     /* the TLS handshake failed (no, or a refused, client certificate, ...) */
	GW_REJECT_CLIENT_CERT,       /* mTLS: the client certificate does not name the HELLO's member */
	GW_REJECT_COUNT
};

/* A token bucket for one kind of log line that a peer can cause at will:
 * bursts pass, a flood is summarised (the next line logged says how many
 * were dropped) instead of filling the disk (log_rate.c). */
struct gw_log_rate {
	int64_t last_ms;       /* monotonic: last refill */
	uint32_t credit_milli; /* thousandths of a line */
	uint64_t suppressed;   /* lines dropped since the last one logged */
};

/* Outcomes of a registration attempt with the node agent, as metric labels
 * (ringsteer_gateway_agent_registrations_total{result}); order = enum. */
enum gw_agent_result {
	GW_AGENT_OK,      /* registered */
	GW_AGENT_ABSENT,  /* no socket file, or nobody listening on it */
	GW_AGENT_REFUSED, /* the agent answered with a refusal (its reason is logged) */
	GW_AGENT_TIMEOUT, /* no reply within the attempt's timeout */
	GW_AGENT_ERROR,   /* anything else: permissions, a broken reply, socket errors */
	GW_AGENT_RESULT_COUNT
};

/* Which agent instance a socket path names: a restarted agent binds a new
 * socket file, so a new inode (ctime guards against the inode number being
 * reused by a filesystem that recycles them).  present false: no file. */
struct gw_agent_stamp {
	bool present;
	dev_t dev;
	ino_t ino;
	struct timespec ctime;
};

/* One listening socket's standing with the node agent (agent_registration.c). */
struct gw_agent_link {
	bool registered;         /* the agent at `at` accepted this socket */
	struct gw_agent_stamp at; /* the socket path's identity just before that success */
	int last_err;            /* the failure last logged; 0: none since start or the last success */
	uint8_t last_reason;     /* with last_err -EACCES: the agent's reason */
	int64_t logged_ms;       /* monotonic: when a failure was last logged */
	uint64_t failures;       /* failed attempts since the last success */
};

struct gw_counters {
	uint64_t accepts;             /* placements that attached here */
	uint64_t redirects_placement; /* placements that sent the member elsewhere */
	uint64_t redirects_drain;
	uint64_t redirects_deferred;  /* degraded arrivals placed by the rule once claimed */
	uint64_t over_cap_accepts;    /* fallbacks accepted above the cap for liveness */
	uint64_t stays;               /* accepts honoring STAY */
	uint64_t reserved;            /* accepts where the member's reservation was (store_admit.c) */
	uint64_t owner_fallbacks;
	uint64_t rejects[GW_REJECT_COUNT];
	uint64_t store_errors;
	uint64_t superseded_closed;   /* attached connections closed for a newer epoch */
	uint64_t handoffs_completed;  /* redirected by the drain, left before the deadline */
	uint64_t handoffs_timed_out;  /* redirected, still attached at the deadline: closed */
	uint64_t handoffs_abandoned;  /* still attached when the budget ran out: closed */
	uint64_t degraded_accepts;    /* accepted without the store (it was unavailable) */
	uint64_t claims_recorded;     /* degraded sessions the store learnt on its return */
	uint64_t claims_superseded;   /* degraded sessions the store had a newer epoch for: closed */
	uint64_t tls_reloads_ok;      /* SIGHUP: certificate, key and CA read anew */
	uint64_t tls_reloads_failed;  /* SIGHUP: the files were unusable; the old ones still serve */
	uint64_t agent_attempts[GW_AGENT_RESULT_COUNT]; /* registrations with the node agent, by result */
	uint64_t store_batches;       /* admission transactions run (each decides one or more) */
	uint64_t store_batched;       /* admissions and handoffs decided in them */
	uint64_t store_cancelled;     /* queued admissions answered "unavailable" behind a stuck call */
	uint64_t store_statements;    /* the store handle's rs_store_statements(), as of the last heartbeat */
};

/* A session end the store could not be told yet (store_call.c): kept until
 * it answers, because nothing else ever ends an attached row now. */
struct gw_owed_end {
	struct gw_owed_end *next;
	uint64_t epoch;
	bool keep_place;
	char member_id[RS_ID_MAX + 1];
};

/* A member's Service fallbacks refused here in a row (rounds.c). */
struct gw_round {
	struct gw_round *next;
	uint32_t n;
	int64_t last_ms; /* monotonic: the last refusal */
	char member_id[RS_ID_MAX + 1];
};

struct gw_conn;
struct gw_member;

struct gateway {
	struct gw_config cfg;
	char who[RS_ID_MAX + 16];     /* "gateway=<id>" for log lines */
	struct event_base *base;
	struct rs_store *store;       /* owned by the worker while it runs: never used on the loop */
	struct rs_store_worker *worker; /* every store call, off the loop (store_call.c) */
	struct event *store_watch_ev; /* judges a call that runs too long (store_health.c) */
	struct rs_secret secret;
	struct evconnlistener *listen_lst, *peer_lst;
	struct evhttp *http;
	struct event *heartbeat_ev, *sigterm_ev, *sigint_ev, *sighup_ev;
	SSL_CTX *tls;                 /* new connections' context; NULL: plaintext (--insecure).
				       * A reload swaps it; live connections keep theirs */
	int64_t tls_not_after;        /* its certificate's expiry, seconds since the epoch */
	uint64_t tls_stamp;           /* the TLS files' identity when last (re)loaded */
	uint8_t heartbeat_frame[16];  /* HEARTBEAT, encoded once: queued by reference */
	size_t heartbeat_len;         /* 0: not encoded (each is then encoded anew) */
	struct gw_conn *conns;        /* every open connection, doubly linked */
	struct gw_member *members;    /* attached connections by member id (member_index.c) */
	size_t n_attached;
	size_t n_unrecorded;          /* attached, accepted degraded, not claimed yet */
	size_t n_handoff_jobs;        /* handoff transactions submitted, not answered */
	size_t n_handoff_conns;       /* redirected by the drain, still attached */
	struct gw_conn *drain_cursor; /* where the drain looks for the next one to hand off */
	struct gw_owed_end *owed;     /* session ends waiting for the store */
	bool heartbeat_in_flight;     /* a store heartbeat is queued or running */
	bool sandboxes_owed;          /* some connection's count waits for the store */
	bool membership_in_flight;    /* the drain's membership read is queued or running */
	bool others_serving;          /* its answer: another serving gateway is live */
	bool exiting;                 /* leaving: the gateway's row goes, with every session row */
	bool remove_on_exit;          /* delete our row once the worker has stopped */
	bool registered;              /* the store has our row: /readyz */
	bool stopping;                /* SIGTERM: exit once drained */
	bool draining;                /* handing off; not ready; never a target */
	bool drain_unrecorded;        /* draining, but the store has not been told yet */
	bool store_up;                /* the last store operation found the store answering */
	struct rs_drain drain;
	const struct rs_clock *clock; /* the drain's clock: rs_clock_system() */
	struct event *drain_ev;
	struct event *deferred_ev;    /* paces deferred placements (deferred.c) */
	size_t n_deferred_due;        /* connections marked deferred_due */
	size_t n_deferred_jobs;       /* deferred placements submitted, not answered */
	int64_t store_back_ms;        /* monotonic: when the store last answered again */
	struct gw_round *rounds;      /* fallback runs under way (rounds.c) */
	struct gw_counters counters;
	struct gw_unauth unauth;      /* connections waiting for HELLO, per source */
	struct gw_log_rate reject_log[GW_REJECT_COUNT];
	struct gw_agent_link agent_listen, agent_peer; /* with --agent: each listener's registration */
};

/* Accepts a new connection from a listener (conn.c). */
void gw_conn_accept(struct evconnlistener *lst, evutil_socket_t fd, struct sockaddr *sa, int socklen, void *arg);

/* Frees the member index (member_index.c; the connections are not touched). */
void gw_member_index_free(struct gateway *gw);

/* Frees every connection, sending GOODBYE reason first (conn.c). */
void gw_conn_close_all(struct gateway *gw, uint8_t goodbye_reason);

/* The heartbeat tick: sends HEARTBEAT to every attached supervisor and
 * submits the store heartbeat (our row only); when the store answers after
 * an outage, claims the sessions accepted meanwhile (heartbeat.c). */
void gw_conn_heartbeat(struct gateway *gw);

/* Returns the number of attached supervisors, the most sandboxes one of
 * them carries, and how many of them the store does not know yet (accepted
 * degraded) (conn.c); supervisors being handed off still count. */
void gw_conn_gauges(const struct gateway *gw, uint64_t *supervisors, uint64_t *busiest, uint64_t *unrecorded);

/* The drain's budget is spent (RS_DRAIN_CLOSE_REST): sends GOODBYE
 * shutdown to every supervisor still attached, ending its handoff if one is
 * in flight, and counts and logs each as a handoff abandoned (conn.c). */
void gw_conn_goodbye_rest(struct gateway *gw);

/* Starts draining (drain.c): row draining, /readyz failing, paced handoffs.
 * exit_after: leave the loop once drained (SIGTERM). */
void gw_drain_start(struct gateway *gw, bool exit_after);

/* The drain's timer callback (drain.c). */
void gw_drain_tick(evutil_socket_t fd, short what, void *arg);

/* A member's fallback rounds refused here in a row (rounds.c): how many;
 * one more refused; the run ended (it attached here); all freed. */
uint32_t gw_rounds_get(struct gateway *gw, const char *member_id);
void gw_rounds_refused(struct gateway *gw, const char *member_id);
void gw_rounds_end(struct gateway *gw, const char *member_id);
void gw_rounds_free(struct gateway *gw);

/* The deferred placements' timer callback: hands off the next connection
 * marked deferred_due, one per --drain-pace (deferred.c). */
void gw_deferred_tick(evutil_socket_t fd, short what, void *arg);

/* Writes our row's draining state (off the loop); drain_unrecorded stays
 * set until the store has it (drain.c). */
void gw_drain_record(struct gateway *gw);

/* Whether err from a store call means the store is unavailable (the backend
 * could not get an answer: busy past the timeout, I/O, a lost connection),
 * as opposed to an answer the caller handles (store_health.c). */
bool gw_store_unavailable(int err);

/* Records a store call's outcome in store_up (0 or an answer: up; an
 * unavailable error: down), logging each change once (store_health.c). */
void gw_store_outcome(struct gateway *gw, int err);

/* Whether store calls other than the heartbeat should be tried: after a
 * failure only the heartbeat probes the store, so an outage holds the
 * worker one store timeout per heartbeat, not one per arrival, and
 * arrivals are accepted degraded at once (store_health.c). */
bool gw_store_usable(const struct gateway *gw);

/* Starts the watch that judges the store unavailable when one call has run
 * past twice --store-timeout, answering the admissions queued behind it at once
 * (store_health.c).  Returns 0 or -ENOMEM. */
int gw_store_watch_start(struct gateway *gw);

/* A store call made off the loop (store_call.c): run on the worker thread,
 * touching only what the call carries; done on the loop with run's result,
 * and frees the call. */
struct gw_call {
	int (*run)(struct rs_store *st, struct gw_call *call);
	void (*done)(struct gw_call *call, int err);
};

/* Queues call on the store worker.  Returns 0, or -errno when it could not
 * be queued (call->done is then not run: the caller still owns call). */
int gw_store_call(struct gateway *gw, struct gw_call *call);

/* Ends member's row at epoch here, off the loop; while the store is away
 * (or the end fails for want of it) it is owed and sent on its return
 * (store_call.c).  keep_place: a supervisor that went away, whose place
 * is kept --home-grace for its return (rs_store_session_leave), unless we
 * drain; else the row goes (a place it could not use). */
void gw_store_end_session(struct gateway *gw, const char *member_id, uint64_t epoch, bool keep_place);

/* Sends the session ends owed since the store went away (store_call.c). */
void gw_store_flush_owed(struct gateway *gw);

/* The batchable job kind of admissions and handoffs (store_call.c). */
extern const struct rs_store_job_kind gw_admit_kind;

/* Builds the TLS context from --tls-cert/--tls-key/--tls-ca, or leaves it
 * NULL under --insecure (logged).  Returns 0 or -errno, logged (tls_server.c). */
int gw_tls_init(struct gateway *gw);

/* SIGHUP: rebuilds the context from the same files for new connections;
 * unusable files are logged and counted, and the old context stays (tls_server.c). */
void gw_tls_reload(struct gateway *gw);

/* The heartbeat's check: reloads as SIGHUP does when a TLS file has been
 * replaced since the last (re)load (tls_server.c). */
void gw_tls_watch(struct gateway *gw);

/* A bufferevent for an accepted socket: TLS (accepting) when a context is
 * set, else plain.  NULL on failure, fd then closed (tls_server.c). */
struct bufferevent *gw_tls_bufferevent(struct gateway *gw, evutil_socket_t fd);

/* Whether mTLS is off, or bev's client certificate names member (tls_server.c). */
bool gw_tls_client_is(struct bufferevent *bev, const struct gateway *gw, const char *member);

/* With --agent: registers both listening sockets with the node agent,
 * waiting up to RS_AGENT_REG_CLIENT_TIMEOUT_MS each (the loop is not
 * serving yet).  A failure is logged; the gateway runs on, redirect-only,
 * and the heartbeat tries again (agent_registration.c). */
void gw_agent_register_start(struct gateway *gw);

/* The heartbeat's check (agent_registration.c): registers a socket the agent
 * does not hold (a failed attempt, or a different agent instance now at the
 * socket path: its file's identity changed since our last success); does
 * nothing, not even connect, when the same agent still holds both.  Each
 * attempt blocks the loop at most a short timeout. */
void gw_agent_watch(struct gateway *gw);

/* The label of a registration result (agent_registration.c). */
const char *gw_agent_result_label(enum gw_agent_result r);

/* Serves /metrics, /readyz, /healthz on cfg.metrics.  Returns 0 or -errno (metrics.c). */
int gw_metrics_start(struct gateway *gw);

/* Returns the reject reason's metric label (metrics.c). */
const char *gw_reject_label(enum gw_reject r);

/* Whether a line may be logged now from bucket r (monotonic now_ms); when
 * it may, *suppressed is the number of lines dropped since the last one
 * (log_rate.c). */
bool gw_log_rate_allow(struct gw_log_rate *r, int64_t now_ms, uint64_t *suppressed);

#endif
