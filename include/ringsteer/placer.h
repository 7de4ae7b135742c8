/* SPDX-License-Identifier: Apache-2.0 */
/* placer.h - placement kept current as loads change, answering each decision
 * in O(log points) whatever the loads.
 *
 * A placer holds a ring (borrowed: it must outlive the placer and stay
 * unmodified; after a ring change build a new placer) and one
 * struct rs_gateway_load per gateway.  rs_placer_decide() returns exactly
 * what rs_place() returns on the same snapshot.  Not thread-safe. */
#ifndef RINGSTEER_PLACER_H
#define RINGSTEER_PLACER_H

#include <stdint.h>

#include "ringsteer/placement.h"
#include "ringsteer/ring.h"

#include "ringsteer/export.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rs_placer;

/* Creates a placer over ring with every gateway live, not draining, load 0.
 * Returns 0, -ENOMEM. */
RS_EXPORT int rs_placer_new(const struct rs_ring *ring, struct rs_placer **out);

/* Frees p; NULL is allowed. */
RS_EXPORT void rs_placer_free(struct rs_placer *p);

/* Sets gateway gw's load and state.  Returns 0 or -EINVAL (gw out of range). */
RS_EXPORT int rs_placer_set(struct rs_placer *p, uint32_t gw, const struct rs_gateway_load *st);

/* Copies gateway gw's load and state into *st.  Returns 0 or -EINVAL. */
RS_EXPORT int rs_placer_get(const struct rs_placer *p, uint32_t gw, struct rs_gateway_load *st);

/* Adds delta to gateway gw's load.  Returns 0, -EINVAL, or -ERANGE when the
 * load would leave 0..UINT32_MAX (nothing changes then). */
RS_EXPORT int rs_placer_add_load(struct rs_placer *p, uint32_t gw, int32_t delta);

/* Decides where a arrives; loads are left as they were.  Same returns as
 * rs_place(). */
RS_EXPORT int rs_placer_decide(struct rs_placer *p, const struct rs_arrival *a, struct rs_decision *out);

/* Decides, then records the move: the stale gateway's load -1 (if any) and
 * the target's +1.  Same returns as rs_place(). */
RS_EXPORT int rs_placer_place(struct rs_placer *p, const struct rs_arrival *a, struct rs_decision *out);

/* Returns the supervisors counted on live gateways (draining included). */
RS_EXPORT uint64_t rs_placer_members(const struct rs_placer *p);

/* Returns the number of live, non-draining gateways. */
RS_EXPORT uint32_t rs_placer_active(const struct rs_placer *p);

#ifdef __cplusplus
}
#endif

#endif
