/* SPDX-License-Identifier: Apache-2.0 */
/* metrics_histogram.h - a struct rs_histogram in the Prometheus text
 * exposition format (0.0.4): its cumulative _bucket lines, +Inf last, then
 * _sum and _count, all in seconds, the unit Prometheus names want. */
#ifndef RINGSTEER_METRICS_HISTOGRAM_H
#define RINGSTEER_METRICS_HISTOGRAM_H

#include <stddef.h>
#include <stdint.h>

#include <event2/buffer.h>

#include "ringsteer/histogram.h"

/* Appends h's series of family name (its # HELP and # TYPE histogram lines
 * are rs_metrics_family's, once per family).  labels: the series' label
 * pairs without braces (`gateway="gw-1",kind="admit"`), already escaped,
 * or "" for none; le is added after them. */
void rs_metrics_histogram(struct evbuffer *b, const char *name, const char *labels, const struct rs_histogram *h);

/* Writes us as seconds in exact decimal ("0.00025", "2.5", "30"; no float
 * on the way, so a bound reads the same in every scrape).  Returns buf. */
const char *rs_metrics_seconds(char *buf, size_t cap, uint64_t us);

#endif
