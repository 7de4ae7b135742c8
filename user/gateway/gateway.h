/* SPDX-License-Identifier: Apache-2.0 */
/* gateway.h - the reference gateway's state, shared by its files: the
 * configuration, the event loop and its listeners, the store worker, the
 * connections' I/O, TLS and the node agent.  What the gateway decides is
 * the library's gateway core (include/ringsteer/gateway_core.h): these
 * files carry its frames, timers and store requests.  One gateway per
 * process; everything hangs off the struct gateway that main() owns. */
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
#include "ringsteer/gateway_core.h"
#include "ringsteer/histogram.h"
#include "ringsteer/keyring.h"
#include "ringsteer/proto.h"
#include "ringsteer/store.h"
#include "store/store_worker.h"
#include "tls/tls.h"
#include "tls/tls_record.h"
#include "ringsteer/token.h"
#include "unauth.h"
#include "util/accept_pause.h"

struct gw_config {
	const char *id;
	const char *listen;          /* where the Service delivers */
	const char *peer;            /* peer endpoint: listened on */
	const char *advertise_peer;  /* advertised in the store and ACCEPT; default peer */
	const char *store_url;
	const char *secret_file;
	const char *metrics;         /* ADDR:PORT for /metrics, /readyz, /healthz, or NULL */
	const char *agent;           /* the node agent's registration socket, or NULL */
	uid_t agent_uid;             /* trusted as the agent besides 0 and our own; RS_AGENT_UID_NONE */
	uint32_t heartbeat_ms;
	uint32_t ttl_ms;
	uint32_t hello_timeout_ms;
	uint32_t reservation_ms;
	uint32_t token_ttl_s;        /* lifetime of tokens minted on REFRESH */
	uint32_t token_max_ttl_s;    /* a HELLO token expiring further ahead is refused */
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
	uint32_t listen_backlog;     /* listen(2)'s backlog for both listeners */
	uint32_t max_sessions;       /* attached supervisors; 0: no limit */
	bool max_sessions_set;       /* --max-sessions given; else derived from RLIMIT_NOFILE */
	uint32_t max_unsent;         /* bytes queued for a peer that does not read, past which it is closed */
	uint32_t limit_retry_ms;     /* retry_after_ms sent with REJECT LIMIT */
	uint32_t admit_deadline_ms;  /* an arrival's longest wait for the store (--admit-deadline) */
	uint32_t admit_batch_max;    /* admissions per store transaction at most (--admit-batch) */
	const char *tls_cert;        /* PEM chain: TLS 1.3 on both listeners */
	const char *tls_key;
	const char *tls_ca;          /* verify client certificates against it (mTLS) */
	const char *tls_ticket_keys; /* a keyring the fleet shares: session tickets on */
	bool insecure;               /* plaintext, by explicit choice */
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
/* A listening socket's registration with the node agent.  LOST: it was
 * registered once and is not now, so the next success is with another
 * agent (or the same one restarted): logged cause=agent_changed, however
 * many attempts failed in between (a restarting agent's socket is missing
 * or refusing for a moment). */
enum gw_agent_reg {
	GW_AGENT_NEVER = 0, /* not registered since start */
	GW_AGENT_REGISTERED,
	GW_AGENT_LOST,
};

struct gw_agent_link {
	enum gw_agent_reg state;  /* REGISTERED: the agent at `at` accepted this socket */
	struct gw_agent_stamp at; /* the socket path's identity just before that success */
	int last_err;            /* the failure last logged; 0: none since start or the last success */
	uint8_t last_reason;     /* with last_err -EACCES: the agent's reason */
	int64_t logged_ms;       /* monotonic: when a failure was last logged */
	uint64_t failures;       /* failed attempts since the last success */
};

/* The glue's own counters; the core owns the rest (rs_gw_core_counters). */
struct gw_counters {
	uint64_t tls_reloads_ok;      /* SIGHUP: certificate, key and CA read anew */
	uint64_t tls_reloads_failed;  /* SIGHUP: the files were unusable; the old ones still serve */
	uint64_t tls_full;            /* handshakes that verified certificates */
	uint64_t tls_resumed;         /* handshakes that resumed a ticket's session */
	uint64_t agent_attempts[GW_AGENT_RESULT_COUNT]; /* registrations with the node agent, by result */
	uint64_t unauth_evicted;      /* waiting connections closed for a fairer arrival (unauth_fair.h) */
	uint64_t unsent_closed;       /* connections closed with more than --max-unsent bytes unsent */
};

struct gw_conn;

struct gateway {
	struct gw_config cfg;
	char who[RS_ID_MAX + 16];     /* "gateway=<id>" for log lines */
	struct event_base *base;
	struct rs_gw_core *core;      /* what the gateway decides */
	struct event *core_ev;        /* the core's next wake */
	int64_t core_wake_ms;         /* what core_ev is armed for */
	struct rs_store *store;       /* owned by the worker while it runs: never used on the loop */
	struct rs_store_worker *worker; /* runs the core's store requests, off the loop (store_call.c) */
	struct event *store_watch_ev; /* judges a call that runs too long (store_call.c) */
	struct rs_keyring keys;       /* --secret: a keyring, or one legacy secret */
	struct evconnlistener *listen_lst, *peer_lst;
	struct rs_http *http;
	struct event *heartbeat_ev, *sigterm_ev, *sigint_ev, *sighup_ev;
	SSL_CTX *tls;                 /* new connections' context; NULL: plaintext (--insecure).
				       * A reload swaps it; live connections keep theirs */
	int64_t tls_not_after;        /* its certificate's expiry, seconds since the epoch */
	uint64_t tls_stamp;           /* the TLS files' identity when last (re)loaded */
	struct rs_keyring ticket_ring; /* --tls-ticket-keys as last loaded; n 0: tickets off */
	struct rs_tls_ticket_keys tickets; /* derived from it at the heartbeat's now; every
				       * context made with tickets reads them at each handshake */
	bool tls_records;             /* links leave their SSL for records after the handshake
				       * (TLS without --tls-ticket-keys: tls_server.c) */
	struct rs_tls_scratch tls_scratch; /* the records' one cipher context */
	uint8_t heartbeat_frame[16];  /* HEARTBEAT, encoded once: queued by reference */
	size_t heartbeat_len;         /* 0: not encoded (each is then encoded anew) */
	struct gw_conn *conns;        /* every open connection, doubly linked */
	bool remove_on_exit;          /* delete our row once the worker has stopped */
	struct gw_counters counters;
	struct gw_unauth unauth;      /* connections waiting for HELLO, per source */
	int64_t evict_logged_ms;      /* monotonic: the last event=unauth_evicted line; 0: none */
	uint64_t evict_suppressed;    /* evictions not logged since it */
	struct rs_accept_pause pause_listen, pause_peer; /* each listener out of descriptors (accept_errors.c) */
	uint64_t nofile;              /* RLIMIT_NOFILE as raised at start; 0: unlimited */
	struct gw_agent_link agent_listen, agent_peer; /* with --agent: each listener's registration */
	struct rs_histogram store_seconds[RS_GW_STORE_OP_COUNT]; /* store calls' run time by kind (store_timing.c) */
};

/* Now, as the core takes it. */
struct rs_gw_time gw_now(void);

/* Re-arms the core's timer for its next wake; called after every event
 * given to the core (conn.c). */
void gw_core_settle(struct gateway *gw);

/* The core's callbacks over this gateway's connections and store (conn.c). */
extern const struct rs_gw_callbacks gw_core_callbacks;

/* Accepts a new connection from a listener (conn.c). */
void gw_conn_accept(struct evconnlistener *lst, evutil_socket_t fd, struct sockaddr *sa, int socklen, void *arg);

/* Writes what each connection has queued, best effort, now, and frees
 * them all: the loop will not run again for them (conn.c). */
void gw_conn_free_all(struct gateway *gw);

/* Hands req to the store worker (the core's store callback; store_call.c). */
int gw_store_submit(struct gateway *gw, struct rs_gw_store_req *req);

/* Starts the watch that tells the core the store has stalled when one call
 * has run past twice --store-timeout (store_call.c).  Returns 0 or -ENOMEM. */
int gw_store_watch_start(struct gateway *gw);

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

/* Reads --tls-ticket-keys into *ring and derives *keys at now; why says
 * what failed.  Returns 0 or -errno (tls_tickets.c). */
int gw_tickets_load(const struct gateway *gw, struct rs_keyring *ring, struct rs_tls_ticket_keys *keys, char *why,
		    size_t why_len);

/* Turns tickets on for ctx under gw->tickets, sent by conn.c after the
 * ACCEPT.  Returns 0 or -EINVAL, why set (tls_tickets.c). */
int gw_tickets_install(struct gateway *gw, SSL_CTX *ctx, char *why, size_t why_len);

/* The id of the key encrypting tickets now, "off" or "none" (tls_tickets.c). */
const char *gw_tickets_signer(const struct gateway *gw);

/* The heartbeat's: moves to a key whose since has come (tls_tickets.c). */
void gw_tickets_watch(struct gateway *gw);

/* Sends bev's session ticket (--tls-ticket-keys; else nothing).  Only while
 * bev's output is empty (tls_tickets.c). */
void gw_tls_send_ticket(struct gateway *gw, struct bufferevent *bev);

/* Counts bev's finished handshake as full or resumed (tls_tickets.c). */
void gw_tls_count_handshake(struct gateway *gw, struct bufferevent *bev);

/* Where the handshake on bev's SSL leaves its application secrets (the
 * keylog callback): s must outlive the SSL or be cleared first
 * (tls_server.c). */
void gw_tls_secrets_to(struct bufferevent *bev, struct rs_tls_secrets *s);

/* Under mTLS, the client's certificate a link that left its SSL keeps
 * for the member check at HELLO (DER; der NULL: none kept). */
struct gw_tls_peer {
	uint8_t *der;
	size_t len;
};

/* At the end of bev's handshake, with s filled by it: a plain bufferevent
 * on a copy of bev's socket and *out the records that carry the link from
 * here (the caller frees bev, and its SSL, and sets the new one up), or
 * NULL: the link keeps bev (a session ticket sent, the peer's data
 * already read).  s is cleansed either way (tls_server.c). */
struct bufferevent *gw_tls_detach(struct gateway *gw, struct bufferevent *bev, struct rs_tls_secrets *s,
				  struct rs_tls_records **out, struct gw_tls_peer *peer);

/* Whether mTLS is off, or the client's certificate names member: peer's
 * when the link left its SSL, else bev's SSL's (on a resumed connection:
 * the session's, if not expired since) (tls_server.c). */
bool gw_tls_client_is(struct bufferevent *bev, const struct gw_tls_peer *peer, const struct gateway *gw,
		      const char *member);

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

/* Raises the soft RLIMIT_NOFILE to the hard one; returns the limit now
 * (0: unlimited or unknown) (fd_limit.c). */
uint64_t gw_fd_limit_raise(void);

/* The --max-sessions default for a descriptor limit of nofile (0: no
 * limit): what the reserve and the unauthenticated pool leave (fd_limit.c). */
uint32_t gw_fd_default_sessions(uint64_t nofile, uint32_t max_unauth);

/* Pauses a listener whose accept fails, with a backoff, counted and logged
 * once per episode (accept_errors.c).  Returns 0 or -ENOMEM. */
int gw_accept_pause_start(struct gateway *gw);
void gw_accept_pause_free(struct gateway *gw);

/* ringsteer_gateway_accept_errors_total (accept_errors.c). */
void gw_accept_metrics(const struct gateway *gw, struct evbuffer *b);

/* An arrival evicted a waiting connection: counted, logged at most once a
 * second (unauth_evict.c). */
void gw_unauth_evicted(struct gateway *gw, const char *source);

/* ringsteer_gateway_unauth_evictions_total (unauth_evict.c). */
void gw_unauth_metrics(const struct gateway *gw, struct evbuffer *b);

/* Gives each store call kind's histogram its bounds (store_timing.c). */
void gw_store_timing_init(struct gateway *gw);

/* A store call of op ran us microseconds on the worker (store_timing.c). */
void gw_store_timing_observe(struct gateway *gw, enum rs_gw_store_op op, uint64_t us);

/* The latency histograms: admission and handoff (the core's), store calls
 * by kind (metrics_latency.c). */
void gw_latency_metrics(const struct gateway *gw, struct evbuffer *b);

/* Serves /metrics, /readyz, /healthz on cfg.metrics.  Returns 0 or -errno (metrics.c). */
int gw_metrics_start(struct gateway *gw);

#endif
