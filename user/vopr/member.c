/* SPDX-License-Identifier: Apache-2.0 */
/* member.c - a simulated supervisor process: the I/O shell around the
 * real member core, doing for it what user/supervisor/ does (client.c,
 * main.c) over the simulated network.
 *
 * As there: dial() starts a connect (to the Service, resolved by name now
 * and then: RS_MC_DIAL_QUEUED, then rs_mc_link_started), reports it
 * connected, feeds what arrives (a frame may come in pieces), reports a
 * FIN or RST as a failed link, and arms the timer for rs_mc_next_wake().
 * A dial whose token has expired reads a fresh one (the operator's file,
 * minted here with the member's own clock).  Epochs start at the member's
 * wall clock in microseconds, as main.c's do, so a member whose clock was
 * stepped back restarts below its last life's epochs, as a real one would.
 * A restart is graceful (GOODBYE), a crash (the kernel resets its
 * connections) or its host's (nothing said at all). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vopr/world.h"

#define SERVICE "svc.ringsteer:443"
#define SERVICE_NAME "svc.ringsteer"

static struct rs_mc_time mb_time(const struct world *w, const struct mb_node *m)
{
	return (struct rs_mc_time){ clock_mono(w, &m->clk), clock_wall(w, &m->clk) };
}

/* Mints a token with the member's clock, as `ringsteerctl token` would. */
static void load_token(struct world *w, struct mb_node *m)
{
	uint64_t expiry = (uint64_t)(clock_wall(w, &m->clk) / 1000) + w->cfg.token_ttl_s;

	if (rs_token_mint(&w->secret, m->id, expiry, m->token, sizeof(m->token)) != 0 ||
	    rs_mc_set_token(m->mc, m->token, expiry, mb_time(w, m)) != 0)
		invariant_failed(w, "token_mint", "m-%u: could not mint its token", m->idx);
}

static int peer_gateway(const struct world *w, const char *endpoint)
{
	for (int i = 0; i < W_GATEWAYS; i++)
		if (w->gw[i].exists && strcmp(w->gw[i].peer, endpoint) == 0)
			return i;
	return -1;
}

/* ---- the core's callbacks ---- */

static int cb_dial(void *user, struct rs_mc_link *l, const struct rs_mc_dial *d, void **link_user, const char **why)
{
	struct mb_node *m = user;
	struct world *w = m->w;
	struct conn *c;
	int gw = -1;

	if (m->dying)
		return -ESHUTDOWN;
	if (d->token_expired)
		load_token(w, m);
	if (d->via != RS_MC_VIA_SERVICE) {
		gw = peer_gateway(w, d->endpoint);
		if (gw < 0) {
			*why = "unknown peer endpoint";
			return -EACCES;
		}
	}
	c = conn_new(w, m);
	if (!c)
		return -ENOMEM;
	c->ml = l;
	c->via = d->via;
	c->via_service = d->via == RS_MC_VIA_SERVICE;
	c->gw = (int16_t)gw;
	*link_user = c;
	trace(w, "m-%u dial %u via %s to %s%s", m->idx, c->id, rs_mc_via_name(d->via), d->endpoint,
	      d->stay ? " stay" : "");
	w->inflight++;
	if (c->via_service && chance(&w->rng, 30)) {
		/* By name: looked up first, the connect begins after. */
		ev_push(w, w->now + draw(&w->rng, 1, 30), EV_DNS, c->id, 0);
		return RS_MC_DIAL_QUEUED;
	}
	ev_push(w, w->now + net_delay(w), EV_SYN, c->id, 0);
	return 0;
}

static void cb_send(void *user, void *link_user, const struct rs_frame *f)
{
	struct mb_node *m = user;
	struct world *w = m->w;
	struct conn *c = link_user;
	uint8_t buf[RS_FRAME_V1_MAX];
	size_t len = 0;

	if (m->dying || !c->m_open)
		return;
	if (rs_frame_encode(f, buf, sizeof(buf), &len) != 0) {
		invariant_failed(w, "frames_encode", "m-%u could not encode a %s frame", m->idx,
				 rs_frame_type_name(f->type));
		return;
	}
	if (f->type == RS_FRAME_HELLO)
		c->hello_epoch = f->u.hello.epoch;
	if (f->type != RS_FRAME_HEARTBEAT)
		trace(w, "m-%u conn %u send %s", m->idx, c->id, rs_frame_type_name(f->type));
	if (len > 8 && chance(&w->rng, 10)) {
		net_send(w, c, TO_GW, SEG_DATA, buf, len / 2, f->type == RS_FRAME_HEARTBEAT);
		net_send(w, c, TO_GW, SEG_DATA, buf + len / 2, len - len / 2, f->type == RS_FRAME_HEARTBEAT);
		return;
	}
	net_send(w, c, TO_GW, SEG_DATA, buf, len, f->type == RS_FRAME_HEARTBEAT);
}

static void cb_close(void *user, void *link_user)
{
	struct mb_node *m = user;
	struct conn *c = link_user;

	if (!c->m_open)
		return;
	c->m_open = false;
	c->ml = NULL;
	if (!m->dying && c->synced)
		net_send(m->w, c, TO_GW, SEG_FIN, NULL, 0, false);
}

static void cb_event(void *user, const struct rs_mc_event *e)
{
	struct mb_node *m = user;

	inv_member_event(m->w, m, e);
}

static const struct rs_mc_callbacks callbacks = {
	.dial = cb_dial,
	.send = cb_send,
	.close = cb_close,
	.event = cb_event,
};

/* ---- links ---- */

void mb_dns_done(struct world *w, struct conn *c)
{
	struct mb_node *m = &w->mb[c->member];

	rs_mc_link_started(m->mc, c->ml, mb_time(w, m));
	dirty_mb(w, m);
}

void mb_connected(struct world *w, struct conn *c)
{
	struct mb_node *m = &w->mb[c->member];

	w->feeding = c->id;
	rs_mc_link_connected(m->mc, c->ml, mb_time(w, m));
	dirty_mb(w, m);
}

void mb_feed(struct world *w, struct conn *c)
{
	struct mb_node *m = &w->mb[c->member];
	size_t used = 0;
	int rc;

	if (!c->m_open || c->in_len[TO_MB] == 0)
		return;
	w->feeding = c->id;
	rc = rs_mc_link_recv(m->mc, c->ml, c->in[TO_MB], c->in_len[TO_MB], &used, mb_time(w, m));
	dirty_mb(w, m);
	if (rc == 1 || !c->m_open) {
		if (c->m_open) {
			/* Gone without a close: the socket is closed all the same. */
			c->m_open = false;
			c->ml = NULL;
			net_send(w, c, TO_GW, SEG_FIN, NULL, 0, false);
		}
		c->in_len[TO_MB] = 0;
		return;
	}
	if (used > c->in_len[TO_MB])
		used = c->in_len[TO_MB];
	memmove(c->in[TO_MB], c->in[TO_MB] + used, c->in_len[TO_MB] - used);
	c->in_len[TO_MB] -= used;
}

void mb_link_failed(struct world *w, struct conn *c, enum rs_mc_fail why, const char *text)
{
	struct mb_node *m = &w->mb[c->member];
	struct rs_mc_link *l = c->ml;

	if (!c->m_open)
		return;
	c->m_open = false;
	c->ml = NULL;
	c->in_len[TO_MB] = 0;
	trace(w, "m-%u conn %u failed: %s", m->idx, c->id, text);
	w->feeding = c->id;
	rs_mc_link_failed(m->mc, l, why, text, mb_time(w, m));
	dirty_mb(w, m);
}

struct conn *mb_attached_conn(struct world *w, struct mb_node *m)
{
	struct rs_mc_info info;
	struct conn *c;

	if (!m->up)
		return NULL;
	rs_mc_get_info(m->mc, &info);
	if (info.state != RS_MC_ATTACHED && info.state != RS_MC_MOVING)
		return NULL;
	c = conn_get(w, m->last_conn);
	return c && c->member == m->idx && c->mlife == m->life && c->m_open ? c : NULL;
}

/* ---- the process ---- */

void mb_settle(struct world *w, struct mb_node *m)
{
	int64_t next, at;

	if (!m->up)
		return;
	next = rs_mc_next_wake(m->mc);
	at = next < 0 ? W_NEVER : next - m->clk.mono_off;
	if (at == m->wake_at)
		return;
	m->wake_at = at;
	m->wake_gen++;
	if (at != W_NEVER)
		ev_push(w, at, EV_MB_WAKE, m->idx, m->wake_gen);
}

void mb_on_wake(struct world *w, struct mb_node *m, uint64_t gen)
{
	if (!m->up || gen != m->wake_gen)
		return;
	m->wake_at = W_NEVER;
	w->feeding = UINT32_MAX;
	rs_mc_tick(m->mc, mb_time(w, m));
	dirty_mb(w, m);
}

void mb_start(struct world *w, struct mb_node *m)
{
	int64_t wall = clock_wall(w, &m->clk);

	if (m->up)
		return;
	m->life++;
	m->up = true;
	m->dying = false;
	m->wake_at = W_NEVER;
	snprintf(m->instance, sizeof(m->instance), "i%u-%u", m->life, m->idx);
	m->cfg = (struct rs_mc_config){
		.member_id = m->id,
		.instance_id = m->instance,
		.service = SERVICE,
		.service_name = SERVICE_NAME,
		.first_epoch = wall > 0 ? (uint64_t)wall * 1000 : 1,
		.seed = sim_rng_next(&w->rng),
		.dial_timeout_ms = w->cfg.dial_timeout_ms,
		.sandboxes = m->sandboxes,
	};
	if (rs_mc_new(&m->cfg, &callbacks, m, &m->mc) != 0) {
		w->oom = true;
		m->up = false;
		return;
	}
	trace(w, "m-%u starts (life %u)", m->idx, m->life);
	load_token(w, m);
	w->feeding = UINT32_MAX;
	rs_mc_start(m->mc, mb_time(w, m));
	dirty_mb(w, m);
}

void mb_restart(struct world *w, struct mb_node *m, int how)
{
	if (!m->up)
		return;
	trace(w, "m-%u %s", m->idx, how == 0 ? "stops" : how == 1 ? "crashes" : "crashes with its host");
	if (how == 0) {
		rs_mc_stop(m->mc, mb_time(w, m)); /* GOODBYE, every link closed */
	} else {
		m->dying = true;
		for (uint32_t i = 0; i < w->n_conns; i++) {
			struct conn *c = w->conns[i];

			if (c->member != m->idx || c->mlife != m->life || !c->m_open)
				continue;
			c->m_open = false;
			c->ml = NULL;
			if (how == 1 && c->synced)
				net_send(w, c, TO_GW, SEG_RST, NULL, 0, false);
		}
	}
	m->dying = true;
	rs_mc_free(m->mc);
	m->mc = NULL;
	m->up = false;
	m->wake_gen++;
	mb_cause(w, m, "restart");
	ev_push(w, w->now + draw(&w->rng, 300, 5000), EV_MB_START, m->idx, 0);
}

void mb_refresh(struct world *w, struct mb_node *m)
{
	if (!m->up)
		return;
	w->feeding = UINT32_MAX;
	rs_mc_refresh_now(m->mc, mb_time(w, m));
	dirty_mb(w, m);
}

void mb_set_sandboxes(struct world *w, struct mb_node *m)
{
	m->sandboxes = (uint32_t)draw(&w->rng, 0, 40);
	if (!m->up)
		return;
	rs_mc_set_sandboxes(m->mc, m->sandboxes);
	dirty_mb(w, m);
}

void mb_cause(struct world *w, struct mb_node *m, const char *why)
{
	(void)w;
	m->cause = true;
	m->cause_why = why;
}
