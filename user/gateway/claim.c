/* claim.c - recording a session accepted while the store was unavailable
 * (degraded), once the store answers again, so the ledger learns it without
 * the supervisor reconnecting.  The store decides by epoch: if it holds a
 * newer one the supervisor has reconnected elsewhere meanwhile, and this
 * connection is closed as superseded.  Nobody is moved: a degraded session
 * stays where it landed, above the cap or not (there is no rebalancer). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "conn.h"
#include "gateway.h"
#include "ringsteer/logfmt.h"

int gw_conn_claim(struct gw_conn *c)
{
	struct gateway *gw = c->gw;
	const struct rs_session_claim claim = {
		.gateway_id = gw->cfg.id,
		.member_id = c->member_id,
		.instance_id = c->instance_id,
		.epoch = c->epoch,
		.sandboxes = c->sandboxes,
		.source = c->source,
		.now_ms = gw_now_ms(),
	};
	char epoch[24];
	int err;

	err = rs_store_session_claim(gw->store, &claim);
	gw_store_outcome(gw, err);
	snprintf(epoch, sizeof(epoch), "%llu", (unsigned long long)c->epoch);
	if (err == 0) {
		c->unrecorded = false;
		gw->counters.claims_recorded++;
		rs_log(stderr, "info", gw->who, "event", "claim", "member", c->member_id, "epoch", epoch, "result",
		       "recorded", NULL);
		return 0;
	}
	if (err == -ESTALE) {
		gw->counters.claims_superseded++;
		rs_log(stderr, "info", gw->who, "event", "claim", "member", c->member_id, "epoch", epoch, "result",
		       "superseded", NULL);
		c->unrecorded = false; /* nothing of it is owed to the store */
		gw_conn_supersede(c, "claim");
		return err;
	}
	/* Unavailable again, or our row is gone (-ENOENT: the heartbeat
	 * registers again): it stays unrecorded and served, claimed later. */
	gw->counters.store_errors++;
	rs_log(stderr, "warn", gw->who, "event", "store_error", "op", "claim", "member", c->member_id, "epoch", epoch,
	       "error", strerror(-err), NULL);
	return err;
}
