/* heartbeat.c - the gateway's heartbeat tick: refresh our row (one store
 * write: our sessions live with it), send HEARTBEAT to every attached
 * supervisor.
 *
 * The tick is also the store's probe: it is the one store call made while
 * the store is known to be away (store_health.c), so an outage costs the
 * loop at most one store timeout per heartbeat interval.  When it answers
 * again, the sessions accepted meanwhile (unrecorded) are claimed (claim.c)
 * and a drain started meanwhile is written to our row. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "conn.h"
#include "gateway.h"
#include "ringsteer/logfmt.h"

/* Refreshes our row; -ENOENT (our row is gone: removed, with our
 * sessions' rows) registers again, still draining if we are.  Logs and
 * counts a failure, with how long the loop waited. */
static int store_heartbeat(struct gateway *gw)
{
	int64_t t0 = gw_mono_ms();
	char ms[24];
	int err;

	err = rs_store_heartbeat(gw->store, gw->cfg.id, gw_now_ms());
	if (err == -ENOENT) {
		err = rs_store_gateway_register(gw->store, gw->cfg.id, gw->cfg.advertise_peer,
						gw->draining ? RS_GATEWAY_DRAINING : RS_GATEWAY_SERVING, gw_now_ms());
		if (!err) {
			gw->drain_unrecorded = false;
			err = rs_store_heartbeat(gw->store, gw->cfg.id, gw_now_ms());
		}
	}
	gw_store_outcome(gw, err);
	if (err) {
		gw->counters.store_errors++;
		snprintf(ms, sizeof(ms), "%lld", (long long)(gw_mono_ms() - t0));
		rs_log(stderr, "warn", gw->who, "event", "store_error", "op", "heartbeat", "error", strerror(-err), "ms",
		       ms, NULL);
	}
	return err;
}

/* The store answers again: tell it what happened while it did not. */
static void catch_up(struct gateway *gw)
{
	struct gw_conn *c, *next;
	int err;

	if (gw->draining && gw->drain_unrecorded) {
		err = rs_store_gateway_register(gw->store, gw->cfg.id, gw->cfg.advertise_peer, RS_GATEWAY_DRAINING,
						gw_now_ms());
		gw_store_outcome(gw, err);
		if (err) {
			gw->counters.store_errors++;
			rs_log(stderr, "warn", gw->who, "event", "store_error", "op", "drain", "error", strerror(-err),
			       NULL);
			return;
		}
		gw->drain_unrecorded = false;
	}
	for (c = gw->conns; c && gw_store_usable(gw); c = next) {
		next = c->next; /* a superseded claim closes c, but frees it only later */
		if (c->state == CONN_ATTACHED && c->unrecorded)
			gw_conn_claim(c);
	}
}

void gw_conn_heartbeat(struct gateway *gw)
{
	struct gw_conn *c, *next;
	int err;

	err = store_heartbeat(gw);
	gw->registered = gw->registered || err == 0;
	if (!err)
		catch_up(gw);
	for (c = gw->conns; c; c = next) {
		next = c->next;
		if (gw_conn_is_attached(c))
			gw_conn_send(c, &(struct rs_frame){ .version = RS_PROTO_VERSION, .type = RS_FRAME_HEARTBEAT });
	}
	if (!err && gw_store_usable(gw))
		gw_drain_check_store(gw);
}
