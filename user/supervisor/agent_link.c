/* SPDX-License-Identifier: Apache-2.0 */
/* agent_link.c - the supervisor's registration with its node's agent
 * (--agent PATH): before a dial to the Service it registers its member id,
 * so that the node's connect-time programs send that connect straight to the
 * gateway the rule chose; the open registration is its liveness, and when
 * the agent goes away (EOF) the next Service dial or heartbeat registers
 * again with whichever agent answers then.
 *
 * Never waits on an absent agent: no socket file or nobody listening fails
 * at once; a present agent's reply is waited for at most
 * RS_AGENT_MEMBER_TIMEOUT_MS (the only wait, and only when registering).
 * Whatever the agent says or does, the dial goes ahead: the gateway still
 * authenticates and places. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "registration/agent_reg.h"
#include "util/logfmt.h"
#include "supervisor.h"

static void link_close(struct supervisor *s)
{
	if (s->agent_ev)
		event_free(s->agent_ev);
	s->agent_ev = NULL;
	if (s->agent_fd >= 0)
		close(s->agent_fd);
	s->agent_fd = -1;
}

static void on_agent_readable(evutil_socket_t fd, short what, void *arg)
{
	struct supervisor *s = arg;
	char byte;
	ssize_t n = recv(fd, &byte, 1, MSG_DONTWAIT);

	(void)what;
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	rs_log(stderr, "info", s->who, "event", "agent_gone", "agent", s->cfg.agent, NULL);
	link_close(s);
	s->agent_last_err = -EPIPE;
}

void sup_agent_register(struct supervisor *s)
{
	struct rs_agent_reg_reply reply;
	int fd = -1, err;

	if (!s->cfg.agent || s->agent_fd >= 0)
		return;
	err = rs_agent_member_register(s->cfg.agent, s->cfg.id, RS_AGENT_MEMBER_TIMEOUT_MS, &fd, &reply);
	if (!err) {
		s->agent_ev = event_new(s->base, fd, EV_READ | EV_PERSIST, on_agent_readable, s);
		if (!s->agent_ev || event_add(s->agent_ev, NULL) < 0) {
			close(fd); /* the agent forgets us: kube-proxy decides, as without it */
			if (s->agent_ev)
				event_free(s->agent_ev);
			s->agent_ev = NULL;
			return;
		}
		s->agent_fd = fd;
		s->agent_last_err = 0;
		rs_log(stderr, "info", s->who, "event", "agent_registered", "agent", s->cfg.agent, "detail", reply.text,
		       NULL);
		return;
	}
	/* One line per change of outcome: an absent agent is normal on nodes
	 * without one, and a heartbeat retries it every interval. */
	if (err == s->agent_last_err)
		return;
	s->agent_last_err = err;
	if (err == -EACCES)
		rs_log(stderr, "warn", s->who, "event", "agent_refused", "agent", s->cfg.agent, "reason",
		       rs_agent_reg_reason_name(reply.reason), "detail", reply.text, NULL);
	else
		rs_log(stderr, "info", s->who, "event", "agent_unavailable", "agent", s->cfg.agent, "error",
		       strerror(-err), NULL);
}

void sup_agent_close(struct supervisor *s)
{
	link_close(s);
}
