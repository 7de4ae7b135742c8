/* SPDX-License-Identifier: Apache-2.0 */
/* member_server.c - the agent's member socket: supervisors register their
 * member id here before they dial the Service (user/registration/agent_reg.h,
 * "Supervisor (member) registration") and keep the connection open as the
 * registration's lifetime.
 *
 * Guarantees:
 * - The loop never blocks on a caller: sockets are non-blocking, a request
 *   is read as its bytes arrive under one deadline from accept, and a
 *   registered connection is only watched for its end.
 * - Any local process may connect (the socket is 0666): what it registers
 *   is keyed by what the kernel says about it (SO_PEERCRED, its pidfd,
 *   /proc), so it can only steer its own connects.  Everything it sends
 *   is bounded (one request of at most RS_AGENT_REG_MSG_MAX bytes; anything
 *   after it ends the registration).
 * - A registration is answered when the store has chosen its target (on
 *   the store worker), or cfg.steer_wait_ms after it was judged without
 *   one, whichever comes first: a store that stops answering never holds
 *   a caller.
 * - A key registers at most REG_LIMIT_BURST times at once, then once per
 *   REG_LIMIT_REFILL_MS (reg_limit.h): the excess is refused (rate_limited)
 *   before it reaches the store.
 * - Every request gets one answer, counted under exactly one reason
 *   (a->member_results) and logged (a rate-limited episode once, not each
 *   refusal); a registration's end is logged and
 *   its rs_clients entry deleted at once. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>

#include "agent_run.h"
#include "util/logfmt.h"
#include "util/mstime.h"
#include "registration/registration_socket.h"

#define WHO "agent=members"
#define DEADLINE_MS 2000
#define PENDING_MAX 64 /* connections that have not registered yet */

/* The connection no longer counts as waiting to register. */
static void settled(struct agent_member *m)
{
	if (m->pending) {
		m->pending = false;
		m->a->n_pending--;
	}
}

static void member_free(struct agent_member *m)
{
	struct agent *a = m->a;

	settled(m);
	agent_member_forget(a, m);
	if (m->prev)
		m->prev->next = m->next;
	else
		a->members = m->next;
	if (m->next)
		m->next->prev = m->prev;
	if (m->rd)
		event_free(m->rd);
	if (m->deadline)
		event_free(m->deadline);
	if (m->pidfd >= 0)
		close(m->pidfd);
	close(m->fd);
	free(m);
}

static void answer(struct agent_member *m, const struct agent_member_verdict *v)
{
	struct rs_agent_reg_reply r = { .reason = (uint8_t)v->reason };
	uint8_t buf[RS_AGENT_REG_MSG_MAX];
	char pid[24], key[48] = "";
	size_t len;

	r.status = v->reason == RS_AGENT_REG_OK ? RS_AGENT_REG_STATUS_OK : RS_AGENT_REG_STATUS_REFUSED;
	snprintf(r.text, sizeof(r.text), "%s", v->text);
	for (char *p = r.text; *p; p++) /* strerror may be localised: ASCII only on the wire */
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
			*p = '?';
	if (rs_agent_reg_encode_reply(&r, buf, sizeof(buf), &len) == 0)
		(void)send(m->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	m->a->member_results[v->reason]++;
	snprintf(pid, sizeof(pid), "%d", (int)m->cred.pid);
	if (m->key.kind)
		snprintf(key, sizeof(key), "%s:%llu", m->key.kind == RS_CLIENT_NETNS ? "netns" : "cgroup",
			 (unsigned long long)m->key.id);
	if (v->reason == RS_AGENT_REG_OK)
		rs_log(stderr, "info", WHO, "event", "member_registered", "member", m->member_id, "key", key, "gateway",
		       m->gateway, "pid", pid, NULL);
	else if (!m->quiet)
		rs_log(stderr, "warn", WHO, "event", "member_refused", "reason", rs_agent_reg_reason_name(v->reason),
		       "member", m->member_id, "pid", pid, "detail", v->text, NULL);
}

static void refuse(struct agent_member *m, enum rs_agent_reg_reason reason, const char *text)
{
	struct agent_member_verdict v = { .reason = reason };

	snprintf(v.text, sizeof(v.text), "%s", text ? text : rs_agent_reg_reason_text(reason));
	answer(m, &v);
	member_free(m);
}

static enum rs_agent_reg_reason decode_reason(int rc)
{
	switch (rc) {
	case -EPROTONOSUPPORT: return RS_AGENT_REG_BAD_VERSION;
	case -EINVAL: return RS_AGENT_REG_BAD_ID;
	default: return RS_AGENT_REG_MALFORMED;
	}
}

/* After the registration (or after a newer one of the same member took its
 * place): the caller sends nothing more; its EOF (or anything else) ends
 * it. */
static void registered_readable(struct agent_member *m)
{
	char byte, pid[24];
	ssize_t n = recv(m->fd, &byte, 1, MSG_DONTWAIT);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	snprintf(pid, sizeof(pid), "%d", (int)m->cred.pid);
	rs_log(stderr, "info", WHO, "event", "member_gone", "member", m->member_id, "pid", pid, "why",
	       n > 0 ? "sent bytes after registering" : "closed", NULL);
	m->a->counters.members_gone++;
	member_free(m);
}

/* One registration of m's key: refused past its bucket (REG_LIMIT_BURST,
 * then one per REG_LIMIT_REFILL_MS), the episode logged once, its
 * refusals not one by one. */
static enum rs_agent_reg_reason rate_check(struct agent_member *m, struct agent_member_verdict *v)
{
	char pid[24], key[48];

	switch (reg_limit_take(&m->a->limits, m->key.kind, m->key.id, rs_mono_ms())) {
	case REG_TAKE_OK:
		return RS_AGENT_REG_OK;
	case REG_TAKE_LIMITED_FIRST:
		snprintf(pid, sizeof(pid), "%d", (int)m->cred.pid);
		snprintf(key, sizeof(key), "%s:%llu", m->key.kind == RS_CLIENT_NETNS ? "netns" : "cgroup",
			 (unsigned long long)m->key.id);
		rs_log(stderr, "warn", WHO, "event", "member_rate_limited", "key", key, "member", m->member_id, "pid",
		       pid, "detail", "refusing this key's registrations until its bucket refills", NULL);
		/* fall through */
	case REG_TAKE_LIMITED:
		m->quiet = true;
		v->reason = RS_AGENT_REG_RATE_LIMITED;
		break;
	case REG_TAKE_FULL:
		v->reason = RS_AGENT_REG_BUSY;
		break;
	case REG_TAKE_NOMEM:
	default:
		v->reason = RS_AGENT_REG_INTERNAL;
		break;
	}
	snprintf(v->text, sizeof(v->text), "%s", rs_agent_reg_reason_text(v->reason));
	return v->reason;
}

static void judge(struct agent_member *m, const struct rs_agent_member_request *req)
{
	struct agent_member_verdict v = { .reason = RS_AGENT_REG_OK };
	struct agent *a = m->a;

	settled(m); /* answered now, either way */
	snprintf(m->member_id, sizeof(m->member_id), "%s", req->member_id);
	if (agent_member_key(&a->scope, m->cred.pid, m->pidfd, &m->key, &v) != RS_AGENT_REG_OK ||
	    rate_check(m, &v) != RS_AGENT_REG_OK || agent_member_admit(a, m, &v, rs_wall_ms()) != RS_AGENT_REG_OK) {
		answer(m, &v);
		member_free(m);
		return;
	}
	m->awaiting = true;
	if (v.later) { /* the store's answer, or this deadline, answers it */
		struct timeval wait = rs_ms_timeval(a->cfg.steer_wait_ms);

		evtimer_del(m->deadline);
		evtimer_add(m->deadline, &wait);
		return;
	}
	agent_member_reply(m, &v);
}

void agent_member_reply(struct agent_member *m, const struct agent_member_verdict *v)
{
	if (!m->awaiting)
		return;
	m->awaiting = false;
	answer(m, v);
	if (m->deadline)
		event_free(m->deadline);
	m->deadline = NULL;
}

static void member_readable(evutil_socket_t fd, short what, void *arg)
{
	struct agent_member *m = arg;

	(void)fd;
	(void)what;
	if (!m->pending) { /* judged: registered, or superseded by its member's next registration */
		registered_readable(m);
		return;
	}
	for (;;) {
		struct rs_agent_member_request req;
		size_t need;
		ssize_t n;
		int rc = rs_agent_member_decode_request(m->buf, m->len, &req, &need);

		if (rc == 0) {
			judge(m, &req);
			return;
		}
		if (rc != -EAGAIN) {
			refuse(m, decode_reason(rc), NULL);
			return;
		}
		n = recv(m->fd, m->buf + m->len, need - m->len, MSG_DONTWAIT);
		if (n > 0) {
			m->len += (size_t)n;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (m->len == 0) { /* a probe: nothing to answer */
			member_free(m);
			return;
		}
		refuse(m, RS_AGENT_REG_MALFORMED, "malformed registration message: cut short");
		return;
	}
}

static void member_expired(evutil_socket_t fd, short what, void *arg)
{
	struct agent_member *m = arg;

	(void)fd;
	(void)what;
	if (m->awaiting) { /* admitted; the store has not chosen its target yet */
		struct agent_member_verdict v = { .reason = RS_AGENT_REG_OK };

		m->a->counters.member_steer_late++;
		snprintf(v.text, sizeof(v.text), AGENT_STEER_LATE_TEXT,
			 m->key.kind == RS_CLIENT_NETNS ? "netns" : "cgroup", m->a->cfg.steer_wait_ms);
		agent_member_reply(m, &v);
		return;
	}
	refuse(m, RS_AGENT_REG_TIMEOUT, NULL);
}

static void member_start(struct agent *a, int fd)
{
	struct agent_member *m = calloc(1, sizeof(*m));
	socklen_t len = sizeof(struct ucred);
	struct timeval deadline = rs_ms_timeval(DEADLINE_MS);

	if (!m) {
		close(fd);
		return;
	}
	m->a = a;
	m->fd = fd;
	m->pidfd = -1;
	m->next = a->members;
	if (a->members)
		a->members->prev = m;
	a->members = m;
	m->pending = true;
	a->n_pending++;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &m->cred, &len) < 0 || len != sizeof(m->cred)) {
		refuse(m, RS_AGENT_REG_INTERNAL, "agent: internal error: SO_PEERCRED failed");
		return;
	}
	if (a->n_pending > PENDING_MAX) {
		refuse(m, RS_AGENT_REG_BUSY, NULL);
		return;
	}
	m->pidfd = agent_member_pidfd(fd, m->cred.pid, a->scope.peerpidfd);
	if (m->pidfd < 0) {
		refuse(m, RS_AGENT_REG_CALLER_GONE, NULL);
		return;
	}
	m->rd = event_new(a->base, fd, EV_READ | EV_PERSIST, member_readable, m);
	m->deadline = evtimer_new(a->base, member_expired, m);
	if (!m->rd || !m->deadline || event_add(m->rd, NULL) < 0 || evtimer_add(m->deadline, &deadline) < 0)
		refuse(m, RS_AGENT_REG_INTERNAL, "agent: internal error: cannot watch the connection");
}

static void start_cb(void *ctx, int fd)
{
	member_start(ctx, fd);
}

static void accept_ready(evutil_socket_t lfd, short what, void *arg)
{
	struct agent *a = arg;

	(void)what;
	rs_reg_accept_batch(lfd, a->member_accept_ev, a->member_resume_ev, start_cb, a, stderr, WHO);
}

static void accept_resume(evutil_socket_t fd, short what, void *arg)
{
	struct agent *a = arg;

	(void)fd;
	(void)what;
	rs_reg_accept_resume(a->member_accept_ev, stderr, WHO);
}

int agent_member_server_start(struct agent *a, const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int err;

	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	err = rs_reg_socket_dir(path, 0755); /* every local process may reach the member socket */
	if (err)
		return err;
	/* One agent per node: a leftover file from a dead agent is replaced
	 * (the registration socket beside it guards against two live agents). */
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	reg_limit_init(&a->limits, a->cfg.member_uid_max);
	reg_limit_set_burst(&a->limits, a->cfg.member_burst);
	a->member_lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (a->member_lfd < 0)
		return -errno;
	if (bind(a->member_lfd, (struct sockaddr *)&sun, sizeof(sun)) < 0 || chmod(path, 0666) < 0 ||
	    listen(a->member_lfd, 64) < 0)
		return -errno;
	a->member_accept_ev = event_new(a->base, a->member_lfd, EV_READ | EV_PERSIST, accept_ready, a);
	a->member_resume_ev = evtimer_new(a->base, accept_resume, a);
	if (!a->member_accept_ev || !a->member_resume_ev || event_add(a->member_accept_ev, NULL) < 0)
		return -ENOMEM;
	return agent_reservations_start(a);
}

void agent_member_server_stop(struct agent *a)
{
	/* The entries stay until they expire: steering goes on across an
	 * agent restart, and the supervisors register again with the next
	 * agent when they see this one's links close. */
	for (struct agent_member *m = a->members; m; m = m->next)
		m->registered = false;
	while (a->members)
		member_free(a->members);
	agent_reservations_stop(a);
	reg_limit_free(&a->limits);
	if (a->member_accept_ev)
		event_free(a->member_accept_ev);
	if (a->member_resume_ev)
		event_free(a->member_resume_ev);
	a->member_accept_ev = a->member_resume_ev = NULL;
	if (a->member_lfd >= 0)
		close(a->member_lfd);
	a->member_lfd = -1;
}
