/* SPDX-License-Identifier: Apache-2.0 */
/* reservations.c - the pending reservations the agent's steers wrote in the
 * shared store, taken back when nobody will claim them: one per key (a
 * newer registration from the same netns or cgroup replaces the last
 * one's), and none past its lifetime (the store's reservation_ms): every
 * AGENT_SWEEP_MS the agent withdraws those whose end has passed, so an
 * unclaimed reservation is gone at most one sweep after it ends.
 *
 * Guarantees: a withdrawal deletes only the row that very steer wrote
 * (rs_store_reservation_withdraw: member, gateway, end, still pending), so
 * a member that arrived (claimed), or was placed again since, is never
 * touched; withdrawals run on the store worker, never on the loop; each is
 * counted under exactly one result (replaced, swept, claimed, failed).  An
 * agent that stops leaves its reservations to end by themselves: they no
 * longer count once they end. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <event2/event.h>

#include "agent_run.h"
#include "util/mstime.h"

#define AGENT_SWEEP_MS 1000
#define SWEEP_BATCH 64

struct withdraw_job {
	struct agent *a;
	struct reg_reservation r;
	bool replaced; /* else due */
};

static void withdraw_run(struct rs_store *st, void *const *args, int *errs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct withdraw_job *j = args[i];

		errs[i] = rs_store_reservation_withdraw(st, j->r.member_id, j->r.gateway, j->r.expires_ms);
	}
}

static void withdraw_done(void *arg, int err)
{
	struct withdraw_job *j = arg;
	struct agent_counters *c = &j->a->counters;

	if (err > 0 && j->replaced)
		c->reservations_replaced++;
	else if (err > 0)
		c->reservations_swept++;
	else if (err == 0)
		c->reservations_claimed++;
	else
		c->reservations_failed++;
	free(j);
}

static const struct rs_store_job_kind withdraw_kind = {
	.name = "agent reservation withdraw",
	.run = withdraw_run,
	.done = withdraw_done,
	.batch_max = SWEEP_BATCH,
};

static void withdraw(struct agent *a, const struct reg_reservation *r, bool replaced)
{
	struct withdraw_job *j;

	if (!a->worker)
		return;
	j = calloc(1, sizeof(*j));
	if (!j) {
		a->counters.reservations_failed++;
		return;
	}
	j->a = a;
	j->r = *r;
	j->replaced = replaced;
	if (rs_store_worker_submit(a->worker, &withdraw_kind, j)) {
		free(j);
		a->counters.reservations_failed++;
	}
}

void agent_reservation_noted(struct agent *a, const struct rs_client_key *key, const struct rs_store_steer *out,
			     const char *member_id)
{
	struct reg_reservation r = { .expires_ms = out->expires_ms }, old;

	if (!out->reserved)
		return;
	snprintf(r.member_id, sizeof(r.member_id), "%s", member_id);
	snprintf(r.gateway, sizeof(r.gateway), "%s", out->gateway_id);
	if (reg_limit_reserve(&a->limits, key->kind, key->id, &r, &old, rs_mono_ms()) == 1)
		withdraw(a, &old, true);
}

static void sweep(evutil_socket_t fd, short what, void *arg)
{
	struct agent *a = arg;
	struct reg_reservation due[SWEEP_BATCH];
	int64_t now = rs_wall_ms(), mono = rs_mono_ms();
	size_t n;

	(void)fd;
	(void)what;
	do {
		n = reg_limit_due(&a->limits, now, mono, due, SWEEP_BATCH);
		for (size_t i = 0; i < n; i++)
			withdraw(a, &due[i], false);
	} while (n == SWEEP_BATCH);
}

int agent_reservations_start(struct agent *a)
{
	struct timeval every = rs_ms_timeval(AGENT_SWEEP_MS);

	a->sweep_ev = event_new(a->base, -1, EV_PERSIST, sweep, a);
	if (!a->sweep_ev || event_add(a->sweep_ev, &every) < 0)
		return -ENOMEM;
	return 0;
}

void agent_reservations_stop(struct agent *a)
{
	if (a->sweep_ev)
		event_free(a->sweep_ev);
	a->sweep_ev = NULL;
}
