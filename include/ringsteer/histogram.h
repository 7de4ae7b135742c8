/* SPDX-License-Identifier: Apache-2.0 */
/* histogram.h - a latency histogram with fixed bucket bounds, the shape a
 * Prometheus histogram has (cumulative _bucket{le}, _sum, _count), so that
 * whoever embeds the gateway core can export what it measured.
 *
 * Durations are whole microseconds: exact to add up (the _sum is no
 * rounding error's), and fine enough for a store call on SQLite (tens of
 * microseconds) as well as a drain's handoff (seconds).  The bounds are
 * the caller's, fixed at init: a handful chosen for what the histogram
 * measures, never resized, so observing neither allocates nor fails.  No
 * clock inside: the caller measures and gives the duration. */
#ifndef RINGSTEER_HISTOGRAM_H
#define RINGSTEER_HISTOGRAM_H

#include <stddef.h>
#include <stdint.h>

#include "ringsteer/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bucket bounds a histogram may have at most (the +Inf bucket besides). */
#define RS_HISTOGRAM_BOUNDS_MAX 16

struct rs_histogram {
	const uint64_t *bounds_us; /* strictly ascending upper bounds (le), microseconds;
				    * the caller's, and must outlive the histogram */
	size_t n_bounds;           /* 1..RS_HISTOGRAM_BOUNDS_MAX */
	/* Observations per bucket, not cumulative: buckets[i] holds those in
	 * (bounds_us[i - 1], bounds_us[i]]; buckets[n_bounds] those above the last. */
	uint64_t buckets[RS_HISTOGRAM_BOUNDS_MAX + 1];
	uint64_t count;            /* observations */
	uint64_t sum_us;           /* their total */
};

/* Empties h and gives it bounds[0..n).  Returns 0, or -EINVAL when n is 0
 * or above RS_HISTOGRAM_BOUNDS_MAX, or the bounds do not strictly ascend. */
RS_EXPORT int rs_histogram_init(struct rs_histogram *h, const uint64_t *bounds_us, size_t n);

/* Counts one duration of us microseconds in the first bucket whose bound
 * it does not exceed (a duration equal to a bound is in that bucket, as
 * Prometheus's le says), or in the +Inf one. */
RS_EXPORT void rs_histogram_observe(struct rs_histogram *h, uint64_t us);

/* Observations of at most bounds_us[i] (Prometheus's _bucket{le}); i ==
 * n_bounds is the +Inf bucket, the count. */
RS_EXPORT uint64_t rs_histogram_cumulative(const struct rs_histogram *h, size_t i);

#ifdef __cplusplus
}
#endif

#endif
