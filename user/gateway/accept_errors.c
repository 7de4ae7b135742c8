/* SPDX-License-Identifier: Apache-2.0 */
/* accept_errors.c - the gateway's two listeners out of descriptors: each
 * pauses accepting with a backoff (util/accept_pause.h) instead of
 * spinning, and the failures are exported by listener and errno. */
#include <event2/buffer.h>

#include "gateway.h"
#include "util/http.h"

/* Both listeners call back with the gateway: which one it was picks the
 * pause. */
static void on_accept_error(struct evconnlistener *lst, void *arg)
{
	struct gateway *gw = arg;

	rs_accept_pause_error(lst == gw->peer_lst ? &gw->pause_peer : &gw->pause_listen);
}

int gw_accept_pause_start(struct gateway *gw)
{
	int err = rs_accept_pause_init(&gw->pause_listen, gw->base, gw->listen_lst, stderr, gw->who, "listen");

	if (!err)
		err = rs_accept_pause_init(&gw->pause_peer, gw->base, gw->peer_lst, stderr, gw->who, "peer");
	if (err)
		return err;
	evconnlistener_set_error_cb(gw->listen_lst, on_accept_error);
	evconnlistener_set_error_cb(gw->peer_lst, on_accept_error);
	return 0;
}

void gw_accept_pause_free(struct gateway *gw)
{
	rs_accept_pause_free(&gw->pause_listen);
	rs_accept_pause_free(&gw->pause_peer);
}

void gw_accept_metrics(const struct gateway *gw, struct evbuffer *b)
{
	const struct rs_accept_pause *p[] = { &gw->pause_listen, &gw->pause_peer };
	const char *role[] = { "listen", "peer" };

	rs_metrics_family(b, "ringsteer_gateway_accept_errors_total", "counter",
			  "Failed accepts on the supervisor (listen) and peer listeners, by errno; each pauses "
			  "accepting 100 ms to 1 s.");
	for (int i = 0; i < 2; i++)
		for (int e = 0; e < RS_ACCEPT_ERRNO_COUNT; e++)
			evbuffer_add_printf(b,
					    "ringsteer_gateway_accept_errors_total{gateway=\"%s\",role=\"%s\",errno=\"%s\"} "
					    "%llu\n",
					    gw->cfg.id, role[i], rs_accept_errno_label((enum rs_accept_errno)e),
					    (unsigned long long)p[i]->errors[e]);
}
