/* SPDX-License-Identifier: Apache-2.0 */
/* test_store_worker.c - the store worker: jobs run off the loop in
 * submission order, consecutive jobs of a batchable kind share one call,
 * answers arrive on the loop in order, a stuck call leaves the loop free
 * and its queued followers can be answered at once, stop runs what is
 * queued. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <event2/event.h>

#include "store/store_worker.h"

/* What the jobs record: the order they ran in and were answered in. */
struct trace {
	pthread_t loop;
	int ran[64], answered[64];
	size_t n_ran, n_answered;
	size_t batches[64]; /* size of each run call */
	size_t n_batches;
	bool off_loop;      /* every run happened on another thread */
	bool on_loop;       /* every answer happened on the loop's thread */
	/* gate: a run of the "gated" kind waits until it opens */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool open;
};

struct item {
	struct trace *t;
	int id;
};

static void run_record(struct rs_store *st, void *const *args, int *errs, size_t n)
{
	struct trace *t = ((struct item *)args[0])->t;

	(void)st;
	t->off_loop = t->off_loop && !pthread_equal(pthread_self(), t->loop);
	t->batches[t->n_batches++] = n;
	for (size_t i = 0; i < n; i++) {
		struct item *it = args[i];

		t->ran[t->n_ran++] = it->id;
		errs[i] = -it->id; /* each job's own answer */
	}
}

static void run_gated(struct rs_store *st, void *const *args, int *errs, size_t n)
{
	struct trace *t = ((struct item *)args[0])->t;

	pthread_mutex_lock(&t->mu);
	while (!t->open)
		pthread_cond_wait(&t->cv, &t->mu);
	pthread_mutex_unlock(&t->mu);
	run_record(st, args, errs, n);
}

static void done_record(void *arg, int err)
{
	struct item *it = arg;
	struct trace *t = it->t;

	t->on_loop = t->on_loop && pthread_equal(pthread_self(), t->loop);
	assert_true(err == -it->id || err == -ECANCELED);
	t->answered[t->n_answered++] = err == -ECANCELED ? 1000 + it->id : it->id;
}

static const struct rs_store_job_kind single = { "single", run_record, done_record, 0 };
static const struct rs_store_job_kind batched = { "batched", run_record, done_record, 4 };
static const struct rs_store_job_kind gated = { "gated", run_gated, done_record, 0 };

static void trace_init(struct trace *t)
{
	memset(t, 0, sizeof(*t));
	t->loop = pthread_self();
	t->off_loop = true;
	t->on_loop = true;
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->cv, NULL);
}

static void gate_open(struct trace *t)
{
	pthread_mutex_lock(&t->mu);
	t->open = true;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Runs the loop until want answers arrived, at most 5 s. */
static void loop_until(struct event_base *base, struct trace *t, size_t want)
{
	int64_t end = mono_ms() + 5000;

	while (t->n_answered < want && mono_ms() < end)
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	assert_int_equal(t->n_answered, want);
}

static void test_order_and_batches(void **state)
{
	struct event_base *base = event_base_new();
	struct rs_store_worker *w;
	struct trace t;
	struct item it[12];
	/* kinds: g b b b b b b s b b s s: the gate holds the worker while the
	 * rest queue, so the batches are known: 4 b, 2 b, s, 2 b, s, s. */
	const struct rs_store_job_kind *kinds[12] = { &gated,  &batched, &batched, &batched, &batched, &batched,
						      &batched, &single, &batched, &batched, &single,  &single };
	static const size_t want_batches[] = { 1, 4, 2, 1, 2, 1, 1 };

	(void)state;
	trace_init(&t);
	assert_non_null(base);
	assert_int_equal(rs_store_worker_start(base, NULL, &w), 0);
	for (int i = 0; i < 12; i++) {
		it[i] = (struct item){ &t, i + 1 };
		assert_int_equal(rs_store_worker_submit(w, kinds[i], &it[i]), 0);
	}
	assert_int_equal(rs_store_worker_pending(w), 12);
	gate_open(&t);
	loop_until(base, &t, 12);
	assert_int_equal(rs_store_worker_pending(w), 0);
	for (int i = 0; i < 12; i++) {
		assert_int_equal(t.ran[i], i + 1);
		assert_int_equal(t.answered[i], i + 1);
	}
	assert_int_equal(t.n_batches, sizeof(want_batches) / sizeof(want_batches[0]));
	for (size_t i = 0; i < t.n_batches; i++)
		assert_int_equal(t.batches[i], want_batches[i]);
	assert_true(t.off_loop);
	assert_true(t.on_loop);
	assert_null(rs_store_worker_stop(w));
	event_base_free(base);
}

/* A stuck call: the loop goes on (a timer fires), the worker says how long
 * it has been busy, queued jobs of a kind are answered at once when
 * cancelled, the others run after the call ends. */
static void timer_fired(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	*(bool *)arg = true;
}

static void test_stuck_call_cancel(void **state)
{
	struct event_base *base = event_base_new();
	struct timeval tv = { 0, 20000 };
	struct rs_store_worker *w;
	struct trace t;
	struct item it[4];
	bool fired = false;
	struct event *ev = evtimer_new(base, timer_fired, &fired);
	int64_t end;

	(void)state;
	trace_init(&t);
	assert_int_equal(rs_store_worker_start(base, NULL, &w), 0);
	for (int i = 0; i < 4; i++)
		it[i] = (struct item){ &t, i + 1 };
	assert_int_equal(rs_store_worker_submit(w, &gated, &it[0]), 0);
	assert_int_equal(rs_store_worker_submit(w, &batched, &it[1]), 0);
	assert_int_equal(rs_store_worker_submit(w, &single, &it[2]), 0);
	assert_int_equal(rs_store_worker_submit(w, &batched, &it[3]), 0);
	evtimer_add(ev, &tv);
	end = mono_ms() + 5000;
	while (!fired && mono_ms() < end)
		event_base_loop(base, EVLOOP_ONCE);
	assert_true(fired); /* the loop ran while the worker is stuck */
	assert_true(rs_store_worker_busy_ms(w) >= 15);
	assert_int_equal(rs_store_worker_cancel(w, &batched, -ECANCELED), 2);
	loop_until(base, &t, 2);
	assert_int_equal(t.answered[0], 1002);
	assert_int_equal(t.answered[1], 1004);
	assert_int_equal(t.n_ran, 0);
	gate_open(&t);
	loop_until(base, &t, 4);
	assert_int_equal(t.answered[2], 1);
	assert_int_equal(t.answered[3], 3);
	assert_int_equal(rs_store_worker_busy_ms(w), 0);
	event_free(ev);
	rs_store_worker_stop(w);
	event_base_free(base);
}

/* Stop runs what is queued and answers it without the loop running;
 * nothing is accepted after. */
static void test_stop_runs_queue(void **state)
{
	struct event_base *base = event_base_new();
	struct rs_store_worker *w;
	struct trace t;
	struct item it[3];
	int fake_store;

	(void)state;
	trace_init(&t);
	t.open = true;
	assert_int_equal(rs_store_worker_start(base, (struct rs_store *)&fake_store, &w), 0);
	for (int i = 0; i < 3; i++) {
		it[i] = (struct item){ &t, i + 1 };
		assert_int_equal(rs_store_worker_submit(w, &single, &it[i]), 0);
	}
	assert_ptr_equal(rs_store_worker_stop(w), &fake_store);
	assert_int_equal(t.n_answered, 3);
	assert_int_equal(t.answered[2], 3);
	event_base_free(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_and_batches),
		cmocka_unit_test(test_stuck_call_cancel),
		cmocka_unit_test(test_stop_runs_queue),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
