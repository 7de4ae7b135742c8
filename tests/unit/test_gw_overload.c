/* SPDX-License-Identifier: Apache-2.0 */
/* test_gw_overload.c - the gateway core's goodput under overload
 * (user/gwcore/overload.c), driven on a fake clock through the public
 * header only: an arrival whose link closed is never asked of the store,
 * one still queued at its deadline is refused with a retry hint, and a
 * store slower than the arrivals makes the core shed new ones at once
 * while it keeps admitting; a store that keeps up sheds nothing.
 *
 * The fake store answers an admission batch a fixed time after it was
 * handed out (batch_ms), everything else at once; arrivals come at a fixed
 * rate.  The figures below are worked from those: a full batch is 128
 * admissions (cfg.admit_batch_max, set so here, the default; the last two
 * tests show what a larger bound changes). */
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
#define T0_WALL 1700000000000LL
#define HB_MS 1000
#define DEADLINE_MS 2000
#define BATCH 128
#define MAX_LINKS 8192
#define MAX_REQS 256

struct fx {
	struct rs_secret secret;
	struct rs_gw_core_config cfg;
	struct rs_gw_callbacks cb;
	struct rs_gw_core *core;
	struct rs_gw_time now;
	struct rs_gw_link *links[MAX_LINKS + 1];
	int64_t hello_ms[MAX_LINKS + 1];
	struct rs_frame last[MAX_LINKS + 1]; /* the last frame sent on each link */
	int64_t last_ms[MAX_LINKS + 1];      /* when */
	int closes[MAX_LINKS + 1];
	bool gone[MAX_LINKS + 1];            /* rs_gw_core_link_closed called */
	struct rs_gw_store_req *pending[MAX_REQS];
	int64_t handed_ms[MAX_REQS];
	size_t n_pending;
	size_t n_handed[RS_GW_STORE_DRAINING + 1];
	uint32_t last_leave_grace;
	int n_links;
	int64_t batch_ms; /* how long the fake store takes over a batch of admissions */
};

static void cb_send(void *user, void *link_user, const struct rs_frame *f)
{
	struct fx *fx = user;
	int no = (int)(intptr_t)link_user;

	if (f->type == RS_FRAME_HEARTBEAT)
		return;
	fx->last[no] = *f;
	fx->last_ms[no] = fx->now.mono_ms;
}

static void cb_close(void *user, void *link_user)
{
	((struct fx *)user)->closes[(int)(intptr_t)link_user]++;
}

static void cb_resume(void *user, void *link_user)
{
	(void)user;
	(void)link_user;
}

static int cb_store(void *user, struct rs_gw_store_req *req)
{
	struct fx *fx = user;

	assert_true(fx->n_pending < MAX_REQS);
	fx->handed_ms[fx->n_pending] = fx->now.mono_ms;
	fx->pending[fx->n_pending++] = req;
	fx->n_handed[req->op]++;
	if (req->op == RS_GW_STORE_LEAVE)
		fx->last_leave_grace = req->u.leave.grace_ms;
	return 0;
}

static void cb_exit(void *user)
{
	(void)user;
}

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
		.ttl_ms = 3 * HB_MS,
		.hello_timeout_ms = 5000,
		.handoff_timeout_ms = 5000,
		.home_grace_ms = 60000,
		.token_ttl_s = 3600,
		.max_frame = RS_FRAME_MAX,
		.registered = true,
		.drain = { .pace_ms = 50, .budget_ms = 2000, .membership_wait_ms = 500, .max_in_flight = 4 },
		/* admit_deadline_ms left 0: the default, RS_GW_ADMIT_DEADLINE_DEFAULT_MS */
		.admit_batch_max = BATCH,
	};
	fx->cb = (struct rs_gw_callbacks){
		.send = cb_send, .close = cb_close, .resume = cb_resume, .store = cb_store, .exit = cb_exit,
	};
	fx->now = (struct rs_gw_time){ .mono_ms = T0_MONO, .wall_ms = T0_WALL };
	fx->batch_ms = 50;
	if (rs_gw_core_new(&fx->cfg, &fx->cb, fx, fx->now, &fx->core) != 0) {
		free(fx);
		return -1;
	}
	*state = fx;
	return 0;
}

static void answer(struct fx *fx, size_t i);

static int teardown(void **state)
{
	struct fx *fx = *state;

	/* Requests handed out are the core's: each is given back before it goes. */
	while (fx->n_pending > 0)
		answer(fx, 0);
	rs_gw_core_free(fx->core);
	free(fx);
	return 0;
}

static const struct rs_gw_counters *ctr(struct fx *fx)
{
	return rs_gw_core_counters(fx->core);
}

/* A new link whose HELLO (member "m<no>", epoch 1) is read now. */
static int arrive(struct fx *fx)
{
	struct rs_frame f = { .version = RS_PROTO_VERSION, .type = RS_FRAME_HELLO };
	uint8_t buf[RS_FRAME_MAX];
	size_t len = 0, used = 0;
	int no = ++fx->n_links;
	char src[32];

	assert_true(no <= MAX_LINKS);
	snprintf(src, sizeof(src), "192.0.2.%d:%d", no % 250 + 1, 4000 + no / 250);
	assert_int_equal(rs_gw_core_link_open(fx->core, (void *)(intptr_t)no, src, false, fx->now, &fx->links[no]), 0);
	snprintf(f.u.hello.member_id, sizeof(f.u.hello.member_id), "m%d", no);
	snprintf(f.u.hello.instance_id, sizeof(f.u.hello.instance_id), "inst-%d", no);
	f.u.hello.epoch = 1;
	assert_int_equal(rs_token_mint(&fx->secret, f.u.hello.member_id, (uint64_t)(fx->now.wall_ms / 1000) + 3600,
				       f.u.hello.token, sizeof(f.u.hello.token)),
			 0);
	assert_int_equal(rs_frame_encode(&f, buf, sizeof(buf), &len), 0);
	fx->hello_ms[no] = fx->now.mono_ms;
	assert_int_equal(rs_gw_core_link_recv(fx->core, fx->links[no], buf, len, &used, fx->now), 0);
	assert_int_equal(used, len);
	return no;
}

static void lost(struct fx *fx, int no)
{
	rs_gw_core_link_closed(fx->core, fx->links[no], RS_GW_LINK_LOST, fx->now);
	fx->gone[no] = true;
}

/* Takes pending request i out and answers it: an admission accepts every item. */
static void answer(struct fx *fx, size_t i)
{
	struct rs_gw_store_req *r = fx->pending[i];

	memmove(&fx->pending[i], &fx->pending[i + 1], (fx->n_pending - i - 1) * sizeof(fx->pending[0]));
	memmove(&fx->handed_ms[i], &fx->handed_ms[i + 1], (fx->n_pending - i - 1) * sizeof(fx->handed_ms[0]));
	fx->n_pending--;
	if (r->op == RS_GW_STORE_ADMIT)
		for (size_t k = 0; k < r->u.admit.n; k++) {
			struct rs_admit *a = &r->u.admit.a[k];

			r->u.admit.errs[k] = 0;
			a->now_ms = fx->now.wall_ms;
			a->accepted = true;
			a->decision.cap = 100000;
			snprintf(a->target_id, sizeof(a->target_id), "gw-a");
			snprintf(a->target_peer, sizeof(a->target_peer), "10.0.0.1:7000");
		}
	rs_gw_core_store_done(fx->core, r, 0, fx->now);
}

/* The index of the pending admission batch (at most one), or -1. */
static int pending_admit(struct fx *fx)
{
	for (size_t i = 0; i < fx->n_pending; i++)
		if (fx->pending[i]->op == RS_GW_STORE_ADMIT)
			return (int)i;
	return -1;
}

/* One step of the fake world at now: the store answers what is due, the
 * core's timers run, the links the core closed are flushed. */
static void settle(struct fx *fx)
{
	bool again = true;

	while (again) {
		again = false;
		for (size_t i = 0; i < fx->n_pending; i++) {
			if (fx->pending[i]->op == RS_GW_STORE_ADMIT && fx->now.mono_ms < fx->handed_ms[i] + fx->batch_ms)
				continue;
			answer(fx, i);
			again = true;
			break;
		}
	}
	if (rs_gw_core_next_wake(fx->core) <= fx->now.mono_ms)
		rs_gw_core_tick(fx->core, fx->now);
	for (int no = 1; no <= fx->n_links; no++)
		if (fx->closes[no] && !fx->gone[no]) {
			rs_gw_core_link_closed(fx->core, fx->links[no], RS_GW_LINK_FLUSHED, fx->now);
			fx->gone[no] = true;
		}
}

static void step_to(struct fx *fx, int64_t mono_ms)
{
	fx->now.wall_ms += mono_ms - fx->now.mono_ms;
	fx->now.mono_ms = mono_ms;
	settle(fx);
}

/* What the run did to its arrivals. */
struct tally {
	int accepted, limited, other;
	int late;                 /* ACCEPTs after the member's deadline: admitted for nobody */
	int64_t worst_accept_ms;  /* the longest HELLO to ACCEPT */
	uint32_t hint_min, hint_max;
};

static struct tally tally(struct fx *fx)
{
	struct tally t = { .hint_min = UINT32_MAX };

	for (int no = 1; no <= fx->n_links; no++) {
		const struct rs_frame *f = &fx->last[no];

		if (f->type == RS_FRAME_ACCEPT) {
			t.accepted++;
			t.late += fx->last_ms[no] - fx->hello_ms[no] > DEADLINE_MS;
			if (fx->last_ms[no] - fx->hello_ms[no] > t.worst_accept_ms)
				t.worst_accept_ms = fx->last_ms[no] - fx->hello_ms[no];
		} else if (f->type == RS_FRAME_REJECT && f->u.reject.code == RS_REJECT_LIMIT) {
			t.limited++;
			if (f->u.reject.retry_after_ms < t.hint_min)
				t.hint_min = f->u.reject.retry_after_ms;
			if (f->u.reject.retry_after_ms > t.hint_max)
				t.hint_max = f->u.reject.retry_after_ms;
		} else if (f->type != 0) {
			t.other++;
		}
	}
	return t;
}

/* Runs arrivals at per_100ms every 100 ms (after burst at once) for
 * run_ms, then lets the queue drain; *accepts_per_2s: ACCEPTs per 2 s window. */
static void run(struct fx *fx, int burst, int per_100ms, int64_t run_ms, int *accepts_per_2s, size_t windows)
{
	int64_t t0 = fx->now.mono_ms;
	uint64_t seen = 0;

	for (int i = 0; i < burst; i++)
		arrive(fx);
	for (int64_t t = t0 + 10; t <= t0 + run_ms + 4 * DEADLINE_MS; t += 10) {
		step_to(fx, t);
		if ((t - t0) % 100 == 0 && t - t0 <= run_ms)
			for (int i = 0; i < per_100ms; i++)
				arrive(fx);
		if (accepts_per_2s && (size_t)((t - t0 - 1) / 2000) < windows)
			accepts_per_2s[(t - t0 - 1) / 2000] += (int)(ctr(fx)->accepts - seen);
		seen = ctr(fx)->accepts;
	}
	assert_int_equal(pending_admit(fx), -1); /* drained */
}

/* An arrival whose link closes while queued is never asked of the store;
 * one that closes while its batch is out has its admission taken back,
 * its place not kept.  Both counted. */
static void test_closed_while_queued(void **state)
{
	struct fx *fx = *state;
	struct rs_gw_store_req *r;
	int a, b, c;

	a = arrive(fx); /* alone in the first batch, out now */
	b = arrive(fx);
	c = arrive(fx);
	assert_int_equal(fx->n_handed[RS_GW_STORE_ADMIT], 1);
	lost(fx, b);     /* queued */
	assert_int_equal(ctr(fx)->arrivals_expired, 1);
	lost(fx, a);     /* out */
	assert_int_equal(ctr(fx)->arrivals_expired, 2);
	assert_int_equal(fx->n_handed[RS_GW_STORE_LEAVE], 0);
	answer(fx, (size_t)pending_admit(fx));
	/* a's admission (accepted) taken back at once, no place kept for it. */
	assert_int_equal(fx->n_handed[RS_GW_STORE_LEAVE], 1);
	assert_int_equal(fx->last_leave_grace, 0);
	/* The next batch is c alone: b was dropped unasked. */
	assert_int_equal(fx->n_handed[RS_GW_STORE_ADMIT], 2);
	r = fx->pending[pending_admit(fx)];
	assert_int_equal(r->u.admit.n, 1);
	assert_string_equal(r->u.admit.a[0].member_id, "m3");
	answer(fx, (size_t)pending_admit(fx));
	assert_int_equal(fx->last[c].type, RS_FRAME_ACCEPT);
	assert_int_equal(ctr(fx)->accepts, 1); /* c; a's was discarded */
	assert_int_equal(ctr(fx)->arrivals_expired, 2);
}

/* A queued arrival still waiting at its deadline gets REJECT LIMIT with a
 * retry hint, and is not asked of the store afterwards. */
static void test_queued_past_deadline(void **state)
{
	struct fx *fx = *state;
	int a, b;

	/* No heartbeat within the test: the deadline is the next wake. */
	rs_gw_core_free(fx->core);
	fx->cfg.heartbeat_ms = 60000;
	assert_int_equal(rs_gw_core_new(&fx->cfg, &fx->cb, fx, fx->now, &fx->core), 0);
	a = arrive(fx);            /* its batch out, and the store silent */
	fx->now.mono_ms += 500;
	fx->now.wall_ms += 500;
	b = arrive(fx);            /* queued behind it */
	assert_int_equal(rs_gw_core_next_wake(fx->core), fx->hello_ms[b] + DEADLINE_MS);
	fx->now.mono_ms = fx->hello_ms[b] + DEADLINE_MS - 1;
	rs_gw_core_tick(fx->core, fx->now);
	assert_int_equal(fx->last[b].type, 0);
	fx->now.mono_ms = fx->hello_ms[b] + DEADLINE_MS;
	rs_gw_core_tick(fx->core, fx->now);
	assert_int_equal(fx->last[b].type, RS_FRAME_REJECT);
	assert_int_equal(fx->last[b].u.reject.code, RS_REJECT_LIMIT);
	/* At least a deadline (the queue's pace unknown), spread per member,
	 * at most four deadlines. */
	assert_in_range(fx->last[b].u.reject.retry_after_ms, DEADLINE_MS, 2 * DEADLINE_MS);
	assert_int_equal(fx->closes[b], 1);
	assert_int_equal(ctr(fx)->arrivals_timed_out, 1);
	assert_int_equal(ctr(fx)->rejects[RS_GW_REJECT_LIMIT], 1);
	assert_int_equal(ctr(fx)->arrivals_shed, 0);
	/* The batch already out is not judged by the deadline: its answer
	 * is awaited, and nothing more goes to the store. */
	assert_int_equal(fx->last[a].type, 0);
	rs_gw_core_link_closed(fx->core, fx->links[b], RS_GW_LINK_FLUSHED, fx->now);
	fx->gone[b] = true;
	answer(fx, (size_t)pending_admit(fx));
	assert_int_equal(fx->last[a].type, RS_FRAME_ACCEPT);
	assert_int_equal(fx->n_handed[RS_GW_STORE_ADMIT], 1);
	settle(fx);
}

/* A store that takes 600 ms over a batch (213 admissions a second) and 400
 * arrivals a second for 10 s: the queue would grow without bound, each
 * admission later than the last.  The core sheds instead, with hints
 * spread over the queue's clear time, and keeps the store busy: every 2 s
 * window admits, and no ACCEPT comes later than one batch past its
 * member's deadline. */
static void test_slow_store_sheds(void **state)
{
	struct fx *fx = *state;
	int per2s[8] = { 0 };
	struct tally t;

	fx->batch_ms = 600;
	run(fx, 0, 40, 10000, per2s, 8);
	t = tally(fx);
	print_message("slow store: %d arrivals, %d accepted, %d REJECT LIMIT (%llu shed, %llu timed out), "
		      "hints %u..%u ms, worst accept %lld ms, %d late, accepts per 2 s: %d %d %d %d %d\n",
		      fx->n_links, t.accepted, t.limited, (unsigned long long)ctr(fx)->arrivals_shed,
		      (unsigned long long)ctr(fx)->arrivals_timed_out, t.hint_min, t.hint_max,
		      (long long)t.worst_accept_ms, t.late, per2s[0], per2s[1], per2s[2], per2s[3], per2s[4]);
	assert_int_equal(t.other, 0);
	assert_int_equal(t.accepted + t.limited, fx->n_links); /* everyone answered */
	assert_true(ctr(fx)->arrivals_shed > 0);
	assert_int_equal((uint64_t)t.limited, ctr(fx)->arrivals_shed + ctr(fx)->arrivals_timed_out);
	assert_int_equal((uint64_t)t.limited, ctr(fx)->rejects[RS_GW_REJECT_LIMIT]);
	/* Goodput never zero: each window of the run admits about what the
	 * store can (2 s / 600 ms * 128 = 426): the first, from an idle
	 * start, at least one full batch; each later one three, every
	 * batch full. */
	assert_true(per2s[0] >= BATCH);
	for (int w = 1; w < 5; w++)
		assert_true(per2s[w] >= 3 * BATCH);
	assert_true(t.worst_accept_ms <= DEADLINE_MS + fx->batch_ms);
	/* And they are admissions someone waits for: at most 5% come after
	 * their member's deadline (the deadline alone, without shedding,
	 * admits the queue's tail late: 1,934 of 2,433 in this run). */
	assert_true(t.late * 20 <= t.accepted);
	/* Spread, and bounded. */
	assert_true(t.hint_max > t.hint_min);
	assert_true(t.hint_min >= DEADLINE_MS);
	assert_true(t.hint_max <= 4 * DEADLINE_MS);
}

/* A store that keeps up (50 ms a batch: 2,560 a second) through a storm:
 * 1,000 arrivals at once, then 1,000 a second for 5 s.  Nothing is shed
 * and nothing times out: everyone is accepted. */
static void test_normal_storm_sheds_nothing(void **state)
{
	struct fx *fx = *state;
	struct tally t;

	fx->batch_ms = 50;
	run(fx, 1000, 100, 5000, NULL, 0);
	t = tally(fx);
	print_message("normal storm: %d arrivals, %d accepted, worst accept %lld ms\n", fx->n_links, t.accepted,
		      (long long)t.worst_accept_ms);
	assert_int_equal(ctr(fx)->arrivals_shed, 0);
	assert_int_equal(ctr(fx)->arrivals_timed_out, 0);
	assert_int_equal(ctr(fx)->arrivals_expired, 0);
	assert_int_equal(t.accepted, fx->n_links);
	assert_true(t.worst_accept_ms < DEADLINE_MS);
}

/* With a batch bound of 512 a batch takes all that queued while the last
 * was out, up to the bound: 1,500 arrivals at once go as batches of 1,
 * 512, 512 and 475.  A bound past RS_GW_ADMIT_BATCH_LIMIT is refused, and
 * 0 is the default's 128. */
static void test_batches_grow(void **state)
{
	struct fx *fx = *state;
	struct rs_gw_core *other = NULL;
	const size_t want[] = { 1, 512, 512, 475 };

	rs_gw_core_free(fx->core);
	fx->cfg.admit_batch_max = 512;
	assert_int_equal(rs_gw_core_new(&fx->cfg, &fx->cb, fx, fx->now, &fx->core), 0);
	for (int i = 0; i < 1500; i++)
		arrive(fx);
	for (size_t k = 0; k < 4; k++) {
		int p = pending_admit(fx);

		assert_true(p >= 0);
		assert_int_equal(fx->pending[p]->u.admit.n, want[k]);
		answer(fx, (size_t)p);
	}
	assert_int_equal(pending_admit(fx), -1);
	assert_int_equal(ctr(fx)->accepts, 1500);
	assert_int_equal(ctr(fx)->store_batches, 4);
	fx->cfg.admit_batch_max = RS_GW_ADMIT_BATCH_LIMIT + 1;
	assert_int_equal(rs_gw_core_new(&fx->cfg, &fx->cb, fx, fx->now, &other), -EINVAL);
	assert_null(other);
	/* The default: 300 queued behind one go as 128, 128 and 44. */
	rs_gw_core_free(fx->core);
	fx->cfg.admit_batch_max = 0;
	assert_int_equal(rs_gw_core_new(&fx->cfg, &fx->cb, fx, fx->now, &fx->core), 0);
	for (int i = 0; i < 301; i++)
		arrive(fx);
	for (size_t k = 0; k < 4; k++) {
		const size_t dflt[] = { 1, 128, 128, 44 };
		int p = pending_admit(fx);

		assert_true(p >= 0);
		assert_int_equal(fx->pending[p]->u.admit.n, dflt[k]);
		answer(fx, (size_t)p);
	}
}

/* The slow store of test_slow_store_sheds (600 ms a batch, 400 arrivals a
 * second for 10 s) with a bound of 512: 240 arrive while a batch is
 * out and the next takes them all, so the store keeps up; nobody is shed
 * or times out, and each waits at most two batches (1,200 ms). */
static void test_slow_store_large_batches(void **state)
{
	struct fx *fx = *state;
	struct tally t;

	rs_gw_core_free(fx->core);
	fx->cfg.admit_batch_max = 512;
	assert_int_equal(rs_gw_core_new(&fx->cfg, &fx->cb, fx, fx->now, &fx->core), 0);
	fx->batch_ms = 600;
	run(fx, 0, 40, 10000, NULL, 0);
	t = tally(fx);
	print_message("slow store, large batches: %d arrivals, %d accepted, worst accept %lld ms\n", fx->n_links,
		      t.accepted, (long long)t.worst_accept_ms);
	assert_int_equal(ctr(fx)->arrivals_shed, 0);
	assert_int_equal(ctr(fx)->arrivals_timed_out, 0);
	assert_int_equal(t.accepted, fx->n_links);
	assert_true(t.worst_accept_ms <= 2 * fx->batch_ms + 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_closed_while_queued, setup, teardown),
		cmocka_unit_test_setup_teardown(test_queued_past_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slow_store_sheds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_normal_storm_sheds_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batches_grow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slow_store_large_batches, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
