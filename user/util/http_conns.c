/* SPDX-License-Identifier: Apache-2.0 */
/* http_conns.c - see http_conns.h.  evhttp 2.1 gives no hook when a server
 * connection ends, so each one's bufferevent is made here (evhttp's bevcb)
 * and held by one extra reference: evhttp's bufferevent_free then clears
 * its callbacks but leaves it (and its socket) to that reference, and a
 * sweep finds the ones evhttp let go by their cleared callbacks, drops the
 * reference (which closes the socket) and forgets them.  Sweeps run at each
 * arrival and every second, so a socket evhttp is done with stays open a
 * second at most (evhttp has already shut its sending side).  A connection
 * is ended by shutting its socket down: evhttp reads EOF and frees it
 * through its own path, so nothing here frees what evhttp still holds.  (A
 * pass-through bufferevent filter, whose free callback would say the same,
 * leaves evhttp's reads stalled in libevent 2.1.) */
#include <stdlib.h>
#include <sys/socket.h>

#include "util/http_conns.h"

#define SWEEP_S 1

struct rs_http_conn {
	struct rs_http_conns *cs;
	struct bufferevent *bev;   /* evhttp's, plus our reference */
	struct event *deadline;
	struct rs_http_conn *prev, *next;
	bool cut;                  /* shut down: no longer counted, not yet let go */
};

static void conn_drop(struct rs_http_conn *c)
{
	struct rs_http_conns *cs = c->cs;

	if (c->prev)
		c->prev->next = c->next;
	else
		cs->oldest = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		cs->newest = c->prev;
	if (!c->cut)
		cs->live--;
	event_free(c->deadline);
	bufferevent_decref(c->bev); /* the last reference: closes the socket */
	free(c);
}

/* Whether evhttp has freed c's connection: bufferevent_free clears the
 * callbacks, and a live server connection always has its event callback. */
static bool let_go(const struct rs_http_conn *c)
{
	bufferevent_event_cb ev = NULL;

	bufferevent_getcb(c->bev, NULL, NULL, &ev, NULL);
	return ev == NULL;
}

static void sweep(struct rs_http_conns *cs)
{
	struct rs_http_conn *c, *next;

	for (c = cs->oldest; c; c = next) {
		next = c->next;
		if (let_go(c))
			conn_drop(c);
	}
}

static void on_sweep(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	sweep(arg);
}

/* Ends c: no longer counted; its socket shut down, so evhttp sees EOF on
 * its next read and frees it, and a sweep lets it go. */
static void cut(struct rs_http_conn *c)
{
	evutil_socket_t fd = bufferevent_getfd(c->bev);

	if (c->cut)
		return;
	c->cs->cut++;
	c->cs->live--;
	c->cut = true;
	event_del(c->deadline);
	if (fd >= 0)
		(void)shutdown(fd, SHUT_RDWR);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	cut(arg);
}

static void arm(struct rs_http_conn *c)
{
	struct timeval tv = { .tv_sec = (time_t)c->cs->deadline_s };

	(void)evtimer_add(c->deadline, &tv);
}

/* evhttp's bevcb: a new connection.  On failure NULL, and evhttp makes its
 * own bufferevent: that connection is served, uncounted (evhttp's read
 * timeout still ends it). */
static struct bufferevent *new_conn(struct event_base *base, void *arg)
{
	struct rs_http_conns *cs = arg;
	struct rs_http_conn *c;

	sweep(cs);
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->cs = cs;
	c->deadline = evtimer_new(base, on_deadline, c);
	c->bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (!c->deadline || !c->bev) {
		if (c->bev)
			bufferevent_free(c->bev);
		if (c->deadline)
			event_free(c->deadline);
		free(c);
		return NULL;
	}
	bufferevent_incref(c->bev);
	/* Past the cap the oldest goes, not the arrival: a scrape arriving
	 * while idle sockets fill the cap is served, and they cannot hold it. */
	for (struct rs_http_conn *o = cs->oldest; o && cs->live >= cs->max; o = o->next)
		cut(o);
	c->prev = cs->newest;
	if (cs->newest)
		cs->newest->next = c;
	else
		cs->oldest = c;
	cs->newest = c;
	cs->live++;
	arm(c);
	return c->bev;
}

int rs_http_conns_attach(struct rs_http_conns *cs, struct evhttp *http, struct event_base *base, unsigned max,
			 unsigned deadline_s)
{
	struct timeval tv = { .tv_sec = SWEEP_S };

	*cs = (struct rs_http_conns){ .max = max ? max : 1, .deadline_s = deadline_s };
	cs->sweep_ev = event_new(base, -1, EV_PERSIST, on_sweep, cs);
	if (!cs->sweep_ev || event_add(cs->sweep_ev, &tv) != 0)
		return -1;
	evhttp_set_bevcb(http, new_conn, cs);
	return 0;
}

void rs_http_conns_request(struct rs_http_conns *cs, struct evhttp_request *req)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;

	/* At most max connections: a walk is cheaper than a map here. */
	for (struct rs_http_conn *c = cs->oldest; bev && c; c = c->next) {
		if (c->bev == bev) {
			if (!c->cut)
				arm(c);
			return;
		}
	}
}

void rs_http_conns_free(struct rs_http_conns *cs)
{
	while (cs->oldest)
		conn_drop(cs->oldest);
	if (cs->sweep_ev)
		event_free(cs->sweep_ev);
	cs->sweep_ev = NULL;
}
