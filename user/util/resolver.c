/* SPDX-License-Identifier: Apache-2.0 */
/* resolver.c - getaddrinfo on a thread of its own, answers posted back to
 * the loop (resolver.h).
 *
 * Ownership: a request is the loop's until it is queued, then the
 * resolver's; the thread fills it in and moves it to the done list, and
 * the loop runs its callback (unless cancelled) and frees it.  A
 * request's callback pointer is read and written only on the loop, so a
 * cancel needs no lock.  The resolver itself is freed by whichever of the
 * loop (rs_resolver_free) and the thread lets go of it last. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "util/resolver.h"

struct rs_resolve_req {
	struct rs_resolve_req *next;
	rs_resolve_cb cb; /* NULL: cancelled */
	void *arg;
	int err;
	char why[96];
	struct rs_resolved r;
	char endpoint[RS_RESOLVE_HOST_MAX + 8];
};

struct rs_resolver {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	struct rs_resolve_req *todo, **todo_tail;
	struct rs_resolve_req *done, **done_tail;
	bool stop, busy;
	int refs;          /* the loop's and the thread's */
	int efd;           /* readable: done is not empty */
	struct event *ev;  /* the loop's side of efd */
};

static void list_free(struct rs_resolve_req *q)
{
	while (q) {
		struct rs_resolve_req *next = q->next;

		free(q);
		q = next;
	}
}

static void destroy(struct rs_resolver *r)
{
	list_free(r->todo);
	list_free(r->done);
	if (r->efd >= 0)
		close(r->efd);
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

/* Drops one reference, the lock held; frees r (and unlocks) when it was the last. */
static void unref_unlock(struct rs_resolver *r)
{
	bool last = --r->refs == 0;

	pthread_mutex_unlock(&r->mu);
	if (last)
		destroy(r);
}

static void resolve_batch(struct rs_resolve_req *batch)
{
	const struct rs_resolve_req *prev = NULL;

	for (struct rs_resolve_req *q = batch; q; q = q->next) {
		const char *why = NULL;

		if (prev && strcmp(prev->endpoint, q->endpoint) == 0) {
			q->err = prev->err;
			memcpy(q->why, prev->why, sizeof(q->why));
			q->r = prev->r;
			continue;
		}
		q->err = rs_resolve_now(q->endpoint, &q->r, &why);
		snprintf(q->why, sizeof(q->why), "%s", q->err ? (why ? why : strerror(-q->err)) : "");
		prev = q;
	}
}

static void *worker(void *arg)
{
	struct rs_resolver *r = arg;
	const uint64_t one = 1;

	pthread_mutex_lock(&r->mu);
	for (;;) {
		struct rs_resolve_req *batch, *last;

		while (!r->todo && !r->stop)
			pthread_cond_wait(&r->cv, &r->mu);
		if (r->stop)
			break;
		batch = r->todo;
		r->todo = NULL;
		r->todo_tail = &r->todo;
		r->busy = true;
		pthread_mutex_unlock(&r->mu);
		resolve_batch(batch);
		pthread_mutex_lock(&r->mu);
		r->busy = false;
		if (r->stop) {
			list_free(batch); /* nobody is waiting for them now */
			break;
		}
		for (last = batch; last->next; last = last->next)
			;
		*r->done_tail = batch;
		r->done_tail = &last->next;
		if (write(r->efd, &one, sizeof(one)) < 0) {
			/* The counter cannot overflow in practice; the loop reads the whole list anyway. */
		}
	}
	unref_unlock(r);
	return NULL;
}

static void on_done(evutil_socket_t fd, short what, void *arg)
{
	struct rs_resolver *r = arg;
	struct rs_resolve_req *q;
	uint64_t n;

	(void)what;
	if (read(fd, &n, sizeof(n)) < 0) {
		/* EAGAIN: another wake already took the list */
	}
	pthread_mutex_lock(&r->mu);
	q = r->done;
	r->done = NULL;
	r->done_tail = &r->done;
	pthread_mutex_unlock(&r->mu);
	while (q) {
		struct rs_resolve_req *next = q->next;

		if (q->cb)
			q->cb(q->arg, q->err, q->why, &q->r);
		free(q);
		q = next;
	}
}

int rs_resolver_new(struct event_base *base, struct rs_resolver **out)
{
	struct rs_resolver *r = calloc(1, sizeof(*r));
	int err;

	*out = NULL;
	if (!r)
		return -ENOMEM;
	r->todo_tail = &r->todo;
	r->done_tail = &r->done;
	r->refs = 1;
	r->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (pthread_mutex_init(&r->mu, NULL) != 0) {
		free(r);
		return -ENOMEM;
	}
	if (pthread_cond_init(&r->cv, NULL) != 0) {
		pthread_mutex_destroy(&r->mu);
		free(r);
		return -ENOMEM;
	}
	if (r->efd < 0) {
		err = -errno;
		goto fail;
	}
	r->ev = event_new(base, r->efd, EV_READ | EV_PERSIST, on_done, r);
	if (!r->ev || event_add(r->ev, NULL) != 0) {
		err = -ENOMEM;
		goto fail;
	}
	r->refs = 2;
	err = -pthread_create(&r->thread, NULL, worker, r);
	if (err) {
		r->refs = 1;
		goto fail;
	}
	*out = r;
	return 0;
fail:
	if (r->ev)
		event_free(r->ev);
	destroy(r);
	return err;
}

void rs_resolver_free(struct rs_resolver *r)
{
	pthread_t thread;
	bool busy;

	if (!r)
		return;
	event_free(r->ev);
	pthread_mutex_lock(&r->mu);
	r->stop = true;
	busy = r->busy;
	thread = r->thread;
	pthread_cond_signal(&r->cv);
	if (busy) {
		pthread_detach(thread); /* it frees r after its lookup, if it is the last */
		unref_unlock(r);
		return;
	}
	pthread_mutex_unlock(&r->mu);
	pthread_join(thread, NULL); /* idle: it leaves at once */
	pthread_mutex_lock(&r->mu);
	unref_unlock(r);
}

int rs_resolve_start(struct rs_resolver *r, const char *endpoint, rs_resolve_cb cb, void *arg,
		     struct rs_resolve_req **out)
{
	struct rs_resolve_req *q;

	if (out)
		*out = NULL;
	if (!endpoint || strlen(endpoint) >= sizeof(q->endpoint))
		return -EINVAL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	snprintf(q->endpoint, sizeof(q->endpoint), "%s", endpoint);
	q->cb = cb;
	q->arg = arg;
	pthread_mutex_lock(&r->mu);
	*r->todo_tail = q;
	r->todo_tail = &q->next;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
	if (out)
		*out = q;
	return 0;
}

void rs_resolve_cancel(struct rs_resolve_req *q)
{
	if (q)
		q->cb = NULL;
}
