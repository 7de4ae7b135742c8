/* SPDX-License-Identifier: Apache-2.0 */
/* backoff.c - retry and refresh delays (include/ringsteer/backoff.h).  The
 * order in which random values are drawn is part of the contract: a
 * supervisor seeded the same way retries at the same moments. */
#include "ringsteer/backoff.h"

uint64_t rs_splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t rs_retry_delay_ms(uint32_t *backoff_ms, uint32_t floor_ms, uint64_t *rng)
{
	uint64_t delay = *backoff_ms ? *backoff_ms : RS_BACKOFF_FIRST_MS;
	uint64_t jitter = delay / 5;

	delay = delay - jitter + rs_splitmix64(rng) % (2 * jitter + 1);
	if (floor_ms > RS_RETRY_HINT_MAX_MS)
		floor_ms = RS_RETRY_HINT_MAX_MS;
	if (floor_ms > 0) {
		uint64_t least = floor_ms + rs_splitmix64(rng) % ((uint64_t)floor_ms / 5 + 1);

		if (delay < least)
			delay = least;
	}
	*backoff_ms = *backoff_ms ? *backoff_ms * 2 : RS_BACKOFF_FIRST_MS * 2;
	if (*backoff_ms > RS_BACKOFF_MAX_MS)
		*backoff_ms = RS_BACKOFF_MAX_MS;
	return delay;
}

uint64_t rs_refresh_delay_ms(uint64_t life_ms, uint64_t *rng)
{
	/* Milliseconds: with whole seconds a short token could be refreshed
	 * after it expired. */
	return life_ms * 80 / 100 - life_ms * 5 / 100 + rs_splitmix64(rng) % (life_ms * 10 / 100 + 1);
}
