/* SPDX-License-Identifier: Apache-2.0 */
/* http.h - the small HTTP side every daemon has (/metrics, /healthz,
 * /readyz) on libevent's evhttp, and the Prometheus text helpers. */
#ifndef RINGSTEER_HTTP_H
#define RINGSTEER_HTTP_H

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

/* The listener's bounds (docs/OPERATIONS.md, "The HTTP listeners").  A
 * Prometheus scrape or a kubelet probe is one short GET with a few headers,
 * answered at once: these leave it ample room and nobody else much. */
#define RS_HTTP_MAX_HEADERS 8192 /* bytes of request line and headers; more: 400 and a close */
#define RS_HTTP_MAX_BODY 1024    /* bytes of request body (a GET has none) */
#define RS_HTTP_IDLE_S 5         /* a read or write stalled this long ends the connection */
#define RS_HTTP_REQUEST_S 5      /* a request not received in full this long after the
				  * connection (or its previous request): closed */
#define RS_HTTP_MAX_CONNS 32     /* open connections; an arrival past it closes the oldest */

struct rs_http;

/* Serves GET requests on endpoint ("ADDR:PORT") with handler; other methods
 * get 405 from libevent.  Returns 0 and *out, -EINVAL, -ENOMEM or -errno
 * from bind/listen. */
int rs_http_serve(struct event_base *base, const char *endpoint, void (*handler)(struct evhttp_request *, void *),
		  void *arg, struct rs_http **out);

/* Closes the listener and its connections; NULL is allowed. */
void rs_http_free(struct rs_http *h);

/* Answers req with a text/plain body. */
void rs_http_reply_text(struct evhttp_request *req, int code, const char *reason, const char *body);

/* Answers req with ringsteer_build_info and then what render(ctx, buffer)
 * writes, in the Prometheus text exposition format (0.0.4); 500 when no
 * buffer can be had. */
void rs_http_reply_metrics(struct evhttp_request *req, void (*render)(const void *ctx, struct evbuffer *b),
			   const void *ctx);

/* Appends a metric family's # HELP and # TYPE lines. */
void rs_metrics_family(struct evbuffer *b, const char *name, const char *type, const char *help);

#endif
