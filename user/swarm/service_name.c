/* SPDX-License-Identifier: Apache-2.0 */
/* service_name.c - a member's Service dial by name (--service NAME:PORT),
 * as the reference supervisor makes it (user/supervisor/service_name.c):
 * looked up again at each Service dial on the resolver's thread (members
 * dialing together share one lookup, util/resolver.h), a dial slot held
 * meanwhile, then the answers tried in turn, each with its own
 * --dial-timeout, until one connects.  Every answer failed: the link fails
 * as a Service dial does and the core backs off; a name that does not
 * resolve is counted as failures_total{reason="resolve"}.  Nothing is
 * logged per answer: a swarm logs failures only, rate limited. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/mstime.h"
#include "swarm.h"

static struct rs_mc_time now_mc(void)
{
	return (struct rs_mc_time){ .mono_ms = rs_mono_ms(), .wall_ms = rs_wall_ms() };
}

static void fail_link(struct swarm_link *l, enum swarm_failure kind, enum rs_mc_fail why, const char *text)
{
	struct swarm_member *m = l->m;
	struct rs_mc_link *core = l->core;

	l->sw->fail_hint = kind;
	swarm_link_free(l);
	rs_mc_link_failed(m->mc, core, why, text, now_mc());
	swarm_member_settle(m);
}

/* Connects to the next answer that can be dialed.  Returns whether one is
 * connecting (its deadline armed); *kind, *why: the last failure to start one. */
static bool try_answers(struct swarm_link *l, enum swarm_failure *kind, const char **why)
{
	const struct timeval tv = rs_ms_timeval(l->sw->cfg.dial_timeout_ms);

	while (l->next < l->answers->n) {
		size_t i = l->next++;

		if (swarm_link_connect(l, &l->answers->addr[i], l->answers->len[i], kind, why) == 0) {
			evtimer_add(l->answer_timer, &tv);
			return true;
		}
	}
	return false;
}

bool swarm_next_answer(struct swarm_link *l, const char *why)
{
	enum swarm_failure kind = FAIL_CONNECT;
	const char *start_why = why;

	(void)why;
	if (!l->answers || l->next == 0 || l->next >= l->answers->n)
		return false;
	evtimer_del(l->answer_timer);
	if (l->bev) {
		bufferevent_free(l->bev);
		l->bev = NULL;
	}
	return try_answers(l, &kind, &start_why);
}

static void on_answer_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct swarm_link *l = arg;

	(void)fd;
	(void)what;
	if (swarm_next_answer(l, "timeout"))
		return;
	fail_link(l, FAIL_TIMEOUT, RS_MC_FAIL_TIMEOUT, "timeout (every address of the Service's name tried)");
}

static void on_resolved(void *arg, int err, const char *why, const struct rs_resolved *r)
{
	struct swarm_link *l = arg;
	enum swarm_failure kind = FAIL_CONNECT;
	const char *start_why = "no address";
	char text[256];

	l->lookup = NULL;
	if (err) {
		snprintf(text, sizeof(text), "cannot resolve %s: %s", l->sw->cfg.service, why);
		fail_link(l, FAIL_RESOLVE, RS_MC_FAIL_CONNECT, text);
		return;
	}
	l->answers = malloc(sizeof(*l->answers));
	if (!l->answers) {
		fail_link(l, FAIL_CONNECT, RS_MC_FAIL_CONNECT, "out of memory");
		return;
	}
	*l->answers = *r;
	if (!try_answers(l, &kind, &start_why)) {
		snprintf(text, sizeof(text), "no address of %s could be dialed: %s", l->sw->cfg.service, start_why);
		fail_link(l, kind, RS_MC_FAIL_CONNECT, text);
		return;
	}
	/* The core's deadline is each answer's own here; the link is
	 * connecting now, as far as the queue is concerned. */
}

int swarm_service_by_name(struct swarm_link *l)
{
	struct swarm *sw = l->sw;

	if (!l->answer_timer)
		l->answer_timer = evtimer_new(sw->base, on_answer_timeout, l);
	if (!l->answer_timer)
		return -ENOMEM;
	return rs_resolve_start(sw->resolver, sw->cfg.service, on_resolved, l, &l->lookup);
}
