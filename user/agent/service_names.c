/* SPDX-License-Identifier: Apache-2.0 */
/* service_names.c - a --service given by name (NAME:PORT): looked up at
 * the start and again at every sync tick, so that a re-created Service (a
 * new ClusterIP) is followed without a restart: rs_services and
 * rs_conn_svcs get the new addresses and lose the old ones.
 *
 * Guarantees:
 *  - the loop never waits on DNS: a tick's lookups run on the resolver's
 *    thread (util/resolver.h), at most one per name in flight (a slow DNS
 *    server holds one lookup, never a queue of them), and the answer is
 *    applied on the loop;
 *  - a lookup that fails keeps what is in force (counted in
 *    service_resolve_failures_total, logged): the maps are never emptied
 *    for a name that does not resolve;
 *  - until every name has resolved once in this life, nothing is removed
 *    from the maps (a restarted agent whose DNS is down steers on with what
 *    the pinned maps hold); from then on they hold exactly the numeric
 *    --service addresses and the names' last answers.
 * The lookups at the start run before the loop, on main's thread: nothing
 * is being served yet. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_run.h"
#include "util/endpoint.h"
#include "util/logfmt.h"
#include "util/resolve.h"
#include "util/resolver.h"

struct service_name {
	struct agent *a;
	size_t index;               /* its --service flag */
	bool named;                 /* NAME:PORT (else numeric: one address, fixed) */
	bool known;                 /* have holds an answer of this life */
	struct rs_resolve_req *req; /* a lookup in flight */
	struct rs_resolved have;    /* the addresses in force */
};

struct agent_service_names {
	struct rs_resolver *resolver; /* made at the first tick that needs it */
	struct service_name svc[AGENT_SERVICES_MAX];
};

static void answers_text(const struct rs_resolved *r, char *out, size_t cap)
{
	out[0] = '\0';
	for (size_t i = 0; i < r->n; i++) {
		char ep[RS_ENDPOINT_MAX + 1];
		size_t used = strlen(out);

		if (rs_endpoint_format((const struct sockaddr *)&r->addr[i], ep, sizeof(ep)) != 0)
			snprintf(ep, sizeof(ep), "?");
		snprintf(out + used, cap - used, "%s%s", i ? " " : "", ep);
	}
}

/* Whether x and y hold the same addresses, in any order. */
static bool same_set(const struct rs_resolved *x, const struct rs_resolved *y)
{
	if (x->n != y->n)
		return false;
	for (size_t i = 0; i < x->n; i++) {
		bool found = false;

		for (size_t j = 0; j < y->n && !found; j++)
			found = x->len[i] == y->len[j] && memcmp(&x->addr[i], &y->addr[j], x->len[i]) == 0;
		if (!found)
			return false;
	}
	return true;
}

/* Writes the maps from what every --service holds now. */
static int apply(struct agent *a)
{
	struct agent_service_names *sn = a->service_names;
	struct agent_service_addr want[RS_SERVICES_MAX];
	bool prune = true;
	size_t n = 0;

	for (size_t i = 0; i < a->cfg.n_services; i++) {
		const struct service_name *s = &sn->svc[i];

		if (!s->known) {
			prune = false;
			continue;
		}
		for (size_t j = 0; j < s->have.n; j++) {
			struct agent_service_addr v = { .index = (uint32_t)i };
			bool dup = false;

			if (agent_endpoint_key((const struct sockaddr *)&s->have.addr[j], &v.key) != 0)
				continue;
			for (size_t k = 0; k < n && !dup; k++)
				dup = memcmp(&want[k].key, &v.key, sizeof(v.key)) == 0;
			if (dup)
				continue;
			if (n == RS_SERVICES_MAX)
				return -E2BIG;
			want[n++] = v;
		}
	}
	return agent_services_set_addrs(&a->k.maps, want, n, prune);
}

static void log_failure(struct agent *a, const char *service, const char *why)
{
	char n[24];

	a->counters.service_resolve_failures++;
	snprintf(n, sizeof(n), "%llu", (unsigned long long)a->counters.service_resolve_failures);
	rs_log(stderr, "warn", "agent", "event", "service_resolve_failed", "service", service, "error", why, "kept",
	       "the addresses in force", "failures_total", n, NULL);
}

/* Takes answer r for s: the maps follow when the set changed.  Returns 0 or -errno. */
static int take(struct service_name *s, const struct rs_resolved *r)
{
	struct agent *a = s->a;
	char list[RS_RESOLVE_MAX * (RS_ENDPOINT_MAX + 1)];
	struct rs_resolved before;
	bool was_known = s->known;
	int err;

	if (was_known && same_set(&s->have, r))
		return 0;
	before = s->have;
	s->have = *r;
	s->known = true;
	answers_text(r, list, sizeof(list));
	err = apply(a);
	if (err) {
		s->have = before; /* tried again at the next answer */
		s->known = was_known;
		rs_log(stderr, "error", "agent", "event", "services_failed", "service", a->cfg.services[s->index],
		       "addresses", list, "error", strerror(-err), NULL);
		return err;
	}
	if (was_known)
		a->counters.service_updates++;
	rs_log(stderr, "info", "agent", "event", was_known ? "service_moved" : "service_resolved", "service",
	       a->cfg.services[s->index], "addresses", list, NULL);
	return 0;
}

int agent_service_names_start(struct agent *a)
{
	struct agent_service_names *sn = calloc(1, sizeof(*sn));

	if (!sn)
		return -ENOMEM;
	a->service_names = sn;
	for (size_t i = 0; i < a->cfg.n_services; i++) {
		struct service_name *s = &sn->svc[i];
		struct rs_resolved r;
		const char *why = NULL;
		int err;

		s->a = a;
		s->index = i;
		s->named = rs_endpoint_is_name(a->cfg.services[i]);
		err = rs_resolve_now(a->cfg.services[i], &r, &why);
		if (err) {
			log_failure(a, a->cfg.services[i], why ? why : strerror(-err));
			continue;
		}
		s->have = r;
		s->known = true;
		if (s->named) {
			char list[RS_RESOLVE_MAX * (RS_ENDPOINT_MAX + 1)];

			answers_text(&r, list, sizeof(list));
			rs_log(stderr, "info", "agent", "event", "service_resolved", "service", a->cfg.services[i],
			       "addresses", list, NULL);
		}
	}
	return apply(a);
}

static void on_resolved(void *arg, int err, const char *why, const struct rs_resolved *r)
{
	struct service_name *s = arg;

	s->req = NULL;
	if (err) {
		log_failure(s->a, s->a->cfg.services[s->index], why);
		return;
	}
	(void)take(s, r); /* logged there; the next tick tries again */
}

void agent_service_names_refresh(struct agent *a)
{
	struct agent_service_names *sn = a->service_names;

	if (!sn || a->stopping)
		return;
	for (size_t i = 0; i < a->cfg.n_services; i++) {
		struct service_name *s = &sn->svc[i];
		int err;

		if (!s->named || s->req)
			continue;
		if (!sn->resolver) {
			err = rs_resolver_new(a->base, &sn->resolver);
			if (err) {
				log_failure(a, a->cfg.services[i], "no resolver thread");
				return;
			}
		}
		err = rs_resolve_start(sn->resolver, a->cfg.services[i], on_resolved, s, &s->req);
		if (err)
			log_failure(a, a->cfg.services[i], strerror(-err));
	}
}

void agent_service_names_free(struct agent *a)
{
	struct agent_service_names *sn = a->service_names;

	if (!sn)
		return;
	rs_resolver_free(sn->resolver); /* cancels the lookups: no callback runs */
	free(sn);
	a->service_names = NULL;
}
