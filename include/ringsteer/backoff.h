/* SPDX-License-Identifier: Apache-2.0 */
/* backoff.h - when a supervisor tries again, and when it refreshes its
 * token: the reference supervisor and the swarm (its load generator) must
 * pace themselves the same way, so the arithmetic lives here once.  Pure:
 * the caller owns the random state (splitmix64) and the timers. */
#ifndef RINGSTEER_BACKOFF_H
#define RINGSTEER_BACKOFF_H

#include <stdint.h>

#include "ringsteer/export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RS_BACKOFF_FIRST_MS 1000
#define RS_BACKOFF_MAX_MS 30000
/* A REJECT's retry hint is honoured up to this: a misconfigured gateway
 * must not park its supervisors for days (the field is a u32 of ms). */
#define RS_RETRY_HINT_MAX_MS 600000

/* Advances *state and returns the next splitmix64 value. */
RS_EXPORT uint64_t rs_splitmix64(uint64_t *state);

/* The delay before the next Service attempt: the current backoff
 * (*backoff_ms, 0 meaning none yet: RS_BACKOFF_FIRST_MS) +-20% jitter, and
 * not less than floor_ms (a REJECT's retry hint, 0 if none; capped at
 * RS_RETRY_HINT_MAX_MS) plus up to 20% above it, so that a fleet refused
 * at once does not return at once.  Doubles *backoff_ms, up to
 * RS_BACKOFF_MAX_MS.  Draws one random value, two with a floor. */
RS_EXPORT uint64_t rs_retry_delay_ms(uint32_t *backoff_ms, uint32_t floor_ms, uint64_t *rng);

/* The delay before asking for a new token when life_ms of the token's
 * life remain: about 80%, +-5% jitter so a fleet minted at once does not
 * refresh at once.  Draws one random value. */
RS_EXPORT uint64_t rs_refresh_delay_ms(uint64_t life_ms, uint64_t *rng);

#ifdef __cplusplus
}
#endif

#endif
