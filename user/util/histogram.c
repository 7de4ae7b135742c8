/* SPDX-License-Identifier: Apache-2.0 */
/* histogram.c - fixed-bound latency histograms (include/ringsteer/histogram.h).
 * Buckets are kept per bucket and summed on reading: an observation is one
 * increment, and a scrape (rare) pays the running sum.  A linear scan finds
 * the bucket: sixteen bounds at most, fewer compares than a search's
 * bookkeeping would save. */
#include <errno.h>
#include <string.h>

#include "ringsteer/histogram.h"

int rs_histogram_init(struct rs_histogram *h, const uint64_t *bounds_us, size_t n)
{
	if (!h || !bounds_us || n == 0 || n > RS_HISTOGRAM_BOUNDS_MAX)
		return -EINVAL;
	for (size_t i = 1; i < n; i++)
		if (bounds_us[i] <= bounds_us[i - 1])
			return -EINVAL;
	memset(h, 0, sizeof(*h));
	h->bounds_us = bounds_us;
	h->n_bounds = n;
	return 0;
}

void rs_histogram_observe(struct rs_histogram *h, uint64_t us)
{
	size_t i = 0;

	while (i < h->n_bounds && us > h->bounds_us[i])
		i++;
	h->buckets[i]++;
	h->count++;
	h->sum_us += us;
}

uint64_t rs_histogram_cumulative(const struct rs_histogram *h, size_t i)
{
	uint64_t n = 0;

	if (i > h->n_bounds)
		i = h->n_bounds;
	for (size_t b = 0; b <= i; b++)
		n += h->buckets[b];
	return n;
}
