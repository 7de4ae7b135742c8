/* SPDX-License-Identifier: Apache-2.0 */
/* core.c - the member core's public API (include/ringsteer/member_core.h):
 * each event checks what it is given, then hands over to the file that
 * owns the transition. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "member.h"

int rs_mc_new(const struct rs_mc_config *cfg, const struct rs_mc_callbacks *cb, void *user,
	      struct rs_mc_core **out)
{
	struct rs_mc_core *mc;

	*out = NULL;
	if (!cfg->member_id || !rs_proto_member_id_ok(cfg->member_id) || !cfg->instance_id ||
	    strlen(cfg->instance_id) > RS_INSTANCE_MAX || !cfg->service || strlen(cfg->service) > RS_ENDPOINT_MAX ||
	    !cfg->service_name || strlen(cfg->service_name) > RS_ID_MAX || cfg->dial_timeout_ms == 0 || !cb->dial ||
	    !cb->send || !cb->close)
		return -EINVAL;
	mc = calloc(1, sizeof(*mc));
	if (!mc)
		return -ENOMEM;
	mc->cfg = *cfg;
	mc->cb = *cb;
	mc->user = user;
	mc->next_epoch = cfg->first_epoch ? cfg->first_epoch : 1;
	mc->rng = cfg->seed;
	mc->heartbeat_ms = 5000;
	*out = mc;
	return 0;
}

void rs_mc_free(struct rs_mc_core *mc)
{
	if (!mc)
		return;
	mc->started = false;
	for (int i = 0; i < 2; i++)
		if (mc->links[i].state != MC_LINK_FREE)
			mc_link_close(&mc->links[i], (struct rs_mc_time){ 0 });
	free(mc);
}

int rs_mc_set_token(struct rs_mc_core *mc, const char *token, uint64_t expiry_s, struct rs_mc_time now)
{
	size_t n = strlen(token);

	if (n == 0 || n > RS_TOKEN_MAX)
		return -EINVAL;
	memcpy(mc->token, token, n + 1);
	mc->token_expiry = expiry_s;
	mc_schedule_refresh(mc, now);
	return 0;
}

void rs_mc_start(struct rs_mc_core *mc, struct rs_mc_time now)
{
	if (mc->started)
		return;
	mc->started = true;
	mc_dial_service(mc, false, now);
}

void rs_mc_stop(struct rs_mc_core *mc, struct rs_mc_time now)
{
	mc->started = false;
	mc->retry_at = mc->refresh_at = mc->beat_at = 0;
	if (mc->pending)
		mc_link_close(mc->pending, now);
	if (mc->active)
		mc_goodbye_and_close(mc->active, now);
}

void rs_mc_link_started(struct rs_mc_core *mc, struct rs_mc_link *l, struct rs_mc_time now)
{
	if (l->state != MC_LINK_QUEUED)
		return;
	l->state = MC_LINK_CONNECTING;
	l->deadline_ms = now.mono_ms + mc->cfg.dial_timeout_ms;
}

void rs_mc_link_connected(struct rs_mc_core *mc, struct rs_mc_link *l, struct rs_mc_time now)
{
	(void)mc;
	if (l->state == MC_LINK_CONNECTING || l->state == MC_LINK_QUEUED)
		mc_send_hello(l, now);
}

int rs_mc_link_recv(struct rs_mc_core *mc, struct rs_mc_link *l, const uint8_t *buf, size_t len, size_t *consumed,
		    struct rs_mc_time now)
{
	size_t off = 0;

	*consumed = 0;
	if (l->state == MC_LINK_ATTACHED && len > 0)
		l->deadline_ms = now.mono_ms + 3 * (int64_t)mc->heartbeat_ms; /* alive: the idle deadline moves */
	while (off < len) {
		struct rs_frame f;
		size_t n = 0;
		int err = rs_frame_decode(buf + off, len - off, &f, &n);

		if (err == -EAGAIN)
			break;
		if (err) {
			*consumed = len;
			if (l->state == MC_LINK_ATTACHED) {
				mc_link_close(l, now);
				mc_session_lost(mc, RS_MC_FAIL_BAD_FRAME, "bad frame", now);
			} else {
				mc_link_failed(l, RS_MC_FAIL_BAD_FRAME, "bad frame", 0, false, now);
			}
			return 1;
		}
		off += n;
		*consumed = off;
		if (mc_on_frame(l, &f, now))
			return 1;
	}
	return 0;
}

void rs_mc_link_failed(struct rs_mc_core *mc, struct rs_mc_link *l, enum rs_mc_fail why, const char *text,
		       struct rs_mc_time now)
{
	char endpoint[RS_ENDPOINT_MAX + 1], gateway[RS_ID_MAX + 1];
	enum rs_mc_via via = l->via;

	if ((unsigned)why >= RS_MC_FAIL_COUNT)
		why = RS_MC_FAIL_CONNECT;
	if (l->state == MC_LINK_FREE)
		return;
	if (l->state == MC_LINK_ATTACHED) {
		/* The attached link broke: a blip.  Redial our gateway asking to stay. */
		mc_link_forget(l, now);
		mc_session_lost(mc, RS_MC_FAIL_DISCONNECTED, text ? text : "closed", now);
		return;
	}
	if (why == RS_MC_FAIL_REFUSED && via != RS_MC_VIA_SERVICE) {
		memcpy(endpoint, l->endpoint, sizeof(endpoint));
		memcpy(gateway, l->gateway, sizeof(gateway));
		mc_link_forget(l, now);
		mc_target_refused(mc, via, endpoint, gateway, text ? text : "refused", now);
		return;
	}
	mc_link_failed(l, why, text ? text : rs_mc_fail_name(why), 0, true, now);
}

void rs_mc_set_sandboxes(struct rs_mc_core *mc, uint32_t sandboxes)
{
	mc->cfg.sandboxes = sandboxes;
	mc_send_sandboxes(mc);
}

void rs_mc_refresh_now(struct rs_mc_core *mc, struct rs_mc_time now)
{
	(void)now;
	if (!mc->active) {
		mc->refresh_on_attach = true; /* an operator asked: the next attach asks at once */
		return;
	}
	mc_send(mc->active, &(struct rs_frame){ .version = RS_PROTO_VERSION, .type = RS_FRAME_REFRESH });
}

void rs_mc_get_info(const struct rs_mc_core *mc, struct rs_mc_info *out)
{
	*out = (struct rs_mc_info){
		.state = !mc->started ? RS_MC_IDLE
			 : mc->active  ? (mc->pending ? RS_MC_MOVING : RS_MC_ATTACHED)
			 : mc->pending ? RS_MC_DIALING : RS_MC_WAITING,
		.gateway = mc->last_gateway,
		.peer = mc->last_peer,
		.epoch = mc->active ? mc->active->epoch : 0,
		.lost_at_ms = mc->lost_at_ms,
		.token_expiry = mc->token_expiry,
		.attaches = mc->attaches,
		.redirects = mc->redirects,
		.targets_refused = mc->targets_refused,
	};
	memcpy(out->failures, mc->failures, sizeof(out->failures));
}

const char *rs_mc_state_name(enum rs_mc_state s)
{
	static const char *const names[RS_MC_STATE_COUNT] = { "idle", "waiting", "dialing", "attached", "moving" };

	return (unsigned)s < RS_MC_STATE_COUNT ? names[s] : "unknown";
}

const char *rs_mc_via_name(enum rs_mc_via v)
{
	static const char *const names[RS_MC_VIA_COUNT] = { "service", "redirect", "redial", "refresh" };

	return (unsigned)v < RS_MC_VIA_COUNT ? names[v] : "unknown";
}

const char *rs_mc_fail_name(enum rs_mc_fail f)
{
	static const char *const names[RS_MC_FAIL_COUNT] = { "connect", "timeout", "tls", "refused",
							     "rejected", "bad_frame", "goodbye", "disconnected" };

	return (unsigned)f < RS_MC_FAIL_COUNT ? names[f] : "unknown";
}
