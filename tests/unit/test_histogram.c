/* SPDX-License-Identifier: Apache-2.0 */
/* test_histogram.c - the fixed-bound histogram (include/ringsteer/histogram.h)
 * and its Prometheus text (util/metrics_histogram.h).  Every expected value
 * below is worked out by hand from the observations, not read back from
 * the code under test. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <event2/buffer.h>

#include "ringsteer/histogram.h"
#include "util/metrics_histogram.h"

/* 1 ms, 5 ms, 25 ms. */
static const uint64_t bounds[] = { 1000, 5000, 25000 };

/* The text rs_metrics_histogram writes for h, as a string (caller frees). */
static char *render(const char *name, const char *labels, const struct rs_histogram *h)
{
	struct evbuffer *b = evbuffer_new();
	size_t len;
	char *text;

	assert_non_null(b);
	rs_metrics_histogram(b, name, labels, h);
	len = evbuffer_get_length(b);
	text = calloc(1, len + 1);
	assert_non_null(text);
	evbuffer_remove(b, text, len);
	evbuffer_free(b);
	return text;
}

static void test_init_refuses_bad_bounds(void **state)
{
	static const uint64_t equal[] = { 1000, 1000 };
	static const uint64_t down[] = { 5000, 1000 };
	uint64_t many[RS_HISTOGRAM_BOUNDS_MAX + 1];
	struct rs_histogram h;

	(void)state;
	for (size_t i = 0; i < RS_HISTOGRAM_BOUNDS_MAX + 1; i++)
		many[i] = (i + 1) * 1000;
	assert_int_equal(rs_histogram_init(&h, bounds, 0), -EINVAL);
	assert_int_equal(rs_histogram_init(&h, equal, 2), -EINVAL);
	assert_int_equal(rs_histogram_init(&h, down, 2), -EINVAL);
	assert_int_equal(rs_histogram_init(&h, many, RS_HISTOGRAM_BOUNDS_MAX + 1), -EINVAL);
	assert_int_equal(rs_histogram_init(&h, many, RS_HISTOGRAM_BOUNDS_MAX), 0);
	assert_int_equal(rs_histogram_init(NULL, bounds, 3), -EINVAL);
}

/* Observations 0, 1000, 1001, 5000, 25000, 30000 us:
 *   le 0.001: 0 and 1000 (a value on a bound is in its bucket)   -> 2
 *   le 0.005: + 1001 and 5000                                    -> 4
 *   le 0.025: + 25000                                            -> 5
 *   +Inf:     + 30000                                            -> 6
 *   sum: 0 + 1000 + 1001 + 5000 + 25000 + 30000 = 62001 us = 0.062001 s */
static void test_observe_buckets_and_text(void **state)
{
	static const uint64_t seen[] = { 0, 1000, 1001, 5000, 25000, 30000 };
	struct rs_histogram h;
	char *text;

	(void)state;
	assert_int_equal(rs_histogram_init(&h, bounds, 3), 0);
	for (size_t i = 0; i < sizeof(seen) / sizeof(seen[0]); i++)
		rs_histogram_observe(&h, seen[i]);
	assert_int_equal(h.buckets[0], 2);
	assert_int_equal(h.buckets[1], 2);
	assert_int_equal(h.buckets[2], 1);
	assert_int_equal(h.buckets[3], 1);
	assert_int_equal(rs_histogram_cumulative(&h, 0), 2);
	assert_int_equal(rs_histogram_cumulative(&h, 1), 4);
	assert_int_equal(rs_histogram_cumulative(&h, 2), 5);
	assert_int_equal(rs_histogram_cumulative(&h, 3), 6);
	assert_int_equal(rs_histogram_cumulative(&h, 99), 6); /* past +Inf: still the count */
	assert_int_equal(h.count, 6);
	assert_int_equal(h.sum_us, 62001);
	text = render("x_seconds", "gateway=\"g\",kind=\"admit\"", &h);
	assert_string_equal(text, "x_seconds_bucket{gateway=\"g\",kind=\"admit\",le=\"0.001\"} 2\n"
				  "x_seconds_bucket{gateway=\"g\",kind=\"admit\",le=\"0.005\"} 4\n"
				  "x_seconds_bucket{gateway=\"g\",kind=\"admit\",le=\"0.025\"} 5\n"
				  "x_seconds_bucket{gateway=\"g\",kind=\"admit\",le=\"+Inf\"} 6\n"
				  "x_seconds_sum{gateway=\"g\",kind=\"admit\"} 0.062001\n"
				  "x_seconds_count{gateway=\"g\",kind=\"admit\"} 6\n");
	free(text);
}

/* An empty histogram still exports every bucket (a rate over it is 0, not
 * absent), and a series without labels has no braces on _sum and _count. */
static void test_empty_unlabelled(void **state)
{
	static const uint64_t one[] = { 2500000 };
	struct rs_histogram h;
	char *text;

	(void)state;
	assert_int_equal(rs_histogram_init(&h, one, 1), 0);
	text = render("y_seconds", "", &h);
	assert_string_equal(text, "y_seconds_bucket{le=\"2.5\"} 0\n"
				  "y_seconds_bucket{le=\"+Inf\"} 0\n"
				  "y_seconds_sum 0\n"
				  "y_seconds_count 0\n");
	free(text);
	/* Init empties a used histogram. */
	rs_histogram_observe(&h, 7);
	assert_int_equal(rs_histogram_init(&h, one, 1), 0);
	assert_int_equal(h.count, 0);
	assert_int_equal(h.sum_us, 0);
	assert_int_equal(h.buckets[0], 0);
}

static void test_seconds_exact(void **state)
{
	char s[32];

	(void)state;
	assert_string_equal(rs_metrics_seconds(s, sizeof(s), 0), "0");
	assert_string_equal(rs_metrics_seconds(s, sizeof(s), 1), "0.000001");
	assert_string_equal(rs_metrics_seconds(s, sizeof(s), 100), "0.0001");
	assert_string_equal(rs_metrics_seconds(s, sizeof(s), 250), "0.00025");
	assert_string_equal(rs_metrics_seconds(s, sizeof(s), 100000), "0.1");
	assert_string_equal(rs_metrics_seconds(s, sizeof(s), 2500000), "2.5");
	assert_string_equal(rs_metrics_seconds(s, sizeof(s), 30000000), "30");
	assert_string_equal(rs_metrics_seconds(s, sizeof(s), 61000001), "61.000001");
	assert_string_equal(rs_metrics_seconds(s, sizeof(s), UINT64_MAX), "18446744073709.551615");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_refuses_bad_bounds),
		cmocka_unit_test(test_observe_buckets_and_text),
		cmocka_unit_test(test_empty_unlabelled),
		cmocka_unit_test(test_seconds_exact),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
