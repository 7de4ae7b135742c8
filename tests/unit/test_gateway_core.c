/* SPDX-License-Identifier: Apache-2.0 */
/* test_gateway_core.c - the sans-I/O gateway core (gateway_core.h) driven by
 * scripted events on a fake clock: fake callbacks record what the core does
 * (frames per link, closes, resumes, store requests handed out) and the test
 * answers the store requests itself.  A fake ledger is kept from the
 * answers given (accepted admissions and recorded claims, minus the LEAVE
 * requests handed out) and the gauges are compared with it after each step.
 * Every expected value is worked out by hand from the configuration below. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ringsteer/gateway_core.h"
#include "ringsteer/proto.h"
#include "ringsteer/token.h"

#define T0_MONO 1000
#define T0_WALL 1700000000000LL /* unix ms: 1700000000 s */
#define HB_MS 1000
#define TTL_MS 3000
#define HELLO_MS 5000
#define HANDOFF_MS 10000
#define GRACE_MS 60000
#define TOKEN_TTL_S 3600
#define PACE_MS 50
#define BUDGET_MS 2000
#define MWAIT_MS 500

#define MAX_LINKS 8
#define MAX_SENT 2048
#define MAX_REQS 64
#define MAX_LEDGER 32

struct sent {
	int link;
	struct rs_frame f;
};

struct ledger_row {
	char member[RS_ID_MAX + 1];
	uint64_t epoch;
};

struct fx {
	struct rs_secret secret;
	struct rs_gw_core_config cfg;
	struct rs_gw_callbacks cb;
	struct rs_gw_core *core;
	struct rs_gw_time now;
	struct rs_gw_link *links[MAX_LINKS + 1]; /* by link number 1..MAX_LINKS */
	struct sent sent[MAX_SENT];
	size_t n_sent;
	int closes[MAX_LINKS + 1];
	int resumes[MAX_LINKS + 1];
	struct rs_gw_store_req *pending[MAX_REQS]; /* handed out, not answered, oldest first */
	size_t n_pending;
	size_t n_held; /* taken from pending by the test, not answered yet */
	size_t n_handed[RS_GW_STORE_DRAINING + 1];  /* handed out so far, per op */
	struct rs_gw_store_req last_leave;
	int exits;
	struct ledger_row ledger[MAX_LEDGER];
	size_t n_ledger;
};

/* ---- fake callbacks ---- */

static int link_no(void *link_user)
{
	return (int)(intptr_t)link_user;
}

static void cb_send(void *user, void *link_user, const struct rs_frame *f)
{
	struct fx *fx = user;

	assert_true(fx->n_sent < MAX_SENT);
	fx->sent[fx->n_sent].link = link_no(link_user);
	fx->sent[fx->n_sent].f = *f;
	fx->n_sent++;
}

static void cb_close(void *user, void *link_user)
{
	((struct fx *)user)->closes[link_no(link_user)]++;
}

static void cb_resume(void *user, void *link_user)
{
	((struct fx *)user)->resumes[link_no(link_user)]++;
}

static void ledger_leave(struct fx *fx, const char *member, uint64_t epoch)
{
	for (size_t i = 0; i < fx->n_ledger; i++)
		if (strcmp(fx->ledger[i].member, member) == 0 && fx->ledger[i].epoch == epoch) {
			fx->ledger[i] = fx->ledger[--fx->n_ledger];
			return;
		}
	fail_msg("LEAVE of %s epoch %llu, which the store was never told of (or told to end twice)", member,
		 (unsigned long long)epoch);
}

static void ledger_add(struct fx *fx, const char *member, uint64_t epoch)
{
	assert_true(fx->n_ledger < MAX_LEDGER);
	snprintf(fx->ledger[fx->n_ledger].member, sizeof(fx->ledger[0].member), "%s", member);
	fx->ledger[fx->n_ledger].epoch = epoch;
	fx->n_ledger++;
}

static int cb_store(void *user, struct rs_gw_store_req *req)
{
	struct fx *fx = user;

	assert_true(fx->n_pending < MAX_REQS);
	assert_string_equal(req->gateway_id, "gw-a");
	fx->pending[fx->n_pending++] = req;
	fx->n_handed[req->op]++;
	/* A session end is the store told at once (the request is its telling). */
	if (req->op == RS_GW_STORE_LEAVE) {
		ledger_leave(fx, req->u.leave.member_id, req->u.leave.epoch);
		fx->last_leave = *req;
	}
	return 0;
}

static void cb_exit(void *user)
{
	((struct fx *)user)->exits++;
}

/* ---- fixture ---- */

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	if (!fx)
		return -1;
	memcpy(fx->secret.key, "0123456789abcdef0123456789abcdef", 32);
	fx->secret.len = 32;
	fx->cfg = (struct rs_gw_core_config){
		.id = "gw-a",
		.advertise_peer = "10.0.0.1:7000",
		.secret = &fx->secret,
		.heartbeat_ms = HB_MS,
		.ttl_ms = TTL_MS,
		.hello_timeout_ms = HELLO_MS,
		.handoff_timeout_ms = HANDOFF_MS,
		.home_grace_ms = GRACE_MS,
		.token_ttl_s = TOKEN_TTL_S,
		.max_frame = RS_FRAME_MAX,
		.registered = true,
		.drain = { .pace_ms = PACE_MS, .budget_ms = BUDGET_MS, .membership_wait_ms = MWAIT_MS,
			   .max_in_flight = 4 },
	};
	fx->cb = (struct rs_gw_callbacks){
		.send = cb_send, .close = cb_close, .resume = cb_resume, .store = cb_store, .exit = cb_exit,
	};
	fx->now = (struct rs_gw_time){ .mono_ms = T0_MONO, .wall_ms = T0_WALL };
	if (rs_gw_core_new(&fx->cfg, &fx->cb, fx, fx->now, &fx->core) != 0) {
		free(fx);
		return -1;
	}
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;

	/* Every request handed out has been answered by the test itself. */
	for (size_t i = 0; i < fx->n_pending; i++)
		print_error("unanswered store request: op %d\n", (int)fx->pending[i]->op);
	assert_int_equal(fx->n_pending, 0);
	assert_int_equal(fx->n_held, 0);
	rs_gw_core_free(fx->core);
	free(fx);
	return 0;
}

static void advance(struct fx *fx, int64_t ms)
{
	fx->now.mono_ms += ms;
	fx->now.wall_ms += ms;
}

static void at(struct fx *fx, int64_t mono_ms)
{
	advance(fx, mono_ms - fx->now.mono_ms);
}

/* The gauges equal the ledger: attached links minus unrecorded ones are the
 * sessions the store was told of; unrecorded is what the test expects. */
static void check(struct fx *fx, uint64_t unrecorded)
{
	struct rs_gw_gauges g;

	rs_gw_core_gauges(fx->core, &g);
	assert_int_equal(g.unrecorded, unrecorded);
	assert_int_equal(g.supervisors - g.unrecorded, fx->n_ledger);
	assert_int_equal(g.store_queue, fx->n_pending + fx->n_held);
}

static const struct rs_gw_counters *ctr(struct fx *fx)
{
	return rs_gw_core_counters(fx->core);
}

static struct rs_gw_link *open_link(struct fx *fx, int no, bool handshaking)
{
	char src[32];

	snprintf(src, sizeof(src), "192.0.2.%d:4000", no);
	assert_int_equal(rs_gw_core_link_open(fx->core, (void *)(intptr_t)no, src, handshaking, fx->now,
					      &fx->links[no]),
			 0);
	return fx->links[no];
}

static void feed(struct fx *fx, int no, const struct rs_frame *f)
{
	uint8_t buf[RS_FRAME_MAX];
	size_t len = 0, used = 99999;

	assert_int_equal(rs_frame_encode(f, buf, sizeof(buf), &len), 0);
	assert_int_equal(rs_gw_core_link_recv(fx->core, fx->links[no], buf, len, &used, fx->now), 0);
	assert_int_equal(used, len);
}

static void hello(struct fx *fx, int no, const char *member, uint64_t epoch, uint8_t flags)
{
	struct rs_frame f = { .version = RS_PROTO_VERSION, .type = RS_FRAME_HELLO };

	snprintf(f.u.hello.member_id, sizeof(f.u.hello.member_id), "%s", member);
	snprintf(f.u.hello.instance_id, sizeof(f.u.hello.instance_id), "inst-%d", no);
	f.u.hello.epoch = epoch;
	f.u.hello.flags = flags;
	f.u.hello.sandboxes = 2;
	/* Expires an hour after the fake wall clock: valid. */
	assert_int_equal(rs_token_mint(&fx->secret, member, (uint64_t)(fx->now.wall_ms / 1000) + 3600,
				       f.u.hello.token, sizeof(f.u.hello.token)),
			 0);
	feed(fx, no, &f);
}

static void frame_of(struct fx *fx, int no, uint8_t type)
{
	struct rs_frame f = { .version = RS_PROTO_VERSION, .type = type };

	feed(fx, no, &f);
}

/* Frames of type sent to link no so far. */
static size_t n_frames(struct fx *fx, int no, uint8_t type)
{
	size_t n = 0;

	for (size_t i = 0; i < fx->n_sent; i++)
		n += fx->sent[i].link == no && fx->sent[i].f.type == type;
	return n;
}

/* The last frame sent to link no, which must be of type. */
static const struct rs_frame *last_frame(struct fx *fx, int no, uint8_t type)
{
	for (size_t i = fx->n_sent; i-- > 0;)
		if (fx->sent[i].link == no && fx->sent[i].f.type != RS_FRAME_HEARTBEAT) {
			assert_int_equal(fx->sent[i].f.type, type);
			return &fx->sent[i].f;
		}
	fail_msg("no frame sent to link %d", no);
	return NULL;
}

static size_t n_pending_op(struct fx *fx, enum rs_gw_store_op op)
{
	size_t n = 0;

	for (size_t i = 0; i < fx->n_pending; i++)
		n += fx->pending[i]->op == op;
	return n;
}

/* Takes the oldest pending request of op out of the pending list. */
static struct rs_gw_store_req *take(struct fx *fx, enum rs_gw_store_op op)
{
	for (size_t i = 0; i < fx->n_pending; i++) {
		struct rs_gw_store_req *r = fx->pending[i];

		if (r->op != op)
			continue;
		memmove(&fx->pending[i], &fx->pending[i + 1], (fx->n_pending - i - 1) * sizeof(fx->pending[0]));
		fx->n_pending--;
		fx->n_held++;
		return r;
	}
	fail_msg("no pending store request of op %d", (int)op);
	return NULL;
}

static void done(struct fx *fx, struct rs_gw_store_req *r, int err)
{
	assert_true(fx->n_held > 0);
	fx->n_held--;
	rs_gw_core_store_done(fx->core, r, err, fx->now);
}

/* Item i of an admission: accepted here (the ledger learns it), or
 * redirected to gw-b. */
static void admit_item(struct fx *fx, struct rs_gw_store_req *r, size_t i, bool accepted)
{
	struct rs_admit *a = &r->u.admit.a[i];

	r->u.admit.errs[i] = 0;
	a->now_ms = fx->now.wall_ms;
	a->accepted = accepted;
	a->decision.cap = 1;
	if (accepted) {
		snprintf(a->target_id, sizeof(a->target_id), "gw-a");
		snprintf(a->target_peer, sizeof(a->target_peer), "10.0.0.1:7000");
		if (!a->handoff && !a->deferred)
			ledger_add(fx, a->member_id, a->epoch);
	} else {
		snprintf(a->target_id, sizeof(a->target_id), "gw-b");
		snprintf(a->target_peer, sizeof(a->target_peer), "10.0.0.2:7000");
	}
}

/* The transaction failed as a whole: every item's outcome is err (as
 * rs_gw_store_run leaves it). */
static void admit_fail(struct fx *fx, struct rs_gw_store_req *r, int err)
{
	for (size_t i = 0; i < r->u.admit.n; i++)
		r->u.admit.errs[i] = err;
	done(fx, r, err);
}

static void answer_heartbeats(struct fx *fx)
{
	while (n_pending_op(fx, RS_GW_STORE_HEARTBEAT) > 0)
		done(fx, take(fx, RS_GW_STORE_HEARTBEAT), 0);
}

/* HELLO on a fresh link, admitted here. */
static void attach_one(struct fx *fx, int no, const char *member, uint64_t epoch)
{
	struct rs_gw_store_req *r;

	open_link(fx, no, false);
	hello(fx, no, member, epoch, 0);
	r = take(fx, RS_GW_STORE_ADMIT);
	assert_int_equal(r->u.admit.n, 1);
	admit_item(fx, r, 0, true);
	done(fx, r, 0);
	assert_int_equal(rs_gw_link_state(fx->links[no]), RS_GW_ATTACHED);
}

/* A link accepted degraded (its admission's store call failed: -EIO). */
static void attach_degraded(struct fx *fx, int no, const char *member, uint64_t epoch)
{
	open_link(fx, no, false);
	hello(fx, no, member, epoch, 0);
	admit_fail(fx, take(fx, RS_GW_STORE_ADMIT), -EIO);
	assert_int_equal(rs_gw_link_state(fx->links[no]), RS_GW_DEGRADED);
}

/* ---- 1. the session states ---- */

/* HANDSHAKE -> HELLO -> PLACING -> ATTACHED, then the peer leaves. */
static void test_handshake_to_attached(void **state)
{
	struct fx *fx = *state;
	struct rs_gw_store_req *r;
	const struct rs_frame *f;

	open_link(fx, 1, true);
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_HANDSHAKE);
	check(fx, 0);
	rs_gw_core_link_secured(fx->core, fx->links[1]);
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_HELLO);
	check(fx, 0);

	hello(fx, 1, "m1", 7, 0);
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_PLACING);
	assert_int_equal(fx->n_pending, 1);
	r = take(fx, RS_GW_STORE_ADMIT);
	assert_int_equal(r->u.admit.n, 1);
	assert_string_equal(r->u.admit.a[0].member_id, "m1");
	assert_string_equal(r->u.admit.a[0].instance_id, "inst-1");
	assert_string_equal(r->u.admit.a[0].source, "192.0.2.1:4000");
	assert_int_equal(r->u.admit.a[0].epoch, 7);
	assert_int_equal(r->u.admit.a[0].sandboxes, 2);
	assert_false(r->u.admit.a[0].stay);
	assert_false(r->u.admit.a[0].handoff);
	assert_int_equal(fx->n_sent, 0); /* nothing before the answer */
	check(fx, 0);

	admit_item(fx, r, 0, true);
	done(fx, r, 0);
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_ATTACHED);
	f = last_frame(fx, 1, RS_FRAME_ACCEPT);
	assert_string_equal(f->u.accept.gateway_id, "gw-a");
	assert_string_equal(f->u.accept.peer, "10.0.0.1:7000");
	assert_int_equal(f->u.accept.heartbeat_ms, HB_MS);
	assert_int_equal(fx->resumes[1], 1);
	assert_int_equal(fx->closes[1], 0);
	assert_int_equal(ctr(fx)->accepts, 1);
	assert_int_equal(ctr(fx)->store_batches, 1);
	assert_int_equal(ctr(fx)->store_batched, 1);
	check(fx, 0);

	/* The peer goes away: its session ends in the store, place kept. */
	rs_gw_core_link_closed(fx->core, fx->links[1], RS_GW_LINK_LOST, fx->now);
	assert_int_equal(fx->n_handed[RS_GW_STORE_LEAVE], 1);
	assert_string_equal(fx->last_leave.u.leave.member_id, "m1");
	assert_int_equal(fx->last_leave.u.leave.epoch, 7);
	assert_int_equal(fx->last_leave.u.leave.grace_ms, GRACE_MS);
	assert_int_equal(ctr(fx)->handoffs_completed, 0);
	check(fx, 0);
	done(fx, take(fx, RS_GW_STORE_LEAVE), 0);
	check(fx, 0);
}

/* PLACING -> CLOSING: the rule sends the member elsewhere. */
static void test_placing_redirect(void **state)
{
	struct fx *fx = *state;
	struct rs_gw_store_req *r;
	const struct rs_frame *f;

	open_link(fx, 1, false);
	hello(fx, 1, "m1", 7, 0);
	r = take(fx, RS_GW_STORE_ADMIT);
	admit_item(fx, r, 0, false);
	done(fx, r, 0);
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_CLOSING);
	f = last_frame(fx, 1, RS_FRAME_REDIRECT);
	assert_string_equal(f->u.redirect.gateway_id, "gw-b");
	assert_string_equal(f->u.redirect.peer, "10.0.0.2:7000");
	assert_int_equal(f->u.redirect.reason, RS_REDIRECT_PLACEMENT);
	assert_int_equal(fx->closes[1], 1);
	assert_int_equal(fx->resumes[1], 0);
	assert_int_equal(ctr(fx)->redirects_placement, 1);
	assert_int_equal(ctr(fx)->accepts, 0);
	check(fx, 0);
	/* Flushed: nothing to tell the store (no session here). */
	rs_gw_core_link_closed(fx->core, fx->links[1], RS_GW_LINK_FLUSHED, fx->now);
	assert_int_equal(fx->n_handed[RS_GW_STORE_LEAVE], 0);
	check(fx, 0);
}

/* PLACING -> DEGRADED (-EIO) -> CLAIMING (heartbeat answered) -> ATTACHED. */
static void test_degraded_claimed(void **state)
{
	struct fx *fx = *state;
	struct rs_gw_store_req *r;
	struct rs_gw_gauges g;

	attach_degraded(fx, 1, "m1", 7);
	last_frame(fx, 1, RS_FRAME_ACCEPT);
	assert_int_equal(fx->resumes[1], 1);
	assert_int_equal(ctr(fx)->degraded_accepts, 1);
	assert_int_equal(ctr(fx)->accepts, 0);
	rs_gw_core_gauges(fx->core, &g);
	assert_false(g.store_up);
	assert_int_equal(g.supervisors, 1);
	check(fx, 1);

	/* The heartbeat is due one interval after the core was made: 2000. */
	assert_int_equal(rs_gw_core_next_wake(fx->core), T0_MONO + HB_MS);
	at(fx, T0_MONO + HB_MS - 1);
	rs_gw_core_tick(fx->core, fx->now);
	assert_int_equal(fx->n_pending, 0);
	at(fx, T0_MONO + HB_MS);
	rs_gw_core_tick(fx->core, fx->now);
	assert_int_equal(n_frames(fx, 1, RS_FRAME_HEARTBEAT), 1);
	r = take(fx, RS_GW_STORE_HEARTBEAT);
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_DEGRADED);
	check(fx, 1);
	done(fx, r, 0); /* the store is back: the degraded session is claimed */
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_CLAIMING);
	check(fx, 1);
	r = take(fx, RS_GW_STORE_CLAIM);
	assert_string_equal(r->u.claim.member_id, "m1");
	assert_string_equal(r->u.claim.instance_id, "inst-1");
	assert_int_equal(r->u.claim.epoch, 7);
	assert_int_equal(r->u.claim.sandboxes, 2);
	/* Answered one TTL after the store's return (2000 + 3000): the view
	 * is settled, so a claim under the cap stays attached, unmarked. */
	at(fx, T0_MONO + HB_MS + TTL_MS);
	r->u.claim.load = 1;
	r->u.claim.cap = 2;
	r->u.claim.above_cap = false;
	ledger_add(fx, "m1", 7);
	done(fx, r, 0);
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_ATTACHED);
	assert_int_equal(ctr(fx)->claims_recorded, 1);
	check(fx, 0);

	rs_gw_core_link_closed(fx->core, fx->links[1], RS_GW_LINK_LOST, fx->now);
	done(fx, take(fx, RS_GW_STORE_LEAVE), 0);
	check(fx, 0);
}

/* CLAIMING -> CLOSING: the store holds a newer epoch. */
static void test_claim_superseded(void **state)
{
	struct fx *fx = *state;
	const struct rs_frame *f;

	attach_degraded(fx, 1, "m1", 7);
	at(fx, T0_MONO + HB_MS);
	rs_gw_core_tick(fx->core, fx->now);
	answer_heartbeats(fx);
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_CLAIMING);
	done(fx, take(fx, RS_GW_STORE_CLAIM), -ESTALE);
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_CLOSING);
	f = last_frame(fx, 1, RS_FRAME_GOODBYE);
	assert_int_equal(f->u.goodbye.reason, RS_GOODBYE_SUPERSEDED);
	assert_int_equal(fx->closes[1], 1);
	assert_int_equal(ctr(fx)->claims_superseded, 1);
	assert_int_equal(ctr(fx)->superseded_closed, 1);
	assert_int_equal(ctr(fx)->claims_recorded, 0);
	/* Unrecorded: no session end to tell. */
	assert_int_equal(fx->n_handed[RS_GW_STORE_LEAVE], 0);
	check(fx, 0);
	rs_gw_core_link_closed(fx->core, fx->links[1], RS_GW_LINK_FLUSHED, fx->now);
	assert_int_equal(fx->n_handed[RS_GW_STORE_LEAVE], 0);
	check(fx, 0);
}

/* Claimed above the cap: ATTACHED -> DEFER_DUE -> DEFER_ASKED -> DEFER_MOVED. */
static void test_deferred_placement(void **state)
{
	struct fx *fx = *state;
	struct rs_gw_store_req *r;
	struct rs_gw_gauges g;
	const struct rs_frame *f;

	attach_degraded(fx, 1, "m1", 7);
	at(fx, T0_MONO + HB_MS); /* 2000 */
	rs_gw_core_tick(fx->core, fx->now);
	answer_heartbeats(fx); /* the store is back at 2000 */
	r = take(fx, RS_GW_STORE_CLAIM);
	at(fx, 5000); /* one TTL after the return: settled */
	r->u.claim.load = 3;
	r->u.claim.cap = 2;
	r->u.claim.above_cap = true;
	ledger_add(fx, "m1", 7);
	done(fx, r, 0);
	/* ATTACHED, then marked at once: DEFER_DUE, its step due now. */
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_DEFER_DUE);
	rs_gw_core_gauges(fx->core, &g);
	assert_int_equal(g.deferred_pending, 1);
	/* The heartbeat due at 3000 (2000 + 1000) is the earliest, overdue. */
	assert_int_equal(rs_gw_core_next_wake(fx->core), 3000);
	check(fx, 0);

	rs_gw_core_tick(fx->core, fx->now); /* 5000: heartbeat (due 3000) and the deferred step */
	answer_heartbeats(fx);
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_DEFER_ASKED);
	check(fx, 0);
	r = take(fx, RS_GW_STORE_ADMIT);
	assert_int_equal(r->u.admit.n, 1);
	assert_true(r->u.admit.a[0].deferred);
	assert_false(r->u.admit.a[0].handoff);
	assert_int_equal(r->u.admit.a[0].epoch, 7);
	admit_item(fx, r, 0, false);
	done(fx, r, 0);
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_DEFER_MOVED);
	f = last_frame(fx, 1, RS_FRAME_REDIRECT);
	assert_string_equal(f->u.redirect.gateway_id, "gw-b");
	assert_int_equal(f->u.redirect.reason, RS_REDIRECT_DRAIN);
	assert_int_equal(ctr(fx)->redirects_deferred, 1);
	rs_gw_core_gauges(fx->core, &g);
	assert_int_equal(g.deferred_pending, 0);
	assert_int_equal(g.supervisors, 1); /* kept until it leaves */
	assert_int_equal(fx->closes[1], 0);
	/* Its deadline: 5000 + 10000. */
	assert_int_equal(rs_gw_core_next_wake(fx->core), 6000); /* the heartbeat first */
	check(fx, 0);

	rs_gw_core_link_closed(fx->core, fx->links[1], RS_GW_LINK_LOST, fx->now);
	assert_int_equal(ctr(fx)->handoffs_completed, 0); /* not a drain's */
	assert_int_equal(rs_gw_core_histogram(fx->core, RS_GW_HIST_HANDOFF)->count, 0); /* nor timed as one */
	done(fx, take(fx, RS_GW_STORE_LEAVE), 0);
	check(fx, 0);
}

/* Starts a drain at the current time (1000) and brings link 1 (attached)
 * to HANDOFF: the membership answered at 1000, the handoff asked at 1050. */
static void drain_to_handoff(struct fx *fx)
{
	struct rs_gw_store_req *r;

	rs_gw_core_drain(fx->core, false, fx->now);
	done(fx, take(fx, RS_GW_STORE_DRAINING), 0);
	assert_int_equal(rs_gw_core_next_wake(fx->core), 1000);
	rs_gw_core_tick(fx->core, fx->now);
	/* Nobody else seen serving yet: membership read, look again a pace later. */
	r = take(fx, RS_GW_STORE_MEMBERSHIP);
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_ATTACHED);
	assert_int_equal(rs_gw_core_next_wake(fx->core), 1050);
	r->u.membership.others_serving = true;
	done(fx, r, 0);
	check(fx, 0);
	at(fx, 1050);
	rs_gw_core_tick(fx->core, fx->now);
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_HANDOFF_ASKED);
	check(fx, 0);
	r = take(fx, RS_GW_STORE_ADMIT);
	assert_int_equal(r->u.admit.n, 1);
	assert_true(r->u.admit.a[0].handoff);
	assert_false(r->u.admit.a[0].deferred);
	admit_item(fx, r, 0, false);
	done(fx, r, 0);
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_HANDOFF);
}

/* ATTACHED -> HANDOFF_ASKED -> HANDOFF on drain; the peer leaves: completed. */
static void test_drain_handoff(void **state)
{
	struct fx *fx = *state;
	const struct rs_frame *f;
	struct rs_gw_gauges g;

	attach_one(fx, 1, "m1", 7);
	check(fx, 0);
	drain_to_handoff(fx);
	f = last_frame(fx, 1, RS_FRAME_REDIRECT);
	assert_string_equal(f->u.redirect.gateway_id, "gw-b");
	assert_string_equal(f->u.redirect.peer, "10.0.0.2:7000");
	assert_int_equal(f->u.redirect.reason, RS_REDIRECT_DRAIN);
	assert_int_equal(ctr(fx)->redirects_drain, 1);
	rs_gw_core_gauges(fx->core, &g);
	assert_true(g.draining);
	assert_false(g.stopping);
	check(fx, 0);

	rs_gw_core_link_closed(fx->core, fx->links[1], RS_GW_LINK_LOST, fx->now);
	assert_int_equal(ctr(fx)->handoffs_completed, 1);
	assert_int_equal(ctr(fx)->handoffs_timed_out, 0);
	/* Draining: its place is not kept here. */
	assert_int_equal(fx->last_leave.u.leave.grace_ms, 0);
	done(fx, take(fx, RS_GW_STORE_LEAVE), 0);
	check(fx, 0);
	/* Nobody left: drained, and staying up (no exit asked). */
	at(fx, rs_gw_core_next_wake(fx->core));
	rs_gw_core_tick(fx->core, fx->now);
	answer_heartbeats(fx);
	assert_int_equal(fx->exits, 0);
	check(fx, 0);
}

/* The HELLO deadline: REJECT hello_timeout, then close. */
static void test_hello_timeout(void **state)
{
	struct fx *fx = *state;
	const struct rs_frame *f;

	open_link(fx, 1, false);
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_HELLO);
	at(fx, T0_MONO + HELLO_MS - 1); /* 5999 */
	rs_gw_core_tick(fx->core, fx->now);
	answer_heartbeats(fx);
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_HELLO);
	assert_int_equal(rs_gw_core_next_wake(fx->core), T0_MONO + HELLO_MS);
	at(fx, T0_MONO + HELLO_MS);
	rs_gw_core_tick(fx->core, fx->now);
	answer_heartbeats(fx);
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_CLOSING);
	f = last_frame(fx, 1, RS_FRAME_REJECT);
	assert_int_equal(f->u.reject.code, RS_REJECT_HELLO_TIMEOUT);
	assert_int_equal(fx->closes[1], 1);
	assert_int_equal(ctr(fx)->rejects[RS_GW_REJECT_HELLO_TIMEOUT], 1);
	check(fx, 0);
	rs_gw_core_link_closed(fx->core, fx->links[1], RS_GW_LINK_FLUSHED, fx->now);
	check(fx, 0);
}

/* A HELLO whose token expires at expiry (minted with the fixture's secret). */
static void hello_expiring(struct fx *fx, int no, const char *member, uint64_t expiry)
{
	struct rs_frame f = { .version = RS_PROTO_VERSION, .type = RS_FRAME_HELLO };

	snprintf(f.u.hello.member_id, sizeof(f.u.hello.member_id), "%s", member);
	snprintf(f.u.hello.instance_id, sizeof(f.u.hello.instance_id), "inst-%d", no);
	f.u.hello.epoch = 1;
	assert_int_equal(rs_token_mint(&fx->secret, member, expiry, f.u.hello.token, sizeof(f.u.hello.token)), 0);
	feed(fx, no, &f);
}

/* The cap on an incoming token's expiry (default 24 h ahead): a token
 * with a good mac that expires further ahead is refused BAD_TOKEN, or a
 * token minted for years (or leaked) would be good for years.  At the cap
 * exactly it is accepted. */
static void test_token_expiry_cap(void **state)
{
	struct fx *fx = *state;
	struct rs_gw_store_req *r;
	const struct rs_frame *f;

	open_link(fx, 1, false);
	hello_expiring(fx, 1, "m1", 1700000000ULL + 86400 + 1);
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_CLOSING);
	f = last_frame(fx, 1, RS_FRAME_REJECT);
	assert_non_null(f);
	assert_int_equal(f->u.reject.code, RS_REJECT_BAD_TOKEN);
	assert_int_equal(ctr(fx)->rejects[RS_GW_REJECT_BAD_TOKEN], 1);
	rs_gw_core_link_closed(fx->core, fx->links[1], RS_GW_LINK_FLUSHED, fx->now);
	open_link(fx, 2, false);
	hello_expiring(fx, 2, "m2", 1700000000ULL + 86400);
	assert_int_equal(rs_gw_link_state(fx->links[2]), RS_GW_PLACING);
	r = take(fx, RS_GW_STORE_ADMIT);
	admit_item(fx, r, 0, true);
	done(fx, r, 0);
	assert_int_equal(rs_gw_link_state(fx->links[2]), RS_GW_ATTACHED);
	assert_int_equal(ctr(fx)->rejects[RS_GW_REJECT_BAD_TOKEN], 1);
	rs_gw_core_link_closed(fx->core, fx->links[2], RS_GW_LINK_LOST, fx->now);
	done(fx, take(fx, RS_GW_STORE_LEAVE), 0);
}

/* ---- 2. admission batching ---- */

static void test_admission_batching(void **state)
{
	struct fx *fx = *state;
	struct rs_gw_store_req *r;
	char m[16];

	for (int i = 1; i <= 4; i++)
		open_link(fx, i, false);
	hello(fx, 1, "m1", 1, 0);
	assert_int_equal(fx->n_pending, 1);
	for (int i = 2; i <= 4; i++) {
		snprintf(m, sizeof(m), "m%d", i);
		hello(fx, i, m, 1, 0);
	}
	/* One batch in flight: the three wait. */
	assert_int_equal(fx->n_pending, 1);
	assert_int_equal(fx->n_handed[RS_GW_STORE_ADMIT], 1);
	for (int i = 2; i <= 4; i++)
		assert_int_equal(rs_gw_link_state(fx->links[i]), RS_GW_PLACING);
	check(fx, 0);

	r = take(fx, RS_GW_STORE_ADMIT);
	admit_item(fx, r, 0, true);
	done(fx, r, 0);
	assert_int_equal(fx->n_handed[RS_GW_STORE_ADMIT], 2);
	assert_int_equal(fx->n_pending, 1);
	check(fx, 0);
	r = take(fx, RS_GW_STORE_ADMIT);
	assert_int_equal(r->u.admit.n, 3);
	assert_string_equal(r->u.admit.a[0].member_id, "m2"); /* oldest first */
	assert_string_equal(r->u.admit.a[1].member_id, "m3");
	assert_string_equal(r->u.admit.a[2].member_id, "m4");
	admit_item(fx, r, 0, true);
	admit_item(fx, r, 1, false);
	admit_item(fx, r, 2, true);
	done(fx, r, 0);
	assert_int_equal(rs_gw_link_state(fx->links[2]), RS_GW_ATTACHED);
	assert_int_equal(rs_gw_link_state(fx->links[3]), RS_GW_CLOSING);
	assert_int_equal(rs_gw_link_state(fx->links[4]), RS_GW_ATTACHED);
	assert_int_equal(ctr(fx)->store_batches, 2);
	assert_int_equal(ctr(fx)->store_batched, 4);
	assert_int_equal(ctr(fx)->accepts, 3);
	assert_int_equal(ctr(fx)->redirects_placement, 1);
	assert_int_equal(fx->n_pending, 0);
	check(fx, 0);

	rs_gw_core_link_closed(fx->core, fx->links[3], RS_GW_LINK_FLUSHED, fx->now);
	for (int i = 1; i <= 4; i += i == 2 ? 2 : 1) {
		rs_gw_core_link_closed(fx->core, fx->links[i], RS_GW_LINK_LOST, fx->now);
		done(fx, take(fx, RS_GW_STORE_LEAVE), 0);
		check(fx, 0);
	}
}

/* ---- 3. a handoff target that fails ---- */

static void test_drain_target_fails(void **state)
{
	struct fx *fx = *state;
	struct rs_gw_store_req *r;
	const struct rs_frame *f;
	int64_t asks[1024];
	size_t n_asks = 0;

	attach_one(fx, 1, "m1", 7);
	rs_gw_core_drain(fx->core, false, fx->now);
	done(fx, take(fx, RS_GW_STORE_DRAINING), 0);
	rs_gw_core_tick(fx->core, fx->now); /* 1000: membership read */
	r = take(fx, RS_GW_STORE_MEMBERSHIP);
	r->u.membership.others_serving = true;
	done(fx, r, 0);
	/* Ticks until the budget (1000 + 2000) closes the rest; every handoff
	 * asked is answered "no gateway takes it" (-ENOENT). */
	while (rs_gw_link_state(fx->links[1]) != RS_GW_CLOSING) {
		assert_true(rs_gw_core_next_wake(fx->core) > fx->now.mono_ms);
		at(fx, rs_gw_core_next_wake(fx->core));
		assert_true(fx->now.mono_ms <= 3000);
		rs_gw_core_tick(fx->core, fx->now);
		answer_heartbeats(fx);
		if (n_pending_op(fx, RS_GW_STORE_ADMIT) == 0)
			continue;
		assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_HANDOFF_ASKED);
		check(fx, 0);
		r = take(fx, RS_GW_STORE_ADMIT);
		assert_true(r->u.admit.a[0].handoff);
		assert_true(n_asks < 1024);
		asks[n_asks++] = fx->now.mono_ms;
		r->u.admit.errs[0] = -ENOENT;
		done(fx, r, 0);
		/* Back to ATTACHED, to be asked again at a later slot. */
		assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_ATTACHED);
		check(fx, 0);
	}
	/* First slot at 1050 (a pace after the membership look at 1000), the
	 * next a pace later; the last one before the budget's end. */
	assert_true(n_asks >= 2);
	assert_int_equal(asks[0], 1050);
	assert_int_equal(asks[1], 1100);
	assert_true(asks[n_asks - 1] < 3000);
	assert_int_equal(fx->now.mono_ms, 3000);
	f = last_frame(fx, 1, RS_FRAME_GOODBYE);
	assert_int_equal(f->u.goodbye.reason, RS_GOODBYE_SHUTDOWN);
	assert_int_equal(fx->closes[1], 1);
	assert_int_equal(ctr(fx)->handoffs_abandoned, 1);
	assert_int_equal(ctr(fx)->handoffs_completed, 0);
	assert_int_equal(ctr(fx)->redirects_drain, 0);
	assert_int_equal(ctr(fx)->store_errors, 0); /* -ENOENT is an answer */
	assert_int_equal(fx->last_leave.u.leave.grace_ms, 0);
	done(fx, take(fx, RS_GW_STORE_LEAVE), 0);
	check(fx, 0);
	assert_int_equal(fx->exits, 0);
	rs_gw_core_link_closed(fx->core, fx->links[1], RS_GW_LINK_FLUSHED, fx->now);
	check(fx, 0);
}

/* ---- 4. a stalled store ---- */

static void test_store_stalled(void **state)
{
	struct fx *fx = *state;
	struct rs_gw_store_req *inflight, *r;
	struct rs_gw_gauges g;

	for (int i = 1; i <= 3; i++)
		open_link(fx, i, false);
	hello(fx, 1, "m1", 1, 0);
	hello(fx, 2, "m2", 1, 0);
	hello(fx, 3, "m3", 1, 0);
	assert_int_equal(fx->n_pending, 1); /* m1's batch; m2, m3 queued */
	check(fx, 0);

	advance(fx, 700);
	rs_gw_core_store_stalled(fx->core, fx->now);
	/* The queued two: accepted degraded at once. */
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_PLACING);
	assert_int_equal(rs_gw_link_state(fx->links[2]), RS_GW_DEGRADED);
	assert_int_equal(rs_gw_link_state(fx->links[3]), RS_GW_DEGRADED);
	last_frame(fx, 2, RS_FRAME_ACCEPT);
	last_frame(fx, 3, RS_FRAME_ACCEPT);
	assert_int_equal(fx->resumes[2], 1);
	assert_int_equal(fx->resumes[3], 1);
	assert_int_equal(ctr(fx)->store_cancelled, 2);
	assert_int_equal(ctr(fx)->degraded_accepts, 2);
	assert_int_equal(fx->n_handed[RS_GW_STORE_ADMIT], 1); /* nothing new asked */
	rs_gw_core_gauges(fx->core, &g);
	assert_false(g.store_up);
	check(fx, 2);

	/* An arrival meanwhile: the store is known away, degraded at once. */
	open_link(fx, 4, false);
	hello(fx, 4, "m4", 1, 0);
	assert_int_equal(rs_gw_link_state(fx->links[4]), RS_GW_DEGRADED);
	assert_int_equal(fx->n_handed[RS_GW_STORE_ADMIT], 1);
	check(fx, 3);

	/* The late answer of m1's batch still counts. */
	inflight = take(fx, RS_GW_STORE_ADMIT);
	assert_int_equal(inflight->u.admit.n, 1);
	assert_string_equal(inflight->u.admit.a[0].member_id, "m1");
	admit_item(fx, inflight, 0, true);
	done(fx, inflight, 0);
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_ATTACHED);
	last_frame(fx, 1, RS_FRAME_ACCEPT);
	assert_int_equal(fx->resumes[1], 1);
	rs_gw_core_gauges(fx->core, &g);
	assert_true(g.store_up);
	assert_int_equal(g.supervisors, 4);
	check(fx, 3);

	/* The heartbeat (2000) claims the three. */
	at(fx, T0_MONO + HB_MS);
	rs_gw_core_tick(fx->core, fx->now);
	answer_heartbeats(fx);
	assert_int_equal(n_pending_op(fx, RS_GW_STORE_CLAIM), 3);
	check(fx, 3);
	at(fx, T0_MONO + HB_MS + TTL_MS);
	for (int i = 0; i < 3; i++) {
		r = take(fx, RS_GW_STORE_CLAIM);
		ledger_add(fx, r->u.claim.member_id, r->u.claim.epoch);
		done(fx, r, 0);
		check(fx, 2 - (uint64_t)i);
	}
	for (int i = 2; i <= 4; i++)
		assert_int_equal(rs_gw_link_state(fx->links[i]), RS_GW_ATTACHED);
	for (int i = 1; i <= 4; i++) {
		rs_gw_core_link_closed(fx->core, fx->links[i], RS_GW_LINK_LOST, fx->now);
		done(fx, take(fx, RS_GW_STORE_LEAVE), 0);
		check(fx, 0);
	}
}

/* A stalled store whose in-flight batch answers late with a failure: the
 * arrival in it is accepted degraded then. */
static void test_store_stalled_late_failure(void **state)
{
	struct fx *fx = *state;

	open_link(fx, 1, false);
	open_link(fx, 2, false);
	hello(fx, 1, "m1", 1, 0);
	hello(fx, 2, "m2", 1, 0);
	rs_gw_core_store_stalled(fx->core, fx->now);
	assert_int_equal(ctr(fx)->store_cancelled, 1);
	check(fx, 1);
	admit_fail(fx, take(fx, RS_GW_STORE_ADMIT), -ETIMEDOUT);
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_DEGRADED);
	assert_int_equal(ctr(fx)->degraded_accepts, 2);
	check(fx, 2);
	/* Unrecorded links leave: nothing owed to the store. */
	rs_gw_core_link_closed(fx->core, fx->links[1], RS_GW_LINK_LOST, fx->now);
	rs_gw_core_link_closed(fx->core, fx->links[2], RS_GW_LINK_LOST, fx->now);
	assert_int_equal(fx->n_handed[RS_GW_STORE_LEAVE], 0);
	check(fx, 0);
}

/* ---- 5. a second SIGTERM ---- */

static void test_second_sigterm(void **state)
{
	struct fx *fx = *state;
	struct rs_gw_gauges g;

	attach_one(fx, 1, "m1", 1);
	attach_one(fx, 2, "m2", 1);
	check(fx, 0);
	rs_gw_core_drain(fx->core, true, fx->now);
	assert_int_equal(fx->n_handed[RS_GW_STORE_DRAINING], 1);
	rs_gw_core_drain(fx->core, true, fx->now); /* the second SIGTERM */
	assert_int_equal(fx->n_handed[RS_GW_STORE_DRAINING], 1);
	rs_gw_core_gauges(fx->core, &g);
	assert_true(g.draining);
	assert_true(g.stopping);
	assert_int_equal(fx->exits, 0);
	check(fx, 0);

	rs_gw_core_stop_now(fx->core, RS_GOODBYE_SHUTDOWN);
	for (int i = 1; i <= 2; i++) {
		const struct rs_frame *f = last_frame(fx, i, RS_FRAME_GOODBYE);

		assert_int_equal(f->u.goodbye.reason, RS_GOODBYE_SHUTDOWN);
		assert_int_equal(n_frames(fx, i, RS_FRAME_GOODBYE), 1);
		assert_int_equal(fx->closes[i], 1);
		assert_int_equal(rs_gw_link_state(fx->links[i]), RS_GW_CLOSING);
	}
	/* No session ended one by one: the caller removes our row with them. */
	assert_int_equal(fx->n_handed[RS_GW_STORE_LEAVE], 0);
	fx->n_ledger = 0;
	check(fx, 0);

	/* Drained: the exit, once. */
	assert_true(rs_gw_core_next_wake(fx->core) <= fx->now.mono_ms);
	rs_gw_core_tick(fx->core, fx->now);
	assert_int_equal(fx->exits, 1);
	advance(fx, 5000);
	rs_gw_core_tick(fx->core, fx->now);
	assert_int_equal(fx->exits, 1);
	assert_int_equal(n_frames(fx, 1, RS_FRAME_GOODBYE), 1);
	assert_int_equal(n_pending_op(fx, RS_GW_STORE_HEARTBEAT), 0); /* leaving: no heartbeat */
	done(fx, take(fx, RS_GW_STORE_DRAINING), 0);
	rs_gw_core_link_closed(fx->core, fx->links[1], RS_GW_LINK_FLUSHED, fx->now);
	rs_gw_core_link_closed(fx->core, fx->links[2], RS_GW_LINK_FLUSHED, fx->now);
	assert_int_equal(fx->n_handed[RS_GW_STORE_LEAVE], 0);
	check(fx, 0);
}

/* A process whose start could not register (the store away: main.c):
 * its first heartbeat writes its row instead of touching the one an
 * earlier process left, and reads no drain from it; later ones touch it
 * and read it (simulator, seed 4439: both gateways of a fleet exited
 * draining while the store was away, their next processes took their old
 * rows' state for a `ringsteerctl drain`, and drained for ever). */
static void test_unregistered_start_registers(void **state)
{
	struct fx *fx = *state;
	struct rs_gw_store_req *r;
	struct rs_gw_gauges g;

	rs_gw_core_free(fx->core);
	fx->cfg.registered = false;
	assert_int_equal(rs_gw_core_new(&fx->cfg, &fx->cb, fx, fx->now, &fx->core), 0);
	rs_gw_core_gauges(fx->core, &g);
	assert_false(g.registered);
	advance(fx, HB_MS);
	rs_gw_core_tick(fx->core, fx->now);
	r = take(fx, RS_GW_STORE_HEARTBEAT);
	assert_true(r->u.heartbeat.register_row);
	assert_false(r->u.heartbeat.check_drain);
	assert_false(r->u.heartbeat.draining);
	r->u.heartbeat.registered = true;
	done(fx, r, 0);
	rs_gw_core_gauges(fx->core, &g);
	assert_true(g.registered);
	assert_false(g.draining);

	/* Registered: the next heartbeat only touches the row, and obeys it. */
	advance(fx, HB_MS);
	rs_gw_core_tick(fx->core, fx->now);
	r = take(fx, RS_GW_STORE_HEARTBEAT);
	assert_false(r->u.heartbeat.register_row);
	assert_true(r->u.heartbeat.check_drain);
	done(fx, r, 0);
	check(fx, 0);
}

/* A failed registering heartbeat leaves the next one registering. */
static void test_unregistered_until_answered(void **state)
{
	struct fx *fx = *state;
	struct rs_gw_store_req *r;

	rs_gw_core_free(fx->core);
	fx->cfg.registered = false;
	assert_int_equal(rs_gw_core_new(&fx->cfg, &fx->cb, fx, fx->now, &fx->core), 0);
	advance(fx, HB_MS);
	rs_gw_core_tick(fx->core, fx->now);
	done(fx, take(fx, RS_GW_STORE_HEARTBEAT), -EIO);
	advance(fx, HB_MS);
	rs_gw_core_tick(fx->core, fx->now);
	r = take(fx, RS_GW_STORE_HEARTBEAT);
	assert_true(r->u.heartbeat.register_row);
	assert_false(r->u.heartbeat.check_drain);
	done(fx, r, 0);
}

/* Whether a registering heartbeat's held list has member at epoch. */
static bool holds(const struct rs_gw_store_req *r, const char *member, uint64_t epoch)
{
	for (size_t i = 0; i < r->u.heartbeat.n_held; i++)
		if (strcmp(r->u.heartbeat.held[i].member_id, member) == 0 && r->u.heartbeat.held[i].epoch == epoch)
			return true;
	return false;
}

/* An unregistered start's first heartbeat ends the earlier process's
 * active rows (D3, seeds 3349 and 2862), so it tells the store which are
 * this process's own, admitted before it: its links' (attached, degraded,
 * being admitted) and the ends it owes, whose rows are still active; not
 * a link that closed with its end told, nor one with no HELLO yet. */
static void test_unregistered_start_lists_held(void **state)
{
	struct fx *fx = *state;
	struct rs_gw_store_req *r;

	rs_gw_core_free(fx->core);
	fx->cfg.registered = false;
	assert_int_equal(rs_gw_core_new(&fx->cfg, &fx->cb, fx, fx->now, &fx->core), 0);
	attach_one(fx, 1, "m1", 5);
	attach_one(fx, 2, "m2", 7);
	attach_one(fx, 3, "m3", 8);
	/* m3 leaves, told: its row is no longer active here. */
	rs_gw_core_link_closed(fx->core, fx->links[3], RS_GW_LINK_LOST, fx->now);
	done(fx, take(fx, RS_GW_STORE_LEAVE), 0);
	/* The store goes away: m4 is accepted degraded, m2's end is owed. */
	attach_degraded(fx, 4, "m4", 9);
	rs_gw_core_link_closed(fx->core, fx->links[2], RS_GW_LINK_LOST, fx->now);
	assert_int_equal(n_pending_op(fx, RS_GW_STORE_LEAVE), 0);
	open_link(fx, 5, false); /* no HELLO yet: no session */
	advance(fx, HB_MS);
	rs_gw_core_tick(fx->core, fx->now);
	r = take(fx, RS_GW_STORE_HEARTBEAT);
	assert_true(r->u.heartbeat.register_row);
	assert_int_equal(r->u.heartbeat.n_held, 3);
	assert_true(holds(r, "m1", 5));
	assert_true(holds(r, "m4", 9));
	assert_true(holds(r, "m2", 7));
	assert_false(holds(r, "m3", 8));
	r->u.heartbeat.registered = true;
	done(fx, r, 0);

	/* Registered: later heartbeats carry no list. */
	while (fx->n_pending)
		done(fx, take(fx, fx->pending[0]->op), 0);
	advance(fx, HB_MS);
	rs_gw_core_tick(fx->core, fx->now);
	r = take(fx, RS_GW_STORE_HEARTBEAT);
	assert_false(r->u.heartbeat.register_row);
	assert_int_equal(r->u.heartbeat.n_held, 0);
	assert_null(r->u.heartbeat.held);
	done(fx, r, 0);
}

/* ---- 6. duplicate epochs ---- */

static void test_duplicate_epochs(void **state)
{
	struct fx *fx = *state;
	struct rs_gw_store_req *r;
	const struct rs_frame *f;

	attach_one(fx, 1, "m1", 5);
	check(fx, 0);
	/* The same epoch again: the store says superseded. */
	open_link(fx, 2, false);
	hello(fx, 2, "m1", 5, 0);
	r = take(fx, RS_GW_STORE_ADMIT);
	r->u.admit.errs[0] = -ESTALE;
	done(fx, r, 0);
	assert_int_equal(rs_gw_link_state(fx->links[2]), RS_GW_CLOSING);
	f = last_frame(fx, 2, RS_FRAME_REJECT);
	assert_int_equal(f->u.reject.code, RS_REJECT_SUPERSEDED);
	assert_int_equal(ctr(fx)->rejects[RS_GW_REJECT_SUPERSEDED], 1);
	assert_int_equal(ctr(fx)->store_errors, 0);
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_ATTACHED); /* untouched */
	assert_int_equal(ctr(fx)->superseded_closed, 0);
	assert_int_equal(fx->n_handed[RS_GW_STORE_LEAVE], 0);
	check(fx, 0);
	rs_gw_core_link_closed(fx->core, fx->links[2], RS_GW_LINK_FLUSHED, fx->now);
	check(fx, 0);

	/* A newer epoch accepted: the older local link is closed. */
	open_link(fx, 3, false);
	hello(fx, 3, "m1", 6, 0);
	r = take(fx, RS_GW_STORE_ADMIT);
	admit_item(fx, r, 0, true);
	done(fx, r, 0);
	assert_int_equal(rs_gw_link_state(fx->links[3]), RS_GW_ATTACHED);
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_CLOSING);
	f = last_frame(fx, 1, RS_FRAME_GOODBYE);
	assert_int_equal(f->u.goodbye.reason, RS_GOODBYE_SUPERSEDED);
	assert_int_equal(ctr(fx)->superseded_closed, 1);
	assert_int_equal(fx->n_handed[RS_GW_STORE_LEAVE], 1);
	assert_int_equal(fx->last_leave.u.leave.epoch, 5);
	check(fx, 0);
	done(fx, take(fx, RS_GW_STORE_LEAVE), 0);
	rs_gw_core_link_closed(fx->core, fx->links[1], RS_GW_LINK_FLUSHED, fx->now);
	assert_int_equal(fx->n_handed[RS_GW_STORE_LEAVE], 1);
	check(fx, 0);
	rs_gw_core_link_closed(fx->core, fx->links[3], RS_GW_LINK_LOST, fx->now);
	assert_int_equal(fx->last_leave.u.leave.epoch, 6);
	done(fx, take(fx, RS_GW_STORE_LEAVE), 0);
	check(fx, 0);
}

/* ---- 7. a refresh during a handoff ---- */

static void test_refresh_during_handoff(void **state)
{
	struct fx *fx = *state;
	const struct rs_frame *f;
	uint64_t expiry = 0;
	/* The wall clock at 1050 ms after start: 1700000000050 ms -> 1700000000 s. */
	const uint64_t want = 1700000000ULL + TOKEN_TTL_S;

	attach_one(fx, 1, "m1", 7);
	drain_to_handoff(fx);
	frame_of(fx, 1, RS_FRAME_REFRESH);
	f = last_frame(fx, 1, RS_FRAME_TOKEN);
	assert_int_equal(f->u.token.expiry, want);
	assert_int_equal(rs_token_verify(&fx->secret, f->u.token.token, "m1", 1700000000ULL, &expiry), 0);
	assert_int_equal(expiry, want);
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_HANDOFF);
	check(fx, 0);
	/* It leaves with a GOODBYE of its own: the handoff completed. */
	{
		struct rs_frame bye = { .version = RS_PROTO_VERSION, .type = RS_FRAME_GOODBYE };

		bye.u.goodbye.reason = RS_GOODBYE_CLOSING;
		feed(fx, 1, &bye);
	}
	assert_int_equal(ctr(fx)->handoffs_completed, 1);
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_CLOSING);
	done(fx, take(fx, RS_GW_STORE_LEAVE), 0);
	check(fx, 0);
	rs_gw_core_link_closed(fx->core, fx->links[1], RS_GW_LINK_FLUSHED, fx->now);
	assert_int_equal(ctr(fx)->handoffs_completed, 1);
	check(fx, 0);
}

/* The handoff deadline: still attached 10 s after its REDIRECT. */
static void test_handoff_deadline(void **state)
{
	struct fx *fx = *state;
	const struct rs_histogram *h;
	const struct rs_frame *f;

	attach_one(fx, 1, "m1", 7);
	drain_to_handoff(fx); /* redirected at 1050 */
	while (rs_gw_link_state(fx->links[1]) == RS_GW_HANDOFF) {
		at(fx, rs_gw_core_next_wake(fx->core));
		rs_gw_core_tick(fx->core, fx->now);
		answer_heartbeats(fx);
	}
	/* The budget (3000) comes before the deadline (11050): abandoned. */
	assert_int_equal(fx->now.mono_ms, 3000);
	f = last_frame(fx, 1, RS_FRAME_GOODBYE);
	assert_int_equal(f->u.goodbye.reason, RS_GOODBYE_SHUTDOWN);
	assert_int_equal(ctr(fx)->handoffs_abandoned, 1);
	/* Its handoff ended there, timed all the same: 3000 - 1050 = 1.95 s,
	 * above the 1 s bound (index 7), within the 2.5 s one (index 8). */
	h = rs_gw_core_histogram(fx->core, RS_GW_HIST_HANDOFF);
	assert_int_equal(h->count, 1);
	assert_int_equal(h->sum_us, 1950000);
	assert_int_equal(rs_histogram_cumulative(h, 7), 0);
	assert_int_equal(rs_histogram_cumulative(h, 8), 1);
	done(fx, take(fx, RS_GW_STORE_LEAVE), 0);
	check(fx, 0);
	rs_gw_core_link_closed(fx->core, fx->links[1], RS_GW_LINK_FLUSHED, fx->now);
	check(fx, 0);
}

/* The store fails a batch while more arrivals are queued behind it: the
 * store is then known away, so the queued ones are accepted degraded at
 * once rather than sent as another batch to wait out another timeout (only
 * the heartbeat probes a store known away). */
static void test_failed_batch_queue_degraded(void **state)
{
	struct fx *fx = *state;

	open_link(fx, 1, false);
	open_link(fx, 2, false);
	hello(fx, 1, "m1", 1, 0);
	hello(fx, 2, "m2", 1, 0);
	assert_int_equal(fx->n_handed[RS_GW_STORE_ADMIT], 1);
	admit_fail(fx, take(fx, RS_GW_STORE_ADMIT), -EIO);
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_DEGRADED);
	assert_int_equal(fx->n_handed[RS_GW_STORE_ADMIT], 1); /* no second batch to a store known away */
	assert_int_equal(rs_gw_link_state(fx->links[2]), RS_GW_DEGRADED);
	last_frame(fx, 2, RS_FRAME_ACCEPT);
	assert_int_equal(ctr(fx)->degraded_accepts, 2);
	assert_int_equal(ctr(fx)->store_cancelled, 1);
	check(fx, 2);
	rs_gw_core_link_closed(fx->core, fx->links[1], RS_GW_LINK_LOST, fx->now);
	rs_gw_core_link_closed(fx->core, fx->links[2], RS_GW_LINK_LOST, fx->now);
	check(fx, 0);
}

/* Drained and exited; a later SIGTERM (rs_gw_core_drain again) does not
 * call exit a second time. */
static void test_exit_once(void **state)
{
	struct fx *fx = *state;

	rs_gw_core_drain(fx->core, true, fx->now);
	done(fx, take(fx, RS_GW_STORE_DRAINING), 0);
	rs_gw_core_tick(fx->core, fx->now); /* nobody attached: drained at once */
	assert_int_equal(fx->exits, 1);
	advance(fx, 10);
	rs_gw_core_drain(fx->core, true, fx->now);
	rs_gw_core_tick(fx->core, fx->now);
	assert_int_equal(fx->exits, 1);
	assert_int_equal(fx->n_pending, 0);
}

/* A link that leaves while its admission is decided: the store's accept
 * is taken back with exactly one LEAVE. */
static void test_left_while_placing(void **state)
{
	struct fx *fx = *state;
	struct rs_gw_store_req *r;

	open_link(fx, 1, false);
	hello(fx, 1, "m1", 3, 0);
	r = take(fx, RS_GW_STORE_ADMIT);
	rs_gw_core_link_closed(fx->core, fx->links[1], RS_GW_LINK_LOST, fx->now);
	assert_int_equal(fx->n_handed[RS_GW_STORE_LEAVE], 0);
	check(fx, 0);
	admit_item(fx, r, 0, true);
	done(fx, r, 0);
	assert_int_equal(fx->n_handed[RS_GW_STORE_LEAVE], 1);
	assert_int_equal(fx->n_sent, 0);
	done(fx, take(fx, RS_GW_STORE_LEAVE), 0);
	check(fx, 0);
}

/* A degraded link during a drain: claimed first, then handed off. */
static void test_drain_claims_degraded(void **state)
{
	struct fx *fx = *state;
	struct rs_gw_store_req *r;

	attach_degraded(fx, 1, "m1", 7);
	/* The store back (heartbeat at 2000), its claim failing again: still degraded. */
	at(fx, 2000);
	rs_gw_core_tick(fx->core, fx->now);
	answer_heartbeats(fx);
	done(fx, take(fx, RS_GW_STORE_CLAIM), -ENOENT);
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_DEGRADED);
	check(fx, 1);
	rs_gw_core_drain(fx->core, false, fx->now);
	done(fx, take(fx, RS_GW_STORE_DRAINING), 0);
	rs_gw_core_tick(fx->core, fx->now);
	r = take(fx, RS_GW_STORE_MEMBERSHIP);
	r->u.membership.others_serving = true;
	done(fx, r, 0);
	at(fx, rs_gw_core_next_wake(fx->core)); /* 2050 */
	rs_gw_core_tick(fx->core, fx->now);
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_CLAIMING);
	r = take(fx, RS_GW_STORE_CLAIM);
	ledger_add(fx, "m1", 7);
	done(fx, r, 0);
	/* Draining: not marked for a deferred placement. */
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_ATTACHED);
	check(fx, 0);
	while (rs_gw_link_state(fx->links[1]) == RS_GW_ATTACHED) {
		at(fx, rs_gw_core_next_wake(fx->core));
		rs_gw_core_tick(fx->core, fx->now);
		answer_heartbeats(fx);
	}
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_HANDOFF_ASKED);
	r = take(fx, RS_GW_STORE_ADMIT);
	admit_item(fx, r, 0, false);
	done(fx, r, 0);
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_HANDOFF);
	rs_gw_core_link_closed(fx->core, fx->links[1], RS_GW_LINK_LOST, fx->now);
	assert_int_equal(ctr(fx)->handoffs_completed, 1);
	done(fx, take(fx, RS_GW_STORE_LEAVE), 0);
	check(fx, 0);
}

/* ---- authenticated floods (issue 25) ---- */

/* A supervisor asking for tokens in a loop gets one per heartbeat: the
 * rest are dropped and counted. */
static void test_refresh_rate_limited(void **state)
{
	struct fx *fx = *state;

	attach_one(fx, 1, "sup-1", 10);
	for (int i = 0; i < 10; i++)
		frame_of(fx, 1, RS_FRAME_REFRESH);
	assert_int_equal(n_frames(fx, 1, RS_FRAME_TOKEN), 1);
	assert_int_equal(ctr(fx)->refresh_limited, 9);
	advance(fx, HB_MS);
	frame_of(fx, 1, RS_FRAME_REFRESH);
	assert_int_equal(n_frames(fx, 1, RS_FRAME_TOKEN), 2);
	answer_heartbeats(fx);
}

/* The store's clock skew the heartbeat read is the gauge's. */
static void test_store_clock_skew_gauge(void **state)
{
	struct fx *fx = *state;
	struct rs_gw_store_req *r;
	struct rs_gw_gauges g;

	advance(fx, HB_MS);
	rs_gw_core_tick(fx->core, fx->now);
	r = take(fx, RS_GW_STORE_HEARTBEAT);
	r->u.heartbeat.clock_skew_ms = -30000;
	done(fx, r, 0);
	rs_gw_core_gauges(fx->core, &g);
	assert_int_equal(g.store_clock_skew_ms, -30000);
}

static void sandboxes_frame(struct fx *fx, int no, uint32_t n)
{
	struct rs_frame f = { .version = RS_PROTO_VERSION, .type = RS_FRAME_SANDBOXES };

	f.u.sandboxes = n;
	feed(fx, no, &f);
}

/* Fifty SANDBOXES frames within one heartbeat are at most one store write
 * then, and the latest value at the next heartbeat: not fifty. */
static void test_sandboxes_coalesced(void **state)
{
	struct fx *fx = *state;
	struct rs_gw_store_req *r;
	struct rs_gw_gauges g;

	attach_one(fx, 1, "sup-1", 10);
	for (uint32_t n = 1; n <= 50; n++)
		sandboxes_frame(fx, 1, n);
	assert_true(n_pending_op(fx, RS_GW_STORE_SANDBOXES) <= 1);
	rs_gw_core_gauges(fx->core, &g);
	assert_int_equal(g.busiest, 50); /* the gauge has the latest at once */
	while (n_pending_op(fx, RS_GW_STORE_SANDBOXES) > 0) {
		r = take(fx, RS_GW_STORE_SANDBOXES);
		assert_int_equal(r->u.sandboxes.count, 1);
		done(fx, r, 0);
	}
	/* The heartbeat writes what is owed: once, the latest value. */
	at(fx, rs_gw_core_next_wake(fx->core));
	rs_gw_core_tick(fx->core, fx->now);
	answer_heartbeats(fx);
	assert_int_equal(n_pending_op(fx, RS_GW_STORE_SANDBOXES), 1);
	r = take(fx, RS_GW_STORE_SANDBOXES);
	assert_int_equal(r->u.sandboxes.count, 50);
	done(fx, r, 0);
	assert_int_equal(fx->n_handed[RS_GW_STORE_SANDBOXES], 2);
	assert_int_equal(ctr(fx)->sandboxes_coalesced, 49);
}

/* A SANDBOXES frame carrying the count the store was last given (the
 * HELLO's 2, written by the admission) writes nothing; a new count is
 * written, and repeating it (a heartbeat later, nothing owed) writes
 * nothing again.  Each skipped frame is counted. */
static void test_sandboxes_unchanged(void **state)
{
	struct fx *fx = *state;
	struct rs_gw_store_req *r;
	struct rs_gw_gauges g;

	attach_one(fx, 1, "sup-1", 10);
	sandboxes_frame(fx, 1, 2);
	assert_int_equal(fx->n_handed[RS_GW_STORE_SANDBOXES], 0);
	assert_int_equal(ctr(fx)->sandboxes_unchanged, 1);
	sandboxes_frame(fx, 1, 3);
	assert_int_equal(n_pending_op(fx, RS_GW_STORE_SANDBOXES), 1);
	r = take(fx, RS_GW_STORE_SANDBOXES);
	assert_int_equal(r->u.sandboxes.count, 3);
	done(fx, r, 0);
	at(fx, rs_gw_core_next_wake(fx->core));
	rs_gw_core_tick(fx->core, fx->now);
	answer_heartbeats(fx);
	sandboxes_frame(fx, 1, 3);
	assert_int_equal(fx->n_handed[RS_GW_STORE_SANDBOXES], 1);
	assert_int_equal(ctr(fx)->sandboxes_unchanged, 2);
	assert_int_equal(ctr(fx)->sandboxes_coalesced, 0);
	rs_gw_core_gauges(fx->core, &g);
	assert_int_equal(g.busiest, 3);
}

/* Store requests handed out and not answered past store_queue_max: a new
 * arrival is accepted degraded (claimed once the queue drains) instead of
 * waiting behind them. */
static void test_store_queue_bounded(void **state)
{
	struct fx *fx = *state;
	char member[16];

	rs_gw_core_free(fx->core);
	fx->cfg.store_queue_max = 4;
	assert_int_equal(rs_gw_core_new(&fx->cfg, &fx->cb, fx, fx->now, &fx->core), 0);
	for (int no = 1; no <= 5; no++) {
		snprintf(member, sizeof(member), "sup-%d", no);
		attach_one(fx, no, member, 10);
	}
	/* Five session ends, none answered: the queue is deep. */
	for (int no = 1; no <= 5; no++)
		rs_gw_core_link_closed(fx->core, fx->links[no], RS_GW_LINK_LOST, fx->now);
	assert_int_equal(n_pending_op(fx, RS_GW_STORE_LEAVE), 4); /* the fifth is owed: the queue is full */
	open_link(fx, 6, false);
	hello(fx, 6, "sup-6", 10, 0);
	assert_int_equal(rs_gw_link_state(fx->links[6]), RS_GW_DEGRADED);
	assert_int_equal(n_pending_op(fx, RS_GW_STORE_ADMIT), 0);
	assert_int_equal(ctr(fx)->store_queue_full, 1);
	/* The queue drains: the degraded arrival is claimed at the heartbeat. */
	while (n_pending_op(fx, RS_GW_STORE_LEAVE) > 0)
		done(fx, take(fx, RS_GW_STORE_LEAVE), 0);
	at(fx, rs_gw_core_next_wake(fx->core));
	rs_gw_core_tick(fx->core, fx->now);
	answer_heartbeats(fx);
	assert_int_equal(n_pending_op(fx, RS_GW_STORE_LEAVE), 1); /* the owed end, told now */
	done(fx, take(fx, RS_GW_STORE_LEAVE), 0);
	assert_int_equal(n_pending_op(fx, RS_GW_STORE_CLAIM), 1);
	done(fx, take(fx, RS_GW_STORE_CLAIM), 0);
	assert_int_equal(rs_gw_link_state(fx->links[6]), RS_GW_ATTACHED);
}

/* ---- latency histograms (timing.c), on the events' own times ---- */

/* Admission bounds (us): 1000, 2500, 5000, 10000, 25000, 50000, ...
 *   link 1: HELLO at 1000, ACCEPT at 1030:   30 ms -> first within 50000 (index 5)
 *   link 2: HELLO at 1030, REDIRECT at 1032:  2 ms -> first within 2500 (index 1)
 *   link 3: HELLO with another member's token: refused, not observed
 * count 2, sum 32000 us. */
static void test_admission_timed(void **state)
{
	struct fx *fx = *state;
	struct rs_frame f = { .version = RS_PROTO_VERSION, .type = RS_FRAME_HELLO };
	const struct rs_histogram *h = rs_gw_core_histogram(fx->core, RS_GW_HIST_ADMISSION);
	struct rs_gw_store_req *r;

	assert_non_null(h);
	assert_null(rs_gw_core_histogram(fx->core, RS_GW_HIST_COUNT));
	open_link(fx, 1, false);
	hello(fx, 1, "m1", 7, 0);
	r = take(fx, RS_GW_STORE_ADMIT);
	at(fx, 1030);
	admit_item(fx, r, 0, true);
	done(fx, r, 0);
	assert_int_equal(h->count, 1);
	assert_int_equal(h->sum_us, 30000);

	open_link(fx, 2, false);
	hello(fx, 2, "m2", 1, 0);
	r = take(fx, RS_GW_STORE_ADMIT);
	at(fx, 1032);
	admit_item(fx, r, 0, false);
	done(fx, r, 0);
	assert_int_equal(rs_gw_link_state(fx->links[2]), RS_GW_CLOSING);
	rs_gw_core_link_closed(fx->core, fx->links[2], RS_GW_LINK_FLUSHED, fx->now);

	open_link(fx, 3, false);
	snprintf(f.u.hello.member_id, sizeof(f.u.hello.member_id), "m3");
	snprintf(f.u.hello.instance_id, sizeof(f.u.hello.instance_id), "inst-3");
	f.u.hello.epoch = 1;
	assert_int_equal(rs_token_mint(&fx->secret, "m1", (uint64_t)(fx->now.wall_ms / 1000) + 3600, f.u.hello.token,
				       sizeof(f.u.hello.token)),
			 0);
	feed(fx, 3, &f);
	assert_int_equal(ctr(fx)->rejects[RS_GW_REJECT_BAD_TOKEN], 1);

	assert_int_equal(h->count, 2);
	assert_int_equal(h->sum_us, 32000);
	assert_int_equal(rs_histogram_cumulative(h, 0), 0);
	assert_int_equal(rs_histogram_cumulative(h, 1), 1);
	assert_int_equal(rs_histogram_cumulative(h, 4), 1);
	assert_int_equal(rs_histogram_cumulative(h, 5), 2);
	assert_int_equal(rs_histogram_cumulative(h, h->n_bounds), 2);
	assert_int_equal(rs_gw_core_histogram(fx->core, RS_GW_HIST_HANDOFF)->count, 0);
	check(fx, 0);
}

/* Handoff bounds (us): 5000, 10000, 25000, 50000, ...  REDIRECT {drain} at
 * 1050, the old link gone at 1090: 40 ms, first within 50000 (index 3). */
static void test_handoff_timed(void **state)
{
	struct fx *fx = *state;
	const struct rs_histogram *h = rs_gw_core_histogram(fx->core, RS_GW_HIST_HANDOFF);

	attach_one(fx, 1, "m1", 7); /* HELLO and ACCEPT at 1000: 0 ms */
	assert_int_equal(rs_histogram_cumulative(rs_gw_core_histogram(fx->core, RS_GW_HIST_ADMISSION), 0), 1);
	drain_to_handoff(fx);
	assert_int_equal(h->count, 0); /* under way */
	at(fx, 1090);
	rs_gw_core_link_closed(fx->core, fx->links[1], RS_GW_LINK_LOST, fx->now);
	assert_int_equal(ctr(fx)->handoffs_completed, 1);
	assert_int_equal(h->count, 1);
	assert_int_equal(h->sum_us, 40000);
	assert_int_equal(rs_histogram_cumulative(h, 2), 0);
	assert_int_equal(rs_histogram_cumulative(h, 3), 1);
	done(fx, take(fx, RS_GW_STORE_LEAVE), 0);
	check(fx, 0);
}

/* ---- 8. a deferred placement outlives its link (D9) ---- */

/* Link 1 of m1 (epoch 7) accepted degraded, the store back at 2000, its
 * claim answered at once above the cap: marked (DEFER_DUE), its placement
 * waiting until one TTL after the return (5000).  Then a blip at 2100: the
 * link is lost, its place kept. */
static void marked_then_lost(struct fx *fx)
{
	struct rs_gw_store_req *r;

	attach_degraded(fx, 1, "m1", 7);
	at(fx, T0_MONO + HB_MS); /* 2000 */
	rs_gw_core_tick(fx->core, fx->now);
	answer_heartbeats(fx);
	r = take(fx, RS_GW_STORE_CLAIM);
	r->u.claim.load = 3;
	r->u.claim.cap = 2;
	r->u.claim.above_cap = true;
	ledger_add(fx, "m1", 7);
	done(fx, r, 0);
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_DEFER_DUE);
	check(fx, 0);
	at(fx, 2100);
	rs_gw_core_link_closed(fx->core, fx->links[1], RS_GW_LINK_LOST, fx->now);
	assert_int_equal(fx->last_leave.u.leave.epoch, 7);
	assert_int_equal(fx->last_leave.u.leave.grace_ms, GRACE_MS);
	done(fx, take(fx, RS_GW_STORE_LEAVE), 0);
	check(fx, 0);
}

/* Its redial asking to stay (epoch 8), accepted here: the new link keeps
 * the mark, and is placed by the rule once the view has settled (5000). */
static void test_deferral_kept_across_redial(void **state)
{
	struct fx *fx = *state;
	struct rs_gw_store_req *r;
	const struct rs_frame *f;
	struct rs_gw_gauges g;

	marked_then_lost(fx);
	at(fx, 2200);
	open_link(fx, 2, false);
	hello(fx, 2, "m1", 8, RS_HELLO_STAY);
	r = take(fx, RS_GW_STORE_ADMIT);
	assert_true(r->u.admit.a[0].stay);
	admit_item(fx, r, 0, true);
	r->u.admit.a[0].decision.reason = RS_REASON_STAY;
	done(fx, r, 0);
	last_frame(fx, 2, RS_FRAME_ACCEPT);
	assert_int_equal(rs_gw_link_state(fx->links[2]), RS_GW_DEFER_DUE);
	rs_gw_core_gauges(fx->core, &g);
	assert_int_equal(g.deferred_pending, 1);
	check(fx, 0);

	/* Nothing asked before 5000 (2000 + TTL). */
	at(fx, 4999);
	rs_gw_core_tick(fx->core, fx->now);
	answer_heartbeats(fx);
	assert_int_equal(n_pending_op(fx, RS_GW_STORE_ADMIT), 0);
	at(fx, 5000);
	rs_gw_core_tick(fx->core, fx->now);
	answer_heartbeats(fx);
	assert_int_equal(rs_gw_link_state(fx->links[2]), RS_GW_DEFER_ASKED);
	r = take(fx, RS_GW_STORE_ADMIT);
	assert_true(r->u.admit.a[0].deferred);
	assert_int_equal(r->u.admit.a[0].epoch, 8);
	admit_item(fx, r, 0, false);
	done(fx, r, 0);
	assert_int_equal(rs_gw_link_state(fx->links[2]), RS_GW_DEFER_MOVED);
	f = last_frame(fx, 2, RS_FRAME_REDIRECT);
	assert_int_equal(f->u.redirect.reason, RS_REDIRECT_DRAIN);
	assert_int_equal(ctr(fx)->redirects_deferred, 1);
	check(fx, 0);
	rs_gw_core_link_closed(fx->core, fx->links[2], RS_GW_LINK_LOST, fx->now);
	done(fx, take(fx, RS_GW_STORE_LEAVE), 0);
	check(fx, 0);
}

/* Its redial without STAY, accepted here: the rule placed it, so the mark
 * is dropped; nor does a later stay of it pick the mark up again. */
static void test_deferral_dropped_when_placed(void **state)
{
	struct fx *fx = *state;
	struct rs_gw_store_req *r;
	struct rs_gw_gauges g;

	marked_then_lost(fx);
	at(fx, 2200);
	attach_one(fx, 2, "m1", 8);
	rs_gw_core_gauges(fx->core, &g);
	assert_int_equal(g.deferred_pending, 0);
	check(fx, 0);
	/* Lost again (unmarked), back asking to stay: nothing to keep. */
	rs_gw_core_link_closed(fx->core, fx->links[2], RS_GW_LINK_LOST, fx->now);
	done(fx, take(fx, RS_GW_STORE_LEAVE), 0);
	open_link(fx, 3, false);
	hello(fx, 3, "m1", 9, RS_HELLO_STAY);
	r = take(fx, RS_GW_STORE_ADMIT);
	admit_item(fx, r, 0, true);
	done(fx, r, 0);
	assert_int_equal(rs_gw_link_state(fx->links[3]), RS_GW_ATTACHED);
	check(fx, 0);
	rs_gw_core_link_closed(fx->core, fx->links[3], RS_GW_LINK_LOST, fx->now);
	done(fx, take(fx, RS_GW_STORE_LEAVE), 0);
	check(fx, 0);
}

/* ---- 9. an admission taken back rewrites the older link's row (D8) ---- */

/* m1 attached on link 1 (epoch 5).  Its refresh redial (link 2, epoch 6,
 * asking to stay) gives up before the store answers; the store accepts it
 * here, so its row is (gw-a, 6).  The gateway takes that back (the row
 * deleted, no place kept: nobody heard the ACCEPT) and then claims link 1
 * again, so that the row is (gw-a, 5), as the gauge counts. */
static void taken_back_with_older_link(struct fx *fx)
{
	struct rs_gw_store_req *r;

	attach_one(fx, 1, "m1", 5);
	open_link(fx, 2, false);
	hello(fx, 2, "m1", 6, RS_HELLO_STAY);
	r = take(fx, RS_GW_STORE_ADMIT);
	rs_gw_core_link_closed(fx->core, fx->links[2], RS_GW_LINK_LOST, fx->now);
	assert_int_equal(fx->n_handed[RS_GW_STORE_LEAVE], 0);
	admit_item(fx, r, 0, true); /* the ledger: m1 at 5 and at 6 */
	r->u.admit.a[0].decision.reason = RS_REASON_STAY;
	done(fx, r, 0);
	assert_int_equal(fx->n_sent, 1); /* link 1's ACCEPT only */
	/* The take-back first, then the claim: the store runs them in order. */
	assert_int_equal(fx->n_pending, 2);
	assert_int_equal(fx->pending[0]->op, RS_GW_STORE_LEAVE);
	assert_int_equal(fx->pending[0]->u.leave.epoch, 6);
	assert_int_equal(fx->pending[0]->u.leave.grace_ms, 0);
	assert_int_equal(fx->pending[1]->op, RS_GW_STORE_CLAIM);
	assert_string_equal(fx->pending[1]->u.claim.member_id, "m1");
	assert_int_equal(fx->pending[1]->u.claim.epoch, 5);
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_CLAIMING);
	/* The store has no row of m1 now (5's was overwritten, 6's deleted):
	 * link 1 is unrecorded until the claim is answered. */
	ledger_leave(fx, "m1", 5);
	check(fx, 1);
	done(fx, take(fx, RS_GW_STORE_LEAVE), 0);
	check(fx, 1);
}

static void test_taken_back_rewrites_older_link(void **state)
{
	struct fx *fx = *state;
	struct rs_gw_store_req *r;
	struct rs_gw_gauges g;

	taken_back_with_older_link(fx);
	r = take(fx, RS_GW_STORE_CLAIM);
	/* Above the cap and right after nothing: the rule placed link 1, so
	 * writing its row again marks nothing for a deferred placement. */
	r->u.claim.load = 2;
	r->u.claim.cap = 1;
	r->u.claim.above_cap = true;
	ledger_add(fx, "m1", 5);
	done(fx, r, 0);
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_ATTACHED);
	rs_gw_core_gauges(fx->core, &g);
	assert_int_equal(g.supervisors, 1);
	assert_int_equal(g.deferred_pending, 0);
	assert_int_equal(fx->closes[1], 0);
	check(fx, 0);
	/* Its end ends the rewritten row. */
	rs_gw_core_link_closed(fx->core, fx->links[1], RS_GW_LINK_LOST, fx->now);
	assert_int_equal(fx->last_leave.u.leave.epoch, 5);
	done(fx, take(fx, RS_GW_STORE_LEAVE), 0);
	check(fx, 0);
}

/* The store away when the claim runs: link 1 stays served, unrecorded,
 * and is claimed again once a heartbeat is answered. */
static void test_taken_back_rewrite_retried(void **state)
{
	struct fx *fx = *state;
	struct rs_gw_store_req *r;

	taken_back_with_older_link(fx);
	done(fx, take(fx, RS_GW_STORE_CLAIM), -EIO);
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_DEGRADED);
	assert_int_equal(fx->closes[1], 0);
	check(fx, 1);
	at(fx, T0_MONO + HB_MS);
	rs_gw_core_tick(fx->core, fx->now);
	answer_heartbeats(fx);
	r = take(fx, RS_GW_STORE_CLAIM);
	assert_int_equal(r->u.claim.epoch, 5);
	r->u.claim.load = 1;
	r->u.claim.cap = 1;
	ledger_add(fx, "m1", 5);
	done(fx, r, 0);
	assert_int_equal(rs_gw_link_state(fx->links[1]), RS_GW_ATTACHED);
	check(fx, 0);
	rs_gw_core_link_closed(fx->core, fx->links[1], RS_GW_LINK_LOST, fx->now);
	done(fx, take(fx, RS_GW_STORE_LEAVE), 0);
	check(fx, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_handshake_to_attached, setup, teardown),
		cmocka_unit_test_setup_teardown(test_placing_redirect, setup, teardown),
		cmocka_unit_test_setup_teardown(test_degraded_claimed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_claim_superseded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deferred_placement, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drain_handoff, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hello_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_token_expiry_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_admission_batching, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drain_target_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_stalled, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_stalled_late_failure, setup, teardown),
		cmocka_unit_test_setup_teardown(test_second_sigterm, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unregistered_start_registers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unregistered_until_answered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unregistered_start_lists_held, setup, teardown),
		cmocka_unit_test_setup_teardown(test_duplicate_epochs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refresh_during_handoff, setup, teardown),
		cmocka_unit_test_setup_teardown(test_handoff_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_batch_queue_degraded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exit_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_left_while_placing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drain_claims_degraded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refresh_rate_limited, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_clock_skew_gauge, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sandboxes_coalesced, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sandboxes_unchanged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_queue_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_admission_timed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_handoff_timed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deferral_kept_across_redial, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deferral_dropped_when_placed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_taken_back_rewrites_older_link, setup, teardown),
		cmocka_unit_test_setup_teardown(test_taken_back_rewrite_retried, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
