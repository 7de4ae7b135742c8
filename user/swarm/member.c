/* SPDX-License-Identifier: Apache-2.0 */
/* member.c - one swarm member: a member core (include/ringsteer/member_core.h),
 * the reference supervisor's transitions exactly, and the I/O around it.
 *
 * What the swarm keeps of its own, on purpose: a dial waits for a slot
 * when --concurrency dials are in progress (dial_queue.c; the core is told
 * RS_MC_DIAL_QUEUED, so its connect deadline starts with the connect); an
 * expired token is minted again from the secret where the supervisor
 * re-reads its token file; gateway ids and peer endpoints are interned in
 * one table (gateways.c) for the per-gateway counts; the counts, gaps and
 * failure labels are read from the core after each call into it (its
 * info and events); nothing is logged per member but failures (rate
 * limited).  A Service given by name is looked up at each Service dial,
 * a dial slot held, and its answers tried in turn (service_name.c). */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "ringsteer/backoff.h"
#include "proto/proto_event.h"
#include "tls/tls.h"
#include "util/bev_io.h"
#include "util/endpoint.h"
#include "util/mstime.h"
#include "util/resolve.h"
#include "swarm.h"

uint64_t swarm_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

uint64_t swarm_gap_max_us(const struct swarm *sw)
{
	uint64_t now = swarm_now_us(), max = swarm_gap_longest(&sw->gaps, 0, now);

	for (uint32_t i = 0; sw->members && i < sw->cfg.count; i++) {
		uint64_t g = swarm_gap_longest(&sw->gaps, sw->members[i].lost_at_us, now);

		if (g > max)
			max = g;
	}
	return max;
}

static struct rs_mc_time now_mc(void)
{
	return (struct rs_mc_time){ .mono_ms = rs_mono_ms(), .wall_ms = rs_wall_ms() };
}

/* After every call into m's core: the counts (swarm and per gateway) and
 * the gap follow where the core says m is, and its one timer its next wake. */
void swarm_member_settle(struct swarm_member *m)
{
	struct swarm *sw = m->sw;
	struct rs_mc_info info;
	int64_t at, now;
	struct timeval tv;

	rs_mc_get_info(m->mc, &info);
	if (info.epoch != m->counted_epoch) {
		if (m->counted_epoch) {
			if (m->counted_gw != SWARM_NO_GW)
				sw->gateways[m->counted_gw].attached--;
			sw->attached--;
		}
		m->counted_epoch = info.epoch;
		m->counted_gw = SWARM_NO_GW;
		if (info.epoch) {
			m->counted_gw = swarm_gateway_intern(sw, info.gateway, info.peer);
			if (m->counted_gw != SWARM_NO_GW)
				sw->gateways[m->counted_gw].attached++;
			sw->attached++;
			sw->attaches++;
		}
	}
	if (info.lost_at_ms && !m->lost_at_us)
		swarm_gap_open(&m->lost_at_us, swarm_now_us());
	else if (!info.lost_at_ms && m->lost_at_us)
		swarm_gap_close(&sw->gaps, &m->lost_at_us, swarm_now_us());
	if (sw->all_attached_ms < 0 && sw->attached == sw->cfg.count) {
		sw->all_attached_ms = (int64_t)((uint64_t)rs_mono_ms() - sw->started_ms);
		swarm_summary(sw, "all_attached");
	}
	evtimer_del(m->timer);
	at = rs_mc_next_wake(m->mc);
	if (at < 0)
		return;
	now = rs_mono_ms();
	tv = rs_ms_timeval(at > now ? (uint64_t)(at - now) : 0);
	evtimer_add(m->timer, &tv);
}

static void release_slot(struct swarm_link *l)
{
	if (l->in_progress) {
		l->in_progress = false;
		swarm_dial_release(l->sw);
	}
	if (l->m->dialing == l)
		l->m->dialing = NULL;
}

void swarm_link_free(struct swarm_link *l)
{
	release_slot(l);
	if (l->lookup)
		rs_resolve_cancel(l->lookup);
	if (l->bev)
		bufferevent_free(l->bev);
	if (l->answer_timer)
		event_free(l->answer_timer);
	free(l->answers);
	free(l);
}

static void on_read(struct bufferevent *bev, void *arg)
{
	struct swarm_link *l = arg;
	struct swarm_member *m = l->m;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t len = evbuffer_get_length(in), used = 0;
	const uint8_t *buf = evbuffer_pullup(in, -1);

	if (!buf && len > 0)
		return;
	if (rs_mc_link_recv(m->mc, l->core, buf, len, &used, now_mc()) == 0)
		evbuffer_drain(in, used);
	swarm_member_settle(m);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	struct swarm_link *l = arg;
	struct swarm_member *m = l->m;
	struct rs_mc_link *core = l->core;
	char why[256];
	bool refused = false;

	if (what & BEV_EVENT_CONNECTED) { /* TCP, and under TLS the handshake */
		if (l->answer_timer)
			evtimer_del(l->answer_timer); /* the core's answer deadline from here */
		free(l->answers); /* connected: a failure from now on is the link's, not an answer's */
		l->answers = NULL;
		rs_mc_link_connected(m->mc, core, now_mc());
		swarm_member_settle(m);
		return;
	}
	rs_tls_bev_failure(bev, why, sizeof(why), &refused);
	if (what & BEV_EVENT_EOF)
		snprintf(why, sizeof(why), "closed");
	if (swarm_next_answer(l, why))
		return; /* the Service's next address is being tried */
	swarm_link_free(l);
	rs_mc_link_failed(m->mc, core, refused ? RS_MC_FAIL_REFUSED : RS_MC_FAIL_CONNECT, why, now_mc());
	swarm_member_settle(m);
}

static int open_socket(struct swarm *sw, struct swarm_member *m, const struct sockaddr_storage *to)
{
	struct sockaddr_storage src;
	socklen_t src_len;
	int fd = socket(to->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
	if (sw->cfg.bind.family) {
		if (rs_cidr_nth(&sw->cfg.bind, m->number, &src, &src_len) || src.ss_family != to->ss_family) {
			close(fd);
			return -EAFNOSUPPORT;
		}
		/* The port is chosen at connect, by the whole 4-tuple: members
		 * sharing a source address (the prefix wrapped) do not use up
		 * the ephemeral ports at bind time. */
		(void)setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &(int){ 1 }, sizeof(int));
		if (bind(fd, (struct sockaddr *)&src, src_len) < 0) {
			int err = -errno;

			close(fd);
			return err;
		}
	}
	return fd;
}

/* Where m's wanted dial goes: the Service, or a gateway table entry. */
static void target_of(const struct swarm *sw, const struct swarm_member *m, const char **endpoint, const char **name)
{
	*endpoint = sw->cfg.service;
	*name = sw->service_name;
	if (m->want_via != RS_MC_VIA_SERVICE) {
		*endpoint = sw->gateways[m->want_gw].peer;
		*name = sw->gateways[m->want_gw].id;
	}
}

int swarm_link_connect(struct swarm_link *l, const struct sockaddr_storage *to, socklen_t to_len,
		       enum swarm_failure *kind, const char **why)
{
	struct swarm *sw = l->sw;
	const char *endpoint, *name;
	int fd;

	target_of(sw, l->m, &endpoint, &name);
	l->in_progress = true;
	fd = open_socket(sw, l->m, to);
	if (fd < 0)
		return *kind = FAIL_SOURCE, *why = "bad source address", fd;
	l->bev = rs_tls_client_bufferevent(sw->base, sw->tls, fd, name); /* on failure it has closed fd */
	if (!l->bev)
		return *kind = FAIL_TLS, *why = "no bufferevent", -ENOMEM;
	bufferevent_setwatermark(l->bev, EV_READ, 0, RS_FRAME_MAX + RS_FRAME_HEADER);
	bufferevent_setcb(l->bev, on_read, NULL, on_event, l);
	bufferevent_enable(l->bev, EV_READ | EV_WRITE);
	if (bufferevent_socket_connect(l->bev, (const struct sockaddr *)to, (int)to_len) < 0) {
		bufferevent_free(l->bev);
		l->bev = NULL;
		return *kind = FAIL_CONNECT, *why = "connect failed", -ECONNREFUSED;
	}
	return 0;
}

/* Whether m's wanted dial is the Service by its name. */
static bool by_name(const struct swarm *sw, const struct swarm_member *m)
{
	return m->want_via == RS_MC_VIA_SERVICE && sw->resolver && rs_endpoint_is_name(sw->cfg.service);
}

/* Connects l, a dial slot held; by name: starts the lookup (1).  Returns
 * 0, 1, or -errno with *kind and *why set (l then has no bev). */
static int connect_link(struct swarm *sw, struct swarm_member *m, struct swarm_link *l, enum swarm_failure *kind,
			const char **why)
{
	struct sockaddr_storage to;
	const char *endpoint, *name;
	socklen_t to_len;
	int err;

	if (by_name(sw, m)) {
		l->in_progress = true;
		err = swarm_service_by_name(l);
		if (err)
			return *kind = FAIL_RESOLVE, *why = "could not start the lookup", err;
		return 1;
	}
	target_of(sw, m, &endpoint, &name);
	if (rs_endpoint_parse(endpoint, &to, &to_len))
		return *kind = FAIL_CONNECT, *why = "not a numeric ADDR:PORT", -EINVAL;
	return swarm_link_connect(l, &to, to_len, kind, why);
}

void swarm_member_dial_now(struct swarm *sw, struct swarm_member *m)
{
	struct swarm_link *l = m->dialing;
	enum swarm_failure kind = FAIL_CONNECT;
	const char *why = NULL;
	struct rs_mc_link *core;

	m->want_dial = false;
	if (!l) {
		swarm_dial_release(sw);
		return;
	}
	core = l->core;
	if (!by_name(sw, m)) /* by name, each answer has its own deadline (service_name.c) */
		rs_mc_link_started(m->mc, core, now_mc());
	l->in_progress = true; /* the slot the pump took is the link's now */
	if (connect_link(sw, m, l, &kind, &why) < 0) {
		sw->fail_hint = kind;
		swarm_link_free(l);
		rs_mc_link_failed(m->mc, core, RS_MC_FAIL_CONNECT, why, now_mc());
	}
	swarm_member_settle(m);
}

static int mint_token(struct swarm *sw, struct swarm_member *m)
{
	char token[RS_TOKEN_MAX + 1];
	struct rs_mc_time now = now_mc();
	uint64_t expiry = (uint64_t)now.wall_ms / 1000 + sw->cfg.token_ttl_s;
	int err = rs_keyring_mint(&sw->keys, (uint64_t)now.wall_ms / 1000, m->id, expiry, token, sizeof(token));

	if (err)
		return err;
	return rs_mc_set_token(m->mc, token, expiry, now);
}

static int core_dial(void *user, struct rs_mc_link *core, const struct rs_mc_dial *d, void **link_user,
		     const char **why)
{
	struct swarm_member *m = user;
	struct swarm *sw = m->sw;
	struct sockaddr_storage to;
	enum swarm_failure kind = FAIL_CONNECT;
	struct swarm_link *l;
	socklen_t to_len;
	int err;

	if (sw->stopping)
		return *why = "stopping", -ECANCELED;
	if (d->token_expired && mint_token(sw, m) != 0)
		swarm_failure(sw, m, FAIL_SOURCE, "token_failed", "could not mint a token");
	m->want_via = (uint8_t)d->via;
	m->want_gw = SWARM_NO_GW;
	if (d->via != RS_MC_VIA_SERVICE) {
		m->want_gw = swarm_gateway_intern(sw, d->gateway, d->endpoint);
		if (m->want_gw == SWARM_NO_GW)
			return *why = "no gateway to dial (the gateway table is full)", -EACCES;
	}
	if (!by_name(sw, m) && rs_endpoint_parse(d->endpoint, &to, &to_len))
		return *why = "not a numeric ADDR:PORT", -EACCES;
	if (d->via != RS_MC_VIA_SERVICE && !sw->tls &&
	    !rs_cidr_list_contains(sw->cfg.allow, sw->cfg.n_allow, (const struct sockaddr *)&to))
		return *why = "outside --redirect-allow", -EACCES;
	l = calloc(1, sizeof(*l));
	if (!l)
		return *why = "out of memory", -ENOMEM;
	l->sw = sw;
	l->m = m;
	l->core = core;
	m->dialing = l;
	*link_user = l;
	if (!swarm_dial_slot(sw)) {
		m->want_dial = true;
		swarm_dial_enqueue(sw, m, d->via != RS_MC_VIA_SERVICE);
		return RS_MC_DIAL_QUEUED;
	}
	err = connect_link(sw, m, l, &kind, why);
	if (err < 0) {
		sw->fail_hint = kind;
		swarm_link_free(l);
		return err;
	}
	return err == 1 ? RS_MC_DIAL_QUEUED : 0;
}

static void core_send(void *user, void *link_user, const struct rs_frame *f)
{
	struct swarm_member *m = user;
	struct swarm_link *l = link_user;

	if (l->bev && rs_proto_write(bufferevent_get_output(l->bev), f) != 0)
		swarm_failure(m->sw, m, FAIL_BAD_FRAME, "encode_failed", rs_frame_type_name(f->type));
}

static void core_close(void *user, void *link_user)
{
	struct swarm_member *m = user;
	struct swarm_link *l = link_user;

	if (m->dialing == l)
		m->want_dial = false; /* still in line: skipped when its turn comes */
	if (l->bev)
		(void)rs_bev_write_now(l->bev); /* best effort: a GOODBYE the core queued */
	swarm_link_free(l);
}

static enum swarm_failure failure_of(enum rs_mc_fail f)
{
	switch (f) {
	case RS_MC_FAIL_TIMEOUT: return FAIL_TIMEOUT;
	case RS_MC_FAIL_TLS:
	case RS_MC_FAIL_REFUSED: return FAIL_TLS; /* the Service's certificate, refused */
	case RS_MC_FAIL_REJECTED: return FAIL_REJECTED;
	case RS_MC_FAIL_BAD_FRAME: return FAIL_BAD_FRAME;
	case RS_MC_FAIL_GOODBYE: return FAIL_GOODBYE;
	case RS_MC_FAIL_DISCONNECTED: return FAIL_DISCONNECTED;
	case RS_MC_FAIL_CONNECT:
	case RS_MC_FAIL_COUNT: break;
	}
	return FAIL_CONNECT;
}

static void on_core_event(void *user, const struct rs_mc_event *e)
{
	struct swarm_member *m = user;
	struct swarm *sw = m->sw;
	char detail[RS_TEXT_MAX + 48];
	enum swarm_failure kind;

	switch (e->type) {
	case RS_MC_EV_ATTACHED:
		if (m->dialing)
			release_slot(m->dialing);
		break;
	case RS_MC_EV_REDIRECTED:
		sw->redirects++;
		break;
	case RS_MC_EV_REJECTED:
		snprintf(detail, sizeof(detail), "code %u retry_after_ms %llu: %s", e->code, (unsigned long long)e->ms,
			 e->text);
		swarm_failure(sw, m, FAIL_REJECTED, "dial_failed", detail);
		break;
	case RS_MC_EV_DIAL_FAILED:
		if (e->fail == RS_MC_FAIL_REJECTED)
			break; /* counted with its REJECT's detail */
		kind = sw->fail_hint != FAIL_COUNT ? sw->fail_hint : failure_of(e->fail);
		sw->fail_hint = FAIL_COUNT;
		swarm_failure(sw, m, kind, "dial_failed", e->text);
		break;
	case RS_MC_EV_TARGET_REFUSED:
		swarm_failure(sw, m, FAIL_TARGET_REFUSED, "target_refused", e->text);
		break;
	case RS_MC_EV_DISCONNECTED:
		swarm_failure(sw, m, e->fail == RS_MC_FAIL_BAD_FRAME ? FAIL_BAD_FRAME : FAIL_DISCONNECTED,
			      e->fail == RS_MC_FAIL_BAD_FRAME ? "bad_frame" : "disconnected", e->text);
		break;
	case RS_MC_EV_UNEXPECTED:
		swarm_failure(sw, m, FAIL_BAD_FRAME, "unexpected_frame", rs_frame_type_name((uint8_t)e->code));
		break;
	default:
		break;
	}
}

static const struct rs_mc_callbacks member_callbacks = {
	.dial = core_dial,
	.send = core_send,
	.close = core_close,
	.event = on_core_event,
};

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct swarm_member *m = arg;

	(void)fd;
	(void)what;
	rs_mc_tick(m->mc, now_mc());
	swarm_member_settle(m);
}

int swarm_member_start(struct swarm *sw, struct swarm_member *m, uint32_t number)
{
	char id[RS_ID_MAX + 1], instance[RS_INSTANCE_MAX + 1];
	struct rs_mc_config cfg;
	int err;

	m->sw = sw;
	m->number = number;
	m->counted_gw = SWARM_NO_GW;
	m->want_gw = SWARM_NO_GW;
	snprintf(id, sizeof(id), "%s%u", sw->cfg.prefix, number);
	snprintf(instance, sizeof(instance), "%s-%u", sw->instance, number);
	m->id = strdup(id);
	m->instance = strdup(instance);
	m->timer = evtimer_new(sw->base, on_timer, m);
	if (!m->id || !m->instance || !m->timer)
		return -ENOMEM;
	cfg = (struct rs_mc_config){
		.member_id = m->id,
		.instance_id = m->instance,
		.service = sw->cfg.service,
		.service_name = sw->service_name,
		.first_epoch = sw->next_epoch,
		.seed = rs_splitmix64(&sw->rng),
		.dial_timeout_ms = sw->cfg.dial_timeout_ms,
		.sandboxes = sw->cfg.sandboxes,
	};
	err = rs_mc_new(&cfg, &member_callbacks, m, &m->mc);
	if (err)
		return err;
	err = mint_token(sw, m);
	if (err)
		return err;
	rs_mc_start(m->mc, now_mc());
	swarm_member_settle(m);
	return 0;
}

void swarm_member_stop(struct swarm_member *m)
{
	if (m->mc) {
		rs_mc_stop(m->mc, now_mc());
		rs_mc_free(m->mc);
	}
	m->mc = NULL;
	m->want_dial = false;
	if (m->timer)
		event_free(m->timer);
	m->timer = NULL;
	free(m->id);
	free(m->instance);
	m->id = m->instance = NULL;
}
