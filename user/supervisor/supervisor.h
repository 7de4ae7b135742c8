/* SPDX-License-Identifier: Apache-2.0 */
/* supervisor.h - the reference supervisor: a member core
 * (include/ringsteer/member_core.h) that owns its transitions, and the I/O
 * around it (client.c: links; service_name.c: the Service by its name;
 * tls_trust.c; agent_link.c; main.c). */
#ifndef RS_SUPERVISOR_H
#define RS_SUPERVISOR_H

#include <stdbool.h>
#include <stdint.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <openssl/ssl.h>

#include "tls/tls.h"

#include "util/cidr.h"
#include "util/endpoint.h"
#include "util/resolver.h"
#include "ringsteer/member_core.h"
#include "ringsteer/proto.h"

#define SUP_ALLOW_MAX 32 /* --redirect-allow prefixes */

struct sup_config {
	const char *id;
	const char *service;        /* the Service: numeric ADDR:PORT, or NAME:PORT resolved at each dial */
	const char *token_file;
	const char *bind;           /* source address, or NULL */
	const char *sandboxes_file; /* re-read on SIGHUP, or NULL */
	uint32_t sandboxes;
	uint32_t dial_timeout_ms;
	const char *tls_ca;         /* verify gateways against it: TLS 1.3 */
	const char *tls_cert;       /* present it (mTLS); it must name --id */
	const char *tls_key;
	const char *tls_server_name; /* what the Service's gateways' certificates name;
				      * default: the --service name or address */
	bool insecure;              /* plaintext, by explicit choice */
	struct rs_cidr allow[SUP_ALLOW_MAX]; /* --redirect-allow: plaintext targets */
	size_t n_allow;
	const char *agent;          /* the node agent's member socket, or NULL */
};

struct supervisor {
	struct sup_config cfg;
	char who[RS_ID_MAX + 16];
	struct event_base *base;
	char instance_id[RS_INSTANCE_MAX + 1];
	struct rs_mc_core *mc;      /* every transition (client.c is its I/O) */
	struct rs_resolver *resolver; /* --service NAME:PORT: its lookups, off the loop; else NULL */
	uint64_t resolve_failures;  /* Service dials whose name did not resolve */
	uint32_t sandboxes;
	SSL_CTX *tls;               /* NULL: plaintext (--insecure) */
	uint64_t tls_stamp;         /* the TLS files' identity when last (re)loaded */
	struct rs_tls_resume resume; /* the last session a gateway sent a ticket for */
	char service_name[RS_ENDPOINT_MAX + 1]; /* the name the Service's certificates must carry */
	int agent_fd;               /* the open registration with the node agent, or -1 */
	struct event *agent_ev;
	int agent_last_err;         /* the last registration outcome logged (0: registered) */
	struct event *wake_ev, *sighup_ev, *sigterm_ev, *sigint_ev, *sigusr1_ev;
};

/* One link: a bufferevent once connecting.  A Service dial by name first
 * waits for its lookup, then tries the answers in turn (service_name.c). */
struct sup_link {
	struct supervisor *s;
	struct rs_mc_link *core;
	struct bufferevent *bev;       /* NULL while the name is looked up, or between answers */
	struct rs_resolve_req *lookup; /* in flight, or NULL */
	struct rs_resolved *answers;   /* a Service dial by name: its answers, else NULL */
	size_t next;                   /* the next answer to try */
	struct event *answer_timer;    /* each answer's connect deadline (--dial-timeout) */
	char name[RS_ID_MAX + 1];      /* what its certificate must name */
};

/* The core's callbacks: sockets, frames, log lines (client.c). */
extern const struct rs_mc_callbacks sup_core_callbacks;

/* Frees l: its bufferevent, its lookup (cancelled), its timer (client.c). */
void sup_link_free(struct sup_link *l);

/* Connects l to to (a socket from --bind, TLS or plain, l's callbacks).
 * Returns 0, or -errno with *why set (l->bev then NULL) (client.c). */
int sup_link_connect(struct sup_link *l, const struct sockaddr_storage *to, socklen_t to_len, const char **why);

/* Starts a Service dial by name: the lookup, then the answers in turn;
 * the core was told RS_MC_DIAL_QUEUED.  Returns 0 or -errno (service_name.c). */
int sup_service_by_name(struct supervisor *s, struct sup_link *l, const char *endpoint);

/* l's connect or handshake failed (why): whether the next answer is being
 * tried (l stays), or none is left (the caller fails l) (service_name.c). */
bool sup_next_answer(struct sup_link *l, const char *why);

/* The time to give the core now (client.c). */
struct rs_mc_time sup_now(void);

/* Sets the one timer to the core's next wake; after every call into the core (client.c). */
void sup_settle(struct supervisor *s);

/* The timer's callback: rs_mc_tick (client.c). */
void sup_on_wake(evutil_socket_t fd, short what, void *arg);

/* (Re)builds s->tls from the --tls-* files; on failure the previous one
 * stays.  Returns 0 or -errno, logged (tls_trust.c). */
int sup_tls_load(struct supervisor *s);

/* Reloads as SIGHUP does when a TLS file was replaced since the last
 * (re)load; called before each dial and at each heartbeat (tls_trust.c). */
void sup_tls_watch(struct supervisor *s);

/* A bufferevent for the unconnected socket fd: TLS (connecting, the server
 * certificate verified and required to name name) when s->tls is set, else
 * plain.  NULL on failure, fd then closed (tls_trust.c). */
struct bufferevent *sup_tls_bufferevent(struct supervisor *s, int fd, const char *name);

/* Whether a plaintext dial to the peer address ss may go ahead: TLS
 * (the certificate decides), or ss inside --redirect-allow (tls_trust.c). */
bool sup_target_allowed(const struct supervisor *s, const struct sockaddr_storage *ss);

/* Registers with the node agent (--agent) unless registered: before a
 * Service dial and at each heartbeat (agent_link.c).  Never fails the
 * caller: without an agent the dial goes through the Service as always. */
void sup_agent_register(struct supervisor *s);

/* Closes the registration (agent_link.c). */
void sup_agent_close(struct supervisor *s);

/* Reads the token file and gives it to the core.  Returns 0 or -errno. */
int sup_load_token(struct supervisor *s);

#endif
