/* SPDX-License-Identifier: Apache-2.0 */
/* registration_client.c - the gateway's side of socket registration
 * (user/registration/agent_reg.h): connect to the agent, send the request
 * with the listening socket as SCM_RIGHTS, read the one reply.
 *
 * Guarantees: blocks at most the timeout from connect to reply, whatever
 * the agent does (a silent, slow or full agent is -ETIMEDOUT); never
 * raises SIGPIPE; reads at most one reply and accepts no fds from the agent
 * (recv without a control buffer makes the kernel drop any); the caller's
 * listen_fd is only lent (the kernel passes a copy) and stays open; a
 * refusal answered early (while the request is still being sent) is still
 * read and reported; the listener goes only to an agent whose listening
 * process runs as uid 0, this process's uid, or the configured agent uid
 * (SO_PEERCRED): a local process that took the socket path gets nothing. */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "registration/agent_reg.h"
#include "util/mstime.h"
#include "ringsteer/proto.h"

#define CONNECT_RETRY_MS 10 /* backlog full: retry this often until the deadline */

/* Waits until fd is ready for events or the deadline passes.  Returns 0
 * (ready, or an error/hangup the next call will report), -ETIMEDOUT. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };
		int64_t left = deadline - rs_mono_ms();
		int rc;

		if (left <= 0)
			return -ETIMEDOUT;
		rc = poll(&p, 1, left > INT32_MAX ? INT32_MAX : (int)left);
		if (rc > 0)
			return 0;
		if (rc == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

static int connect_agent(int fd, const struct sockaddr_un *sun, int64_t deadline)
{
	for (;;) {
		struct timespec pause = { .tv_sec = 0, .tv_nsec = CONNECT_RETRY_MS * 1000000L };
		int64_t left;

		if (connect(fd, (const struct sockaddr *)sun, sizeof(*sun)) == 0)
			return 0;
		switch (errno) {
		case EINTR:
			continue;
		case EAGAIN:
			/* A UNIX listener with a full backlog refuses a
			 * non-blocking connect with EAGAIN, and nothing can be
			 * polled for: retry until the deadline. */
			left = deadline - rs_mono_ms();
			if (left <= 0)
				return -ETIMEDOUT;
			if (left < CONNECT_RETRY_MS)
				pause.tv_nsec = (long)left * 1000000L;
			nanosleep(&pause, NULL);
			continue;
		case EACCES:
		case EPERM:
			/* File permissions, not the agent's verdict: keep
			 * -EACCES for refusals that come with a reason. */
			return -EPERM;
		default:
			return -errno;
		}
	}
}

/* Sends the request, the fd (if listen_fd >= 0) riding with its first bytes.  Returns 0 when
 * sent or when the agent stopped reading (it answered early: the reply
 * tells why), -ETIMEDOUT, -errno. */
static int send_request(int fd, const uint8_t *buf, size_t len, int listen_fd, int64_t deadline)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} control;
	size_t sent = 0;
	bool fd_sent = false;

	memset(&control, 0, sizeof(control));
	while (sent < len) {
		struct iovec iov = { .iov_base = (void *)(buf + sent), .iov_len = len - sent };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t n;
		int rc;

		if (!fd_sent && listen_fd >= 0) {
			struct cmsghdr *cm;

			msg.msg_control = control.buf;
			msg.msg_controllen = sizeof(control.buf);
			cm = CMSG_FIRSTHDR(&msg);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(cm), &listen_fd, sizeof(int));
		}
		n = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			sent += (size_t)n;
			fd_sent = true;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
			return 0;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		rc = wait_fd(fd, POLLOUT, deadline);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int read_reply(int fd, struct rs_agent_reg_reply *reply, int64_t deadline)
{
	uint8_t buf[RS_AGENT_REG_MSG_MAX];
	size_t len = 0;

	for (;;) {
		size_t need;
		ssize_t n;
		int rc = rs_agent_reg_decode_reply(buf, len, reply, &need);

		if (rc == 0)
			return 0;
		if (rc != -EAGAIN)
			return -EPROTO;
		n = recv(fd, buf + len, need - len, MSG_DONTWAIT);
		if (n > 0) {
			len += (size_t)n;
			continue;
		}
		if (n == 0 || (n < 0 && (errno == ECONNRESET || errno == EPIPE)))
			return -EPROTO; /* closed without a whole reply */
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		rc = wait_fd(fd, POLLIN, deadline);
		if (rc < 0)
			return rc;
	}
}

/* Whether the process listening at the other end of fd may be handed a
 * listener: uid 0, this process's own uid (which could take the socket
 * anyway), or agent_uid.  SO_PEERCRED names who called listen(), as the
 * kernel saw it: a process that took the socket path cannot forge it.
 * Returns 0, -EPERM (reply->text says whom), -errno. */
static int peer_trusted(int fd, uid_t agent_uid, struct rs_agent_reg_reply *reply)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return -errno;
	if (len != sizeof(cred))
		return -EPROTO;
	if (cred.uid == 0 || cred.uid == geteuid() || (agent_uid != RS_AGENT_UID_NONE && cred.uid == agent_uid))
		return 0;
	snprintf(reply->text, sizeof(reply->text), "the agent socket's listener runs as uid %u (pid %d), not a trusted uid",
		 (unsigned)cred.uid, (int)cred.pid);
	return -EPERM;
}

/* Connects to socket_path, sends buf (with fd_to_pass as SCM_RIGHTS when
 * >= 0, and only to a trusted peer: peer_trusted) and reads one reply, all
 * within timeout_ms.  Returns the connected socket (the caller closes it)
 * with *reply filled, or -errno. */
static int exchange(const char *socket_path, const uint8_t *buf, size_t len, int fd_to_pass, uid_t agent_uid,
		    int timeout_ms, struct rs_agent_reg_reply *reply)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int64_t deadline = rs_mono_ms() + timeout_ms;
	int fd, rc;

	if (strlen(socket_path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", socket_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	rc = connect_agent(fd, &sun, deadline);
	if (rc == 0 && fd_to_pass >= 0)
		rc = peer_trusted(fd, agent_uid, reply);
	if (rc == 0)
		rc = send_request(fd, buf, len, fd_to_pass, deadline);
	if (rc == 0)
		rc = read_reply(fd, reply, deadline);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	return fd;
}

int rs_agent_register_timeout(const char *socket_path, const char *gateway_id, enum rs_agent_role role,
			      int listen_fd, int timeout_ms, struct rs_agent_reg_reply *reply)
{
	return rs_agent_register_as(socket_path, gateway_id, role, listen_fd, RS_AGENT_UID_NONE, timeout_ms,
				    reply);
}

int rs_agent_register_as(const char *socket_path, const char *gateway_id, enum rs_agent_role role, int listen_fd,
			 uid_t agent_uid, int timeout_ms, struct rs_agent_reg_reply *reply)
{
	struct rs_agent_reg_request req = { .version = RS_AGENT_REG_VERSION, .role = (uint8_t)role };
	struct rs_agent_reg_reply local_reply;
	uint8_t buf[RS_AGENT_REG_MSG_MAX];
	size_t len;
	int fd, rc;

	if (!reply)
		reply = &local_reply;
	memset(reply, 0, sizeof(*reply));
	if (!socket_path || !*socket_path || !gateway_id || listen_fd < 0 || timeout_ms <= 0 ||
	    (role != RS_AGENT_ROLE_LISTEN && role != RS_AGENT_ROLE_PEER) || !rs_proto_member_id_ok(gateway_id))
		return -EINVAL;
	snprintf(req.gateway_id, sizeof(req.gateway_id), "%s", gateway_id);
	rc = rs_agent_reg_encode_request(&req, buf, sizeof(buf), &len);
	if (rc < 0)
		return rc;
	fd = exchange(socket_path, buf, len, listen_fd, agent_uid, timeout_ms, reply);
	if (fd < 0)
		return fd;
	close(fd);
	return reply->status == RS_AGENT_REG_STATUS_OK ? 0 : -EACCES;
}

int rs_agent_register(const char *socket_path, const char *gateway_id, enum rs_agent_role role,
		      int listen_fd, uint32_t *slot, char *reason, size_t reason_cap)
{
	struct rs_agent_reg_reply reply;
	int rc;

	rc = rs_agent_register_timeout(socket_path, gateway_id, role, listen_fd, RS_AGENT_REG_CLIENT_TIMEOUT_MS,
				       &reply);
	if (rc == 0 && slot)
		*slot = reply.slot;
	if (!reason || reason_cap == 0)
		return rc;
	if (rc == 0)
		snprintf(reason, reason_cap, "registered in slot %u", (unsigned)reply.slot);
	else if (rc == -EACCES)
		snprintf(reason, reason_cap, "%s: %s", rs_agent_reg_reason_name(reply.reason), reply.text);
	else if (rc == -ENOENT || rc == -ECONNREFUSED)
		snprintf(reason, reason_cap, "no agent on %s: %s", socket_path, strerror(-rc));
	else
		snprintf(reason, reason_cap, "agent registration failed: %s", strerror(-rc));
	return rc;
}

int rs_agent_member_register(const char *socket_path, const char *member_id, int timeout_ms, int *link,
			     struct rs_agent_reg_reply *reply)
{
	struct rs_agent_member_request req = { .version = RS_AGENT_REG_VERSION };
	struct rs_agent_reg_reply local_reply;
	uint8_t buf[RS_AGENT_REG_MSG_MAX];
	size_t len;
	int fd, rc;

	if (!reply)
		reply = &local_reply;
	memset(reply, 0, sizeof(*reply));
	if (!socket_path || !*socket_path || !member_id || !link || timeout_ms <= 0 ||
	    !rs_proto_member_id_ok(member_id))
		return -EINVAL;
	*link = -1;
	snprintf(req.member_id, sizeof(req.member_id), "%s", member_id);
	rc = rs_agent_member_encode_request(&req, buf, sizeof(buf), &len);
	if (rc < 0)
		return rc;
	fd = exchange(socket_path, buf, len, -1, RS_AGENT_UID_NONE, timeout_ms, reply);
	if (fd < 0)
		return fd;
	if (reply->status != RS_AGENT_REG_STATUS_OK) {
		close(fd);
		return -EACCES;
	}
	*link = fd; /* the open registration */
	return 0;
}
