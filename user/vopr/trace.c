/* SPDX-License-Identifier: Apache-2.0 */
/* trace.c - the run's trace: every event's record (time, kind, its
 * arguments) and what it sent are mixed into one FNV-1a 64 hash, always;
 * with --trace they are also written as text lines, with the cores' own
 * log lines among them.  The same seed gives the same hash and the same
 * text, byte for byte (tests/cli/vopr_test.sh runs a seed twice). */
#include <stdarg.h>
#include <stdio.h>

#include "vopr/world.h"

#define FNV_PRIME 0x100000001b3ull

static const char *const names[] = {
	[EV_GW_WAKE] = "gw-wake",       [EV_MB_WAKE] = "mb-wake",     [EV_DNS] = "dns",
	[EV_SYN] = "syn",               [EV_SYNACK] = "synack",       [EV_SEG] = "seg",
	[EV_GW_FEED] = "gw-feed",       [EV_GW_FLUSHED] = "gw-flushed", [EV_GW_IDLE] = "gw-idle",
	[EV_STORE_COMMIT] = "store-commit", [EV_STORE_ANSWER] = "store-answer",
	[EV_STORE_WATCH] = "store-watch", [EV_GW_EXIT] = "gw-exit",   [EV_GW_START] = "gw-start",
	[EV_GW_SERVICE] = "gw-service", [EV_MB_START] = "mb-start",   [EV_FAULT] = "fault",
	[EV_SANDBOXES] = "sandboxes",   [EV_SCENARIO] = "scenario", [EV_END] = "end",
};

void trace_mix(struct world *w, uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		w->hash ^= (uint8_t)(v >> (8 * i));
		w->hash *= FNV_PRIME;
	}
}

bool tracing(const struct world *w)
{
	return w->opt->trace != NULL && !w->muted;
}

void trace_event(struct world *w, const struct ev *e)
{
	trace_mix(w, (uint64_t)e->at);
	trace_mix(w, ((uint64_t)e->type << 32) | e->a);
	trace_mix(w, e->b);
	if (!tracing(w) || e->type == EV_GW_WAKE || e->type == EV_MB_WAKE)
		return; /* wakes say what they did, if anything, in the cores' lines */
	fprintf(w->opt->trace, "%9lld.%03lld %-12s %u %llu\n", (long long)(e->at / 1000), (long long)(e->at % 1000),
		e->type < sizeof(names) / sizeof(names[0]) ? names[e->type] : "?", e->a, (unsigned long long)e->b);
}

void trace(struct world *w, const char *fmt, ...)
{
	va_list ap;

	if (!tracing(w))
		return;
	fprintf(w->opt->trace, "%9lld.%03lld ", (long long)(w->now / 1000), (long long)(w->now % 1000));
	va_start(ap, fmt);
	vfprintf(w->opt->trace, fmt, ap);
	va_end(ap);
	fputc('\n', w->opt->trace);
}
