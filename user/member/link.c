/* SPDX-License-Identifier: Apache-2.0 */
/* link.c - the member core's two link slots (the attached link and the one
 * being set up), what goes out on them, and the events it reports.  A slot
 * is released in one place, which also opens the gap a lost session leaves
 * (rs_mc_info.lost_at_ms). */
#include <stdio.h>
#include <string.h>

#include "member.h"

void mc_emit(struct rs_mc_core *mc, const struct rs_mc_event *e)
{
	if (mc->cb.event)
		mc->cb.event(mc->user, e);
}

struct rs_mc_link *mc_link_new(struct rs_mc_core *mc, enum rs_mc_via via, bool stay)
{
	struct rs_mc_link *l = mc->links[0].state == MC_LINK_FREE ? &mc->links[0] : &mc->links[1];

	*l = (struct rs_mc_link){ .mc = mc, .state = MC_LINK_QUEUED, .via = via, .stay = stay };
	return l;
}

/* Empties l's slot.  A member that had a session and now has none attached
 * is in a gap from now on, unless l was closed by its gateway for our newer
 * link still on its way here: that link was accepted before this one was
 * closed (make before break), the frames just crossed; should it fail
 * after all, its own release opens the gap then. */
static void release(struct rs_mc_link *l, struct rs_mc_time now)
{
	struct rs_mc_core *mc = l->mc;
	bool superseded = l->superseded;

	if (mc->active == l)
		mc->active = NULL;
	if (mc->pending == l)
		mc->pending = NULL;
	*l = (struct rs_mc_link){ .state = MC_LINK_FREE };
	if (mc->started && mc->ever_attached && !mc->active && !mc->lost_at_ms && !(superseded && mc->pending))
		mc->lost_at_ms = now.mono_ms > 0 ? now.mono_ms : 1;
}

void mc_link_close(struct rs_mc_link *l, struct rs_mc_time now)
{
	struct rs_mc_core *mc = l->mc;

	if (l->state != MC_LINK_FREE && mc->cb.close)
		mc->cb.close(mc->user, l->user);
	release(l, now);
}

void mc_link_forget(struct rs_mc_link *l, struct rs_mc_time now)
{
	release(l, now);
}

void mc_send(struct rs_mc_link *l, const struct rs_frame *f)
{
	l->mc->cb.send(l->mc->user, l->user, f);
}

void mc_send_hello(struct rs_mc_link *l, struct rs_mc_time now)
{
	struct rs_mc_core *mc = l->mc;
	struct rs_frame f = { .version = RS_PROTO_VERSION, .type = RS_FRAME_HELLO };

	l->epoch = mc->next_epoch++;
	snprintf(f.u.hello.member_id, sizeof(f.u.hello.member_id), "%s", mc->cfg.member_id);
	snprintf(f.u.hello.instance_id, sizeof(f.u.hello.instance_id), "%s", mc->cfg.instance_id);
	f.u.hello.epoch = l->epoch;
	f.u.hello.flags = (uint8_t)((l->stay ? RS_HELLO_STAY : 0) | (l->via == RS_MC_VIA_REDIRECT ? RS_HELLO_REDIRECTED : 0));
	memcpy(f.u.hello.token, mc->token, sizeof(f.u.hello.token));
	f.u.hello.sandboxes = mc->cfg.sandboxes;
	l->state = MC_LINK_HELLO_SENT;
	l->deadline_ms = now.mono_ms + mc->cfg.dial_timeout_ms; /* the answer is due within the dial timeout */
	mc_send(l, &f);
}

void mc_goodbye_and_close(struct rs_mc_link *l, struct rs_mc_time now)
{
	struct rs_frame f = { .version = RS_PROTO_VERSION, .type = RS_FRAME_GOODBYE };

	f.u.goodbye.reason = RS_GOODBYE_CLOSING;
	if (l->state == MC_LINK_ATTACHED || l->state == MC_LINK_HELLO_SENT)
		mc_send(l, &f);
	mc_link_close(l, now);
}

void mc_send_sandboxes(struct rs_mc_core *mc)
{
	struct rs_frame f = { .version = RS_PROTO_VERSION, .type = RS_FRAME_SANDBOXES };

	if (!mc->active)
		return;
	f.u.sandboxes = mc->cfg.sandboxes;
	mc_send(mc->active, &f);
}
