/* SPDX-License-Identifier: Apache-2.0 */
/* timing.c - the latency histograms of the gateway core
 * (rs_gw_core_histogram): each duration is the difference of two events'
 * own times (core->now, set by every event), so the core still reads no
 * clock, and a test driving it with made-up times gets exact durations.
 *
 * The bounds, in microseconds; the core's times are whole milliseconds, so
 * no bound is finer than 1 ms (everything quicker reads 0 and lands in the
 * first bucket). */
#include <stddef.h>

#include "gwcore.h"

/* Admission: a HELLO to its ACCEPT or REDIRECT.  A batched store
 * transaction takes a few ms on SQLite, tens on a remote PostgreSQL;
 * queueing behind a storm adds up to --admit-deadline (default 2 s, a
 * bound of its own: past it an arrival is refused, not admitted); past
 * that only the degraded path after a stalled store (twice --store-timeout)
 * or a raised deadline, up to 30 s. */
static const uint64_t admission_bounds_us[] = {
	1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2000000, 5000000, 10000000, 30000000,
};

/* Handoff: a drain's REDIRECT to the old link's end.  The supervisor dials
 * its target, is admitted there (a TCP, perhaps a TLS handshake, a store
 * transaction) and only then leaves: tens of ms on a LAN, so 5 ms is the
 * floor.  --handoff-timeout (default 5 s) closes a slow one; the buckets
 * above it (10 s, 30 s) hold raised timeouts. */
static const uint64_t handoff_bounds_us[] = {
	5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000, 30000000,
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

void gwc_timing_init(struct rs_gw_core *core)
{
	/* Constant, valid bounds: init cannot fail here. */
	rs_histogram_init(&core->hist[RS_GW_HIST_ADMISSION], admission_bounds_us, COUNT(admission_bounds_us));
	rs_histogram_init(&core->hist[RS_GW_HIST_HANDOFF], handoff_bounds_us, COUNT(handoff_bounds_us));
}

/* ms since since_ms as microseconds; a time before since (never, on a
 * monotonic clock) reads 0 rather than wrapping. */
static uint64_t elapsed_us(const struct rs_gw_core *core, int64_t since_ms)
{
	int64_t d = core->now.mono_ms - since_ms;

	return d > 0 ? (uint64_t)d * 1000 : 0;
}

void gwc_timing_admitted(struct rs_gw_link *l)
{
	rs_histogram_observe(&l->core->hist[RS_GW_HIST_ADMISSION], elapsed_us(l->core, l->hello_ms));
}

void gwc_timing_handoff_ended(struct rs_gw_link *l)
{
	rs_histogram_observe(&l->core->hist[RS_GW_HIST_HANDOFF], elapsed_us(l->core, l->handoff_ms));
}

const struct rs_histogram *rs_gw_core_histogram(const struct rs_gw_core *core, enum rs_gw_histogram which)
{
	return (unsigned)which < RS_GW_HIST_COUNT ? &core->hist[which] : NULL;
}
