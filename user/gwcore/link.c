/* SPDX-License-Identifier: Apache-2.0 */
/* link.c - the gateway core's links: their states, counted per state as
 * they change (the one place a count moves, so the gauges are the states),
 * the member index (an arrival finds its member's other links in O(1):
 * uthash), and what goes out on a link: frames,
 * refusals (counted by reason; the floods a peer can cause without a token
 * are rate limited in the log), closes.  Leaving an attached state ends
 * the session in the store here and nowhere else. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "gwcore.h"

struct gwc_member {
	UT_hash_handle hh;
	struct rs_gw_link *first;
	char id[];
};

static const char *const state_names[RS_GW_STATE_COUNT] = {
	[RS_GW_HANDSHAKE] = "handshake",       [RS_GW_HELLO] = "hello",
	[RS_GW_PLACING] = "placing",           [RS_GW_DEGRADED] = "degraded",
	[RS_GW_CLAIMING] = "claiming",         [RS_GW_ATTACHED] = "attached",
	[RS_GW_DEFER_DUE] = "defer-due",       [RS_GW_DEFER_ASKED] = "defer-asked",
	[RS_GW_HANDOFF_ASKED] = "handoff-asked", [RS_GW_HANDOFF] = "handoff",
	[RS_GW_DEFER_MOVED] = "defer-moved",   [RS_GW_CLOSING] = "closing",
};

const char *rs_gw_state_name(enum rs_gw_session_state s)
{
	return s < RS_GW_STATE_COUNT ? state_names[s] : "unknown";
}

static const char *const reject_labels[RS_GW_REJECT_COUNT] = {
	[RS_GW_REJECT_BAD_FRAME] = "bad_frame",   [RS_GW_REJECT_BAD_VERSION] = "bad_version",
	[RS_GW_REJECT_BAD_TOKEN] = "bad_token",   [RS_GW_REJECT_BAD_MEMBER] = "bad_member",
	[RS_GW_REJECT_HELLO_TIMEOUT] = "hello_timeout", [RS_GW_REJECT_SUPERSEDED] = "superseded",
	[RS_GW_REJECT_UNAVAILABLE] = "unavailable", [RS_GW_REJECT_LIMIT] = "limit",
	[RS_GW_REJECT_FRAME_TOO_LARGE] = "frame_too_large", [RS_GW_REJECT_UNAUTH_PER_SOURCE] = "unauth_per_source",
	[RS_GW_REJECT_UNAUTH_TOTAL] = "unauth_total", [RS_GW_REJECT_SESSIONS] = "sessions",
	[RS_GW_REJECT_TLS_HANDSHAKE] = "tls_handshake", [RS_GW_REJECT_CLIENT_CERT] = "client_cert",
};

const char *rs_gw_reject_label(enum rs_gw_reject r)
{
	return r < RS_GW_REJECT_COUNT ? reject_labels[r] : "unknown";
}

size_t gwc_n_attached(const struct rs_gw_core *core)
{
	size_t n = 0;

	for (int s = RS_GW_DEGRADED; s <= RS_GW_DEFER_MOVED; s++)
		n += core->n_state[s];
	return n;
}

static int member_add(struct rs_gw_core *core, struct rs_gw_link *l)
{
	struct gwc_member *m = NULL;
	size_t len;

	HASH_FIND_STR(core->members, l->member_id, m);
	if (!m) {
		len = strlen(l->member_id);
		m = calloc(1, sizeof(*m) + len + 1);
		if (!m)
			return -ENOMEM;
		memcpy(m->id, l->member_id, len + 1);
		HASH_ADD_KEYPTR(hh, core->members, m->id, len, m);
	}
	l->member_next = m->first;
	m->first = l;
	l->indexed = true;
	return 0;
}

static void member_remove(struct rs_gw_core *core, struct rs_gw_link *l)
{
	struct gwc_member *m = NULL;

	l->indexed = false;
	HASH_FIND_STR(core->members, l->member_id, m);
	if (!m)
		return;
	for (struct rs_gw_link **p = &m->first; *p; p = &(*p)->member_next)
		if (*p == l) {
			*p = l->member_next;
			break;
		}
	l->member_next = NULL;
	if (!m->first) {
		HASH_DEL(core->members, m);
		free(m);
	}
}

struct rs_gw_link *gwc_member_first(const struct rs_gw_core *core, const char *member_id)
{
	struct gwc_member *m = NULL;

	HASH_FIND_STR(core->members, member_id, m);
	return m ? m->first : NULL;
}

void gwc_member_free_all(struct rs_gw_core *core)
{
	struct gwc_member *m, *tmp;

	HASH_ITER(hh, core->members, m, tmp) {
		HASH_DEL(core->members, m);
		free(m);
	}
}

void gwc_set_state(struct rs_gw_link *l, enum rs_gw_session_state s)
{
	struct rs_gw_core *core = l->core;
	bool was = gwc_attached_state(l->state), is = gwc_attached_state(s);

	/* Every way out of a handoff passes here: left, timed out, cut by the
	 * budget or a stop, superseded. */
	if (l->state == RS_GW_HANDOFF && s != RS_GW_HANDOFF)
		gwc_timing_handoff_ended(l);
	/* A link marked for a deferred placement ends before it is decided:
	 * the mark waits for its member's next link here (marks.c). */
	if ((l->state == RS_GW_DEFER_DUE || l->state == RS_GW_DEFER_ASKED) && !is)
		gwc_marks_left(core, l->member_id, l->epoch);
	core->n_state[l->state]--;
	core->n_state[s]++;
	l->state = s;
	if (is && !was && !l->indexed && member_add(core, l) != 0)
		gwc_log(core, "error", "event", "index_failed", "member", l->member_id, "error", "out of memory", NULL);
	if (!is && l->indexed)
		member_remove(core, l);
}

void gwc_send(struct rs_gw_link *l, const struct rs_frame *f)
{
	l->core->cb.send(l->core->user, l->user, f);
}

void gwc_close(struct rs_gw_link *l, bool keep_place)
{
	struct rs_gw_core *core = l->core;

	if (l->state == RS_GW_CLOSING)
		return;
	/* An unrecorded session has no row to end. */
	if (gwc_attached_state(l->state) && l->state != RS_GW_DEGRADED && l->state != RS_GW_CLAIMING)
		gwc_end_session(core, l->member_id, l->epoch, keep_place);
	gwc_req_forget(l);
	gwc_deadline_clear(l);
	gwc_set_state(l, RS_GW_CLOSING);
	core->cb.close(core->user, l->user);
}

#define LOG_BURST 20     /* lines let through at once */
#define LOG_PER_SECOND 5 /* lines per second after the burst */

/* Whether a line may be logged now; *suppressed: lines dropped since the last. */
static bool log_rate_allow(struct gwc_log_rate *r, int64_t now_ms, uint64_t *suppressed)
{
	int64_t elapsed = now_ms - r->last_ms;
	uint64_t credit = r->credit_milli;

	/* A fresh bucket starts full; a clock step back refills nothing. */
	if (r->last_ms == 0)
		credit = LOG_BURST * 1000;
	else if (elapsed > 0)
		credit += (uint64_t)elapsed * LOG_PER_SECOND;
	if (credit > LOG_BURST * 1000)
		credit = LOG_BURST * 1000;
	r->last_ms = now_ms;
	if (credit < 1000) {
		r->credit_milli = (uint32_t)credit;
		r->suppressed++;
		return false;
	}
	r->credit_milli = (uint32_t)(credit - 1000);
	*suppressed = r->suppressed;
	r->suppressed = 0;
	return true;
}

/* The refusals anyone who can connect may cause as fast as they like
 * (nothing authenticated yet): their lines are rate limited. */
static const bool reject_floods[RS_GW_REJECT_COUNT] = {
	[RS_GW_REJECT_BAD_FRAME] = true,       [RS_GW_REJECT_BAD_VERSION] = true,
	[RS_GW_REJECT_BAD_TOKEN] = true,       [RS_GW_REJECT_HELLO_TIMEOUT] = true,
	[RS_GW_REJECT_FRAME_TOO_LARGE] = true, [RS_GW_REJECT_UNAUTH_PER_SOURCE] = true,
	[RS_GW_REJECT_UNAUTH_TOTAL] = true,    [RS_GW_REJECT_TLS_HANDSHAKE] = true,
	[RS_GW_REJECT_LIMIT] = true, /* authenticated, but shed by the thousand under overload */
};

void gwc_note_refusal(struct rs_gw_core *core, enum rs_gw_reject why, const char *source, const char *member,
		      const char *text)
{
	uint64_t dropped = 0;
	char n[24];

	core->counters.rejects[why]++;
	if (reject_floods[why] && !log_rate_allow(&core->reject_log[why], core->now.mono_ms, &dropped))
		return;
	if (dropped == 0) {
		gwc_log(core, "warn", "event", "reject", "reason", rs_gw_reject_label(why), "source", source, "member",
			member, "detail", text, NULL);
		return;
	}
	snprintf(n, sizeof(n), "%llu", (unsigned long long)dropped);
	gwc_log(core, "warn", "event", "reject", "reason", rs_gw_reject_label(why), "source", source, "member", member,
		"detail", text, "suppressed", n, NULL);
}

void gwc_reject_retry(struct rs_gw_link *l, enum rs_gw_reject why, uint16_t code, uint32_t retry_ms, const char *text)
{
	struct rs_frame f = { .version = RS_PROTO_VERSION, .type = RS_FRAME_REJECT };

	gwc_note_refusal(l->core, why, l->source, l->member_id, text);
	f.u.reject.code = code;
	f.u.reject.retry_after_ms = retry_ms;
	snprintf(f.u.reject.text, sizeof(f.u.reject.text), "%s", text);
	gwc_send(l, &f);
	gwc_close(l, true);
}

void gwc_reject(struct rs_gw_link *l, enum rs_gw_reject why, uint16_t code, const char *text)
{
	gwc_reject_retry(l, why, code, 0, text);
}

void gwc_goodbye(struct rs_gw_link *l, uint8_t reason, const char *text)
{
	struct rs_frame f = { .version = RS_PROTO_VERSION, .type = RS_FRAME_GOODBYE };

	f.u.goodbye.reason = reason;
	snprintf(f.u.goodbye.text, sizeof(f.u.goodbye.text), "%s", text);
	gwc_send(l, &f);
	gwc_close(l, true);
}

void gwc_supersede(struct rs_gw_link *l, const char *why)
{
	l->core->counters.superseded_closed++;
	gwc_log(l->core, "info", "event", "superseded", "member", l->member_id, "by", why, NULL);
	gwc_goodbye(l, RS_GOODBYE_SUPERSEDED, "a newer connection of this member took over");
}

void gwc_log_decision(struct rs_gw_link *l, const struct rs_admit *a, bool stay_asked)
{
	char epoch[24], cap[16];

	snprintf(epoch, sizeof(epoch), "%llu", (unsigned long long)a->epoch);
	snprintf(cap, sizeof(cap), "%u", a->decision.cap);
	gwc_log(l->core, "info", "event", "decision", "member", a->member_id, "epoch", epoch, "outcome",
		a->accepted ? "accept" : "redirect", "reason", rs_reason_name(a->decision.reason), "cap", cap, "target",
		a->accepted ? l->core->cfg.id : a->target_id, "stay", stay_asked ? "1" : "0", "source", l->source, NULL);
}
