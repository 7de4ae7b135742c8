/* SPDX-License-Identifier: Apache-2.0 */
/* registration_server.c - the agent's side of gateway socket registration
 * (user/registration/agent_reg.h): a UNIX stream listener served from the
 * agent's libevent loop.
 *
 * Guarantees:
 * - The loop never blocks here: sockets are non-blocking, a request is read
 *   as its bytes arrive, and exactly its bytes (never what a caller sends
 *   after it).
 * - Bounded: at most max_conns registrations in progress (more are answered
 *   "busy" at once), RS_AGENT_REG_MSG_MAX bytes and FD_ROOM fds buffered
 *   per connection, one deadline per connection from accept to answer (a
 *   caller trickling bytes cannot extend it).
 * - Every connection that sent anything gets one answer, counted under
 *   exactly one reason, and one log line.  A caller whose uid is not
 *   allowed is answered at accept: nothing it sends is read.
 * - Only a socket that passed every check reaches on_register; every fd
 *   received is closed by the time its connection ends, extra ones at once.
 * - The socket file is unlinked on free only if it is still ours, so a
 *   newer agent's socket at the same path survives an older one's exit. */
#include <errno.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>

#include "registration/agent_reg.h"
#include "util/logfmt.h"
#include "util/mstime.h"
#include "registration_socket.h"

#define FD_ROOM 4                    /* fds one recvmsg can hand over; more: MSG_CTRUNC */
#define ACCEPT_BATCH 16               /* accepts per wakeup, so callers cannot starve the loop */
#define ACCEPT_PAUSE_MS 100           /* out of fds: stop accepting this long */
#define LISTEN_BACKLOG 16
#define NETNS_SELF "/proc/self/ns/net"
#define WHO "agent=registration"

struct reg_conn {
	struct rs_agent_reg_server *srv;
	struct reg_conn *prev, *next;
	int fd;
	struct event *rd, *deadline;
	struct ucred cred;
	uint8_t buf[RS_AGENT_REG_MSG_MAX];
	size_t len;
	int passed_fd;  /* the first fd received, -1 before */
	unsigned n_fds; /* fds received in all (extras already closed) */
	bool cut;       /* MSG_CTRUNC: the kernel dropped fds that did not fit */
};

struct rs_agent_reg_server {
	struct event_base *base;
	int lfd;
	struct event *accept_ev, *resume_ev;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	dev_t sock_dev, netns_dev;
	ino_t sock_ino, netns_ino;
	uid_t uids[RS_AGENT_REG_UIDS_MAX];
	size_t n_uids;
	unsigned max_conns;
	struct timeval deadline;
	rs_agent_reg_cb on_register;
	void *ctx;
	FILE *log;
	struct reg_conn *conns;
	struct rs_agent_reg_stats stats;
};

/* What the answer to one connection says, gathered before it is sent. */
struct verdict {
	enum rs_agent_reg_reason reason;
	uint32_t slot;
	char text[RS_AGENT_REG_TEXT_MAX + 1];
	const char *gateway_id;
	unsigned role;
};

/* Both return the reason, so that a check can end with "return verdict_...". */
static enum rs_agent_reg_reason verdict_set(struct verdict *v, enum rs_agent_reg_reason reason,
					    const char *detail)
{
	v->reason = reason;
	snprintf(v->text, sizeof(v->text), "%s", detail ? detail : rs_agent_reg_reason_text(reason));
	/* strerror may be localised; the wire carries printable ASCII only. */
	for (char *p = v->text; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
			*p = '?';
	return reason;
}

static enum rs_agent_reg_reason verdict_errno(struct verdict *v, enum rs_agent_reg_reason reason,
					      const char *what, int err)
{
	char detail[RS_AGENT_REG_TEXT_MAX + 1];

	snprintf(detail, sizeof(detail), "%s: %s: %s", rs_agent_reg_reason_text(reason), what, strerror(err));
	return verdict_set(v, reason, detail);
}

/* Sends the reply, counts it and logs it.  The reply is at most 214 bytes
 * and is the first thing ever written to a fresh socket, so a non-blocking
 * send takes it whole; if it fails the caller is gone or broken, and it
 * sees EOF, which the client reports as -EPROTO. */
static void answer(struct rs_agent_reg_server *s, int fd, const struct ucred *cred, const struct verdict *v)
{
	struct rs_agent_reg_reply r = { .reason = (uint8_t)v->reason, .slot = v->slot };
	uint8_t buf[RS_AGENT_REG_MSG_MAX];
	char uid[24] = "", pid[24] = "", slot[16] = "";
	size_t len;
	bool ok = v->reason == RS_AGENT_REG_OK;

	r.status = ok ? RS_AGENT_REG_STATUS_OK : RS_AGENT_REG_STATUS_REFUSED;
	snprintf(r.text, sizeof(r.text), "%s", v->text);
	if (rs_agent_reg_encode_reply(&r, buf, sizeof(buf), &len) == 0)
		(void)send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (ok)
		s->stats.registered++;
	else
		s->stats.refused[v->reason]++;
	if (!s->log)
		return;
	if (cred) {
		snprintf(uid, sizeof(uid), "%u", (unsigned)cred->uid);
		snprintf(pid, sizeof(pid), "%d", (int)cred->pid);
	}
	if (ok) {
		snprintf(slot, sizeof(slot), "%u", (unsigned)v->slot);
		rs_log(s->log, "info", WHO, "event", "registered", "gateway", v->gateway_id, "role",
		       rs_agent_role_name(v->role), "slot", slot, "uid", uid, "pid", pid, NULL);
	} else {
		rs_log(s->log, "warn", WHO, "event", "refused", "reason", rs_agent_reg_reason_name(v->reason),
		       "gateway", v->gateway_id ? v->gateway_id : "", "uid", uid, "pid", pid, "detail", v->text,
		       NULL);
	}
}

static void conn_free(struct reg_conn *c)
{
	struct rs_agent_reg_server *s = c->srv;

	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->stats.in_progress--;
	if (c->rd)
		event_free(c->rd);
	if (c->deadline)
		event_free(c->deadline);
	if (c->passed_fd >= 0)
		close(c->passed_fd);
	close(c->fd);
	free(c);
}

static void conn_finish(struct reg_conn *c, struct verdict *v)
{
	answer(c->srv, c->fd, &c->cred, v);
	conn_free(c);
}

static void conn_refuse(struct reg_conn *c, enum rs_agent_reg_reason reason, const char *detail)
{
	struct verdict v = { 0 };

	verdict_set(&v, reason, detail);
	conn_finish(c, &v);
}

static bool uid_allowed(const struct rs_agent_reg_server *s, uid_t uid)
{
	for (size_t i = 0; i < s->n_uids; i++)
		if (s->uids[i] == uid)
			return true;
	return false;
}

static int sockopt_int(int fd, int opt, int *val)
{
	socklen_t len = sizeof(*val);

	if (getsockopt(fd, SOL_SOCKET, opt, val, &len) < 0)
		return -errno;
	return len == sizeof(*val) ? 0 : -EIO;
}

/* The kernel assigns any socket sk_lookup hands it, even one of another
 * netns, so the agent compares namespaces itself: SIOCGSKNS opens the
 * socket's netns, whose (dev, ino) identify it like /proc/self/ns/net's. */
static enum rs_agent_reg_reason check_netns(const struct rs_agent_reg_server *s, int fd, struct verdict *v)
{
	enum rs_agent_reg_reason r = RS_AGENT_REG_OK;
	struct stat st;
	int ns = ioctl(fd, SIOCGSKNS);

	/* Failing to look is a refusal too: a socket whose netns cannot be
	 * verified is not registered. */
	if (ns < 0)
		return verdict_errno(v, RS_AGENT_REG_INTERNAL, "SIOCGSKNS", errno);
	if (fstat(ns, &st) < 0)
		r = verdict_errno(v, RS_AGENT_REG_INTERNAL, "fstat netns", errno);
	else if (st.st_dev != s->netns_dev || st.st_ino != s->netns_ino)
		r = verdict_set(v, RS_AGENT_REG_NETNS, NULL);
	close(ns);
	return r;
}

/* The socket checks, in an order that names the most basic fault: what it
 * is, its family, TCP, listening, then where it lives.  Returns the reason
 * (also in *v); fills *local when the socket passes. */
static enum rs_agent_reg_reason check_socket(const struct rs_agent_reg_server *s, int fd, struct sockaddr_storage *local,
			 struct verdict *v)
{
	char detail[RS_AGENT_REG_TEXT_MAX + 1];
	struct stat st;
	socklen_t len = sizeof(*local);
	int domain, type, protocol, listening, rc;

	if (fstat(fd, &st) < 0)
		return verdict_errno(v, RS_AGENT_REG_INTERNAL, "fstat", errno);
	if (!S_ISSOCK(st.st_mode))
		return verdict_set(v, RS_AGENT_REG_NOT_SOCKET, NULL);
	if ((rc = sockopt_int(fd, SO_DOMAIN, &domain)) < 0)
		return verdict_errno(v, RS_AGENT_REG_INTERNAL, "SO_DOMAIN", -rc);
	if (domain != AF_INET && domain != AF_INET6) {
		snprintf(detail, sizeof(detail), "%s (family %d)", rs_agent_reg_reason_text(RS_AGENT_REG_FAMILY),
			 domain);
		return verdict_set(v, RS_AGENT_REG_FAMILY, detail);
	}
	if ((rc = sockopt_int(fd, SO_TYPE, &type)) < 0)
		return verdict_errno(v, RS_AGENT_REG_INTERNAL, "SO_TYPE", -rc);
	if ((rc = sockopt_int(fd, SO_PROTOCOL, &protocol)) < 0)
		return verdict_errno(v, RS_AGENT_REG_INTERNAL, "SO_PROTOCOL", -rc);
	if (type != SOCK_STREAM || protocol != IPPROTO_TCP) {
		snprintf(detail, sizeof(detail), "%s (type %d, protocol %d)",
			 rs_agent_reg_reason_text(RS_AGENT_REG_NOT_TCP), type, protocol);
		return verdict_set(v, RS_AGENT_REG_NOT_TCP, detail);
	}
	if ((rc = sockopt_int(fd, SO_ACCEPTCONN, &listening)) < 0)
		return verdict_errno(v, RS_AGENT_REG_INTERNAL, "SO_ACCEPTCONN", -rc);
	if (listening != 1)
		return verdict_set(v, RS_AGENT_REG_NOT_LISTENING, NULL);
	if (check_netns(s, fd, v) != RS_AGENT_REG_OK)
		return v->reason;
	memset(local, 0, sizeof(*local));
	if (getsockname(fd, (struct sockaddr *)local, &len) < 0)
		return verdict_errno(v, RS_AGENT_REG_INTERNAL, "getsockname", errno);
	return RS_AGENT_REG_OK;
}

static enum rs_agent_reg_reason decode_reason(int rc)
{
	switch (rc) {
	case -EPROTONOSUPPORT:
		return RS_AGENT_REG_BAD_VERSION;
	case -EINVAL:
		return RS_AGENT_REG_BAD_ID;
	case -ERANGE:
		return RS_AGENT_REG_BAD_ROLE;
	default:
		return RS_AGENT_REG_MALFORMED;
	}
}

/* A whole request is in (or the decoder gave up on it): judge and answer. */
static void conn_judge(struct reg_conn *c, int rc, const struct rs_agent_reg_request *req)
{
	struct rs_agent_reg_server *s = c->srv;
	struct verdict v = { .reason = RS_AGENT_REG_OK };
	struct sockaddr_storage local;
	uint32_t slot = 0;
	int cb;

	if (rc == -ERANGE)
		v.gateway_id = req->gateway_id; /* checked before the role: worth logging */
	if (rc < 0) {
		verdict_set(&v, decode_reason(rc), NULL);
		conn_finish(c, &v);
		return;
	}
	v.gateway_id = req->gateway_id;
	v.role = req->role;
	if (c->n_fds == 0)
		verdict_set(&v, RS_AGENT_REG_NO_FD, NULL);
	else if (c->n_fds > 1 || c->cut)
		verdict_set(&v, RS_AGENT_REG_TOO_MANY_FDS, NULL);
	else
		check_socket(s, c->passed_fd, &local, &v);
	if (v.reason == RS_AGENT_REG_OK) {
		cb = s->on_register(s->ctx, req->gateway_id, (enum rs_agent_role)req->role, c->passed_fd, &local,
				    &slot);
		if (cb == -EADDRNOTAVAIL)
			verdict_set(&v, RS_AGENT_REG_ENDPOINT, NULL);
		else if (cb < 0)
			verdict_errno(&v, RS_AGENT_REG_STORE, "on_register", -cb);
		else
			v.slot = slot;
	}
	if (v.reason == RS_AGENT_REG_OK)
		verdict_set(&v, RS_AGENT_REG_OK, NULL);
	conn_finish(c, &v);
}

/* Keeps the first fd a caller passes and closes the rest at once, so a
 * caller cannot make the agent hold more than one fd per connection. */
static void take_fds(struct reg_conn *c, struct msghdr *msg)
{
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(msg); cm; cm = CMSG_NXTHDR(msg, cm)) {
		size_t n;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len < CMSG_LEN(0))
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(fd));
			if (c->passed_fd < 0)
				c->passed_fd = fd;
			else
				close(fd);
			c->n_fds++;
		}
	}
	if (msg->msg_flags & MSG_CTRUNC)
		c->cut = true;
}

/* Reads up to want bytes.  Returns the count, 0 at EOF, -EAGAIN, -errno. */
static ssize_t conn_recv(struct reg_conn *c, size_t want)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * FD_ROOM)];
	} control;
	struct iovec iov = { .iov_base = c->buf + c->len, .iov_len = want };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	for (;;) {
		msg.msg_control = control.buf;
		msg.msg_controllen = sizeof(control.buf);
		msg.msg_flags = 0;
		/* MSG_CMSG_CLOEXEC: a received fd must not leak into anything
		 * the agent runs. */
		n = recvmsg(c->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n >= 0 || errno != EINTR)
			break;
	}
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	take_fds(c, &msg);
	c->len += (size_t)n;
	return n;
}

/* A connection that goes away before sending a byte is not a refusal
 * (probes, health checks, a client that gave up): count it, say nothing. */
static void conn_abort(struct reg_conn *c)
{
	c->srv->stats.aborted++;
	conn_free(c);
}

static void conn_readable(evutil_socket_t fd, short what, void *arg)
{
	struct reg_conn *c = arg;

	(void)fd;
	(void)what;
	for (;;) {
		struct rs_agent_reg_request req;
		size_t need;
		ssize_t n;
		int rc = rs_agent_reg_decode_request(c->buf, c->len, &req, &need);

		if (rc != -EAGAIN) {
			conn_judge(c, rc, &req);
			return;
		}
		n = conn_recv(c, need - c->len);
		if (n > 0)
			continue;
		if (n == -EAGAIN)
			return;
		/* EOF or a reset before a whole request.  With nothing read
		 * it is an abort; otherwise the request was cut short, and a
		 * caller that only shut down its writing side still hears why. */
		if (c->len == 0 && c->n_fds == 0)
			conn_abort(c);
		else
			conn_refuse(c, RS_AGENT_REG_MALFORMED, "malformed registration message: cut short");
		return;
	}
}

static void conn_expired(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	conn_refuse(arg, RS_AGENT_REG_TIMEOUT, NULL);
}

/* Answers a connection that never gets a reg_conn (busy, uid, no memory). */
static void answer_now(struct rs_agent_reg_server *s, int fd, const struct ucred *cred,
		       enum rs_agent_reg_reason reason, const char *detail)
{
	struct verdict v = { 0 };

	verdict_set(&v, reason, detail);
	answer(s, fd, cred, &v);
	close(fd);
}

static void conn_start(struct rs_agent_reg_server *s, int fd)
{
	char detail[RS_AGENT_REG_TEXT_MAX + 1];
	struct ucred cred = { .pid = 0, .uid = (uid_t)-1, .gid = (gid_t)-1 };
	socklen_t len = sizeof(cred);
	struct reg_conn *c;

	/* SO_PEERCRED is the caller's identity at connect time, set by the
	 * kernel: it cannot be forged by what the caller sends. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || len != sizeof(cred)) {
		snprintf(detail, sizeof(detail), "%s: SO_PEERCRED: %s",
			 rs_agent_reg_reason_text(RS_AGENT_REG_INTERNAL), strerror(errno));
		answer_now(s, fd, NULL, RS_AGENT_REG_INTERNAL, detail);
		return;
	}
	if (!uid_allowed(s, cred.uid)) {
		snprintf(detail, sizeof(detail), "caller uid %u is not allowed to register", (unsigned)cred.uid);
		answer_now(s, fd, &cred, RS_AGENT_REG_UID, detail);
		return;
	}
	if (s->stats.in_progress >= s->max_conns) {
		answer_now(s, fd, &cred, RS_AGENT_REG_BUSY, NULL);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		answer_now(s, fd, &cred, RS_AGENT_REG_INTERNAL, "agent: internal error: out of memory");
		return;
	}
	c->srv = s;
	c->fd = fd;
	c->cred = cred;
	c->passed_fd = -1;
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->stats.in_progress++;
	c->rd = event_new(s->base, fd, EV_READ | EV_PERSIST, conn_readable, c);
	c->deadline = evtimer_new(s->base, conn_expired, c);
	/* The deadline is its own one-shot timer: a timeout on the persistent
	 * read event would restart with every byte and let a trickle last
	 * forever. */
	if (!c->rd || !c->deadline || event_add(c->rd, NULL) < 0 || evtimer_add(c->deadline, &s->deadline) < 0)
		conn_refuse(c, RS_AGENT_REG_INTERNAL, "agent: internal error: cannot watch the connection");
}

static void accept_resume(evutil_socket_t fd, short what, void *arg)
{
	struct rs_agent_reg_server *s = arg;

	(void)fd;
	(void)what;
	rs_reg_accept_resume(s->accept_ev, s->log, WHO);
}

static void start_cb(void *ctx, int fd)
{
	conn_start(ctx, fd);
}

static void accept_ready(evutil_socket_t lfd, short what, void *arg)
{
	struct rs_agent_reg_server *s = arg;

	(void)what;
	rs_reg_accept_batch(lfd, s->accept_ev, s->resume_ev, start_cb, s, s->log, WHO);
}

void rs_reg_accept_resume(struct event *accept_ev, FILE *log, const char *who)
{
	if (event_add(accept_ev, NULL) < 0 && log)
		rs_log(log, "error", who, "event", "accept_resume_failed", NULL);
}

void rs_reg_accept_batch(int lfd, struct event *accept_ev, struct event *resume_ev, void (*start)(void *ctx, int fd),
			 void *ctx, FILE *log, const char *who)
{
	for (int i = 0; i < ACCEPT_BATCH; i++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd >= 0) {
			start(ctx, fd);
			continue;
		}
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return;
		/* Out of fds or memory: the listener stays readable, so keep
		 * accepting and the loop spins.  Pause, then try again. */
		if (log)
			rs_log(log, "error", who, "event", "accept_failed", "error", strerror(errno), NULL);
		if (event_del(accept_ev) == 0) {
			struct timeval pause = { .tv_sec = 0, .tv_usec = ACCEPT_PAUSE_MS * 1000 };

			evtimer_add(resume_ev, &pause);
		}
		return;
	}
}

int rs_reg_socket_dir(const char *path, mode_t mode)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	if (mkdir(dir, mode) == 0)
		return chmod(dir, mode) < 0 ? -errno : 0; /* whatever the umask */
	return errno == EEXIST ? 0 : -errno;
}

/* A socket file left by an agent that died is replaced; one that answers
 * belongs to a live agent and is left alone, so two agents never take the
 * path from each other. */
static int clear_stale(const struct sockaddr_un *sun)
{
	struct stat st;
	int fd, rc;

	if (lstat(sun->sun_path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	rc = connect(fd, (const struct sockaddr *)sun, sizeof(*sun));
	if (rc == 0 || errno == EAGAIN) /* EAGAIN: a live listener's backlog is full */
		rc = -EADDRINUSE;
	else if (errno == ECONNREFUSED)
		rc = unlink(sun->sun_path) < 0 && errno != ENOENT ? -errno : 0;
	else if (errno == ENOENT)
		rc = 0;
	else
		rc = -errno;
	close(fd);
	return rc;
}

static int server_listen(struct rs_agent_reg_server *s)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct stat st;
	int rc;

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", s->path);
	rc = rs_reg_socket_dir(s->path, 0750);
	if (rc < 0)
		return rc;
	rc = clear_stale(&sun);
	if (rc < 0)
		return rc;
	s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->lfd < 0)
		return -errno;
	if (bind(s->lfd, (struct sockaddr *)&sun, sizeof(sun)) < 0)
		return -errno;
	/* Until this chmod the file has the umask's mode; a caller that
	 * connects in between still meets the SO_PEERCRED check. */
	if (chmod(s->path, 0660) < 0 || stat(s->path, &st) < 0)
		goto fail;
	s->sock_dev = st.st_dev;
	s->sock_ino = st.st_ino;
	if (listen(s->lfd, LISTEN_BACKLOG) < 0)
		goto fail;
	return 0;
fail:
	rc = -errno;
	unlink(s->path);
	return rc;
}

int rs_agent_reg_server_new(struct event_base *base, const struct rs_agent_reg_config *cfg,
			    struct rs_agent_reg_server **out)
{
	struct rs_agent_reg_server *s = NULL;
	const char *path;
	struct stat ns;
	int rc;

	if (!base || !cfg || !out || !cfg->on_register || cfg->n_allow_uids > RS_AGENT_REG_UIDS_MAX ||
	    (cfg->n_allow_uids && !cfg->allow_uids))
		return -EINVAL;
	path = cfg->socket_path ? cfg->socket_path : RS_AGENT_SOCKET_DEFAULT;
	if (!*path)
		return -EINVAL;
	if (strlen(path) >= sizeof(s->path))
		return -ENAMETOOLONG;
	/* The agent's netns, once: the namespace it steers is the one it
	 * started in. */
	if (stat(NETNS_SELF, &ns) < 0)
		return -errno;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->base = base;
	s->lfd = -1;
	snprintf(s->path, sizeof(s->path), "%s", path);
	s->netns_dev = ns.st_dev;
	s->netns_ino = ns.st_ino;
	if (cfg->n_allow_uids) {
		memcpy(s->uids, cfg->allow_uids, cfg->n_allow_uids * sizeof(uid_t));
		s->n_uids = cfg->n_allow_uids;
	} else {
		s->uids[0] = geteuid();
		s->n_uids = 1;
	}
	s->max_conns = cfg->max_conns ? cfg->max_conns : RS_AGENT_REG_CONNS_DEFAULT;
	s->deadline = rs_ms_timeval(cfg->deadline_ms ? cfg->deadline_ms : RS_AGENT_REG_DEADLINE_DEFAULT_MS);
	s->on_register = cfg->on_register;
	s->ctx = cfg->ctx;
	s->log = cfg->log;

	rc = server_listen(s);
	if (rc < 0)
		goto fail;
	s->accept_ev = event_new(base, s->lfd, EV_READ | EV_PERSIST, accept_ready, s);
	s->resume_ev = evtimer_new(base, accept_resume, s);
	if (!s->accept_ev || !s->resume_ev || event_add(s->accept_ev, NULL) < 0) {
		rc = -ENOMEM;
		goto fail;
	}
	*out = s;
	return 0;
fail:
	rs_agent_reg_server_free(s);
	return rc;
}

void rs_agent_reg_server_free(struct rs_agent_reg_server *s)
{
	struct stat st;

	if (!s)
		return;
	while (s->conns)
		conn_free(s->conns);
	if (s->accept_ev)
		event_free(s->accept_ev);
	if (s->resume_ev)
		event_free(s->resume_ev);
	if (s->lfd >= 0) {
		close(s->lfd);
		if (s->sock_ino && lstat(s->path, &st) == 0 && st.st_dev == s->sock_dev && st.st_ino == s->sock_ino)
			unlink(s->path);
	}
	free(s);
}

void rs_agent_reg_server_stats(const struct rs_agent_reg_server *s, struct rs_agent_reg_stats *out)
{
	*out = s->stats;
}
