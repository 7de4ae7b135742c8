/* SPDX-License-Identifier: Apache-2.0 */
/* agent_reg.h - gateway socket registration with the node agent.
 *
 * A gateway hands its listening TCP socket to ringsteer-agent over a UNIX
 * stream socket (default RS_AGENT_SOCKET_DEFAULT): one request carrying the
 * socket as SCM_RIGHTS, one reply, then the agent closes.  The agent puts
 * the socket in its sockmap so that sk_lookup can steer Service connections
 * to it.  The agent checks everything the kernel will not: who the caller
 * is (SO_PEERCRED), and that the socket is a listening TCP socket of
 * AF_INET/AF_INET6 in the agent's own network namespace (sk_lookup assigns
 * any socket it is given, whatever its netns).
 *
 * Wire format, version 1 (integers big-endian, no padding):
 *
 *   request  u32 length   bytes after this field (6 + id length)
 *            u8  version  RS_AGENT_REG_VERSION
 *            u8  type     1 (REGISTER)
 *            u8  role     enum rs_agent_role
 *            u8  flags    0 (reserved)
 *            u16 id_len   1..RS_ID_MAX
 *            id_len bytes gateway id, [a-z0-9.-], no NUL
 *            + exactly one fd as SCM_RIGHTS, sent with the request's bytes
 *
 *   reply    u32 length   bytes after this field (10 + text length)
 *            u8  version  RS_AGENT_REG_VERSION
 *            u8  type     2 (REPLY)
 *            u8  status   enum rs_agent_reg_status
 *            u8  reason   enum rs_agent_reg_reason (0 when ok)
 *            u32 slot     the sockmap slot when ok, else 0
 *            u16 text_len 0..RS_AGENT_REG_TEXT_MAX
 *            text_len bytes printable ASCII, for humans and logs
 *
 * Supervisor (member) registration, on the agent's member socket
 * (default RS_AGENT_MEMBER_SOCKET_DEFAULT), version 1:
 *
 *   request  u32 length   bytes after this field (6 + id length)
 *            u8  version  RS_AGENT_REG_VERSION
 *            u8  type     3 (MEMBER)
 *            u8  flags    0 (reserved)
 *            u8  reserved 0
 *            u16 id_len   1..RS_ID_MAX
 *            id_len bytes member id, [a-z0-9.-], no NUL; no fd
 *   reply    the reply above (slot 0); on OK the connection stays open:
 *            it is the registration.  The agent steers the caller's
 *            connects while it is open and forgets the caller when it
 *            closes; the supervisor sees the agent go as EOF.
 *
 * Who is registering is never taken from the message: the agent derives
 * the caller's key from SO_PEERCRED (its netns cookie, or its cgroup id
 * when it shares the agent's netns), so a registration can only steer its
 * caller's own connects.
 *
 * Every later version keeps the first six bytes (length, version, type) of
 * both records; an agent that does not speak a request's version answers
 * with a version-1 reply, reason RS_AGENT_REG_BAD_VERSION.  Neither record may
 * exceed RS_AGENT_REG_MSG_MAX bytes, length field included. */
#ifndef RINGSTEER_AGENT_REG_H
#define RINGSTEER_AGENT_REG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "ringsteer/ring.h"

struct event_base;

#define RS_AGENT_SOCKET_DEFAULT "/run/ringsteer/agent.sock"
#define RS_AGENT_MEMBER_SOCKET_DEFAULT "/run/ringsteer/member.sock"
#define RS_AGENT_MEMBER_TIMEOUT_MS 250    /* a supervisor waits at most this for the agent's reply */
#define RS_AGENT_REG_VERSION 1
#define RS_AGENT_REG_MSG_MAX 512          /* bytes of either record, length field included */
#define RS_AGENT_REG_HEADER 6             /* u32 length, u8 version, u8 type */
#define RS_AGENT_REG_TEXT_MAX 200         /* bytes of a reply's text */
#define RS_AGENT_REG_UIDS_MAX 64          /* entries of an allow list */
#define RS_AGENT_REG_CONNS_DEFAULT 8      /* registrations in progress at once */
#define RS_AGENT_REG_DEADLINE_DEFAULT_MS 2000 /* whole request, from accept */
#define RS_AGENT_REG_CLIENT_TIMEOUT_MS 3000   /* rs_agent_register: connect to reply */

enum rs_agent_role {
	RS_AGENT_ROLE_LISTEN = 1, /* where the Service delivers supervisors */
	RS_AGENT_ROLE_PEER = 2,   /* the gateway's peer endpoint (redirect targets) */
};

enum rs_agent_reg_status {
	RS_AGENT_REG_STATUS_OK = 0,
	RS_AGENT_REG_STATUS_REFUSED = 1,
};

/* Why a registration was refused.  Each is answered and counted; the names
 * (rs_agent_reg_reason_name) are the stable metric labels. */
enum rs_agent_reg_reason {
	RS_AGENT_REG_OK = 0,
	RS_AGENT_REG_MALFORMED = 1,      /* bad length, type, flags; truncated */
	RS_AGENT_REG_BAD_VERSION = 2,    /* a version the agent does not speak */
	RS_AGENT_REG_UID = 3,            /* SO_PEERCRED uid not in the allow list */
	RS_AGENT_REG_BAD_ID = 4,         /* gateway id not 1..253 bytes of [a-z0-9.-] */
	RS_AGENT_REG_BAD_ROLE = 5,       /* role unknown to this agent */
	RS_AGENT_REG_NO_FD = 6,          /* no SCM_RIGHTS fd with the request */
	RS_AGENT_REG_TOO_MANY_FDS = 7,   /* more than one fd (or the control data was cut) */
	RS_AGENT_REG_NOT_SOCKET = 8,     /* the fd is not a socket */
	RS_AGENT_REG_FAMILY = 9,         /* not AF_INET or AF_INET6 */
	RS_AGENT_REG_NOT_TCP = 10,       /* not SOCK_STREAM + IPPROTO_TCP */
	RS_AGENT_REG_NOT_LISTENING = 11, /* SO_ACCEPTCONN is 0 */
	RS_AGENT_REG_NETNS = 12,         /* the socket lives in another network namespace */
	RS_AGENT_REG_TIMEOUT = 13,       /* no whole request within the deadline */
	RS_AGENT_REG_BUSY = 14,          /* too many registrations in progress */
	RS_AGENT_REG_STORE = 15,         /* the agent core could not store the socket */
	RS_AGENT_REG_INTERNAL = 16,      /* the agent could not run a check (errno in the text) */
	/* member registrations */
	RS_AGENT_REG_NO_KEY = 17,        /* the caller shares the agent's netns and cgroup: no key of its own */
	RS_AGENT_REG_OUTSIDE = 18,       /* the caller's cgroup is outside the steered cgroup */
	RS_AGENT_REG_CALLER_GONE = 19,   /* the caller exited (or its pid was reused) before it was keyed */
	RS_AGENT_REG_KEY_IN_USE = 20,    /* another member is registered for the caller's netns or cgroup */
	RS_AGENT_REG_FULL = 21,          /* the agent holds its maximum of members */
	RS_AGENT_REG_RATE_LIMITED = 22,  /* the caller's key registered too often: retry later */
	RS_AGENT_REG_UID_FULL = 23,      /* the caller's uid holds its share of registrations */
	RS_AGENT_REG_ENDPOINT = 24,      /* the listener's address is not the gateway's advertised endpoint */
	RS_AGENT_REG_REASON_COUNT
};

struct rs_agent_reg_request {
	uint8_t version;
	uint8_t role; /* enum rs_agent_role */
	char gateway_id[RS_ID_MAX + 1];
};

struct rs_agent_member_request {
	uint8_t version;
	char member_id[RS_ID_MAX + 1];
};

struct rs_agent_reg_reply {
	uint8_t status; /* enum rs_agent_reg_status */
	uint8_t reason; /* enum rs_agent_reg_reason */
	uint32_t slot;
	char text[RS_AGENT_REG_TEXT_MAX + 1];
};

/* --- codec (pure: no I/O, no allocation) ------------------------------- */

/* Encodes req (version must be RS_AGENT_REG_VERSION) into buf.  Returns 0
 * and *len, -EINVAL (bad id or role), -ENOSPC (cap too small). */
int rs_agent_reg_encode_request(const struct rs_agent_reg_request *req, uint8_t *buf, size_t cap,
				size_t *len);

/* Decodes the request at the front of buf[0..len).  *size is always set:
 * on 0, the bytes the request took; on -EAGAIN, the bytes needed before the
 * next call can say more (so a reader never reads past the request); on
 * other errors, 0.  Returns 0 with *out filled, -EAGAIN (incomplete),
 * -EPROTONOSUPPORT (version; out->version set), -EMSGSIZE (length field
 * out of bounds), -EPROTO (type, flags, id length inconsistent), -EINVAL
 * (bad gateway id), -ERANGE (unknown role).  Checks run in that order. */
int rs_agent_reg_decode_request(const uint8_t *buf, size_t len, struct rs_agent_reg_request *out,
				size_t *size);

/* Encodes a member request.  Returns 0 and *len, -EINVAL (bad id or
 * version), -ENOSPC. */
int rs_agent_member_encode_request(const struct rs_agent_member_request *req, uint8_t *buf, size_t cap,
				   size_t *len);

/* Decodes a member request; *size and the returns as for
 * rs_agent_reg_decode_request (-EINVAL: bad member id; no -ERANGE). */
int rs_agent_member_decode_request(const uint8_t *buf, size_t len, struct rs_agent_member_request *out,
				   size_t *size);

/* Encodes a version-1 reply.  Returns 0 and *len, -EINVAL (status, reason
 * or text out of range; text must be printable ASCII), -ENOSPC. */
int rs_agent_reg_encode_reply(const struct rs_agent_reg_reply *reply, uint8_t *buf, size_t cap,
			      size_t *len);

/* Decodes a reply; *size as for requests.  Returns 0, -EAGAIN,
 * -EPROTONOSUPPORT, -EMSGSIZE, -EPROTO (anything inconsistent: type,
 * status/reason pair, text length or bytes). */
int rs_agent_reg_decode_reply(const uint8_t *buf, size_t len, struct rs_agent_reg_reply *out,
			      size_t *size);

/* Stable names: "listen"/"peer"; reasons as metric labels ("not_listening");
 * "unknown" out of range. */
const char *rs_agent_role_name(unsigned role);
const char *rs_agent_reg_reason_name(unsigned reason);

/* The reason's sentence, as the agent sends it when it has nothing to add. */
const char *rs_agent_reg_reason_text(unsigned reason);

/* --- server (ringsteer-agent) ------------------------------------------- */

/* The checks, in order; the first that fails is the answer:
 *   at accept   the caller's uid (SO_PEERCRED), then room (max_conns):
 *               nothing a refused caller sends is read
 *   request     version, length, type and flags, gateway id, role
 *   fds         none; more than one (across all reads of the request)
 *   socket      S_ISSOCK, AF_INET/AF_INET6, SOCK_STREAM + IPPROTO_TCP,
 *               SO_ACCEPTCONN, netns (SIOCGSKNS vs /proc/self/ns/net)
 *   core        on_register
 * and the deadline, whenever it passes first. */

/* Called once per request that passed every check, on the event loop.  fd
 * is a listening TCP socket of the agent's netns, valid only during the
 * call: the server closes it afterwards (dup it, or let the sockmap hold the
 * socket).  local is its bound address.  Returns 0 and *slot_out, or a
 * negative errno, answered as RS_AGENT_REG_ENDPOINT for -EADDRNOTAVAIL (not
 * where the gateway is advertised), else RS_AGENT_REG_STORE with strerror's
 * text.  It
 * must not free the server. */
typedef int (*rs_agent_reg_cb)(void *ctx, const char *gateway_id, enum rs_agent_role role, int fd,
			       const struct sockaddr_storage *local, uint32_t *slot_out);

struct rs_agent_reg_config {
	const char *socket_path;  /* NULL: RS_AGENT_SOCKET_DEFAULT */
	/* Callers allowed to register, by SO_PEERCRED uid.  None given (n = 0):
	 * the agent's own effective uid only.  uid 0 has no standing of its
	 * own: it is allowed when listed, or when it is the agent's uid and
	 * no list is given.  At most RS_AGENT_REG_UIDS_MAX entries. */
	const uid_t *allow_uids;
	size_t n_allow_uids;
	unsigned max_conns;       /* 0: RS_AGENT_REG_CONNS_DEFAULT */
	unsigned deadline_ms;     /* 0: RS_AGENT_REG_DEADLINE_DEFAULT_MS */
	rs_agent_reg_cb on_register;
	void *ctx;                /* passed to on_register */
	FILE *log;                /* one logfmt line per registration and refusal; NULL: silent */
};

/* Counters since the server was created.  refused[RS_AGENT_REG_OK] stays 0;
 * aborted counts connections closed before sending a byte (probes, health
 * checks), which are not refusals. */
struct rs_agent_reg_stats {
	uint64_t registered;
	uint64_t refused[RS_AGENT_REG_REASON_COUNT];
	uint64_t aborted;
	unsigned in_progress;
};

struct rs_agent_reg_server;

/* Listens on cfg->socket_path and serves registrations from base's loop,
 * never blocking it: each connection is read as its bytes arrive, under
 * one deadline for the whole request.  The socket's directory is created
 * with mode 0750 if missing (one level; an existing one is left as it is);
 * a stale socket file (nobody listening) is replaced; the socket file is
 * made 0660 (chown/chmod it after this call to admit a gateway group).
 * Returns 0 and *out; -EINVAL (bad config), -ENAMETOOLONG (path),
 * -EADDRINUSE (another agent answers on the path), -EEXIST (the path is
 * not a socket), -ENOMEM, or -errno from the system.  Not thread-safe: use
 * it, its stats included, from the loop's thread. */
int rs_agent_reg_server_new(struct event_base *base, const struct rs_agent_reg_config *cfg,
			    struct rs_agent_reg_server **out);

/* Stops listening, drops the connections in progress (unanswered) and
 * unlinks the socket file if it is still the one this server bound.
 * NULL is allowed. */
void rs_agent_reg_server_free(struct rs_agent_reg_server *s);

void rs_agent_reg_server_stats(const struct rs_agent_reg_server *s, struct rs_agent_reg_stats *out);

/* --- client (the gateway) ----------------------------------------------- */

/* Registers listen_fd with the agent at socket_path, blocking at most
 * timeout_ms (> 0) from connect to reply.  Returns:
 *   0              registered; reply->slot is the slot
 *   -EACCES        refused by the agent; reply holds the reason and text
 *   -ENOENT, -ECONNREFUSED  no agent (no socket file / nobody listening):
 *                  run on, redirect-only
 *   -EPERM         the socket file is there but this uid may not connect, or
 *                  the agent listening there runs as an untrusted uid
 *                  (reply->text says which; the listener was not sent)
 *   -ETIMEDOUT     no reply in time
 *   -EPROTO        the agent closed without a valid reply
 *   -EINVAL        bad argument (id, role, fd, timeout); -ENAMETOOLONG (path)
 *   other -errno   from socket calls.
 * reply may be NULL. */
int rs_agent_register_timeout(const char *socket_path, const char *gateway_id, enum rs_agent_role role,
			      int listen_fd, int timeout_ms, struct rs_agent_reg_reply *reply);

/* rs_agent_register_timeout, trusting an agent that runs as agent_uid too
 * (RS_AGENT_UID_NONE: no other than uid 0 and this process's own).  Before
 * the listener is sent, the listening process's uid (SO_PEERCRED) must be
 * one of those, else -EPERM with reply->text naming the uid and pid, and
 * nothing is sent. */
#define RS_AGENT_UID_NONE ((uid_t)-1)
int rs_agent_register_as(const char *socket_path, const char *gateway_id, enum rs_agent_role role, int listen_fd,
			 uid_t agent_uid, int timeout_ms, struct rs_agent_reg_reply *reply);

/* rs_agent_register_timeout with RS_AGENT_REG_CLIENT_TIMEOUT_MS; *slot set
 * on 0 (slot may be NULL).  On -EACCES reason gets "<name>: <text>" (for
 * example "not_listening: socket is not listening"); on other errors a
 * short description; always NUL-terminated when reason_cap > 0. */
int rs_agent_register(const char *socket_path, const char *gateway_id, enum rs_agent_role role,
		      int listen_fd, uint32_t *slot, char *reason, size_t reason_cap);

/* --- member client (the supervisor) -------------------------------------- */

/* Registers member_id with the agent's member socket at socket_path,
 * blocking at most timeout_ms (> 0) from connect to reply.  On 0 *link is
 * the open registration: keep it open while the process runs (closing it
 * withdraws the registration; it turning readable means the agent went
 * away).  Returns 0, -EACCES (refused: reply says why), -ENOENT or
 * -ECONNREFUSED (no agent: dial the Service as usual), -EPERM (the socket
 * file may not be opened), -ETIMEDOUT, -EPROTO, -EINVAL, -ENAMETOOLONG,
 * -errno.  reply may be NULL. */
int rs_agent_member_register(const char *socket_path, const char *member_id, int timeout_ms, int *link,
			     struct rs_agent_reg_reply *reply);

#endif
