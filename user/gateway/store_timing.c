/* SPDX-License-Identifier: Apache-2.0 */
/* store_timing.c - how long the gateway's store calls take, by kind (the
 * core's request ops): one histogram each, observed on the loop when a
 * call's answer comes (store_call.c measures the run on the worker).
 *
 * Bounds, in microseconds, the same for every kind so that kinds compare
 * bucket by bucket: 100 us is a heartbeat or a sandbox count written to
 * SQLite on a local disk; a PostgreSQL round trip is a millisecond or
 * more; an admission batch holds the fleet's writer lock for tens; 1 s is
 * the default --store-timeout (a backend's bound on its own waits; a
 * PostgreSQL write may wait it twice, and past twice it the store is
 * judged stalled), and 5 s and 10 s hold raised timeouts. */
#include <stddef.h>

#include "gateway.h"

static const uint64_t store_bounds_us[] = {
	100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000, 5000000,
	10000000,
};

void gw_store_timing_init(struct gateway *gw)
{
	/* Constant, valid bounds (16, RS_HISTOGRAM_BOUNDS_MAX): cannot fail. */
	for (int op = 0; op < RS_GW_STORE_OP_COUNT; op++)
		rs_histogram_init(&gw->store_seconds[op], store_bounds_us,
				  sizeof(store_bounds_us) / sizeof(store_bounds_us[0]));
}

void gw_store_timing_observe(struct gateway *gw, enum rs_gw_store_op op, uint64_t us)
{
	if ((unsigned)op < RS_GW_STORE_OP_COUNT)
		rs_histogram_observe(&gw->store_seconds[op], us);
}
