/* SPDX-License-Identifier: Apache-2.0 */
/* dial.c - dialing, and what a failed or refused dial leads to.
 *
 * A failed redirect goes back to the Service asking to stay (the placement
 * that chose an unreachable target would choose it again; a drain redirect
 * keeps its old link meanwhile); a second one in a row before an attach
 * backs off instead, or two gateways killed within one TTL would spin the
 * member through the Service, a store transaction per turn.  A failed
 * redial goes to the Service without asking to stay: its gateway may be
 * gone, and the rule must place it.  A REJECT's retry hint is a floor on
 * the next attempt whatever the link was: a gateway at its session limit,
 * or a redirect target that is, is not dialed again sooner, nor is the
 * Service dialed at once in its place. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ringsteer/backoff.h"
#include "member.h"

void mc_retry_after(struct rs_mc_core *mc, bool stay, uint32_t floor_ms, struct rs_mc_time now)
{
	uint64_t delay = rs_retry_delay_ms(&mc->backoff_ms, floor_ms, &mc->rng);

	mc->retry_stay = stay;
	mc->retry_at = now.mono_ms + (int64_t)delay;
	if (mc->retry_at <= 0)
		mc->retry_at = 1;
	mc_emit(mc, &(struct rs_mc_event){ .type = RS_MC_EV_RETRY, .ms = delay, .stay = stay });
}

void mc_dial_service(struct rs_mc_core *mc, bool stay, struct rs_mc_time now)
{
	mc_dial(mc, RS_MC_VIA_SERVICE, mc->cfg.service, mc->cfg.service_name, stay, now);
}

static void back_to_service(struct rs_mc_core *mc, enum rs_mc_via via, struct rs_mc_time now)
{
	if (via == RS_MC_VIA_REDIRECT && ++mc->redirects_failed >= 2) {
		mc_retry_after(mc, true, 0, now);
		return;
	}
	mc_dial_service(mc, via == RS_MC_VIA_REDIRECT, now);
}

/* What a failed dial of kind via leads to, its link gone; floor_ms is a
 * REJECT's retry hint (0: none). */
static void dial_failed(struct rs_mc_core *mc, enum rs_mc_via via, bool stay, uint32_t floor_ms,
			struct rs_mc_time now)
{
	if (floor_ms > 0 && via != RS_MC_VIA_SERVICE) {
		/* What would have been dialed at once waits for the hint: the
		 * Service, asking to stay after a redirect, not after a
		 * redial.  Still attached (a drain's target refused us), the
		 * retry goes back through our gateway, which places us again. */
		mc_retry_after(mc, via == RS_MC_VIA_REDIRECT || via == RS_MC_VIA_REFRESH || mc->active, floor_ms, now);
		return;
	}
	switch (via) {
	case RS_MC_VIA_REDIRECT:
	case RS_MC_VIA_REDIAL:
		back_to_service(mc, via, now);
		break;
	case RS_MC_VIA_REFRESH:
		mc_retry_after(mc, true, 0, now); /* still attached on the old link */
		break;
	case RS_MC_VIA_SERVICE:
	case RS_MC_VIA_COUNT:
		if (!mc->active)
			mc_retry_after(mc, stay, floor_ms, now);
		break;
	}
}

void mc_link_failed(struct rs_mc_link *l, enum rs_mc_fail why, const char *text, uint32_t floor_ms, bool gone,
		    struct rs_mc_time now)
{
	struct rs_mc_core *mc = l->mc;
	enum rs_mc_via via = l->via;
	bool stay = l->stay;

	mc->failures[why]++;
	mc_emit(mc, &(struct rs_mc_event){ .type = RS_MC_EV_DIAL_FAILED, .via = via, .fail = why,
					   .endpoint = l->endpoint, .gateway = l->gateway, .text = text });
	if (gone)
		mc_link_forget(l, now);
	else
		mc_link_close(l, now);
	dial_failed(mc, via, stay, floor_ms, now);
}

void mc_target_refused(struct rs_mc_core *mc, enum rs_mc_via via, const char *endpoint, const char *gateway,
		       const char *text, struct rs_mc_time now)
{
	mc->targets_refused++;
	mc->failures[RS_MC_FAIL_REFUSED]++;
	mc_emit(mc, &(struct rs_mc_event){ .type = RS_MC_EV_TARGET_REFUSED, .via = via, .fail = RS_MC_FAIL_REFUSED,
					   .endpoint = endpoint, .gateway = gateway, .text = text,
					   .ms = mc->targets_refused });
	/* A refused refresh is not retried (it would be refused again): the
	 * attached link, whose token was checked when it attached, carries on. */
	switch (via) {
	case RS_MC_VIA_REDIRECT:
	case RS_MC_VIA_REDIAL:
		back_to_service(mc, via, now);
		break;
	case RS_MC_VIA_REFRESH:
	case RS_MC_VIA_SERVICE:
	case RS_MC_VIA_COUNT:
		if (!mc->active)
			mc_retry_after(mc, true, 0, now);
		break;
	}
}

void mc_session_lost(struct rs_mc_core *mc, enum rs_mc_fail why, const char *text, struct rs_mc_time now)
{
	mc->failures[why]++;
	mc_emit(mc, &(struct rs_mc_event){ .type = RS_MC_EV_DISCONNECTED, .fail = why, .gateway = mc->last_gateway,
					   .text = text });
	if (!mc->pending)
		mc_dial(mc, RS_MC_VIA_REDIAL, mc->last_peer, mc->last_gateway, true, now);
}

void mc_dial(struct rs_mc_core *mc, enum rs_mc_via via, const char *endpoint, const char *gateway, bool stay,
	     struct rs_mc_time now)
{
	struct rs_mc_dial d = { .via = via, .endpoint = endpoint, .gateway = gateway, .stay = stay };
	char ep[RS_ENDPOINT_MAX + 1], gw[RS_ID_MAX + 1];
	const char *why = NULL;
	struct rs_mc_link *l;
	int rc;

	/* endpoint and gateway may be the slot's own strings (a retry of the
	 * pending link's target): copy them before the slot is emptied. */
	snprintf(ep, sizeof(ep), "%s", endpoint);
	snprintf(gw, sizeof(gw), "%s", gateway);
	d.endpoint = ep;
	d.gateway = gw;
	if (mc->pending)
		mc_link_close(mc->pending, now);
	mc->retry_at = 0;
	d.token_expired = via == RS_MC_VIA_SERVICE && (int64_t)(mc->token_expiry * 1000) <= now.wall_ms;
	l = mc_link_new(mc, via, stay);
	snprintf(l->endpoint, sizeof(l->endpoint), "%s", ep);
	snprintf(l->gateway, sizeof(l->gateway), "%s", gw);
	mc->pending = l;
	rc = mc->cb.dial(mc->user, l, &d, &l->user, &why);
	if (rc == -EACCES) {
		mc_link_forget(l, now);
		mc_target_refused(mc, via, ep, gw, why ? why : "not allowed", now);
		return;
	}
	if (rc < 0) {
		mc->failures[RS_MC_FAIL_CONNECT]++;
		mc_emit(mc, &(struct rs_mc_event){ .type = RS_MC_EV_DIAL_FAILED, .via = via, .fail = RS_MC_FAIL_CONNECT,
						   .endpoint = ep, .gateway = gw, .text = why ? why : strerror(-rc) });
		mc_link_forget(l, now);
		dial_failed(mc, via, stay, 0, now);
		return;
	}
	if (rc != RS_MC_DIAL_QUEUED) {
		l->state = MC_LINK_CONNECTING;
		l->deadline_ms = now.mono_ms + mc->cfg.dial_timeout_ms;
	}
	mc_emit(mc, &(struct rs_mc_event){ .type = RS_MC_EV_DIALING, .via = via, .endpoint = ep, .gateway = gw,
					   .stay = stay });
}
