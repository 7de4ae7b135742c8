/* SPDX-License-Identifier: Apache-2.0 */
/* metrics_histogram.c - histograms as Prometheus text (util/metrics_histogram.h).
 * Durations are kept in whole microseconds, so seconds are printed from
 * integers: six decimals, trailing zeros dropped.  A double would print
 * 0.1 s as 0.10000000000000001 at full precision, or lose a sum's
 * microseconds at %g's six digits. */
#include <stdio.h>

#include "util/metrics_histogram.h"

const char *rs_metrics_seconds(char *buf, size_t cap, uint64_t us)
{
	int n = snprintf(buf, cap, "%llu.%06llu", (unsigned long long)(us / 1000000),
			 (unsigned long long)(us % 1000000));

	if (n < 0 || (size_t)n >= cap)
		return buf; /* truncated: the callers' buffers hold any uint64_t */
	while (n > 0 && buf[n - 1] == '0')
		buf[--n] = '\0';
	if (n > 0 && buf[n - 1] == '.')
		buf[--n] = '\0';
	return buf;
}

void rs_metrics_histogram(struct evbuffer *b, const char *name, const char *labels, const struct rs_histogram *h)
{
	const char *sep = labels[0] ? "," : "";
	uint64_t cumulative = 0;
	char s[32];

	for (size_t i = 0; i < h->n_bounds; i++) {
		cumulative += h->buckets[i];
		evbuffer_add_printf(b, "%s_bucket{%s%sle=\"%s\"} %llu\n", name, labels, sep,
				    rs_metrics_seconds(s, sizeof(s), h->bounds_us[i]), (unsigned long long)cumulative);
	}
	evbuffer_add_printf(b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep, (unsigned long long)h->count);
	if (labels[0]) {
		evbuffer_add_printf(b, "%s_sum{%s} %s\n", name, labels, rs_metrics_seconds(s, sizeof(s), h->sum_us));
		evbuffer_add_printf(b, "%s_count{%s} %llu\n", name, labels, (unsigned long long)h->count);
	} else {
		evbuffer_add_printf(b, "%s_sum %s\n", name, rs_metrics_seconds(s, sizeof(s), h->sum_us));
		evbuffer_add_printf(b, "%s_count %llu\n", name, (unsigned long long)h->count);
	}
}
