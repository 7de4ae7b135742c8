/* claim.c - recording a session accepted while the store was unavailable
 * (degraded), once the store answers again, so the ledger learns it without
 * the supervisor reconnecting.  The store decides by epoch: if it holds a
 * newer one the supervisor has reconnected elsewhere meanwhile, and this
 * connection is closed as superseded.  A degraded session stays where it
 * landed unless the claim finds its gateway above the cap: then it is
 * placed by the rule once, paced (deferred.c).
 * The claim runs on the store worker; the connection may leave meanwhile,
 * and then a recorded row is ended again (nothing else would end it). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "gateway.h"
#include "ringsteer/logfmt.h"
#include "ringsteer/mstime.h"

struct claim_call {
	struct gw_call call;
	struct gateway *gw;
	struct gw_conn *conn; /* loop side: NULL once the connection is gone */
	struct rs_session_claim claim;
	char member_id[RS_ID_MAX + 1];
	char instance_id[RS_INSTANCE_MAX + 1];
	char source[RS_ENDPOINT_MAX + 1];
};

static int claim_run(struct rs_store *st, struct gw_call *call)
{
	struct claim_call *k = (struct claim_call *)call;

	k->claim.now_ms = rs_wall_ms();
	return rs_store_session_claim(st, &k->claim);
}

static void claim_done(struct gw_call *call, int err)
{
	struct claim_call *k = (struct claim_call *)call;
	struct gateway *gw = k->gw;
	struct gw_conn *c = k->conn;
	char epoch[24];

	gw_store_outcome(gw, err);
	snprintf(epoch, sizeof(epoch), "%llu", (unsigned long long)k->claim.epoch);
	if (c)
		gw_conn_job_clear(c);
	if (err == 0) {
		char load[12], cap[12];

		gw->counters.claims_recorded++;
		snprintf(load, sizeof(load), "%u", k->claim.load);
		snprintf(cap, sizeof(cap), "%u", k->claim.cap);
		rs_log(stderr, "info", gw->who, "event", "claim", "member", k->member_id, "epoch", epoch, "result",
		       "recorded", "load", load, "cap", cap, NULL);
		if (!c || !gw_conn_is_attached(c))
			gw_store_end_session(gw, k->member_id, k->claim.epoch, true); /* it left meanwhile */
		else {
			c->unrecorded = false;
			gw->n_unrecorded--;
			if (c->sandboxes != k->claim.sandboxes)
				c->sandboxes_dirty = true;
			/* Never placed by the rule, and its gateway above the cap
			 * with it, or the store's ring not yet whole after its
			 * outage: placed once it is, if still above (deferred.c). */
			if (k->claim.above_cap || !gw_deferred_view_settled(gw))
				gw_deferred_mark(c);
		}
	} else if (err == -ESTALE) {
		gw->counters.claims_superseded++;
		rs_log(stderr, "info", gw->who, "event", "claim", "member", k->member_id, "epoch", epoch, "result",
		       "superseded", NULL);
		if (c && gw_conn_is_attached(c)) {
			c->unrecorded = false; /* nothing of it is owed to the store */
			gw->n_unrecorded--;
			gw_conn_supersede(c, "claim");
		}
	} else {
		/* Unavailable again, or our row is gone (-ENOENT: the heartbeat
		 * registers again): it stays unrecorded and served, claimed later. */
		gw->counters.store_errors++;
		rs_log(stderr, "warn", gw->who, "event", "store_error", "op", "claim", "member", k->member_id, "epoch",
		       epoch, "error", strerror(-err), NULL);
	}
	free(k);
}

void gw_conn_claim(struct gw_conn *c)
{
	struct gateway *gw = c->gw;
	struct claim_call *k;

	if (c->job_ref || !c->unrecorded || !gw_conn_is_attached(c))
		return;
	k = calloc(1, sizeof(*k));
	if (!k)
		return; /* tried again at the next heartbeat */
	k->call = (struct gw_call){ claim_run, claim_done };
	k->gw = gw;
	k->conn = c;
	snprintf(k->member_id, sizeof(k->member_id), "%s", c->member_id);
	snprintf(k->instance_id, sizeof(k->instance_id), "%s", c->instance_id);
	snprintf(k->source, sizeof(k->source), "%s", c->source);
	k->claim = (struct rs_session_claim){
		.gateway_id = gw->cfg.id,
		.member_id = k->member_id,
		.instance_id = k->instance_id,
		.epoch = c->epoch,
		.sandboxes = c->sandboxes,
		.source = k->source,
	};
	if (gw_store_call(gw, &k->call) != 0) {
		free(k);
		return;
	}
	c->job_ref = &k->conn;
}
