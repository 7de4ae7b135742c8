/* SPDX-License-Identifier: Apache-2.0 */
/* test_hostile_epoch.c - issue 25, hole "Hostile epochs": an epoch a peer
 * chose must not lock its member out, fail other arrivals, or leave two
 * links of one member attached.
 *
 *  1. the store compares an arrival's epoch only with the member's live
 *     session: a left session, a lapsed reservation or an active row on a
 *     dead gateway (rows nobody deletes) never makes it superseded, while
 *     a live session keeps its rules (newer wins, equal is the same
 *     connection decided again);
 *  2. an epoch above INT64_MAX (the store's column is signed 64-bit) is
 *     refused by the decoder, and the gateway core counts it as a bad frame;
 *  3. one bad arrival in a batch fails only itself;
 *  4. a second link of a member at the same epoch as its attached one is
 *     refused, and the gauge equals the ledger (a real SQLite store).
 *
 * The store tests run on SQLite, then on PostgreSQL when RS_TEST_PG_URL
 * names a server (a database of its own, emptied per test); the core tests
 * need one ledger only and run on SQLite. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ringsteer/gateway_core.h"
#include "ringsteer/gateway_store.h"
#include "ringsteer/proto.h"
#include "ringsteer/store.h"
#include "ringsteer/token.h"
#include "store_fixture.h"

#define T0 1700000000000LL
#define TTL 15000
#define GRACE 10000
#define EPOCH_TOP ((uint64_t)INT64_MAX)    /* the largest epoch the store can hold */
#define EPOCH_OVER ((uint64_t)INT64_MAX + 1) /* 2^63: one past it */

/* A pass's backend: pg_url empty for SQLite, else its own database. */
struct backend_env {
	char pg_url[700];
};

static struct rs_store *open_store(const struct store_fixture *f, const char *const *ids, size_t n)
{
	const struct rs_store_options opt = { .ttl_ms = TTL, .reservation_ms = 5000 };

	return store_fixture_open(f, &opt, ids, n, T0);
}

/* An arrival that asks to stay where it lands (so the ring's choice does
 * not enter into what these tests check). */
static struct rs_admit stay_at(const char *gw, const char *member, uint64_t epoch, int64_t now)
{
	return (struct rs_admit){ .gateway_id = gw, .member_id = member, .instance_id = "i-1", .epoch = epoch,
				  .stay = true, .sandboxes = 2, .source = "10.1.0.9:40000", .now_ms = now };
}

static void attach_at(struct rs_store *st, const char *gw, const char *member, uint64_t epoch, int64_t now)
{
	struct rs_admit a = stay_at(gw, member, epoch, now);

	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_true(a.accepted);
}

/* ---- 1. an epoch is compared only with the member's live session ---- */

/* The lock-out: epoch 2^63-1, then a disconnect.  The left session
 * (a reservation for the grace, then a lapsed row nobody deletes) never
 * supersedes a later connection, within the grace or after it. */
static void test_left_session_does_not_supersede(void **state)
{
	struct store_fixture *f = *state;
	const char *const ids[] = { "gw-a", "gw-b" };
	struct rs_store *st = open_store(f, ids, 2);
	struct rs_admit a;
	struct rs_session_row row;
	int64_t now = T0 + 10;

	attach_at(st, "gw-a", "m", EPOCH_TOP, now);
	assert_int_equal(rs_store_session_leave(st, "gw-a", "m", EPOCH_TOP, now, GRACE), 0);

	/* Within the grace: the member comes back home. */
	a = stay_at("gw-a", "m", 5, now + 100);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_true(a.accepted);
	assert_true(store_fixture_row(st, "m", now + 100, &row));
	assert_int_equal(row.epoch, 5);
	assert_int_equal(row.state, RS_SESSION_ACTIVE);
	assert_int_equal(store_fixture_gateway(st, "gw-a", now + 100).attached, 1);

	/* Leaves again at the top epoch; past the grace its row lingers,
	 * lapsed. */
	attach_at(st, "gw-a", "m", EPOCH_TOP, now + 200);
	assert_int_equal(rs_store_session_leave(st, "gw-a", "m", EPOCH_TOP, now + 200, GRACE), 0);
	now += 200 + GRACE + 1;
	assert_int_equal(rs_store_heartbeat(st, "gw-a", now), 0);
	assert_int_equal(rs_store_heartbeat(st, "gw-b", now), 0);
	a = stay_at("gw-b", "m", 6, now);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_true(a.accepted);
	assert_true(store_fixture_row(st, "m", now, &row));
	assert_int_equal(row.epoch, 6);
	assert_string_equal(row.gateway_id, "gw-b");
	assert_int_equal(store_fixture_gateway(st, "gw-a", now).attached, 0);
	assert_int_equal(store_fixture_gateway(st, "gw-b", now).attached, 1);
	rs_store_close(st);
}

/* A supervisor whose clock once ran ahead, attached at a gateway that then
 * died: its active row there is dead with the gateway, and a lower epoch
 * arriving elsewhere is admitted. */
static void test_dead_gateway_row_does_not_supersede(void **state)
{
	struct store_fixture *f = *state;
	const char *const ids[] = { "gw-a", "gw-b" };
	struct rs_store *st = open_store(f, ids, 2);
	struct rs_admit a;
	struct rs_session_row row;
	int64_t later = T0 + TTL + 1000;

	attach_at(st, "gw-a", "m", EPOCH_TOP, T0 + 10);
	/* gw-a stops beating; gw-b lives on. */
	assert_int_equal(rs_store_heartbeat(st, "gw-b", later), 0);
	a = stay_at("gw-b", "m", 7, later);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_true(a.accepted);
	assert_true(store_fixture_row(st, "m", later, &row));
	assert_int_equal(row.epoch, 7);
	assert_string_equal(row.gateway_id, "gw-b");
	/* The dead row's count left gw-a with it. */
	assert_int_equal(store_fixture_gateway(st, "gw-a", later).attached, 0);
	assert_int_equal(store_fixture_gateway(st, "gw-b", later).attached, 1);
	rs_store_close(st);
}

/* A degraded session's claim compares the same way: a dead row with the
 * top epoch does not close it as superseded, a live newer one does. */
static void test_claim_compares_with_live_session_only(void **state)
{
	struct store_fixture *f = *state;
	const char *const ids[] = { "gw-a", "gw-b" };
	struct rs_store *st = open_store(f, ids, 2);
	struct rs_session_claim c = { .gateway_id = "gw-b", .member_id = "m", .instance_id = "i-2", .epoch = 7,
				      .sandboxes = 1, .source = "" };
	struct rs_session_row row;
	int64_t later = T0 + TTL + 1000;

	attach_at(st, "gw-a", "m", EPOCH_TOP, T0 + 10);
	c.now_ms = later; /* gw-a dead by then */
	assert_int_equal(rs_store_session_claim(st, &c), 0);
	assert_true(store_fixture_row(st, "m", later, &row));
	assert_int_equal(row.epoch, 7);
	assert_string_equal(row.gateway_id, "gw-b");
	assert_int_equal(c.load, 1);
	assert_int_equal(store_fixture_gateway(st, "gw-a", later).attached, 0);

	/* gw-a back, and a newer epoch attached there: this claim is stale. */
	assert_int_equal(rs_store_heartbeat(st, "gw-a", later + 1), 0);
	attach_at(st, "gw-a", "m", 9, later + 1);
	c.epoch = 8;
	c.now_ms = later + 2;
	assert_int_equal(rs_store_session_claim(st, &c), -ESTALE);
	rs_store_close(st);
}

/* A live session keeps the rules it had: a lower epoch is superseded
 * anywhere, an equal one elsewhere, and an equal one where it is attached
 * is the same connection decided again. */
static void test_live_session_still_supersedes(void **state)
{
	struct store_fixture *f = *state;
	const char *const ids[] = { "gw-a", "gw-b" };
	struct rs_store *st = open_store(f, ids, 2);
	struct rs_admit a;
	int64_t now = T0 + 10;

	attach_at(st, "gw-a", "m", 10, now);
	a = stay_at("gw-b", "m", 9, now + 1);
	assert_int_equal(rs_store_admit(st, &a), -ESTALE);
	assert_false(a.accepted);
	a = stay_at("gw-a", "m", 9, now + 1);
	assert_int_equal(rs_store_admit(st, &a), -ESTALE);
	a = stay_at("gw-b", "m", 10, now + 1);
	assert_int_equal(rs_store_admit(st, &a), -ESTALE);
	a = stay_at("gw-a", "m", 10, now + 1);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_true(a.accepted);
	a = stay_at("gw-b", "m", 11, now + 2);
	assert_int_equal(rs_store_admit(st, &a), 0);
	assert_true(a.accepted);
	assert_int_equal(store_fixture_gateway(st, "gw-a", now + 2).attached, 0);
	assert_int_equal(store_fixture_gateway(st, "gw-b", now + 2).attached, 1);
	rs_store_close(st);
}

/* ---- 3. one bad arrival never fails another in its batch ---- */

static void test_batch_bad_item_fails_alone(void **state)
{
	struct store_fixture *f = *state;
	const char *const ids[] = { "gw-a" };
	struct rs_store *st = open_store(f, ids, 1);
	int64_t now = T0 + 10;
	struct rs_admit a[5] = {
		stay_at("gw-a", "m1", 1, now),
		stay_at("gw-a", "m2", EPOCH_OVER, now), /* above the column */
		stay_at("gw-a", "m3", 3, now),
		stay_at("gw-a", "", 4, now),            /* no member id */
		stay_at("gw-a", "m5", 5, now),
	};
	int errs[5] = { 99, 99, 99, 99, 99 };
	struct rs_session_row row;

	a[4].handoff = a[4].deferred = true; /* a kind that does not exist */
	assert_int_equal(rs_store_admit_batch(st, a, 5, errs), 0);
	assert_int_equal(errs[0], 0);
	assert_int_equal(errs[1], -EINVAL);
	assert_int_equal(errs[2], 0);
	assert_int_equal(errs[3], -EINVAL);
	assert_int_equal(errs[4], -EINVAL);
	assert_true(a[0].accepted);
	assert_false(a[1].accepted);
	assert_true(a[2].accepted);
	assert_false(a[3].accepted);
	assert_false(a[4].accepted);
	assert_true(store_fixture_row(st, "m1", now, &row));
	assert_false(store_fixture_row(st, "m2", now, &row));
	assert_true(store_fixture_row(st, "m3", now, &row));
	assert_int_equal(store_fixture_gateway(st, "gw-a", now).attached, 2);

	/* A batch of nothing but bad arrivals writes nothing and says why. */
	a[0] = stay_at("gw-a", "m6", EPOCH_OVER, now + 1);
	errs[0] = 99;
	assert_int_equal(rs_store_admit_batch(st, a, 1, errs), 0);
	assert_int_equal(errs[0], -EINVAL);
	assert_int_equal(rs_store_admit(st, &a[0]), -EINVAL);
	rs_store_close(st);
}

/* ---- 2. an epoch above INT64_MAX is refused at decode ---- */

/* The HELLO of PROTOCOL.md's example (member sup-0, instance a1, epoch 3,
 * STAY|REDIRECTED, token t0k3n, 12 sandboxes) with its epoch replaced. */
static size_t hello_bytes(uint64_t epoch, uint8_t *buf)
{
	static const uint8_t example[] = { 0x00, 0x00, 0x00, 0x21, 0x01, 0x01, 0x00, 0x05, 0x73, 0x75, 0x70, 0x2d, 0x30,
					   0x00, 0x02, 0x61, 0x31, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x03,
					   0x00, 0x05, 0x74, 0x30, 0x6b, 0x33, 0x6e, 0x00, 0x00, 0x00, 0x0c };
	const size_t at = 17; /* header 6, member 2+5, instance 2+2 */

	memcpy(buf, example, sizeof(example));
	for (int i = 0; i < 8; i++)
		buf[at + (size_t)i] = (uint8_t)(epoch >> (56 - 8 * i));
	return sizeof(example);
}

static void test_decode_refuses_epoch_above_int64(void **state)
{
	uint8_t buf[64];
	struct rs_frame f;
	size_t len, used = 0;

	(void)state;
	len = hello_bytes(3, buf);
	assert_int_equal(rs_frame_decode(buf, len, &f, &used), 0);
	assert_int_equal(f.u.hello.epoch, 3);
	len = hello_bytes(EPOCH_TOP, buf);
	assert_int_equal(rs_frame_decode(buf, len, &f, &used), 0);
	assert_true(f.u.hello.epoch == EPOCH_TOP);
	len = hello_bytes(EPOCH_OVER, buf);
	assert_int_equal(rs_frame_decode(buf, len, &f, &used), -EPROTO);
	len = hello_bytes(UINT64_MAX, buf);
	assert_int_equal(rs_frame_decode(buf, len, &f, &used), -EPROTO);

	/* Nor does the encoder send what the decoder refuses. */
	f = (struct rs_frame){ .version = RS_PROTO_VERSION, .type = RS_FRAME_HELLO };
	snprintf(f.u.hello.member_id, sizeof(f.u.hello.member_id), "sup-0");
	snprintf(f.u.hello.instance_id, sizeof(f.u.hello.instance_id), "a1");
	f.u.hello.epoch = EPOCH_OVER;
	assert_int_equal(rs_frame_encode(&f, buf, sizeof(buf), &len), -EINVAL);
}

/* ---- the gateway core over a real ledger (SQLite) ---- */

#define CORE_WALL T0
#define CORE_MONO 1000
#define MAX_LINKS 4
#define MAX_REQS 16

struct core_fx {
	struct store_fixture *f;
	struct rs_store *st;
	struct rs_secret secret;
	struct rs_gw_core_config cfg;
	struct rs_gw_callbacks cb;
	struct rs_gw_core *core;
	struct rs_gw_time now;
	struct rs_gw_link *links[MAX_LINKS + 1];
	struct rs_frame last[MAX_LINKS + 1]; /* the last frame sent to each link */
	int closes[MAX_LINKS + 1];
	struct rs_gw_store_req *pending[MAX_REQS];
	size_t n_pending;
};

static void cb_send(void *user, void *link_user, const struct rs_frame *f)
{
	struct core_fx *fx = user;

	if (f->type != RS_FRAME_HEARTBEAT)
		fx->last[(intptr_t)link_user] = *f;
}

static void cb_close(void *user, void *link_user)
{
	((struct core_fx *)user)->closes[(intptr_t)link_user]++;
}

static void cb_resume(void *user, void *link_user)
{
	(void)user;
	(void)link_user;
}

static int cb_store(void *user, struct rs_gw_store_req *req)
{
	struct core_fx *fx = user;

	assert_true(fx->n_pending < MAX_REQS);
	fx->pending[fx->n_pending++] = req;
	return 0;
}

static void cb_exit(void *user)
{
	(void)user;
}

static void core_start(struct core_fx *fx, struct store_fixture *f)
{
	const char *const ids[] = { "gw-a" };

	*fx = (struct core_fx){ .f = f };
	fx->st = open_store(f, ids, 1);
	memcpy(fx->secret.key, "0123456789abcdef0123456789abcdef", 32);
	fx->secret.len = 32;
	fx->cfg = (struct rs_gw_core_config){
		.id = "gw-a",
		.advertise_peer = "10.0.0.1:7001",
		.secret = &fx->secret,
		.heartbeat_ms = 1000,
		.ttl_ms = TTL,
		.hello_timeout_ms = 5000,
		.handoff_timeout_ms = 5000,
		.home_grace_ms = GRACE,
		.token_ttl_s = 3600,
		.max_frame = RS_FRAME_MAX,
		.registered = true,
		.drain = { .pace_ms = 50, .budget_ms = 2000, .membership_wait_ms = 500, .max_in_flight = 4 },
	};
	fx->cb = (struct rs_gw_callbacks){
		.send = cb_send, .close = cb_close, .resume = cb_resume, .store = cb_store, .exit = cb_exit,
	};
	fx->now = (struct rs_gw_time){ .mono_ms = CORE_MONO, .wall_ms = CORE_WALL + 10 };
	assert_int_equal(rs_gw_core_new(&fx->cfg, &fx->cb, fx, fx->now, &fx->core), 0);
}

/* Runs every store request handed out, oldest first, over the ledger, as
 * the gateway's store worker does (answers may hand out more). */
static void pump(struct core_fx *fx)
{
	while (fx->n_pending > 0) {
		struct rs_gw_store_req *r = fx->pending[0];
		int err;

		memmove(&fx->pending[0], &fx->pending[1], (fx->n_pending - 1) * sizeof(fx->pending[0]));
		fx->n_pending--;
		err = rs_gw_store_run(rs_gw_store_ops_ledger(), fx->st, r, fx->now.wall_ms);
		rs_gw_core_store_done(fx->core, r, err, fx->now);
	}
}

static void core_stop(struct core_fx *fx)
{
	pump(fx);
	rs_gw_core_free(fx->core);
	rs_store_close(fx->st);
}

static void core_open(struct core_fx *fx, int no)
{
	char src[32];

	snprintf(src, sizeof(src), "192.0.2.%d:4000", no);
	assert_int_equal(rs_gw_core_link_open(fx->core, (void *)(intptr_t)no, src, false, fx->now, &fx->links[no]),
			 0);
}

/* A HELLO from member with a valid token, encoded at epoch (as a
 * supervisor would), then its epoch bytes set to wire_epoch: a peer
 * writes any bytes it likes. */
static void core_hello(struct core_fx *fx, int no, const char *member, uint64_t epoch, uint64_t wire_epoch)
{
	struct rs_frame f = { .version = RS_PROTO_VERSION, .type = RS_FRAME_HELLO };
	uint8_t buf[RS_FRAME_MAX];
	size_t len = 0, used = 0, at;

	snprintf(f.u.hello.member_id, sizeof(f.u.hello.member_id), "%s", member);
	snprintf(f.u.hello.instance_id, sizeof(f.u.hello.instance_id), "inst-%d", no);
	f.u.hello.epoch = epoch;
	f.u.hello.sandboxes = 2;
	assert_int_equal(rs_token_mint(&fx->secret, member, (uint64_t)(fx->now.wall_ms / 1000) + 3600,
				       f.u.hello.token, sizeof(f.u.hello.token)),
			 0);
	assert_int_equal(rs_frame_encode(&f, buf, sizeof(buf), &len), 0);
	at = 6 + 2 + strlen(member) + 2 + strlen(f.u.hello.instance_id);
	for (int i = 0; i < 8; i++)
		buf[at + (size_t)i] = (uint8_t)(wire_epoch >> (56 - 8 * i));
	assert_int_equal(rs_gw_core_link_recv(fx->core, fx->links[no], buf, len, &used, fx->now), 0);
}

/* The gauge equals the ledger: attached links here = active rows here. */
static void assert_gauge_is_ledger(struct core_fx *fx, uint64_t expected)
{
	struct rs_gw_gauges g;

	rs_gw_core_gauges(fx->core, &g);
	assert_int_equal(g.supervisors, expected);
	assert_int_equal(store_fixture_gateway(fx->st, "gw-a", fx->now.wall_ms).attached, expected);
}

/* 2, through the core: a HELLO at epoch 2^63 is a bad frame, counted, and
 * never reaches the store; the member's other arrivals are unharmed. */
static void test_core_counts_epoch_above_int64(void **state)
{
	struct core_fx fx;
	const struct rs_gw_counters *c;

	core_start(&fx, *state);
	c = rs_gw_core_counters(fx.core);
	pump(&fx);
	core_open(&fx, 1);
	core_hello(&fx, 1, "m1", 1, EPOCH_OVER);
	assert_int_equal(c->rejects[RS_GW_REJECT_BAD_FRAME], 1);
	assert_int_equal(fx.last[1].type, RS_FRAME_REJECT);
	assert_int_equal(fx.last[1].u.reject.code, RS_REJECT_BAD_FRAME);
	assert_int_equal(fx.closes[1], 1);
	assert_int_equal(fx.n_pending, 0); /* nothing asked of the store */
	pump(&fx);
	assert_int_equal(c->rejects[RS_GW_REJECT_UNAVAILABLE], 0);
	assert_int_equal(c->store_errors, 0);

	core_open(&fx, 2);
	core_hello(&fx, 2, "m1", 2, EPOCH_TOP);
	pump(&fx);
	assert_int_equal(rs_gw_link_state(fx.links[2]), RS_GW_ATTACHED);
	assert_int_equal(fx.last[2].type, RS_FRAME_ACCEPT);
	assert_gauge_is_ledger(&fx, 1);
	core_stop(&fx);
}

/* 4: two links of one member at one epoch, one after the other and in
 * one batch: the newcomer is refused SUPERSEDED, the first stays, and the
 * gauge equals the ledger throughout and after the first leaves. */
static void test_core_same_epoch_twice_one_attached(void **state)
{
	struct core_fx fx;
	const struct rs_gw_counters *c;

	core_start(&fx, *state);
	c = rs_gw_core_counters(fx.core);
	pump(&fx);

	/* One after the other. */
	core_open(&fx, 1);
	core_hello(&fx, 1, "m1", 5, 5);
	pump(&fx);
	assert_int_equal(rs_gw_link_state(fx.links[1]), RS_GW_ATTACHED);
	core_open(&fx, 2);
	core_hello(&fx, 2, "m1", 5, 5);
	pump(&fx);
	assert_int_equal(rs_gw_link_state(fx.links[1]), RS_GW_ATTACHED);
	assert_int_not_equal(rs_gw_link_state(fx.links[2]), RS_GW_ATTACHED);
	assert_int_equal(fx.last[2].type, RS_FRAME_REJECT);
	assert_int_equal(fx.last[2].u.reject.code, RS_REJECT_SUPERSEDED);
	assert_int_equal(c->rejects[RS_GW_REJECT_SUPERSEDED], 1);
	assert_gauge_is_ledger(&fx, 1);
	rs_gw_core_link_closed(fx.core, fx.links[2], RS_GW_LINK_FLUSHED, fx.now);
	assert_gauge_is_ledger(&fx, 1);

	/* Both placing at once: the second goes in the next batch, decided
	 * by the store as the same connection again. */
	core_open(&fx, 3);
	core_open(&fx, 4);
	core_hello(&fx, 3, "m2", 8, 8);
	core_hello(&fx, 4, "m2", 8, 8);
	pump(&fx);
	assert_int_equal(rs_gw_link_state(fx.links[3]), RS_GW_ATTACHED);
	assert_int_not_equal(rs_gw_link_state(fx.links[4]), RS_GW_ATTACHED);
	assert_int_equal(fx.last[4].u.reject.code, RS_REJECT_SUPERSEDED);
	assert_gauge_is_ledger(&fx, 2);
	rs_gw_core_link_closed(fx.core, fx.links[4], RS_GW_LINK_FLUSHED, fx.now);

	/* The first leaves: its row goes with it, nothing of the refused
	 * newcomer is left behind. */
	rs_gw_core_link_closed(fx.core, fx.links[1], RS_GW_LINK_LOST, fx.now);
	pump(&fx);
	assert_gauge_is_ledger(&fx, 1);
	core_stop(&fx);
}

#define EPOCH_TEST(fn, pg_url) \
	cmocka_unit_test_prestate_setup_teardown(fn, store_fixture_setup, store_fixture_teardown, pg_url)
#define STORE_TESTS(pg_url)                                          \
	EPOCH_TEST(test_left_session_does_not_supersede, pg_url),    \
	EPOCH_TEST(test_dead_gateway_row_does_not_supersede, pg_url), \
	EPOCH_TEST(test_claim_compares_with_live_session_only, pg_url), \
	EPOCH_TEST(test_live_session_still_supersedes, pg_url),      \
	EPOCH_TEST(test_batch_bad_item_fails_alone, pg_url)

int main(void)
{
	struct backend_env sqlite_env = { .pg_url = "" }, pg_env;
	const struct CMUnitTest sqlite_tests[] = {
		STORE_TESTS(sqlite_env.pg_url),
		cmocka_unit_test(test_decode_refuses_epoch_above_int64),
		EPOCH_TEST(test_core_counts_epoch_above_int64, sqlite_env.pg_url),
		EPOCH_TEST(test_core_same_epoch_twice_one_attached, sqlite_env.pg_url),
	};
	const struct CMUnitTest pg_tests[] = { STORE_TESTS(pg_env.pg_url) };
	const char *base = getenv("RS_TEST_PG_URL");
	char sql[128];
	int failed;

	failed = cmocka_run_group_tests_name("hostile epochs (sqlite)", sqlite_tests, NULL, NULL);
	if (!base || !base[0]) {
		printf("# hostile epochs (postgres): SKIPPED, RS_TEST_PG_URL is not set "
		       "(tests/pg/pg_server.sh start DIR prints one; make pg-test does it all)\n");
		return failed;
	}
	snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS rs_epoch_%ld WITH (FORCE)", (long)getpid());
	if (store_fixture_pg_exec(base, sql) != 0)
		return failed + 1;
	snprintf(sql, sizeof(sql), "CREATE DATABASE rs_epoch_%ld", (long)getpid());
	if (store_fixture_pg_exec(base, sql) != 0)
		return failed + 1;
	snprintf(pg_env.pg_url, sizeof(pg_env.pg_url), "%s%sdbname=rs_epoch_%ld", base,
		 strchr(base, '?') ? "&" : "?", (long)getpid());
	failed += cmocka_run_group_tests_name("hostile epochs (postgres)", pg_tests, NULL, NULL);
	snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS rs_epoch_%ld WITH (FORCE)", (long)getpid());
	store_fixture_pg_exec(base, sql);
	return failed;
}
