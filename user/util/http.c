/* SPDX-License-Identifier: Apache-2.0 */
/* http.c - the daemons' shared HTTP plumbing: one listening socket handed
 * to evhttp, GET only, and the two reply shapes they use. */
#include <errno.h>
#include <string.h>

#include "util/endpoint.h"
#include "util/http.h"

int rs_http_serve(struct event_base *base, const char *endpoint, void (*handler)(struct evhttp_request *, void *),
		  void *arg, struct evhttp **out)
{
	struct sockaddr_storage ss;
	struct evhttp *http;
	socklen_t len;
	evutil_socket_t fd;
	int err;

	if (rs_endpoint_parse(endpoint, &ss, &len))
		return -EINVAL;
	http = evhttp_new(base);
	if (!http)
		return -ENOMEM;
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
	if (!evhttp_accept_socket_with_handle(http, fd)) {
		evutil_closesocket(fd);
		err = -ENOMEM;
		goto fail;
	}
	evhttp_set_gencb(http, handler, arg);
	evhttp_set_allowed_methods(http, EVHTTP_REQ_GET);
	*out = http;
	return 0;
fail:
	evhttp_free(http);
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
