/* SPDX-License-Identifier: Apache-2.0 */
/* timers.c - what is due at a time: link deadlines (connect, answer, idle),
 * the retry, the token refresh, the heartbeat.  One wake time covers them
 * all (rs_mc_next_wake), so an embedder keeps one timer per member. */
#include "ringsteer/backoff.h"
#include "member.h"

static int64_t at_least_one(int64_t t)
{
	return t > 0 ? t : 1;
}

void mc_schedule_refresh(struct rs_mc_core *mc, struct rs_mc_time now)
{
	int64_t expiry_ms = (int64_t)mc->token_expiry * 1000;

	uint64_t delay;

	mc->refresh_at = 0;
	if (expiry_ms <= now.wall_ms)
		return;
	/* Never due the instant it is armed: with a millisecond of the token
	 * left, 80% of it is 0, and a member that is not attached (which
	 * re-arms it at each refresh) would be woken at the same instant for
	 * ever, its clock standing still (the simulator's, seed
	 * 8584915137004137725), or spin until the millisecond passes. */
	delay = rs_refresh_delay_ms((uint64_t)(expiry_ms - now.wall_ms), &mc->rng);
	mc->refresh_at = at_least_one(now.mono_ms + (int64_t)(delay ? delay : 1));
}

void mc_arm_heartbeat(struct rs_mc_core *mc, struct rs_mc_time now)
{
	mc->beat_at = at_least_one(now.mono_ms + mc->heartbeat_ms);
}

static void link_due(struct rs_mc_link *l, struct rs_mc_time now)
{
	struct rs_mc_core *mc = l->mc;

	if (l->state == MC_LINK_ATTACHED) {
		/* Nothing read for three heartbeats: the link is as good as lost. */
		mc_link_close(l, now);
		mc_session_lost(mc, RS_MC_FAIL_DISCONNECTED, "timeout", now);
		return;
	}
	mc_link_failed(l, RS_MC_FAIL_TIMEOUT, "timeout", 0, false, now);
}

static void retry_due(struct rs_mc_core *mc, struct rs_mc_time now)
{
	if (mc->active && !mc->retry_stay)
		return;
	/* Still attached (a refresh redial that failed, or a drain whose
	 * targets failed or refused us with a hint): back through our gateway,
	 * which places us again by the rule (docs/PROTOCOL.md, Drain); else the
	 * Service. */
	if (mc->active)
		mc_dial(mc, RS_MC_VIA_REFRESH, mc->last_peer, mc->last_gateway, true, now);
	else
		mc_dial_service(mc, mc->retry_stay, now);
}

static void refresh_due(struct rs_mc_core *mc, struct rs_mc_time now)
{
	if (!mc->active) {
		mc_schedule_refresh(mc, now); /* again when attached; a Service dial loads a fresh token */
		return;
	}
	mc_send(mc->active, &(struct rs_frame){ .version = RS_PROTO_VERSION, .type = RS_FRAME_REFRESH });
}

static void beat_due(struct rs_mc_core *mc, struct rs_mc_time now)
{
	mc_arm_heartbeat(mc, now);
	mc_emit(mc, &(struct rs_mc_event){ .type = RS_MC_EV_HEARTBEAT });
	if (mc->active)
		mc_send(mc->active, &(struct rs_frame){ .version = RS_PROTO_VERSION, .type = RS_FRAME_HEARTBEAT });
}

void rs_mc_tick(struct rs_mc_core *mc, struct rs_mc_time now)
{
	if (!mc->started)
		return;
	for (int i = 0; i < 2; i++) {
		struct rs_mc_link *l = &mc->links[i];

		if (l->state != MC_LINK_FREE && l->deadline_ms && l->deadline_ms <= now.mono_ms)
			link_due(l, now);
	}
	if (mc->retry_at && mc->retry_at <= now.mono_ms) {
		mc->retry_at = 0;
		retry_due(mc, now);
	}
	if (mc->refresh_at && mc->refresh_at <= now.mono_ms) {
		mc->refresh_at = 0;
		refresh_due(mc, now);
	}
	if (mc->beat_at && mc->beat_at <= now.mono_ms)
		beat_due(mc, now);
}

static void earliest(int64_t *at, int64_t t)
{
	if (t && (*at < 0 || t < *at))
		*at = t;
}

int64_t rs_mc_next_wake(const struct rs_mc_core *mc)
{
	int64_t at = -1;

	if (!mc->started)
		return -1;
	for (int i = 0; i < 2; i++)
		if (mc->links[i].state != MC_LINK_FREE)
			earliest(&at, mc->links[i].deadline_ms);
	earliest(&at, mc->retry_at);
	earliest(&at, mc->refresh_at);
	earliest(&at, mc->beat_at);
	return at;
}
