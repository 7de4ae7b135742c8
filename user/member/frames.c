/* SPDX-License-Identifier: Apache-2.0 */
/* frames.c - what each frame from a gateway leads to: ACCEPT attaches (and
 * closes the link it replaces: make before break), REDIRECT dials its
 * target at once asking to stay, REJECT is a failed dial with its retry
 * hint as a floor, TOKEN redials the same gateway with the new token,
 * GOODBYE ends the link (after SUPERSEDED nothing is dialed while our newer
 * link is attached or on its way, the Service otherwise; after SHUTDOWN or
 * CLOSING the rule places us again). */
#include <stdio.h>
#include <string.h>

#include "member.h"

static void attached(struct rs_mc_link *l, const struct rs_accept *acc, struct rs_mc_time now)
{
	struct rs_mc_core *mc = l->mc;
	struct rs_mc_link *old = mc->active != l ? mc->active : NULL;

	if (mc->pending == l)
		mc->pending = NULL;
	mc->active = l;
	l->state = MC_LINK_ATTACHED;
	mc->backoff_ms = 0;
	mc->redirects_failed = 0;
	mc->retry_at = 0;
	mc->ever_attached = true;
	mc->lost_at_ms = 0;
	mc->attaches++;
	snprintf(mc->last_gateway, sizeof(mc->last_gateway), "%s", acc->gateway_id);
	snprintf(mc->last_peer, sizeof(mc->last_peer), "%s", acc->peer);
	mc->heartbeat_ms = acc->heartbeat_ms ? acc->heartbeat_ms : 5000;
	mc_emit(mc, &(struct rs_mc_event){ .type = RS_MC_EV_ATTACHED, .via = l->via, .stay = l->stay,
					   .gateway = mc->last_gateway, .peer = mc->last_peer, .epoch = l->epoch });
	/* The new link is in (and reported so, before the old gateway can log
	 * the GOODBYE below); now the old one goes. */
	if (old)
		mc_goodbye_and_close(old, now);
	l->deadline_ms = now.mono_ms + 3 * (int64_t)mc->heartbeat_ms;
	mc_arm_heartbeat(mc, now);
	mc_send_sandboxes(mc); /* the count may have changed while we were away */
	if (mc->refresh_on_attach) {
		mc->refresh_on_attach = false;
		mc_send(l, &(struct rs_frame){ .version = RS_PROTO_VERSION, .type = RS_FRAME_REFRESH });
	}
}

static int on_redirect(struct rs_mc_link *l, const struct rs_redirect *r, struct rs_mc_time now)
{
	struct rs_mc_core *mc = l->mc;
	bool keep = l->state == MC_LINK_ATTACHED;
	char gateway[RS_ID_MAX + 1], peer[RS_ENDPOINT_MAX + 1];

	snprintf(gateway, sizeof(gateway), "%s", r->gateway_id);
	snprintf(peer, sizeof(peer), "%s", r->peer);
	mc->redirects++;
	mc_emit(mc, &(struct rs_mc_event){ .type = RS_MC_EV_REDIRECTED, .gateway = gateway, .peer = peer,
					   .drain = r->reason == RS_REDIRECT_DRAIN });
	/* An attached link (a drain) stays until the target accepts us. */
	if (!keep)
		mc_link_close(l, now);
	mc_dial(mc, RS_MC_VIA_REDIRECT, peer, gateway, true, now);
	return keep ? 0 : 1;
}

static int on_goodbye(struct rs_mc_link *l, const struct rs_goodbye *g, struct rs_mc_time now)
{
	struct rs_mc_core *mc = l->mc;

	mc_emit(mc, &(struct rs_mc_event){ .type = RS_MC_EV_GOODBYE, .code = g->reason, .text = g->text });
	if (l->state != MC_LINK_ATTACHED) {
		mc_link_failed(l, RS_MC_FAIL_GOODBYE, "goodbye", 0, false, now);
	} else if (g->reason == RS_GOODBYE_SUPERSEDED) {
		l->superseded = true;
		mc_link_close(l, now); /* our newer link took over, or is on its way */
		/* None is: the newer epoch the store holds is a reservation of a
		 * dial of ours that failed (a redirect's), or a decision whose
		 * answer was lost.  Nothing else would ever dial again: the
		 * rule places us, as after a shutdown. */
		if (!mc->active && !mc->pending && !mc->retry_at)
			mc_dial_service(mc, false, now);
	} else {
		/* The gateway is going away: let the rule place us, unless a
		 * retry is armed (a REJECT's hint is a floor on the next
		 * attempt, the Service's included): it dials the Service then. */
		mc_link_close(l, now);
		if (!mc->active && !mc->pending && !mc->retry_at)
			mc_dial_service(mc, false, now);
	}
	return 1;
}

int mc_on_frame(struct rs_mc_link *l, const struct rs_frame *f, struct rs_mc_time now)
{
	struct rs_mc_core *mc = l->mc;

	switch (f->type) {
	case RS_FRAME_ACCEPT:
		if (l->state != MC_LINK_HELLO_SENT)
			break;
		attached(l, &f->u.accept, now);
		return 0;
	case RS_FRAME_REDIRECT:
		if (l->state != MC_LINK_HELLO_SENT && l->state != MC_LINK_ATTACHED)
			break;
		return on_redirect(l, &f->u.redirect, now);
	case RS_FRAME_REJECT:
		mc_emit(mc, &(struct rs_mc_event){ .type = RS_MC_EV_REJECTED, .code = f->u.reject.code,
						   .ms = f->u.reject.retry_after_ms, .text = f->u.reject.text });
		mc_link_failed(l, RS_MC_FAIL_REJECTED, "rejected", f->u.reject.retry_after_ms, false, now);
		return 1;
	case RS_FRAME_HEARTBEAT:
		return 0;
	case RS_FRAME_TOKEN:
		if (l->state != MC_LINK_ATTACHED)
			break;
		snprintf(mc->token, sizeof(mc->token), "%s", f->u.token.token);
		mc->token_expiry = f->u.token.expiry;
		mc_emit(mc, &(struct rs_mc_event){ .type = RS_MC_EV_TOKEN, .text = mc->token, .expiry = mc->token_expiry });
		mc_schedule_refresh(mc, now);
		/* Redial our gateway with the new token, asking to stay; the
		 * old link stays until the new one is accepted. */
		mc_dial(mc, RS_MC_VIA_REFRESH, mc->last_peer, mc->last_gateway, true, now);
		return 0;
	case RS_FRAME_GOODBYE:
		return on_goodbye(l, &f->u.goodbye, now);
	default:
		break;
	}
	mc_emit(mc, &(struct rs_mc_event){ .type = RS_MC_EV_UNEXPECTED, .code = f->type });
	return 0;
}
