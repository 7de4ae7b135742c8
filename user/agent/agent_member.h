/* SPDX-License-Identifier: Apache-2.0 */
/* agent_member.h - supervisors registered with the node agent for
 * connect-time steering: the member socket and its connections
 * (member_server.c), who a caller is (member_key.c), and the registry that
 * turns registrations into rs_clients and rs_targets entries
 * (members.c).  See docs/KERNEL.md, "Connect-time steering". */
#ifndef RS_AGENT_MEMBER_H
#define RS_AGENT_MEMBER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "registration/agent_reg.h"
#include "ringsteer/ring.h"
#include "ringsteer/store.h"
#include "ringsteer_maps.h"

#define AGENT_MEMBERS_MAX 4096 /* registrations held at once (a node's supervisors) */
/* By default a registration waits this long for the store's choice of
 * target (--steer-wait), then is answered without one (connects go through
 * the Service until it comes). */
#define AGENT_STEER_WAIT_MS 250
#define AGENT_STEER_LATE_TEXT \
	"registered by %s; the store has not answered within %u ms: connects go through the Service until it does"

struct steer_job;

struct agent;
struct event;

/* Where callers may come from, fixed at start. */
struct agent_member_scope {
	char cgroup_root[512];  /* the cgroup v2 mount */
	char steered[512];      /* the cgroup the connect-time programs are attached to */
	uint64_t own_cgroup_id; /* the agent's own cgroup: never a caller's key */
	bool netns_cookie;      /* SO_NETNS_COOKIE works (5.14): pods keyed by netns, else by cgroup */
	bool peerpidfd;         /* SO_PEERPIDFD works (6.5) */
};

struct agent_member_verdict {
	enum rs_agent_reg_reason reason;
	char text[RS_AGENT_REG_TEXT_MAX + 1];
	bool later; /* admitted; the answer comes with the store's (agent_member_reply) */
};

/* One connection on the member socket; once registered, the registration. */
struct agent_member {
	struct agent_member *prev, *next;
	struct agent *a;
	int fd, pidfd;
	struct event *rd, *deadline;
	struct ucred cred;
	uint8_t buf[RS_AGENT_REG_MSG_MAX];
	size_t len;
	bool pending;    /* counted in a->n_pending: no request judged yet */
	bool registered;
	char member_id[RS_ID_MAX + 1];
	struct rs_client_key key;
	char gateway[RS_ID_MAX + 1]; /* target; "" when none could be chosen */
	struct steer_job *steer;     /* rs_store_steer in flight for it, or NULL */
	bool awaiting;               /* registered, its answer not sent yet */
	bool uid_held;               /* counted in its uid's registrations (reg_limit_uid_hold) */
	bool quiet;                  /* a refusal not logged on its own (an episode's, logged once) */
};

/* A gateway endpoint that registered callers are sent to (rs_targets). */
struct agent_target {
	char gateway[RS_ID_MAX + 1]; /* "" : free */
	char peer[RS_ENDPOINT_MAX + 1];
	uint32_t gen;
	bool ready;
};

/* ---- member_key.c ---------------------------------------------------------- */

/* A pidfd for the process at the other end of the UNIX connection conn_fd
 * (SO_PEERPIDFD when peerpidfd, else pidfd_open(pid)).  Returns the fd or
 * -errno. */
int agent_member_pidfd(int conn_fd, pid_t pid, bool peerpidfd);

/* The caller's key: its netns cookie when its netns is not the agent's,
 * else its cgroup id.  Refuses (reason in v, also returned) a caller
 * outside scope->steered, one with nothing of its own to key by (the
 * agent's netns and the root or the agent's own cgroup), and one whose
 * pidfd no longer names a live process after the reads. */
enum rs_agent_reg_reason agent_member_key(const struct agent_member_scope *scope, pid_t pid, int pidfd,
					  struct rs_client_key *key, struct agent_member_verdict *v);

/* Fills a->scope: the cgroup v2 mount, the steered cgroup (a->k.cgroup),
 * the agent's own cgroup id.  Returns 0 or -errno. */
int agent_member_scope_init(struct agent *a);

/* ---- members.c ------------------------------------------------------------- */

/* Registers m (key filled): refuses a key another member holds and a uid
 * holding its cfg.member_uid_max registrations (uid_full), asks the
 * store worker for its target (rs_store_steer), whose answer writes its
 * rs_clients entry.  With no store, or no gateway to choose, it is
 * registered without an entry (its connects go through kube-proxy).
 * Returns the reason; v->later: the answer comes through
 * agent_member_reply() (the caller sends nothing yet). */
enum rs_agent_reg_reason agent_member_admit(struct agent *a, struct agent_member *m, struct agent_member_verdict *v,
					    int64_t now_ms);

/* Deletes m's rs_clients entry (m is going away). */
void agent_member_forget(struct agent *a, struct agent_member *m);

/* Once per sync, with the store's live gateways (a->snap) and live
 * sessions: targets of gateways no longer live and serving are marked not
 * ready (one write each); each member goes to its live session's gateway
 * if it has one, else keeps its target while it is ready, else is steered
 * again; every entry's expiry is renewed.  Returns 0 or -errno. */
int agent_members_sync(struct agent *a, const struct rs_session_row *sessions, size_t n, int64_t now_ms);

/* Reads rs_targets back after a restart, so slots keep their gateway and
 * generation, and keeps them (unused or not) for one TTL: the previous
 * agent's entries steer to them until they expire.  Returns 0 or -errno. */
int agent_targets_adopt(struct agent *a);

/* ---- member_server.c ----------------------------------------------------- */

/* Listens on path (mode 0666: any local process may register itself; the
 * directory is made 0755 if missing) from a->base.  Returns 0 or -errno. */
int agent_member_server_start(struct agent *a, const char *path);

/* Closes the listener and every registration (their entries deleted). */
void agent_member_server_stop(struct agent *a);

/* Sends v as m's answer if m still waits for one (v->later from admit);
 * otherwise nothing. */
void agent_member_reply(struct agent_member *m, const struct agent_member_verdict *v);

#endif
