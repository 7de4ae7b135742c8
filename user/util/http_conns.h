/* SPDX-License-Identifier: Apache-2.0 */
/* http_conns.h - the connections of one evhttp listener, counted and
 * bounded (http_conns.c), for rs_http_serve (http.c).  libevent 2.1 has no
 * connection cap and its timeout is per read, so a client trickling one
 * header line at a time would hold a connection for ever: each connection
 * gets a deadline to finish its request, and an arrival past the cap cuts
 * the oldest connection. */
#ifndef RINGSTEER_HTTP_CONNS_H
#define RINGSTEER_HTTP_CONNS_H

#include <stdbool.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>

struct rs_http_conn;

struct rs_http_conns {
	struct rs_http_conn *oldest, *newest; /* not yet let go by evhttp, in arrival order */
	struct event *sweep_ev;  /* finds the connections evhttp has let go */
	unsigned live;
	unsigned max;            /* live connections at most */
	unsigned deadline_s;     /* to finish a request, from arrival or the last one */
	unsigned long long cut;  /* connections cut: over the cap or past the deadline */
};

/* Counts evhttp's connections from now on (evhttp_set_bevcb).  Returns 0,
 * or -1 when the sweep's timer cannot be had. */
int rs_http_conns_attach(struct rs_http_conns *cs, struct evhttp *http, struct event_base *base, unsigned max,
			  unsigned deadline_s);

/* A request on req's connection was received: its deadline starts again. */
void rs_http_conns_request(struct rs_http_conns *cs, struct evhttp_request *req);

/* After evhttp_free (which let every connection go): drops them all. */
void rs_http_conns_free(struct rs_http_conns *cs);

#endif
