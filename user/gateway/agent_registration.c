/* SPDX-License-Identifier: Apache-2.0 */
/* agent_registration.c - the gateway's listening sockets (listen and peer)
 * kept registered with the node agent (--agent PATH), so that sk_lookup
 * keeps steering Service connections to them.
 *
 * Registering once at start is not enough: a gateway started before its
 * agent, or one that outlives an agent restarted with fresh state (its pins
 * removed), would never be steered again.  So the heartbeat tick checks:
 *
 *  - a socket not registered (the last attempt failed: no agent, refused,
 *    timed out) is tried again at every tick until it succeeds;
 *  - a registered socket is registered again when the agent at PATH is not
 *    the instance that accepted it.  An agent binds a fresh socket file
 *    every time it starts (it replaces a dead agent's stale file, and a
 *    clean exit unlinks its own), so the file's identity (device, inode,
 *    ctime) taken just before our last success tells, for one stat(), that
 *    the agent changed.  While it does not, nothing is sent: every
 *    registration is a log line at the agent.  An agent killed and not yet
 *    replaced leaves its file: nothing to do until a new one binds, and its
 *    pinned maps keep steering meanwhile.
 *
 * The event loop is never held long: at start (the loop not serving yet)
 * an attempt may wait RS_AGENT_REG_CLIENT_TIMEOUT_MS; on the heartbeat it
 * waits RETRY_TIMEOUT_MS, and a timeout ends the round, so a stuck agent
 * costs at most one such wait per heartbeat.  An absent agent (no file:
 * -ENOENT; nobody listening: -ECONNREFUSED) fails at connect, at once.
 *
 * Registration is idempotent at the agent (the same gateway keeps its slot
 * and its counts), so the harmless mistakes, an extra registration after a
 * chmod of the socket file or after an attempt that timed out here but
 * completed there, cost one log line each and nothing else.
 *
 * Logs one line per change of standing (registered; unavailable, or
 * unavailable for another reason), and while nothing changes at most one
 * reminder per REMIND_MS. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "gateway.h"
#include "registration/agent_reg.h"
#include "util/logfmt.h"
#include "util/mstime.h"

/* The heartbeat's attempts block the loop (rs_agent_register_timeout is
 * synchronous): the agent answers from its own loop in well under a
 * millisecond, so 200 ms is room for a loaded node, and short next to a
 * heartbeat (5 s by default). */
#define RETRY_TIMEOUT_MS 200
#define REMIND_MS (5 * 60 * 1000) /* "still unavailable", at most this often per socket */

static const char *const result_labels[GW_AGENT_RESULT_COUNT] = {
	[GW_AGENT_OK] = "ok",           [GW_AGENT_ABSENT] = "absent", [GW_AGENT_REFUSED] = "refused",
	[GW_AGENT_TIMEOUT] = "timeout", [GW_AGENT_ERROR] = "error",
};

const char *gw_agent_result_label(enum gw_agent_result r)
{
	return r < GW_AGENT_RESULT_COUNT ? result_labels[r] : "unknown";
}

static enum gw_agent_result result_of(int err)
{
	switch (err) {
	case 0:
		return GW_AGENT_OK;
	case -ENOENT:
	case -ECONNREFUSED:
		return GW_AGENT_ABSENT;
	case -EACCES:
		return GW_AGENT_REFUSED;
	case -ETIMEDOUT:
		return GW_AGENT_TIMEOUT;
	default:
		return GW_AGENT_ERROR;
	}
}

/* stat, not lstat: a symlinked path names the agent its target is. */
static struct gw_agent_stamp stamp_read(const char *path)
{
	struct gw_agent_stamp s = { .present = false };
	struct stat st;

	if (stat(path, &st) == 0)
		s = (struct gw_agent_stamp){ .present = true, .dev = st.st_dev, .ino = st.st_ino, .ctime = st.st_ctim };
	return s;
}

static bool stamp_same(const struct gw_agent_stamp *a, const struct gw_agent_stamp *b)
{
	if (!a->present || !b->present)
		return a->present == b->present;
	return a->dev == b->dev && a->ino == b->ino && a->ctime.tv_sec == b->ctime.tv_sec &&
	       a->ctime.tv_nsec == b->ctime.tv_nsec;
}

static const char *role_label(enum rs_agent_role role)
{
	return role == RS_AGENT_ROLE_LISTEN ? "listen" : "peer";
}

static void log_registered(struct gateway *gw, enum rs_agent_role role, const struct gw_agent_link *l,
			   const char *cause, uint32_t slot)
{
	char slot_text[16], failures[24];

	snprintf(slot_text, sizeof(slot_text), "%u", (unsigned)slot);
	snprintf(failures, sizeof(failures), "%llu", (unsigned long long)l->failures);
	rs_log(stderr, "info", gw->who, "event", "agent_registered", "role", role_label(role), "slot", slot_text,
	       "cause", cause, "failures", failures, NULL);
}

/* A failure is news when the socket was registered, when none was logged
 * since start or the last success, or when the reason differs; otherwise
 * it is said again only after REMIND_MS. */
static void log_failure(struct gateway *gw, enum rs_agent_role role, struct gw_agent_link *l, bool was_registered,
			int err, const struct rs_agent_reg_reply *reply)
{
	uint8_t reason = err == -EACCES ? reply->reason : 0;
	bool news = was_registered || l->last_err == 0 || l->last_err != err || l->last_reason != reason;
	int64_t now = rs_mono_ms();
	char error[RS_AGENT_REG_TEXT_MAX + 64], failures[24];

	if (!news && now - l->logged_ms < REMIND_MS)
		return;
	l->last_err = err;
	l->last_reason = reason;
	l->logged_ms = now;
	if (err == -EACCES)
		snprintf(error, sizeof(error), "%s: %s", rs_agent_reg_reason_name(reply->reason), reply->text);
	else if (err == -EPERM && reply->text[0]) /* an untrusted agent: not sent */
		snprintf(error, sizeof(error), "%s", reply->text);
	else
		snprintf(error, sizeof(error), "%s", strerror(-err));
	snprintf(failures, sizeof(failures), "%llu", (unsigned long long)l->failures);
	rs_log(stderr, "warn", gw->who, "event", "agent_unavailable", "role", role_label(role), "agent",
	       gw->cfg.agent, "error", error, "failures", failures, "mode", "redirect-only", NULL);
}

/* One attempt for one socket; at is the socket path's identity read just
 * before it.  Returns the attempt's result (0 or -errno). */
static int attempt(struct gateway *gw, enum rs_agent_role role, int timeout_ms, const struct gw_agent_stamp *at)
{
	struct gw_agent_link *l = role == RS_AGENT_ROLE_LISTEN ? &gw->agent_listen : &gw->agent_peer;
	struct evconnlistener *lst = role == RS_AGENT_ROLE_LISTEN ? gw->listen_lst : gw->peer_lst;
	struct rs_agent_reg_reply reply;
	bool was_registered = l->state == GW_AGENT_REGISTERED;
	const char *cause;
	int err;

	err = rs_agent_register_as(gw->cfg.agent, gw->cfg.id, role, evconnlistener_get_fd(lst), gw->cfg.agent_uid,
				   timeout_ms, &reply);
	gw->counters.agent_attempts[result_of(err)]++;
	if (err == 0) {
		cause = l->state != GW_AGENT_NEVER ? "agent_changed" : l->failures ? "retry" : "start";
		l->state = GW_AGENT_REGISTERED;
		l->at = *at;
		log_registered(gw, role, l, cause, reply.slot);
		l->failures = 0;
		l->last_err = 0;
		l->last_reason = 0;
		return 0;
	}
	if (l->state == GW_AGENT_REGISTERED)
		l->state = GW_AGENT_LOST;
	l->failures++;
	log_failure(gw, role, l, was_registered, err, &reply);
	return err;
}

/* Tries each socket that needs it; a timeout ends the round so that a
 * stuck agent holds the loop for one timeout, not one per socket. */
static void register_round(struct gateway *gw, int timeout_ms)
{
	static const enum rs_agent_role roles[] = { RS_AGENT_ROLE_LISTEN, RS_AGENT_ROLE_PEER };
	/* Read before the attempts: if the agent is replaced in between, the
	 * older identity is recorded and the next tick registers once more,
	 * rather than a newer one recorded for an older agent's acceptance. */
	struct gw_agent_stamp now = stamp_read(gw->cfg.agent);

	for (size_t i = 0; i < sizeof(roles) / sizeof(roles[0]); i++) {
		const struct gw_agent_link *l = roles[i] == RS_AGENT_ROLE_LISTEN ? &gw->agent_listen : &gw->agent_peer;

		if (l->state == GW_AGENT_REGISTERED && stamp_same(&l->at, &now))
			continue;
		if (attempt(gw, roles[i], timeout_ms, &now) == -ETIMEDOUT)
			return;
	}
}

void gw_agent_register_start(struct gateway *gw)
{
	if (gw->cfg.agent)
		register_round(gw, RS_AGENT_REG_CLIENT_TIMEOUT_MS);
}

void gw_agent_watch(struct gateway *gw)
{
	if (gw->cfg.agent)
		register_round(gw, RETRY_TIMEOUT_MS);
}
