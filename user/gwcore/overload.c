/* SPDX-License-Identifier: Apache-2.0 */
/* overload.c - the admission queue's pace, so that a store slower than
 * the arrivals costs refusals with a retry hint, not admissions nobody
 * waits for.  A member gives up on its answer after its dial deadline
 * (admit_deadline_ms here); an ACCEPT after that is work for nothing, and
 * the member's redial queues behind it again.
 *
 * Three rules, over the core's clock as events give it:
 * - an arrival still queued at its deadline is refused (REJECT LIMIT);
 * - an arrival that would not be in the next batch, and that the batches
 *   ahead of it would keep past the deadline by the store's recent pace,
 *   is refused at once (shed);
 * - the pace is the fastest of the last GWC_PACE_SAMPLES large batches
 *   (GWC_PACE_MIN_BATCH or more), handed out to answered (time queued in
 *   the caller's store worker included: that is what the arrival waits),
 *   taken as the time of any batch up to cfg.admit_batch_max: what a
 *   batch costs is mostly the fleet's writer lock and the round trips,
 *   not its rows.  The fastest, not the
 *   mean: a slow batch or two (a cold cache, a checkpoint) in a storm the
 *   store keeps up with must not shed, while a store that is slow for
 *   every batch is slow by its fastest too.  Only large batches count:
 *   a batch of one costs nearly what a large one does, so small batches
 *   would make a fast store look slow.  A small batch means the store
 *   caught up with the queue: the backlog is over and its samples go.
 * The next batch is never shed, so the store is never left idle by the
 * shedding: goodput stays the store's throughput.
 *
 * The hint spreads the refused over the time the queue takes to clear,
 * and at least a deadline, with a per-member spread (a hash of the member
 * id: deterministic, no randomness in the core) so they do not return
 * together; at most GWC_RETRY_HINT_DEADLINES deadlines. */
#include <stdio.h>

#include "gwcore.h"

void gwc_pace_batch_answered(struct rs_gw_core *core, size_t n, int64_t sent_ms)
{
	size_t large = core->cfg.admit_batch_max < GWC_PACE_MIN_BATCH ? core->cfg.admit_batch_max : GWC_PACE_MIN_BATCH;

	if (n < large) {
		core->n_full_batches = 0;
		core->full_batch_next = 0;
		if (core->shedding) {
			core->shedding = false;
			gwc_log(core, "info", "event", "admission_shed_end", NULL);
		}
		return;
	}
	core->full_batch_ms[core->full_batch_next] = core->now.mono_ms - sent_ms;
	core->full_batch_next = (core->full_batch_next + 1) % GWC_PACE_SAMPLES;
	if (core->n_full_batches < GWC_PACE_SAMPLES)
		core->n_full_batches++;
}

/* The fastest recent full batch's duration (ms), or -1 when none is known. */
static int64_t batch_ms(const struct rs_gw_core *core)
{
	int64_t best = -1;

	for (size_t i = 0; i < core->n_full_batches; i++) {
		int64_t t = core->full_batch_ms[i] > 0 ? core->full_batch_ms[i] : 0;

		if (best < 0 || t < best)
			best = t;
	}
	return best;
}

/* How long an arrival behind ahead queued ones would wait for its answer
 * (the rest of the batch in flight, then its own batch and those before
 * it), or -1 when the pace is unknown. */
static int64_t wait_ms(const struct rs_gw_core *core, size_t ahead)
{
	int64_t t = batch_ms(core), rest = 0;

	if (t < 0)
		return -1;
	if (core->admit_in_flight) {
		rest = t - (core->now.mono_ms - core->admit_sent_ms);
		if (rest < 0)
			rest = 0;
	}
	return rest + (int64_t)(ahead / core->cfg.admit_batch_max + 1) * t;
}

bool gwc_pace_would_shed(const struct rs_gw_core *core)
{
	int64_t w;

	if (core->n_queued < core->cfg.admit_batch_max)
		return false; /* it goes in the next batch */
	w = wait_ms(core, core->n_queued);
	return w > (int64_t)core->cfg.admit_deadline_ms;
}

/* FNV-1a: the member's spread, the same every time it is refused. */
static uint32_t member_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

uint32_t gwc_pace_retry_ms(const struct rs_gw_core *core, const char *member_id)
{
	uint64_t deadline = core->cfg.admit_deadline_ms;
	uint64_t cap = deadline * GWC_RETRY_HINT_DEADLINES;
	int64_t clear = core->n_queued ? wait_ms(core, core->n_queued - 1) : 0;
	uint64_t base = clear > (int64_t)deadline ? (uint64_t)clear : deadline;
	uint64_t hint = base + member_hash(member_id) % (base + 1);

	return (uint32_t)(hint < cap ? hint : cap);
}

void gwc_pace_refuse(struct rs_gw_link *l, bool shed)
{
	struct rs_gw_core *core = l->core;
	uint32_t retry = gwc_pace_retry_ms(core, l->member_id);
	char text[96];

	if (shed) {
		core->counters.arrivals_shed++;
		if (!core->shedding) {
			char q[24], r[16];

			core->shedding = true;
			snprintf(q, sizeof(q), "%zu", core->n_queued);
			snprintf(r, sizeof(r), "%u", retry);
			gwc_log(core, "warn", "event", "admission_shed_start", "queued", q, "retry_after_ms", r, NULL);
		}
		snprintf(text, sizeof(text), "admission queue would outlast %u ms: retry later",
			 core->cfg.admit_deadline_ms);
	} else {
		core->counters.arrivals_timed_out++;
		snprintf(text, sizeof(text), "admission still queued after %u ms: retry later", core->cfg.admit_deadline_ms);
	}
	gwc_reject_retry(l, RS_GW_REJECT_LIMIT, RS_REJECT_LIMIT, retry, text);
}
