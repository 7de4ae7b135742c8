/* SPDX-License-Identifier: Apache-2.0 */
/* store_whatif.c - rs_store_whatif: where rs_store_admit() would place a
 * member arriving now through the Service, without writing anything.
 *
 * Guarantee: the decision is the one an admission of the same member
 * through the Service (RS_ARRIVE_SERVICE) would make over the same
 * snapshot, because it is read by the same functions (store_snapshot.h)
 * and decided by the same function, rs_admit_decide().  Where it landed
 * does not matter to such an arrival (the rule only looks at `at` for a
 * stay, the overrides for a reservation right there), so it is -1, and a
 * reservation of its own elsewhere still sends it home.  The transaction
 * is a read: a what-if never holds the writers' lock, and works on a
 * read-only handle. */
#include <errno.h>
#include <string.h>

#include "ringsteer/admission.h"
#include "store_internal.h"
#include "store_snapshot.h"

struct whatif {
	const char *member_id;
	int64_t now_ms; /* the caller's (the body reads it on the store's clock) */
	struct rs_decision decision;
	char target_id[RS_ID_MAX + 1];
};

static int whatif(struct rs_store *st, void *arg)
{
	struct whatif *w = arg;
	struct rs_admit_input in = { .member_id = w->member_id, .kind = RS_ARRIVE_SERVICE, .at = -1 };
	struct rs_admit_outcome o;
	struct rs_member_row m;
	int64_t now = rs_store_now(st, w->now_ms);
	int err;

	err = rs_store_member_row(st, w->member_id, &m);
	if (err)
		return err;
	err = rs_store_read_live(st, rs_store_time_sub(now, st->opt.ttl_ms));
	if (err)
		return err;
	if (st->live.n == 0)
		return -ENOENT; /* no ring at all: nobody takes anyone */
	err = rs_store_load_placer(st, now);
	if (err)
		return err;
	err = rs_store_stale_record(st, &m, now, &in.record_at);
	if (err)
		return err;
	in.record = rs_store_record_kind(&m, in.record_at);
	err = rs_admit_decide(st->placer, &in, &o);
	if (err)
		return err;
	if (o.decision.gateway >= st->live.n)
		return -EIO;
	w->decision = o.decision;
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
	err = rs_store_txn(st, RS_TXN_READ, whatif, &w);
	if (err)
		return err;
	*d = w.decision;
	memcpy(target_id, w.target_id, sizeof(w.target_id));
	return 0;
}
