/* store_whatif.c - rs_store_whatif: where rs_store_admit() would place a
 * member arriving now through the Service, without writing anything.
 *
 * Guarantee: the decision is the one an admission of the same member (no
 * stay, not redirected, not a handoff) would make over the same snapshot,
 * because it is read by the same functions (store_snapshot.h) and decided
 * by the same placer.  Where it landed does not matter to such an arrival
 * (the rule only looks at `at` for a stay), so it is -1.  The transaction
 * is a read: a what-if never holds the writers' lock, and works on a
 * read-only handle. */
#include <errno.h>
#include <string.h>

#include "ringsteer/placer.h"
#include "store_internal.h"
#include "store_snapshot.h"

struct whatif {
	const char *member_id;
	int64_t now_ms, live_since;
	struct rs_decision decision;
	char target_id[RS_ID_MAX + 1];
};

static int whatif(struct rs_store *st, void *arg)
{
	struct whatif *w = arg;
	struct rs_arrival arrival = { .member_id = w->member_id, .at = -1, .stale = -1 };
	struct rs_member_row m;
	int err;

	err = rs_store_member_row(st, w->member_id, &m);
	if (err)
		return err;
	err = rs_store_read_live(st, w->live_since);
	if (err)
		return err;
	if (st->live.n == 0)
		return -ENOENT; /* no ring at all: nobody takes anyone */
	err = rs_store_load_placer(st, w->now_ms);
	if (err)
		return err;
	err = rs_store_stale_record(st, &m, w->now_ms, &arrival.stale);
	if (err)
		return err;
	err = rs_placer_decide(st->placer, &arrival, &w->decision);
	if (err)
		return err;
	if (w->decision.gateway >= st->live.n)
		return -EIO;
	/* As an admission landing elsewhere decides (store_admit.c). */
	if (arrival.stale >= 0 && w->decision.gateway != (uint32_t)arrival.stale &&
	    rs_store_goes_home(st, &m, arrival.stale, w->decision.cap)) {
		w->decision.gateway = (uint32_t)arrival.stale;
		w->decision.reason = RS_REASON_RESERVED;
		w->decision.full = false;
	}
	memcpy(w->target_id, st->live.rows[w->decision.gateway].id, sizeof(w->target_id));
	return 0;
}

int rs_store_whatif(struct rs_store *st, const char *member_id, int64_t now_ms, struct rs_decision *d,
		    char *target_id)
{
	struct whatif w = { .member_id = member_id, .now_ms = now_ms };
	int err;

	if (!st || !d || !target_id || !rs_store_id_ok(member_id))
		return -EINVAL;
	memset(d, 0, sizeof(*d));
	target_id[0] = '\0';
	w.live_since = rs_store_time_sub(now_ms, st->opt.ttl_ms);
	err = rs_store_txn(st, RS_TXN_READ, whatif, &w);
	if (err)
		return err;
	*d = w.decision;
	memcpy(target_id, w.target_id, sizeof(w.target_id));
	return 0;
}
