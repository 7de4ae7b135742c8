/* SPDX-License-Identifier: Apache-2.0 */
/* service_name.c - a Service dial by name (--service NAME:PORT), as every
 * Kubernetes client dials a Service: the name is looked up again at each
 * Service dial, on the resolver's thread (util/resolver.h), so the loop
 * never waits on DNS and a re-created Service (a new ClusterIP) is followed
 * at the next dial.  The answers (A and AAAA, getaddrinfo's order) are then
 * tried in turn, each with its own --dial-timeout for the connect and the
 * handshake, until one connects; from there the core's answer deadline
 * runs as for any dial.
 *
 * The core was told RS_MC_DIAL_QUEUED and is told nothing until the
 * transport is up (rs_mc_link_connected) or every answer failed: then the
 * link fails as a Service dial does (RS_MC_FAIL_TIMEOUT when the last
 * answer timed out, else RS_MC_FAIL_CONNECT), and the core backs off.  A
 * name that does not resolve fails the same way, its text saying so, and
 * is counted (resolve_failures_total on its log line). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/endpoint.h"
#include "util/logfmt.h"
#include "util/mstime.h"
#include "supervisor.h"

static void fail_link(struct sup_link *l, enum rs_mc_fail why, const char *text)
{
	struct supervisor *s = l->s;
	struct rs_mc_link *core = l->core;

	sup_link_free(l);
	rs_mc_link_failed(s->mc, core, why, text, sup_now());
	sup_settle(s);
}

static void answer_text(const struct sup_link *l, size_t i, char *out, size_t cap)
{
	if (rs_endpoint_format((const struct sockaddr *)&l->answers->addr[i], out, cap) != 0)
		snprintf(out, cap, "?");
}

/* Connects to the next answer that can be dialed.  Returns whether one is
 * connecting (its deadline armed); *why: the last failure to start one. */
static bool try_answers(struct sup_link *l, const char **why)
{
	struct supervisor *s = l->s;
	const struct timeval tv = rs_ms_timeval(s->cfg.dial_timeout_ms);

	while (l->next < l->answers->n) {
		size_t i = l->next++;
		char ep[RS_ENDPOINT_MAX + 1];

		if (sup_link_connect(l, &l->answers->addr[i], l->answers->len[i], why) == 0) {
			evtimer_add(l->answer_timer, &tv);
			return true;
		}
		answer_text(l, i, ep, sizeof(ep));
		rs_log(stderr, "warn", s->who, "event", "answer_failed", "service", s->cfg.service, "endpoint", ep,
		       "error", *why, NULL);
	}
	return false;
}

bool sup_next_answer(struct sup_link *l, const char *why)
{
	struct supervisor *s = l->s;
	const char *start_why = NULL;
	char ep[RS_ENDPOINT_MAX + 1];

	if (!l->answers || l->next == 0)
		return false;
	evtimer_del(l->answer_timer);
	answer_text(l, l->next - 1, ep, sizeof(ep));
	rs_log(stderr, "warn", s->who, "event", "answer_failed", "service", s->cfg.service, "endpoint", ep, "error",
	       why, "left", l->next < l->answers->n ? "yes" : "no", NULL);
	if (l->bev) {
		bufferevent_free(l->bev);
		l->bev = NULL;
	}
	return try_answers(l, &start_why);
}

static void on_answer_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct sup_link *l = arg;

	(void)fd;
	(void)what;
	if (sup_next_answer(l, "timeout"))
		return;
	fail_link(l, RS_MC_FAIL_TIMEOUT, "timeout (every address of the Service's name tried)");
}

static void on_resolved(void *arg, int err, const char *why, const struct rs_resolved *r)
{
	struct sup_link *l = arg;
	struct supervisor *s = l->s;
	char text[256], list[RS_RESOLVE_MAX * (RS_ENDPOINT_MAX + 1)] = "", n[24];
	const char *start_why = "no address";

	l->lookup = NULL;
	if (err) {
		s->resolve_failures++;
		snprintf(n, sizeof(n), "%llu", (unsigned long long)s->resolve_failures);
		rs_log(stderr, "warn", s->who, "event", "resolve_failed", "service", s->cfg.service, "error", why,
		       "resolve_failures_total", n, NULL);
		snprintf(text, sizeof(text), "cannot resolve %s: %s", s->cfg.service, why);
		fail_link(l, RS_MC_FAIL_CONNECT, text);
		return;
	}
	l->answers = malloc(sizeof(*l->answers));
	if (!l->answers) {
		fail_link(l, RS_MC_FAIL_CONNECT, "out of memory");
		return;
	}
	*l->answers = *r;
	for (size_t i = 0; i < r->n; i++) {
		char ep[RS_ENDPOINT_MAX + 1];
		size_t used = strlen(list);

		answer_text(l, i, ep, sizeof(ep));
		snprintf(list + used, sizeof(list) - used, "%s%s", i ? " " : "", ep);
	}
	rs_log(stderr, "info", s->who, "event", "resolved", "service", s->cfg.service, "answers", list, NULL);
	if (!try_answers(l, &start_why)) {
		snprintf(text, sizeof(text), "no address of %s could be dialed: %s", s->cfg.service, start_why);
		fail_link(l, RS_MC_FAIL_CONNECT, text);
	}
}

int sup_service_by_name(struct supervisor *s, struct sup_link *l, const char *endpoint)
{
	l->answer_timer = evtimer_new(s->base, on_answer_timeout, l);
	if (!l->answer_timer)
		return -ENOMEM;
	return rs_resolve_start(s->resolver, endpoint, on_resolved, l, &l->lookup);
}
