/* SPDX-License-Identifier: Apache-2.0 */
/* http.c - the daemons' shared HTTP plumbing: one listening socket handed
 * to evhttp, GET only, bounded (http.h: RS_HTTP_*), and the two reply
 * shapes they use.  These listeners are unauthenticated and, in deploy/,
 * on the pod's address: whoever reaches the port must not be able to hold
 * the daemon's memory, descriptors or loop with it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/accept_pause.h"
#include "util/endpoint.h"
#include "util/http.h"
#include "util/http_conns.h"
#include "util/program_version.h"

struct rs_http {
	struct evhttp *http;
	struct rs_http_conns conns;
	void (*handler)(struct evhttp_request *, void *);
	void *arg;
};

static void on_request(struct evhttp_request *req, void *arg)
{
	struct rs_http *h = arg;

	rs_http_conns_request(&h->conns, req);
	h->handler(req, h->arg);
}

void rs_http_free(struct rs_http *h)
{
	if (!h)
		return;
	if (h->http)
		evhttp_free(h->http);
	rs_http_conns_free(&h->conns);
	free(h);
}

int rs_http_serve(struct event_base *base, const char *endpoint, void (*handler)(struct evhttp_request *, void *),
		  void *arg, struct rs_http **out)
{
	struct sockaddr_storage ss;
	struct evhttp *http;
	struct evhttp_bound_socket *bound;
	struct rs_http *h;
	socklen_t len;
	evutil_socket_t fd;
	int err;

	if (rs_endpoint_parse(endpoint, &ss, &len))
		return -EINVAL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	http = h->http = evhttp_new(base);
	if (!http) {
		err = -ENOMEM;
		goto fail;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = -errno;
		goto fail;
	}
	if (evutil_make_listen_socket_reuseable(fd) < 0 || bind(fd, (struct sockaddr *)&ss, len) < 0 ||
	    listen(fd, 64) < 0) {
		err = -errno;
		evutil_closesocket(fd);
		goto fail;
	}
	bound = evhttp_accept_socket_with_handle(http, fd);
	if (!bound) {
		evutil_closesocket(fd);
		err = -ENOMEM;
		goto fail;
	}
	/* Out of descriptors, pause instead of spinning on the socket. */
	evconnlistener_set_error_cb(evhttp_bound_socket_get_listener(bound), rs_accept_pause_bare);
	h->handler = handler;
	h->arg = arg;
	evhttp_set_gencb(http, on_request, h);
	evhttp_set_allowed_methods(http, EVHTTP_REQ_GET);
	/* Scrapes and probes send a request line and a few headers, no body. */
	evhttp_set_max_headers_size(http, RS_HTTP_MAX_HEADERS);
	evhttp_set_max_body_size(http, RS_HTTP_MAX_BODY);
	/* evhttp's timeout is per read or write: a stalled peer goes.  One that
	 * trickles bytes is ended by the request deadline (http_conns.c). */
	evhttp_set_timeout(http, RS_HTTP_IDLE_S);
	if (rs_http_conns_attach(&h->conns, http, base, RS_HTTP_MAX_CONNS, RS_HTTP_REQUEST_S) != 0) {
		err = -ENOMEM;
		goto fail;
	}
	*out = h;
	return 0;
fail:
	rs_http_free(h);
	return err;
}

void rs_http_reply_text(struct evhttp_request *req, int code, const char *reason, const char *body)
{
	struct evbuffer *b = evbuffer_new();

	if (!b) {
		evhttp_send_error(req, HTTP_INTERNAL, NULL);
		return;
	}
	evbuffer_add(b, body, strlen(body));
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain; charset=utf-8");
	evhttp_send_reply(req, code, reason, b);
	evbuffer_free(b);
}

void rs_http_reply_metrics(struct evhttp_request *req, void (*render)(const void *ctx, struct evbuffer *b),
			   const void *ctx)
{
	struct evbuffer *b = evbuffer_new();

	if (!b) {
		evhttp_send_error(req, HTTP_INTERNAL, NULL);
		return;
	}
	rs_metrics_build_info(b);
	render(ctx, b);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
			  "text/plain; version=0.0.4; charset=utf-8");
	evhttp_send_reply(req, HTTP_OK, "OK", b);
	evbuffer_free(b);
}

void rs_metrics_family(struct evbuffer *b, const char *name, const char *type, const char *help)
{
	evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}
