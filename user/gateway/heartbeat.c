/* heartbeat.c - the gateway's heartbeat tick: HEARTBEAT to every attached
 * supervisor (at once, whatever the store does), and one store call that
 * refreshes our row (one write, whatever the number of sessions: a
 * session counts while its gateway's row is live) and reads whether
 * `ringsteerctl drain` asked us to drain.
 *
 * The tick is also the store's probe: it is the one store call made while
 * the store is known to be away (store_health.c), at most one in flight.
 * When it answers again, what happened meanwhile is told: the sessions
 * accepted degraded are claimed (claim.c), the session ends and sandbox
 * counts it missed are sent, and a drain started meanwhile is written to
 * our row. */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "conn.h"
#include "gateway.h"
#include "ringsteer/logfmt.h"
#include "ringsteer/mstime.h"

struct heartbeat_call {
	struct gw_call call;
	struct gateway *gw;
	bool draining;     /* register as draining if our row is gone */
	bool check_drain;  /* read our row's state */
	bool registered;   /* out: the row was gone and is written again */
	bool told_drain;   /* out: our row says draining */
	uint64_t statements; /* out: the handle's statement count, read here on the worker */
	int64_t t0;        /* monotonic: when it was queued */
};

static int heartbeat_run(struct rs_store *st, struct gw_call *call)
{
	struct heartbeat_call *h = (struct heartbeat_call *)call;
	const struct gw_config *cfg = &h->gw->cfg;
	struct rs_gateway_row row;
	int err;

	err = rs_store_heartbeat(st, cfg->id, rs_wall_ms());
	if (err == -ENOENT) {
		/* Our row is gone (removed, or expired and swept): register
		 * again, still draining if we are. */
		err = rs_store_gateway_register(st, cfg->id, cfg->advertise_peer,
						h->draining ? RS_GATEWAY_DRAINING : RS_GATEWAY_SERVING, rs_wall_ms());
		h->registered = err == 0;
	}
	if (err == 0 && h->check_drain && rs_store_gateway_get(st, cfg->id, rs_wall_ms(), &row) == 0)
		h->told_drain = row.state == RS_GATEWAY_DRAINING;
	/* The handle is the worker's alone: its count is read here and
	 * handed to the loop with the answer, never read from the loop. */
	h->statements = rs_store_statements(st);
	return err;
}

/* The store answers again: tell it what happened while it did not. */
static void catch_up(struct gateway *gw)
{
	if (gw->draining && gw->drain_unrecorded)
		gw_drain_record(gw);
	gw_store_flush_owed(gw);
	if (gw->n_unrecorded == 0 && !gw->sandboxes_owed)
		return;
	gw->sandboxes_owed = false;
	for (struct gw_conn *c = gw->conns; c; c = c->next) {
		if (c->state != CONN_ATTACHED)
			continue;
		if (c->unrecorded)
			gw_conn_claim(c);
		else if (c->sandboxes_dirty && gw_store_sandboxes(c) == 0)
			c->sandboxes_dirty = false;
	}
}

static void heartbeat_done(struct gw_call *call, int err)
{
	struct heartbeat_call *h = (struct heartbeat_call *)call;
	struct gateway *gw = h->gw;
	bool was_up = gw->store_up;
	char ms[24];

	gw->heartbeat_in_flight = false;
	/* Counted whatever the outcome: a failed call ran statements too. */
	gw->counters.store_statements = h->statements;
	gw_store_outcome(gw, err);
	if (err) {
		gw->counters.store_errors++;
		snprintf(ms, sizeof(ms), "%lld", (long long)(rs_mono_ms() - h->t0));
		rs_log(stderr, "warn", gw->who, "event", "store_error", "op", "heartbeat", "error", strerror(-err), "ms",
		       ms, NULL);
		goto cleanup;
	}
	gw->registered = true;
	if (h->registered && h->draining)
		gw->drain_unrecorded = false;
	if (!was_up || gw->owed || gw->n_unrecorded || gw->sandboxes_owed || gw->drain_unrecorded)
		catch_up(gw);
	if (h->told_drain && !gw->draining)
		gw_drain_start(gw, false);
cleanup:
	free(h);
}

/* Queues HEARTBEAT on c: by reference to the frame encoded once, so ten
 * thousand supervisors do not each get a fresh output chain (about 1 KiB
 * each until written) every interval. */
static void send_heartbeat(struct gateway *gw, struct gw_conn *c)
{
	static const struct rs_frame hb = { .version = RS_PROTO_VERSION, .type = RS_FRAME_HEARTBEAT };

	if (gw->heartbeat_len == 0 && rs_frame_encode(&hb, gw->heartbeat_frame, sizeof(gw->heartbeat_frame),
						      &gw->heartbeat_len) != 0)
		gw->heartbeat_len = 0;
	if (gw->heartbeat_len == 0 ||
	    evbuffer_add_reference(bufferevent_get_output(c->bev), gw->heartbeat_frame, gw->heartbeat_len, NULL,
				   NULL) != 0)
		gw_conn_send(c, &hb);
}

void gw_conn_heartbeat(struct gateway *gw)
{
	struct heartbeat_call *h;
	struct gw_conn *c, *next;

	/* Handshakes, HELLO bursts and departures leave free memory between
	 * live connections' blocks; glibc returns only the heap's top unless
	 * asked: this hands whole free pages back, so RSS follows what the
	 * attached supervisors hold (issue 15: bytes per supervisor). */
	malloc_trim(0);
	for (c = gw->conns; c; c = next) {
		next = c->next;
		if (gw_conn_is_attached(c))
			send_heartbeat(gw, c);
	}
	/* One in flight at most: a store that does not answer gets one probe
	 * queued, not one per tick. */
	if (gw->heartbeat_in_flight || gw->exiting)
		return;
	h = calloc(1, sizeof(*h));
	if (!h)
		return;
	h->call = (struct gw_call){ heartbeat_run, heartbeat_done };
	h->gw = gw;
	h->draining = gw->draining;
	h->check_drain = !gw->draining;
	h->t0 = rs_mono_ms();
	if (gw_store_call(gw, &h->call) != 0) {
		free(h);
		return;
	}
	gw->heartbeat_in_flight = true;
}
