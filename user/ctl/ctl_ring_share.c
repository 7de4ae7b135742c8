/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_ring_share.c - arcs of the hash circle, summed per gateway.  Arcs are
 * differences of 64-bit points taken modulo 2^64 (unsigned wrap-around
 * makes the wrapping arc), each added as a fraction of 2^64 in double:
 * about 16 significant digits, plenty for a percentage. */
#include "ctl_ring_share.h"

#include <string.h>

#define CIRCLE 18446744073709551616.0 /* 2^64 */

void ctl_ring_shares(const struct rs_ring *ring, struct ctl_ring_share *shares)
{
	size_t n = rs_ring_point_count(ring);

	memset(shares, 0, rs_ring_gateway_count(ring) * sizeof(*shares));
	for (size_t pos = 0; pos < n; pos++) {
		uint32_t g = rs_ring_point_gateway(ring, pos);
		uint64_t prev = rs_ring_point_value(ring, pos ? pos - 1 : n - 1);
		uint64_t arc = rs_ring_point_value(ring, pos) - prev;

		shares[g].points++;
		/* A lone point's arc is the whole circle, which is 0 mod 2^64. */
		shares[g].fraction += n == 1 ? 1.0 : (double)arc / CIRCLE;
	}
}
