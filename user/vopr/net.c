/* SPDX-License-Identifier: Apache-2.0 */
/* net.c - the simulated network: TCP connections between members and
 * gateways, the Service in front of the gateways, and partitions.
 *
 * A connection is two byte streams; each keeps its order (a segment never
 * arrives before one sent earlier on the same stream), streams of different
 * connections reorder freely.  A lost segment costs a retransmit (a few
 * hundred ms), never its bytes.  A partition holds what crosses it until it
 * heals (TCP retransmits), so the ends' own timeouts decide, as on a real
 * network; a half-open connection drops everything, both ways, for ever
 * (a NAT entry gone).  The Service is kube-proxy: a connect to it is sent to
 * a uniformly random endpoint, chosen when the connect arrives; a gateway
 * leaves the endpoints a little after it stops (or is told to), and a
 * connect to a gateway whose process is gone is refused (RST), to one whose
 * host is gone unanswered. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vopr/world.h"

#define SYN_RETRY_MS 1000 /* Linux's first SYN retransmit */

struct conn *conn_new(struct world *w, struct mb_node *m)
{
	struct conn *c;

	if (w->n_conns == w->cap_conns) {
		uint32_t cap = w->cap_conns ? w->cap_conns * 2 : 256;
		struct conn **v = realloc(w->conns, cap * sizeof(*v));

		if (!v) {
			w->oom = true;
			return NULL;
		}
		w->conns = v;
		w->cap_conns = cap;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		w->oom = true;
		return NULL;
	}
	c->id = w->n_conns;
	c->member = m->idx;
	c->mlife = m->life;
	c->m_open = true;
	c->gw = -1;
	w->conns[w->n_conns++] = c;
	return c;
}

struct conn *conn_get(struct world *w, uint32_t id)
{
	return id < w->n_conns ? w->conns[id] : NULL;
}

bool net_blocked(const struct world *w, int gw, int mb)
{
	for (int i = 0; i < W_PARTITIONS; i++) {
		const struct partition *p = &w->parts[i];

		if (p->on && p->kind == PART_GW_MB && (p->a == -1 || p->a == gw) && (p->b == -1 || p->b == mb))
			return true;
	}
	return false;
}

bool net_store_blocked(const struct world *w, int gw)
{
	for (int i = 0; i < W_PARTITIONS; i++) {
		const struct partition *p = &w->parts[i];

		if (p->on && p->kind == PART_GW_STORE && (p->a == -1 || p->a == gw))
			return true;
	}
	return false;
}

/* When the partition between gw and mb heals (now if none). */
static int64_t heals_at(const struct world *w, int gw, int mb)
{
	int64_t t = w->now;

	for (int i = 0; i < W_PARTITIONS; i++) {
		const struct partition *p = &w->parts[i];

		if (p->on && p->kind == PART_GW_MB && (p->a == -1 || p->a == gw) && (p->b == -1 || p->b == mb) &&
		    p->until > t)
			t = p->until;
	}
	return t;
}

int64_t net_delay(struct world *w)
{
	int64_t d = draw(&w->rng, w->cfg.delay_min_ms, w->cfg.delay_max_ms);

	if (w->cfg.loss_pct && chance(&w->rng, w->cfg.loss_pct))
		d += draw(&w->rng, 200, 600); /* a retransmit */
	return d;
}

void net_send(struct world *w, struct conn *c, enum dir d, enum seg_kind kind, const uint8_t *data, size_t len,
	      bool quiet)
{
	struct pipe *p = &c->p[d];
	struct seg *s;
	int64_t at;

	if (c->blackhole)
		return;
	s = malloc(sizeof(*s) + len);
	if (!s) {
		w->oom = true;
		return;
	}
	*s = (struct seg){ .kind = (uint8_t)kind, .quiet = quiet, .len = (uint16_t)len };
	if (len)
		memcpy(s->data, data, len);
	if (p->tail)
		p->tail->next = s;
	else
		p->head = s;
	p->tail = s;
	at = w->now + net_delay(w);
	if (at < p->last_at)
		at = p->last_at;
	p->last_at = at;
	w->inflight += !quiet;
	trace_mix(w, ((uint64_t)c->id << 8) | kind);
	ev_push(w, at, EV_SEG, c->id, d);
}

/* Appends what arrived to the receiving side's buffer.  Returns 0 or -ENOMEM. */
static int take_in(struct conn *c, enum dir d, const struct seg *s)
{
	if (c->in_len[d] + s->len > c->in_cap[d]) {
		size_t cap = c->in_cap[d] ? c->in_cap[d] * 2 : 2048;
		uint8_t *b;

		while (cap < c->in_len[d] + s->len)
			cap *= 2;
		b = realloc(c->in[d], cap);
		if (!b)
			return -ENOMEM;
		c->in[d] = b;
		c->in_cap[d] = cap;
	}
	memcpy(c->in[d] + c->in_len[d], s->data, s->len);
	c->in_len[d] += s->len;
	return 0;
}

static void deliver_to_gw(struct world *w, struct conn *c, const struct seg *s)
{
	if (!c->g_open || c->gw < 0 || !w->gw[c->gw].up || w->gw[c->gw].inc != c->ginc) {
		/* No such connection there: a host that is up answers RST
		 * (its process restarted since, or it closed its end). */
		if (c->gw >= 0 && s->kind != SEG_RST && !w->gw[c->gw].host_down && c->m_open)
			net_send(w, c, TO_MB, SEG_RST, NULL, 0, false);
		return;
	}
	switch (s->kind) {
	case SEG_DATA:
		if (c->g_closing)
			return;
		c->g_last_read = w->now;
		if (take_in(c, TO_GW, s) != 0) {
			w->oom = true;
			return;
		}
		gw_feed(w, c);
		return;
	case SEG_SECURED:
		gw_link_secured(w, c);
		return;
	case SEG_FIN:
	case SEG_RST:
		gw_link_lost(w, c);
		return;
	}
}

static void deliver_to_mb(struct world *w, struct conn *c, const struct seg *s)
{
	if (!c->m_open || w->mb[c->member].life != c->mlife)
		return;
	switch (s->kind) {
	case SEG_DATA:
		if (take_in(c, TO_MB, s) != 0) {
			w->oom = true;
			return;
		}
		mb_feed(w, c);
		return;
	case SEG_FIN:
		mb_link_failed(w, c, RS_MC_FAIL_CONNECT, "closed");
		return;
	case SEG_RST:
		mb_link_failed(w, c, RS_MC_FAIL_CONNECT, "reset");
		return;
	case SEG_SECURED:
		return;
	}
}

void net_on_seg(struct world *w, struct conn *c, enum dir d)
{
	struct pipe *p = &c->p[d];
	struct seg *s = p->head;

	if (!s)
		return;
	if (!c->blackhole && c->gw >= 0 && net_blocked(w, c->gw, c->member)) {
		/* Held by the partition: retransmitted once it heals. */
		ev_push(w, heals_at(w, c->gw, c->member) + net_delay(w), EV_SEG, c->id, d);
		return;
	}
	p->head = s->next;
	if (!p->head)
		p->tail = NULL;
	w->inflight -= !s->quiet;
	if (!c->blackhole) {
		if (d == TO_GW)
			deliver_to_gw(w, c, s);
		else
			deliver_to_mb(w, c, s);
	}
	free(s);
}

/* kube-proxy: a uniformly random endpoint of the Service, or -1. */
static int service_pick(struct world *w)
{
	int ready[W_GATEWAYS], n = 0;

	for (int i = 0; i < W_GATEWAYS; i++)
		if (w->gw[i].exists && w->gw[i].in_service)
			ready[n++] = i;
	return n ? ready[sim_rng_below(&w->rng, (uint32_t)n)] : -1;
}

void net_on_dns(struct world *w, struct conn *c)
{
	w->inflight--;
	if (!c->m_open || w->mb[c->member].life != c->mlife)
		return;
	mb_dns_done(w, c);
	if (c->m_open) {
		w->inflight++;
		ev_push(w, w->now + net_delay(w), EV_SYN, c->id, 0);
	}
}

void net_on_syn(struct world *w, struct conn *c)
{
	struct gw_node *g;

	if (!c->m_open || w->mb[c->member].life != c->mlife) {
		w->inflight--; /* it gave up: the connect is abandoned */
		return;
	}
	if (c->gw < 0) {
		c->gw = (int16_t)(c->via_service ? service_pick(w) : c->gw);
		if (c->gw < 0) {
			w->inflight--;
			trace(w, "net conn %u: no Service endpoint: refused", c->id);
			net_send(w, c, TO_MB, SEG_RST, NULL, 0, false);
			return;
		}
	}
	if (net_blocked(w, c->gw, c->member)) {
		ev_push(w, w->now + SYN_RETRY_MS, EV_SYN, c->id, 0); /* lost: retransmitted */
		return;
	}
	w->inflight--;
	g = &w->gw[c->gw];
	if (!g->up) {
		trace(w, "net conn %u: %s %s", c->id, g->id, g->host_down ? "unreachable" : "refused");
		if (!g->host_down)
			net_send(w, c, TO_MB, SEG_RST, NULL, 0, false);
		return;
	}
	c->synced = true;
	gw_link_accept(w, g, c);
	if (c->g_open) {
		w->inflight++;
		ev_push(w, w->now + net_delay(w), EV_SYNACK, c->id, 0);
	}
}

void net_on_synack(struct world *w, struct conn *c)
{
	if (!c->blackhole && net_blocked(w, c->gw, c->member)) {
		ev_push(w, w->now + SYN_RETRY_MS, EV_SYNACK, c->id, 0);
		return;
	}
	w->inflight--;
	if (c->blackhole)
		return;
	if (!c->m_open || w->mb[c->member].life != c->mlife) {
		net_send(w, c, TO_GW, SEG_RST, NULL, 0, false); /* nobody asked any more */
		return;
	}
	if (w->cfg.tls)
		net_send(w, c, TO_GW, SEG_SECURED, NULL, 0, false); /* before anything the member sends */
	mb_connected(w, c);
}

void net_fini(struct world *w)
{
	for (uint32_t i = 0; i < w->n_conns; i++) {
		struct conn *c = w->conns[i];

		for (int d = 0; d < 2; d++) {
			struct seg *s = c->p[d].head, *next;

			for (; s; s = next) {
				next = s->next;
				free(s);
			}
			free(c->in[d]);
		}
		free(c);
	}
	free(w->conns);
	w->conns = NULL;
	w->n_conns = w->cap_conns = 0;
}
