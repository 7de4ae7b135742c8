/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_ring_share.h - each gateway's share of the hash circle: the keys it
 * owns, as a fraction of all 2^64 points. */
#ifndef RS_CTL_RING_SHARE_H
#define RS_CTL_RING_SHARE_H

#include <stddef.h>
#include <stdint.h>

#include "ringsteer/ring.h"

struct ctl_ring_share {
	uint32_t points;  /* its points on the ring */
	double fraction;  /* of the circle it owns, 0..1 */
};

/* Fills shares[rs_ring_gateway_count(ring)], indexed like the ring's
 * gateways: a point owns the arc from the previous point (exclusive) to
 * itself (inclusive), the first point the arc wrapping from the last, so
 * the fractions sum to 1 (to rounding) on a non-empty ring. */
void ctl_ring_shares(const struct rs_ring *ring, struct ctl_ring_share *shares);

#endif
