/* SPDX-License-Identifier: Apache-2.0 */
/* store_worker.c - one thread, one store handle, an ordered queue of jobs
 * in and of answers out (user/store/store_worker.h).
 *
 * The queue and the answers are plain linked lists under one mutex; the
 * worker wakes the loop through an eventfd that a persistent read event on
 * the loop's base drains.  Answers are delivered in the order the jobs were
 * submitted: the worker runs them in that order and appends each answer at
 * the tail, and cancelled jobs are answered through the same list. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "util/mstime.h"
#include "store/store_worker.h"

/* A batch is at most this many jobs whatever the kind says: bounds the
 * worker's scratch arrays. */
#define BATCH_CAP 512

struct job {
	struct job *next;
	const struct rs_store_job_kind *kind;
	void *arg;
	int err;
};

struct rs_store_worker {
	struct rs_store *st;
	struct event_base *base;
	struct event *answer_ev;
	int wake_fd;
	pthread_t thread;
	bool started;

	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct job *queue, *queue_tail;     /* submitted, not started */
	struct job *answers, *answers_tail; /* done on the worker, not delivered */
	size_t pending;                     /* submitted, not delivered */
	int64_t busy_since_ms;              /* 0: idle */
	bool stopping;
};

static void list_append(struct job **head, struct job **tail, struct job *j)
{
	j->next = NULL;
	if (*tail)
		(*tail)->next = j;
	else
		*head = j;
	*tail = j;
}

/* Takes the answers off the worker's list and runs their done callbacks,
 * with the lock released (a callback may submit). */
static void deliver(struct rs_store_worker *w)
{
	struct job *j, *next;
	size_t n = 0;

	pthread_mutex_lock(&w->mu);
	j = w->answers;
	w->answers = w->answers_tail = NULL;
	for (struct job *k = j; k; k = k->next)
		n++;
	w->pending -= n;
	pthread_mutex_unlock(&w->mu);
	for (; j; j = next) {
		next = j->next;
		if (j->kind->done)
			j->kind->done(j->arg, j->err);
		free(j);
	}
}

static void on_answer(evutil_socket_t fd, short what, void *arg)
{
	uint64_t v;

	(void)what;
	/* Nothing to check: the count only says "look", the list says what. */
	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return;
	deliver(arg);
}

static void wake_loop(struct rs_store_worker *w)
{
	uint64_t one = 1;

	/* EAGAIN means the counter is already non-zero: the loop will look. */
	(void)!write(w->wake_fd, &one, sizeof(one));
}

/* Pops the head job and the consecutive jobs of its kind after it, up to
 * its batch size, into batch[]; called with the lock held. */
static size_t take_batch(struct rs_store_worker *w, struct job **batch)
{
	const struct rs_store_job_kind *kind = w->queue->kind;
	size_t max = kind->batch_max > 1 ? kind->batch_max : 1, n = 0;

	if (max > BATCH_CAP)
		max = BATCH_CAP;
	while (w->queue && w->queue->kind == kind && n < max) {
		batch[n++] = w->queue;
		w->queue = w->queue->next;
	}
	if (!w->queue)
		w->queue_tail = NULL;
	return n;
}

static void *worker_main(void *arg)
{
	struct rs_store_worker *w = arg;
	struct job *batch[BATCH_CAP];
	void *args[BATCH_CAP];
	int errs[BATCH_CAP];

	pthread_mutex_lock(&w->mu);
	for (;;) {
		size_t n;

		while (!w->queue && !w->stopping)
			pthread_cond_wait(&w->cv, &w->mu);
		if (!w->queue)
			break; /* stopping, and everything queued has run */
		n = take_batch(w, batch);
		w->busy_since_ms = rs_mono_ms();
		pthread_mutex_unlock(&w->mu);

		for (size_t i = 0; i < n; i++) {
			args[i] = batch[i]->arg;
			errs[i] = 0;
		}
		batch[0]->kind->run(w->st, args, errs, n);

		pthread_mutex_lock(&w->mu);
		w->busy_since_ms = 0;
		for (size_t i = 0; i < n; i++) {
			batch[i]->err = errs[i];
			list_append(&w->answers, &w->answers_tail, batch[i]);
		}
		wake_loop(w);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

int rs_store_worker_start(struct event_base *base, struct rs_store *st, struct rs_store_worker **out)
{
	struct rs_store_worker *w;
	int err;

	*out = NULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->st = st;
	w->base = base;
	w->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->wake_fd < 0) {
		err = -errno;
		goto fail;
	}
	w->answer_ev = event_new(base, w->wake_fd, EV_READ | EV_PERSIST, on_answer, w);
	if (!w->answer_ev || event_add(w->answer_ev, NULL) != 0) {
		err = -ENOMEM;
		goto fail;
	}
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	err = -pthread_create(&w->thread, NULL, worker_main, w);
	if (err) {
		pthread_cond_destroy(&w->cv);
		pthread_mutex_destroy(&w->mu);
		goto fail;
	}
	w->started = true;
	*out = w;
	return 0;
fail:
	if (w->answer_ev)
		event_free(w->answer_ev);
	if (w->wake_fd >= 0)
		close(w->wake_fd);
	free(w);
	return err;
}

int rs_store_worker_submit(struct rs_store_worker *w, const struct rs_store_job_kind *kind, void *arg)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	j->kind = kind;
	j->arg = arg;
	pthread_mutex_lock(&w->mu);
	if (w->stopping) {
		pthread_mutex_unlock(&w->mu);
		free(j);
		return -ESHUTDOWN;
	}
	list_append(&w->queue, &w->queue_tail, j);
	w->pending++;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	return 0;
}

size_t rs_store_worker_pending(const struct rs_store_worker *w)
{
	struct rs_store_worker *mw = (struct rs_store_worker *)w; /* the lock only */
	size_t n;

	pthread_mutex_lock(&mw->mu);
	n = w->pending;
	pthread_mutex_unlock(&mw->mu);
	return n;
}

int64_t rs_store_worker_busy_ms(const struct rs_store_worker *w)
{
	struct rs_store_worker *mw = (struct rs_store_worker *)w;
	int64_t since;

	pthread_mutex_lock(&mw->mu);
	since = w->busy_since_ms;
	pthread_mutex_unlock(&mw->mu);
	return since ? rs_mono_ms() - since : 0;
}

size_t rs_store_worker_cancel(struct rs_store_worker *w, const struct rs_store_job_kind *kind, int err)
{
	struct job *keep = NULL, *keep_tail = NULL, *j, *next;
	size_t n = 0;

	pthread_mutex_lock(&w->mu);
	for (j = w->queue; j; j = next) {
		next = j->next;
		if (j->kind != kind) {
			list_append(&keep, &keep_tail, j);
			continue;
		}
		j->err = err;
		list_append(&w->answers, &w->answers_tail, j);
		n++;
	}
	w->queue = keep;
	w->queue_tail = keep_tail;
	if (n)
		wake_loop(w);
	pthread_mutex_unlock(&w->mu);
	return n;
}

struct rs_store *rs_store_worker_stop(struct rs_store_worker *w)
{
	struct rs_store *st;

	if (!w)
		return NULL;
	pthread_mutex_lock(&w->mu);
	w->stopping = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	if (w->started)
		pthread_join(w->thread, NULL);
	deliver(w); /* after the join: nothing is added any more */
	event_free(w->answer_ev);
	close(w->wake_fd);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	st = w->st;
	free(w);
	return st;
}
