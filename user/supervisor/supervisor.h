/* SPDX-License-Identifier: Apache-2.0 */
/* supervisor.h - the reference supervisor's state: one attached link at a
 * time plus at most one link being set up (a redirect, a redial, or the
 * make-before-break redial after a token refresh). */
#ifndef RS_SUPERVISOR_H
#define RS_SUPERVISOR_H

#include <stdbool.h>
#include <stdint.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <openssl/ssl.h>

#include "util/cidr.h"
#include "util/endpoint.h"
#include "ringsteer/proto.h"

#define SUP_ALLOW_MAX 32 /* --redirect-allow prefixes */

struct sup_config {
	const char *id;
	const char *service;        /* the Service address */
	const char *token_file;
	const char *bind;           /* source address, or NULL */
	const char *sandboxes_file; /* re-read on SIGHUP, or NULL */
	uint32_t sandboxes;
	uint32_t dial_timeout_ms;
	const char *tls_ca;         /* verify gateways against it: TLS 1.3 */
	const char *tls_cert;       /* present it (mTLS); it must name --id */
	const char *tls_key;
	const char *tls_server_name; /* what the Service's gateways' certificates name;
				      * default: the --service address */
	bool insecure;              /* plaintext, by explicit choice */
	struct rs_cidr allow[SUP_ALLOW_MAX]; /* --redirect-allow: plaintext targets */
	size_t n_allow;
	const char *agent;          /* the node agent's member socket, or NULL */
};

/* How a link came to be dialed: decides what its failure leads to. */
enum sup_via {
	VIA_SERVICE,  /* through the Service address */
	VIA_REDIRECT, /* to the peer endpoint a REDIRECT named (STAY) */
	VIA_REDIAL,   /* back to the last gateway after a blip (STAY) */
	VIA_REFRESH,  /* back to the last gateway with a renewed token (STAY), old link kept */
};

struct sup_link;

struct supervisor {
	struct sup_config cfg;
	char who[RS_ID_MAX + 16];
	struct event_base *base;
	char instance_id[RS_INSTANCE_MAX + 1];
	uint64_t next_epoch;
	char token[RS_TOKEN_MAX + 1];
	uint64_t token_expiry;
	uint32_t sandboxes;
	struct sup_link *active;    /* attached */
	struct sup_link *pending;   /* being set up */
	char last_gateway[RS_ID_MAX + 1];
	char last_peer[RS_ENDPOINT_MAX + 1];
	uint32_t heartbeat_ms;
	uint32_t backoff_ms;        /* next Service retry delay; 0 after success */
	bool retry_stay;            /* the scheduled Service retry asks to stay */
	uint64_t rng;               /* jitter */
	SSL_CTX *tls;               /* NULL: plaintext (--insecure) */
	uint64_t tls_stamp;         /* the TLS files' identity when last (re)loaded */
	char service_name[RS_ENDPOINT_MAX + 1]; /* the name the Service's certificates must carry */
	uint32_t redirects_failed;  /* redirects in a row that could not be followed (since the last
				     * attach): from the second on, the Service fallback waits the backoff */
	uint64_t targets_refused;   /* redirect, redial or refresh targets refused: not allowed, or
				     * their certificate did not name the gateway */
	int agent_fd;               /* the open registration with the node agent, or -1 */
	struct event *agent_ev;
	int agent_last_err;         /* the last registration outcome logged (0: registered) */
	struct event *retry_ev, *refresh_ev, *heartbeat_ev, *sighup_ev, *sigterm_ev, *sigint_ev, *sigusr1_ev;
};

/* Dials endpoint for the given reason (client.c); name is the gateway id
 * its certificate must carry (the Service's name for VIA_SERVICE).  A
 * target learned from the wire that is not allowed (plaintext: outside
 * --redirect-allow) is refused before any packet: counted, logged, and
 * handled as a failed dial.  Replaces any pending link. */
void sup_dial(struct supervisor *s, enum sup_via via, const char *endpoint, const char *name, bool stay);

/* Frees both links (client.c), saying GOODBYE on the attached one. */
void sup_close_all(struct supervisor *s);

/* Sends the sandbox count on the attached link, if any (client.c). */
void sup_send_sandboxes(struct supervisor *s);

/* Timer callbacks (client.c). */
void sup_on_retry(evutil_socket_t fd, short what, void *arg);
void sup_on_refresh(evutil_socket_t fd, short what, void *arg);
void sup_on_heartbeat(evutil_socket_t fd, short what, void *arg);

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

/* Reads the token file into s->token and its expiry.  Returns 0 or -errno. */
int sup_load_token(struct supervisor *s);

#endif
